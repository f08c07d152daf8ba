"""Stand-in travellers' dilemma."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from enum import Enum
from typing import Iterable, Sequence, cast

from coopeval.games.base import Action, Game


def build_travellers_action(claims: Iterable[int]) -> type[Action]:
    return cast(type[Action], Enum("TravellersDilemmaAction",
                                   {f"CLAIM_{i}": str(c) for i, c in enumerate(claims)}, type=Action))


class TravellersDilemma(Game):
    def __init__(self, *, min_claim: int, num_actions: int, claim_spacing: int, bonus: float) -> None:
        self.claims = [min_claim + i * claim_spacing for i in range(num_actions)]
        self.bonus = float(bonus)
        actions = build_travellers_action(self.claims)
        super().__init__(f"CLAIM GAME {self.claims} bonus {self.bonus}\n", actions, num_players=2)

    def get_actions_payoff(self, actions: Sequence[Action]) -> Sequence[float]:
        a, b = (int(x.value) for x in actions)
        if a == b:
            return [float(a), float(b)]
        low = float(min(a, b))
        return [low + self.bonus, low - self.bonus] if a < b else [low - self.bonus, low + self.bonus]
