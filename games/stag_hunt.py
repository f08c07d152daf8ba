"""Stag Hunt: a coordination dilemma where cooperating pays most but only if the
co-player also cooperates, while the safe action pays the same whatever happens."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, symmetric_two_player

ACTIONS = ("Stag", "Hare")


def _stag_hunt(key: str, title: str, table: list[list[float]], source: str) -> Game:
    (both_stag, stag_alone), (hare_vs_stag, both_hare) = table
    description = (
        f"Two hunters each choose to go after the stag or a hare. The stag needs both: "
        f"together they get {both_stag:g} each, but a lone stag hunter gets {stag_alone:g}. "
        f"Hunting a hare is safe, paying {hare_vs_stag:g} against a stag hunter and "
        f"{both_hare:g} against another hare hunter. Both (Stag, Stag) and (Hare, Hare) are "
        f"equilibria. Payoffs as in {source}."
    )
    return symmetric_two_player(key, title, description, ACTIONS, table, cooperative=[0], defect=1)


@register_game("stag_hunt")
def stag_hunt() -> Game:
    """Stag Hunt (5,5 / 0,3 / 3,0 / 3,3) of the similarity signals paper."""
    return _stag_hunt("stag_hunt", "Stag Hunt", [[5, 0], [3, 3]], "the similarity signals paper")


# The strategic personalities paper: the public code's matrices (what its data was produced with) under the
# paper's ids; the paper text's matrices under *_paper.


@register_game("stag_hunt_standard")
def stag_hunt_standard() -> Game:
    """Stag Hunt, standard variant as the strategic personalities paper's code runs it (10,10 / 0,7 / 7,0 / 7,7)."""
    return _stag_hunt(
        "stag_hunt_standard", "Stag Hunt (standard)", [[10, 0], [7, 7]], "the strategic personalities paper's code"
    )


@register_game("stag_hunt_risky")
def stag_hunt_risky() -> Game:
    """Stag Hunt, risky variant as the strategic personalities paper's code runs it (15,15 / 0,7 / 7,0 / 7,7)."""
    return _stag_hunt("stag_hunt_risky", "Stag Hunt (risky)", [[15, 0], [7, 7]], "the strategic personalities paper's code")


@register_game("stag_hunt_standard_paper")
def stag_hunt_standard_paper() -> Game:
    """Stag Hunt, standard variant as the strategic personalities paper's text lists it (4,4 / 0,3 / 3,0 / 2,2)."""
    return _stag_hunt(
        "stag_hunt_standard_paper", "Stag Hunt (standard, paper text)", [[4, 0], [3, 2]],
        "the strategic personalities paper's text",
    )


@register_game("stag_hunt_risky_paper")
def stag_hunt_risky_paper() -> Game:
    """Stag Hunt, risky variant as the strategic personalities paper's text lists it (5,5 / 0,4 / 4,0 / 3,3)."""
    return _stag_hunt(
        "stag_hunt_risky_paper", "Stag Hunt (risky, paper text)", [[5, 0], [4, 3]],
        "the strategic personalities paper's text",
    )
