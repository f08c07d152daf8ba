"""Agents written outside coop-tui: a class with ``decide(request)`` fills a seat.

The documented interface is deliberately smaller than the engine's :class:`Agent`
protocol (``reply(request, messages, sink)``), so an agent with memory, tools or a
fine-tune needs no knowledge of sinks or stored decisions::

    class MyAgent:
        async def decide(self, request: DecisionRequest) -> str | AgentReply: ...

It returns the answer text as a model would write it (parsed by the same parser, so a
bad answer is re-asked and stored like any other), or an :class:`AgentReply` to report
reasoning, tokens or cost. Streaming is optional: ``decide`` may be an async generator
yielding pieces of text, each shown in the seat's pane as it comes. :class:`DecideAgent`
adapts such a class to the engine, the way Inspect AI wraps an agent as a solver.

A sweep names one as ``agent = "package.module:Class"``, or by the name an installed
plugin registered with :func:`register_agent` (entry-point group ``coop_tui.agents``).
The agent's ``params`` go to the class's constructor.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from coop_tui.agents.strategy_agent import percentages
from coop_tui.decisions import DEFAULT_MAX_ANSWER_CHARS, AgentReply, DecisionRequest, Message
from coop_tui.plugins import load_entry_points

GROUP = "coop_tui.agents"
_REGISTRY: dict[str, type] = {}
T = TypeVar("T", bound=type)


class AgentRefError(ValueError):
    """An ``agent = ...`` reference that names no usable class."""


def register_agent(key: str) -> Callable[[T], T]:
    """Class decorator: make an agent class findable as ``agent = "<key>"``."""

    def decorate(cls: T) -> T:
        _check_class(cls, key)
        known = _REGISTRY.get(key)
        if known is not None and known is not cls:
            raise TypeError(f"agent name {key!r} is used by {known.__qualname__} already")
        _REGISTRY[key] = cls
        return cls

    return decorate


def _check_class(cls: Any, ref: str) -> None:
    if not inspect.isclass(cls):
        raise AgentRefError(f"{ref!r} is not a class")
    if not callable(getattr(cls, "decide", None)):
        raise AgentRefError(f"{ref!r} has no decide(request) method; an agent class defines "
                            "async def decide(self, request) returning the answer text")


def _load() -> None:
    """Installed agents: a module that registers with :func:`register_agent`, or an entry
    point naming a class directly (registered under the entry point's name)."""
    for ep, obj in load_entry_points(GROUP):
        if inspect.isclass(obj) and ep.name not in _REGISTRY:
            try:
                register_agent(ep.name)(obj)
            except (TypeError, AgentRefError):
                continue  # named in `coop-tui list plugins` as loaded; not an agent


def agent_names() -> list[str]:
    """Every registered (plugin) agent name, sorted."""
    _load()
    return sorted(_REGISTRY)


def agent_summary(key: str) -> str:
    doc = inspect.getdoc(agent_class(key)) or ""
    return doc.splitlines()[0] if doc else ""


def is_class_ref(ref: str) -> bool:
    """``package.module:Class``: a class named by its import path."""
    module, _, attr = ref.partition(":")
    return bool(module and attr) and "/" not in ref


def agent_class(ref: str) -> type:
    """The class behind ``ref``: a registered name, or ``package.module:Class``."""
    ref = ref.strip()
    if is_class_ref(ref):
        module_name, _, attr = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - whatever the user's module raises
            raise AgentRefError(
                f"cannot import module {module_name!r} for agent {ref!r} ({type(exc).__name__}: "
                f"{exc}); install its package or put it on PYTHONPATH") from None
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise AgentRefError(f"module {module_name!r} has no {attr!r} (agent {ref!r})")
        _check_class(obj, ref)
        return obj
    _load()
    cls = _REGISTRY.get(ref)
    if cls is None:
        names = sorted(_REGISTRY)
        close = difflib.get_close_matches(ref, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        known = f"installed agents: {', '.join(names)}" if names else "no plugin agent is installed"
        raise AgentRefError(f"unknown agent {ref!r}; {hint}{known}; or name a class as "
                            "agent = \"package.module:Class\"")
    return cls


def build_custom(name: str, ref: str, params: dict[str, Any], *, style: str,
                 spec: dict[str, Any], max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
                 ) -> DecideAgent:
    """The seat's agent: the class built with ``params`` and wrapped for the engine."""
    cls = agent_class(ref)
    return DecideAgent(name, cls(**params), style=style, spec=spec,
                       max_answer_chars=max_answer_chars)


class AnswerTooLong(RuntimeError):
    """An agent's answer grew past its ``max_answer_chars``: refused, nothing of it kept."""


class DecideAgent:
    """Adapts an object with ``decide(request)`` to the engine's :class:`Agent` protocol."""

    kind = "custom"

    def __init__(self, name: str, inner: Any, *, style: str = "cot",
                 spec: dict[str, Any] | None = None,
                 max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS) -> None:
        self.name = name
        self.max_answer_chars = max_answer_chars
        """Someone else's code may stream without end: past this the match fails with
        the reason before the answer fills memory or the database (as for models)."""
        self.inner = inner
        self.style = style
        self.spec: dict[str, Any] = dict(spec or {})
        self.reads_prompt = bool(getattr(inner, "reads_prompt", True))
        """An agent answering from ``request.view`` alone may say so: no prompt is then
        rendered or stored for it (as for the fixed strategies)."""

    async def reply(self, request: DecisionRequest, messages: list[Message], sink: Any) -> AgentReply:
        started = time.perf_counter()
        result = self.inner.decide(request)
        if inspect.isasyncgen(result):
            pieces, size = [], 0
            async for piece in result:
                size += len(str(piece))
                self._bound(size)
                sink.text(str(piece))
                pieces.append(str(piece))
            result = "".join(pieces)
        else:
            if inspect.isawaitable(result):
                result = await result
            if not isinstance(result, AgentReply):
                result = str(result)
            text = result.text if isinstance(result, AgentReply) else result
            self._bound(len(text) + len(getattr(result, "reasoning", "") or ""))
            sink.text(text)
        if isinstance(result, AgentReply):
            if not result.latency_ms:
                result.latency_ms = (time.perf_counter() - started) * 1000.0
            return result
        return AgentReply(text=result, input_tokens=0, output_tokens=0, cost_usd=0.0,
                          latency_ms=(time.perf_counter() - started) * 1000.0)

    def _bound(self, size: int) -> None:
        if size > self.max_answer_chars:
            raise AnswerTooLong(
                f"agent {self.name}'s answer passed {self.max_answer_chars:,} characters (its "
                "max_answer_chars); refused")

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def play_answer(request: DecisionRequest, probabilities: Sequence[float]) -> str:
    """A play answer from a probability per *game* action, in the shown labels: a helper
    for agent authors, so they need not learn the answer formats.

    ``mixed`` requests get integer percentages summing to 100; ``choice`` requests the
    most likely action (ties: the lower index)."""
    n = request.view.game.action_counts[request.view.seat]
    probs = [float(p) for p in probabilities] + [0.0] * (n - len(probabilities))
    labels = request.labels or tuple(f"A{i}" for i in range(n))
    mapping = request.label_to_action or tuple(range(len(labels)))
    if request.kind == "choice":
        best = max(range(n), key=lambda a: (probs[a], -a))
        label = next((lab for lab, a in zip(labels, mapping, strict=False) if a == best), f"A{best}")
        return json.dumps({"choice": label})
    pct = percentages(probs)
    return json.dumps({label: pct[a] for label, a in zip(labels, mapping, strict=True)})
