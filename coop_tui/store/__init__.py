"""SQLite storage: the single source of truth for runs, matches and decisions.

The schema grows through the ordered list of small migration functions in
:mod:`coop_tui.migrations`, applied when the store opens a database. The store listens
to engine events and writes each finished decision as one row in its own transaction,
so a ``kill -9`` loses at most the decisions that were still in flight — which a resume
then asks again.
WAL mode lets the TUI read while a batch writes.

The package follows Datasette's split: :class:`Store` keeps the connection and the
transactions; :mod:`.writer` is the event writer, :mod:`.codec` the decision row codec,
and :mod:`.runs`, :mod:`.matches`, :mod:`.decisions`, :mod:`.search` and :mod:`.watch`
hold the queries as plain functions. Every name this module had before the split is
still importable from here.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from coop_tui.database import (
    BUSY_TIMEOUT,
    Database,
    check_database_path,
    create_private,
    immediate,
    use_wal,
)
from coop_tui.decisions import Decision
from coop_tui.events import Event

# the schema's history lives in coop_tui.migrations; these names stay importable from here
from coop_tui.migrations import DUPLICATE_KEY as DUPLICATE_KEY
from coop_tui.migrations import MIGRATIONS as MIGRATIONS
from coop_tui.migrations import PAPER_MODELS as PAPER_MODELS
from coop_tui.migrations import Migration as Migration
from coop_tui.migrations import applied_migrations, apply_migrations, check_not_newer
from coop_tui.migrations import migration as migration
from coop_tui.store import decisions, matches, runs, search, watch
from coop_tui.store.codec import DECISION_COLUMNS as DECISION_COLUMNS
from coop_tui.store.codec import DIRECT_COLUMNS as DIRECT_COLUMNS
from coop_tui.store.codec import DISTRIBUTION_TOLERANCE as DISTRIBUTION_TOLERANCE
from coop_tui.store.codec import HASH_AT as HASH_AT
from coop_tui.store.codec import INSERT_DECISION as INSERT_DECISION
from coop_tui.store.codec import INSERT_DIRECT as INSERT_DIRECT
from coop_tui.store.codec import PROMPT_AT as PROMPT_AT
from coop_tui.store.codec import REPLACE_DECISION as REPLACE_DECISION
from coop_tui.store.codec import AnswerRuleError as AnswerRuleError
from coop_tui.store.codec import answer_problem as answer_problem
from coop_tui.store.codec import decision_from_row as decision_from_row
from coop_tui.store.codec import decision_row as decision_row
from coop_tui.store.codec import decision_values as decision_values
from coop_tui.store.codec import direct_values as direct_values
from coop_tui.store.codec import distribution_problem as distribution_problem
from coop_tui.store.codec import insert_decisions as insert_decisions
from coop_tui.store.decisions import DECISION_SELECT as DECISION_SELECT
from coop_tui.store.decisions import PROMPT_SQL as PROMPT_SQL
from coop_tui.store.matches import GAME_SPEC_MIN as GAME_SPEC_MIN
from coop_tui.store.matches import GAME_SPEC_OF_GROUP as GAME_SPEC_OF_GROUP
from coop_tui.store.matches import condition_key as condition_key
from coop_tui.store.matches import game_spec_sql as game_spec_sql
from coop_tui.store.matches import intern_game_specs as intern_game_specs
from coop_tui.store.runs import LEASE_STALE_S as LEASE_STALE_S
from coop_tui.store.runs import delete_judged_links as delete_judged_links
from coop_tui.store.runs import lease_alive as lease_alive
from coop_tui.store.runs import process_alive as process_alive
from coop_tui.store.search import MATCH_SEARCH as MATCH_SEARCH
from coop_tui.store.search import RUN_DATE as RUN_DATE
from coop_tui.store.search import RUN_SEARCH as RUN_SEARCH
from coop_tui.store.search import SEARCH_ALIASES as SEARCH_ALIASES
from coop_tui.store.search import like_escape as like_escape
from coop_tui.store.search import search_clause as search_clause
from coop_tui.store.writer import CHEAP_KINDS as CHEAP_KINDS
from coop_tui.store.writer import FOLD_EVERY as FOLD_EVERY
from coop_tui.store.writer import INSERT_PHASE as INSERT_PHASE
from coop_tui.store.writer import INSERT_ROUND as INSERT_ROUND
from coop_tui.store.writer import NEW_ROUNDS as NEW_ROUNDS
from coop_tui.store.writer import SPILL_ROWS as SPILL_ROWS
from coop_tui.store.writer import EventWriter
from coop_tui.store.writer import _round_rows as _round_rows

DB_ENV = "COOP_TUI_DB"


def default_db_path() -> Path:
    """``$COOP_TUI_DB``, else the user data directory (XDG on Linux)."""
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "coop-tui" / "coop-tui.db"


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
    """One SQLite file. Writes come from events; reads serve resume, report and TUI.

    The store owns the connection, its transactions (:meth:`transaction`, group commits
    while a sweep plays) and the write lock. The rest is a one-line delegation each: event
    writes to its :class:`~coop_tui.store.writer.EventWriter`, reads and run writes to
    the plain functions of :mod:`~coop_tui.store.runs`, :mod:`~coop_tui.store.matches`,
    :mod:`~coop_tui.store.decisions`, :mod:`~coop_tui.store.search` and
    :mod:`~coop_tui.store.watch`, each given the database (as Datasette's ``Database``
    hands a ``utils`` function its connection)."""

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
        self.writer = EventWriter(self.db, event_write=self._event_write,
                                  own_transaction=self._own_transaction)
        """The bus subscriber: every event this store is called with goes to it."""

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

    # ------------------------------------------------------------ event writer
    def __call__(self, event: Event) -> None:
        self.writer(event)

    def flush_folds(self) -> None:
        """Write the held-back folds now (at the end of a run, on close, before a delete)."""
        self.writer.flush_folds()

    # ------------------------------------------------------------ runs (coop_tui.store.runs)
    def create_run(
        self, run_id: str, name: str, *, kind: str, seed: int, sweep_hash: str, spec: dict[str, Any],
        inputs: dict[str, str] | None = None, shard: str | None = None,
        sources: dict[str, dict[str, str]] | None = None,
    ) -> None:
        with self._own_transaction():
            runs.create_run(self.db, run_id, name, kind=kind, seed=seed, sweep_hash=sweep_hash,
                            spec=spec, inputs=inputs, shard=shard, sources=sources)

    def set_run_status(self, run_id: str, status: str, error: str | None = None) -> None:
        with self._own_transaction():
            runs.set_run_status(self.db, run_id, status, error)

    def delete_run(self, run_id: str) -> None:
        self.flush_folds()
        with self._own_transaction():
            runs.delete_run(self.db, run_id)

    def run(self, run_id: str) -> dict[str, Any] | None:
        return runs.run(self.db, run_id)

    def runs(self) -> list[dict[str, Any]]:
        return runs.runs(self.db)

    def running_run(self) -> dict[str, Any] | None:
        return runs.running_run(self.db)

    def latest_run(self, name: str | None = None, sweep_hash: str | None = None) -> dict[str, Any] | None:
        return runs.latest_run(self.db, name, sweep_hash)

    def latest_sweep_run(self, name: str, shard: str | None) -> dict[str, Any] | None:
        return runs.latest_sweep_run(self.db, name, shard)

    def run_cost(self, run_id: str) -> float:
        return runs.run_cost(self.db, run_id)

    def resolve_run(self, ref: str | None) -> dict[str, Any] | None:
        return runs.resolve_run(self.db, ref)

    # ------------------------------------------------------------ run leases (one writer)
    def take_lease(self, run_id: str, token: str, *, stale_after: float) -> dict[str, Any] | None:
        return runs.take_lease(self.path, run_id, token, stale_after=stale_after)

    def renew_lease(self, run_id: str, token: str) -> None:
        with self._own_transaction():
            runs.renew_lease(self.db, run_id, token)

    def release_lease(self, run_id: str, token: str) -> None:
        with self._own_transaction():
            runs.release_lease(self.db, run_id, token)

    def record_channel(self, run_id: str, channel: str, plan: dict[str, Any]) -> None:
        with self._own_transaction():
            runs.record_channel(self.db, run_id, channel, plan)

    def lease(self, run_id: str) -> dict[str, Any] | None:
        return runs.lease(self.db, run_id)

    def live_runs(self) -> set[str]:
        return runs.live_runs(self.db)

    # ------------------------------------------------------------ watch (coop_tui.store.watch)
    def watch_snapshot(self, run_id: str, models: list[str], *, curve_points: int = 400
                       ) -> dict[str, Any]:
        return watch.watch_snapshot(self.db, run_id, models, curve_points=curve_points)

    def failure_groups(self, run_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
        return watch.failure_groups(self.db, run_id, limit=limit)

    # ------------------------------------------------------------ matches (coop_tui.store.matches)
    def match_status(self, run_id: str) -> dict[str, str]:
        return matches.match_status(self.db, run_id)

    def matches(self, run_id: str) -> list[dict[str, Any]]:
        return matches.matches(self.db, run_id)

    def match(self, match_id: str) -> dict[str, Any] | None:
        return matches.match(self.db, match_id)

    def seats(self, match_id: str) -> list[dict[str, Any]]:
        return matches.seats(self.db, match_id)

    def rounds(self, match_id: str) -> list[dict[str, Any]]:
        return matches.rounds(self.db, match_id)

    def benchmark_matches(self, run_id: str, agent: str, benchmark: str) -> list[str]:
        return matches.benchmark_matches(self.db, run_id, agent, benchmark)

    def phase_infos(self, match_id: str, phase: str) -> list[dict[str, Any]]:
        return matches.phase_infos(self.db, match_id, phase)

    def benchmark_answer_rows(self, run_id: str) -> list[tuple[str, int, int | None, str, str | None]]:
        return matches.benchmark_answer_rows(self.db, run_id)

    def score_rows(self, run_id: str) -> list[tuple[str, str, str, str]]:
        return matches.score_rows(self.db, run_id)

    # ------------------------------------------------------------ decisions (coop_tui.store.decisions)
    def decisions(self, match_id: str) -> list[Decision]:
        return decisions.decisions(self.db, match_id)

    def find_decision(self, cache_key: str) -> Decision | None:
        return decisions.find_decision(self.db, cache_key)

    def find_content(self, content_key: str) -> Decision | None:
        return decisions.find_content(self.db, content_key)

    def decision_list(self, match_id: str) -> list[dict[str, Any]]:
        return decisions.decision_list(self.db, match_id)

    def get_decision(self, decision_id: int) -> Decision | None:
        return decisions.get_decision(self.db, decision_id)

    def decision_id(self, cache_key: str) -> int | None:
        return decisions.decision_id(self.db, cache_key)

    def decision_id_of(self, decision: Decision) -> int | None:
        return decisions.decision_id_of(self.db, decision)

    def reasks_of(self, decision_id: int) -> list[dict[str, Any]]:
        return decisions.reasks_of(self.db, decision_id)

    # ------------------------------------------------------------ browsing (coop_tui.store.search)
    def run_summaries(self, query: str = "", *, limit: int = 1000) -> list[dict[str, Any]]:
        return search.run_summaries(self.db, query, limit=limit)

    def match_summaries(
        self, run_id: str, query: str = "", *, limit: int = 5000
    ) -> list[dict[str, Any]]:
        return search.match_summaries(self.db, run_id, query, limit=limit)
