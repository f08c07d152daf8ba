"""The strategic personalities paper's commons dilemma: four players extract 0-10 from a resource of capacity 40.

Payoff as run: own extraction x max(0, 1 - total extraction / capacity), so the more the
group takes, the less each unit is worth, and taking 40 in total leaves everyone 0.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_int
from coop_tui.games.base import points
from coop_tui.games.kinds import NumberSpace, ProtocolGame, RoundResult, Turn, protocol_game


def commons_payoffs(extractions: list[float], capacity: float) -> tuple[float, ...]:
    quality = max(0.0, 1 - sum(extractions) / capacity)
    return tuple(x * quality for x in extractions)


@register_game("commons_dilemma")
def commons_dilemma(players: int = 4, capacity: int = 40, max_extraction: int = 10,
                    rounds: int = 10) -> ProtocolGame:
    """Commons dilemma: 4 players extract 0-10 from a resource of capacity 40 (strategic personalities)."""
    n = as_int("players", players, minimum=2, maximum=12)
    cap = as_int("capacity", capacity, minimum=1)
    top = as_int("max_extraction", max_extraction, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("extraction", 0, top, example=5)
    rules = (
        f"The {n} players share a resource with capacity {cap}. Each player takes 0 to {top} "
        f"points from it. The resource loses quality as the group takes more: your payoff is "
        f"what you take x (1 - total taken by all players / {cap}), and nobody gets anything "
        f"once the total reaches {cap}."
    )

    async def play(turn: Turn) -> RoundResult:
        query = f"How much do you take from the resource this round (0 to {top})?"
        values = await turn.numbers([(s, "extract", query, space, None) for s in range(n)])
        pay = commons_payoffs(values, cap)
        return RoundResult(pay, {"extractions": values},
                           tuple(f"you received {points(p)}." for p in pay))

    return protocol_game(
        "commons_dilemma", f"Commons dilemma ({n} players, capacity {cap})",
        "Each player extracts from a shared resource whose value per unit falls with the "
        "total extraction; restraint is efficient, over-extraction tempting.",
        moves=(f"extract 0-{top}",) * n, roles=(f"one of the {n} players",) * n, rules=rules,
        protocol=play, rounds=r, params={"players": n, "capacity": cap, "max_extraction": top},
        called_by_code="the Commons Dilemma",
    )
