"""Diner's Dilemma (strategic personalities): n diners split the bill equally, so ordering the costly
dish costs each diner only a share of its price.

The strategic personalities paper's code runs it with a cheap dish (cost 10, enjoyment 15) and a costly one
(cost 20, enjoyment 20) for 4 diners; its text describes other numbers (cheap: cost 5,
value 5; expensive: cost 15, value 12), kept as ``diners_dilemma_paper``.
A diner's payoff is the enjoyment of their own dish minus an equal share of the bill.

How the payoffs are told (``payoff_text``): by default the prompt protocol decides; the
strategic personalities protocol tells them as the paper's code does, by name and rule
(which label is the cheap dish, the costs and enjoyments, the bill split equally), and
coop-tui's own protocol lists every outcome. ``"table"`` lists the outcomes under every
protocol (exact, and our earlier form), ``"rule"`` states the rule under every protocol.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import Game

MAX_PLAYERS = 12
PAYOFF_TEXTS = ("", "rule", "table")
"""``payoff_text`` values: the protocol's choice, always the rule, always the outcome list."""
ORDERS = ("fixed", "shuffled")
"""``option_order`` values of the strategic personalities paper's unordered-choice games:
the code lists the options in one order every round (its default here); coop-tui's earlier
protocol shuffled the listing per seat and round."""


def option_order_param(option_order: str) -> dict[str, str]:
    """Check ``option_order``; the params it adds to a game: none for "fixed" (the paper's
    code, and the default, so the keys of runs made before the choice existed stay)."""
    if option_order not in ORDERS:
        raise ValueError(f"option_order must be 'fixed' (the paper's code: the same order "
                         f"every round) or 'shuffled' (a new order every round), got "
                         f"{option_order!r}")
    return {} if option_order == "fixed" else {"option_order": option_order}


def split_bill_payoffs(orders: tuple[int, ...], costs: tuple[float, float],
                       values: tuple[float, float]) -> list[float]:
    """Every diner's enjoyment minus an equal share of the bill (0 = cheap, 1 = costly)."""
    share = sum(costs[o] for o in orders) / len(orders)
    return [values[o] - share for o in orders]


def payoff_text_param(payoff_text: str) -> str:
    """``payoff_text`` checked: "" (the protocol's choice), "rule" or "table"."""
    if payoff_text not in PAYOFF_TEXTS:
        raise ValueError(f"payoff_text must be 'rule' or 'table' (or left out for the prompt "
                         f"protocol's choice), got {payoff_text!r}")
    return payoff_text


def rule_fields(rule: str, payoff_text: str) -> dict[str, Any]:
    """The Game fields that tell ``rule``: stated by every protocol ("rule"), by a protocol
    that states the code's rules ("", the default), or by none ("table")."""
    if payoff_text == "rule":
        return {"payoff_rule": rule}
    return {"code_payoff_rule": rule} if payoff_text == "" else {}


def _diners(key: str, title: str, players: int, cheap_cost: float, cheap_value: float,
            costly_cost: float, costly_value: float, source: str, payoff_text: str, option_order: str = "fixed") -> Game:
    told = payoff_text_param(payoff_text)
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
    rule = (
        f"Each player orders one dish at the same time: {{a0}} is the cheap dish (it costs "
        f"{costs[0]:g} and gives {values[0]:g} enjoyment), {{a1}} the costly dish (it costs "
        f"{costs[1]:g} and gives {values[1]:g} enjoyment). The total bill of all {n} players "
        "is split equally. Your points are the enjoyment of your own dish minus your share "
        "of the bill."
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
                "costly_cost": clean(costs[1]), "costly_value": clean(values[1]),
                **({"payoff_text": told} if told else {}), **option_order_param(option_order)},
        fixed_option_order=option_order == "fixed",
        called_by_code="the Diner's Dilemma",
        **rule_fields(rule, told),
    )


@register_game("diners_dilemma")
def diners_dilemma(players: int = 4, cheap_cost: float = 10, cheap_value: float = 15,
                   costly_cost: float = 20, costly_value: float = 20,
                   payoff_text: str = "", option_order: str = "fixed") -> Game:
    """Diner's Dilemma as the strategic personalities paper's code runs it: 4 diners, cheap 10/15, costly 20/20
    (cost/enjoyment), bill split equally; ``payoff_text`` "rule" / "table" / "" (the protocol's);
    ``option_order`` "fixed" (the code's: the cheap dish listed first every round) or
    "shuffled" (our earlier per-round order), under the paper's protocol's trial letters."""
    return _diners("diners_dilemma", "Diner's Dilemma", players, cheap_cost, cheap_value,
                   costly_cost, costly_value, "the strategic personalities paper's code",
                   payoff_text, option_order)


@register_game("diners_dilemma_paper")
def diners_dilemma_paper(players: int = 4, payoff_text: str = "") -> Game:
    """Diner's Dilemma as the strategic personalities paper's text describes it: cheap 5/5, expensive 15/12
    (cost/value), bill split equally."""
    return _diners("diners_dilemma_paper", "Diner's Dilemma (paper text)", players,
                   5, 5, 15, 12, "the strategic personalities paper's text", payoff_text)
