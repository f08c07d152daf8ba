"""Stand-in public goods game."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Sequence

from coopeval.games.base import Action, Game


class PublicGoodsAction(Action):
    CONTRIBUTE = "C"
    FREE_RIDE = "F"


class PublicGoods(Game):
    def __init__(self, *, num_players: int, multiplier: float) -> None:
        self.multiplier = multiplier
        super().__init__(f"POOL GAME of {num_players}, pot times {multiplier}\n",
                         PublicGoodsAction, num_players=num_players)

    def get_actions_payoff(self, actions: Sequence[Action]) -> Sequence[float]:
        share = sum(a.value == "C" for a in actions) * self.multiplier / self.num_players
        return [share + (a.value == "F") for a in actions]
