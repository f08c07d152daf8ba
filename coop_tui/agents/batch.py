"""Decisions through the providers' Batch APIs (``batch = true`` on an agent): half price.

OpenAI and OpenAI-compatible servers take a JSONL file of chat requests (``/v1/files``)
and run it as a batch (``/v1/batches``); Anthropic's Message Batches take the requests in
the body. Either answers within 24 hours, at half the list price.

How a sweep uses them. A batch agent's ``reply`` does not send its request: it hands it to
the run's :class:`BatchHub` and waits. The hub collects what is ready to ask across all
matches (every match's round t) and submits it as one batch when every match that is
playing waits on a request not yet sent, or when nothing new arrived for the sweep's
``batch_gather`` seconds (a match blocked on something else). The batch is split at the provider's limits. A poller per batch asks
for its state with a doubling interval and, when it ends, hands every answer to the
request that waits for it, as if it had streamed (no deltas): parsing, re-asks and
storage are the engine's, as for any reply; a re-ask goes into the next batch.

Durable. Each request's ``custom_id`` is derived from the decision's content key, the
attempt and the request body, so the same decision asks with the same id in every
process. Before a batch is sent, its requests are committed to the ``batch_requests``
table (with the batch's own tag, ``batches.status = 'submitting'``); the provider's batch
id is committed as soon as the provider returns it. A run killed while batches are pending
finds the same ids on ``--resume``: a request whose batch is pending is polled, never sent
again; one whose answer arrived is answered from the table. A crash between the provider
accepting a batch and its id being committed is repaired by finding the batch by its tag
(OpenAI's batch ``metadata``); Anthropic's batches carry no metadata, so there such a batch
is sent again (the only case).

Failures. A batch that expires, fails or is cancelled, and a request that fails inside a
batch, are asked again in a new batch, up to the agent's ``max_retries``; each reason is
kept on its ``batch_requests`` row (beside the decision's content key) and shown on the
live pane; the decision counts them as transport retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coop_tui.agents.batch_results import (
    Outcome,
    ResultLines,
    anthropic_outcome,
    openai_outcome,
    read_result_stream,
)
from coop_tui.agents.pricing import BATCH_PRICE_FACTOR  # noqa: F401 - its old import path
from coop_tui.database import BUSY_TIMEOUT
from coop_tui.decisions import ASKING, DEFAULT_MAX_ANSWER_CHARS
from coop_tui.hashing import stable_hash
from coop_tui.redact import scrub

QUIET_S = 1.0
"""Default seconds without a new request after which the hub submits what it holds, when not every
playing match waits on it (a match waits on a server, a human, a slow strategy ...)."""
SETTLE_TURNS = 20
"""Turns of the event loop the hub gives other tasks before it looks again: a match asking
several seats at once puts them in within a few turns."""
FIRST_POLL_S = 5.0
"""Seconds before a new batch is first polled (the agent's ``batch_poll`` overrides)."""
MAX_POLL_S = 300.0
"""The longest pause between two polls of a batch (the interval doubles up to it)."""
MAX_POLL_FAILURES = 12
"""Polls of one batch that may fail in a row (the provider unreachable, the batch unknown)
before its requests are asked again in a new batch."""
MAX_RESULT_FAILURES = 3
"""Times the results of an ended batch may fail to be read before the batch ends with that
error (its requests are then asked again in a new batch): the batch has ended, so polling
it longer would only repeat the same failure."""
PENDING_STATES = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
"""OpenAI batch states in which its results are not there yet."""
ENDED_STATES = frozenset({"completed", "failed", "expired", "cancelled"})
"""OpenAI batch states in which it has ended. Any other status (one a provider adds later)
counts as pending, with a warning naming it: taking it as ended would send every request
again while the batch may still complete."""

log = logging.getLogger(__name__)

_MATCH: contextvars.ContextVar[object | None] = contextvars.ContextVar("batch_match", default=None)
"""The playing match of the current task (set by :meth:`BatchHub.playing`)."""


def custom_id(body: dict[str, Any]) -> str:
    """The request's id in a batch: the decision's content key and attempt (set by the
    engine while it asks) and the body, so a resumed run asks with the same id."""
    return "ck-" + stable_hash([ASKING.get(), body])[:48]


# ----------------------------------------------------------------- the ledger (SQLite)
class BatchLedger:
    """The ``batches`` and ``batch_requests`` tables: every write committed at once, on
    its own short connection (the store's connection groups its commits).

    ``flush`` commits what the store's connection holds in its open write transaction
    (``Store.commit_pending``): the store commits on a timer of the event loop, and this
    connection waiting for that lock on the same loop would wait for good."""

    def __init__(self, path: Path | str, flush: Callable[[], None] | None = None) -> None:
        self.path = str(path)
        self.flush = flush

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        if self.flush is not None:
            self.flush()
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    def latest(self, cid: str) -> dict[str, Any] | None:
        """The last time ``cid`` was sent: its batch's tag, id and status, its own result."""
        with self._conn() as conn:
            row = conn.execute(
                "select r.tag, b.batch_id, b.status, r.result, r.error from batch_requests r"
                " join batches b on b.tag = r.tag where r.custom_id = ?"
                " order by b.created_at desc, r.rowid desc limit 1", [cid]).fetchone()
        if row is None:
            return None
        return dict(zip(("tag", "batch_id", "status", "result", "error"), row, strict=True))

    def submitting(self, tag: str, *, provider: str, agent: str, model: str,
                   items: list[tuple[str, str | None, int | None]]) -> None:
        """Commit a batch about to be sent: its tag and its requests' ids and content keys."""
        with self._conn() as conn:
            conn.execute(
                "insert into batches (tag, provider, agent, model, status, requests, created_at)"
                " values (?, ?, ?, ?, 'submitting', ?, ?)",
                [tag, provider, agent, model, len(items), time.time()])
            conn.executemany(
                "insert into batch_requests (tag, custom_id, content_key, attempt) values (?, ?, ?, ?)",
                [(tag, cid, key, attempt) for cid, key, attempt in items])

    def created(self, tag: str, batch_id: str) -> None:
        with self._conn() as conn:
            conn.execute("update batches set batch_id = ?, status = 'pending' where tag = ?",
                         [batch_id, tag])

    def ended(self, tag: str, status: str, results: dict[str, Outcome], reason: str | None) -> None:
        """The batch ended: every request's result (or the reason it has none) kept."""
        with self._conn() as conn:
            conn.execute(
                "update batches set status = ?, error = ?, finished_at = ? where tag = ?",
                [status, scrub(reason) if reason else None, time.time(), tag])
            # a model may repeat its context, the key included: stored scrubbed, like decisions
            rows = [(None if o.error else scrub(o.to_json()), scrub(o.error) if o.error else None,
                     tag, cid) for cid, o in results.items()]
            conn.executemany(
                "update batch_requests set result = ?, error = ? where tag = ? and custom_id = ?",
                rows)
            conn.execute(
                "update batch_requests set error = ? where tag = ? and result is null"
                " and error is null", [scrub(reason or "no result for this request"), tag])

    def requests(self, tag: str) -> set[str]:
        """The ``custom_id`` of every request sent in the batch ``tag``: a results line
        naming another is ignored."""
        with self._conn() as conn:
            return {r[0] for r in conn.execute(
                "select custom_id from batch_requests where tag = ?", [tag])}

    def unfinished(self) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute(
                "select tag, batch_id, status, created_at from batches"
                " where status in ('submitting', 'pending')").fetchall()
        return [dict(zip(("tag", "batch_id", "status", "created_at"), r, strict=True)) for r in rows]


# ----------------------------------------------------------------- provider clients
class OpenAIBatches:
    """OpenAI's Batch API (and OpenAI-compatible servers offering it) through the SDK."""

    name = "openai"
    pending_states = PENDING_STATES
    ended_states = ENDED_STATES
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key or "no-key",
                                  timeout=timeout, max_retries=4)

    @staticmethod
    def line(cid: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        upload = await self.client.files.create(
            file=(f"coop-tui-{tag}.jsonl", data, "application/jsonl"), purpose="batch")
        batch = await self.client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h",
            metadata={"coop_tui_tag": tag})
        return batch.id

    async def state(self, batch_id: str) -> tuple[str, Any]:
        """(the batch's status, the batch object)."""
        batch = await self.client.batches.retrieve(batch_id)
        return str(batch.status), batch

    async def results(self, batch: Any, max_chars: int,
                      expected: set[str]) -> tuple[str, ResultLines, str | None]:
        """(status, what the output and error files held, the batch's own failure reason
        or None). Each file is streamed, line by line, each line bounded."""
        out = ResultLines()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            async with self.client.files.with_streaming_response.content(file_id) as response:
                await read_result_stream(response.iter_bytes(), openai_outcome,
                                         max_chars=max_chars, expected=expected, into=out)
        reason = None
        if batch.status != "completed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            said = "; ".join(str(getattr(e, "message", "") or "") for e in errors if e)
            reason = f"the batch {batch.status}" + (f": {said}" if said else "")
            if batch.status == "expired":
                reason += " (not run within its 24 h window)"
        return batch.status, out, reason

    async def find(self, tag: str) -> str | None:
        """The batch sent with this tag (after a crash before its id was committed)."""
        seen = 0
        async for batch in self.client.batches.list(limit=100):
            if (batch.metadata or {}).get("coop_tui_tag") == tag:
                return batch.id
            seen += 1
            if seen >= 1000:
                break
        return None

    async def aclose(self) -> None:
        await self.client.close()


class AnthropicBatches:
    """Anthropic's Message Batches through the ``anthropic`` SDK (an optional extra)."""

    name = "anthropic"
    pending_states = frozenset({"in_progress", "canceling"})
    ended_states = frozenset({"ended"})
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float) -> None:
        import anthropic

        root = base_url.rstrip("/").removesuffix("/v1") if base_url else None
        self.client = anthropic.AsyncAnthropic(base_url=root, api_key=api_key or "no-key",
                                               timeout=timeout, max_retries=4)

    @staticmethod
    def line(cid: str, body: dict[str, Any]) -> dict[str, Any]:
        system = "\n\n".join(str(m.get("content") or "") for m in body["messages"]
                             if m.get("role") == "system")
        params: dict[str, Any] = {
            "model": body["model"].removeprefix("anthropic/"),
            "max_tokens": body.get("max_tokens") or 4096,
            "messages": [{"role": m["role"], "content": m.get("content") or ""}
                         for m in body["messages"] if m.get("role") != "system"],
        }
        if system:
            params["system"] = system
        if body.get("temperature") is not None:
            params["temperature"] = min(float(body["temperature"]), 1.0)
        return {"custom_id": cid, "params": params}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        batch = await self.client.messages.batches.create(requests=lines)  # type: ignore[arg-type]
        return batch.id

    async def state(self, batch_id: str) -> tuple[str, Any]:
        batch = await self.client.messages.batches.retrieve(batch_id)
        return str(batch.processing_status), batch

    async def results(self, batch: Any, max_chars: int,
                      expected: set[str]) -> tuple[str, ResultLines, str | None]:
        """The results file read raw (the SDK's decoder would stop at the first bad line),
        line by line, each line bounded."""
        stream = self.client.messages.batches.with_streaming_response.results(batch.id)
        async with stream as response:
            out = await read_result_stream(response.iter_bytes(), anthropic_outcome,
                                           max_chars=max_chars, expected=expected)
        return "ended", out, None

    async def find(self, tag: str) -> str | None:
        return None  # message batches carry no metadata to find them by

    async def aclose(self) -> None:
        await self.client.close()


def import_batch_sdk(model: str) -> None:
    """Import the SDK a batch agent of ``model`` needs (called off the event loop before
    the first match: importing it inside the first batch would stall every match)."""
    if model.startswith("anthropic/"):
        import anthropic  # noqa: F401
    else:
        import openai  # noqa: F401


def batch_client(agent: Any) -> Any:
    """The Batch API client for an LLM agent: Anthropic's for ``anthropic/`` models, else
    OpenAI's (at the agent's first ``api_base``, or OpenAI itself)."""
    key = agent._key.get()  # noqa: SLF001 - the agent's secret goes only to its client
    if agent.model.startswith("anthropic/"):
        return AnthropicBatches(agent.api_base, key, agent.timeout)
    return OpenAIBatches(agent.api_base, key, agent.timeout)


# ----------------------------------------------------------------- the hub
@dataclass
class _Queued:
    body: dict[str, Any]
    ask: Any
    futures: list[asyncio.Future[Outcome]] = field(default_factory=list)


@dataclass
class _Running:
    """A batch sent and not yet ended, with the requests that wait for it."""

    tag: str
    batch_id: str | None
    started: float
    waiters: dict[str, list[asyncio.Future[Outcome]]] = field(default_factory=dict)


class BatchHub:
    """Collects the batch agents' requests of a run, sends them as batches, polls them and
    answers each request (one hub per run)."""

    def __init__(self, ledger: BatchLedger, *, notify: Any = None, quiet: float = QUIET_S) -> None:
        self.ledger = ledger
        self.quiet = quiet
        """Seconds without a new request before sending while some match is busy elsewhere
        (the sweep's ``batch_gather``)."""
        self.notify = notify
        """Called with (pending, done, oldest pending age in seconds) when that changes."""
        self._queues: dict[int, tuple[Any, dict[str, _Queued]]] = {}
        self._running: dict[str, _Running] = {}
        self._clients: dict[int, Any] = {}
        self._changed = asyncio.Event()
        self._arrivals = 0
        self._active: set[object] = set()
        self._queued: dict[object, int] = {}
        """Per playing match, its requests in the queue not yet sent."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._collector: asyncio.Task[Any] | None = None
        self._resuming: dict[str, asyncio.Future[_Running | None]] = {}
        """Batches of an earlier process being taken up (by tag)."""
        self.done = 0
        """Batches ended in this process."""
        self.sent = 0
        """Batches sent by this process."""

    # -- matches -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def playing(self) -> AsyncIterator[None]:
        """Around one match: the hub sends its batch once every playing match waits."""
        token = object()
        reset = _MATCH.set(token)
        self._active.add(token)
        try:
            yield
        finally:
            self._active.discard(token)
            self._queued.pop(token, None)
            _MATCH.reset(reset)
            self._changed.set()

    def _everyone_waits(self) -> bool:
        """Every playing match waits on a request not yet sent: nothing more can come
        before this batch goes. A match waiting on a batch already sent (a split round
        whose parts end at different times) will ask again soon, so it is not ready."""
        return bool(self._active) and all(self._queued.get(m) for m in self._active)

    # -- asking --------------------------------------------------------------------------
    async def ask(self, agent: Any, body: dict[str, Any], *, fresh: bool) -> tuple[Outcome, float]:
        """The answer to ``body`` (and seconds from submission), from the ledger, a pending
        batch or a new one. ``fresh``: the last result failed, send it anew."""
        cid = custom_id(body)
        match = _MATCH.get()
        started = time.time()
        future = None if fresh else await self._known(agent, cid)
        if isinstance(future, Outcome):
            return future, 0.0
        if future is None:
            if match in self._active:
                self._queued[match] = self._queued.get(match, 0) + 1
            future = self._enqueue(agent, cid, body)
        outcome = await future
        return outcome, time.time() - started

    async def _known(self, agent: Any, cid: str) -> Any:
        """An outcome the ledger holds, a future on the pending batch that holds the
        request, or None (send it)."""
        row = self.ledger.latest(cid)
        if row is None or row["error"]:
            return None
        if row["result"]:
            return Outcome.from_json(row["result"])
        if row["status"] not in ("submitting", "pending"):
            return None
        running = self._running.get(row["tag"])
        if running is None:
            # one resumption per batch, however many of its requests ask at once
            task = self._resuming.get(row["tag"])
            if task is None:
                task = self._resuming[row["tag"]] = asyncio.ensure_future(
                    self._resume_batch(agent, row["tag"], row["batch_id"]))
            running = await asyncio.shield(task)
            if running is None:
                return None
            if running.tag not in self._running:  # it ended meanwhile: the ledger has it
                return await self._known(agent, cid)
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        running.waiters.setdefault(cid, []).append(future)
        return future

    async def _resume_batch(self, agent: Any, tag: str, batch_id: str | None) -> _Running | None:
        """Poll a batch an earlier process sent; None when it never reached the provider."""
        if batch_id is None:  # killed between sending and committing the id
            batch_id = await self._client(agent).find(tag)
            if batch_id is None:
                self.ledger.ended(tag, "lost", {}, "the batch was never created")
                return None
            self.ledger.created(tag, batch_id)
        return self._start_polling(agent, tag, batch_id, first=0.0)

    def _enqueue(self, agent: Any, cid: str, body: dict[str, Any]) -> asyncio.Future[Outcome]:
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        _, queue = self._queues.setdefault(id(agent), (agent, {}))
        queue.setdefault(cid, _Queued(body, ASKING.get())).futures.append(future)
        self._arrivals += 1
        self._changed.set()
        if self._collector is None or self._collector.done():
            self._collector = asyncio.create_task(self._collect())
        return future

    def _client(self, agent: Any) -> Any:
        client = self._clients.get(id(agent))
        if client is None:
            client = self._clients[id(agent)] = batch_client(agent)
        return client

    # -- collecting and sending ----------------------------------------------------------
    async def _collect(self) -> None:
        while self._queues:
            await self._quiesce()
            queues, self._queues = self._queues, {}
            self._queued.clear()
            for agent, queue in queues.values():
                await self._send(agent, queue)

    async def _quiesce(self) -> None:
        """Return when every playing match waits on the hub, or after :attr:`quiet`
        seconds without a new request."""
        while True:
            before = self._arrivals
            for _ in range(SETTLE_TURNS):
                await asyncio.sleep(0)
            if self._arrivals != before:
                continue
            if self._everyone_waits():
                return
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), self.quiet)
            except TimeoutError:
                return

    async def _send(self, agent: Any, queue: dict[str, _Queued]) -> None:
        client = self._client(agent)
        for chunk in _split(queue, client):
            tag = uuid.uuid4().hex
            lines = [client.line(cid, queue[cid].body) for cid in chunk]
            items = [(cid, *(queue[cid].ask or (None, None))) for cid in chunk]
            self.ledger.submitting(tag, provider=client.name, agent=agent.name,
                                   model=agent.model, items=items)
            running = _Running(tag, None, time.time(),
                               {cid: queue[cid].futures for cid in chunk})
            try:
                batch_id = await client.submit(lines, tag)
            except Exception as exc:  # noqa: BLE001 - every request learns why, and retries
                reason = scrub(agent._key.scrub(f"the batch could not be sent: {exc}"))  # noqa: SLF001
                self.ledger.ended(tag, "failed", {}, reason)
                _answer(running.waiters, {}, reason)
                continue
            self.ledger.created(tag, batch_id)
            self.sent += 1
            running.batch_id = batch_id
            self._running[tag] = running
            self._spawn(self._poll(agent, running, agent.batch_poll))
            self._report()

    def _start_polling(self, agent: Any, tag: str, batch_id: str, first: float) -> _Running:
        running = self._running[tag] = _Running(tag, batch_id, time.time())
        self._spawn(self._poll(agent, running, first))
        self._report()
        return running

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _poll(self, agent: Any, running: _Running, first: float) -> None:
        """Poll one batch with a doubling interval; answer its requests when it ends.

        Two counts that never reset each other: status calls failing in a row (reset by a
        status call that answers), and failed reads of an ended batch's results (reset by
        nothing: the batch has ended, and a status call answering says nothing about its
        results file; resetting that count on it let one bad file be polled for good)."""
        client = self._client(agent)
        delay, pause = first, max(agent.batch_poll, 0.01)
        failures = unreadable = 0
        warned: set[str] = set()
        while True:
            if delay:
                await asyncio.sleep(delay)
            delay = min(max(delay, pause) * 2, MAX_POLL_S) if delay else pause
            try:
                status, batch = await client.state(running.batch_id)
            except Exception as exc:  # noqa: BLE001 - a poll that fails is tried again later
                failures += 1
                said = scrub(agent._key.scrub(str(exc)))  # noqa: SLF001
                if failures < MAX_POLL_FAILURES:
                    self._say(agent, f"polling batch {running.batch_id} failed; trying again: {said}")
                    continue
                self._give_up(agent, running, f"polling batch {running.batch_id} failed {failures} "
                              f"times in a row: {said}")
                return
            failures = 0
            if status not in client.ended_states:
                if status not in client.pending_states and status not in warned:
                    warned.add(status)
                    self._say(agent, f"batch {running.batch_id} has the status {status[:60]!r}, "
                              "which coop-tui does not know; it counts as pending and is polled "
                              "on (nothing is sent again while it may still complete)")
                self._report()  # the oldest pending batch's age moves on
                continue
            try:
                status, results, reason = await client.results(
                    batch, getattr(agent, "max_answer_chars", DEFAULT_MAX_ANSWER_CHARS),
                    self.ledger.requests(running.tag))
            except Exception as exc:  # noqa: BLE001 - the file is read again, a few times
                unreadable += 1
                said = scrub(agent._key.scrub(str(exc)))  # noqa: SLF001
                if unreadable < MAX_RESULT_FAILURES:
                    self._say(agent, f"reading the results of batch {running.batch_id} failed; "
                              f"trying again: {said}")
                    continue
                status, results = "unreadable", ResultLines()
                reason = (f"the results of batch {running.batch_id} could not be read "
                          f"({unreadable} tries): {said}")
            self._end(agent, running, status, results, reason)
            return

    def _end(self, agent: Any, running: _Running, status: str, results: ResultLines,
             reason: str | None) -> None:
        """The batch ended: its answers stored and handed out; a request without one gets
        the batch's reason, or what was wrong in its results file."""
        for warning in results.warnings():
            self._say(agent, f"batch {running.batch_id}: {warning}")
        reason = reason or results.missing_reason()
        self.ledger.ended(running.tag, status, results.outcomes, reason)
        self._running.pop(running.tag, None)
        self.done += 1
        _answer(running.waiters, results.outcomes, reason)
        self._report()

    def _give_up(self, agent: Any, running: _Running, said: str) -> None:
        """Stop polling a batch whose state cannot be learnt. It may still complete, so
        its requests are not sent again: they fail (not to be retried in this process),
        and the ledger keeps the batch pending, so ``--resume`` polls it again."""
        self._say(agent, said)
        self._running.pop(running.tag, None)
        _answer(running.waiters, {}, None, final=Outcome(
            error=f"{said}; the batch may still complete, so its requests are not sent again "
                  "(--resume polls it)", retryable=False))
        self._report()

    @staticmethod
    def _say(agent: Any, message: str) -> None:
        log.warning("%s: %s", agent.name, message)

    def _report(self) -> None:
        if callable(self.notify):
            now = time.time()
            ages = [now - r.started for r in self._running.values()]
            self.notify(len(self._running), self.done, max(ages, default=0.0))

    async def aclose(self) -> None:
        """Stop polling (the batches stay with the provider; ``--resume`` polls them)."""
        for task in [*self._tasks, *([self._collector] if self._collector else [])]:
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for client in self._clients.values():
            with contextlib.suppress(Exception):
                await client.aclose()


def _answer(waiters: dict[str, list[asyncio.Future[Outcome]]], results: dict[str, Outcome],
            reason: str | None, final: Outcome | None = None) -> None:
    for cid, futures in waiters.items():
        outcome = final or results.get(cid) or Outcome(
            error=reason or "the batch ended without a result for this request")
        for future in futures:
            if not future.done():
                future.set_result(outcome)


def _split(queue: dict[str, _Queued], client: Any) -> list[list[str]]:
    """The queue's ids in chunks within the provider's request and size limits."""
    chunks: list[list[str]] = [[]]
    size = 0
    for cid, item in queue.items():
        length = len(json.dumps(client.line(cid, item.body))) + 1
        if chunks[-1] and (len(chunks[-1]) >= client.max_requests
                           or size + length > client.max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append(cid)
        size += length
    return [c for c in chunks if c]
