"""End to end against the loopback OpenAI-compatible server, through the real CLI.

These are the foundation's promises: every decision stored once, ``--resume`` asks
nothing new, a ``kill -9`` then ``--resume`` ends with exactly the results of an
uninterrupted run, injected faults are absorbed, and the API key never reaches the
database.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

SECRET = "sk-loopback-SECRET-4242"


def answer_for(body: dict[str, Any]) -> str:
    """A deterministic answer per prompt, with prose around the JSON like real models."""
    text = json.dumps(body["messages"], sort_keys=True)
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    coop = h % 101
    return f"Let me weigh the options.\nI will mix.\n{{\"A0\": {coop}, \"A1\": {100 - coop}}}"


def write_sweep(path: Path, url: str, *, concurrency: int = 4, samples: int = 2) -> Path:
    path.write_text(
        f"""
name = "loop"
seed = 3
concurrency = {concurrency}
samples = {samples}

[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "LOOPBACK_KEY"
style = "cot"

[[experiments]]
game = "prisoners"
mechanism = "similarity"
matchup = "self"
agents = ["m"]
similarity = [0, 50, 100]
framing = ["similar", "different"]
"""
    )
    return path


EXPECTED_DECISIONS = 3 * 2 * 2 * 2  # similarity x framing x samples x seats


def cli(*args: str, wait: bool = True) -> Any:
    env = {**os.environ, "LOOPBACK_KEY": SECRET}
    cmd = [sys.executable, "-m", "coop_tui.cli", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def outcomes(db: Path) -> list[tuple[Any, ...]]:
    """What a run decided, independent of run ids: one row per decision."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        """select m.match_key, d.round, d.seat, d.phase, d.response, d.parsed, d.action, d.valid
           from decisions d join matches m on m.id = d.match_id order by 1, 2, 3, 4"""
    ).fetchall()
    conn.close()
    return rows


def count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def db_bytes(db: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(db) + suffix)
        if p.exists():
            data += p.read_bytes()
    return data


@pytest.fixture
def server() -> Any:
    with LoopbackServer(latency=0.05, chunks=5, answer=answer_for, api_key=SECRET) as srv:
        yield srv


@pytest.mark.slow
def test_sweep_stores_each_decision_once_and_resume_asks_nothing(server: Any, tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path / "s.toml", server.url)
    db = tmp_path / "a.db"
    first = cli("--batch", str(sweep), "--db", str(db))
    assert first.returncode == 0, first.stderr + first.stdout
    chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(chat) == EXPECTED_DECISIONS
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in chat)
    assert count(db, "select count(*) from decisions") == EXPECTED_DECISIONS
    assert count(db, "select count(distinct cache_key) from decisions") == EXPECTED_DECISIONS
    assert count(db, "select count(*) from decisions where valid = 1 and action is not null") == EXPECTED_DECISIONS
    assert count(db, "select count(*) from decisions where input_tokens > 0 and output_tokens > 0") == EXPECTED_DECISIONS

    again = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert again.returncode == 0, again.stderr
    assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == EXPECTED_DECISIONS
    assert count(db, "select count(*) from decisions") == EXPECTED_DECISIONS
    assert SECRET.encode() not in db_bytes(db)

    report = cli("report", "--db", str(db), "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["counts"]["decisions"] == EXPECTED_DECISIONS
    assert data["counts"]["invalid"] == 0
    exp = data["experiments"][0]
    assert exp["b_star"] == pytest.approx(0.5)
    assert SECRET not in report.stdout


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.4, chunks=4, answer=answer_for) as srv:
        sweep = write_sweep(tmp_path / "s.toml", srv.url, concurrency=2)
        clean = tmp_path / "clean.db"
        assert cli("--batch", str(sweep), "--db", str(clean)).returncode == 0

        killed = tmp_path / "killed.db"
        proc = cli("--batch", str(sweep), "--db", str(killed), wait=False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if killed.exists() and count(killed, "select count(*) from decisions") >= 7:
                    break
            except sqlite3.OperationalError:  # the schema is still being created
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        partial = count(killed, "select count(*) from decisions")
        assert 7 <= partial < EXPECTED_DECISIONS
        resumed = cli("--batch", str(sweep), "--db", str(killed), "--resume")
        assert resumed.returncode == 0, resumed.stderr
    assert count(killed, "select count(*) from runs") == 1
    assert count(killed, "select count(*) from decisions") == EXPECTED_DECISIONS
    assert count(killed, "select count(*) from matches where status = 'done'") == EXPECTED_DECISIONS // 2
    assert outcomes(killed) == outcomes(clean)


def test_injected_faults_are_retried_and_every_decision_is_valid(tmp_path: Path) -> None:
    with LoopbackServer(
        latency=0.02, chunks=4, answer=answer_for, fault_rate=0.3, seed=11, retry_after=0.05,
        hang=3.0, fault_kinds=("429", "500", "drop", "malformed", "timeout"),
    ) as srv:
        sweep = write_sweep(tmp_path / "s.toml", srv.url)
        text = sweep.read_text().replace('style = "cot"', 'style = "cot"\ntimeout = 1.0')
        sweep.write_text(text)
        db = tmp_path / "f.db"
        result = cli("--batch", str(sweep), "--db", str(db))
        faults = [r.fault for r in srv.requests if r.fault]
    assert result.returncode == 0, result.stderr + result.stdout
    assert len(faults) >= 3
    assert count(db, "select count(*) from decisions") == EXPECTED_DECISIONS
    assert count(db, "select count(*) from decisions where valid = 1") == EXPECTED_DECISIONS
    assert count(db, "select sum(transport_retries) from decisions") == len(faults)


@pytest.mark.slow
def test_a_server_that_dies_mid_sweep_fails_matches_quickly_then_resume_finishes(
    tmp_path: Path,
) -> None:
    """After the preflight, the only server dies: its matches fail with the real cause
    (connection refused), most without sending anything (the endpoint failed twice in a
    row), and ``--resume`` against the server brought back finishes the run."""
    srv = LoopbackServer(latency=0.01, chunks=2, answer=answer_for).start()
    port = srv.port
    sweep = write_sweep(tmp_path / "s.toml", srv.url, concurrency=2, samples=4)
    db = tmp_path / "d.db"
    code = (
        "import asyncio, sys, threading, time\n"
        "from coop_tui.spec import load_sweep\n"
        "from coop_tui.store import Store\n"
        "from coop_tui.sweep import run_sweep\n"
        "from coop_tui.errors import failure_summary\n"
        "sweep = load_sweep(sys.argv[1])\n"
        "summary = asyncio.run(run_sweep(sweep, Store(sys.argv[2])))\n"
        "print(summary.matches_failed, summary.matches_total, summary.transport_retries)\n"
        "print(failure_summary(summary.failures))\n"
    )
    srv.stop()  # dead from the first request on (the preflight is the runner's; see test_sweep_errors)
    env = {**os.environ, "LOOPBACK_KEY": SECRET}
    out = subprocess.run([sys.executable, "-c", code, str(sweep), str(db)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    counts, reasons = out.stdout.strip().splitlines()
    failed, total, retries = (int(x) for x in counts.split())
    assert failed == total == 24
    assert reasons == "connection refused: 24"
    # at most the first few requests retried (two tries each: first failure, probe after the
    # rest); the old pool made every request wait out rests of 5, 10, 20, 40, 60, 60 s
    assert retries <= 2 * 4
    srv = LoopbackServer(port=port, latency=0.01, chunks=2, answer=answer_for).start()
    try:
        resumed = subprocess.run(
            [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db),
             "--resume"], capture_output=True, text=True, timeout=300, env=env)
    finally:
        srv.stop()
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    conn = sqlite3.connect(db)
    statuses = conn.execute("select status, count(*) from matches group by status").fetchall()
    conn.close()
    assert dict(statuses).get("done") == 24
