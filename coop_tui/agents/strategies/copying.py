"""Strategies that copy (or invert) the co-players' last action itself, not its meaning.

They work on action indices, so they also play coordination and zero-sum games that have no
cooperative action (Battle of the Sexes, Matching Pennies). With several co-players they
react to the first co-player (seat 1, or seat 2 for seat 1), as the strategic personalities paper's copies react
to the model.
"""

from __future__ import annotations

from typing import Any

from coop_tui.agents.strategies.base import (
    Strategy,
    cooperate,
    defect,
    known_actions,
    others_cooperated,
    pure,
    register,
    uniform,
    watched_action,
)
from coop_tui.agents.strategies.numeric import anti_mirror_number, mirror_number
from coop_tui.decisions import SeatView


def _opening(view: SeatView) -> list[float]:
    """The cooperative action when the seat has one, else action 0."""
    if view.game.cooperative[view.seat]:
        return cooperate(view)
    return pure(view, 0)


OPENINGS = ("random", "cooperate")


def _check_opening(opening: str) -> str:
    if opening not in OPENINGS:
        raise ValueError(f"opening = {opening!r}; use one of {', '.join(OPENINGS)}")
    return opening


def _protocol_move(view: SeatView) -> bool:
    """A named-option move of a move-by-move game (accept/reject, signal or not), or its
    one-action placeholder."""
    return view.game.key == "options" or view.game.action_counts[view.seat] == 1


@register
class Mirror(Strategy):
    """Opens at random, then plays the co-player's last action (the strategic personalities paper's "mirror").

    The strategic personalities paper's code opens with a random option and then copies the model's last option;
    in its 4-player games every copy watches the model in seat 1, as this one watches the
    first co-player. ``opening = "cooperate"`` opens with the cooperative action (action 0
    if the game has none) instead: then it is tit for tat on a prisoner's dilemma. If the
    co-player's action does not exist for this seat (asymmetric games) it falls back to tit
    for tat. In the move-by-move games it answers numbers with the co-player's number
    (round 1: the middle of the range) and picks an option at random, as the code's
    answer there is no option and its parser falls back to a random one.
    """

    name = "mirror"
    classifier = {"memory_depth": 1, "stochastic": True}
    needs_cooperation = False

    def __init__(self, opening: str = "random") -> None:
        self.opening = _check_opening(opening)

    def distribution(self, view: SeatView) -> list[float]:
        if _protocol_move(view):
            return uniform(view)
        if not view.history or not view.history[-1].others:
            return uniform(view) if self.opening == "random" else _opening(view)
        action = watched_action(view.history[-1])
        if action < known_actions(view):
            return pure(view, action)
        return cooperate(view) if others_cooperated(view, view.history[-1]) else defect(view)

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        return mirror_number(view, options)


@register
class AntiMirror(Strategy):
    """Opens at random, then plays the other action than the co-player's last one.

    The strategic personalities paper's "anti_mirror": with two options it answers the model's last option with the
    other one (after a random opening); with more options its code plays at random every
    round, and so does this. ``opening = "cooperate"`` opens with the cooperative action
    (action 0 if none): then it is the Axelrod library's Anti Tit For Tat. In the
    move-by-move games it answers numbers with the co-player's number reflected in the
    range (round 1: random), and picks the first option (accept, send the signal), as the
    code's "option unlike the co-player's move" always is there.
    """

    name = "anti_mirror"
    classifier = {"memory_depth": 1, "stochastic": True}
    needs_cooperation = False

    def __init__(self, opening: str = "random") -> None:
        self.opening = _check_opening(opening)

    def distribution(self, view: SeatView) -> list[float]:
        if _protocol_move(view):
            return pure(view, 0)
        if known_actions(view) != 2:
            return uniform(view)
        if not view.history or not view.history[-1].others:
            return uniform(view) if self.opening == "random" else _opening(view)
        action = watched_action(view.history[-1])
        return pure(view, 1 - action) if action in (0, 1) else uniform(view)

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        return anti_mirror_number(view, options)
