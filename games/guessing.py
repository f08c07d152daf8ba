"""The strategic personalities paper's beauty contests (p-guessing games): guess 0-100, closest to p x mean wins.

As run by the public code: two players, the one closest to p times the average of both
guesses wins a prize of 10 (a tie splits it); p = 2/3 (beauty_contest_23) or 1/2
(beauty_contest_12). Unique equilibrium: everybody guesses 0.
"""

from __future__ import annotations

from fractions import Fraction

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import points
from coop_tui.games.kinds import (
    NumberSpace,
    ProtocolGame,
    RoundResult,
    Turn,
    protocol_game,
    told_param,
    told_params,
)


def beauty_contest_payoffs(guesses: list[float], p: float, prize: float = 10) -> tuple[float, ...]:
    target = p * sum(guesses) / len(guesses)
    distances = [abs(g - target) for g in guesses]
    best = min(distances)
    winners = [i for i, d in enumerate(distances) if d == best]
    return tuple(prize / len(winners) if i in winners else 0.0 for i in range(len(guesses)))


def _game(key: str, p: float, players: int, prize: float, rounds: int,
          told: str) -> ProtocolGame:
    how = told_param(told)
    pv = as_float("p", p, positive=True)
    n = as_int("players", players, minimum=2, maximum=12)
    pz = as_float("prize", prize, positive=True)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    frac = Fraction(pv).limit_denominator(12)
    p_text = f"{frac.numerator}/{frac.denominator}" if abs(float(frac) - pv) < 1e-9 else f"{pv:g}"
    space = NumberSpace("guess", 0, 100, example=33)
    rules = (
        f"Each of the {n} players picks a number from 0 to 100, all at the same time. The "
        f"target is {p_text} of the average of all picked numbers. Whoever is closest to the "
        f"target wins {pz:g} points (players tied for closest share them); the others get 0."
    )
    # the code names the winner's prize but not what a tie for closest gets
    code_rules = (
        f"Each of the {n} players picks a number from 0 to 100, all at the same time. The "
        f"target is {p_text} of the average of all picked numbers. Whoever is closest to the "
        f"target wins {pz:g} points; the others get 0."
    )

    async def play(turn: Turn) -> RoundResult:
        query = "Which number from 0 to 100 do you pick this round?"
        guesses = await turn.numbers([(s, "guess", query, space, None) for s in range(n)])
        pay = beauty_contest_payoffs(guesses, pv, pz)
        return RoundResult(pay, {"guesses": guesses, "target": pv * sum(guesses) / n},
                           tuple(f"you received {points(x)}." for x in pay))

    return protocol_game(
        key, f"Beauty contest (p = {p_text}, {n} players)",
        f"Guess 0-100; closest to {p_text} x the mean wins {pz:g}. Equilibrium: 0.",
        moves=("guess 0-100",) * n, roles=(f"one of the {n} players",) * n, called="a number guessing game", rules=rules,
        code_rules=code_rules, protocol=play, rounds=r,
        params={"p": clean(pv), "players": n, "prize": clean(pz), **told_params(how)},
    )


@register_game("beauty_contest_23")
def beauty_contest_23(p: float = 2 / 3, players: int = 2, prize: float = 10,
                      rounds: int = 10, told: str = "") -> ProtocolGame:
    """Beauty contest: guess 0-100, closest to 2/3 of the mean wins 10 (strategic personalities)."""
    return _game("beauty_contest_23", p, players, prize, rounds, told)


@register_game("beauty_contest_12")
def beauty_contest_12(p: float = 1 / 2, players: int = 2, prize: float = 10,
                      rounds: int = 10, told: str = "") -> ProtocolGame:
    """Beauty contest: guess 0-100, closest to 1/2 of the mean wins 10 (strategic personalities)."""
    return _game("beauty_contest_12", p, players, prize, rounds, told)
