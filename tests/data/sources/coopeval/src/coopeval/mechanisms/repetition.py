"""Stand-in Repetition: the last rounds, newest first."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Sequence

from coopeval.agents.agent_manager import Agent
from coopeval.logger_manager import LOGGER
from coopeval.mechanisms.base import RepetitiveMechanism
from coopeval.mechanisms.prompts import REPETITION_MECHANISM_PROMPT


class Repetition(RepetitiveMechanism):
    def __init__(self, base_game, *, num_rounds: int, discount: float, lookup_depth: int = 5,
                 include_prior_distributions: bool = True, tournament_workers: int = 1) -> None:
        super().__init__(base_game, num_rounds, discount)
        self.lookup_depth = lookup_depth

    def _build_history_prompts(self, players: Sequence[Agent], round_idx: int,
                               history: RepetitiveMechanism.History) -> list[str]:
        out = []
        for me in players:
            shown = list(enumerate(history.records, start=1))[-self.lookup_depth:] if self.lookup_depth else []
            lines = [f"r{n}: " + " ".join(("me" if m.player == me else f"P{m.player.player_id}")
                                          + "=" + m.action.to_token() for m in moves)
                     for n, moves in reversed(shown)]
            out.append(REPETITION_MECHANISM_PROMPT.format(
                discount=int(self.discount * 100), round_idx=round_idx - 1,
                history_context="\n".join(lines) or "(no rounds yet)"))
        return out
