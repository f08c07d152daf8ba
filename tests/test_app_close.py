"""Closing the app while a thread worker is inside a read of the store.

Screens load runs, matches, decisions, the inspector and the report in thread workers on
the app's one SQLite connection. Closing that connection under another thread's running
query crashes the process (two xdist workers segfaulted so), so the app interrupts running
reads, waits for them, and only then closes the store; a worker that starts afterwards is
told the app is closing and reads nothing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

from coop_tui.app import CoopApp

ENDLESS = ("with recursive c(i) as (select 1 union all select i + 1 from c) "
           "select count(mark(i)) from c")
"""A read that never ends by itself; ``mark`` says it is running."""


async def test_closing_interrupts_a_running_read_and_closes_the_store_after_it(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "close.db")
    running = threading.Event()
    seen: dict[str, Any] = {}

    def worker_read() -> None:
        with app.reader() as open_:
            seen["open"] = open_
            try:
                app.store.db.conn.execute(ENDLESS).fetchone()
            except sqlite3.OperationalError as exc:
                seen["error"] = str(exc)
            seen["store_still_open"] = app._store is not None

    async with app.run_test() as pilot:
        # the first screen mounted first: Textual's Select fails to mount (NoMatches) when
        # the app exits under it, which is not what this test is about
        await pilot.pause()
        app.store.db.conn.create_function("mark", 1, lambda i: running.set() or i)
        thread = threading.Thread(target=worker_read)
        thread.start()
        await asyncio.to_thread(running.wait)
    await asyncio.to_thread(thread.join)
    assert seen == {"open": True, "error": "interrupted", "store_still_open": True}
    assert app._store is None
    with app.reader() as open_:  # a worker starting now reads nothing
        assert open_ is False
