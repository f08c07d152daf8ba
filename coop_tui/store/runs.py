"""Runs and their leases: create, finish, find (by id, prefix or name), cost and delete a
run; take, renew and release the lease that makes one process its only writer, and read
whether a lease's process is still alive.

Plain functions: reads take the store's :class:`~coop_tui.database.Database`, writes run
inside the transaction :class:`~coop_tui.store.Store` opens around them (except
:func:`take_lease`, which needs its own connection; see there).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

from coop_tui import summaries
from coop_tui.database import BUSY_TIMEOUT, Database
from coop_tui.errors import SpecError
from coop_tui.redact import scrub
from coop_tui.store.search import like_escape

LEASE_STALE_S = 60.0
"""A lease not renewed for this long belongs to a process that is gone or hung (the
sweep renews it every few seconds). ``--resume`` takes such a lease over, and ``watch``
calls its sweep gone: both read liveness from :func:`lease_alive`."""


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


# ------------------------------------------------------------ runs
def create_run(
    db: Database, run_id: str, name: str, *, kind: str, seed: int, sweep_hash: str,
    spec: dict[str, Any], inputs: dict[str, str] | None = None, shard: str | None = None,
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
    db.conn.execute(
        f"insert into runs ({', '.join(row)}) values ({', '.join('?' for _ in row)})",
        list(row.values()),
    )


def set_run_status(db: Database, run_id: str, status: str, error: str | None = None) -> None:
    db.conn.execute(
        "update runs set status = ?, finished_at = ?, error = ? where id = ?",
        [status, time.time(), scrub(error), run_id],
    )


def run(db: Database, run_id: str) -> dict[str, Any] | None:
    rows = list(db.query("select * from runs where id = ?", [run_id]))
    return rows[0] if rows else None


def runs(db: Database) -> list[dict[str, Any]]:
    return list(db.query("select * from runs order by created_at desc"))


def running_run(db: Database) -> dict[str, Any] | None:
    """The newest run whose status is still ``running`` (what ``watch`` attaches to)."""
    rows = list(db.query(
        "select * from runs where status = 'running' order by created_at desc limit 1"))
    return rows[0] if rows else None


def latest_run(db: Database, name: str | None = None, sweep_hash: str | None = None
               ) -> dict[str, Any] | None:
    where, args = [], []
    if name is not None:
        where.append("name = ?")
        args.append(name)
    if sweep_hash is not None:
        where.append("sweep_hash = ?")
        args.append(sweep_hash)
    sql = "select * from runs" + (" where " + " and ".join(where) if where else "")
    rows = list(db.query(sql + " order by created_at desc limit 1", args))
    return rows[0] if rows else None


def latest_sweep_run(db: Database, name: str, shard: str | None) -> dict[str, Any] | None:
    """The latest run of the sweep ``name`` that played the same slice (``"K/N"``, or
    None for the whole sweep): what ``--resume`` continues. Each slice resumes its
    own run, even when several slices share one database."""
    rows = list(db.query(
        "select * from runs where name = ? and shard is ? order by created_at desc limit 1",
        [name, shard],
    ))
    return rows[0] if rows else None


def run_cost(db: Database, run_id: str) -> float:
    """What a run has spent so far (decisions asked in it; reused ones cost nothing)."""
    row = db.execute(
        "select coalesce(sum(d.cost_usd), 0) from decisions d join matches m"
        " on m.id = d.match_id where m.run_id = ? and d.reused = 0",
        [run_id],
    ).fetchone()
    return float(row[0])


def resolve_run(db: Database, ref: str | None) -> dict[str, Any] | None:
    """A run by id, id prefix or name; the latest run when ``ref`` is None. A prefix of
    several ids that names no run raises SpecError listing them: "no such run" would
    send the user looking for a run that is there."""
    if ref is None:
        return latest_run(db)
    found = run(db, ref)
    if found:
        return found
    rows = list(db.query("select * from runs where id like ? escape '\\'"
                         " order by id limit 6", [like_escape(ref) + "%"])) if ref else []
    if len(rows) == 1:
        return rows[0]
    named = latest_run(db, name=ref)
    if named is not None or len(rows) < 2:
        return named
    shown = ", ".join(f"{r['id']} ({r['name']})" for r in rows[:5])
    more = " and more" if len(rows) > 5 else ""
    raise SpecError("run", f"{ref!r} is the start of several run ids: {shown}{more}; give "
                           "more of the id")


def delete_run(db: Database, run_id: str) -> None:
    """Every row of the run, its judgements and summaries, and the game specs and prompt
    texts no other run shares (the caller holds the transaction, its folds written)."""
    ids = "select id from matches where run_id = ?"
    # the run's prompt texts, to drop those no decision of another run shares
    db.execute("create temp table if not exists _dropped_texts (hash text primary key)")
    db.execute("delete from _dropped_texts")
    db.execute(
        "insert or ignore into _dropped_texts select d.prompt_hash from decisions d"
        f" where d.match_id in ({ids}) and d.prompt_hash is not null",
        [run_id],
    )
    for table in ("decisions", "rounds", "seats", "phases"):
        db.execute(f"delete from {table} where match_id in ({ids})", [run_id])
    db.execute("delete from failures where run_id = ?", [run_id])
    if "sp_trials" in db.table_names():  # an imported strategic personalities trial table
        db.execute("delete from sp_trials where run_id = ?", [run_id])
    db.execute(  # a judge run's links and labels (coop_tui.judging)
        "delete from judgement_labels where judge_decision_id in"
        " (select judge_decision_id from judgements where judge_run_id = ?)", [run_id])
    db.execute("delete from judgements where judge_run_id = ?", [run_id])
    db.execute("delete from section_results where run_id = ?", [run_id])
    delete_judged_links(db.conn, run_id)
    summaries.delete_run(db.conn, run_id)
    db.execute("delete from matches where run_id = ?", [run_id])
    db.execute("delete from runs where id = ?", [run_id])
    db.execute(
        "delete from game_specs where not exists"
        " (select 1 from matches m where m.game_spec_hash = game_specs.hash)"
    )
    db.execute(
        "delete from texts where hash in (select x.hash from _dropped_texts x where not"
        " exists (select 1 from decisions d where d.prompt_hash = x.hash))"
    )
    db.execute("delete from _dropped_texts")


# ------------------------------------------------------------ run leases (one writer)
def take_lease(path: Path, run_id: str, token: str, *, stale_after: float
               ) -> dict[str, Any] | None:
    """Take the run's lease for this process; the live holder's row when refused.

    Atomic (``BEGIN IMMEDIATE``): two processes starting together cannot both win.
    A lease is live when its heartbeat is recent and, on this host, its pid runs.
    """

    host, pid, now = socket.gethostname(), os.getpid(), time.time()
    # Its own short connection: BEGIN IMMEDIATE on the shared one could commit another
    # thread's half-done transaction (the TUI reads and writes from workers).
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT, isolation_level=None)
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


def renew_lease(db: Database, run_id: str, token: str) -> None:
    db.conn.execute(
        "update run_leases set heartbeat = ? where run_id = ? and token = ?",
        [time.time(), run_id, token],
    )


def release_lease(db: Database, run_id: str, token: str) -> None:
    db.conn.execute("delete from run_leases where run_id = ? and token = ?", [run_id, token])


def record_channel(db: Database, run_id: str, channel: str, plan: dict[str, Any]) -> None:
    """Name this process's watch channel (and the run's plan) in the lease it holds."""
    db.conn.execute(
        "update run_leases set channel = ?, plan = ? where run_id = ? and pid = ?"
        " and host = ?",
        [channel, json.dumps(plan), run_id, os.getpid(), socket.gethostname()],
    )


def lease(db: Database, run_id: str) -> dict[str, Any] | None:
    """The run's lease row (pid, host, heartbeat, channel, plan), None when no process
    holds it; ``alive`` says whether its process still plays it (:func:`lease_alive`:
    the heartbeat, and on this host the pid), ``here`` whether it runs on this host
    (only then can its socket be reached)."""
    row = db.execute(
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


def live_runs(db: Database) -> set[str]:
    """Runs a live process is playing and publishing (a lease naming a channel)."""
    rows = db.execute(
        "select run_id, pid, host, heartbeat from run_leases"
        " where coalesce(channel, '') != ''"
    ).fetchall()
    return {run_id for run_id, pid, host, beat in rows if lease_alive(pid, host, beat)}
