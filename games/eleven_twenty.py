"""The strategic personalities paper's 11-20 money request game (Arad and Rubinstein): request 11-20 points.

As run by the public code (a numeric move, 10 rounds): each player receives its request and
a bonus of 20 when its request is exactly one less than the other's.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_int
from coop_tui.games.base import points
from coop_tui.games.kinds import NumberSpace, ProtocolGame, RoundResult, Turn, protocol_game


def eleven_twenty_payoffs(requests: list[float], bonus: float = 20) -> tuple[float, float]:
    a, b = requests
    return (a + (bonus if a == b - 1 else 0), b + (bonus if b == a - 1 else 0))


@register_game("eleven_twenty")
def eleven_twenty(request_bonus: int = 20, rounds: int = 10) -> ProtocolGame:
    """11-20 money request: ask for 11-20, +20 if exactly one below the other (strategic personalities)."""
    bz = as_int("request_bonus", request_bonus, minimum=0)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("request", 11, 20, decimals_allowed=False, example=15)
    rules = (
        "You and the other player each ask for a whole number of points from 11 to 20, at the "
        f"same time. Each of you receives what it asked for. Whoever asked for exactly one "
        f"point less than the other also receives a bonus of {bz} points."
    )

    async def play(turn: Turn) -> RoundResult:
        query = "How many points (11 to 20) do you ask for?"
        asks = await turn.numbers([(s, "request", query, space, None) for s in range(2)])
        pay = eleven_twenty_payoffs(asks, bz)
        return RoundResult(pay, {"requests": asks},
                           tuple(f"you received {points(p)}." for p in pay))

    return protocol_game(
        "eleven_twenty", "11-20 money request game",
        "Request 11-20; one below the other's request earns a bonus. Level-k: 20, 19, 18 ...",
        moves=("request 11-20",) * 2, roles=("Player 1", "Player 2"), called="the 11-20 Money Request Game", rules=rules,
        protocol=play, rounds=r, params={"request_bonus": bz},
    )
