"""The search boxes of the runs and matches screens, and the summary rows they list.

:func:`search_clause` turns a query (``game:pd agent:tft``) into a WHERE fragment over
the fields of :data:`RUN_SEARCH` or :data:`MATCH_SEARCH`; :func:`run_summaries` and
:func:`match_summaries` are the lists it narrows. Plain functions of the store's
:class:`~coop_tui.database.Database`.
"""

from __future__ import annotations

from typing import Any

from coop_tui.database import Database

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


# ------------------------------------------------------------ browsing (runs screen, inspector)
def run_summaries(db: Database, query: str = "", *, limit: int = 1000) -> list[dict[str, Any]]:
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
    return list(db.query(sql, [*args, limit]))


def match_summaries(
    db: Database, run_id: str, query: str = "", *, limit: int = 5000
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
    return list(db.query(sql, [run_id, *args, limit]))
