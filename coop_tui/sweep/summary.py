"""What a run tells its caller at the end: the :class:`RunSummary`, tallied from the bus."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coop_tui.errors import failure_reason
from coop_tui.events import (
    PER_ROUND_EVENTS,
    BatchProgress,
    DecisionDone,
    DirectDecisions,
    DirectRounds,
    Event,
    MatchDone,
    direct_decision_count,
)


@dataclass
class RunSummary:
    run_id: str
    name: str
    status: str
    matches_total: int
    matches_done: int = 0
    matches_failed: int = 0
    matches_skipped: int = 0
    decisions: int = 0
    reused: int = 0
    asked_again: int = 0
    """Decisions stored as invalid by an earlier attempt of the run, asked again."""
    invalid: int = 0
    retries: int = 0
    transport_retries: int = 0
    cost_usd: float = 0.0
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    notices: list[str] = field(default_factory=list)
    """What the transport adapted (an endpoint's concurrency lowered, one down ...)."""
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Failed matches grouped by reason: {reason: {"count": n, "example": error}}."""
    batches: BatchProgress | None = None
    """Provider batches (``batch = true`` agents): pending and done at the end."""


class SummaryCounter:
    """Tallies decisions for progress and the final summary."""

    accepts_direct_decisions = True
    """Counts :class:`DirectDecisions` too (strategy decisions: valid, free, asked once)."""
    accepts_direct_rounds = True
    """... and :class:`DirectRounds` (the same decisions, a match's rounds at once)."""
    ignores = PER_ROUND_EVENTS

    def __init__(self, summary: RunSummary) -> None:
        self.s = summary

    def __call__(self, event: Event) -> None:
        if type(event) is DirectDecisions:
            self.s.decisions += len(event.rows)
        elif type(event) is DirectRounds:
            self.s.decisions += direct_decision_count(event)
        elif isinstance(event, DecisionDone):
            d = event.decision
            self.s.decisions += 1
            if d.reused:
                self.s.reused += 1
                return
            self.s.asked_again += int(d.asked_again)
            self.s.invalid += 0 if d.valid else 1
            self.s.retries += reasks(d.attempts)
            self.s.transport_retries += d.transport_retries
            self.s.cost_usd += d.cost_usd or 0.0
        elif type(event) is BatchProgress:
            self.s.batches = event
        elif isinstance(event, MatchDone):
            # retries of a decision that gave up: it is not stored, its retries still count
            self.s.transport_retries += int(event.info.get("transport_retries", 0) or 0)
            if event.status == "failed":
                error = event.error or "unknown error"
                entry = self.s.failures.setdefault(
                    failure_reason(error), {"count": 0, "example": error}
                )
                entry["count"] += 1


def reasks(attempts: int) -> int:
    """Times an agent was asked again after an unusable answer: attempts - 1.

    The batch summary and the report both count this, over the decisions asked in the run
    (a reused decision sends nothing). A decision that ended invalid after N attempts was
    re-asked N - 1 times: its last rejected answer is not followed by another request.
    """
    return max(int(attempts or 0) - 1, 0)
