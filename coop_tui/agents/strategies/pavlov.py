"""Win-stay, lose-shift: keep a move that paid, change one that did not."""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    Strategy,
    cooperate,
    defect,
    known_actions,
    others_cooperated,
    own_cooperated,
    pure,
    register,
)
from coop_tui.decisions import SeatView


@register
class WinStayLoseShift(Strategy):
    """Cooperates first; repeats its last move if the co-player(s) cooperated, else switches.

    Pavlov (Kraines and Kraines 1989; Nowak and Sigmund 1993), defined as in the Axelrod
    library: a round is a win when the co-player cooperated, so after (C, C) -> C,
    (C, D) -> D, (D, C) -> D, (D, D) -> C. The strategic personalities paper's "cooperate if both moves matched" is
    the same rule. With several co-players, "cooperated" means all of them did.
    """

    name = "win_stay_lose_shift"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return cooperate(view)
        last = view.history[-1]
        if others_cooperated(view, last):
            if 0 <= last.own < known_actions(view):
                return pure(view, last.own)
            return cooperate(view) if own_cooperated(view, last) else defect(view)
        return defect(view) if own_cooperated(view, last) else cooperate(view)
