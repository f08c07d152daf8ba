"""Reads of stored decisions: a match's decisions, the engine's reuse lookups (by cache key
or by content), the inspector's light list and single decision, and re-asks.

Plain functions of the store's :class:`~coop_tui.database.Database`, as Datasette's
``utils`` take a connection: :class:`~coop_tui.store.Store` hands each one its database.
"""

from __future__ import annotations

from typing import Any

from coop_tui.database import Database
from coop_tui.decisions import Decision
from coop_tui.store.codec import decision_from_row

DECISION_SELECT = (
    "select d.*, t.text as prompt_text from decisions d"
    " left join texts t on t.hash = d.prompt_hash"
)
"""Decision rows with their prompt text (content-addressed or, in old rows, inline)."""

PROMPT_SQL = "coalesce((select t.text from texts t where t.hash = d.prompt_hash), d.prompt)"
"""A decision's prompt JSON in SQL, for a query over ``decisions d``."""


def decisions(db: Database, match_id: str) -> list[Decision]:
    return [
        decision_from_row(r)
        for r in db.query(f"{DECISION_SELECT} where d.match_id = ? order by d.id", [match_id])
    ]


# ------------------------------------------------------------ lookups (engine cache)
def _first_decision(db: Database, sql: str, args: list[Any]) -> Decision | None:
    cursor = db.conn.execute(sql, args)
    row = cursor.fetchone()
    if row is None:
        return None
    return decision_from_row(dict(zip([c[0] for c in cursor.description], row, strict=True)))


def find_decision(db: Database, cache_key: str) -> Decision | None:
    return _first_decision(db, f"{DECISION_SELECT} where d.cache_key = ? limit 1", [cache_key])


def find_content(db: Database, content_key: str) -> Decision | None:
    return _first_decision(
        db,
        f"{DECISION_SELECT} where d.content_key = ? and d.valid = 1 order by d.id limit 1",
        [content_key],
    )


# ------------------------------------------------------------ browsing (inspector)
def decision_list(db: Database, match_id: str) -> list[dict[str, Any]]:
    """One light row per decision of a match (no prompt or response text)."""
    return list(
        db.query(
            """select id, round, phase, seat, agent, kind, valid, attempts, action,
                      distribution, parsed, coop_prob, latency_ms, error, reused
               from decisions where match_id = ? order by id""",
            [match_id],
        )
    )


def get_decision(db: Database, decision_id: int) -> Decision | None:
    rows = list(db.query(f"{DECISION_SELECT} where d.id = ?", [decision_id]))
    return decision_from_row(rows[0]) if rows else None


def decision_id(db: Database, cache_key: str) -> int | None:
    row = db.execute("select id from decisions where cache_key = ?", [cache_key]).fetchone()
    return None if row is None else int(row[0])


def decision_id_of(db: Database, decision: Decision) -> int | None:
    """The row id of a stored decision: by cache key, or for a strategy decision
    (which has none) by its match, round, phase and seat."""
    if decision.cache_key is not None:
        return decision_id(db, decision.cache_key)
    row = db.execute(
        "select id from decisions where match_id = ? and round = ? and phase = ?"
        " and seat = ? and cache_key is null order by id desc limit 1",
        [decision.match_id, decision.round, decision.phase, decision.seat],
    ).fetchone()
    return None if row is None else int(row[0])


def reasks_of(db: Database, decision_id: int) -> list[dict[str, Any]]:
    """Decisions re-asked from ``decision_id`` (see :mod:`coop_tui.reask`), oldest first."""
    return list(
        db.query(
            """select d.id, d.match_id, m.run_id, d.valid, d.action, d.created_at
               from matches m join decisions d on d.match_id = m.id
               where m.matchup = 'reask'
                 and json_extract(m.info, '$.reask_of.decision_id') = ?
               order by d.id""",
            [decision_id],
        )
    )
