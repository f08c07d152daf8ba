"""Strategies that look at the co-players' whole record, not just the last round."""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    cooperate,
    defect,
    opponent_record,
    register,
)
from coop_tui.decisions import SeatView


def _counts(view: SeatView) -> tuple[int, int]:
    record = opponent_record(view)
    cooperated = sum(record)
    return cooperated, len(record) - cooperated


@register
class SoftMajority(Strategy):
    """Cooperates as long as the co-player(s) cooperated at least as often as they defected.

    Soft Go By Majority (Grisell's entry to Axelrod's second tournament); listed in seed
    003 ("cooperate if the opponent cooperated more than half the time"). A tie, including
    the empty record of round 1, counts as cooperation.
    """

    name = "soft_majority"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        c, d = _counts(view)
        return cooperate(view) if c >= d else defect(view)


@register
class HardMajority(Strategy):
    """Defects unless the co-player(s) cooperated strictly more often than they defected.

    Hard Go By Majority (Axelrod library; Mittal and Deb 2009): the suspicious twin of
    soft_majority, so it defects in round 1 and on every tie.
    """

    name = "hard_majority"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        c, d = _counts(view)
        return cooperate(view) if c > d else defect(view)
