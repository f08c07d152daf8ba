"""Opening the analysis screen on a stored run in a pilot, for tests of its panels."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


@asynccontextmanager
async def loaded_analysis(db: Path, run_id: str, size: tuple[int, int] = (160, 48)) -> AsyncIterator[Any]:
    """The analysis screen of ``run_id`` once its report is loaded (a worker, waited for
    at most a minute), with nothing underneath it."""
    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen

    class ScreenApp(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()  # no setup screen underneath
            self.push_screen(AnalysisScreen(self.store, run_id))

    app = ScreenApp(db, replay_speed=0)
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        for _ in range(3000):
            if getattr(screen, "loaded", 0) >= 1:
                break
            await pilot.pause(0.02)
        assert screen.loaded >= 1 and screen.error is None
        yield screen
