"""Rows of a read-only query, read once while the database has not changed.

``report`` asks the same run-wide questions from several places (the report itself, the
actions analysis twice, the tournament metrics and CoopEval's tables both read the same
cross-play sums, every summary table asks which matches are not folded yet). Each of those
scans is tens of milliseconds per 10k matches; this remembers their rows for as long as
nothing was written: by this connection (``total_changes``) or by any other connection
(``PRAGMA data_version``). Any write drops every remembered result, so a reader never
sees rows older than the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_conn: Any = None
_version: tuple[int, int] | None = None
_rows: dict[tuple[str, tuple[Any, ...]], list[Any]] = {}


def rows(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """``conn.execute(sql, params).fetchall()``, or the same rows remembered from an earlier
    call when neither this nor another connection has written since (callers must not
    change the list)."""
    global _conn, _version
    version = (conn.total_changes, conn.execute("pragma data_version").fetchone()[0])
    if conn is not _conn or version != _version:
        _rows.clear()
        _conn, _version = conn, version
    key = (sql, tuple(params))
    found = _rows.get(key)
    if found is None:
        found = _rows[key] = conn.execute(sql, params).fetchall()
    return found
