"""Chicken: each driver prefers the other to swerve, and a crash is the worst outcome."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, symmetric_two_player


@register_game("chicken")
def chicken() -> Game:
    """Game of Chicken (0,0 / -1,1 / 1,-1 / -10,-10) of the similarity signals paper."""
    description = (
        "Two drivers head for each other and each chooses to swerve or to keep going "
        "straight. If both swerve nobody gains or loses (0 each). Going straight against a "
        "swerver wins 1 and costs the swerver 1. If neither swerves they crash and both "
        "lose 10. Swerving is the cooperative choice; each pure equilibrium has exactly "
        "one driver swerving. Payoffs as in the similarity signals paper."
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


def _chicken_sp(key: str, title: str, crash: float) -> Game:
    description = (
        f"Two drivers head for each other and each chooses to swerve or to keep going "
        f"straight. If both swerve, each gets 3. Going straight against a swerver wins 5 "
        f"and leaves the swerver 1. If neither swerves they crash and each gets {crash:g}. "
        f"Swerving is the safe, cooperative choice; each pure equilibrium has exactly one "
        f"driver swerving. Payoffs as the strategic personalities paper's code runs them."
    )
    return symmetric_two_player(
        key, title, description, ("Swerve", "Straight"), [[3, 1], [5, crash]],
        cooperative=[0], defect=1,
    )


@register_game("chicken_sp")
def chicken_sp() -> Game:
    """Chicken as the strategic personalities paper's code runs it (3,3 / 1,5 / 5,1 / -10,-10); the strategic personalities paper calls it
    ``chicken``, a key coop-tui keeps for the similarity signals paper's table."""
    return _chicken_sp("chicken_sp", "Chicken (strategic personalities)", -10)


@register_game("chicken_high_stakes")
def chicken_high_stakes() -> Game:
    """Chicken with a costlier crash as the strategic personalities paper's code runs it (3,3 / 1,5 / 5,1 / -50,-50)."""
    return _chicken_sp("chicken_high_stakes", "Chicken (high stakes)", -50)
