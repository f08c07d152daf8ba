"""A running sweep's engine events on a local socket, for ``coop-tui watch``.

A headless sweep (``coop-tui --batch``) is a process nobody can look into while it runs.
The :class:`Publisher` listens on the sweep's event bus like the progress bars do and
repeats what it hears, one JSON object per line, to whoever connected to a Unix-domain
socket beside the database. Its address goes into the run's lease row, where a watcher
finds it.

Watching must never cost the sweep anything:

* With nobody connected the listener returns at its first line: no event is even
  turned into text.
* Each watcher has a bounded queue and its own writer task. The engine's call only
  appends to the queues and returns; a slow reader waits on its own socket.
* When a watcher's queue is full, text deltas for it are dropped (and counted): they
  are the bulk of the traffic and the finished answer is stored anyway. A structural
  event (a decision, a round, a match's end) that does not fit marks the watcher as
  lagging: its queue is emptied and it is told to read the current state from the
  database again, then follow the stream from there.

The socket is created 0600 (only the user who runs the sweep may connect). A path too
long for ``AF_UNIX`` falls back to a private 0700 folder under the temporary directory.
Every string on the wire is scrubbed of secrets as on the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from coop_tui.decisions import Decision
from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    DirectDecisions,
    DirectRounds,
    Event,
    MatchDone,
    MatchStarted,
    PhaseDone,
    ReasoningDelta,
    RoundDone,
    RunDone,
    RunProgress,
    RunStarted,
    StreamRestarted,
    TextDelta,
)
from coop_tui.redact import scrub_data

PROTOCOL = 1
"""The wire format's version, sent in the greeting line."""
QUEUE_LINES = 2000
"""Lines one watcher may have waiting before deltas for it are dropped."""
MAX_SOCKET_PATH = 100
"""Bytes of a socket path that every ``AF_UNIX`` (108 on Linux, 104 on macOS) accepts."""
LINE_LIMIT = 16 * 1024 * 1024
"""The longest line a watcher reads (a decision with a long answer fits many times)."""
CLOSE_GRACE_S = 0.5
"""How long the publisher lets watchers read what is queued when the sweep ends."""

DECISION_FIELDS = (
    "match_id", "round", "phase", "seat", "kind", "agent", "response", "reasoning", "parsed",
    "valid", "attempts", "error", "labels", "label_to_action", "distribution", "action",
    "normalisation", "latency_ms", "input_tokens", "output_tokens", "cost_usd",
    "transport_retries", "reused", "coop_prob", "cooperated", "created_at",
)
"""What a decision carries on the wire: its outcome, not its prompt (the prompt is in the
database; a watcher needs the answer and what it did)."""

EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls for cls in (
        RunStarted, MatchStarted, DecisionStarted, TextDelta, ReasoningDelta, StreamRestarted,
        AnswerRejected, DecisionDone, RoundDone, PhaseDone, MatchDone, RunProgress, RunDone,
    )
}
DELTAS = (TextDelta, ReasoningDelta)


# ------------------------------------------------------------------ the wire format
def encode(event: Event) -> list[bytes]:
    """The lines (JSON, newline-terminated, secrets scrubbed) that carry ``event``."""
    if isinstance(event, DirectRounds):  # a strategy match's rounds, held back to its end
        return [line for held in event.events for line in encode(held)]
    if isinstance(event, DirectDecisions):  # a strategy round: one line per seat
        return [line for d in event.decisions() for line in encode(DecisionDone(d))]
    if isinstance(event, DecisionDone):
        body: dict[str, Any] = {f: getattr(event.decision, f) for f in DECISION_FIELDS}
        data = {"type": "DecisionDone", "decision": body}
    elif isinstance(event, DecisionStarted):  # the prompt stays in the database
        data = {"type": "DecisionStarted", "match_id": event.match_id, "seat": event.seat,
                "round": event.round, "phase": event.phase, "attempt": event.attempt,
                "agent": event.agent}
    else:
        data = {"type": type(event).__name__,
                **{f.name: getattr(event, f.name) for f in dataclasses.fields(event)}}
    return [_line(data)]


def _line(data: dict[str, Any]) -> bytes:
    return (json.dumps(scrub_data(data), default=_plain, separators=(",", ":")) + "\n").encode()


def _plain(value: Any) -> Any:
    """What ``json`` cannot write itself: sets, numpy numbers, anything else as text."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if hasattr(value, "item"):
        with contextlib.suppress(Exception):
            return value.item()
    return str(value)


def decode(data: dict[str, Any]) -> Event | None:
    """The event a wire object describes; None for control lines and unknown types."""
    cls = EVENT_TYPES.get(str(data.get("type")))
    if cls is None:
        return None
    if cls is DecisionDone:
        return DecisionDone(decision_from(data.get("decision") or {}))
    if cls is DecisionStarted:
        return DecisionStarted(data["match_id"], int(data["seat"]), int(data["round"]),
                               str(data["phase"]), int(data["attempt"]), (), str(data["agent"]))
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            values[f.name] = tuple(value) if isinstance(value, list) and "tuple" in str(f.type) else value
    return cls(**values)


def decision_from(body: dict[str, Any]) -> Decision:
    """A :class:`Decision` rebuilt from its wire fields (no prompt, no cache key)."""
    values = {f: body.get(f) for f in DECISION_FIELDS if f in body}
    for name in ("labels", "label_to_action", "distribution"):
        if isinstance(values.get(name), list):
            values[name] = tuple(values[name])
    values.setdefault("labels", ())
    values.setdefault("label_to_action", ())
    return Decision(prompt=[], cache_key="", content_key="", **{  # type: ignore[arg-type]
        "match_id": "", "round": 0, "phase": "play", "seat": 0, "kind": "mixed", "agent": "",
        "response": "", "reasoning": "", "parsed": None, "valid": False, "attempts": 1,
        "error": None, **values})


# ------------------------------------------------------------------ where the socket lives
def socket_path(db_path: Path, pid: int | None = None) -> tuple[Path, Path | None]:
    """Where a sweep on ``db_path`` listens, and the private folder made for it (None when
    the socket sits beside the database)."""
    pid = os.getpid() if pid is None else pid
    beside = db_path.resolve().parent / f".{db_path.name}.watch-{pid}.sock"
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH:
        return beside, None
    folder = Path(tempfile.mkdtemp(prefix="coop-tui-watch-"))  # 0700, this user's only
    return folder / "sweep.sock", folder


# ------------------------------------------------------------------ the publisher
class _Watcher:
    """One connected watcher: its queue of lines and what it missed."""

    def __init__(self, writer: asyncio.StreamWriter, size: int) -> None:
        self.writer = writer
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(size)
        self.dropped = 0
        """Deltas dropped because the queue was full."""
        self.reported = 0
        """``dropped`` as last sent to the watcher."""
        self.lagging = 0
        """Times the watcher fell so far behind it was told to read the database again."""

    def offer(self, lines: list[bytes], *, delta: bool) -> None:
        """Queue ``lines`` without ever waiting (see the module's drop rules)."""
        if self.queue.qsize() + len(lines) + 1 > self.queue.maxsize:
            if delta:
                self.dropped += 1
                return
            self.lagging += 1
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(_line({"type": "lagging", "dropped": self.dropped,
                                         "times": self.lagging}))
            self.reported = self.dropped
            return
        if not delta and self.dropped != self.reported:
            self.reported = self.dropped
            self.queue.put_nowait(_line({"type": "dropped", "count": self.dropped}))
        for line in lines:
            self.queue.put_nowait(line)


class Publisher:
    """A bus listener that repeats a sweep's events to the watchers of its socket."""

    accepts_direct_decisions = True
    """A strategy round's batch is read as it is (the bus keeps its fast path)."""
    accepts_direct_rounds = True
    """A strategy-only match's rounds may come at its end, in one event: a watcher sees
    them when the match ends (it plays in an instant), and a headless sweep keeps the
    whole-match path that publishing would otherwise switch off."""

    def __init__(self, db_path: Path, *, queue_lines: int = QUEUE_LINES) -> None:
        self.db_path = Path(db_path)
        self.queue_lines = queue_lines
        self.watchers: list[_Watcher] = []
        self.path: Path | None = None
        self._folder: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.run_id: str | None = None
        self.connected = asyncio.Event()
        """Set on each new watcher (tests and the benchmark wait on it)."""

    @property
    def address(self) -> str:
        return f"unix:{self.path}" if self.path else ""

    async def start(self) -> str:
        """Listen; the address to record in the lease row."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        path, self._folder = socket_path(self.db_path)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(path.lstat().st_mode):  # a dead sweep's socket with our pid
                path.unlink()
        old = os.umask(0o177)  # born 0600: no moment where another user could connect
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(path),
                                                           limit=LINE_LIMIT)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.path = path
        return self.address

    async def close(self) -> None:
        """Let watchers read what is queued (briefly), hang up, remove the socket."""
        if self._server is not None:
            self._server.close()
        for w in list(self.watchers):
            with contextlib.suppress(asyncio.QueueFull):
                w.queue.put_nowait(None)
        if self._tasks:
            _done, pending = await asyncio.wait(list(self._tasks), timeout=CLOSE_GRACE_S)
            for task in pending:
                task.cancel()
        for w in self.watchers:
            w.writer.close()
        self.watchers.clear()
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self.path = None

    # -------------------------------------------------------------- the bus listener
    def __call__(self, event: Event) -> None:
        if not self.watchers:  # nobody listens: nothing is serialised
            if isinstance(event, RunStarted):
                self.run_id = event.run_id
            return
        if threading.get_ident() != self._thread and self._loop is not None:
            self._loop.call_soon_threadsafe(self._publish, event)
            return
        self._publish(event)

    def _publish(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
        lines = encode(event)
        delta = isinstance(event, DELTAS)
        for w in self.watchers:
            w.offer(lines, delta=delta)

    # -------------------------------------------------------------- one watcher
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        watcher = _Watcher(writer, self.queue_lines)
        watcher.queue.put_nowait(_line({"type": "hello", "protocol": PROTOCOL,
                                        "run_id": self.run_id, "pid": os.getpid()}))
        self.watchers.append(watcher)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)  # type: ignore[arg-type]
        self.connected.set()
        try:
            await self._pump(watcher, reader)
        except asyncio.CancelledError:  # closed while the watcher would not read: done
            pass
        finally:
            if watcher in self.watchers:
                self.watchers.remove(watcher)
            if task is not None:
                self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()

    @staticmethod
    async def _pump(watcher: _Watcher, reader: asyncio.StreamReader) -> None:
        """Write the watcher's lines until the sweep ends or the watcher hangs up."""
        gone = asyncio.ensure_future(reader.read(1))  # a watcher never writes: EOF = gone
        try:
            while True:
                get = asyncio.ensure_future(watcher.queue.get())
                done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    return
                line = get.result()
                if line is None:
                    return
                watcher.writer.write(line)
                await watcher.writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            gone.cancel()


# ------------------------------------------------------------------ the watcher's side
def socket_of(address: str) -> Path:
    """The socket path of a lease row's ``unix:PATH`` address."""
    if not address.startswith("unix:"):
        raise ValueError(f"not a local socket address: {address!r}")
    return Path(address[len("unix:"):])


async def subscribe(address: str) -> AsyncIterator[dict[str, Any]]:
    """Every line a sweep publishes, as parsed JSON, until it hangs up.

    Raises ``OSError`` (refused, missing) when nothing listens at ``address``: the sweep
    ended or its process is gone.
    """
    reader, writer = await asyncio.open_unix_connection(str(socket_of(address)), limit=LINE_LIMIT)
    try:
        while True:
            raw = await reader.readline()
            if not raw:
                return
            with contextlib.suppress(ValueError):
                data = json.loads(raw)
                if isinstance(data, dict):
                    yield data
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
