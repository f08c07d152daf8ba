"""The strategic personalities paper's fixed-pattern opponents for coordination, stag hunt and chicken games.

As its public code plays them: the first option stands for cooperate / ballet / stag /
swerve and the second for defect / football / hare / straight in every binary game, and
copies in a 4-player game react to the model in seat 1 (see ``base``'s the strategic personalities paper helpers).
"""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    first_option,
    known_actions,
    pure,
    register,
    second_option,
    watched_played_second,
)
from coop_tui.decisions import SeatView


class _AsRun(Strategy):
    needs_cooperation = False


@register
class FirstOption(_AsRun):
    """Always plays its first option (the cooperative one when the game names it).

    The strategic personalities paper's always-cooperate in its own convention, and its ``always_ballet``,
    ``always_stag`` and ``always_swerve`` (the same function). Equals ``always_cooperate``
    where the game has a cooperative action; also plays games without one.
    """

    name = "always_cooperate_sp"
    aliases = {"always_ballet": {}, "always_stag": {}, "always_swerve": {}}
    classifier = {"memory_depth": 0, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return pure(view, first_option(view))


@register
class SecondOption(_AsRun):
    """Always plays its second option (the defect action when the game names it).

    The strategic personalities paper's always-defect in its own convention, and its ``always_football``,
    ``always_hare`` and ``always_straight`` (the same function).
    """

    name = "always_defect_sp"
    aliases = {"always_football": {}, "always_hare": {}, "always_straight": {}}
    classifier = {"memory_depth": 0, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return pure(view, second_option(view))


@register
class ChickenBully(_AsRun):
    """Goes straight (defects), but swerves for one round after the co-player went straight.

    The strategic personalities paper's ``chicken_bully``: opens with the risky option and backs down only right
    after a collision course. Against always-defect it alternates D, C, D, C.
    """

    name = "chicken_bully"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if view.history and watched_played_second(view, view.history[-1]):
            return pure(view, first_option(view))
        return pure(view, second_option(view))


@register
class AlternateOptions(_AsRun):
    """Switches option every round, opening with the first in seat 1 and the second elsewhere.

    The strategic personalities paper's Battle of the Sexes ``alternate``: it steps from its own last option to the
    next one (with two options, the other one). The seat-dependent opening is the code's:
    as the model's opponent (seat 2) it plays second, first, second, ... Unlike ``cycle``,
    which follows the round number, it follows its own last move.
    """

    name = "alternate_options"
    aliases = {"alternate": {}}
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        first, second = first_option(view), second_option(view)
        if not view.history:
            return pure(view, first if view.seat == 0 else second)
        last = view.history[-1].own
        n = known_actions(view)
        if n == 2 and last in (first, second):
            return pure(view, second if last == first else first)
        return pure(view, (last + 1) % n)
