"""Stand-in Contracting: design, ballot, signature."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from typing import Sequence

from coopeval.agents.agent_manager import Agent
from coopeval.games.base import Action, Game
from coopeval.logger_manager import LOGGER
from coopeval.mechanisms.base import Mechanism
from coopeval.mechanisms.json_parsing import parse_action_value_map, parse_bool_votes
from coopeval.mechanisms.prompts import (
    CONTRACT_APPROVAL_VOTE_PROMPT,
    CONTRACT_CONFIRMATION_PROMPT,
    CONTRACT_DESIGN_PROMPT,
)
from coopeval.utils.json_io import extract_json_object_from_end

Contract = dict[Action, int]


class Contracting(Mechanism):
    def __init__(self, base_game: Game, *, tournament_workers: int = 1) -> None:
        super().__init__(base_game)
        self.contracts: dict[str, Contract] = {}

    async def _design_contract(self, designer: Agent) -> tuple[str, Contract]:
        text = self.base_game.get_player_prompt(designer.player_id) + CONTRACT_DESIGN_PROMPT
        _r, trace_id, contract = await designer.chat_with_retries(base_prompt=text,
                                                                  parse_func=self._parse_contract)
        return trace_id, contract

    async def _agree_to_contract(self, *, player: Agent, designer: Agent) -> tuple[str, str, bool]:
        text = self.base_game.get_player_prompt(player.player_id) + CONTRACT_CONFIRMATION_PROMPT.format(
            designer_player_id=designer.player_id,
            contract_description=self._contract_description(self.contracts[designer.name]))
        response, trace_id, agreed = await player.chat_with_retries(base_prompt=text,
                                                                    parse_func=self._parse_agreement)
        return response, trace_id, agreed

    def _parse_contract(self, response: str) -> Contract:
        values = parse_action_value_map(response, num_actions=self.base_game.num_actions)
        return {self.base_game.action_class.from_index(i): v for i, v in values.items()}

    def _parse_agreement(self, response: str) -> bool:
        found = extract_json_object_from_end(response)
        if not isinstance(found.get("sign"), bool):
            raise ValueError("stand-in: sign must be true or false")
        return found["sign"]

    def _contract_description(self, contract: Contract) -> str:
        return "\n".join(f"  {a.to_token()}: {v:+d}" for a, v in contract.items())

    async def _collect_vote(self, voter: Agent, players: Sequence[Agent]) -> tuple[str, dict[int, bool]]:
        table = "".join(f"C{i} by P{p.player_id}:\n{self._contract_description(self.contracts[p.name])}\n"
                        for i, p in enumerate(players, start=1))
        text = self.base_game.get_player_prompt(voter.player_id) + CONTRACT_APPROVAL_VOTE_PROMPT.format(
            all_contracts_description=table)
        _r, trace_id, votes = await voter.chat_with_retries(
            base_prompt=text, parse_func=lambda r: parse_bool_votes(r, prefix="C", count=len(players)))
        return trace_id, votes
