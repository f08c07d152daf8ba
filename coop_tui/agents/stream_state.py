"""What one attempt at an answer has streamed so far, fed chunk by chunk by either transport.

:class:`StreamState` gathers text, reasoning, token counts, model and finish reason, and
refuses an answer growing past the agent's ``max_answer_chars``. :func:`sse_event` feeds it
one server-sent event's payload (decoded by :mod:`coop_tui.agents.sse`), :func:`whole_answer`
a server's non-streamed JSON answer; litellm's chunk objects go to :meth:`StreamState.consume`.
A failed attempt's state is dropped whole, so a retry never mixes two answers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from coop_tui.agents.failures import Refused, StreamBroken
from coop_tui.agents.sse import DONE
from coop_tui.agents.sse import loads as sse_loads
from coop_tui.decisions import DEFAULT_MAX_ANSWER_CHARS

if TYPE_CHECKING:
    from coop_tui.agents.batch_results import Outcome

FINISH_GRACE = 2.0
"""Seconds (at most; a quarter of the timeout when that is shorter) a stream may take after
its ``finish_reason`` to send usage and ``[DONE]`` before the answer is taken without them."""
MAX_USAGE_TOKENS = 10**9
"""The largest token count a server may report for one request; more is nonsense (None)."""


def event_limit(max_answer_chars: int) -> int:
    """Bytes one server-sent event (or a whole JSON answer) may have: room for an answer of
    ``max_answer_chars`` characters escaped as JSON (``\\uXXXX``: six bytes a character), and
    64 KiB for the rest of the chunk."""
    return 6 * max_answer_chars + 65536


class StreamState:
    """What one attempt has streamed so far (discarded when the attempt fails)."""

    __slots__ = ("text", "reasoning", "input_tokens", "output_tokens", "finish_reason", "model",
                 "emitted", "done", "size", "limit")

    def __init__(self, limit: int = DEFAULT_MAX_ANSWER_CHARS) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.emitted = False
        self.done = False  # [DONE] arrived: the answer is complete whatever the connection does
        self.size = 0
        """Characters of text and reasoning so far."""
        self.limit = limit
        """The agent's ``max_answer_chars``: an answer growing past it is refused."""

    @classmethod
    def from_batch(cls, outcome: Outcome, limit: int) -> StreamState:
        """A batch answer as the state a stream would have left (limits checked alike)."""
        state = cls(limit)
        for piece in (outcome.reasoning, outcome.text):
            state._grow(piece)
        state.text = [outcome.text] if outcome.text else []
        state.reasoning = [outcome.reasoning] if outcome.reasoning else []
        state.input_tokens, state.output_tokens = outcome.input_tokens, outcome.output_tokens
        state.finish_reason, state.model = outcome.finish_reason, outcome.model
        return state

    @property
    def complete(self) -> bool:
        """The answer is whole: ``[DONE]`` or a ``finish_reason`` arrived (a stream that
        then stalls or drops has lost at most its usage numbers)."""
        return self.done or self.finish_reason is not None

    def _grow(self, piece: str) -> None:
        """Count ``piece`` against the limit."""
        self.size += len(piece)
        if self.size > self.limit:
            self._refuse()

    def _refuse(self) -> None:
        """The answer grew past the limit: the attempt is refused (what came is dropped
        with it, so nothing huge is stored)."""
        raise Refused(
            f"the answer passed {self.limit:,} characters (the agent's max_answer_chars); "
            "refused"
        )

    def consume(self, chunk: Any, sink: Any) -> None:
        if type(chunk) is dict:
            self.consume_dict(chunk, sink)
            return
        usage = field(chunk, "usage")
        if usage is not None:
            prompt = field(usage, "prompt_tokens")
            completion = field(usage, "completion_tokens")
            if prompt is not None:
                self.input_tokens = _token_count(prompt)
            if completion is not None:
                self.output_tokens = _token_count(completion)
        model = field(chunk, "model")
        if isinstance(model, str) and model:
            self.model = model
        for choice in field(chunk, "choices") or []:
            delta = field(choice, "delta")
            reasoning = field(delta, "reasoning_content") or field(delta, "reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._grow(reasoning)
                self.reasoning.append(reasoning)
                self.emitted = True
                sink.reasoning(reasoning)
            content = field(delta, "content")
            if isinstance(content, str) and content:
                self._grow(content)
                self.text.append(content)
                self.emitted = True
                sink.text(content)
            finish = field(choice, "finish_reason")
            if finish:
                self.finish_reason = str(finish)

    def consume_dict(self, chunk: dict[str, Any], sink: Any) -> None:
        """:meth:`consume` for a decoded SSE chunk (plain dicts: the common case, taken
        without the attribute probing that SDK objects need; same rules, same result)."""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            prompt = usage.get("prompt_tokens")
            completion = usage.get("completion_tokens")
            if prompt is not None:
                self.input_tokens = _token_count(prompt)
            if completion is not None:
                self.output_tokens = _token_count(completion)
        model = chunk.get("model")
        if model and isinstance(model, str):
            self.model = model
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue  # nothing to read in it (the general path finds nothing either)
            delta = choice.get("delta")
            if delta and isinstance(delta, dict):
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning and isinstance(reasoning, str):
                    self.size += len(reasoning)
                    if self.size > self.limit:
                        self._refuse()
                    self.reasoning.append(reasoning)
                    self.emitted = True
                    sink.reasoning(reasoning)
                content = delta.get("content")
                if content and isinstance(content, str):
                    self.size += len(content)  # counted here: a call per chunk costs
                    if self.size > self.limit:
                        self._refuse()
                    self.text.append(content)
                    self.emitted = True
                    sink.text(content)
            finish = choice.get("finish_reason")
            if finish:
                self.finish_reason = str(finish)


def sse_event(payload: bytes, sink: Any, state: StreamState) -> bool:
    """Handle one SSE ``data`` payload (UTF-8 bytes, as JSON reads them); True at
    ``[DONE]``. Bad JSON raises (retryable)."""
    if payload == DONE:
        state.done = True
        return True
    chunk = sse_loads(payload)
    if type(chunk) is not dict:
        raise StreamBroken(f"unexpected stream chunk: {payload[:80]!r}")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise StreamBroken(f"the provider reported an error mid-stream: {message}")
    state.consume_dict(chunk, sink)
    return False


def whole_answer(text: str, sink: Any, state: StreamState) -> None:
    """A server that ignored ``stream`` and sent the whole completion as one JSON body."""
    payload = json.loads(text)
    if not isinstance(payload, dict):
        raise StreamBroken(f"unexpected answer: {text[:80]!r}")
    choices = []
    for choice in payload.get("choices") or []:
        if isinstance(choice, dict):
            message = choice.get("message") or {}
            choices.append({"delta": message, "finish_reason": choice.get("finish_reason")})
    state.consume({**payload, "choices": choices}, sink)
    state.done = True


def field(obj: Any, name: str) -> Any:
    """Attribute or key access for SDK objects, litellm objects and plain dicts alike."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, dict):
            value = extra.get(name)
    return value


def _token_count(value: Any) -> int | None:
    """A reported token count as a sane integer, else None (unknown): servers have sent
    negative counts, fractions and 10^30, which would corrupt totals and costs and cannot
    be stored in an SQLite integer. Whole floats (``12.0``) count."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_USAGE_TOKENS:
        return value
    return None
