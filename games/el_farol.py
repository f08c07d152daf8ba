"""El Farol Bar (strategic personalities, after Arthur 1994): going out pays only if the bar is not
crowded, staying home pays a fixed amount.

As the strategic personalities paper's code runs it: 4 players; a goer gets 10 when at most 60% of the players
go and 0 otherwise; staying home always pays 5. The public code counts the first
option ("go") as the cooperative one in its cooperation columns; coop-tui follows it so
rates stay comparable with the published data.

``payoff_text`` as in the Diner's Dilemma: by default the strategic personalities
protocol tells the payoffs as the code does (by name and rule: which label goes, the
threshold, what goers and stayers get) and coop-tui's own protocol lists every outcome;
"table" / "rule" fix one form under every protocol.
"""

from __future__ import annotations

import itertools

import numpy as np

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import Game
from coop_tui.games.diners_dilemma import option_order_param, payoff_text_param, rule_fields

MAX_PLAYERS = 12
GO, STAY = 0, 1


def bar_payoffs(choices: tuple[int, ...], threshold: float, go: float, crowded: float,
                stay: float) -> list[float]:
    """Goers get ``go`` when the share going is at most ``threshold``, else ``crowded``."""
    share_going = choices.count(GO) / len(choices)
    goer = go if share_going <= threshold + 1e-12 else crowded
    return [goer if c == GO else stay for c in choices]


@register_game("el_farol_bar")
def el_farol_bar(players: int = 4, threshold: float = 0.6, go: float = 10,
                 crowded: float = 0, stay: float = 5, payoff_text: str = "",
                 option_order: str = "fixed") -> Game:
    """El Farol Bar as the strategic personalities paper's code runs it: 4 players, going pays 10 if at most 60% go,
    else 0; staying home pays 5; ``payoff_text`` "rule" / "table" / "" (the protocol's);
    ``option_order`` "fixed" (the code's: going listed first every round) or "shuffled"
    (our earlier per-round order), under the paper's protocol's trial letters."""
    told = payoff_text_param(payoff_text)
    order_params = option_order_param(option_order)
    n = as_int("players", players, minimum=2, maximum=MAX_PLAYERS)
    t = as_float("threshold", threshold)
    if not 0 <= t <= 1:
        raise ValueError(f"threshold must lie between 0 and 1, got {t:g}")
    pay_go, pay_crowded, pay_stay = (as_float("go", go), as_float("crowded", crowded),
                                     as_float("stay", stay))
    payoffs = np.zeros((2,) * n + (n,))
    for choices in itertools.product((GO, STAY), repeat=n):
        payoffs[choices] = bar_payoffs(choices, t, pay_go, pay_crowded, pay_stay)
    most = int(np.floor(t * n + 1e-9))
    description = (
        f"{n} players each decide, at the same time, whether to go to a bar or stay home. "
        f"If at most {100 * t:g}% of the players go (here: {most} of {n} or fewer), each "
        f"one who went gets {pay_go:g}; if more go, the bar is crowded and each one who "
        f"went gets {pay_crowded:g}. Staying home always gives {pay_stay:g}. Payoffs as "
        f"the strategic personalities paper's code runs them."
    )
    rule = (
        f"Each player decides at the same time: {{a0}} is going to the bar, {{a1}} staying "
        f"home. If at most {100 * t:g}% of the {n} players go ({most} or fewer), each player "
        f"who goes gets {pay_go:g} points; if more go, the bar is overcrowded and each player "
        f"who goes gets {pay_crowded:g} points. Staying home always gives {pay_stay:g} points."
    )
    return Game(
        key="el_farol_bar",
        title=f"El Farol Bar ({n} players)",
        description=description,
        action_names=(("Go", "Stay"),) * n,
        payoffs=payoffs,
        cooperative=(frozenset({GO}),) * n,
        defect=(STAY,) * n,
        params={"players": n, "threshold": clean(t), "go": clean(pay_go),
                "crowded": clean(pay_crowded), "stay": clean(pay_stay),
                **({"payoff_text": told} if told else {}), **order_params},
        fixed_option_order=option_order == "fixed",
        called_by_code="the El Farol Bar Game",
        **rule_fields(rule, told),
    )
