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

import threading
from collections.abc import Sequence
from typing import Any

_state = threading.local()
"""Per thread (a connection belongs to the thread that made it): the last connection
asked, its state then, and the rows read on it since."""


def rows(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """``conn.execute(sql, params).fetchall()``, or the same rows remembered from an earlier
    call on this connection when neither it nor another connection has written since
    (callers must not change the list)."""
    version = (conn.total_changes, conn.execute("pragma data_version").fetchone()[0])
    if getattr(_state, "conn", None) is not conn or _state.version != version:
        # the connection object itself is held, never its id (a later one may reuse it)
        _state.conn, _state.version, _state.rows = conn, version, {}
    key = (sql, tuple(params))
    found = _state.rows.get(key)
    if found is None:
        found = _state.rows[key] = conn.execute(sql, params).fetchall()
    return found


def forget() -> None:
    """Drop this thread's remembered rows (and the connection they were read on)."""
    _state.__dict__.clear()
