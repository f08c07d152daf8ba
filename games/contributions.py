"""The strategic personalities paper's four-player public goods games with contributions 0-10 (pg_*_mpcr).

As run by the public code: every player keeps what it does not contribute and receives
MPCR times the *total* contribution (the pot is not divided by the group size; the MPCR
already is each player's return per unit). The paper's text calls the MPCR the return
"shared equally", which the code's payoff realises this way.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import points
from coop_tui.games.kinds import NumberSpace, ProtocolGame, RoundResult, Turn, protocol_game


def contribution_payoffs(contributions: list[float], endowment: float, mpcr: float) -> tuple[float, ...]:
    """Each player: endowment - own contribution + mpcr * total contributions."""
    total = sum(contributions)
    return tuple(endowment - c + mpcr * total for c in contributions)


def _game(key: str, mpcr: float, players: int, endowment: int, rounds: int) -> ProtocolGame:
    n = as_int("players", players, minimum=2, maximum=12)
    e = as_int("endowment", endowment, minimum=1)
    m = as_float("mpcr", mpcr, positive=True)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("contribution", 0, e, example=5)
    rules = (
        f"Each of the {n} players holds {e} points and decides how many of them to put into a "
        f"shared pool. Every point in the pool pays {m:g} points to each player, whoever put it "
        f"in; points not contributed are kept. So your payoff is ({e} - your contribution) + "
        f"{m:g} x (the total contributed by all {n} players)."
    )

    async def play(turn: Turn) -> RoundResult:
        query = f"How many of your {e} points do you contribute to the pool this round?"
        values = await turn.numbers([(s, "contribute", query, space, None) for s in range(n)])
        pay = contribution_payoffs(values, e, m)
        return RoundResult(pay, {"contributions": values},
                           tuple(f"you received {points(p)}." for p in pay))

    return protocol_game(
        key, f"Public Goods ({n} players, MPCR {m:g}, contributions 0-{e})",
        f"{n} players each contribute 0-{e} points; each receives {m:g} x the total. "
        f"Zero is dominant when MPCR < 1; full contribution is efficient when MPCR x n > 1.",
        moves=(f"contribute 0-{e}",) * n, roles=(f"one of the {n} players",) * n, rules=rules,
        protocol=play, rounds=r, called_by_code="the Public Goods Game",
        params={"mpcr": clean(m), "players": n, "endowment": e},
    )


@register_game("pg_low_mpcr")
def pg_low_mpcr(mpcr: float = 0.3, players: int = 4, endowment: int = 10, rounds: int = 10) -> ProtocolGame:
    """Public goods, 4 players contribute 0-10, MPCR 0.3 (strategic personalities)."""
    return _game("pg_low_mpcr", mpcr, players, endowment, rounds)


@register_game("pg_med_mpcr")
def pg_med_mpcr(mpcr: float = 0.5, players: int = 4, endowment: int = 10, rounds: int = 10) -> ProtocolGame:
    """Public goods, 4 players contribute 0-10, MPCR 0.5 (strategic personalities)."""
    return _game("pg_med_mpcr", mpcr, players, endowment, rounds)


@register_game("pg_high_mpcr")
def pg_high_mpcr(mpcr: float = 0.8, players: int = 4, endowment: int = 10, rounds: int = 10) -> ProtocolGame:
    """Public goods, 4 players contribute 0-10, MPCR 0.8 (strategic personalities)."""
    return _game("pg_high_mpcr", mpcr, players, endowment, rounds)
