"""The store's connection, with sqlite-utils' table helpers loaded only when used.

sqlite-utils imports pandas when it is installed (about half a second), and most
commands never need its helpers: ``report``, the analysis screen and the engine's writes
are plain SQL. :class:`Database` answers the few calls they make (``execute``, ``query``,
``table_names``, ``conn``) itself and hands everything else (``db["runs"].insert(...)``,
``rows_where``, ``columns_dict``, ...) to a real ``sqlite_utils.Database`` on the same
connection, created the first time it is asked for.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coop_tui.errors import SpecError
from coop_tui.inputs import file_kind

BUSY_TIMEOUT = 30.0
"""Seconds a connection waits for another connection's write lock before SQLite gives up
with "database is locked". Serve tabs, the TUI and several ``--batch`` sweeps share one
database; each holds the lock for one short transaction at a time."""


DATABASE_MODE = 0o600
"""Permissions of a new database file (before the umask, which may only make them
stricter). A database holds every prompt and answer of its runs: another local user has
no business reading it. SQLite gives its ``-wal`` and ``-shm`` files the same mode. To
share one, make the file first with the mode wanted (an empty file is a new database)."""


def check_database_path(path: Path | str, field: str = "--db") -> None:
    """Refuse a database path that exists and is not a regular file (a symlink to one is
    fine), before SQLite opens it: SQLite would write ``/dev/null-journal`` beside a
    device, block on a FIFO, or fail on a directory with a message about something else."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent (made below), or unreadable: SQLite's own error says which
        return
    if not stat.S_ISREG(mode):
        raise SpecError(field, f"{path} is {file_kind(mode)}, not a database file; give the path "
                               "of a database file (a new one is made where none exists)")


def create_private(path: Path | str) -> None:
    """Make ``path`` an empty file of :data:`DATABASE_MODE` when it does not exist (SQLite
    would make it 0644 under the usual umask). An existing file keeps its mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DATABASE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def shared_mode() -> int:
    """The mode a file the user makes to share (an export, a figure) gets: what ``open``
    would give it under the user's umask. Temporary files renamed into place are born
    0600, so they are given this mode before the rename."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def use_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode (a no-op when it is), waiting up to :data:`BUSY_TIMEOUT`
    while another process holds the lock.

    SQLite refuses a journal-mode change with "database is locked" at once, without its
    busy handler, while another connection is changing the file too: of 8 processes that
    opened one new database at the same moment, about 1 in 25 failed here. Waiting and
    asking again is what the busy handler would have done."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction taken with ``BEGIN IMMEDIATE``, committed at the end (rolled
    back on an error), like ``with conn:`` otherwise.

    A plain (deferred) ``BEGIN`` followed by a read takes a snapshot, and the first write
    after it fails at once with "database is locked" when another process committed in
    between: in WAL mode SQLite cannot wait for that. ``IMMEDIATE`` takes the write lock
    first, waiting up to the busy timeout, so every read inside sees the latest data.
    A transaction already open is ended here as ``with conn:`` would end it: it holds the
    lock already, and one left open must not keep it."""
    if conn.in_transaction:
        with conn:
            yield
        return
    conn.execute("begin immediate")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    conn.commit()


class Database:
    """A sqlite3 connection that behaves like ``sqlite_utils.Database`` where it is used."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._utils: Any = None

    @property
    def utils(self) -> Any:
        """The ``sqlite_utils.Database`` on this connection (imported on first use)."""
        if self._utils is None:
            import sqlite_utils

            self._utils = sqlite_utils.Database(self.conn)
        return self._utils

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] | None = None) -> sqlite3.Cursor:
        if parameters is None:
            return self.conn.execute(sql)
        return self.conn.execute(sql, parameters)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Rows as dicts, like ``sqlite_utils.Database.query``."""
        cursor = self.execute(sql, params)
        names = [d[0] for d in cursor.description]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "select name from sqlite_master where type = 'table'")]

    def __getitem__(self, table: str) -> Any:
        return self.utils[table]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.utils, name)
