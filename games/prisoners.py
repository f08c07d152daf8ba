"""Prisoner's Dilemma family: the similarity signals paper's Prisoners, the strategic personalities paper's four PD variants and
the super-additive cooperation paper's IPD table.

All share one shape: mutual cooperation pays R, mutual defection P, a lone defector
gets T and the cooperator it exploits S, with T > R > P >= S. Only the numbers differ,
so every key is a one-line call to :func:`dilemma`.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, symmetric_two_player

ACTIONS = ("Cooperate", "Defect")


def dilemma(
    key: str,
    title: str,
    reward: float,
    sucker: float,
    temptation: float,
    punishment: float,
    source: str,
) -> Game:
    """A symmetric 2x2 dilemma from its four payoffs (row player's view)."""
    description = (
        f"Two players each choose to cooperate or defect at the same time. Both cooperating "
        f"pays {reward:g} each and both defecting {punishment:g} each; a defector facing a "
        f"cooperator takes {temptation:g} and leaves the cooperator {sucker:g}. Defecting "
        f"is better for each player whatever the other does, yet mutual cooperation beats "
        f"mutual defection. Payoffs as in {source}."
    )
    return symmetric_two_player(
        key,
        title,
        description,
        ACTIONS,
        [[reward, sucker], [temptation, punishment]],
        cooperative=[0],
        defect=1,
    )


@register_game("prisoners")
def prisoners() -> Game:
    """Prisoner's Dilemma (2,2 / 0,3 / 3,0 / 1,1), the running example of the similarity signals paper."""
    return dilemma("prisoners", "Prisoner's Dilemma", 2, 0, 3, 1, "the similarity signals paper and CoopEval")


@register_game("pd_canonical")
def pd_canonical() -> Game:
    """Prisoner's Dilemma, canonical variant (3,3 / 0,5 / 5,0 / 1,1) of the strategic personalities paper."""
    return dilemma("pd_canonical", "Prisoner's Dilemma (canonical)", 3, 0, 5, 1, "the strategic personalities paper")


# The strategic personalities paper's harsh / medium / mild variants as its public code plays them (and as its
# published data was produced): T = 10 matrices with K = (R - P) / (T - S) of 0.3, 0.4
# and 0.6. The paper's text lists other numbers; those are kept as the *_paper keys.


@register_game("pd_harsh")
def pd_harsh() -> Game:
    """Prisoner's Dilemma, harsh variant as the strategic personalities paper's code runs it (8,8 / 0,10 / 10,0 / 5,5)."""
    return dilemma("pd_harsh", "Prisoner's Dilemma (harsh)", 8, 0, 10, 5, "the strategic personalities paper's code")


@register_game("pd_medium")
def pd_medium() -> Game:
    """Prisoner's Dilemma, medium variant as the strategic personalities paper's code runs it (6,6 / 0,10 / 10,0 / 2,2)."""
    return dilemma("pd_medium", "Prisoner's Dilemma (medium)", 6, 0, 10, 2, "the strategic personalities paper's code")


@register_game("pd_mild")
def pd_mild() -> Game:
    """Prisoner's Dilemma, mild variant as the strategic personalities paper's code runs it (8,8 / 0,10 / 10,0 / 2,2)."""
    return dilemma("pd_mild", "Prisoner's Dilemma (mild)", 8, 0, 10, 2, "the strategic personalities paper's code")


@register_game("pd_harsh_paper")
def pd_harsh_paper() -> Game:
    """Prisoner's Dilemma, harsh variant as the strategic personalities paper's text lists it (3,3 / 0,7 / 7,0 / 1,1)."""
    return dilemma(
        "pd_harsh_paper", "Prisoner's Dilemma (harsh, paper text)", 3, 0, 7, 1, "the strategic personalities paper's text"
    )


@register_game("pd_medium_paper")
def pd_medium_paper() -> Game:
    """Prisoner's Dilemma, medium variant as the strategic personalities paper's text lists it (3,3 / 0,6 / 6,0 / 1,1)."""
    return dilemma(
        "pd_medium_paper", "Prisoner's Dilemma (medium, paper text)", 3, 0, 6, 1, "the strategic personalities paper's text"
    )


@register_game("pd_mild_paper")
def pd_mild_paper() -> Game:
    """Prisoner's Dilemma, mild variant as the strategic personalities paper's text lists it (3,3 / 0,4 / 4,0 / 2,2)."""
    return dilemma(
        "pd_mild_paper", "Prisoner's Dilemma (mild, paper text)", 3, 0, 4, 2, "the strategic personalities paper's text"
    )


@register_game("ipd")
def ipd() -> Game:
    """Prisoner's Dilemma with the team-tournament table of the super-additive cooperation paper (3,3 / -1,5 / 5,-1 / 0,0)."""
    return dilemma("ipd", "Prisoner's Dilemma (super-additive cooperation)", 3, -1, 5, 0, "the super-additive cooperation paper")
