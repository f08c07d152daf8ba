"""Matching Pennies: pure conflict, no cooperative action, only a mixed equilibrium."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, bimatrix


@register_game("matching_pennies")
def matching_pennies() -> Game:
    """Matching Pennies (zero-sum: player 1 wins 1 on a match, player 2 on a mismatch)."""
    description = (
        "Each player shows heads or tails at the same time. If the two coins match, player "
        "1 wins 1 point from player 2; if they differ, player 2 wins 1 point from player 1. "
        "There is nothing to cooperate on: the only equilibrium is for both to pick each "
        "side half of the time."
    )
    return bimatrix(
        "matching_pennies",
        "Matching Pennies",
        description,
        ("Heads", "Tails"),
        ("Heads", "Tails"),
        [[[1, -1], [-1, 1]], [[-1, 1], [1, -1]]],
        cooperative=((), ()),
        defect=(None, None),
    )
