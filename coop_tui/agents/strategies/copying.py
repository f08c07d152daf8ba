"""Strategies that copy (or invert) the co-players' last action itself, not its meaning.

They work on action indices, so they also play coordination and zero-sum games that have no
cooperative action (Battle of the Sexes, Matching Pennies). With several co-players they
react to the action most of them took (ties go to the lower index).
"""

from __future__ import annotations

from collections import Counter

from coop_tui.agents.strategies.base import (
    Strategy,
    StrategyError,
    cooperate,
    defect,
    known_actions,
    others_cooperated,
    pure,
    register,
)
from coop_tui.decisions import SeatView


def _opening(view: SeatView) -> list[float]:
    """The cooperative action when the seat has one, else action 0."""
    if view.game.cooperative[view.seat]:
        return cooperate(view)
    return pure(view, 0)


def _last_common_action(view: SeatView) -> int:
    counts = Counter(view.history[-1].others)
    return min(counts, key=lambda a: (-counts[a], a))


@register
class Mirror(Strategy):
    """Opens cooperatively, then plays the co-player's last action.

    The "mirror" opponent of seed 003. It opens with the cooperative action (action 0 if the
    game has none). On a prisoner's dilemma it is tit for tat; on a coordination game it
    follows the co-player's last choice. If the co-player's action does not exist for this
    seat (asymmetric games) it falls back to tit for tat.
    """

    name = "mirror"
    classifier = {"memory_depth": 1, "stochastic": False}
    needs_cooperation = False

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history or not view.history[-1].others:
            return _opening(view)
        action = _last_common_action(view)
        if action < known_actions(view):
            return pure(view, action)
        return cooperate(view) if others_cooperated(view, view.history[-1]) else defect(view)


@register
class AntiMirror(Strategy):
    """Opens cooperatively, then plays the opposite of the co-player's last action.

    The "anti-mirror" opponent of seed 003 (Anti Tit For Tat in the Axelrod library). It
    opens with the cooperative action (action 0 if the game has none). With two actions the
    opposite is the other action; with more it is defect after cooperation and cooperate
    after defection, which needs a game with cooperative/defect actions.
    """

    name = "anti_mirror"
    classifier = {"memory_depth": 1, "stochastic": False}
    needs_cooperation = False

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history or not view.history[-1].others:
            return _opening(view)
        action = _last_common_action(view)
        if known_actions(view) == 2 and action in (0, 1):
            return pure(view, 1 - action)
        if not view.game.cooperative[view.seat]:
            raise StrategyError(
                f"strategy 'anti_mirror' cannot name the opposite of action {action} in game "
                f"{view.game.key!r}: it has more than two actions and no cooperative action"
            )
        return defect(view) if others_cooperated(view, view.history[-1]) else cooperate(view)
