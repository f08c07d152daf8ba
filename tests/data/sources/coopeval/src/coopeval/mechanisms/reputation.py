"""Stand-in Reputation: each player's last rounds, unfolded to a depth."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Sequence

from tqdm import tqdm

from coopeval.agents.agent_manager import Agent
from coopeval.games.base import Game
from coopeval.logger_manager import LOGGER
from coopeval.mechanisms.base import RepetitiveMechanism
from coopeval.mechanisms.prompts import REPUTATION_MECHANISM_PROMPT
from coopeval.ranking_evaluations.reputation_payoffs import ReputationPayoffs
from coopeval.utils.match_scheduler_reputation import RandomMatcher


class Reputation(RepetitiveMechanism):
    def __init__(self, base_game: Game, *, num_rounds: int, discount: float, max_recursion_depth: int,
                 lookup_depth: int, include_prior_distributions: bool = True,
                 tournament_workers: int = 1) -> None:
        super().__init__(base_game, num_rounds, discount)
        self.lookup_depth = lookup_depth
        self.max_recursion_depth = max_recursion_depth
        self.player_to_uid: dict[Agent, int] = {}

    def _who(self, player: Agent, me: Agent) -> str:
        return "me" if player == me else f"#{self.player_to_uid[player]}"

    def _lines(self, player: Agent, me: Agent, before: int, first: int, depth: int, pad: str) -> list[str]:
        lines = []
        for n, moves in reversed(self.history.rounds_of(player)):
            if not first <= n < before:
                continue
            lines.append(pad + f"r{n} " + " ".join(
                f"{self._who(m.player, me)}:{m.action.to_token()}/{m.points}" for m in moves))
            if depth > 1:
                for m in moves:
                    if m.player != player:
                        lines += self._lines(m.player, me, n, first, depth - 1, pad + "  ")
        return lines

    def _build_history_prompts(self, players: Sequence[Agent]) -> list[str]:
        out = []
        for me in players:
            played = len(self.history.rounds_of(me))
            first = max(1, played + 1 - self.lookup_depth)
            text = []
            for p in players:
                text.append(f"[{self._who(p, me)}]")
                text += self._lines(p, me, played + 1, first, self.max_recursion_depth, "  ")
            out.append(REPUTATION_MECHANISM_PROMPT.format(
                discount=int(self.discount * 100), round_idx=played, history_context="\n".join(text)))
        return out
