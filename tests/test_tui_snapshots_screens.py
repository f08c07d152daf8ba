"""Snapshot tests of the runs, inspector and analysis layouts at 100x30.

The data are the strategy sweeps of ``test_tui_screens`` with fixed run ids, creation
times (shown in UTC) and latencies, played one decision at a time, so every id, date and
number on screen is the same on every machine. The database is opened by a relative
path so the title shows no temporary directory. Update with ``--snapshot-update`` after
checking the new SVGs by eye.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_tui_screens import SIM_RUN, TOUR_RUN, ScreenApp, build_db
from textual.widgets import TextArea

from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.runs import RunsScreen
from coop_tui.store import Store

SIZE = (100, 30)


@pytest.fixture
def snapshot_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.chdir(tmp_path)
    asyncio.run(build_db(tmp_path / "coop.db", None))
    yield Path("coop.db")
    monkeypatch.undo()
    time.tzset()


def wait_for(attr: str) -> Callable[[Any], Any]:
    """A ``run_before`` that lets the screen load its data (``screen.<attr> >= 1``)."""

    async def run_before(pilot: Any) -> None:
        for _ in range(500):
            screen = pilot.app.screen
            if getattr(screen, attr, 0) and not any(
                not w.is_finished for w in screen.workers
            ):
                break
            await pilot.pause(0.02)
        await pilot.pause()

    return run_before


def test_runs_layout(snap_compare: Any, snapshot_db: Path) -> None:
    app = ScreenApp(snapshot_db, RunsScreen)
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_for("matches_loaded"))


@pytest.mark.slow
def test_inspector_layout(snap_compare: Any, snapshot_db: Path) -> None:
    store = Store(snapshot_db)
    match = next(m for m in store.match_summaries(TOUR_RUN) if m["agents"] == "tft · alld")
    decision = next(r for r in store.decision_list(match["id"]) if r["round"] == 2 and r["seat"] == 0)
    store.close()
    app = ScreenApp(snapshot_db, lambda s: InspectorScreen(s, decision["id"]))

    async def run_before(pilot: Any) -> None:
        await wait_for("original_prompt")(pilot)
        # the focused prompt editor's cursor blinks: stop it (Textual then draws none), or the picture
        # depends on the moment it is taken
        for editor in pilot.app.screen.query(TextArea):
            editor.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_analysis_tournament_layout(snap_compare: Any, snapshot_db: Path) -> None:
    app = ScreenApp(snapshot_db, lambda s: AnalysisScreen(s, TOUR_RUN, export_dir="exports"))
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_for("loaded"))


def test_analysis_similarity_layout(snap_compare: Any, snapshot_db: Path) -> None:
    app = ScreenApp(snapshot_db, lambda s: AnalysisScreen(s, SIM_RUN, export_dir="exports"))
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_for("loaded"))
