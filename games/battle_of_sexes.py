"""Battle of the Sexes (strategic personalities): both want to meet, but disagree on where."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, bimatrix


@register_game("battle_of_sexes")
def battle_of_sexes(transposed: bool = False) -> Game:
    """Battle of the Sexes (10,7 on the concert / 7,10 at the stadium / 0,0 apart), the strategic personalities paper's text.

    ``transposed=True`` swaps who prefers which venue (the strategic personalities paper's label-bias control).
    These are the matrices of the strategic personalities paper's text; its code (and so its data) lists the
    options the other way round: see ``bos_standard`` and ``bos_transposed``.
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


def _bos(key: str, title: str, first: tuple[int, int], second: tuple[int, int]) -> Game:
    fan = "player 1" if first[0] < second[0] else "player 2"
    description = (
        f"Two friends each pick a venue for the evening, the ballet or the football match, "
        f"without talking. Ending up at different venues gives both 0. Meeting at the "
        f"ballet gives {first[0]} to player 1 and {first[1]} to player 2; meeting at the "
        f"football gives {second[0]} and {second[1]}, so {fan} prefers the football. "
        f"Neither choice is cooperative; the problem is agreeing on one of two equilibria. "
        f"Payoffs as the strategic personalities paper's code runs them."
    )
    return bimatrix(
        key, title, description, ("Ballet", "Football"), ("Ballet", "Football"),
        [[first, (0, 0)], [(0, 0), second]],
        cooperative=((), ()), defect=(None, None),
    )


@register_game("bos_standard")
def bos_standard() -> Game:
    """Battle of the Sexes as the strategic personalities paper's code runs it (ballet 7,10 / football 10,7 / apart 0,0)."""
    return _bos("bos_standard", "Battle of the Sexes (standard)", (7, 10), (10, 7))


@register_game("bos_transposed")
def bos_transposed() -> Game:
    """Battle of the Sexes, transposed, as the strategic personalities paper's code runs it (ballet 10,7 / football 7,10)."""
    return _bos("bos_transposed", "Battle of the Sexes (transposed)", (10, 7), (7, 10))
