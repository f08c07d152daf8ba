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
import functools
import glob
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
import types
import typing
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
"""The longest line a watcher reads; a longer one is skipped (and counted), never fatal."""
WIRE_TEXT_CHARS = 200_000
"""The most characters of one text (an answer, its reasoning, a delta) put on the wire.
JSON writes a character in at most 12 bytes, so a decision's texts stay far below
``LINE_LIMIT``; a longer answer is cut here only, its whole text is in the database."""
CUT_MARK = " … [cut on the watch channel: {n} characters; the whole text is in the database]"
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
    return (json.dumps(_cut(scrub_data(data)), default=_plain, separators=(",", ":"))
            + "\n").encode()


def _cut(value: Any) -> Any:
    """``value`` with every string longer than ``WIRE_TEXT_CHARS`` cut (see there)."""
    if isinstance(value, str):
        if len(value) <= WIRE_TEXT_CHARS:
            return value
        return value[:WIRE_TEXT_CHARS] + CUT_MARK.format(n=len(value))
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """What ``json`` cannot write itself: sets, numpy numbers, anything else as text."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if hasattr(value, "item"):
        with contextlib.suppress(Exception):
            return value.item()
    return str(value)


class Malformed(ValueError):
    """A wire object of a known type whose fields are missing or of the wrong type."""


def decode(data: dict[str, Any]) -> Event | None:
    """The event a wire object describes; None for control lines and unknown types.

    The object comes from another process, so every field is checked against the event's
    annotations before an event is built: :class:`Malformed` names the first that does
    not fit (a watcher skips and counts such lines)."""
    cls = EVENT_TYPES.get(str(data.get("type")))
    if cls is None:
        return None
    if cls is DecisionDone:
        body = data.get("decision")
        if not isinstance(body, dict):
            raise Malformed("DecisionDone without a decision object")
        return DecisionDone(decision_from(body))
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "messages" and cls is DecisionStarted:  # the prompt stays in the database
            values[f.name] = ()
        elif f.name in data:
            values[f.name] = _fitted(cls.__name__, f.name, data[f.name], hints[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise Malformed(f"{cls.__name__} without {f.name}")
    return cls(**values)


def decision_from(body: dict[str, Any]) -> Decision:
    """A :class:`Decision` rebuilt from its wire fields (no prompt, no cache key);
    :class:`Malformed` when a field is of the wrong type."""
    hints = _hints(Decision)
    values = {f: _fitted("decision", f, body[f], hints[f]) for f in DECISION_FIELDS if f in body}
    values.setdefault("labels", ())
    values.setdefault("label_to_action", ())
    return Decision(prompt=[], cache_key="", content_key="", **{  # type: ignore[arg-type]
        "match_id": "", "round": 0, "phase": "play", "seat": 0, "kind": "mixed", "agent": "",
        "response": "", "reasoning": "", "parsed": None, "valid": False, "attempts": 1,
        "error": None, **values})


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fitted(what: str, name: str, value: Any, hint: Any) -> Any:
    """``value`` as the field ``name`` holds it (a JSON list as a tuple), or
    :class:`Malformed` when JSON's value cannot be of the annotated type."""
    if not _fits(value, hint):
        raise Malformed(f"{what}.{name}: {type(value).__name__} where {hint} belongs")
    if isinstance(value, list) and typing.get_origin(hint) in (tuple, types.UnionType,
                                                              typing.Union):
        return tuple(value)
    return value


def _fits(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON can be of type ``hint`` (the subset of Python's
    types the events use: scalars, Literal, Optional/unions, tuples, lists, dicts)."""
    if hint is Any:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is tuple or origin is list:
        if not isinstance(value, list):
            return False
        inner = args[0] if args else Any
        return all(_fits(v, inner) for v in value)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    return False  # a type no wire field carries (a message, an attempt): refused


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


def remove_dead_sockets(db_path: Path) -> list[Path]:
    """Remove the sockets beside ``db_path`` that nobody listens on any more (a sweep
    killed with ``kill -9`` leaves its socket behind); the paths removed.

    Only this user's sockets with the channel's name are looked at, and one is dead when a
    connection to it is refused: a pid in the name may have been reused, a refused
    connection cannot lie. A live sweep's socket accepts, and is left alone."""
    folder = db_path.resolve().parent
    removed = []
    for path in folder.glob(f".{glob.escape(db_path.name)}.watch-*.sock"):
        with contextlib.suppress(OSError):
            info = path.lstat()
            if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
                continue
            if not _listens(path):
                path.unlink()
                removed.append(path)
    return removed


def _listens(path: Path) -> bool:
    """Whether a process accepts connections on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.setblocking(False)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:  # a full backlog, a path too long to name: not ours to judge
            return True
    return True


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
        remove_dead_sockets(self.db_path)
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


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A line the watcher could not take (longer than ``LINE_LIMIT``, or not a JSON
    object): counted by the watcher, never fatal."""

    reason: str


async def subscribe(address: str, *, limit: int = LINE_LIMIT) -> AsyncIterator[dict[str, Any] | Skipped]:
    """Every line a sweep publishes, as parsed JSON, until it hangs up; a line over
    ``limit`` bytes or that is not a JSON object comes as :class:`Skipped`.

    Lines are framed here rather than with ``StreamReader.readline``, whose limit raises
    and leaves the rest of the long line to be read as if it were the next one.

    Raises ``OSError`` (refused, missing) when nothing listens at ``address``: the sweep
    ended or its process is gone.
    """
    reader, writer = await asyncio.open_unix_connection(str(socket_of(address)))
    try:
        async for line in _lines(reader, limit):
            if line is None:
                yield Skipped(f"a line over {limit} bytes")
                continue
            try:
                data = json.loads(line)
            except ValueError:
                yield Skipped("a line that is not JSON")
                continue
            yield data if isinstance(data, dict) else Skipped("a line that is not a JSON object")
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _lines(reader: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | None]:
    """The newline-terminated lines of ``reader``; None for each one over ``limit`` bytes,
    whose bytes are dropped as they arrive (memory stays within ``limit``)."""
    held = bytearray()
    over = False
    while chunk := await reader.read(65536):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if over or len(held) + end - start > limit:
                yield None
            else:
                held += chunk[start:end]
                yield bytes(held)
            held.clear()
            over = False
            start = end + 1
        if not over:
            held += chunk[start:]
            if len(held) > limit:
                held.clear()
                over = True
