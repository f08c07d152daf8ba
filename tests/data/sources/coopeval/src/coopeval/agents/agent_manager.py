"""Stand-in agents: the re-ask and the two reasoning instructions."""
# ruff: noqa: F401, UP035  (the imports mirror CoopEval's files; stand-ins replace them)

import textwrap
from typing import Any, Callable

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model

from coopeval.agents.test_llm import TestModel
from coopeval.logger_manager import LOGGER

GENERATE_CONFIG_KEYS = set(GenerateConfig.model_fields)


class Agent:
    """Stand-in agent: a seat number and a name."""

    def __init__(self, agent_config: dict) -> None:
        self.player_id: int = agent_config["player_id"]

    async def chat_with_retries(
        self, base_prompt: str, parse_func: Callable[[str], Any], *, max_retries: int = 5
    ) -> tuple[str, str, Any]:
        raise NotImplementedError

    @staticmethod
    def _build_retry_prompt(base_prompt: str, bad_response: str, error_reason: str) -> str:
        return (f"{base_prompt}\n~~ stand-in re-ask ~~\nyou wrote: {bad_response}\n"
                f"refused: {error_reason}\ntry once more")


class IOAgent(Agent):
    """Answer-only stand-in."""

    async def chat(self, messages: str) -> tuple[str, str]:
        system_prompt = textwrap.dedent("""\
            STAND-IN IO: the answer alone.""")
        return system_prompt, ""


class CoTAgent(Agent):
    """Reasoning stand-in."""

    async def chat(self, messages: str) -> tuple[str, str]:
        system_prompt = textwrap.dedent("""\
            STAND-IN COT: reason first,
            then answer.""")
        return system_prompt, ""
