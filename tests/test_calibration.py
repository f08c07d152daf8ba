"""``--dry-run`` prints an embedded-model sweep's wall time: calls x seconds per call, the
speed either stored (the last run of the sweep in the database) or measured now.

The embedded model reports the time it generated apart from the time a reply waited for
the model (another seat held it), so a stored run's mean is the speed of one call
whatever the run's concurrency.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.local import LocalAgent
from coop_tui.calibration import _request, stored_speed, wall_time_text
from coop_tui.decisions import NullSink
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep


def sweep_data(kind: str) -> dict[str, Any]:
    agent = {"model": "local/smollm2", "style": "direct"} if kind == "local" else {"strategy": "random"}
    return {"name": "calibrated", "seed": 1, "samples": 3,
            "agents": {"m": agent, "tft": {"strategy": "tit_for_tat"}},
            "experiments": [{"game": "prisoners", "agents": ["m"], "opponents": ["tft"],
                             "matchup": "versus"}]}


async def stored_run(db: Path, seconds: float) -> str:
    """A real run of the sweep's shape (the model seat played by a strategy, for speed),
    its model seat's decisions then given the times an embedded model records."""
    store = Store(db)
    summary = await run_sweep(build_sweep(sweep_data("strategy")), store)
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("update decisions set latency_ms = ?, queue_ms = 0 where agent = 'm'", [seconds * 1000])
    conn.commit()
    conn.close()
    return summary.run_id


async def test_the_stored_speed_is_the_mean_call_of_the_sweeps_last_run(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    sweep = build_sweep(sweep_data("local"))
    assert stored_speed(db, sweep) is None  # no database yet
    run_id = await stored_run(db, 2.5)
    speed = stored_speed(db, sweep)
    assert speed is not None and speed.source == "stored"
    assert speed.seconds == pytest.approx(2.5)
    assert run_id in speed.detail and str(db) in speed.detail
    other = build_sweep({**sweep_data("local"), "name": "another"})
    assert stored_speed(db, other) is None  # another sweep's runs say nothing about this one


async def test_dry_run_prints_the_wall_time_from_the_stored_speed_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    await stored_run(db, 4.0)
    path = tmp_path / "s.toml"
    path.write_text("""
name = "calibrated"
seed = 1
samples = 3

[agents.m]
model = "local/smollm2"
style = "direct"

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
agents = ["m"]
opponents = ["tft"]
matchup = "versus"
""")
    before = db.stat().st_mtime_ns
    done = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(path), "--db", str(db),
                           "--dry-run"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "estimated wall time ~12 s: 3 embedded-model calls x 4.0 s per call (the mean of 3 calls of run" in done.stdout
    assert db.stat().st_mtime_ns == before


def test_wall_time_text() -> None:
    assert [wall_time_text(s) for s in (12.4, 75, 3 * 3600 + 5 * 60)] == ["12 s", "1 min 15 s", "3 h 05 min"]


def _dry_run_against_tft(tmp_path: Path, model: str) -> subprocess.CompletedProcess[str]:
    """``--dry-run`` of a sweep where ``model`` (direct style) plays tit-for-tat, into a
    database path that must stay unwritten."""
    path = tmp_path / "s.toml"
    path.write_text(f"""
name = "dry"
[agents.m]
model = "{model}"
style = "direct"
[agents.tft]
strategy = "tit_for_tat"
[[experiments]]
game = "prisoners"
agents = ["m"]
opponents = ["tft"]
matchup = "versus"
""")
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(path), "--db",
                           str(tmp_path / "none.db"), "--dry-run"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "300"})


@pytest.mark.slow
def test_dry_run_measures_the_speed_when_nothing_is_stored(tmp_path: Path) -> None:
    done = _dry_run_against_tft(tmp_path, "local/smollm2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "embedded-model calls x" in done.stdout and "measured now, one call per agent setting (1)" in done.stdout
    assert not (tmp_path / "none.db").exists()


@pytest.mark.slow
async def test_a_reply_that_waited_for_the_model_reports_the_wait_apart() -> None:
    """Two replies at once take turns on one model: the second's wait is queue time, not
    latency, so the stored latency is what one call costs."""
    agent = LocalAgent("local", style="direct", seed=1)
    request, messages = _request(200)
    one, two = await asyncio.gather(agent.reply(request, messages, NullSink()),
                                    agent.reply(request, messages, NullSink()))
    first, second = sorted((one, two), key=lambda r: r.queue_ms or 0.0)
    assert second.queue_ms is not None and first.queue_ms is not None
    assert second.queue_ms > 0.5 * first.latency_ms  # it waited about one whole reply
    assert first.queue_ms < first.latency_ms  # the first had the model to itself


def test_a_model_that_cannot_run_leaves_the_dry_run_without_a_wall_time(tmp_path: Path) -> None:
    (tmp_path / "bad.gguf").write_text("not a model")
    done = _dry_run_against_tft(tmp_path, "local:bad.gguf")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no wall time estimate: the embedded model could not be timed: llama.cpp could not load" in done.stdout
    assert not (tmp_path / "none.db").exists()
