"""The strategic personalities paper's reciprocal opponents, move for move as its public code plays them.

The strategic personalities paper (FelipeMAffonso/strategic-personalities, ``environments/strategies.py``) plays its
tit-for-tat family in every binary game, Battle of the Sexes, Matching Pennies and the
focal-point game included, with the first option as "cooperate" and the second as
"defect", and in its 4-player games every copy of a strategy reacts to the model in seat
1 only. These classes follow that convention (see the helpers at the end of ``base``).

In a two-player game whose actions 0 and 1 are cooperate and defect they play exactly
like our general strategies of the same family (``tit_for_tat``, ``grim_trigger``, ...);
they differ where the code's convention does: a game without a cooperative action (our
general ones refuse it), more than two options (they copy the co-player's option itself),
and several co-players (ours react to all of them). The ``_sp`` twins exist for those
games; the strategic personalities paper names that are not our names are aliases of them.
"""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    copy_action,
    first_option,
    probability,
    pure,
    register,
    second_option,
    watched_action,
    watched_played_first,
    watched_played_second,
)
from coop_tui.decisions import SeatView


class _AsRun(Strategy):
    needs_cooperation = False


@register
class TitForTatAsRun(_AsRun):
    """The strategic personalities paper's tit for tat: opens with the first option, then copies the co-player's option.

    Its code also plays it as ``stag_tft`` (stag hunts) and ``chicken_tft`` (chicken),
    which are the same function. Equals ``tit_for_tat`` on two-player cooperate/defect games.
    """

    name = "tit_for_tat_sp"
    aliases = {"stag_tft": {}, "chicken_tft": {}}
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return pure(view, first_option(view))
        return copy_action(view, watched_action(view.history[-1]))


@register
class SuspiciousTitForTatAsRun(_AsRun):
    """The strategic personalities paper's suspicious tit for tat: opens with the second option, then copies.

    Axelrod library: SuspiciousTitForTat (identical on a prisoner's dilemma).
    """

    name = "suspicious_tit_for_tat_sp"
    aliases = {"suspicious_tft": {}}
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return pure(view, second_option(view))
        return copy_action(view, watched_action(view.history[-1]))


@register
class TitForTwoTatsAsRun(_AsRun):
    """The strategic personalities paper's tit for two tats: the second option only after two second options in a row.

    Axelrod library: TitFor2Tats.
    """

    name = "tit_for_two_tats_sp"
    classifier = {"memory_depth": 2, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        last_two = view.history[-2:]
        if len(last_two) == 2 and all(watched_played_second(view, m) for m in last_two):
            return pure(view, second_option(view))
        return pure(view, first_option(view))


@register
class ReverseTitForTatAsRun(_AsRun):
    """The strategic personalities paper's reverse tit for tat: opens with the second option, then answers the
    co-player's first option with the second and anything else with the first.

    Axelrod library: Bully (identical on a prisoner's dilemma).
    """

    name = "reverse_tit_for_tat_sp"
    aliases = {"reverse_tft": {}}
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history or watched_played_first(view, view.history[-1]):
            return pure(view, second_option(view))
        return pure(view, first_option(view))


@register
class HardTitForTat(_AsRun):
    """Opens cooperatively; defects if the co-player defected in any of the last 3 rounds.

    The strategic personalities paper's ``hard_tft`` and the Axelrod library's HardTitForTat (same rule). A single
    defection is punished for three rounds; on games without a cooperative action
    "defect" is the second option, as in the strategic personalities paper's code.
    """

    name = "hard_tit_for_tat"
    aliases = {"hard_tft": {}}
    classifier = {"memory_depth": 3, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if any(watched_played_second(view, m) for m in view.history[-3:]):
            return pure(view, second_option(view))
        return pure(view, first_option(view))


@register
class GrimTriggerAsRun(_AsRun):
    """The strategic personalities paper's grim trigger: the second option for good once the co-player played it.

    Axelrod library: Grudger.
    """

    name = "grim_trigger_sp"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if any(watched_played_second(view, m) for m in view.history):
            return pure(view, second_option(view))
        return pure(view, first_option(view))


@register
class WinStayLoseShiftAsRun(_AsRun):
    """The strategic personalities paper's Pavlov: keeps its option after the co-player's first option, else switches.

    The code's "win" is (cooperate, cooperate) or (defect, cooperate); after a loss it plays
    the second option if it had played the first, otherwise the first. Axelrod library:
    WinStayLoseShift.
    """

    name = "win_stay_lose_shift_sp"
    aliases = {"pavlov": {}}
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return pure(view, first_option(view))
        last = view.history[-1]
        first, second = first_option(view), second_option(view)
        if watched_played_first(view, last) and last.own in (first, second):
            return pure(view, last.own)
        return pure(view, second if last.own == first else first)


@register
class NoisyTitForTat(_AsRun):
    """Tit for tat that defects instead of cooperating with probability noise (default 0.1).

    The strategic personalities paper's ``noise_10`` and ``noise_20``: it opens cooperatively (no noise in round 1),
    copies a defection, and after a cooperation defects with probability ``noise``. The
    mixture is returned and the engine draws the move from the match seed, so a rerun
    makes the same moves. (The Axelrod library's noise flips every move of a match,
    including round 1 and retaliations; this does not.)
    """

    name = "noisy_tit_for_tat"
    aliases = {"noise_10": {"noise": 0.1}, "noise_20": {"noise": 0.2}}
    classifier = {"memory_depth": 1, "stochastic": True}

    def __init__(self, noise: float = 0.1) -> None:
        self.noise = probability("noise", noise)

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return pure(view, first_option(view))
        last = watched_action(view.history[-1])
        if not watched_played_first(view, view.history[-1]):
            return copy_action(view, last)
        out = pure(view, first_option(view))
        out[first_option(view)] -= self.noise
        out[second_option(view)] += self.noise
        return out


@register
class FalseDefector(_AsRun):
    """Cooperates in round 1, defects in rounds 2 and 3, then plays tit for tat.

    The strategic personalities paper's ``false_defector``: an opening that tests whether the co-player forgives
    two unprovoked defections. No Axelrod-library equivalent.
    """

    name = "false_defector"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history:
            return pure(view, first_option(view))
        if len(view.history) <= 2:
            return pure(view, second_option(view))
        return copy_action(view, watched_action(view.history[-1]))


@register
class DefectOnce(_AsRun):
    """Defects in round 1 only, then cooperates whatever happens.

    The strategic personalities paper's ``defect_once``: one unprovoked defection, never repeated, to see whether
    the co-player holds a grudge. No Axelrod-library equivalent.
    """

    name = "defect_once"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return pure(view, second_option(view) if not view.history else first_option(view))
