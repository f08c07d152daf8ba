"""What ``watch`` reads of a running run: the state so far for a late watcher, and the
failed matches grouped by reason.

Aggregates over the run's indexes, a bounded number of rows out: a watcher polls these
while a sweep writes. Plain functions of the store's :class:`~coop_tui.database.Database`.
"""

from __future__ import annotations

from typing import Any

from coop_tui.database import Database
from coop_tui.errors import failure_reason
from coop_tui.redact import scrub


def watch_snapshot(db: Database, run_id: str, models: list[str], *, curve_points: int = 400
                   ) -> dict[str, Any]:
    """A running run's state so far, for a watcher that attaches late: per experiment
    the matches by status and the decisions' counts, the cooperation per condition,
    the running matches, and the last ``curve_points`` finished matches' cooperation
    (for the curve). Aggregates over the run's indexes, a bounded number of rows out."""
    marks = ",".join("?" * len(models)) or "''"
    statuses = db.execute(
        "select experiment, status, count(*) from matches where run_id = ?"
        " group by experiment, status", [run_id]).fetchall()
    decisions = db.execute(
        "select m.experiment, count(*), sum(d.valid = 0), sum(max(d.attempts - 1, 0)"
        " + coalesce(d.transport_retries, 0)), sum(case when d.reused = 0 then"
        f" coalesce(d.cost_usd, 0) else 0 end), sum(d.agent in ({marks}))"
        " from decisions d join matches m on m.id = d.match_id where m.run_id = ?"
        " group by m.experiment", [*models, run_id]).fetchall()
    cooperation = db.execute(
        "select m.experiment, m.condition_key, min(m.game), min(m.mechanism),"
        " min(m.condition), sum(d.cooperated), count(d.cooperated)"
        " from decisions d join matches m on m.id = d.match_id"
        " where m.run_id = ? and d.cooperated is not null"
        " group by m.experiment, m.condition_key", [run_id]).fetchall()
    running = list(db.query(
        "select m.id, m.experiment, m.game, m.mechanism, m.condition, m.condition_key,"
        " m.started_at, (select group_concat(agent, ' vs ') from seats s"
        " where s.match_id = m.id) as agents from matches m"
        " where m.run_id = ? and m.status = 'running' order by m.started_at limit 200",
        [run_id]))
    curve = db.execute(
        "select * from (select m.experiment, m.condition_key, m.finished_at,"
        " (select avg(d.cooperated) from decisions d where d.match_id = m.id"
        " and d.cooperated is not null) from matches m where m.run_id = ?"
        " and m.status = 'done' order by m.finished_at desc limit ?)"
        " order by finished_at", [run_id, curve_points]).fetchall()
    return {"statuses": statuses, "decisions": decisions, "cooperation": cooperation,
            "running": running, "curve": curve}


def failure_groups(db: Database, run_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
    """A run's failed matches by reason: ``[{reason, count, example}]``, most first."""
    groups: dict[str, dict[str, Any]] = {}
    rows = db.execute(
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
