"""Build the agent object for a roster entry: the only place that knows agent kinds.

Providers need nothing special here: every ``provider/model`` string goes to the LLM
agent (litellm, or the OpenAI client for OpenAI-compatible ``api_base`` servers).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.agents.custom import build_custom
from coop_tui.agents.human import HumanAgent
from coop_tui.agents.llm import LLMAgent
from coop_tui.agents.local import LocalAgent
from coop_tui.agents.strategies import get_strategy
from coop_tui.agents.strategy_agent import StrategyAgent

if TYPE_CHECKING:  # a type hint only: spec.py (which validates rosters) sits above agents
    from coop_tui.spec import AgentSpec


def build_agent(
    name: str,
    spec: AgentSpec,
    *,
    limiter: Any = None,
    base: Path | None = None,
    concurrency: int | None = None,
    batch: bool = False,
) -> Any:
    """``concurrency``: the sweep's limit, which sizes an LLM agent's connection pools
    (per endpoint, unless the agent's own ``max_concurrency`` is smaller); ``batch``: its
    decisions go through the provider's Batch API (the agent's or the sweep's ``batch``)."""
    kind = spec.kind
    if kind == "custom":
        return build_custom(name, spec.agent or "", spec.params, style=spec.style,
                            spec=spec.public(), max_answer_chars=spec.max_answer_chars)
    if kind == "strategy":
        return StrategyAgent(name, get_strategy(spec.strategy or "", **spec.params))
    if kind == "human":
        return HumanAgent(name)
    if kind == "local":
        model = spec.model or "local/smollm2"
        if model.startswith("local:") and base is not None:
            path = Path(model[len("local:"):]).expanduser()
            if not path.is_absolute() and (base / path).exists():
                model = f"local:{base / path}"
        return LocalAgent(
            name,
            model=model,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            seed=spec.seed,
            threads=spec.threads,
            style=spec.style,
            prefix_cache=spec.prefix_cache,
            spec=spec.public(),
        )

    agent = LLMAgent(
        name=name,
        model=spec.model or "",
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        reasoning_effort=spec.reasoning_effort,
        style=spec.style,
        api_base=spec.api_base,
        api_key=spec.resolve_key(),
        timeout=spec.timeout,
        deadline=spec.deadline,
        max_answer_chars=spec.max_answer_chars,
        limiter=limiter,
        max_concurrency=spec.max_concurrency,
        max_connections=concurrency,
        constrained=spec.constrained,
        batch=batch,
        batch_poll=spec.batch_poll,
    )
    agent.spec = spec.public()
    return agent
