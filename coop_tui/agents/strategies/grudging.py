"""Strategies that punish a defection for longer than one round."""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    cooperate,
    defect,
    opponent_record,
    register,
    scripted_response,
    whole,
)
from coop_tui.decisions import SeatView


@register
class GrimTrigger(Strategy):
    """Cooperates until a co-player defects once, then defects for the rest of the match.

    Friedman's grim trigger (Grudger in Axelrod's first tournament); the unforgiving
    reference of the strategic personalities paper and the super-additive cooperation paper.
    """

    name = "grim_trigger"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return defect(view) if False in opponent_record(view) else cooperate(view)


@register
class ForgivingGrim(Strategy):
    """Punishes a defection for a fixed number of rounds (punish = 3), then cooperates again.

    The Axelrod library's Forgetful Grudger (which holds its grudge 10 rounds), with a
    shorter default suited to the 5-20 round games of the strategic personalities paper. Defections during the
    punishment are ignored; one in its last round starts a new punishment.
    """

    name = "forgiving_grim"
    classifier = {"memory_depth": INF, "stochastic": False}

    def __init__(self, punish: int = 3) -> None:
        self.punish = whole("punish", punish, minimum=1)

    def distribution(self, view: SeatView) -> list[float]:
        move = scripted_response(view, lambda _total: [False] * self.punish)
        return cooperate(view) if move else defect(view)


@register
class Gradual(Strategy):
    """Answers the n-th defection with n defections, then two cooperations to calm down.

    Gradual (Beaufils, Delahaye and Mathieu 1997), listed in the strategic personalities paper: n is the co-player's
    total number of defections so far, so punishment grows with repeated offences.
    Defections during a punishment are counted but start nothing until it ends.
    """

    name = "gradual"
    classifier = {"memory_depth": INF, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        move = scripted_response(view, lambda total: [False] * total + [True, True])
        return cooperate(view) if move else defect(view)
