"""Typed events: the only way the engine talks to the store, the TUI and the runner.

The engine never knows who listens. Listeners are plain callables; a listener that
raises does not stop the match (it is reported once and detached), because a broken
progress bar must never cost a researcher their sweep. The store is the exception:
it is attached with ``critical=True`` so a failed write stops the run loudly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coop_tui.decisions import Decision, Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    pass


@dataclass(frozen=True)
class RunStarted(Event):
    run_id: str
    name: str
    total_matches: int
    estimated_decisions: int
    spec: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatchStarted(Event):
    run_id: str
    match_id: str
    experiment: int
    game: str
    mechanism: str
    seats: tuple[str, ...]
    """Agent name per seat."""
    condition: dict[str, Any] = field(default_factory=dict)
    sample: int = 0
    seed: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    """Everything else the store needs to describe the match (params, agent specs)."""


@dataclass(frozen=True)
class DecisionStarted(Event):
    match_id: str
    seat: int
    round: int
    phase: str
    attempt: int
    messages: tuple[Message, ...]
    agent: str


@dataclass(frozen=True)
class TextDelta(Event):
    match_id: str
    seat: int
    text: str


@dataclass(frozen=True)
class ReasoningDelta(Event):
    match_id: str
    seat: int
    text: str


@dataclass(frozen=True)
class StreamRestarted(Event):
    """A provider stream broke mid-answer and is being retried: the partial text is void."""

    match_id: str
    seat: int
    reason: str


@dataclass(frozen=True)
class AnswerRejected(Event):
    """An attempt produced an unusable answer; the agent will be asked again."""

    match_id: str
    seat: int
    round: int
    phase: str
    attempt: int
    reason: str


@dataclass(frozen=True)
class DecisionDone(Event):
    decision: Decision


DIRECT_ANSWER: tuple[str, ...] = (
    "response", "parsed", "labels", "label_to_action", "distribution", "action", "coop_prob",
    "cooperated", "normalisation",
)
"""The fields of a strategy's play decision that its answer fixes, in the ``answer`` tuple
of a :class:`DirectDecisions` row (one tuple shared by every decision with that answer);
every field not named here or in the row has the fixed value
:meth:`DirectDecisions.decisions` gives it."""


@dataclass(frozen=True)
class DirectDecisions(Event):
    """Every seat's play decision of one round of a strategy-only match, in one event.

    The engine sends this instead of one :class:`DecisionDone` per seat only when every
    listener says it reads it (``accepts_direct_decisions = True``): the rows carry the
    same decisions, and :meth:`decisions` rebuilds them field for field.
    """

    match_id: str
    round: int
    created_at: float
    rows: tuple[tuple[Any, ...], ...]
    """One ``(seat, agent, latency_ms, answer)`` per seat; ``answer`` in
    :data:`DIRECT_ANSWER` order (read it, never change it: decisions share it)."""

    def decisions(self) -> list[Decision]:
        return [
            Decision(
                match_id=self.match_id, round=self.round, phase="play", seat=seat, kind="mixed",
                agent=agent, prompt=[], response=response, reasoning="",
                parsed=dict(parsed) if type(parsed) is dict else parsed,
                valid=True, attempts=1, error=None, cache_key=None,  # type: ignore[arg-type]
                content_key=None, labels=labels,  # type: ignore[arg-type]
                label_to_action=label_to_action, distribution=distribution, action=action,
                coop_prob=coop_prob, cooperated=cooperated, normalisation=normalisation,
                latency_ms=latency_ms, input_tokens=0, output_tokens=0, cost_usd=0.0,
                created_at=self.created_at,
            )
            for seat, agent, latency_ms, (response, parsed, labels, label_to_action, distribution,
                                          action, coop_prob, cooperated, normalisation)
            in self.rows
        ]


@dataclass(frozen=True)
class RoundDone(Event):
    match_id: str
    round: int
    actions: tuple[int, ...]
    payoffs: tuple[float, ...]
    seats: tuple[int, ...] = ()
    """Which seats of the match took part (all of them unless a mechanism re-matches)."""
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DirectRounds(Event):
    """Consecutive rounds of one strategy-only match, in one event: the
    :class:`DirectDecisions` and :class:`RoundDone` events the per-round path emits, in
    the order it emits them (round 1's decisions, round 1, round 2's decisions, ...).

    The engine holds them back and sends this instead (at the match's end, or every
    :data:`DIRECT_ROUNDS_CHUNK` rounds of a long match) only when every listener says it
    reads it (``accepts_direct_rounds = True``): a headless sweep then pays one dispatch
    per match instead of two per round. A listener that watches rounds live (the TUI)
    does not say so, and the per-round events keep coming.
    """

    match_id: str
    events: tuple[DirectDecisions | RoundDone, ...]
    """The held-back events, in the order the per-round path would have emitted them."""


def direct_decision_count(event: DirectRounds) -> int:
    """How many strategy decisions a :class:`DirectRounds` carries."""
    return sum(len(e.rows) for e in event.events if type(e) is DirectDecisions)


DIRECT_ROUNDS_CHUNK = 4096
"""Rounds the engine holds back at most before it sends a :class:`DirectRounds` (a match
may be a tournament of hundreds of thousands of rounds, which memory must not hold)."""


@dataclass(frozen=True)
class PhaseDone(Event):
    """A non-play phase finished (proposals made, votes counted, contracts signed)."""

    match_id: str
    round: int
    phase: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatchDone(Event):
    match_id: str
    payoffs: tuple[float, ...]
    """Match payoff per seat as the mechanism scores it."""
    status: str = "done"
    """done / failed / stopped"""
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunProgress(Event):
    run_id: str
    matches_done: int
    matches_total: int
    decisions: int
    reused: int
    invalid: int
    retries: int
    failures: int
    cost_usd: float


@dataclass(frozen=True)
class BatchProgress(Event):
    """Provider batches of the run (``batch = true`` agents): how many are pending and
    done in this process, and the age of the oldest pending one."""

    pending: int
    done: int
    oldest_s: float


@dataclass(frozen=True)
class RunDone(Event):
    run_id: str
    status: str
    error: str | None = None


Listener = Callable[[Event], None]

PER_ROUND_EVENTS: tuple[type[Event], ...] = (RoundDone, PhaseDone, TextDelta, ReasoningDelta)
"""Events of every round or streamed piece that only the store and live panes read: the
``ignores`` of listeners that count decisions and matches (see :class:`EventBus`)."""


class EventBus:
    """Fan events out to listeners synchronously, in registration order.

    A listener may name the event types it never reads in an ``ignores`` attribute (a
    tuple of :class:`Event` classes): it is then not called for them or their
    subclasses. A strategy tournament emits a :class:`RoundDone` every round that only
    the store reads; the progress view and the run's counters say so, and the bus keeps,
    per event type, the listeners to call (rebuilt whenever the listeners change).
    """

    def __init__(self) -> None:
        self._listeners: list[tuple[Listener, bool]] = []
        self._direct: bool | None = None
        """:attr:`direct_batches` for the current listeners (asked every strategy round)."""
        self._direct_rounds: bool | None = None
        """:attr:`direct_rounds` for the current listeners."""
        self._by_type: dict[type, tuple[tuple[Listener, bool], ...]] = {}
        """The listeners each event type goes to (those that do not ignore it)."""

    @property
    def direct_batches(self) -> bool:
        """True when every listener reads :class:`DirectDecisions` (it says so with an
        ``accepts_direct_decisions = True`` attribute): strategy rounds may then be sent
        as one event each instead of one :class:`DecisionDone` per seat."""
        if self._direct is None:
            self._direct = all(getattr(listener, "accepts_direct_decisions", False)
                               for listener, _critical in self._listeners)
        return self._direct

    @property
    def direct_rounds(self) -> bool:
        """True when every listener reads :class:`DirectRounds` (an
        ``accepts_direct_rounds = True`` attribute) and :class:`DirectDecisions`: a
        strategy-only match may then send its rounds in one event instead of two per round."""
        if self._direct_rounds is None:
            self._direct_rounds = self.direct_batches and all(
                getattr(listener, "accepts_direct_rounds", False)
                for listener, _critical in self._listeners)
        return self._direct_rounds

    def _changed(self) -> None:
        self._direct = None
        self._direct_rounds = None
        self._by_type = {}

    def subscribe(self, listener: Listener, *, critical: bool = False) -> Callable[[], None]:
        entry = (listener, critical)
        self._listeners.append(entry)
        self._changed()

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)
                self._changed()

        return unsubscribe

    def _listeners_of(self, kind: type) -> tuple[tuple[Listener, bool], ...]:
        entries = tuple(
            entry for entry in self._listeners
            if not issubclass(kind, tuple(getattr(entry[0], "ignores", ())))
        )
        self._by_type[kind] = entries
        return entries

    def emit(self, event: Event) -> None:
        kind = type(event)
        entries = self._by_type.get(kind)
        if entries is None:
            entries = self._listeners_of(kind)
        for entry in entries:  # a snapshot, as a listener may unsubscribe meanwhile
            listener, critical = entry
            if critical:
                listener(event)
                continue
            try:
                listener(event)
            except Exception:  # a UI bug must not kill a sweep
                log.exception("event listener %r failed; detaching it", listener)
                if entry in self._listeners:
                    self._listeners.remove(entry)
                    self._changed()
