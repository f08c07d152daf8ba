"""Stand-in StagHunt."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Mapping, Sequence

from coopeval.games.base import Action, GridGame


class StagHuntAction(Action):
    STAG = "S"
    HARE = "H"


class StagHunt(GridGame):
    def __init__(self, payoff_matrix: Mapping[str, Sequence[float]]) -> None:
        super().__init__(payoff_matrix, StagHuntAction, num_players=2, is_symmetric=True)
