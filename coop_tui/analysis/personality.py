"""The strategic personalities paper's classification rules: reciprocity archetypes, endgame types, providers.

The thresholds are the paper's (Supplementary Notes 7 and 8). Its rules overlap, so the
order in which they are tried is part of the definition; ours, most specific first:

1. **anti-reciprocator**: P(C|D) > P(C|C);
2. **grudge-holder**: P(C|C) > 0.60 and P(C|D) < 0.03 (the paper calls it a strict
   subset of the reciprocators, so it wins over 3);
3. **strict reciprocator**: P(C|C) > 0.60 and P(C|D) < 0.10;
4. **unconditional defector**: P(C|C) < 0.20 and P(C|D) < 0.10;
5. **moderate reciprocator**: P(C|C) ≥ 0.40 and P(C|D) < P(C|C);
6. **weak reciprocator**: 0.20 < P(C|C) < 0.40 and P(C|D) < P(C|C);
7. otherwise **unclassified** (e.g. always-cooperate: 1.0 / 1.0, reciprocity index 0).

The paper's Supplementary Table 4 does not follow any single threshold on P(C|D): it
labels Gemini 3.1 Pro (62.8 / 0.4) and Gemini 3 Pro (77.5 / 2.8) grudge-holders but
GPT-4.1 (72.2 / 1.5) a strict reciprocator. Under rule 2 GPT-4.1 is a grudge-holder;
``archetype(..., grudge_first=False)`` gives the reciprocator label instead, which
matches GPT-4.1 but then misses the two Gemini models. We keep rule 2 first and say so.

A probability of None (no round pair of that kind) leaves the archetype ``None``: an
agent never defected against cannot show how it forgives.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ARCHETYPES", "ENDGAME_TYPES", "archetype", "endgame_type", "provider_of",
]

ARCHETYPES = (
    "anti-reciprocator", "grudge-holder", "strict reciprocator", "unconditional defector",
    "moderate reciprocator", "weak reciprocator", "unclassified",
)
ENDGAME_TYPES = ("terminal-value cooperation", "strategic exploitation",
                 "unconditional defection", "other")


def archetype(p_cc: float | None, p_cd: float | None, *, grudge_first: bool = True) -> str | None:
    """The archetype of an agent from its two conditional cooperation rates (0..1)."""
    if p_cc is None or p_cd is None:
        return None
    if p_cd > p_cc:
        return "anti-reciprocator"
    if grudge_first and p_cc > 0.60 and p_cd < 0.03:
        return "grudge-holder"
    if p_cc > 0.60 and p_cd < 0.10:
        return "strict reciprocator"
    if p_cc < 0.20 and p_cd < 0.10:
        return "unconditional defector"
    if p_cc >= 0.40 and p_cd < p_cc:
        return "moderate reciprocator"
    if 0.20 < p_cc < 0.40 and p_cd < p_cc:
        return "weak reciprocator"
    return "unclassified"


def endgame_type(last: float | None, before_last: float | None, curve: list[float]) -> str | None:
    """The strategic personalities paper's endgame type from the last round's rate, the round before, and the
    whole per-round curve (Supplementary Note 7). The three types exclude each other;
    anything else is ``other``."""
    if last is None or before_last is None or not curve:
        return None
    if last > 0.50:
        return "terminal-value cooperation"
    if before_last > 0.50 and last < 0.10:
        return "strategic exploitation"
    if max(curve) < 0.20:
        return "unconditional defection"
    return "other"


_ROUTERS = {"openrouter", "together_ai", "together", "bedrock", "vertex_ai", "azure",
            "hosted_vllm", "ollama", "ollama_chat", "fireworks_ai", "groq", "deepinfra"}
_FAMILIES = (
    ("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"),
    ("o4", "openai"), ("gemini", "google"), ("gemma", "google"), ("deepseek", "deepseek"),
    ("llama", "meta"), ("mistral", "mistral"), ("ministral", "mistral"),
    ("mixtral", "mistral"), ("qwen", "alibaba"), ("grok", "xai"),
)


def provider_of(model: str | None, kind: str | None = None) -> str:
    """The developer behind a model string: ``anthropic/claude-…`` → anthropic,
    ``openrouter/google/gemini-…`` → google, a bare ``gpt-4.1`` → openai (by family
    name, as in the published table). Strategies are ``strategy``, people ``human``;
    an unknown name keeps its first path segment (or ``unknown``)."""
    if kind in ("strategy", "human", "replay"):
        return kind
    if not model:
        return "unknown"
    parts = [p for p in model.lower().split("/") if p]
    while len(parts) > 1 and parts[0] in _ROUTERS:
        parts = parts[1:]
    if parts[0] == "local":  # the embedded model
        return "local"
    name = parts[-1]
    for prefix, provider in _FAMILIES:
        if name.startswith(prefix):
            return provider
    return parts[0] if len(parts) > 1 else "unknown"


def provider_from_spec(kind: str | None, spec_json: str | None) -> str:
    """Provider of a stored seat (``seats.agent_kind`` + ``seats.agent_spec``)."""
    spec: dict[str, Any] = {}
    if spec_json:
        try:
            spec = json.loads(spec_json) or {}
        except (ValueError, TypeError):
            spec = {}
    if kind == "strategy" or "strategy" in spec:
        return "strategy"
    return provider_of(spec.get("model"), kind)
