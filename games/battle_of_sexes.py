"""Battle of the Sexes (seed 003): both want to meet, but disagree on where."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, bimatrix


@register_game("battle_of_sexes")
def battle_of_sexes(transposed: bool = False) -> Game:
    """Battle of the Sexes (10,7 on the concert / 7,10 at the stadium / 0,0 apart) of seed 003.

    ``transposed=True`` swaps who prefers which venue (seed 003's label-bias control).
    """
    if not isinstance(transposed, bool):
        raise TypeError(f"transposed must be true or false, got {transposed!r}")
    first, second = ((7, 10), (10, 7)) if transposed else ((10, 7), (7, 10))
    fan = "player 2" if transposed else "player 1"
    description = (
        f"Two friends each pick a venue for the evening, the concert or the stadium, "
        f"without talking. Ending up at different venues gives both 0. Meeting at the "
        f"concert gives {first[0]} to player 1 and {first[1]} to player 2; meeting at the "
        f"stadium gives {second[0]} and {second[1]}, so {fan} prefers the concert. Neither "
        f"choice is cooperative; the problem is agreeing on one of two equilibria."
    )
    title = "Battle of the Sexes" + (" (transposed)" if transposed else "")
    return bimatrix(
        "battle_of_sexes",
        title,
        description,
        ("Concert", "Stadium"),
        ("Concert", "Stadium"),
        [[first, [0, 0]], [[0, 0], second]],
        cooperative=((), ()),
        defect=(None, None),
        params={"transposed": transposed},
    )
