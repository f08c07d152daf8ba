"""Snapshot tests of the setup and live layouts at 100x30 and 160x48.

Strategies only (deterministic); the run id and the database path are pinned so the
screens are the same on every run. Update with ``pytest --snapshot-update`` after an
intended layout change, and look at the report before committing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_tui.app import CoopApp
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.setup import SetupScreen
from coop_tui.session import MatchSetup

SIZES = [(100, 30), (160, 48)]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the title shows the (relative) database path
    return tmp_path


async def _setup_ready(pilot) -> None:  # type: ignore[no-untyped-def]
    screen = pilot.app.screen
    assert isinstance(screen, SetupScreen)
    await screen.wait_ready()
    await pilot.pause()


async def _strategies_match(pilot) -> None:  # type: ignore[no-untyped-def]
    await _setup_ready(pilot)
    pilot.app.start_match(
        MatchSetup(seats=["tit_for_tat", "always_defect"], mechanism="repetition",
                   params={"rounds": 4, "payoff": "mean"})
    )
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, LiveScreen)
    await screen.wait_finished()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_setup_layout(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = CoopApp(Path("snap.db"), sweep_dir=in_tmp)
    assert snap_compare(app, terminal_size=size, run_before=_setup_ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_live_layout(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = CoopApp(Path("snap.db"), sweep_dir=in_tmp, run_id="snapshot-run")
    assert snap_compare(app, terminal_size=size, run_before=_strategies_match)
