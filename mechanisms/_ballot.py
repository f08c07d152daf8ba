"""Approval voting shared by Mediation and Contracting (not a mechanism itself).

Each seat approves any subset of the proposals on the table; the proposal with the
most approvals wins and a tie is broken uniformly at random with the match's seeded
RNG, so a resumed match picks the same winner. An invalid ballot (only possible when
the run's policy keeps going after a failed answer) approves nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coop_tui.decisions import Decision


@dataclass(frozen=True)
class BallotResult:
    winner: str
    counts: dict[str, int]
    tied: tuple[str, ...]
    ballots: dict[str, list[str]]
    """Seat number (1-based, as text) -> the proposal ids that seat approved."""
    invalid: tuple[int, ...]
    """Seats whose ballot could not be read (counted as approving nothing)."""

    def info(self, proposers: Mapping[str, int]) -> dict[str, Any]:
        return {
            "approvals": dict(self.counts),
            "ballots": {k: list(v) for k, v in self.ballots.items()},
            "tied": list(self.tied),
            "winner": self.winner,
            "winner_seat": proposers[self.winner],
            "invalid": list(self.invalid),
        }


def approvals_of(decision: Decision, ids: Sequence[str]) -> list[str] | None:
    """The ids a vote approved, in ballot order; None when the vote is unusable."""
    if not decision.valid or not isinstance(decision.parsed, Mapping):
        return None
    return [i for i in ids if decision.parsed.get(i) is True]


def count_approvals(
    votes: Sequence[Decision], ids: Sequence[str], rng: np.random.Generator
) -> BallotResult:
    """Tally approval ballots over ``ids`` and draw the winner among the most approved."""
    counts = dict.fromkeys(ids, 0)
    ballots: dict[str, list[str]] = {}
    invalid: list[int] = []
    for vote in votes:
        approved = approvals_of(vote, ids)
        if approved is None:
            invalid.append(vote.seat)
            approved = []
        ballots[str(vote.seat + 1)] = approved
        for i in approved:
            counts[i] += 1
    top = max(counts.values())
    tied = tuple(i for i in ids if counts[i] == top)
    winner = tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
    return BallotResult(winner, counts, tied, ballots, tuple(invalid))
