"""Reads of matches and what belongs to them: seats, rounds, phase infos, and the rows the
grounded-similarity stages read (benchmark answer sheets and scores); with the SQL of a
match's game spec, which lives once per distinct spec in ``game_specs``.

Plain functions of the store's :class:`~coop_tui.database.Database`, as Datasette's
``utils`` take a connection: :class:`~coop_tui.store.Store` hands each one its database.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from coop_tui.database import Database
from coop_tui.hashing import text_hash


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



def condition_key(condition: dict[str, Any]) -> str:
    """A short readable label of an experimental condition (stable order)."""
    parts = [f"{k}={condition[k]}" for k in sorted(condition) if condition[k] is not None]
    return " ".join(parts) or "-"



def match_status(db: Database, run_id: str) -> dict[str, str]:
    return {
        row["match_key"]: row["status"]
        for row in db.query("select match_key, status from matches where run_id = ?", [run_id])
    }


def matches(db: Database, run_id: str) -> list[dict[str, Any]]:
    return list(db.query(
        f"select *, {game_spec_sql()} as game_spec from matches where run_id = ? order by rowid",
        [run_id],
    ))


def match(db: Database, match_id: str) -> dict[str, Any] | None:
    rows = list(db.query(
        f"select *, {game_spec_sql()} as game_spec from matches where id = ? limit 1", [match_id]
    ))
    return rows[0] if rows else None


def seats(db: Database, match_id: str) -> list[dict[str, Any]]:
    return list(db.query("select * from seats where match_id = ? order by seat", [match_id]))


def rounds(db: Database, match_id: str) -> list[dict[str, Any]]:
    return list(db.query("select * from rounds where match_id = ? order by round, seat", [match_id]))


# ------------------------------------------------------------ grounded similarity reads
def benchmark_matches(db: Database, run_id: str, agent: str, benchmark: str) -> list[str]:
    """Ids of ``agent``'s finished answer sheets to ``benchmark`` in a run (the agent in
    seat 0 of a benchmark match), in replicate and sample order."""
    rows = db.execute(
        "select m.id from matches m join seats s on s.match_id = m.id and s.seat = 0"
        " where m.run_id = ? and m.mechanism = 'benchmark' and s.agent = ? and m.status = 'done'"
        " and json_extract(m.condition, '$.benchmark') = ? order by m.replicate, m.sample",
        [run_id, agent, benchmark],
    ).fetchall()
    return [row[0] for row in rows]


def phase_infos(db: Database, match_id: str, phase: str) -> list[dict[str, Any]]:
    """The ``info`` of a match's phases of one kind, in round order."""
    rows = db.execute(
        "select info from phases where match_id = ? and phase = ? order by round", [match_id, phase]
    ).fetchall()
    return [json.loads(row[0] or "{}") for row in rows]


def benchmark_answer_rows(db: Database, run_id: str
                          ) -> list[tuple[str, int, int | None, str, str | None]]:
    """(condition, sample, replicate, agent, item-phase info) of every finished benchmark
    answer sheet of a run: the input of the exogenous similarity matrices."""
    return db.execute(
        "select m.condition, m.sample, m.replicate, s.agent, p.info from matches m"
        " join seats s on s.match_id = m.id and s.seat = 0"
        " join phases p on p.match_id = m.id and p.phase = 'item'"
        " where m.run_id = ? and m.mechanism = 'benchmark' and m.status = 'done'",
        [run_id],
    ).fetchall()


def score_rows(db: Database, run_id: str) -> list[tuple[str, str, str, str]]:
    """(condition, judge, target, parsed score) of every valid score a judge gave in a
    run's finished ``score`` matches: the input of the endogenous similarity matrices."""
    return db.execute(
        "select m.condition, j.agent, t.agent, d.parsed from matches m"
        " join seats j on j.match_id = m.id and j.seat = 0"
        " join seats t on t.match_id = m.id and t.seat = 1"
        " join decisions d on d.match_id = m.id and d.phase = 'score' and d.valid = 1"
        " where m.run_id = ? and m.mechanism = 'score' and m.status = 'done'",
        [run_id],
    ).fetchall()
