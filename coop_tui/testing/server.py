"""An OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks.

Why it exists: the LLM agent must be exercised through the real ``openai`` and
``litellm`` clients over real HTTP, including the ugly parts of production providers
(rate limits with ``Retry-After``, 5xx, hangs, streams cut in the middle, garbage
chunks). Mocking below the HTTP layer would test our assumptions instead of the clients.

The server is a small asyncio HTTP/1.1 implementation on the standard library (keep-alive,
chunked transfer encoding for SSE), run on its own event loop in a background thread, so a
test can start it from synchronous or asynchronous code and many streams cost no threads.

Faults are chosen deterministically: first from ``fault_script`` (one entry per chat
request, in arrival order), then with probability ``fault_rate`` from a generator seeded by
``seed`` and the request counter, so a run with the same arrival order sees the same faults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import quote_plus

from coop_tui.testing.batches import BatchBook, multipart_fields

TextSource = str | Callable[[dict[str, Any]], str] | None

FAULT_KINDS = ("429", "500", "timeout", "drop", "truncate", "malformed", "keepalive",
               "stall", "huge_line", "redirect", "html")
"""Known fault kinds. Any other three-digit string is answered with that HTTP status.

429: rate limit with ``Retry-After``; 500: server error; timeout: no byte for ``hang``
seconds; drop: some chunks then the socket is closed mid-body; truncate: some chunks then
a clean end of body without ``finish_reason`` or ``[DONE]``; malformed: a non-JSON data line.
Hostile servers: keepalive: an SSE ``: keepalive`` comment every ``keepalive_every`` seconds
and no data, for ``hang`` seconds; stall: the whole answer and its ``finish_reason``, then
silence for ``hang`` seconds (no usage, no ``[DONE]``); huge_line: one ``data:`` line of
``huge_size`` bytes, written in 64 KiB pieces; redirect: ``307`` to ``redirect_to``; html:
a ``200`` with an HTML page.
"""

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass
class ServerConfig:
    """How the server answers; every field can be changed between tests with ``configure``."""

    latency: float = 0.05
    """Seconds from request to the last content chunk (spread over the chunks)."""
    ttft: float | None = None
    """Seconds before the first chunk; default: an even share of ``latency``."""
    chunks: int = 5
    """Number of content chunks (fewer when the answer has fewer characters)."""
    answer: TextSource = "Hello from the loopback server."
    """The answer text, or ``callable(request_body) -> str`` for scripted answers."""
    reasoning: TextSource = None
    """Optional reasoning text streamed as ``delta.reasoning_content`` before the answer."""
    fault_rate: float = 0.0
    fault_kinds: Sequence[str] = ("429", "500", "timeout", "drop", "malformed")
    fault_script: Sequence[str | None] = ()
    """Faults for the first chat requests, in arrival order (None or "" = answer normally)."""
    seed: int = 0
    retry_after: float = 0.2
    """Seconds sent in the ``Retry-After`` header of 429 answers."""
    hang: float = 30.0
    """How long a ``timeout`` fault keeps silent before closing the connection."""
    api_key: str | None = None
    """When set, requests without ``Authorization: Bearer <api_key>`` get 401."""
    echo_key_in_errors: bool = True
    """Quote the offered key in 401 messages, like careless providers do (tests redaction)."""
    models: Sequence[str] = ("loopback",)
    send_usage: bool = True
    """False: ignore ``stream_options.include_usage``, like servers that never report usage."""
    keepalive_every: float = 0.05
    """Seconds between the comments of a ``keepalive`` fault."""
    huge_size: int = 20 * 1024 * 1024
    """Bytes of the one line a ``huge_line`` fault sends."""
    redirect_to: str = "http://127.0.0.1:9/elsewhere/v1/chat/completions?token=sk-redirect-secret"
    """Where a ``redirect`` fault sends the client."""
    usage_override: dict[str, Any] | None = None
    """Values that replace the counted usage numbers (huge, negative, fractional ...)."""
    echo_key_in_answer: str | None = None
    """Put the offered key in the middle of the answer, like a model that repeats its
    context: "plain", "percent" (every byte as ``%XX``) or "plus" (form encoding)."""
    interrupt: bool = False
    """Like llama-cpp-python's server by default (``interrupt_requests``): a new chat request
    ends every stream still running with ``[DONE]`` (no finish reason), then drops its
    connection."""
    batch_polls: int = 1
    """Retrievals a batch answers "in progress" before it ends (see :mod:`.batches`)."""
    batch_hold: bool = False
    """While set, every batch stays in progress (a test ends it by clearing this)."""
    hold: bool = False
    """While set, every chat request waits before answering until ``release()``: a test
    holds a run live for exactly as long as it needs (no latency to guess), and the requests
    stay recorded (``configure`` would forget them)."""
    batch_script: Sequence[str | None] = ()
    """Outcomes of the batches in creation order: "completed" (or None), "expired", "failed"."""
    batch_fail: Callable[[dict[str, Any]], str | None] | None = None
    """``callable(chat body) -> error message or None``: that request fails in its batch."""
    batch_output_edit: Callable[[list[bytes]], list[bytes] | None] | None = None
    """``callable(result lines) -> lines served instead``, or None for a results file that
    cannot be downloaded (see :mod:`.batches`): bad lines, repeats, oversized answers."""
    batch_lost: bool = False
    """While set, retrieving a batch answers 404: its state cannot be learnt (the batch goes
    on; clearing this lets it be polled again)."""
    batch_status: str | None = None
    """The status a batch in progress reports instead of ``in_progress`` (one coop-tui
    does not know)."""


@dataclass(eq=False)
class RecordedRequest:
    """One request as the server saw it; tests read these from ``server.requests``."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    time: float
    """``time.monotonic()`` when the request was fully read."""
    fault: str | None = None
    usage: dict[str, int] | None = None
    done: float | None = None
    """``time.monotonic()`` when the answer was finished (None for faults that cut it)."""
    peer: str = ""
    """The client's ``host:port``: equal for requests that reused one kept-alive connection."""
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        """Dict-style access (``req["headers"]``) so tests may treat records as dicts."""
        return getattr(self, key)


def _count_tokens(text: str) -> int:
    """A stable stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


def _split(text: str, parts: int) -> list[str]:
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


class _Closed(Exception):
    """The client went away, or a fault asks to cut the connection."""


class LoopbackServer:
    """The server object: ``start()``/``stop()`` or ``with LoopbackServer(...) as srv``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **config: Any) -> None:
        self.host = host
        self.port = port
        self.config = ServerConfig(**config)
        self.requests: list[RecordedRequest] = []
        self._counter = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping: asyncio.Event | None = None
        self._released: asyncio.Event | None = None
        """Set by :meth:`release`: held chat requests (``hold``) go on."""
        self._streaming: set[RecordedRequest] = set()
        """Streams being answered now (``interrupt`` ends them when a request arrives)."""
        self.interrupted = 0
        """Streams ended early by ``interrupt``."""
        self.batch_book = BatchBook()
        """Uploaded files and batches of the Batch APIs; ``batch_book.submitted`` counts
        each ``custom_id`` sent (kept across ``configure``)."""

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> LoopbackServer:
        if self._thread is not None:
            return self
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="loopback-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise RuntimeError(f"loopback server failed to start: {self._error}")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._stopping is not None:
            loop.call_soon_threadsafe(self._stopping.set)
        thread.join(10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LoopbackServer(url={self.url!r}, requests={len(self.requests)})"

    # -- configuration -------------------------------------------------------------------

    def configure(self, **changes: Any) -> LoopbackServer:
        """Change answer/fault settings and start counting requests afresh."""
        known = {f.name for f in fields(ServerConfig)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown server settings: {sorted(unknown)}")
        self.config = replace(self.config, **changes)
        loop, released = self._loop, self._released
        if self.config.hold and loop is not None and released is not None:
            loop.call_soon_threadsafe(released.clear)  # held again until the next release()
        self.reset()
        return self

    def reset(self) -> None:
        """Forget recorded requests; the fault script applies again from the next request."""
        with self._lock:
            self.requests = []
            self._counter = 0

    def release(self) -> None:
        """End ``hold``: every waiting chat request answers, and later ones at once (from
        any thread)."""
        self.config = replace(self.config, hold=False)
        loop, released = self._loop, self._released
        if loop is not None and released is not None:
            loop.call_soon_threadsafe(released.set)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next_fault(self) -> tuple[int, str | None]:
        cfg = self.config
        with self._lock:
            index = self._counter
            self._counter += 1
        if index < len(cfg.fault_script):
            return index, (cfg.fault_script[index] or None)
        if cfg.fault_rate > 0 and cfg.fault_kinds:
            rng = random.Random(f"{cfg.seed}:{index}")
            if rng.random() < cfg.fault_rate:
                return index, cfg.fault_kinds[rng.randrange(len(cfg.fault_kinds))]
        return index, None

    # -- event loop ----------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._released = asyncio.Event()
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, backlog=1024, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopping.wait()
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    async def serve_forever(self) -> None:
        """Run on the caller's event loop (the CLI); returns when cancelled."""
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, backlog=1024, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        async with self._server:
            await self._server.serve_forever()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                keep = await self._one_request(reader, writer)
                if not keep:
                    break
        except (_Closed, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    # -- HTTP ----------------------------------------------------------------------------

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = (lines[0].split(" ", 2) + ["", ""])[:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        raw = b""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = await self._read_chunked(reader)
        elif "content-length" in headers:
            raw = await reader.readexactly(int(headers["content-length"]))
        keep = version.upper() == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        path = target.split("?", 1)[0]
        body: dict[str, Any] | None = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else {"_": parsed}
            except ValueError:
                body = None
        peer = writer.get_extra_info("peername") or ("?", 0)
        record = RecordedRequest(
            index=-1,
            method=method,
            path=path,
            headers=headers,
            body=body,
            time=time.monotonic(),
            peer=f"{peer[0]}:{peer[1]}",
        )
        self.requests.append(record)

        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            now = int(time.time())
            data = [
                {"id": m, "object": "model", "created": now, "owned_by": "coop-tui"}
                for m in self.config.models
            ]
            await self._send_json(writer, 200, {"object": "list", "data": data}, keep)
            record.done = time.monotonic()
            return keep
        if path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches")):
            await self._batch_route(record, raw, writer, keep)
            record.done = time.monotonic()
            return keep
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            await self._send_error(writer, 404, f"no route for {method} {path}", "not_found", keep)
            return keep
        if method != "POST":
            await self._send_error(writer, 405, "use POST", "invalid_request_error", keep)
            return keep
        if body is None or not isinstance(body.get("messages"), list):
            await self._send_error(
                writer,
                400,
                "the body must be JSON with a 'messages' list",
                "invalid_request_error",
                keep,
            )
            return keep
        return await self._chat(record, body, writer, keep)

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        out = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return bytes(out)
            out += await reader.readexactly(size)
            await reader.readexactly(2)

    @staticmethod
    def _head(status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        keep: bool,
        extra: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "Content-Length": str(len(data)),
            "Connection": "keep-alive" if keep else "close",
            **(extra or {}),
        }
        writer.write(self._head(status, headers) + data)
        await writer.drain()

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        message: str,
        kind: str,
        keep: bool,
        extra: dict[str, str] | None = None,
    ) -> None:
        payload = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
        await self._send_json(writer, status, payload, keep, extra)

    # -- batch APIs ----------------------------------------------------------------------

    def _authorised(self, headers: dict[str, str]) -> bool:
        key = self.config.api_key
        if key is None:
            return True
        return headers.get("authorization") == f"Bearer {key}" or headers.get("x-api-key") == key

    async def _batch_route(
        self, record: RecordedRequest, raw: bytes, writer: asyncio.StreamWriter, keep: bool
    ) -> None:
        """OpenAI's files and batches, Anthropic's message batches (see :mod:`.batches`)."""
        cfg, book, method = self.config, self.batch_book, record.method
        parts = [p for p in record.path.split("/") if p][1:]  # without the "v1"
        if not self._authorised(record.headers):
            await self._send_error(writer, 401, "Incorrect API key provided",
                                   "authentication_error", keep)
            return
        answer = self._batch_answer
        found: Any = None
        if parts == ["files"] and method == "POST":
            fields_ = multipart_fields(raw, record.headers.get("content-type", ""))
            found = book.upload(fields_.get("file", b""),
                                fields_.get("purpose", b"").decode() or "batch")
        elif len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            data = book.files.get(parts[1])
            if data is not None:
                await self._send_json(writer, 200, None, keep, raw=data)
                return
        elif parts == ["batches"] and method == "POST":
            found = book.create_openai(record.body or {}, cfg.batch_script)
            if isinstance(found, str):
                await self._send_error(writer, 400, found, "invalid_request_error", keep)
                return
        elif parts == ["batches"]:
            found = book.listing()
        elif parts == ["messages", "batches"] and method == "POST":
            found = book.create_anthropic(record.body or {}, cfg.batch_script,
                                          f"http://{self.host}:{self.port}")
        elif parts[-1:] == ["results"] and len(parts) == 4:
            data = book.files.get(f"results-{parts[2]}")
            if data is not None:
                await self._send_json(writer, 200, None, keep, raw=data)
                return
        elif len(parts) in (2, 3) and parts[-1].startswith(("batch_", "msgbatch_")):
            found = None if cfg.batch_lost else book.retrieve(parts[-1], polls=cfg.batch_polls, hold=cfg.batch_hold,
                                  answer=answer, fail=cfg.batch_fail,
                                  edit=cfg.batch_output_edit, status=cfg.batch_status)
        if found is None:
            await self._send_error(writer, 404, f"no such object at {record.path}",
                                   "not_found_error", keep)
            return
        await self._send_json(writer, 200, found, keep)

    def _batch_answer(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        """The ``chat.completion`` the server gives ``body`` (what a non-streamed request
        gets), for a batch's output file."""
        cfg = self.config
        answer, reasoning = self._text(cfg.answer, body), self._text(cfg.reasoning, body)
        usage = {
            "prompt_tokens": sum(
                _count_tokens(m.get("content") if isinstance(m.get("content"), str) else "") + 3
                for m in body.get("messages") or [] if isinstance(m, dict)
            ),
            "completion_tokens": _count_tokens(answer) + _count_tokens(reasoning),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        if reasoning:
            message["reasoning_content"] = reasoning
        return {"id": f"chatcmpl-batch{index}", "object": "chat.completion",
                "created": int(time.time()), "model": str(body.get("model") or cfg.models[0]),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": usage}

    # -- chat completions ----------------------------------------------------------------

    async def _chat(
        self,
        record: RecordedRequest,
        body: dict[str, Any],
        writer: asyncio.StreamWriter,
        keep: bool,
    ) -> bool:
        cfg = self.config
        record.index, fault = self._next_fault()
        record.fault = fault
        if cfg.hold and self._released is not None:
            await self._released.wait()
        if cfg.interrupt:
            for running in self._streaming:
                running.extra["interrupted"] = True
        if cfg.api_key is not None:
            offered = record.headers.get("authorization", "")
            if offered != f"Bearer {cfg.api_key}":
                record.fault = "401"
                key = offered.removeprefix("Bearer ").strip()
                shown = f": {key}" if cfg.echo_key_in_errors and key else ""
                await self._send_error(
                    writer, 401, f"Incorrect API key provided{shown}", "authentication_error", keep
                )
                return keep
        if fault == "429":
            await self._send_error(
                writer,
                429,
                "rate limit reached, slow down",
                "rate_limit_error",
                keep,
                {"Retry-After": f"{cfg.retry_after:g}"},
            )
            return keep
        if fault is not None and fault.isdigit() and len(fault) == 3:
            status = int(fault)
            kind = "server_error" if status >= 500 else "invalid_request_error"
            if status == 401:
                kind = "authentication_error"
            elif status == 404:
                kind = "not_found_error"
            await self._send_error(writer, status, f"injected HTTP {status}", kind, keep)
            return keep
        if fault == "timeout":
            await asyncio.sleep(cfg.hang)
            raise _Closed()
        if fault == "redirect":
            await self._send_error(writer, 307, "moved", "redirect", keep,
                                   {"Location": cfg.redirect_to})
            return keep
        if fault == "html":
            page = b"<!doctype html><html><body><h1>Please sign in</h1></body></html>"
            writer.write(self._head(200, {
                "Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(page)),
                "Connection": "keep-alive" if keep else "close",
            }) + page)
            await writer.drain()
            return keep

        answer = self._text(cfg.answer, body)
        if cfg.echo_key_in_answer:
            offered = record.headers.get("authorization", "").removeprefix("Bearer ").strip()
            echoed = _encoded(offered, cfg.echo_key_in_answer)
            answer = f"{answer} {echoed} {answer}"  # the key straddles the middle
        reasoning = self._text(cfg.reasoning, body)
        prompt_tokens = sum(
            _count_tokens(m.get("content") if isinstance(m.get("content"), str) else "") + 3
            for m in body["messages"]
            if isinstance(m, dict)
        )
        reasoning_tokens = _count_tokens(reasoning)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": _count_tokens(answer) + reasoning_tokens,
            "total_tokens": 0,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage.update(cfg.usage_override or {})
        record.usage = usage
        model = str(body.get("model") or cfg.models[0])
        ident = f"chatcmpl-loop{record.index}"
        created = int(time.time())

        if not body.get("stream"):
            await asyncio.sleep(cfg.latency)
            if fault in ("drop", "truncate"):
                raise _Closed()
            if fault == "malformed":
                await self._send_json(writer, 200, None, keep, raw=b"{not json at all")
                return keep
            message: dict[str, Any] = {"role": "assistant", "content": answer}
            if reasoning:
                message["reasoning_content"] = reasoning
            payload = {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
            if cfg.send_usage:
                payload["usage"] = {
                    **usage,
                    "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
                }
            await self._send_json(writer, 200, payload, keep)
            record.done = time.monotonic()
            return keep

        pieces: list[tuple[str, str]] = [
            ("reasoning_content", p) for p in _split(reasoning, cfg.chunks)
        ]
        pieces += [("content", p) for p in _split(answer, cfg.chunks)]
        n = max(1, len(pieces))
        first = cfg.latency / n if cfg.ttft is None else min(cfg.ttft, cfg.latency)
        gap = (cfg.latency - first) / (n - 1) if n > 1 else 0.0
        cut = max(1, len(pieces) // 2)

        writer.write(
            self._head(
                200,
                {
                    "Content-Type": "text/event-stream",
                    "Cache-Control": "no-cache",
                    "Transfer-Encoding": "chunked",
                    "Connection": "keep-alive" if keep else "close",
                },
            )
        )

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        async def send(data: str) -> None:
            raw = f"data: {data}\n\n".encode()
            writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            await writer.drain()

        async def send_raw(raw: bytes) -> None:
            writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            await writer.drain()

        if fault == "keepalive":
            until = time.monotonic() + cfg.hang
            while time.monotonic() < until:
                await send_raw(b": keepalive\n\n")
                await asyncio.sleep(cfg.keepalive_every)
            raise _Closed()
        if fault == "huge_line":
            await self._send_huge_line(record, send_raw, ident, cfg.huge_size)
            return keep

        start = time.monotonic()
        self._streaming.add(record)
        try:
            for i, (key, text) in enumerate(pieces):
                due = start + first + gap * i
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if record.extra.get("interrupted"):
                    # what llama.cpp's server does: [DONE] without a finish reason
                    # then drops the connection without ending the chunked body
                    self.interrupted += 1
                    await send("[DONE]")
                    if writer.transport is not None:
                        writer.transport.abort()
                    raise _Closed()
                if fault in ("drop", "truncate", "malformed") and i == cut:
                    break
                delta: dict[str, Any] = {key: text}
                if i == 0:
                    delta = {"role": "assistant", **delta}
                await send(json.dumps(chunk(delta)))
        finally:
            self._streaming.discard(record)
        if not pieces:
            await asyncio.sleep(cfg.latency)
        if fault == "drop":
            # Cut the TCP connection in the middle of the chunked body.
            transport = writer.transport
            if transport is not None:
                transport.abort()
            raise _Closed()
        if fault == "truncate":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return keep
        if fault == "malformed":
            await send('{"id": "broken", "choices": [{"delta": {"content": "oops"')
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return keep
        await send(json.dumps(chunk({}, "stop")))
        if fault == "stall":  # a complete answer, then neither usage nor [DONE]
            await asyncio.sleep(cfg.hang)
            raise _Closed()
        options = body.get("stream_options") or {}
        if cfg.send_usage and isinstance(options, dict) and options.get("include_usage"):
            final = chunk({})
            final["choices"] = []
            final["usage"] = {
                **usage,
                "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
            }
            await send(json.dumps(final))
        await send("[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        record.done = time.monotonic()
        return keep

    @staticmethod
    async def _send_huge_line(
        record: RecordedRequest, send_raw: Callable[[bytes], Any], ident: str, size: int
    ) -> None:
        """One ``data:`` line of about ``size`` bytes (a chunk whose content is ``x`` ...),
        in 64 KiB pieces; ``record.extra["sent"]`` counts what the client took."""
        head = b'data: {"id": "%s", "choices": [{"index": 0, "delta": {"content": "' % (
            ident.encode())
        tail = b'"}, "finish_reason": "stop"}]}\n\n'
        record.extra["sent"] = 0
        await send_raw(head)
        left = max(0, size - len(head) - len(tail))
        piece = b"x" * 65536
        while left > 0:
            part = piece[:left]
            await send_raw(part)
            record.extra["sent"] += len(part)
            left -= len(part)
        await send_raw(tail + b"data: [DONE]\n\n")
        await send_raw(b"")  # the chunked body's end

    @staticmethod
    def _text(source: TextSource, body: dict[str, Any]) -> str:
        if source is None:
            return ""
        if callable(source):
            return str(source(body))
        return source


def _encoded(text: str, how: str) -> str:
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


def main(argv: list[str] | None = None) -> None:
    """``python -m coop_tui.testing.server --port 8765 --latency 1 --chunks 50``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--ttft", type=float, default=None)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--answer", default=None, help="fixed answer text")
    parser.add_argument("--reasoning", default=None)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-kinds", default="429,500,timeout,drop,malformed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", type=float, default=0.2)
    parser.add_argument("--hang", type=float, default=30.0)
    parser.add_argument("--api-key", default=None)
    parser.add_argument(
        "--interrupt", action="store_true", help="a new request ends running streams (llama.cpp)"
    )
    args = parser.parse_args(argv)
    config: dict[str, Any] = {
        "latency": args.latency,
        "ttft": args.ttft,
        "chunks": args.chunks,
        "reasoning": args.reasoning,
        "fault_rate": args.fault_rate,
        "fault_kinds": tuple(k for k in args.fault_kinds.split(",") if k),
        "seed": args.seed,
        "retry_after": args.retry_after,
        "hang": args.hang,
        "api_key": args.api_key,
        "interrupt": args.interrupt,
    }
    if args.answer is not None:
        config["answer"] = args.answer
    else:
        config["answer"] = " ".join(f"word{i}" for i in range(max(args.chunks, 1)))
    server = LoopbackServer(args.host, args.port, **config)

    async def run() -> None:
        task = asyncio.create_task(server.serve_forever())
        while server._server is None:  # noqa: SLF001 - wait for the bound port
            await asyncio.sleep(0.01)
        print(f"listening on {server.url}", flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
