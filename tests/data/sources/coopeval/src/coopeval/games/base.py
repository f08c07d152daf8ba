"""Stand-in game framework: actions A0.., a prompt per seat, mixed answers."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, Self, Sequence, cast, override

from coopeval.agents.agent_manager import Agent
from coopeval.utils.json_io import extract_json_object_from_end


class Action(Enum):
    """Stand-in action: token A<index>."""

    def to_token(self) -> str:
        return f"A{list(type(self)).index(self)}"

    @classmethod
    def from_index(cls, index: int) -> Self:
        return list(cls)[index]

    @property
    def is_mediator(self) -> bool:
        return self.name == "MEDIATOR"


@dataclass
class Move:
    """Stand-in record of one player's move."""

    player: Agent
    action: Action
    points: float
    trace_id: str
    mediated: bool = False


class Game:
    """Stand-in game: a fixed text plus the seat's number."""

    def __init__(self, prompt: str, action_class: type[Action], *, num_players: int,
                 is_symmetric: bool = True) -> None:
        self.prompt = prompt
        self.action_class = action_class
        self.num_players = num_players
        self.is_symmetric = is_symmetric
        self.num_base_actions = len(action_class)
        self.num_actions = len(action_class)
        self.default_output_instruction = "ANSWER: percentages per action as JSON.\n"

    def add_mediator_action(self) -> None:
        if any(a.is_mediator for a in self.action_class):
            return
        members = {a.name: a.value for a in self.action_class}
        members["MEDIATOR"] = "MEDIATOR"
        self.action_class = cast(type[Action], Enum(self.action_class.__name__, members, type=Action))
        self.num_actions = len(self.action_class)

    def get_player_prompt(self, player_id: int) -> str:
        return self.prompt + f"[stand-in seat {player_id}]\n"

    async def prompt_player_mix_probs(self, player: Agent, extra_info: str | None = None,
                                      output_instruction: str | None = None) -> tuple[str, Any]:
        text = self.get_player_prompt(player.player_id)
        if extra_info:
            text += extra_info
        text += "--\n" + (output_instruction or self.default_output_instruction)
        _r, trace_id, probs = await player.chat_with_retries(text, self._parse_mixed_probs)
        return trace_id, probs

    def _parse_mixed_probs(self, response: str) -> dict[int, float]:
        found = extract_json_object_from_end(response)
        if set(found) != {f"A{i}" for i in range(self.num_actions)}:
            raise ValueError(f"stand-in: keys {sorted(found)} are not the actions")
        if sum(found.values()) != 100:
            raise ValueError("stand-in: the numbers do not add up to 100")
        return {int(k[1:]): v for k, v in found.items()}

    def get_actions_payoff(self, actions: Sequence[Action]) -> Sequence[float]:
        raise NotImplementedError


class GridGame(Game):
    """Stand-in two-by-two game described cell by cell."""

    def __init__(self, payoff_matrix: Mapping[str, Sequence[float]], action_class: type[Action],
                 *, num_players: int, is_symmetric: bool) -> None:
        self.raw = payoff_matrix
        cells = "".join(f"  {k[0]}/{k[1]} -> {v[0]} and {v[1]}\n" for k, v in payoff_matrix.items())
        names = " ".join(f"{a.to_token()}={a.value}" for a in action_class)
        super().__init__(f"GRID GAME ({names})\n{cells}", action_class,
                         num_players=num_players, is_symmetric=is_symmetric)

    @override
    def get_actions_payoff(self, actions: Sequence[Action]) -> Sequence[float]:
        return self.raw[actions[0].value + actions[1].value]
