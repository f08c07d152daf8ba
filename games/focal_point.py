"""Focal Point (strategic personalities): a pure coordination game with four equally good options;
only a salient choice can help the two players meet."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, clean
from coop_tui.games.base import Game, symmetric_two_player

OPTIONS = ("Alpha", "Beta", "Gamma", "Delta")


@register_game("focal_point")
def focal_point(prize: float = 10) -> Game:
    """Focal Point as the strategic personalities paper's code runs it: two players pick one of four options and
    each win 10 if they pick the same one, else 0."""
    p = as_float("prize", prize)
    k = len(OPTIONS)
    table = [[p if i == j else 0.0 for j in range(k)] for i in range(k)]
    description = (
        f"Two players each pick one of {k} options at the same time, without talking. If "
        f"they pick the same option each gets {p:g}; otherwise both get 0. Every matching "
        f"pair is an equilibrium and no option pays more than another. Payoffs as seed "
        f"003's code runs them."
    )
    return symmetric_two_player("focal_point", "Focal Point", description, OPTIONS, table,
                                cooperative=[], defect=None, params={"prize": clean(p)})
