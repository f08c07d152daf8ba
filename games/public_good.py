"""Public Goods game with n players: the many-player Prisoner's Dilemma of the similarity signals paper and CoopEval."""

from __future__ import annotations

import itertools

import numpy as np

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import Game

MAX_PLAYERS = 12
"""The payoff tensor has 2**n * n entries; 12 players is already 49k numbers."""


@register_game("public_good")
def public_good(players: int = 3, alpha: float = 1.5, payoff_text: str = "rule") -> Game:
    """Public Goods game: n players each contribute 1 or keep it; the pot is multiplied by
    alpha and shared equally (default 3 players, alpha 1.5).

    ``payoff_text = "rule"`` (CoopEval) describes the payoffs by their rule, k
    contributors -> payoffs; ``"table"`` lists all 2**n outcomes.
    """
    if payoff_text not in ("rule", "table"):
        raise ValueError(f"payoff_text must be 'rule' or 'table', got {payoff_text!r}")
    n = as_int("players", players, minimum=2, maximum=MAX_PLAYERS)
    a = as_float("alpha", alpha, positive=True)
    payoffs = np.zeros((2,) * n + (n,))
    for profile in itertools.product((0, 1), repeat=n):
        k = profile.count(0)  # action 0 is Contribute
        share = a * k / n
        payoffs[profile] = [share + (1.0 if act == 1 else 0.0) for act in profile]
    dilemma = 1 < a < n
    description = (
        f"Each of {n} players holds 1 unit and chooses to contribute it to a common pot or "
        f"keep it. The pot is multiplied by {a:g} and split equally, so with k contributors "
        f"each contributor gets {a:g}*k/{n} and each free rider 1 + {a:g}*k/{n}."
        + (
            " Keeping is better for each player whatever the others do, yet everyone is "
            "better off if all contribute."
            if dilemma
            else f" With alpha outside (1, {n}) this is not a social dilemma."
        )
    )
    return Game(
        key="public_good",
        title=f"Public Goods ({n} players, alpha {a:g})",
        description=description,
        action_names=(("Contribute", "Keep"),) * n,
        payoffs=payoffs,
        cooperative=(frozenset({0}),) * n,
        defect=(1,) * n,
        params={"players": n, "alpha": clean(a), **({} if payoff_text == "rule" else {"payoff_text": payoff_text})},
        payoff_rule=(
            f"Suppose k of the {n} players (you included) play {{a0}}.\n"
            f"- Whoever plays {{a0}} gets {a:g} * k / {n} points.\n"
            f"- Whoever plays {{a1}} gets 1 + {a:g} * k / {n} points."
        ) if payoff_text == "rule" else None,
    )
