"""Stand-in TrustGame."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Mapping, Sequence

from coopeval.games.base import Action, GridGame


class TrustGameAction(Action):
    GIVE = "G"
    KEEP = "K"


class TrustGame(GridGame):
    """Stand-in: the one game whose seats differ."""

    def __init__(self, payoff_matrix: Mapping[str, Sequence[float]]) -> None:
        super().__init__(payoff_matrix, TrustGameAction, num_players=2, is_symmetric=False)
