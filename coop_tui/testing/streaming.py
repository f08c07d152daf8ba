"""How the loopback server writes a chat answer: whole (one JSON body) or streamed (SSE
over a chunked body, paced to ``ttft`` and ``latency``), with the faults that spoil an
answer on its way: a dropped or truncated body, a malformed line, an endless keep-alive,
a stall after the answer, a huge line, and llama.cpp's interrupted streams.

Why its own module: the pacing and the byte-exact misbehaviours are what the client's
stream decoding is tested against; they read as one story, apart from routing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from coop_tui.testing.answers import ChatAnswer, split_text
from coop_tui.testing.config import RecordedRequest, ServerConfig
from coop_tui.testing.wire import Closed, connection_header, head, send_json

CUT_FAULTS = ("drop", "truncate", "malformed")
"""Faults that stop a stream after half of its pieces."""


async def send_whole(
    cfg: ServerConfig,
    answer: ChatAnswer,
    fault: str | None,
    record: RecordedRequest,
    writer: asyncio.StreamWriter,
    keep: bool,
) -> bool:
    """The answer of a request that did not ask for a stream, after ``latency``; a
    ``drop`` or ``truncate`` closes instead, ``malformed`` sends a body that is no JSON."""
    await asyncio.sleep(cfg.latency)
    if fault in ("drop", "truncate"):
        raise Closed()
    if fault == "malformed":
        await send_json(writer, 200, None, keep, raw=b"{not json at all")
        return keep
    await send_json(writer, 200, answer.completion(cfg.send_usage), keep)
    record.done = time.monotonic()
    return keep


class SseStream:
    """One streamed answer: reasoning pieces, then content pieces, each a ``data:`` event
    in a chunk of its own, then the finish reason, the usage when asked and ``[DONE]``.

    ``live`` holds the records of streams being written now (``interrupt`` marks them);
    ``on_interrupt`` counts a stream ended early that way."""

    def __init__(
        self,
        cfg: ServerConfig,
        answer: ChatAnswer,
        fault: str | None,
        record: RecordedRequest,
        writer: asyncio.StreamWriter,
        keep: bool,
        *,
        live: set[RecordedRequest],
        on_interrupt: Callable[[], None],
    ) -> None:
        self.cfg, self.answer, self.fault, self.record = cfg, answer, fault, record
        self.writer, self.keep = writer, keep
        self.live, self.on_interrupt = live, on_interrupt

    async def send(self, data: str) -> None:
        """One SSE ``data:`` event, in one chunk."""
        raw = f"data: {data}\n\n".encode()
        self.writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        await self.writer.drain()

    async def send_raw(self, raw: bytes) -> None:
        """``raw`` as one chunk of the body (empty: the body's end)."""
        self.writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        await self.writer.drain()

    async def end_body(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    def abort(self) -> None:
        """Cut the TCP connection, wherever the body is."""
        transport = self.writer.transport
        if transport is not None:
            transport.abort()

    async def run(self) -> bool:
        """Write the whole stream; True when the connection may serve another request."""
        cfg = self.cfg
        pieces: list[tuple[str, str]] = [
            ("reasoning_content", p) for p in split_text(self.answer.reasoning, cfg.chunks)
        ]
        pieces += [("content", p) for p in split_text(self.answer.text, cfg.chunks)]
        self.writer.write(head(200, {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
            "Connection": connection_header(self.keep),
        }))
        if self.fault == "keepalive":
            await self._keep_alive_only()
        if self.fault == "huge_line":
            await self._huge_line()
            return self.keep
        await self._pieces(pieces)
        if not pieces:
            await asyncio.sleep(cfg.latency)
        return await self._finish()

    async def _pieces(self, pieces: list[tuple[str, str]]) -> None:
        """The answer's pieces on schedule: the first after ``ttft`` (default: an even share
        of ``latency``), the last at ``latency``; a cutting fault stops halfway."""
        cfg = self.cfg
        n = max(1, len(pieces))
        first = cfg.latency / n if cfg.ttft is None else min(cfg.ttft, cfg.latency)
        gap = (cfg.latency - first) / (n - 1) if n > 1 else 0.0
        cut = max(1, len(pieces) // 2)
        start = time.monotonic()
        self.live.add(self.record)
        try:
            for i, (key, text) in enumerate(pieces):
                due = start + first + gap * i
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if self.record.extra.get("interrupted"):
                    await self._interrupted()
                if self.fault in CUT_FAULTS and i == cut:
                    break
                delta: dict[str, Any] = {key: text}
                if i == 0:
                    delta = {"role": "assistant", **delta}
                await self.send(json.dumps(self.answer.chunk(delta)))
        finally:
            self.live.discard(self.record)

    async def _interrupted(self) -> None:
        """What llama.cpp's server does when a new request interrupts a stream: [DONE]
        without a finish reason, then the connection dropped without ending the body."""
        self.on_interrupt()
        await self.send("[DONE]")
        if self.writer.transport is not None:
            self.writer.transport.abort()
        raise Closed()

    async def _finish(self) -> bool:
        """After the pieces: the fault's ending, else finish reason, usage and [DONE]."""
        if self.fault == "drop":  # cut in the middle of the chunked body
            self.abort()
            raise Closed()
        if self.fault == "truncate":
            await self.end_body()
            return self.keep
        if self.fault == "malformed":
            await self.send('{"id": "broken", "choices": [{"delta": {"content": "oops"')
            await self.end_body()
            return self.keep
        await self.send(json.dumps(self.answer.chunk({}, "stop")))
        if self.fault == "stall":  # a complete answer, then neither usage nor [DONE]
            await asyncio.sleep(self.cfg.hang)
            raise Closed()
        options = (self.record.body or {}).get("stream_options") or {}
        if self.cfg.send_usage and isinstance(options, dict) and options.get("include_usage"):
            final = self.answer.chunk({})
            final["choices"] = []
            final["usage"] = self.answer.reported_usage()
            await self.send(json.dumps(final))
        await self.send("[DONE]")
        await self.end_body()
        self.record.done = time.monotonic()
        return self.keep

    async def _keep_alive_only(self) -> None:
        """An SSE comment every ``keepalive_every`` seconds and no data, for ``hang``."""
        until = time.monotonic() + self.cfg.hang
        while time.monotonic() < until:
            await self.send_raw(b": keepalive\n\n")
            await asyncio.sleep(self.cfg.keepalive_every)
        raise Closed()

    async def _huge_line(self) -> None:
        """One ``data:`` line of about ``huge_size`` bytes (a chunk whose content is
        ``x`` ...), in 64 KiB pieces; ``record.extra["sent"]`` counts what the client took."""
        head_ = b'data: {"id": "%s", "choices": [{"index": 0, "delta": {"content": "' % (
            self.answer.ident.encode())
        tail = b'"}, "finish_reason": "stop"}]}\n\n'
        self.record.extra["sent"] = 0
        await self.send_raw(head_)
        left = max(0, self.cfg.huge_size - len(head_) - len(tail))
        piece = b"x" * 65536
        while left > 0:
            part = piece[:left]
            await self.send_raw(part)
            self.record.extra["sent"] += len(part)
            left -= len(part)
        await self.send_raw(tail + b"data: [DONE]\n\n")
        await self.send_raw(b"")  # the chunked body's end
