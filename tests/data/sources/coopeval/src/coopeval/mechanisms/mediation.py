"""Stand-in Mediation: design, ballot and the play twist."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Sequence

from coopeval.agents.agent_manager import Agent
from coopeval.games.base import Action, Game
from coopeval.logger_manager import LOGGER
from coopeval.mechanisms.base import Mechanism
from coopeval.mechanisms.json_parsing import parse_bool_votes
from coopeval.mechanisms.prompts import (
    MEDIATION_MECHANISM_PROMPT,
    MEDIATOR_APPROVAL_VOTE_PROMPT,
    MEDIATOR_DESIGN_PROMPT,
)
from coopeval.utils.json_io import extract_json_object_from_end

Mediator = dict[int, Action]


class Mediation(Mechanism):
    def __init__(self, base_game: Game, *, tournament_workers: int = 1) -> None:
        super().__init__(base_game)
        self.mediators: dict[str, Mediator] = {}
        self.mediation_mechanism_prompt = MEDIATION_MECHANISM_PROMPT
        self.base_game.add_mediator_action()

    async def _design_mediator(self, designer: Agent) -> tuple[str, Mediator]:
        text = self.base_game.get_player_prompt(designer.player_id) + MEDIATOR_DESIGN_PROMPT.format(
            num_players=self.base_game.num_players)
        _r, trace_id, mediator = await designer.chat_with_retries(base_prompt=text,
                                                                  parse_func=self._parse_mediator)
        return trace_id, mediator

    def _parse_mediator(self, response: str) -> Mediator:
        found = extract_json_object_from_end(response)
        if sorted(found) != [str(k) for k in range(1, self.base_game.num_players + 1)]:
            raise ValueError("stand-in: one action per count of delegators")
        return {int(k): self.base_game.action_class.from_index(int(v[1:])) for k, v in found.items()}

    def _mediator_description(self, mediator: Mediator) -> str:
        return "\n".join(f"  {k} -> {a.to_token()}" for k, a in mediator.items())

    async def _collect_vote(self, voter: Agent, players: Sequence[Agent]) -> tuple[str, dict[int, bool]]:
        table = "".join(f"M{i} by P{p.player_id}:\n{self._mediator_description(self.mediators[p.name])}\n"
                        for i, p in enumerate(players, start=1))
        text = self.base_game.get_player_prompt(voter.player_id) + MEDIATOR_APPROVAL_VOTE_PROMPT.format(
            all_mediators_description=table)
        _r, trace_id, votes = await voter.chat_with_retries(
            base_prompt=text, parse_func=lambda r: parse_bool_votes(r, prefix="M", count=len(players)))
        return trace_id, votes
