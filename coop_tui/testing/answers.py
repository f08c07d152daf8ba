"""What the loopback server answers a chat request: the text, the reasoning, the counted
usage and the ``chat.completion`` objects built from them.

Why its own module: a streamed answer, a whole answer and a batch's output line carry the
same text and counts; composing them apart from how they are written keeps each writer
about bytes and timing only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from coop_tui.testing.config import ServerConfig, TextSource


def count_tokens(text: str) -> int:
    """A stable stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


def split_text(text: str, parts: int) -> list[str]:
    """Cut ``text`` into ``parts`` pieces of nearly equal length (none empty)."""
    parts = max(1, min(parts, len(text)))
    if not text:
        return []
    size, rest = divmod(len(text), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < rest else 0)
        out.append(text[start:end])
        start = end
    return out


def text_of(source: TextSource, body: dict[str, Any]) -> str:
    """A configured text for one request: fixed, scripted from the body, or empty."""
    if source is None:
        return ""
    if callable(source):
        return str(source(body))
    return source


def encoded(text: str, how: str) -> str:
    """``text`` as a careless server might echo it: "plain", "percent" (every byte as
    ``%XX``, the way some clients quote a query) or "plus" (``quote_plus``)."""
    if how == "percent":
        return "".join(f"%{b:02X}" for b in text.encode())
    if how == "plus":
        return quote_plus(text, safe="")
    return text


def last_user_message(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat request (for scripted answers)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_tokens(messages: Any) -> int:
    """Counted prompt tokens: each message's words plus 3 (a chat template's overhead)."""
    return sum(
        count_tokens(m.get("content") if isinstance(m.get("content"), str) else "") + 3
        for m in messages
        if isinstance(m, dict)
    )


def message(answer: str, reasoning: str) -> dict[str, Any]:
    """The assistant message of a whole answer (reasoning beside it when there is some)."""
    out: dict[str, Any] = {"role": "assistant", "content": answer}
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


@dataclass
class ChatAnswer:
    """One chat request's answer, composed once and then written whole or streamed."""

    text: str
    reasoning: str
    usage: dict[str, Any]
    reasoning_tokens: int
    model: str
    ident: str
    created: int

    @classmethod
    def compose(
        cls, cfg: ServerConfig, headers: dict[str, str], body: dict[str, Any], index: int
    ) -> ChatAnswer:
        """The answer to request number ``index``: configured texts, the offered key
        echoed in the middle when ``echo_key_in_answer``, usage counted (and overridden)."""
        answer = text_of(cfg.answer, body)
        if cfg.echo_key_in_answer:
            offered = headers.get("authorization", "").removeprefix("Bearer ").strip()
            echoed = encoded(offered, cfg.echo_key_in_answer)
            answer = f"{answer} {echoed} {answer}"  # the key straddles the middle
        reasoning = text_of(cfg.reasoning, body)
        reasoning_tokens = count_tokens(reasoning)
        usage = {
            "prompt_tokens": prompt_tokens(body["messages"]),
            "completion_tokens": count_tokens(answer) + reasoning_tokens,
            "total_tokens": 0,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage.update(cfg.usage_override or {})
        return cls(
            text=answer, reasoning=reasoning, usage=usage, reasoning_tokens=reasoning_tokens,
            model=str(body.get("model") or cfg.models[0]), ident=f"chatcmpl-loop{index}",
            created=int(time.time()),
        )

    def reported_usage(self) -> dict[str, Any]:
        """The usage object sent to the client, with the reasoning tokens' detail."""
        return {**self.usage, "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens}}

    def completion(self, send_usage: bool) -> dict[str, Any]:
        """The whole ``chat.completion`` of a request that did not ask for a stream."""
        payload = {
            "id": self.ident,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message(self.text, self.reasoning),
                         "finish_reason": "stop"}],
        }
        if send_usage:
            payload["usage"] = self.reported_usage()
        return payload

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        """One ``chat.completion.chunk`` of the stream."""
        return {
            "id": self.ident,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }


def batch_completion(cfg: ServerConfig, body: dict[str, Any], index: int) -> dict[str, Any]:
    """The ``chat.completion`` the server gives ``body`` (what a non-streamed request
    gets), for a batch's output file."""
    answer, reasoning = text_of(cfg.answer, body), text_of(cfg.reasoning, body)
    usage = {
        "prompt_tokens": prompt_tokens(body.get("messages") or []),
        "completion_tokens": count_tokens(answer) + count_tokens(reasoning),
    }
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": f"chatcmpl-batch{index}", "object": "chat.completion",
            "created": int(time.time()), "model": str(body.get("model") or cfg.models[0]),
            "choices": [{"index": 0, "message": message(answer, reasoning),
                         "finish_reason": "stop"}],
            "usage": usage}
