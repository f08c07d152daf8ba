"""The store's event writer: the bus subscriber that turns a run's events into rows.

While a run plays it is the only writer (Datasette's single write path): each
``_on_<Event>`` handler writes one event inside the write scope the
:class:`~coop_tui.store.Store` gives it (committed at once, or with the window's other
events under :meth:`~coop_tui.store.Store.grouped_commits`). A match whose seats are all
cheap (strategies) is held in a :class:`_MatchBatch` and written in one transaction when it
ends, and its summary fold is written :data:`FOLD_EVERY` matches at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from coop_tui import summaries
from coop_tui.database import Database
from coop_tui.errors import failure_reason
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
from coop_tui.redact import scrub
from coop_tui.store.codec import (
    DECISION_COLUMNS,
    HASH_AT,
    INSERT_DECISION,
    INSERT_DIRECT,
    PROMPT_AT,
    REPLACE_DECISION,
    _json,
    decision_values,
    direct_values,
)
from coop_tui.store.matches import condition_key
from coop_tui.store.runs import set_run_status

CHEAP_KINDS = frozenset({"strategy"})
"""Agent kinds whose decisions cost nothing and are recomputed identically on a replay:
a match with only such seats is written in one transaction when it ends."""

SPILL_ROWS = 20_000
"""Rows a cheap match's batch holds at most before they are written (EventWriter._hold)."""

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


WriteScope = Callable[[], AbstractContextManager[None]]
"""A :class:`~coop_tui.store.Store` write scope: entering it holds the write lock and a
transaction, leaving it commits (or joins the window's group commit)."""


class EventWriter:
    """Writes a run's events as rows: one handler per event type, looked up by name.

    The :class:`~coop_tui.store.Store` owns the connection and the transactions: it gives
    the writer ``event_write`` (one event's writes, maybe group-committed) and
    ``own_transaction`` (a write outside the events' group), and forwards every event."""

    def __init__(self, db: Database, *, event_write: WriteScope, own_transaction: WriteScope
                 ) -> None:
        self.db = db
        self._event_write = event_write
        self._own_transaction = own_transaction
        self._handlers: dict[type, Any] = {}
        self._batches: dict[str, _MatchBatch] = {}
        """Writes held back until the match ends, for matches of cheap seats only."""
        self._spec_hashes: dict[str, str] = {}
        """Game spec JSON -> hash, for specs already in ``game_specs`` (a few per run)."""
        self._folds = summaries.DirectFolds()
        """Finished strategy matches whose summary sums are written FOLD_EVERY at a time."""

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
        with self._own_transaction():
            set_run_status(self.db, e.run_id, e.status, e.error)
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
        """Some rows were written before the match ended (see EventWriter._hold)."""
        self.decisions: list[Any] = []
        """Rows in DECISION_COLUMNS order, or DirectDecisions events, in arrival order."""
        self.rounds: list[tuple[Any, ...]] = []
        self.phases: list[tuple[Any, ...]] = []
