"""Reading a Batch API's results file: outside data, read line by line and bounded.

Why its own module: the results file comes from the provider (or from anything that
answers at its address), so every line is untrusted. One line that is not a JSON object,
lacks a ``custom_id`` or has fields of the wrong type must fail the request it names (or,
when it names none, leave the requests it may have been for without an answer and say
why), and never keep the batch's other answers from being stored. A line is read up to a
bound derived from the agent's ``max_answer_chars``; an answer past that bound is refused
and its refusal stored, never its payload. A ``custom_id`` seen twice keeps its first
answer. The functions here are pure, so a property test can feed them anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

LINE_SLACK = 64 * 1024
"""Bytes a results line may carry beyond its answer: ids, usage, the request's envelope."""
HEAD_BYTES = 4096
"""Bytes of an oversized line searched for its ``custom_id`` (both APIs put it first)."""
EXTRA_LINES = 16
"""Lines a results file may hold beyond two per request (blank lines, a stray error)."""
MAX_BAD_SHOWN = 3
"""Bad lines named in the reason given to the requests left without an answer."""
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([A-Za-z0-9_.:-]{1,200})"')


def line_limit(max_answer_chars: int) -> int:
    """Bytes one results line may take: the answer at six bytes a character (JSON's
    ``\\uXXXX``) twice over (reasoning and text), and :data:`LINE_SLACK`."""
    return 12 * max(int(max_answer_chars), 0) + LINE_SLACK


@dataclass
class Outcome:
    """One request's result from a batch: a ``chat.completion``-like answer, or why not.

    ``retryable`` is False for an error that asking again cannot mend (an answer over the
    agent's limit) or must not (a batch that may still complete): the agent then fails the
    decision instead of sending the request in a new batch."""

    text: str = ""
    reasoning: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    model: str | None = None
    error: str | None = None
    retryable: bool = True

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        data = json.loads(text)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class ResultLines:
    """What a results file held: an outcome per ``custom_id``, and what was wrong in it."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)
    """One reason per line that named no request (not JSON, not an object, no id ...)."""
    duplicates: int = 0
    """Lines whose ``custom_id`` had an answer already (the first one is kept)."""
    strangers: int = 0
    """Lines whose ``custom_id`` is none of the batch's requests (ignored)."""

    def missing_reason(self) -> str | None:
        """Why a request of the batch has no answer, when bad lines may have held it."""
        if not self.bad:
            return None
        shown = "; ".join(self.bad[:MAX_BAD_SHOWN])
        more = f" and {len(self.bad) - MAX_BAD_SHOWN} more" if len(self.bad) > MAX_BAD_SHOWN else ""
        return (f"the batch's results file had {len(self.bad)} unreadable line(s) "
                f"({shown}{more}); this request's answer may have been one of them")

    def warnings(self) -> list[str]:
        """What the live pane and the log say beside the answers."""
        out = []
        if self.duplicates:
            out.append(f"{self.duplicates} result line(s) repeated a custom_id already answered "
                       "in this batch; the first answer of each was kept")
        if self.strangers:
            out.append(f"{self.strangers} result line(s) named a custom_id this batch never sent; "
                       "ignored")
        if self.bad:
            out.append(self.missing_reason() or "")
        return out


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _message_of(error: Any) -> str:
    """A provider's error message, whatever shape the error has."""
    if isinstance(error, dict):
        inner = error.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(error.get("message"), str):
            return error["message"]
        return json.dumps(error)[:500]
    return str(error)[:500]


def outcome_of_completion(body: Any) -> Outcome:
    """An OpenAI ``chat.completion`` body as an :class:`Outcome` (a wrong shape raises
    ValueError, which fails that request alone)."""
    if not isinstance(body, dict):
        raise ValueError("its response body is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("its response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("its first choice has no message")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    finish = choices[0].get("finish_reason")
    model = body.get("model")
    return Outcome(
        text=_text(message.get("content")),
        reasoning=_text(message.get("reasoning_content")) or _text(message.get("reasoning")),
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        finish_reason=finish if isinstance(finish, str) and finish else "stop",
        model=model if isinstance(model, str) else None,
    )


def openai_outcome(line: dict[str, Any]) -> Outcome:
    """One line of an OpenAI batch's output or error file as an :class:`Outcome`."""
    response = line.get("response")
    response = response if isinstance(response, dict) else {}
    error = line.get("error")
    status = response.get("status_code")
    if error or status != 200:
        body = response.get("body")
        said = _message_of(error) if error else _message_of(body) if body else "no answer"
        shown = f" (HTTP {status})" if isinstance(status, int) and not isinstance(status, bool) else ""
        return Outcome(error=f"the request failed in its batch{shown}: {said}")
    return outcome_of_completion(response.get("body"))


def anthropic_outcome(line: dict[str, Any]) -> Outcome:
    """One line of an Anthropic message batch's results as an :class:`Outcome`."""
    result = line.get("result")
    if not isinstance(result, dict):
        raise ValueError("it has no result object")
    kind = result.get("type")
    if kind == "succeeded":
        message = result.get("message")
        if not isinstance(message, dict):
            raise ValueError("its succeeded result has no message")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        stop, model = message.get("stop_reason"), message.get("model")
        return Outcome(
            text="".join(_text(b.get("text")) for b in blocks if isinstance(b, dict)),
            input_tokens=_count(usage.get("input_tokens")),
            output_tokens=_count(usage.get("output_tokens")),
            finish_reason=stop if isinstance(stop, str) and stop else "stop",
            model=model if isinstance(model, str) else None)
    if kind == "errored":
        return Outcome(error=f"the request failed in its batch: {_message_of(result.get('error'))}")
    shown = kind if isinstance(kind, str) else "without a result"
    return Outcome(error=f"the request was {shown[:80]} in its batch")


def oversized(what: str, max_chars: int) -> Outcome:
    """The refusal stored for an answer past the agent's limit (never the answer)."""
    return Outcome(error=f"the answer in the batch's results {what} (the agent's "
                         f"max_answer_chars = {max_chars:,}); refused, and only this refusal "
                         "stored", retryable=False)


async def read_result_stream(
    chunks: AsyncIterator[bytes], parse: Callable[[dict[str, Any]], Outcome], *,
    max_chars: int, expected: Collection[str], into: ResultLines | None = None,
) -> ResultLines:
    """A results file as it downloads, line by line (each bounded), never more lines
    than the batch could answer (twice its requests, and some): a file that goes on is
    cut there, and the cut named among the bad lines."""
    out = into if into is not None else ResultLines()
    most = 2 * len(expected) + EXTRA_LINES
    number = 0
    async for line in bounded_lines(chunks, line_limit(max_chars)):
        number += 1
        if number > most:
            out.bad.append(f"the file goes on past {most:,} lines; the rest was not read")
            break
        read_result_lines([line], parse, max_chars=max_chars, expected=expected, into=out,
                          first=number)
    return out


def read_result_lines(
    lines: Iterable[bytes], parse: Callable[[dict[str, Any]], Outcome], *,
    max_chars: int, expected: Collection[str] | None = None, into: ResultLines | None = None,
    first: int = 1,
) -> ResultLines:
    """Every line of a results file (already cut at :func:`line_limit`: a line that was
    longer arrives as its first bytes plus one byte more) as outcomes and reasons.

    Never raises on what a line holds: a line that names its ``custom_id`` and is wrong
    fails that request with the reason; one that names none is counted in ``bad``."""
    out = into if into is not None else ResultLines()
    limit = line_limit(max_chars)
    for number, raw in enumerate(lines, start=first):
        if not raw.strip():
            continue
        if len(raw) > limit:
            found = _CUSTOM_ID.search(raw[:HEAD_BYTES])
            if found is None:
                out.bad.append(f"line {number} is over {limit:,} bytes and names no custom_id")
                continue
            _keep(out, found.group(1).decode(), oversized(f"passed {limit:,} bytes", max_chars), expected)
            continue
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            out.bad.append(f"line {number} is not JSON")
            continue
        if not isinstance(line, dict):
            out.bad.append(f"line {number} is not a JSON object")
            continue
        cid = line.get("custom_id")
        if not isinstance(cid, str) or not cid:
            out.bad.append(f"line {number} has no custom_id")
            continue
        try:
            outcome = parse(line)
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
            outcome = Outcome(error=f"the batch's result line for this request is malformed: {exc}")
        chars = len(outcome.text) + len(outcome.reasoning)
        if chars > max_chars:
            outcome = oversized(f"had {chars:,} characters", max_chars)
        _keep(out, cid, outcome, expected)
    return out


def _keep(out: ResultLines, cid: str, outcome: Outcome, expected: Collection[str] | None) -> None:
    if expected is not None and cid not in expected:
        out.strangers += 1
    elif cid in out.outcomes:
        out.duplicates += 1
    else:
        out.outcomes[cid] = outcome


async def bounded_lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    """The lines of a byte stream, each cut at ``limit + 1`` bytes (the rest of a longer
    line is skipped as it arrives, never held): a line longer than ``limit`` is visible
    as such without its payload in memory."""
    held = bytearray()
    skipping = False
    async for chunk in chunks:
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                held += piece[: limit + 1 - len(held)]
                if len(held) > limit:
                    skipping = True
                    yield bytes(held)
            if end < 0:
                break
            if not skipping:
                yield bytes(held)
            held.clear()
            skipping = False
            start = end + 1
    if held and not skipping:
        yield bytes(held)
