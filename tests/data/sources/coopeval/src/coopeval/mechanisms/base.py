"""Stand-in mechanism bases and the shared round history."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from collections import defaultdict
from typing import Sequence

from coopeval.agents.agent_manager import Agent
from coopeval.games.base import Action, Game, Move
from coopeval.ranking_evaluations.matchup_payoffs import MatchupPayoffs
from coopeval.ranking_evaluations.payoffs_base import PayoffsBase


class Mechanism:
    def __init__(self, base_game: Game, *, tournament_workers: int = 1) -> None:
        self.base_game = base_game


class RepetitiveMechanism(Mechanism):
    class History:
        """Rounds in the order played, and which of them each player was in."""

        def __init__(self, action_class: type[Action]) -> None:
            self.records: list[list[Move]] = []
            self.round_numbers: list[int] = []
            self.by_player: dict[Agent, list[int]] = defaultdict(list)

        def __len__(self) -> int:
            return len(self.records)

        def append(self, moves: list[Move], round_number: int | None = None) -> None:
            self.round_numbers.append(len(self.records) + 1 if round_number is None else round_number)
            for m in moves:
                self.by_player[m.player].append(len(self.records))
            self.records.append(moves)

        def rounds_of(self, player: Agent) -> list[tuple[int, list[Move]]]:
            return [(self.round_numbers[i], self.records[i]) for i in self.by_player.get(player, [])]

    def __init__(self, base_game: Game, num_rounds: int, discount: float, *,
                 tournament_workers: int = 1) -> None:
        super().__init__(base_game)
        self.num_rounds = num_rounds
        self.discount = discount
        self.history = self.History(base_game.action_class)


def seats(players: Sequence[Agent]) -> str:
    return ",".join(str(p.player_id) for p in players)
