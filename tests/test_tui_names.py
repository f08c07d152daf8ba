"""Stored names and typed searches reach the TUI's titles and notices as text, never as
Textual markup: a run called ``[/] x`` used to crash the runs screen (an unmatched closing
tag is a MarkupError) and ``[red]`` restyled its title."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable, Input

from coop_tui.screens.live import LiveScreen
from coop_tui.screens.runs import RunsScreen
from tests.test_hostile import cli
from tests.test_tui_screens import ScreenApp, until

RUN_NAME = "[/] evil [red]run"
AGENT = "[/]agent[bold]"


def shown_title(widget: Widget) -> str:
    """The border title as the terminal shows it (Textual keeps it as markup)."""
    return Content.from_markup(widget.border_title or "").plain


def _stored_run(tmp_path: Path) -> Path:
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "plain"\n[agents.a]\nstrategy = "always_cooperate"\n'
                     '[[experiments]]\ngame = "prisoners"\nagents = ["a"]\n')
    db = tmp_path / "x.db"
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    conn = sqlite3.connect(db)  # as an import or an older version could have stored them
    with conn:
        conn.execute("update runs set name = ?", [RUN_NAME])
        conn.execute("update seats set agent = ?", [AGENT])
    conn.close()
    return db


async def test_markup_in_names_and_searches_is_shown_as_written(tmp_path: Path) -> None:
    app = ScreenApp(_stored_run(tmp_path), RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await until(pilot, lambda: screen.loaded >= 1 and screen.matches_loaded >= 1)
        matches = screen.query_one("#matches-table", DataTable)
        assert f"Matches of {RUN_NAME} (1)" in shown_title(matches)

        box = screen.query_one("#runs-filter", Input)
        box.focus()
        runs = screen.query_one("#runs-table", DataTable)
        await pilot.press(*"[/]")
        await until(pilot, lambda: shown_title(runs) == "Runs (1) matching '[/]'")
        box.value = ""
        await until(pilot, lambda: shown_title(runs) == "Runs (1)" and matches.row_count == 1)

        matches.focus()
        await pilot.press("enter")  # the replay: one pane per seat, titled by its agent
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        live = app.screen
        assert isinstance(live, LiveScreen)
        await live.wait_finished()
        assert [shown_title(pane) for pane in live.panes] == [f"Seat 1 · {AGENT}", f"Seat 2 · {AGENT}"]
