"""Trust game in its simultaneous form (CoopEval): the two seats play different roles."""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games.base import Game, bimatrix


@register_game("trust")
def trust() -> Game:
    """Simultaneous Trust game (GG 10,10 / GK 0,20 / KG 6,2 / KK 4,4) of CoopEval."""
    description = (
        "Player 1 is an investor deciding whether to give a further stake to player 2's "
        "business or keep it; player 2 decides, without seeing that choice, whether to give "
        "back an equal share of the returns or keep them. If both give, each gets 10. If "
        "the investor gives and the partner keeps, the partner takes 20 and the investor 0. "
        "If the investor keeps and the partner gives, they get 6 and 2; if both keep, 4 "
        "each. Keeping is dominant for player 2, and once that is known, keeping is best "
        "for player 1 too. Payoffs as in CoopEval."
    )
    return bimatrix(
        "trust",
        "Trust",
        description,
        ("Give", "Keep"),
        ("Give", "Keep"),
        [[[10, 10], [0, 20]], [[6, 2], [4, 4]]],
        cooperative=([0], [0]),
        defect=(1, 1),
    )


@register_game("repeated_trust")
def repeated_trust() -> Game:
    """Binary trust game of the strategic personalities paper, repeated in its protocol (8,8 / 0,12 / 12,0 / 3,3)."""
    description = (
        "Each player chooses at the same time to trust the other or not. If both trust, "
        "each gets 8. A player who trusts while the other does not gets 0 and the other "
        "12. If neither trusts, each gets 3. Not trusting is better for each player "
        "whatever the other does, yet mutual trust beats mutual distrust. Payoffs as seed "
        "003's code runs them."
    )
    return bimatrix(
        "repeated_trust",
        "Repeated Trust (binary)",
        description,
        ("Trust", "Distrust"),
        ("Trust", "Distrust"),
        [[[8, 8], [0, 12]], [[12, 0], [3, 3]]],
        cooperative=([0], [0]),
        defect=(1, 1),
    )
