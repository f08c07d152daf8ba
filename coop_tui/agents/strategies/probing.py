"""Strategies that test whether the co-player can be exploited."""

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


@register
class Prober(Strategy):
    """Opens D, C, C; exploits a co-player who did not retaliate, else plays tit for tat.

    Prober (Mathieu and Delahaye; Axelrod library): the opening defection tests for
    retaliation, and a co-player that never retaliates is exploited.
    """

    name = "prober"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        opening = {1: False, 2: True, 3: True}
        record = opponent_record(view)
        if len(record) < 3:
            return cooperate(view) if opening.get(len(record) + 1, True) else defect(view)
        if record[1] and record[2]:
            return defect(view)
        return cooperate(view) if record[-1] else defect(view)
