"""Server-sent events of a streamed chat completion, decoded from raw bytes.

Why bytes and not text lines: a sweep decodes every chunk of every answer on one event
loop, so the client's CPU per chunk bounds how many streams one process can follow. The
body arrives in pieces cut anywhere (the HTTP client hands over what the socket gave);
this splits them into events without decoding each line to ``str``, and hands on each
event's ``data`` as the UTF-8 bytes JSON reads. A piece that is exactly one one-line
``data:`` event (what OpenAI-compatible servers send per chunk) takes a short path, and
so does every one-line event of a piece that holds several.

What an OpenAI-compatible stream needs of the SSE format, and no more: lines end with
``\\n`` or ``\\r\\n``; a blank line ends an event; ``data:`` lines of one event are joined
with ``\\n``; ``event:``, ``id:``, ``retry:`` and ``:`` comment lines carry nothing a chat
stream uses and are skipped. The value of a ``data:`` line is stripped of blanks at both
ends (JSON and ``[DONE]`` do not care, and a CRLF's ``\\r`` goes with them).

JSON is read by jiter (the openai SDK's own parser, in Rust: about half the standard
library's time per chunk); whatever it refuses is handed to ``json.loads``, so the
result, or the error, is the standard library's.
"""

from __future__ import annotations

import json
from typing import Any

from jiter import from_json as _from_json

DONE = b"[DONE]"
"""The payload that ends an OpenAI-compatible stream."""


class EventTooLong(ValueError):
    """One event (its lines before the blank line that ends it) passed the decoder's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"one server-sent event passed {limit:,} bytes without ending")
        self.limit = limit


class SSEDecoder:
    """Feed the body's pieces in order; get back the ``data`` payloads they complete.

    Linear in the bytes fed: an event that arrives in many pieces is appended in place to
    one buffer and searched for its end only where new bytes landed (re-joining the buffer
    per piece made a 20 MB line cost a minute). ``limit`` bounds the bytes of one
    unfinished event: past it :class:`EventTooLong` is raised, before any more is kept.
    """

    __slots__ = ("_buffer", "_cr", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self._buffer = bytearray()
        """What was fed after the last blank line: the event being read."""
        self._cr = False
        """The last piece ended in ``\\r``, maybe the first half of a CRLF."""
        self.limit = limit

    def feed(self, piece: bytes) -> list[bytes]:
        """The payloads of the events this piece completes (often none or one)."""
        if not self._buffer and not self._cr:
            if piece.endswith(b"}\n\n") and piece.startswith(b"data: {") and (
                piece.count(b"\n") == 2
            ):
                return [piece[6:-2]]  # one whole one-line JSON event: the usual piece
            if piece.startswith(b"data:") and piece.endswith(b"\n\n") and piece.count(b"\n") == 2:
                return [piece[5:-2].strip()]  # another one-line event ([DONE], CRLF, ...)
        if self._cr:
            piece, self._cr = b"\r" + piece, False
        if b"\r" in piece:
            if piece.endswith(b"\r"):  # maybe the first half of a CRLF: keep it for later
                piece, self._cr = piece[:-1], True
            piece = piece.replace(b"\r\n", b"\n")  # CRLF lines: the same events
        buffer = self._buffer
        if not buffer:  # the piece starts an event: split it as it is (the usual case)
            blocks = piece.split(b"\n\n")
            rest = blocks.pop()  # no blank line after it yet
            if rest:
                if self.limit is not None and len(rest) > self.limit:
                    self._refuse()
                buffer += rest
        elif buffer[-1] == 10 and piece[:1] == b"\n":  # a blank line across the cut (rare)
            buffer += piece
            end = buffer.rfind(b"\n\n", len(buffer) - len(piece) - 1)
            blocks = bytes(buffer[:end]).split(b"\n\n")
            del buffer[: end + 2]
            if self.limit is not None and len(buffer) > self.limit:
                self._refuse()
        elif b"\n\n" not in piece:  # the event goes on: the piece joins it, in place
            buffer += piece
            if self.limit is not None and len(buffer) > self.limit:
                self._refuse()
            return []
        else:  # the event ends here; each byte is copied in once and out once: linear
            blocks = (bytes(buffer) + piece).split(b"\n\n")
            rest = blocks.pop()
            buffer.clear()
            if rest:
                buffer += rest
                if self.limit is not None and len(rest) > self.limit:
                    self._refuse()
        events: list[bytes] = []
        for block in blocks:
            if block.startswith(b"data:") and b"\n" not in block:
                events.append(block[5:].strip())
            elif block:
                data = _data_lines(block)
                if data is not None:
                    events.append(data)
        return events

    def _refuse(self) -> None:
        """The unfinished event passed the limit: forget it and say so."""
        self._buffer = bytearray()
        raise EventTooLong(self.limit or 0)

    def close(self) -> list[bytes]:
        """At the end of the body: the event that no blank line ended, if any."""
        self._cr = False  # a lone \r at the very end ends nothing
        if not self._buffer:
            return []
        events = self.feed(b"\n\n")  # the end of the body ends the last event
        self._buffer = bytearray()
        return events


def _data_lines(block: bytes) -> bytes | None:
    """The ``data`` of an event's lines (several ``data:`` lines joined by ``\\n``; other
    fields and comments skipped), None when it has none. A blank line inside (three line
    ends in a row) only ends an empty event."""
    data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
    if not data:
        return None
    return data[0] if len(data) == 1 else b"\n".join(data)


def loads(payload: bytes) -> Any:
    """``json.loads(payload)``, by jiter where it can.

    jiter and the standard library agree on every document both accept; jiter refuses a
    few that ``json.loads`` takes (a lone surrogate escape, a byte-order mark), and its
    errors are worded differently, so anything it refuses goes to ``json.loads``.
    """
    try:
        return _from_json(payload)
    except ValueError:
        return json.loads(payload)
