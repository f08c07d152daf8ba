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

This module holds the server's lifecycle and its routes; the parts a route hands on to:
:mod:`.config` (settings, recorded requests), :mod:`.wire` (HTTP/1.1 reading and writing),
:mod:`.faults` (which fault, and the refusals), :mod:`.answers` (the answer's text and
usage), :mod:`.streaming` (whole and SSE answers, and the faults that spoil them) and
:mod:`.batch_endpoints` with :mod:`.batches` (the Batch APIs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
import time
from dataclasses import fields, replace
from typing import Any

from coop_tui.testing.answers import ChatAnswer, last_user_message
from coop_tui.testing.batch_endpoints import BATCH_PATHS, route_batch
from coop_tui.testing.batches import BatchBook
from coop_tui.testing.config import RecordedRequest, ServerConfig, TextSource
from coop_tui.testing.faults import FAULT_KINDS, pick_fault, refuse
from coop_tui.testing.streaming import SseStream, send_whole
from coop_tui.testing.wire import Closed, read_request, send_error, send_json

__all__ = ["FAULT_KINDS", "LoopbackServer", "RecordedRequest", "ServerConfig", "TextSource",
           "last_user_message", "main"]


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
        """Count one more chat request; its index and the fault it meets."""
        with self._lock:
            index = self._counter
            self._counter += 1
        return index, pick_fault(self.config, index)

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
        except (Closed, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
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
        """Read one request, record it and route it; False when the connection ends."""
        read = await read_request(reader, writer)
        if read is None:
            return False
        record, raw, keep = read
        self.requests.append(record)
        method, path, body = record.method, record.path, record.body
        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            now = int(time.time())
            data = [
                {"id": m, "object": "model", "created": now, "owned_by": "coop-tui"}
                for m in self.config.models
            ]
            await send_json(writer, 200, {"object": "list", "data": data}, keep)
            record.done = time.monotonic()
            return keep
        if path.startswith(BATCH_PATHS):
            await route_batch(self.config, self.batch_book, record, raw, writer, keep,
                              f"http://{self.host}:{self.port}")
            record.done = time.monotonic()
            return keep
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            await send_error(writer, 404, f"no route for {method} {path}", "not_found", keep)
            return keep
        if method != "POST":
            await send_error(writer, 405, "use POST", "invalid_request_error", keep)
            return keep
        if body is None or not isinstance(body.get("messages"), list):
            await send_error(
                writer,
                400,
                "the body must be JSON with a 'messages' list",
                "invalid_request_error",
                keep,
            )
            return keep
        return await self._chat(record, body, writer, keep)

    # -- chat completions ----------------------------------------------------------------

    async def _chat(
        self,
        record: RecordedRequest,
        body: dict[str, Any],
        writer: asyncio.StreamWriter,
        keep: bool,
    ) -> bool:
        """Count the request, meet its fault, then answer it whole or streamed."""
        cfg = self.config
        record.index, fault = self._next_fault()
        record.fault = fault
        if cfg.hold and self._released is not None:
            await self._released.wait()
        if cfg.interrupt:
            for running in self._streaming:
                running.extra["interrupted"] = True
        if await refuse(cfg, record, fault, writer, keep):
            return keep
        answer = ChatAnswer.compose(cfg, record.headers, body, record.index)
        record.usage = answer.usage
        if not body.get("stream"):
            return await send_whole(cfg, answer, fault, record, writer, keep)
        stream = SseStream(cfg, answer, fault, record, writer, keep,
                           live=self._streaming, on_interrupt=self._count_interrupted)
        return await stream.run()

    def _count_interrupted(self) -> None:
        self.interrupted += 1


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
