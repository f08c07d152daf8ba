"""What a model's answer costs, from litellm's offline price map.

Kept apart from the agent so that the cost estimates of ``coop-tui run`` and the prompt-size
check read prices without importing a client library; litellm itself is never imported
here, only its price file is read.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"

BATCH_PRICE_FACTOR = 0.5
"""Batch APIs bill half the list price (OpenAI and Anthropic alike)."""


@functools.cache
def price_map() -> dict[str, Any]:
    """litellm's offline price map, read straight from its package data.

    It is the same file litellm loads with ``LITELLM_LOCAL_MODEL_COST_MAP=True``; reading
    the JSON costs milliseconds, where importing litellm costs seconds of CPU that would
    otherwise compete with a sweep's event loop on the openai transport.
    """
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PRICE_MAP_FILE
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return {}


def cost_for(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD cost of one call from litellm's offline price map; None when the model is unknown."""
    prices = _prices_of(model)
    if prices is None:
        return None
    per_in, per_out = prices
    return per_in * input_tokens + per_out * output_tokens


def reply_cost(
    model: str, input_tokens: int | None, output_tokens: int | None, *, batched: bool
) -> float | None:
    """USD cost of one reply: None when a token count or the model's price is unknown (a
    guess would look exact), at the Batch API's discount when it went through a batch."""
    if input_tokens is None or output_tokens is None:
        return None
    cost = cost_for(model, input_tokens, output_tokens)
    if cost is not None and batched:
        cost *= BATCH_PRICE_FACTOR
    return cost


@functools.lru_cache(maxsize=256)
def _prices_of(model: str) -> tuple[float, float] | None:
    """USD per input and per output token of ``model`` (looked up once per model: a sweep
    asks for every answer)."""
    if not model:
        return None
    prices = price_map()
    parts = model.split("/")
    # "openrouter/openai/gpt-4o" -> that, "openai/gpt-4o", "gpt-4o": the map keys vary
    for name in ("/".join(parts[i:]) for i in range(len(parts))):
        entry = prices.get(name)
        if not isinstance(entry, dict):
            continue
        per_in, per_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if per_in is None or per_out is None:
            continue
        return float(per_in), float(per_out)
    return None
