"""SQLite storage: the single source of truth for runs, matches and decisions.

The schema grows through the ordered list of small migration functions in
:mod:`coop_tui.migrations`, applied when the store opens a database. The store listens
to engine events and writes each finished decision as one row in its own transaction,
so a ``kill -9`` loses at most the decisions that were still in flight — which a resume
then asks again.
WAL mode lets the TUI read while a batch writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from coop_tui import summaries
from coop_tui.database import (
    BUSY_TIMEOUT,
    Database,
    check_database_path,
    create_private,
    immediate,
    use_wal,
)
from coop_tui.decisions import Attempt, Decision
from coop_tui.errors import SpecError, failure_reason
from coop_tui.events import (
    DecisionDone,
    DirectDecisions,
    DirectRounds,
    Event,
    MatchDone,
    MatchStarted,
    PhaseDone,
    ReasoningDelta,
    RoundDone,
    RunDone,
    RunStarted,
    TextDelta,
)
from coop_tui.hashing import text_hash

# the schema's history lives in coop_tui.migrations; these names stay importable from here
from coop_tui.migrations import DUPLICATE_KEY as DUPLICATE_KEY
from coop_tui.migrations import MIGRATIONS as MIGRATIONS
from coop_tui.migrations import PAPER_MODELS as PAPER_MODELS
from coop_tui.migrations import Migration as Migration
from coop_tui.migrations import applied_migrations, apply_migrations, check_not_newer
from coop_tui.migrations import migration as migration
from coop_tui.redact import scrub

DB_ENV = "COOP_TUI_DB"
LEASE_STALE_S = 60.0
"""A lease not renewed for this long belongs to a process that is gone or hung (the
sweep renews it every few seconds). ``--resume`` takes such a lease over, and ``watch``
calls its sweep gone: both read liveness from :func:`lease_alive`."""


def default_db_path() -> Path:
    """``$COOP_TUI_DB``, else the user data directory (XDG on Linux)."""
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "coop-tui" / "coop-tui.db"


def lease_alive(pid: Any, host: Any, heartbeat: Any, *, now: float | None = None,
                stale_after: float = LEASE_STALE_S) -> bool:
    """Whether a lease row belongs to a process that still plays its run: a recent
    heartbeat, and on this host a running pid. The heartbeat comes first because a pid is
    reused (a killed sweep's number may belong to any process a minute later) and says
    nothing on another host that shares the database file."""
    now = time.time() if now is None else now
    try:
        fresh = now - float(heartbeat or 0) <= stale_after
        mine = str(host) == socket.gethostname()
        return fresh and (not mine or process_alive(int(pid)))
    except (TypeError, ValueError):  # a row no sweep wrote: nobody holds it
        return False


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (zombies count as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# ----------------------------------------------------------------- the store
def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


class AnswerRuleError(ValueError):
    """A decision with answer text that is neither parsed nor invalid with its reason: the
    store refuses to write it (a valid decision must carry what was read from its answer,
    an invalid one why it is invalid). Raised by every decision write path, so no writer
    (the engine, a re-ask, an importer) can store one."""


def answer_problem(response: str | None, parsed: Any, valid: Any, error: str | None) -> str | None:
    """What is wrong with a decision under the answer rule, or None (the rule's SQL form
    is :func:`coop_tui.migrations.answer_rule_broken`)."""
    if not response:
        return None
    if valid and parsed is None:
        return ("the answer is stored valid but was not parsed; parse it or store it invalid "
                "(valid = False) with the reason in error")
    if not valid and not error:
        return "the answer is stored invalid without a reason; say why in error"
    return None


DISTRIBUTION_TOLERANCE = 1e-6
"""How far a stored mixed strategy's probabilities may sum from 1 (float rounding)."""


def distribution_problem(d: Decision) -> str | None:
    """What is wrong with a valid mixed answer's distribution, or None: its keys must be
    its labels, each a probability, summing to 1. An importer that misread a prompt's
    labels (CoopEval's retry prompts echo the rejected answer, whose words look like the
    prompt's) would otherwise store a valid decision no analysis can trust."""
    parsed = d.parsed
    if not d.valid or d.kind != "mixed" or type(parsed) is not dict:
        return None
    if d.labels and len(parsed) != len(d.labels):
        return (f"the distribution has {len(parsed)} entries for {len(d.labels)} labels; "
                "store it invalid with the reason in error")
    total = 0.0
    for value in parsed.values():
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0 + DISTRIBUTION_TOLERANCE:
            return f"the distribution holds {value!r}, not a probability"
        total += value
    if abs(total - 1.0) > DISTRIBUTION_TOLERANCE:
        return (f"the distribution sums to {total:g}, not 1, over its labels; store it "
                "invalid with the reason in error")
    return None


def _where(d: Decision) -> str:
    return f"decision of {d.agent} in match {d.match_id}, round {d.round}, phase {d.phase}"


def decision_row(d: Decision) -> dict[str, Any]:
    if problem := answer_problem(d.response, d.parsed, d.valid, d.error) or distribution_problem(d):
        raise AnswerRuleError(f"{_where(d)}: {problem}")
    return {
        "match_id": d.match_id,
        "round": d.round,
        "phase": d.phase,
        "seat": d.seat,
        "kind": d.kind,
        "agent": d.agent,
        "prompt": _json(d.prompt),
        "response": d.response,
        "reasoning": d.reasoning,
        "answer": d.answer,
        "parsed": _json(d.parsed),
        "valid": int(d.valid),
        "attempts": d.attempts,
        "error": d.error,
        "normalisation": d.normalisation,
        "labels": _json(list(d.labels)),
        "label_map": _json(list(d.label_to_action)),
        "distribution": _json(list(d.distribution) if d.distribution is not None else None),
        "action": d.action,
        "coop_prob": d.coop_prob,
        "cooperated": None if d.cooperated is None else int(d.cooperated),
        "constrained": int(d.constrained),
        "latency_ms": d.latency_ms,
        "input_tokens": d.input_tokens,
        "output_tokens": d.output_tokens,
        "cost_usd": d.cost_usd,
        "transport_retries": d.transport_retries,
        "queue_ms": d.queue_ms,
        "retries": _json([a.__dict__ for a in d.retries]),
        "reused": int(d.reused),
        "cache_key": d.cache_key,
        "content_key": d.content_key,
        "created_at": d.created_at or time.time(),
        "options": _json(_stored_options(d)) if d.options else None,
    }


DECISION_COLUMNS: tuple[str, ...] = (
    "match_id", "round", "phase", "seat", "kind", "agent", "prompt", "response", "reasoning",
    "answer", "parsed", "valid", "attempts", "error", "normalisation", "labels", "label_map",
    "distribution", "action", "coop_prob", "cooperated", "constrained", "latency_ms",
    "input_tokens", "output_tokens", "cost_usd", "transport_retries", "retries", "reused",
    "cache_key", "content_key", "created_at", "prompt_hash", "queue_ms", "options",
)
PROMPT_AT = DECISION_COLUMNS.index("prompt")
HASH_AT = DECISION_COLUMNS.index("prompt_hash")
INSERT_DECISION = (
    f"insert or ignore into decisions ({', '.join(DECISION_COLUMNS)})"
    f" values ({', '.join('?' * len(DECISION_COLUMNS))})"
)
REPLACE_DECISION = (
    f"insert into decisions ({', '.join(DECISION_COLUMNS)})"
    f" values ({', '.join('?' * len(DECISION_COLUMNS))})"
    " on conflict(cache_key) where cache_key is not null do update set "
    + ", ".join(f"{c} = excluded.{c}" for c in DECISION_COLUMNS if c != "cache_key")
)
"""A decision asked again on resume (the stored one had no usable answer): the new
answer takes the old row's place, keeping its id (judgements and links stay valid)."""


_JSON_CACHE: dict[tuple[Any, ...], str] = {}


def _small_json(key: tuple[Any, ...], value: Any) -> str:
    """JSON of a small value that repeats across decisions (labels, a strategy's
    distribution), encoded once."""
    try:
        return _JSON_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable part: encode it every time
        return json.dumps(value, default=str)
    if len(_JSON_CACHE) > 4096:
        _JSON_CACHE.clear()
    text = _JSON_CACHE[key] = json.dumps(value, default=str)
    return text


def decision_values(d: Decision) -> list[Any]:
    """:func:`decision_row` as a list in :data:`DECISION_COLUMNS` order (the hot write
    path), the prompt still inline as JSON (None when there is none) and no hash yet."""
    dumps = json.dumps
    parsed = d.parsed
    if problem := answer_problem(d.response, parsed, d.valid, d.error) or distribution_problem(d):
        raise AnswerRuleError(f"{_where(d)}: {problem}")
    if parsed is None:
        parsed_json = None
    elif type(parsed) is dict and len(parsed) <= 8:
        parsed_json = _small_json(("p", *parsed.items()), parsed)
    else:
        parsed_json = dumps(parsed, default=str)
    return [
        d.match_id, d.round, d.phase, d.seat, d.kind, d.agent,
        dumps(d.prompt, default=str) if d.prompt else None,
        d.response, d.reasoning, d.answer, parsed_json,
        int(d.valid), d.attempts, d.error, d.normalisation,
        _small_json(("l", *d.labels), list(d.labels)),
        _small_json(("m", *d.label_to_action), list(d.label_to_action)),
        None if d.distribution is None else _small_json(("d", *d.distribution), list(d.distribution)),
        d.action, d.coop_prob, None if d.cooperated is None else int(d.cooperated),
        int(d.constrained), d.latency_ms, d.input_tokens, d.output_tokens, d.cost_usd,
        d.transport_retries,
        dumps([a.__dict__ for a in d.retries], default=str) if d.retries else "[]",
        int(d.reused), d.cache_key, d.content_key, d.created_at or time.time(), None,
        d.queue_ms,
        dumps(_stored_options(d), default=str) if d.options else None,
    ]


def _stored_options(d: Decision) -> dict[str, Any]:
    """The options column: the request's options, plus a combined move-and-leave
    answer's ``leave`` (super-additive cooperation), which has no column of its own."""
    return d.options if d.leave is None else {**d.options, "leave": d.leave}


def decision_from_row(row: dict[str, Any]) -> Decision:
    def load(key: str) -> Any:
        raw = row.get(key)
        return None if raw is None else json.loads(raw)

    dist = load("distribution")
    options = load("options") or {}
    leave = options.pop("leave", None) if options.get("ask_leave") else None
    return Decision(
        match_id=row["match_id"],
        round=row["round"],
        phase=row["phase"],
        seat=row["seat"],
        kind=row["kind"],
        agent=row["agent"],
        prompt=json.loads(row["prompt_text"]) if row.get("prompt_text") else (load("prompt") or []),
        response=row["response"] or "",
        reasoning=row["reasoning"] or "",
        parsed=load("parsed"),
        valid=bool(row["valid"]),
        attempts=row["attempts"],
        error=row["error"],
        cache_key=row["cache_key"],
        content_key=row["content_key"],
        labels=tuple(load("labels") or ()),
        label_to_action=tuple(load("label_map") or ()),
        distribution=None if dist is None else tuple(dist),
        action=row["action"],
        normalisation=row["normalisation"],
        answer=row["answer"],
        constrained=bool(row["constrained"]),
        latency_ms=row["latency_ms"] or 0.0,
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        transport_retries=row["transport_retries"] or 0,
        queue_ms=row.get("queue_ms"),
        retries=[Attempt(**a) for a in (load("retries") or [])],
        reused=bool(row["reused"]),
        coop_prob=row["coop_prob"],
        cooperated=None if row["cooperated"] is None else bool(row["cooperated"]),
        created_at=row["created_at"] or 0.0,
        options=options,
        leave=leave,
    )


CHEAP_KINDS = frozenset({"strategy"})
"""Agent kinds whose decisions cost nothing and are recomputed identically on a replay:
a match with only such seats is written in one transaction when it ends."""

DECISION_SELECT = (
    "select d.*, t.text as prompt_text from decisions d"
    " left join texts t on t.hash = d.prompt_hash"
)
"""Decision rows with their prompt text (content-addressed or, in old rows, inline)."""

PROMPT_SQL = "coalesce((select t.text from texts t where t.hash = d.prompt_hash), d.prompt)"
"""A decision's prompt JSON in SQL, for a query over ``decisions d``."""


def game_spec_sql(alias: str = "matches") -> str:
    """A match's game spec JSON in SQL (``alias`` names the matches table in the query):
    the referenced one in ``game_specs``, else an inline one from before m130."""
    return (f"coalesce((select g.spec from game_specs g where g.hash = {alias}.game_spec_hash),"
            f" {alias}.game_spec)")


GAME_SPEC_MIN = "min(game_spec_hash) as _spec_hash, min(game_spec) as _spec_inline"
"""One game spec of a group of matches, as two aggregate columns; an enclosing query
turns them into the JSON with :data:`GAME_SPEC_OF_GROUP` (SQLite refuses an aggregate
inside a correlated subquery)."""
GAME_SPEC_OF_GROUP = (
    "coalesce((select g.spec from game_specs g where g.hash = _spec_hash), _spec_inline)"
)


def intern_game_specs(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Move each match row's inline ``game_spec`` JSON to ``game_specs`` (once per distinct
    spec) and reference it by hash, in place, before the rows are inserted."""
    known: dict[str, str] = {}
    for row in rows:
        spec = row.pop("game_spec", None)
        if spec is None:
            row["game_spec_hash"] = None
            continue
        digest = known.get(spec)
        if digest is None:
            digest = known[spec] = text_hash(spec)
            conn.execute("insert or ignore into game_specs (hash, spec) values (?, ?)", [digest, spec])
        row["game_spec_hash"] = digest


def delete_judged_links(conn: sqlite3.Connection, run_id: str) -> int:
    """Drop the links (and labels) of judgements of ``run_id``'s decisions, whose rows are
    about to go (the run deleted, or replaced by a re-import): a link must never point at
    a decision that is not there. The judge runs keep their own decisions. Returns how
    many links went."""
    if "judgements" not in {r[0] for r in conn.execute("select name from sqlite_master")}:
        return 0
    conn.execute(
        "delete from judgement_labels where judge_decision_id in"
        " (select judge_decision_id from judgements where judged_run_id = ?)", [run_id])
    return conn.execute("delete from judgements where judged_run_id = ?", [run_id]).rowcount



def insert_decisions(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert decision rows given as column dicts (an importer's :func:`decision_row`
    rows, or its own), each checked against the answer rule first: nothing is written
    when one breaks it (raise inside the importer's transaction)."""
    if not rows:
        return
    for row in rows:
        if problem := answer_problem(row.get("response"), row.get("parsed"), row.get("valid"),
                                     row.get("error")):
            raise AnswerRuleError(
                f"decision of {row.get('agent')} in match {row.get('match_id')}: {problem}")
    cols = list(rows[0])
    sql = f"insert into decisions ({', '.join(cols)}) values ({', '.join('?' for _ in cols)})"
    conn.executemany(sql, [[r[c] for c in cols] for r in rows])


DIRECT_COLUMNS: dict[str, str] = {
    "match_id": "?", "round": "?", "phase": "'play'", "seat": "?", "kind": "'mixed'",
    "agent": "?", "response": "?", "reasoning": "''", "parsed": "?", "valid": "1",
    "attempts": "1", "normalisation": "?", "labels": "?", "label_map": "?",
    "distribution": "?", "action": "?", "coop_prob": "?", "cooperated": "?",
    "constrained": "0", "latency_ms": "?", "input_tokens": "0", "output_tokens": "0",
    "cost_usd": "0.0", "transport_retries": "0", "retries": "'[]'", "reused": "0",
    "created_at": "?",
}
"""A strategy play decision's row (:class:`DirectDecisions`): the same values
:func:`decision_values` writes for it, the fixed ones as SQL literals (columns left out
are NULL there too: prompt, answer, error, keys, queue, options)."""
INSERT_DIRECT = (
    f"insert into decisions ({', '.join(DIRECT_COLUMNS)}) values ({', '.join(DIRECT_COLUMNS.values())})"
)


def direct_values(events: list[DirectDecisions]) -> list[tuple[Any, ...]]:
    """The ``?`` values of :data:`INSERT_DIRECT` for strategy rounds, in order; each
    distinct answer is encoded once (rows share their answer tuple)."""
    out: list[tuple[Any, ...]] = []
    append = out.append
    encoded: dict[int, tuple[Any, ...]] = {}  # by id: every answer is alive during the call
    for e in events:
        match_id, rnd, created = e.match_id, e.round, e.created_at
        for seat, agent, latency_ms, answer in e.rows:
            tail = encoded.get(id(answer))
            if tail is None:
                tail = encoded[id(answer)] = _direct_answer_values(answer)
            append((match_id, rnd, seat, agent, *tail, latency_ms, created))
    return out


def _direct_answer_values(answer: tuple[Any, ...]) -> tuple[Any, ...]:
    """response .. cooperated of :data:`INSERT_DIRECT`, encoded as :func:`decision_values`
    encodes them."""
    response, parsed, labels, mapping, dist, action, coop_prob, cooperated, note = answer
    # these rows are written valid: an answer text needs its parse (checked once per
    # distinct answer, as the encoding is)
    if problem := answer_problem(response, parsed, True, None):
        raise AnswerRuleError(f"a strategy's direct answer {response[:40]!r}: {problem}")
    if parsed is None:
        parsed_json = None
    elif type(parsed) is dict and len(parsed) <= 8:
        parsed_json = _small_json(("p", *parsed.items()), parsed)
    else:
        parsed_json = json.dumps(parsed, default=str)
    return (
        response, parsed_json, note, _small_json(("l", *labels), list(labels)),
        _small_json(("m", *mapping), list(mapping)),
        None if dist is None else _small_json(("d", *dist), list(dist)),
        action, coop_prob, None if cooperated is None else int(cooperated),
    )


PAGE_SIZE = 16384
"""Bytes per page of a new database (SQLite's default is 4096; an existing file keeps its
own). A sweep writes rows in bulk: with larger pages each commit writes a quarter as many
WAL frames (a strategy tournament's commits took a fifth less time, measured by
``benchmarks/bench_command.py``), and reads of whole matches touch fewer pages."""

GROUP_COMMIT_WINDOW = 0.05
"""Seconds the event writes of a running sweep gather before one commit (see
:meth:`Store._event_write`): short beside any model's answer, long enough that at high
concurrency one commit carries many answers."""


class Store:
    """One SQLite file. Writes come from events; reads serve resume, report and TUI."""

    accepts_direct_decisions = True
    """Reads :class:`DirectDecisions` (strategy rounds as one event)."""
    accepts_direct_rounds = True
    """Reads :class:`DirectRounds` (a strategy-only match's rounds as one event)."""

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise FileNotFoundError(f"no database at {self.path}")
        check_database_path(self.path)  # every command opens its database here
        self.path.parent.mkdir(parents=True, exist_ok=True)
        create_private(self.path)
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=BUSY_TIMEOUT)
        try:  # before anything that writes (even WAL mode changes the file's header)
            check_not_newer(applied_migrations(conn))
        except BaseException:
            conn.close()
            raise
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file only: set before WAL mode
        use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        self.db = Database(conn)
        self.applied = apply_migrations(self.db)
        self._match_seats: dict[str, int] = {}
        self._match_runs: dict[str, str] = {}
        self._handlers: dict[type, Any] = {}
        self._batches: dict[str, _MatchBatch] = {}
        """Writes held back until the match ends, for matches of cheap seats only."""
        self._spec_hashes: dict[str, str] = {}
        """Game spec JSON -> hash, for specs already in ``game_specs`` (a few per run)."""
        self._folds = summaries.DirectFolds()
        """Finished strategy matches whose summary sums are written FOLD_EVERY at a time."""
        self._grouping = 0
        """Inside :meth:`grouped_commits` (nested uses counted)."""
        self._commit_scheduled = False
        """A commit of the window's event writes is scheduled (:meth:`_event_write`)."""
        self._commit_error: sqlite3.Error | None = None
        """A group commit that failed: every later event write raises it."""
        self._write_lock = threading.RLock()
        """One unit of writes at a time on the shared connection: the TUI's thread workers
        write too (deleting a run), and a commit from one thread must not land inside
        another's event write."""

    def close(self) -> None:
        reported = self._commit_error  # already raised to the run that wrote
        try:
            if self._commit_scheduled:
                self._commit_group()
            # on a failing database those matches stay done but unfolded: read live
            with suppress(sqlite3.Error):
                self.flush_folds()
        finally:
            self.db.conn.close()
        if self._commit_error is not None and self._commit_error is not reported:
            raise self._commit_error

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._own_transaction():
            yield

    # ------------------------------------------------------------ commits
    @contextmanager
    def grouped_commits(self) -> Iterator[None]:
        """While a sweep's matches play: event writes made on a running event loop join one
        transaction, committed :data:`GROUP_COMMIT_WINDOW` after its first write (group
        commit). At high concurrency many answers end within a few milliseconds, and a
        commit per event (a WAL write of every page it touched) was the biggest storage
        cost of a sweep. A process killed outright loses at most the window's writes,
        which ``--resume`` asks again; leaving this block, Ctrl-C and SIGTERM included,
        commits them. Elsewhere (a judge pass, a re-ask, imports, thread workers) every
        event commits at once."""
        self.begin_grouped_commits()
        try:
            yield
        finally:
            self.end_grouped_commits()

    def begin_grouped_commits(self) -> None:
        """:meth:`grouped_commits` for a block too long to indent (a sweep's run loop)."""
        self._grouping += 1

    def end_grouped_commits(self) -> None:
        """Leave :meth:`begin_grouped_commits`, committing the last window's writes (a
        failure is raised by the run's next write)."""
        self._grouping -= 1
        if not self._grouping and self._commit_scheduled:
            self._commit_group()

    @contextmanager
    def _event_write(self) -> Iterator[None]:
        """The writes of one event: committed at once, or inside :meth:`grouped_commits`
        with the window's other writes, a savepoint keeping a failing event's writes out
        of the group."""
        with self._write_lock:
            if self._commit_error is not None:
                raise self._commit_error
            loop = None
            if self._grouping:
                with suppress(RuntimeError):
                    loop = asyncio.get_running_loop()
            if loop is None:
                with immediate(self.db.conn):
                    yield
                return
            conn = self.db.conn
            if not conn.in_transaction:  # the write lock from here to the window's commit
                conn.execute("begin immediate")
            conn.execute("savepoint event")
            try:
                yield
            except BaseException:
                if conn.in_transaction:  # SQLite itself rolls back everything on some errors
                    with suppress(sqlite3.Error):
                        conn.execute("rollback to event")
                        conn.execute("release event")
                raise
            conn.execute("release event")
            if not self._commit_scheduled:
                self._commit_scheduled = True
                loop.call_later(GROUP_COMMIT_WINDOW, self._commit_group)

    def _commit_group(self) -> None:
        """Commit the window's event writes. A failure is kept and raised by every later
        event write, so the run fails instead of going on past writes that were lost
        (nothing written after them could then claim a match whose rows are missing)."""
        with self._write_lock:
            self._commit_scheduled = False
            try:
                if self.db.conn.in_transaction:
                    self.db.conn.commit()
            except sqlite3.ProgrammingError:
                pass  # closed in the meantime: close() committed what there was
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    self.db.conn.rollback()
                self._commit_error = exc

    def commit_pending(self) -> None:
        """Commit event writes still waiting for the end of their window (readers on other
        connections, or other processes, see them from then on)."""
        if self._commit_scheduled:
            self._commit_group()
        if self._commit_error is not None:
            raise self._commit_error

    @contextmanager
    def _own_transaction(self) -> Iterator[None]:
        """A write outside the events' group (runs, leases, deletes): pending event writes
        are committed first, so a failure here cannot roll them back."""
        with self._write_lock:
            self.commit_pending()
            with immediate(self.db.conn):
                yield

    # ------------------------------------------------------------ runs
    def create_run(
        self, run_id: str, name: str, *, kind: str, seed: int, sweep_hash: str, spec: dict[str, Any],
        inputs: dict[str, str] | None = None, shard: str | None = None,
        sources: dict[str, dict[str, str]] | None = None,
    ) -> None:
        row = {
            "id": run_id,
            "name": name,
            "kind": kind,
            "status": "running",
            "seed": seed,
            "sweep_hash": sweep_hash,
            "spec": json.dumps(spec, default=str),
            "created_at": time.time(),
            "finished_at": None,
            "error": None,
            "inputs": json.dumps(inputs, sort_keys=True) if inputs else None,
            "shard": shard,
            "sources": json.dumps(sources, sort_keys=True) if sources else None,
        }
        # plain SQL: sqlite-utils' insert would import it (and pandas) into every batch
        with self._own_transaction():
            self.db.conn.execute(
                f"insert into runs ({', '.join(row)}) values ({', '.join('?' for _ in row)})",
                list(row.values()),
            )

    def set_run_status(self, run_id: str, status: str, error: str | None = None) -> None:
        with self._own_transaction():
            self.db.conn.execute(
                "update runs set status = ?, finished_at = ?, error = ? where id = ?",
                [status, time.time(), scrub(error), run_id],
            )

    # ------------------------------------------------------------ run leases (one writer)
    def take_lease(self, run_id: str, token: str, *, stale_after: float) -> dict[str, Any] | None:
        """Take the run's lease for this process; the live holder's row when refused.

        Atomic (``BEGIN IMMEDIATE``): two processes starting together cannot both win.
        A lease is live when its heartbeat is recent and, on this host, its pid runs.
        """

        host, pid, now = socket.gethostname(), os.getpid(), time.time()
        # Its own short connection: BEGIN IMMEDIATE on the shared one could commit another
        # thread's half-done transaction (the TUI reads and writes from workers).
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            conn.execute("begin immediate")
            row = conn.execute(
                "select pid, host, heartbeat, token from run_leases where run_id = ?", [run_id]
            ).fetchone()
            if row is not None and row[3] != token and lease_alive(
                    row[0], row[1], row[2], now=now, stale_after=stale_after):
                conn.execute("rollback")
                return {"pid": row[0], "host": row[1], "heartbeat": row[2]}
            conn.execute(
                "insert or replace into run_leases (run_id, pid, host, token, heartbeat, taken_at)"
                " values (?, ?, ?, ?, ?, ?)",
                [run_id, pid, host, token, now, now],
            )
            conn.execute("commit")
        except BaseException:
            if conn.in_transaction:
                conn.execute("rollback")
            raise
        finally:
            conn.close()
        return None

    def renew_lease(self, run_id: str, token: str) -> None:
        with self._own_transaction():
            self.db.conn.execute(
                "update run_leases set heartbeat = ? where run_id = ? and token = ?",
                [time.time(), run_id, token],
            )

    def release_lease(self, run_id: str, token: str) -> None:
        with self._own_transaction():
            self.db.conn.execute(
                "delete from run_leases where run_id = ? and token = ?", [run_id, token]
            )

    def record_channel(self, run_id: str, channel: str, plan: dict[str, Any]) -> None:
        """Name this process's watch channel (and the run's plan) in the lease it holds."""
        with self._own_transaction():
            self.db.conn.execute(
                "update run_leases set channel = ?, plan = ? where run_id = ? and pid = ?"
                " and host = ?",
                [channel, json.dumps(plan), run_id, os.getpid(), socket.gethostname()],
            )

    def lease(self, run_id: str) -> dict[str, Any] | None:
        """The run's lease row (pid, host, heartbeat, channel, plan), None when no process
        holds it; ``alive`` says whether its process still plays it (:func:`lease_alive`:
        the heartbeat, and on this host the pid), ``here`` whether it runs on this host
        (only then can its socket be reached)."""
        row = self.db.execute(
            "select pid, host, heartbeat, channel, plan from run_leases where run_id = ?", [run_id]
        ).fetchone()
        if row is None:
            return None
        pid, host, heartbeat, channel, plan = row
        try:
            plan_data = json.loads(plan) if plan else {}
        except ValueError:
            plan_data = {}
        return {"pid": pid, "host": host, "heartbeat": heartbeat, "channel": channel or "",
                "plan": plan_data if isinstance(plan_data, dict) else {},
                "alive": lease_alive(pid, host, heartbeat),
                "here": str(host) == socket.gethostname()}

    def live_runs(self) -> set[str]:
        """Runs a live process is playing and publishing (a lease naming a channel)."""
        rows = self.db.execute(
            "select run_id, pid, host, heartbeat from run_leases"
            " where coalesce(channel, '') != ''"
        ).fetchall()
        return {run_id for run_id, pid, host, beat in rows if lease_alive(pid, host, beat)}

    def running_run(self) -> dict[str, Any] | None:
        """The newest run whose status is still ``running`` (what ``watch`` attaches to)."""
        rows = list(self.db.query(
            "select * from runs where status = 'running' order by created_at desc limit 1"))
        return rows[0] if rows else None

    def watch_snapshot(self, run_id: str, models: list[str], *, curve_points: int = 400
                       ) -> dict[str, Any]:
        """A running run's state so far, for a watcher that attaches late: per experiment
        the matches by status and the decisions' counts, the cooperation per condition,
        the running matches, and the last ``curve_points`` finished matches' cooperation
        (for the curve). Aggregates over the run's indexes, a bounded number of rows out."""
        marks = ",".join("?" * len(models)) or "''"
        statuses = self.db.execute(
            "select experiment, status, count(*) from matches where run_id = ?"
            " group by experiment, status", [run_id]).fetchall()
        decisions = self.db.execute(
            "select m.experiment, count(*), sum(d.valid = 0), sum(max(d.attempts - 1, 0)"
            " + coalesce(d.transport_retries, 0)), sum(case when d.reused = 0 then"
            f" coalesce(d.cost_usd, 0) else 0 end), sum(d.agent in ({marks}))"
            " from decisions d join matches m on m.id = d.match_id where m.run_id = ?"
            " group by m.experiment", [*models, run_id]).fetchall()
        cooperation = self.db.execute(
            "select m.experiment, m.condition_key, min(m.game), min(m.mechanism),"
            " min(m.condition), sum(d.cooperated), count(d.cooperated)"
            " from decisions d join matches m on m.id = d.match_id"
            " where m.run_id = ? and d.cooperated is not null"
            " group by m.experiment, m.condition_key", [run_id]).fetchall()
        running = list(self.db.query(
            "select m.id, m.experiment, m.game, m.mechanism, m.condition, m.condition_key,"
            " m.started_at, (select group_concat(agent, ' vs ') from seats s"
            " where s.match_id = m.id) as agents from matches m"
            " where m.run_id = ? and m.status = 'running' order by m.started_at limit 200",
            [run_id]))
        curve = self.db.execute(
            "select * from (select m.experiment, m.condition_key, m.finished_at,"
            " (select avg(d.cooperated) from decisions d where d.match_id = m.id"
            " and d.cooperated is not null) from matches m where m.run_id = ?"
            " and m.status = 'done' order by m.finished_at desc limit ?)"
            " order by finished_at", [run_id, curve_points]).fetchall()
        return {"statuses": statuses, "decisions": decisions, "cooperation": cooperation,
                "running": running, "curve": curve}

    def failure_groups(self, run_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
        """A run's failed matches by reason: ``[{reason, count, example}]``, most first."""
        groups: dict[str, dict[str, Any]] = {}
        rows = self.db.execute(
            "select reason, count(*), min(error) from failures where run_id = ?"
            " group by reason, case when reason is null then error end",
            [run_id],
        ).fetchall()
        for reason, n, example in rows:
            key = reason or failure_reason(example)
            entry = groups.setdefault(key, {"reason": key, "count": 0, "example": scrub(example)})
            entry["count"] += n
        ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["reason"]))
        return ordered[:limit]

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        return rows[0] if rows else None

    def runs(self) -> list[dict[str, Any]]:
        return list(self.db.query("select * from runs order by created_at desc"))

    def latest_run(self, name: str | None = None, sweep_hash: str | None = None) -> dict[str, Any] | None:
        where, args = [], []
        if name is not None:
            where.append("name = ?")
            args.append(name)
        if sweep_hash is not None:
            where.append("sweep_hash = ?")
            args.append(sweep_hash)
        sql = "select * from runs" + (" where " + " and ".join(where) if where else "")
        rows = list(self.db.query(sql + " order by created_at desc limit 1", args))
        return rows[0] if rows else None

    def latest_sweep_run(self, name: str, shard: str | None) -> dict[str, Any] | None:
        """The latest run of the sweep ``name`` that played the same slice (``"K/N"``, or
        None for the whole sweep): what ``--resume`` continues. Each slice resumes its
        own run, even when several slices share one database."""
        rows = list(self.db.query(
            "select * from runs where name = ? and shard is ? order by created_at desc limit 1",
            [name, shard],
        ))
        return rows[0] if rows else None

    def run_cost(self, run_id: str) -> float:
        """What a run has spent so far (decisions asked in it; reused ones cost nothing)."""
        row = self.db.execute(
            "select coalesce(sum(d.cost_usd), 0) from decisions d join matches m"
            " on m.id = d.match_id where m.run_id = ? and d.reused = 0",
            [run_id],
        ).fetchone()
        return float(row[0])

    def resolve_run(self, ref: str | None) -> dict[str, Any] | None:
        """A run by id, id prefix or name; the latest run when ``ref`` is None. A prefix of
        several ids that names no run raises SpecError listing them: "no such run" would
        send the user looking for a run that is there."""
        if ref is None:
            return self.latest_run()
        run = self.run(ref)
        if run:
            return run
        rows = list(self.db.query("select * from runs where id like ? escape '\\'"
                                  " order by id limit 6", [like_escape(ref) + "%"])) if ref else []
        if len(rows) == 1:
            return rows[0]
        named = self.latest_run(name=ref)
        if named is not None or len(rows) < 2:
            return named
        shown = ", ".join(f"{r['id']} ({r['name']})" for r in rows[:5])
        more = " and more" if len(rows) > 5 else ""
        raise SpecError("run", f"{ref!r} is the start of several run ids: {shown}{more}; give "
                               "more of the id")

    def delete_run(self, run_id: str) -> None:
        self.flush_folds()
        with self._own_transaction():
            ids = "select id from matches where run_id = ?"
            # the run's prompt texts, to drop those no decision of another run shares
            self.db.execute("create temp table if not exists _dropped_texts (hash text primary key)")
            self.db.execute("delete from _dropped_texts")
            self.db.execute(
                "insert or ignore into _dropped_texts select d.prompt_hash from decisions d"
                f" where d.match_id in ({ids}) and d.prompt_hash is not null",
                [run_id],
            )
            for table in ("decisions", "rounds", "seats", "phases"):
                self.db.execute(f"delete from {table} where match_id in ({ids})", [run_id])
            self.db.execute("delete from failures where run_id = ?", [run_id])
            if "sp_trials" in self.db.table_names():  # an imported strategic personalities trial table
                self.db.execute("delete from sp_trials where run_id = ?", [run_id])
            self.db.execute(  # a judge run's links and labels (coop_tui.judging)
                "delete from judgement_labels where judge_decision_id in"
                " (select judge_decision_id from judgements where judge_run_id = ?)", [run_id])
            self.db.execute("delete from judgements where judge_run_id = ?", [run_id])
            self.db.execute("delete from section_results where run_id = ?", [run_id])
            delete_judged_links(self.db.conn, run_id)
            summaries.delete_run(self.db.conn, run_id)
            self.db.execute("delete from matches where run_id = ?", [run_id])
            self.db.execute("delete from runs where id = ?", [run_id])
            self.db.execute(
                "delete from game_specs where not exists"
                " (select 1 from matches m where m.game_spec_hash = game_specs.hash)"
            )
            self.db.execute(
                "delete from texts where hash in (select x.hash from _dropped_texts x where not"
                " exists (select 1 from decisions d where d.prompt_hash = x.hash))"
            )
            self.db.execute("delete from _dropped_texts")

    # ------------------------------------------------------------ matches
    def match_status(self, run_id: str) -> dict[str, str]:
        return {
            row["match_key"]: row["status"]
            for row in self.db.query(
                "select match_key, status from matches where run_id = ?", [run_id]
            )
        }

    def matches(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db.query(
            f"select *, {game_spec_sql()} as game_spec from matches where run_id = ? order by rowid",
            [run_id],
        ))

    def seats(self, match_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("select * from seats where match_id = ? order by seat", [match_id]))

    def decisions(self, match_id: str) -> list[Decision]:
        return [
            decision_from_row(r)
            for r in self.db.query(f"{DECISION_SELECT} where d.match_id = ? order by d.id", [match_id])
        ]

    def rounds(self, match_id: str) -> list[dict[str, Any]]:
        return list(
            self.db.query("select * from rounds where match_id = ? order by round, seat", [match_id])
        )

    # ------------------------------------------------------------ grounded similarity reads
    def benchmark_matches(self, run_id: str, agent: str, benchmark: str) -> list[str]:
        """Ids of ``agent``'s finished answer sheets to ``benchmark`` in a run (the agent in
        seat 0 of a benchmark match), in replicate and sample order."""
        rows = self.db.execute(
            "select m.id from matches m join seats s on s.match_id = m.id and s.seat = 0"
            " where m.run_id = ? and m.mechanism = 'benchmark' and s.agent = ? and m.status = 'done'"
            " and json_extract(m.condition, '$.benchmark') = ? order by m.replicate, m.sample",
            [run_id, agent, benchmark],
        ).fetchall()
        return [row[0] for row in rows]

    def phase_infos(self, match_id: str, phase: str) -> list[dict[str, Any]]:
        """The ``info`` of a match's phases of one kind, in round order."""
        rows = self.db.execute(
            "select info from phases where match_id = ? and phase = ? order by round", [match_id, phase]
        ).fetchall()
        return [json.loads(row[0] or "{}") for row in rows]

    def benchmark_answer_rows(self, run_id: str) -> list[tuple[str, int, int | None, str, str | None]]:
        """(condition, sample, replicate, agent, item-phase info) of every finished benchmark
        answer sheet of a run: the input of the exogenous similarity matrices."""
        return self.db.execute(
            "select m.condition, m.sample, m.replicate, s.agent, p.info from matches m"
            " join seats s on s.match_id = m.id and s.seat = 0"
            " join phases p on p.match_id = m.id and p.phase = 'item'"
            " where m.run_id = ? and m.mechanism = 'benchmark' and m.status = 'done'",
            [run_id],
        ).fetchall()

    def score_rows(self, run_id: str) -> list[tuple[str, str, str, str]]:
        """(condition, judge, target, parsed score) of every valid score a judge gave in a
        run's finished ``score`` matches: the input of the endogenous similarity matrices."""
        return self.db.execute(
            "select m.condition, j.agent, t.agent, d.parsed from matches m"
            " join seats j on j.match_id = m.id and j.seat = 0"
            " join seats t on t.match_id = m.id and t.seat = 1"
            " join decisions d on d.match_id = m.id and d.phase = 'score' and d.valid = 1"
            " where m.run_id = ? and m.mechanism = 'score' and m.status = 'done'",
            [run_id],
        ).fetchall()

    # ------------------------------------------------------------ lookups (engine cache)
    def _first_decision(self, sql: str, args: list[Any]) -> Decision | None:
        cursor = self.db.conn.execute(sql, args)
        row = cursor.fetchone()
        if row is None:
            return None
        return decision_from_row(dict(zip([c[0] for c in cursor.description], row, strict=True)))

    def find_decision(self, cache_key: str) -> Decision | None:
        return self._first_decision(f"{DECISION_SELECT} where d.cache_key = ? limit 1", [cache_key])

    def find_content(self, content_key: str) -> Decision | None:
        return self._first_decision(
            f"{DECISION_SELECT} where d.content_key = ? and d.valid = 1 order by d.id limit 1",
            [content_key],
        )

    # ------------------------------------------------------------ browsing (runs screen, inspector)
    def run_summaries(self, query: str = "", *, limit: int = 1000) -> list[dict[str, Any]]:
        """Every run, newest first, with its match / decision counts, cost and local date.

        ``query`` holds whitespace-separated terms that must all match (see
        :func:`search_clause`): plain words match any field; ``game:``, ``mech:``,
        ``agent:``, ``date:``, ``kind:``, ``status:``, ``name:`` and ``id:`` narrow a term.
        Decisions and cost come from ``match_totals`` for folded matches, and are counted
        only for the others (running, failed, not folded yet): no scan of a million rows.
        """
        where, args = search_clause(query, RUN_SEARCH)
        sql = f"""
            select r.id, r.name, r.kind, r.status, r.created_at, r.finished_at, r.error,
                   {RUN_DATE} as date,
                   coalesce(mc.n, 0) as matches,
                   coalesce(ft.n, 0) + coalesce(dc.n, 0) as decisions,
                   coalesce(ft.cost, 0.0) + coalesce(dc.cost, 0.0) as cost_usd
            from runs r
            left join (select run_id, count(*) as n from matches group by run_id) mc
                   on mc.run_id = r.id
            left join (select run_id, sum(decisions) as n, sum(cost_usd) as cost
                       from match_totals group by run_id) ft
                   on ft.run_id = r.id
            left join (select m.run_id, count(*) as n, sum(d.cost_usd) as cost
                       from matches m join decisions d on d.match_id = m.id
                       where not exists (select 1 from match_totals t where t.match_id = m.id)
                       group by m.run_id) dc
                   on dc.run_id = r.id
            {"where " + where if where else ""}
            order by r.created_at desc, r.id
            limit ?"""
        return list(self.db.query(sql, [*args, limit]))

    def match_summaries(
        self, run_id: str, query: str = "", *, limit: int = 5000
    ) -> list[dict[str, Any]]:
        """A run's matches in play order, with their seats' agents and decision counts."""
        where, args = search_clause(query, MATCH_SEARCH)
        sql = f"""
            select m.id, m.experiment, m.game, m.mechanism, m.condition, m.condition_key, m.matchup,
                   m.sample, m.status, m.error, m.payoffs, m.welfare, m.info,
                   (select group_concat(agent, ' · ')
                      from (select agent from seats where match_id = m.id order by seat))
                       as agents,
                   (select count(*) from decisions d where d.match_id = m.id) as decisions
            from matches m
            where m.run_id = ? {"and " + where if where else ""}
            order by m.rowid
            limit ?"""
        return list(self.db.query(sql, [run_id, *args, limit]))

    def match(self, match_id: str) -> dict[str, Any] | None:
        rows = list(self.db.query(
            f"select *, {game_spec_sql()} as game_spec from matches where id = ? limit 1", [match_id]
        ))
        return rows[0] if rows else None

    def decision_list(self, match_id: str) -> list[dict[str, Any]]:
        """One light row per decision of a match (no prompt or response text)."""
        return list(
            self.db.query(
                """select id, round, phase, seat, agent, kind, valid, attempts, action,
                          distribution, parsed, coop_prob, latency_ms, error, reused
                   from decisions where match_id = ? order by id""",
                [match_id],
            )
        )

    def get_decision(self, decision_id: int) -> Decision | None:
        rows = list(self.db.query(f"{DECISION_SELECT} where d.id = ?", [decision_id]))
        return decision_from_row(rows[0]) if rows else None

    def decision_id(self, cache_key: str) -> int | None:
        row = self.db.execute("select id from decisions where cache_key = ?", [cache_key]).fetchone()
        return None if row is None else int(row[0])

    def decision_id_of(self, decision: Decision) -> int | None:
        """The row id of a stored decision: by cache key, or for a strategy decision
        (which has none) by its match, round, phase and seat."""
        if decision.cache_key is not None:
            return self.decision_id(decision.cache_key)
        row = self.db.execute(
            "select id from decisions where match_id = ? and round = ? and phase = ?"
            " and seat = ? and cache_key is null order by id desc limit 1",
            [decision.match_id, decision.round, decision.phase, decision.seat],
        ).fetchone()
        return None if row is None else int(row[0])

    def reasks_of(self, decision_id: int) -> list[dict[str, Any]]:
        """Decisions re-asked from ``decision_id`` (see :mod:`coop_tui.reask`), oldest first."""
        return list(
            self.db.query(
                """select d.id, d.match_id, m.run_id, d.valid, d.action, d.created_at
                   from matches m join decisions d on d.match_id = m.id
                   where m.matchup = 'reask'
                     and json_extract(m.info, '$.reask_of.decision_id') = ?
                   order by d.id""",
                [decision_id],
            )
        )

    # ------------------------------------------------------------ event listener
    def __call__(self, event: Event) -> None:
        # Streamed text arrives dozens of times per decision and is stored once, with the
        # finished decision: skip it before any lookup.
        kind = type(event)
        try:
            handler = self._handlers[kind]
        except KeyError:
            handler = self._handlers[kind] = (
                None if issubclass(kind, TextDelta | ReasoningDelta)
                else getattr(self, f"_on_{kind.__name__}", None)
            )
        if handler is not None:
            handler(event)

    def _upsert(self, table: str, row: dict[str, Any], pk: tuple[str, ...]) -> None:
        """Insert a row or overwrite every given column of the existing one (plain SQL)."""
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in pk)
        self.db.conn.execute(
            f"insert into {table} ({cols}) values ({marks}) "
            f"on conflict({', '.join(pk)}) do update set {updates}",
            list(row.values()),
        )

    def _on_RunStarted(self, e: RunStarted) -> None:  # noqa: N802
        pass  # runs are created explicitly (they need the spec and kind)

    def _on_MatchStarted(self, e: MatchStarted) -> None:  # noqa: N802
        info = dict(e.info)
        agent_specs = info.pop("agent_specs", [{}] * len(e.seats))
        agent_kinds = info.pop("agent_kinds", [None] * len(e.seats))
        game_spec = info.pop("game_spec", None)
        spec_json = _json(game_spec)
        spec_hash = None
        if spec_json is not None:
            spec_hash = self._spec_hashes.get(spec_json)
            if spec_hash is None:
                if len(self._spec_hashes) > 64:
                    self._spec_hashes.clear()
                spec_hash = self._spec_hashes[spec_json] = text_hash(spec_json)
                with self._event_write():
                    self.db.conn.execute(
                        "insert or ignore into game_specs (hash, spec) values (?, ?)",
                        [spec_hash, spec_json],
                    )
        row = {
            "id": e.match_id,
            "run_id": e.run_id,
            "match_key": info.pop("match_key", e.match_id),
            "experiment": e.experiment,
            "game": e.game,
            "game_spec": None,  # stored once in game_specs (m130)
            "game_spec_hash": spec_hash,
            "mechanism": e.mechanism,
            "condition": json.dumps(e.condition, sort_keys=True),
            "condition_key": condition_key(e.condition),
            "similarity": e.condition.get("similarity"),
            "matchup": info.pop("matchup", None),
            "sample": e.sample,
            "replicate": int(info.pop("replicate", 0) or 0),
            "plan_index": info.pop("plan_index", None),
            "seed": e.seed,
            "status": "running",
            "error": None,
            "payoffs": None,
            "welfare": None,
            "info": _json(info),
            "started_at": time.time(),
            "finished_at": None,
        }
        if e.match_id in self._folds:  # played again before its fold was written
            self.flush_folds()
        with self._event_write():
            # A match played again leaves the summaries, and its strategy decisions of the
            # earlier attempt go: they are recomputed, identically, by this one.
            summaries.unfold(self.db.conn, e.match_id)
            self.db.conn.execute(
                "delete from decisions where match_id = ? and cache_key is null", [e.match_id]
            )
            batched = bool(agent_kinds) and all(k in CHEAP_KINDS for k in agent_kinds)
            if batched:  # its rounds are then written with a plain insert (NEW_ROUNDS)
                self.db.conn.execute("delete from rounds where match_id = ?", [e.match_id])
            self._upsert("matches", row, ("id",))
            for seat, agent in enumerate(e.seats):
                self._upsert(
                    "seats",
                    {
                        "match_id": e.match_id,
                        "seat": seat,
                        "agent": agent,
                        "agent_kind": agent_kinds[seat],
                        "agent_spec": json.dumps(agent_specs[seat], sort_keys=True),
                        "payoff": None,
                    },
                    ("match_id", "seat"),
                )
        if batched:
            self._batches[e.match_id] = _MatchBatch(
                (e.match_id, e.run_id, e.experiment, row["condition_key"]), list(e.seats)
            )
        else:
            self._batches.pop(e.match_id, None)

    def _on_DecisionDone(self, e: DecisionDone) -> None:  # noqa: N802
        # Plain prepared SQL: this runs once per decision, and sqlite-utils' generic
        # insert (table introspection, query building) cost more than the write itself.
        d = e.decision
        values = decision_values(d)
        batch = self._batches.get(d.match_id)
        if batch is not None:
            batch.decisions.append(values)
            self._hold(batch)
            return
        with self._event_write():
            if d.prompt:
                prompt = values[PROMPT_AT]
                values[HASH_AT] = text_hash(prompt)
                values[PROMPT_AT] = None
                self.db.conn.execute(
                    "insert or ignore into texts (hash, text) values (?, ?)", [values[HASH_AT], prompt]
                )
            self.db.conn.execute(REPLACE_DECISION if d.asked_again else INSERT_DECISION, values)

    def _on_DirectDecisions(self, e: DirectDecisions) -> None:  # noqa: N802
        batch = self._batches.get(e.match_id)
        if batch is not None:
            batch.decisions.append(e)
            self._hold(batch)
            return
        for decision in e.decisions():
            self._on_DecisionDone(DecisionDone(decision))

    def _on_DirectRounds(self, e: DirectRounds) -> None:  # noqa: N802
        batch = self._batches.get(e.match_id)
        if batch is None:  # not a batched match: as if the events had come one by one
            for event in e.events:
                self(event)
            return
        decisions, rounds = batch.decisions, batch.rounds
        for event in e.events:
            if type(event) is DirectDecisions:
                decisions.append(event)
            else:
                rounds.extend(_round_rows(event))  # type: ignore[arg-type]
        self._hold(batch)

    def _on_RoundDone(self, e: RoundDone) -> None:  # noqa: N802
        rows = _round_rows(e)
        batch = self._batches.get(e.match_id)
        if batch is not None:
            batch.rounds.extend(rows)
            self._hold(batch)
            return
        with self._event_write():
            self.db.conn.executemany(INSERT_ROUND, rows)

    def _on_PhaseDone(self, e: PhaseDone) -> None:  # noqa: N802
        row = (e.match_id, e.round, e.phase, _json(e.info))
        batch = self._batches.get(e.match_id)
        if batch is not None:
            batch.phases.append(row)
            self._hold(batch)
            return
        with self._event_write():
            self.db.conn.execute(INSERT_PHASE, row)

    def _hold(self, batch: _MatchBatch) -> None:
        """Write a batch's rows out once it holds SPILL_ROWS: one match can be a whole
        tournament of hundreds of thousands of decisions, which memory must not hold.
        The match is folded from the database when it ends (its rows are no longer all
        in memory); a replay deletes its strategy decisions first, as for any match."""
        if len(batch.decisions) + len(batch.rounds) + len(batch.phases) < SPILL_ROWS:
            return
        with self._event_write():
            self._write_batch(batch)
        batch.spilled = True

    def _write_batch(self, batch: _MatchBatch) -> None:
        """Write and forget the rows a batch holds (the caller holds the transaction)."""
        conn = self.db.conn
        if all(type(item) is DirectDecisions for item in batch.decisions):
            conn.executemany(INSERT_DIRECT, direct_values(batch.decisions))  # type: ignore[arg-type]
        else:
            rows = [
                row for item in batch.decisions for row in (
                    [decision_values(d) for d in item.decisions()]
                    if type(item) is DirectDecisions else [item]
                )
            ]
            for values in rows:
                prompt = values[PROMPT_AT]
                if prompt is not None and prompt != "[]":
                    values[HASH_AT] = text_hash(prompt)
                    conn.execute("insert or ignore into texts (hash, text) values (?, ?)",
                                 (values[HASH_AT], prompt))
                values[PROMPT_AT] = None
            conn.executemany(INSERT_DECISION, rows)
        conn.executemany(NEW_ROUNDS, batch.rounds)
        conn.executemany(INSERT_PHASE, batch.phases)
        batch.decisions, batch.rounds, batch.phases = [], [], []

    def _flush(self, match_id: str, done: bool) -> None:
        """Write a batched match's decisions, rounds and phases (inside a transaction),
        and fold it into the summaries from memory when it is done."""
        batch = self._batches.pop(match_id, None)
        if batch is None or batch.spilled:
            if batch is not None:
                self._write_batch(batch)
            if done:
                summaries.fold(self.db.conn, match_id)
            return
        conn = self.db.conn
        if batch.decisions and all(type(item) is DirectDecisions for item in batch.decisions):
            # strategy rounds only: narrow rows, their fixed fields written by the SQL
            direct: list[DirectDecisions] = batch.decisions  # type: ignore[assignment]
            conn.executemany(INSERT_DIRECT, direct_values(direct))
            conn.executemany(NEW_ROUNDS, batch.rounds)
            conn.executemany(INSERT_PHASE, batch.phases)
            if done:
                self._folds.add(batch.match, batch.agents, direct, batch.rounds)
                if len(self._folds) >= FOLD_EVERY:
                    self._write_folds()
            return
        batch.decisions = [
            row for item in batch.decisions for row in (
                [decision_values(d) for d in item.decisions()]
                if type(item) is DirectDecisions else [item]
            )
        ]
        texts = []
        for values in batch.decisions:
            prompt = values[PROMPT_AT]
            if prompt is not None and prompt != "[]":
                values[HASH_AT] = text_hash(prompt)
                texts.append((values[HASH_AT], prompt))
            values[PROMPT_AT] = None
        if texts:
            conn.executemany("insert or ignore into texts (hash, text) values (?, ?)", texts)
        conn.executemany(INSERT_DECISION, batch.decisions)
        conn.executemany(NEW_ROUNDS, batch.rounds)
        conn.executemany(INSERT_PHASE, batch.phases)
        if done:
            summaries.fold_rows(
                conn, batch.match, batch.agents, batch.decisions, batch.rounds, DECISION_COLUMNS
            )

    def _write_folds(self) -> None:
        """Fold the finished strategy matches held back (the caller holds the transaction).
        Until then they are done but not folded, which the report aggregates live."""
        folds, self._folds = self._folds, summaries.DirectFolds()
        folds.write(self.db.conn)

    def flush_folds(self) -> None:
        """Write the held-back folds now (at the end of a run, on close, before a delete)."""
        if self._folds:
            with self._own_transaction():
                self._write_folds()

    def _on_MatchDone(self, e: MatchDone) -> None:  # noqa: N802
        with self._event_write():
            self._flush(e.match_id, e.status == "done")
            self.db.conn.execute(
                "update matches set status = ?, error = ?, payoffs = ?, welfare = ?,"
                " finished_at = ? where id = ?",
                [
                    e.status,
                    scrub(e.error),
                    json.dumps(list(e.payoffs)) if e.payoffs else None,
                    sum(e.payoffs) if e.payoffs else None,
                    time.time(),
                    e.match_id,
                ],
            )
            self.db.conn.executemany(
                "update seats set payoff = ? where match_id = ? and seat = ?",
                [(payoff, e.match_id, seat) for seat, payoff in enumerate(e.payoffs)],
            )
            # one failure row per match at most, and none once it has succeeded
            self.db.conn.execute("delete from failures where match_id = ?", [e.match_id])
            if e.status == "failed":
                run_id = self.db.execute(
                    "select run_id from matches where id = ?", [e.match_id]
                ).fetchone()[0]
                self.db.conn.execute(
                    "insert into failures (match_id, run_id, error, reason, transport_retries,"
                    " created_at) values (?, ?, ?, ?, ?, ?)",
                    [e.match_id, run_id, scrub(e.error), failure_reason(e.error),
                     int(e.info.get("transport_retries", 0) or 0), time.time()],
                )
            if e.status != "done":
                summaries.unfold(self.db.conn, e.match_id)

    def _on_RunDone(self, e: RunDone) -> None:  # noqa: N802
        self.flush_folds()
        self.set_run_status(e.run_id, e.status, e.error)
        # Keep the planner's statistics current as the tables grow (cheap: it only
        # analyses what changed a lot since the last time). Under the write lock: its
        # ANALYZE reads, then writes, and would fail at once after another process's commit.
        with self._own_transaction():
            self.db.conn.execute("PRAGMA optimize")


def _round_rows(e: RoundDone) -> list[tuple[Any, ...]]:
    """A round's rows of the ``rounds`` table, one per seat that took part."""
    seats = e.seats or tuple(range(len(e.actions)))
    info = e.info
    game_coop = info.get("cooperated")
    text = "{}" if len(info) <= ("cooperated" in info) else _json(  # no key but "cooperated"
        {k: v for k, v in info.items() if k != "cooperated"}
    )
    if game_coop is None:
        return [(e.match_id, e.round, seat, e.actions[pos], e.payoffs[pos], None, text)
                for pos, seat in enumerate(seats)]
    if len(seats) == 2 == len(game_coop):  # every round of a pairing: written out
        (one, two), (a1, a2), (p1, p2), (c1, c2) = seats, e.actions, e.payoffs, game_coop
        return [(e.match_id, e.round, one, a1, p1, None if c1 is None else int(c1), text),
                (e.match_id, e.round, two, a2, p2, None if c2 is None else int(c2), text)]
    return [
        (e.match_id, e.round, seat, e.actions[pos], e.payoffs[pos],
         None if game_coop[pos] is None else int(game_coop[pos]), text)
        for pos, seat in enumerate(seats)
    ]


class _MatchBatch:
    """A cheap match's rows, written in one transaction when it ends."""

    __slots__ = ("match", "agents", "decisions", "rounds", "phases", "spilled")

    def __init__(self, match: tuple[str, str, int, str], agents: list[str]) -> None:
        self.match = match
        self.agents = agents
        self.spilled = False
        """Some rows were written before the match ended (see Store._hold)."""
        self.decisions: list[Any] = []
        """Rows in DECISION_COLUMNS order, or DirectDecisions events, in arrival order."""
        self.rounds: list[tuple[Any, ...]] = []
        self.phases: list[tuple[Any, ...]] = []


SPILL_ROWS = 20_000
"""Rows a cheap match's batch holds at most before they are written (Store._hold)."""

FOLD_EVERY = 64
"""Finished strategy matches folded into the summaries in one write (see _write_folds)."""

INSERT_ROUND = (
    "insert or replace into rounds (match_id, round, seat, action, payoff, cooperated, info)"
    " values (?, ?, ?, ?, ?, ?, ?)"
)
NEW_ROUNDS = INSERT_ROUND.replace("insert or replace", "insert", 1)
"""A batched match's rounds: its earlier rounds were deleted when it started, so there is
nothing to replace, and a plain insert skips the conflict handling (a quarter of the
cost of writing a strategy tournament's rounds)."""
INSERT_PHASE = (
    "insert into phases (match_id, round, phase, info) values (?, ?, ?, ?)"
    " on conflict (match_id, round, phase) do update set info = excluded.info"
)


def condition_key(condition: dict[str, Any]) -> str:
    """A short readable label of an experimental condition (stable order)."""
    parts = [f"{k}={condition[k]}" for k in sorted(condition) if condition[k] is not None]
    return " ".join(parts) or "-"


# ----------------------------------------------------------------- search
RUN_DATE = "strftime('%Y-%m-%d %H:%M', r.created_at, 'unixepoch', 'localtime')"
_RUN_MATCH = "exists (select 1 from matches m where m.run_id = r.id and {})"
_RUN_AGENT = (
    "exists (select 1 from matches m join seats s on s.match_id = m.id "
    "where m.run_id = r.id and s.agent like ? escape '\\')"
)
_LIKE = "{} like ? escape '\\'"
RUN_SEARCH: dict[str, list[str]] = {
    "id": [_LIKE.format("r.id")],
    "name": [_LIKE.format("r.name")],
    "kind": [_LIKE.format("r.kind")],
    "status": [_LIKE.format("r.status")],
    "date": [_LIKE.format(RUN_DATE)],
    "game": [_RUN_MATCH.format(_LIKE.format("m.game"))],
    "mechanism": [_RUN_MATCH.format(_LIKE.format("m.mechanism"))],
    "condition": [_RUN_MATCH.format(_LIKE.format("m.condition_key"))],
    "agent": [_RUN_AGENT],
}
MATCH_SEARCH: dict[str, list[str]] = {
    "id": [_LIKE.format("m.id")],
    "status": [_LIKE.format("m.status")],
    "game": [_LIKE.format("m.game")],
    "mechanism": [_LIKE.format("m.mechanism")],
    "condition": [_LIKE.format("m.condition_key")],
    "agent": [
        "exists (select 1 from seats s where s.match_id = m.id and s.agent like ? escape '\\')"
    ],
}
SEARCH_ALIASES = {"mech": "mechanism", "cond": "condition", "model": "agent", "strategy": "agent"}


def like_escape(text: str) -> str:
    """``text`` for a ``LIKE ... escape '\\'`` pattern, its ``%`` and ``_`` taken literally
    (a run id prefix ``%`` must not pick a run)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_clause(query: str, fields: dict[str, list[str]]) -> tuple[str, list[str]]:
    """A WHERE fragment (and its arguments) for a search box: every term must match.

    ``field:value`` matches one field (unknown fields are searched as plain text);
    a plain term matches any field. Matching is a case-insensitive substring test
    with ``%`` and ``_`` taken literally.
    """
    clauses: list[str] = []
    args: list[str] = []
    for term in query.split():
        key, sep, value = term.partition(":")
        name = SEARCH_ALIASES.get(key.lower(), key.lower())
        if sep and value and name in fields:
            chosen, text = [name], value
        else:
            chosen, text = list(fields), term
        pattern = "%" + like_escape(text) + "%"
        parts = [sql for field in chosen for sql in fields[field]]
        clauses.append("(" + " or ".join(parts) + ")")
        args.extend([pattern] * len(parts))
    return " and ".join(clauses), args
