"""Diner's Dilemma (strategic personalities): n diners split the bill equally, so ordering the costly
dish costs each diner only a share of its price.

The strategic personalities paper's code runs it with a cheap dish (cost 10, enjoyment 15) and a costly one
(cost 20, enjoyment 20) for 4 diners; its text describes other numbers (cheap: cost 5,
value 5; expensive: cost 15, value 12), kept as ``diners_dilemma_paper``.
A diner's payoff is the enjoyment of their own dish minus an equal share of the bill.
"""

from __future__ import annotations

import itertools

import numpy as np

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import Game

MAX_PLAYERS = 12


def split_bill_payoffs(orders: tuple[int, ...], costs: tuple[float, float],
                       values: tuple[float, float]) -> list[float]:
    """Every diner's enjoyment minus an equal share of the bill (0 = cheap, 1 = costly)."""
    share = sum(costs[o] for o in orders) / len(orders)
    return [values[o] - share for o in orders]


def _diners(key: str, title: str, players: int, cheap_cost: float, cheap_value: float,
            costly_cost: float, costly_value: float, source: str) -> Game:
    n = as_int("players", players, minimum=2, maximum=MAX_PLAYERS)
    costs = (as_float("cheap_cost", cheap_cost), as_float("costly_cost", costly_cost))
    values = (as_float("cheap_value", cheap_value), as_float("costly_value", costly_value))
    payoffs = np.zeros((2,) * n + (n,))
    for orders in itertools.product((0, 1), repeat=n):
        payoffs[orders] = split_bill_payoffs(orders, costs, values)
    description = (
        f"{n} diners each order a dish at the same time and split the bill equally. The "
        f"cheap dish costs {costs[0]:g} and is worth {values[0]:g} to whoever eats it; the "
        f"costly dish costs {costs[1]:g} and is worth {values[1]:g}. Each diner's points "
        f"are the worth of their own dish minus an equal share of the total bill, so a "
        f"costly order is paid mostly by the others. Payoffs as in {source}."
    )
    return Game(
        key=key,
        title=f"{title} ({n} diners)",
        description=description,
        action_names=(("Cheap", "Costly"),) * n,
        payoffs=payoffs,
        cooperative=(frozenset({0}),) * n,
        defect=(1,) * n,
        params={"players": n, "cheap_cost": clean(costs[0]), "cheap_value": clean(values[0]),
                "costly_cost": clean(costs[1]), "costly_value": clean(values[1])},
    )


@register_game("diners_dilemma")
def diners_dilemma(players: int = 4, cheap_cost: float = 10, cheap_value: float = 15,
                   costly_cost: float = 20, costly_value: float = 20) -> Game:
    """Diner's Dilemma as the strategic personalities paper's code runs it: 4 diners, cheap 10/15, costly 20/20
    (cost/enjoyment), bill split equally."""
    return _diners("diners_dilemma", "Diner's Dilemma", players, cheap_cost, cheap_value,
                   costly_cost, costly_value, "the strategic personalities paper's code")


@register_game("diners_dilemma_paper")
def diners_dilemma_paper(players: int = 4) -> Game:
    """Diner's Dilemma as the strategic personalities paper's text describes it: cheap 5/5, expensive 15/12
    (cost/value), bill split equally."""
    return _diners("diners_dilemma_paper", "Diner's Dilemma (paper text)", players,
                   5, 5, 15, 12, "the strategic personalities paper's text")
