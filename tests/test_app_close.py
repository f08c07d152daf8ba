"""Closing the app while a thread worker is inside a read of the store, and a worker's
result arriving after its screen has gone.

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

import pytest
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Static

from coop_tui.app import CoopApp
from coop_tui.screens.widgets import NavScreen

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


class _Panel(NavScreen):
    """A screen whose thread worker hands its result back through ``from_worker``."""

    def compose(self) -> ComposeResult:
        yield Static("", id="panel-text")

    def show(self, text: str) -> None:
        self.query_one("#panel-text", Static).update(text)
        self.app.shown.append(text)  # type: ignore[attr-defined]


class _PanelApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.shown: list[str] = []

    def on_mount(self) -> None:
        self.push_screen(_Panel())


async def from_thread(screen: NavScreen, callback: Any, *args: Any) -> None:
    """``screen.from_worker`` called from another thread, as a thread worker calls it."""
    await asyncio.to_thread(screen.from_worker, callback, *args)


async def test_a_worker_result_reaches_a_shown_screen_and_not_a_closed_one() -> None:
    app = _PanelApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        panel = app.screen
        assert isinstance(panel, _Panel)
        await from_thread(panel, panel.show, "first")
        assert app.shown == ["first"]
        # a screen pushed over it: still shown underneath, still updated
        app.push_screen(Screen())
        await pilot.pause()
        await from_thread(panel, panel.show, "under")
        assert app.shown == ["first", "under"]
        app.pop_screen()
        app.pop_screen()  # closed: its worker's late result has nowhere to go
        await pilot.pause()
        await from_thread(panel, panel.show, "late")
        assert app.shown == ["first", "under"]


async def test_a_widget_missing_from_a_shown_screen_is_still_an_error() -> None:
    app = _PanelApp()
    with pytest.raises(NoMatches):
        async with app.run_test() as pilot:
            await pilot.pause()
            panel = app.screen
            assert isinstance(panel, _Panel)
            await panel.query_one("#panel-text").remove()
            await from_thread(panel, panel.show, "lost")
