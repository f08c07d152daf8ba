"""Focal Point (strategic personalities): a pure coordination game with four equally good options;
only a salient choice can help the two players meet.

``payoff_text`` as in the Diner's Dilemma: by default the strategic personalities protocol
tells the payoffs as the code does (a coordination game, a rule: the same option pays
each player the prize, different options pay 0), coop-tui's own protocol lists the 16
outcomes; "table" / "rule" fix one form under every protocol.
"""

from __future__ import annotations

import dataclasses

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, clean
from coop_tui.games.base import Game, symmetric_two_player
from coop_tui.games.diners_dilemma import option_order_param, payoff_text_param, rule_fields

OPTIONS = ("Alpha", "Beta", "Gamma", "Delta")


@register_game("focal_point")
def focal_point(prize: float = 10, payoff_text: str = "",
                option_order: str = "fixed") -> Game:
    """Focal Point as the strategic personalities paper's code runs it: two players pick one of four options and
    each win 10 if they pick the same one, else 0; ``payoff_text`` "rule" / "table" / "";
    ``option_order`` "fixed" (the code's: the options listed in the same order every round
    of a match) or "shuffled" (coop-tui's earlier per-round shuffle of the listing)."""
    told = payoff_text_param(payoff_text)
    order_params = option_order_param(option_order)
    p = as_float("prize", prize)
    k = len(OPTIONS)
    table = [[p if i == j else 0.0 for j in range(k)] for i in range(k)]
    description = (
        f"Two players each pick one of {k} options at the same time, without talking. If "
        f"they pick the same option each gets {p:g}; otherwise both get 0. Every matching "
        f"pair is an equilibrium and no option pays more than another. Payoffs as seed "
        f"003's code runs them."
    )
    rule = (f"Both of you pick one of the {k} options at the same time. If you pick the same "
            f"option, each of you gets {p:g} points; if you pick different options, both get 0.")
    game = symmetric_two_player(
        "focal_point", "Focal Point", description, OPTIONS, table, cooperative=[],
        defect=None, params={"prize": clean(p), **({"payoff_text": told} if told else {}),
                             **order_params})
    return dataclasses.replace(game, called_by_code="a coordination game",
                               fixed_option_order=option_order == "fixed",
                               **rule_fields(rule, told))
