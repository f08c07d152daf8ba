"""The strategic personalities paper's Colonel Blotto: split 100 soldiers over 3 battlefields.

Payoff rule of the public code: a battlefield goes to whoever sends more soldiers (a tie
splits it); the player winning more battlefields gets 10 (a tie splits the 10). The code
rescales any allocation to the budget; here an allocation must add up to the budget and a
wrong one is asked again with the reason.

As run, the public code read a Blotto answer with its single-number parser, so "40, 30, 30"
became one number and, after rescaling, every stored allocation was (100, 0, 0): every round
a tie at 5 points each. coop-tui plays the game the payoff rule describes; docs/reproducing-strategic-personalities.md
notes the difference for anyone comparing with the published data.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_int
from coop_tui.games.base import points
from coop_tui.games.kinds import (
    AllocationSpace,
    ProtocolGame,
    RoundResult,
    Turn,
    protocol_game,
    told_param,
    told_params,
)


def blotto_payoffs(allocations: list[list[float]], prize: float = 10) -> tuple[float, ...]:
    n = len(allocations)
    wins = [0.0] * n
    for field_values in zip(*allocations, strict=True):
        top = max(field_values)
        tied = [i for i, v in enumerate(field_values) if v == top]
        for i in tied:
            wins[i] += 1 / len(tied)
    best = max(wins)
    winners = [i for i, w in enumerate(wins) if w == best]
    return tuple(prize / len(winners) if i in winners else 0.0 for i in range(n))


CODE_EXAMPLE = (40, 30, 30)
"""The example split the strategic personalities paper's code shows (100 soldiers, 3 fields)."""


def _example(budget: int, battlefields: int) -> tuple[int, ...] | None:
    """The code's example where it fits the game (it adds up to the budget), else none."""
    fits = len(CODE_EXAMPLE) == battlefields and sum(CODE_EXAMPLE) == budget
    return CODE_EXAMPLE if fits else None


@register_game("colonel_blotto")
def colonel_blotto(budget: int = 100, battlefields: int = 3, prize: int = 10,
                   rounds: int = 15, told: str = "") -> ProtocolGame:
    """Colonel Blotto: split 100 soldiers over 3 battlefields; more fields won takes 10 (strategic personalities)."""
    b = as_int("budget", budget, minimum=1)
    k = as_int("battlefields", battlefields, minimum=2, maximum=10)
    pz = as_int("prize", prize, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    how = told_param(told)
    keys = tuple(f"B{i}" for i in range(1, k + 1))
    space = AllocationSpace(keys, 0, b, total=b, example=_example(b, k))
    rules = (
        f"You and one other player each split {b} soldiers over {k} battlefields "
        f"({', '.join(keys)}) at the same time. Whoever sends more soldiers to a battlefield "
        f"wins it (equal numbers share it). Whoever wins more battlefields gets {pz} points; "
        f"if both win equally many, the {pz} points are shared."
    )
    # the code says who wins a battlefield and the round, never the prize nor a tie's share
    code_rules = (
        f"You and one other player each split {b} soldiers over {k} battlefields "
        f"({', '.join(keys)}) at the same time. Whoever sends more soldiers to a battlefield "
        "wins it, and whoever wins more battlefields wins the round."
    )

    async def play(turn: Turn) -> RoundResult:
        query = f"How many of your {b} soldiers do you send to each battlefield?"
        allocs = await turn.allocations([(s, "allocate", query, space) for s in range(2)])
        vectors = [[a[key] for key in keys] for a in allocs]
        pay = blotto_payoffs(vectors, pz)
        return RoundResult(pay, {"allocations": vectors},
                           tuple(f"you received {points(p)}." for p in pay))

    return protocol_game(
        "colonel_blotto", f"Colonel Blotto ({b} soldiers, {k} battlefields)",
        "Allocate a budget over battlefields; winning more battlefields wins the prize. "
        "No pure equilibrium.",
        moves=(f"allocate {b} over {k}",) * 2, roles=("Player 1", "Player 2"), rules=rules,
        code_rules=code_rules, protocol=play, rounds=r,
        params={"budget": b, "battlefields": k, "prize": pz, **told_params(how)},
        called_by_code="Colonel Blotto",
    )
