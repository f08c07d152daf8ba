"""Chicken: each driver prefers the other to swerve, and a crash is the worst outcome."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, symmetric_two_player


@register_game("chicken")
def chicken() -> Game:
    """Game of Chicken (0,0 / -1,1 / 1,-1 / -10,-10) of seed 000."""
    description = (
        "Two drivers head for each other and each chooses to swerve or to keep going "
        "straight. If both swerve nobody gains or loses (0 each). Going straight against a "
        "swerver wins 1 and costs the swerver 1. If neither swerves they crash and both "
        "lose 10. Swerving is the cooperative choice; each pure equilibrium has exactly "
        "one driver swerving. Payoffs as in seed 000."
    )
    return symmetric_two_player(
        "chicken",
        "Chicken",
        description,
        ("Swerve", "Straight"),
        [[0, -1], [1, -10]],
        cooperative=[0],
        defect=1,
    )
