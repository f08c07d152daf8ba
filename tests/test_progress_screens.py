"""Progress in the TUI means model calls: the live screen's status line and the runs
screen's line for a run this app plays show the time left from model calls and their
measured pace, the calls answered of those estimated and how many are in flight, as the
``--batch`` progress line does (coop_tui/eta.py).

The model is the loopback server; its first answer is held until the test has read the
screens, so "1 in flight" is a state the test waits for, not a moment it hopes to catch.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rich.console import Console

from coop_tui.app import CoopApp
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.runs import RunsScreen
from coop_tui.screens.setup import SetupScreen
from coop_tui.spec import build_sweep
from coop_tui.testing.server import LoopbackServer

ANSWER = 'I cooperate. {"A0": 100, "A1": 0}'


class Gate:
    """The loopback server's answer: the first request waits until :meth:`open`."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.asked = threading.Event()

    def __call__(self, body: dict[str, Any]) -> str:
        if not self.asked.is_set():
            self.asked.set()
            self.opened.wait(60)  # a hang guard: the test opens it as soon as it has looked
        return ANSWER

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gated() -> Iterator[tuple[LoopbackServer, Gate]]:
    gate = Gate()
    with LoopbackServer(latency=0.0, chunks=1, answer=gate) as server:
        try:
            yield server, gate
        finally:
            gate.open()


def shown(widget: Any) -> str:
    console = Console(width=300, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()


async def until(pilot: Any, condition: Callable[[], bool], what: str) -> None:
    """Let the app run until ``condition()`` holds; a hang guard, not a timing check."""
    for _ in range(3000):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.slow  # the setup screen, a live match and the runs screen: ~3 s on a quiet machine
async def test_live_and_runs_screens_show_calls_in_flight_and_the_eta(
        tmp_path: Any, gated: tuple[LoopbackServer, Gate]) -> None:
    server, gate = gated
    sweep = build_sweep({
        "name": "progress", "seed": 1,
        "agents": {"m": {"model": "openai/loopback", "api_base": server.url, "style": "direct"},
                   "tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "mechanism": "repetition", "rounds": 3,
                         "matchup": [["m", "tft"]], "agents": ["m", "tft"]}],
    })
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SetupScreen), "the setup screen")
        await app.screen.wait_ready()  # type: ignore[attr-defined]
        app.start_match(sweep)
        await until(pilot, lambda: isinstance(app.screen, LiveScreen), "the live screen")
        live = app.screen
        assert isinstance(live, LiveScreen)
        await until(pilot, lambda: bool(live.query("#live-status")), "the status line")
        status = live.query_one("#live-status")
        await until(pilot, lambda: "1 in flight" in shown(status), "the held call")
        # three rounds, one model call each; none answered, so nothing measured yet
        assert "eta ?  model calls 0/3, 1 in flight" in shown(status)

        await pilot.press("r")  # the runs screen: the run this app plays, with its progress
        await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the runs screen")
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        await until(pilot, lambda: runs.shown_run == live.session.run_id, "the run's matches")
        assert "eta ?  model calls 0/3, 1 in flight" in shown(runs.query_one("#runs-status"))
        await pilot.press("escape")
        assert app.screen is live

        gate.open()
        await asyncio.wait_for(live.wait_finished(), 120)  # a hang guard, not a timing check
        await pilot.pause()
        assert "eta 0:00:00  model calls 3/3, 0 in flight" in shown(status)


def test_a_replay_shows_no_eta() -> None:
    """A replay calls no model: the live screen asks its session for progress only when
    the session has it. (A strategy match's line, "eta 0:00:00 (from matches: no model
    agent)", is in the live layout snapshots.)"""
    from coop_tui.session import ReplaySession

    assert not hasattr(ReplaySession, "progress")
