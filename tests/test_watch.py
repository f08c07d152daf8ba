"""``coop-tui watch``: a headless sweep publishes its events on a local socket
(coop_tui/channel.py) and a watcher shows its dashboard and its matches' reasoning live
(coop_tui/watch.py, screens/watch.py).

The publisher's rules are tested in-process with real sockets: permissions, the short-path
fallback, nothing serialised without a watcher, deltas dropped (never waited for) for a
slow watcher, a lagging watcher told to resync, secrets scrubbed. End to end, real
``coop-tui --batch`` processes play against a loopback server that holds each answer
back for a long time after streaming its reasoning, so the test can see the reasoning on
the watcher while the database has no decision for that match yet; then the sweep is
stopped (SIGTERM: "sweep ended") or killed (SIGKILL: "sweep process is gone").
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_tui import channel
from coop_tui.channel import Publisher, decode, encode, subscribe
from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, MatchDone, ReasoningDelta, RunStarted, TextDelta
from coop_tui.redact import MASK, register_secret
from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer

KEY = "sk-watch-test-0123456789abcdef"
REASONING = "Thinking it over: tit for tat rewards cooperation, so I cooperate first."
DEADLINE = 120.0
"""Only guards against a hang: every wait below ends on an event or a row."""


def decision(match_id: str = "m1", seat: int = 0) -> Decision:
    return Decision(match_id=match_id, round=1, phase="play", seat=seat, kind="mixed", agent="a",
                    prompt=[], response='{"choice": "A0"}', reasoning="", parsed={"choice": "A0"},
                    valid=True, attempts=1, error=None, cache_key="k", content_key="c",
                    action=0, cooperated=True, coop_prob=1.0)


async def read_until(reader: asyncio.StreamReader, kind: str) -> list[dict]:
    lines = []
    while True:
        raw = await asyncio.wait_for(reader.readline(), DEADLINE)
        assert raw, f"the channel closed before a {kind!r} line"
        lines.append(json.loads(raw))
        if lines[-1]["type"] == kind:
            return lines


# ------------------------------------------------------------------ the publisher
async def test_the_socket_is_0600_beside_the_database_and_removed_at_the_end(tmp_path: Path) -> None:
    pub = Publisher(tmp_path / "runs.db")
    address = await pub.start()
    path = channel.socket_of(address)
    assert path.parent == tmp_path and stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    await pub.close()
    assert not path.exists()


async def test_a_path_too_long_for_af_unix_falls_back_to_a_private_folder(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    pub = Publisher(deep / "runs.db")
    path = channel.socket_of(await pub.start())
    assert len(os.fsencode(path)) <= channel.MAX_SOCKET_PATH
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    got = subscribe(await asyncio.sleep(0, pub.address))
    hello = await asyncio.wait_for(anext(got), DEADLINE)
    assert hello["type"] == "hello"
    await got.aclose()
    await pub.close()
    assert not path.parent.exists()


async def test_with_no_watcher_no_event_is_serialised(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(channel, "encode", lambda event: calls.append(event) or [])
    pub = Publisher(tmp_path / "runs.db")
    await pub.start()
    for i in range(1000):
        pub(TextDelta("m1", 0, f"token {i}"))
    pub(DecisionDone(decision()))
    assert calls == []
    await pub.close()


async def test_a_slow_watcher_loses_deltas_not_the_sweep_and_a_full_queue_asks_it_to_resync(
        tmp_path: Path) -> None:
    pub = Publisher(tmp_path / "runs.db", queue_lines=50)
    await pub.start()
    path = str(channel.socket_of(pub.address))
    slow_reader, slow_writer = await asyncio.open_unix_connection(path, limit=channel.LINE_LIMIT)  # never reads for now
    fast = subscribe(pub.address)
    assert (await anext(fast))["type"] == "hello"
    while len(pub.watchers) < 2:
        await asyncio.sleep(0)
    slow = pub.watchers[0]
    big = "x" * 65536
    for _ in range(2000):  # up to 130 MB: far more than the socket buffers hold
        pub(TextDelta("m1", 0, big))
        assert slow.queue.qsize() <= 50  # bounded, and the call returned without waiting
        if slow.dropped:
            break
        assert (await asyncio.wait_for(anext(fast), DEADLINE))["type"] == "TextDelta"
    assert slow.dropped == 1
    pub(TextDelta("m1", 0, big))
    assert slow.dropped == 2
    pub(DecisionDone(decision()))  # a structural event that does not fit: lagging
    assert slow.lagging == 1
    lines = await read_until(slow_reader, "lagging")
    assert lines[-1]["dropped"] == slow.dropped
    # the other watcher read along: it lost nothing and got every line in order
    got = [(await asyncio.wait_for(anext(fast), DEADLINE))["type"] for _ in range(3)]
    assert got == ["TextDelta", "TextDelta", "DecisionDone"]
    assert pub.watchers[1].dropped == 0 and pub.watchers[1].lagging == 0
    slow_writer.close()
    await fast.aclose()
    await pub.close()


async def test_secrets_are_scrubbed_on_the_channel(tmp_path: Path) -> None:
    register_secret(KEY)
    pub = Publisher(tmp_path / "runs.db")
    await pub.start()
    got = subscribe(pub.address)
    assert (await anext(got))["type"] == "hello"
    pub(ReasoningDelta("m1", 0, f"the header said Bearer {KEY} and more"))
    d = decision()
    d.response = f"my key is {KEY}"
    pub(DecisionDone(d))
    pub(MatchDone("m1", (1.0, 2.0), status="failed", error=f"HTTP 401: Incorrect API key {KEY}"))
    seen = [await anext(got) for _ in range(3)]
    text = json.dumps(seen)
    assert KEY not in text and MASK in text
    await got.aclose()
    await pub.close()


def test_events_survive_the_wire() -> None:
    d = decision()
    back = decode(json.loads(encode(DecisionDone(d))[0]))
    assert isinstance(back, DecisionDone)
    assert (back.decision.action, back.decision.cooperated, back.decision.seat) == (0, True, 0)
    done = decode(json.loads(encode(MatchDone("m1", (1.5, 2.0)))[0]))
    assert done == MatchDone("m1", (1.5, 2.0))
    start = decode(json.loads(encode(RunStarted("r", "n", 3, 9))[0]))
    assert start == RunStarted("r", "n", 3, 9)


# ------------------------------------------------------------------ end to end
SWEEP = """
name = "watched"
seed = 3
samples = {samples}
concurrency = 2

[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "WATCH_TEST_KEY"

[agents.tft]
strategy = "tit_for_tat"

[agents.alld]
strategy = "always_defect"

[[experiments]]
name = "strategies first"
game = "prisoners"
agents = ["tft"]
opponents = ["alld"]
matchup = "versus"

[[experiments]]
name = "the model against tit for tat"
game = "prisoners"
agents = ["m"]
opponents = ["tft"]
matchup = "versus"
answer = "choice"
"""


class Gate:
    """Holds the model's first answer until the watcher follows the stream (``open``):
    the server asks it for the reasoning text when the request arrives."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def open(self) -> None:
        self.event.set()

    def __call__(self, body: dict) -> str:
        self.event.wait(DEADLINE)  # the server's loop waits: this test sends one request
        # long enough that its start is shown at once: the engine holds back a stream's last
        # characters (as many as the longest form of a secret) until more text shows they
        # do not begin a secret
        return f"{REASONING} {REASONING} {REASONING} (key {KEY})"


@pytest.fixture
def held_server() -> Iterator[LoopbackServer]:
    """Streams the reasoning (with the API key in it) once the gate opens, then holds the
    answer for ten minutes: the decision cannot be stored while a test looks."""
    gate = Gate()
    with LoopbackServer(ttft=0.0, latency=600.0, chunks=1, answer='{"choice": "A0"}',
                        reasoning=gate) as server:
        server.gate = gate  # type: ignore[attr-defined]
        yield server
        gate.open()


def start_sweep(tmp_path: Path, server: LoopbackServer, samples: int = 1) -> tuple[subprocess.Popen, Path]:
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP.format(url=server.url, samples=samples))
    db = tmp_path / "w.db"
    env = {**os.environ, "WATCH_TEST_KEY": KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db), "--yes"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, db


def wait_for_channel(proc: subprocess.Popen, db: Path) -> str:
    """The run id, once the sweep has named its channel and a model call is in flight
    (polled: only the other process's database can tell)."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        if db.exists():
            with sqlite3.connect(db) as conn, _suppress():
                row = conn.execute("select run_id from run_leases where channel is not null"
                                   " and channel != ''").fetchone()
                if row:
                    return row[0]
        time.sleep(0.05)
    raise AssertionError("the sweep never named its channel")


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, *_):  # a table not created yet
        return kind is not None and issubclass(kind, sqlite3.OperationalError)


def stored_decisions(db: Path, match_prefix: str) -> int:
    """The model's decisions stored for a match (tit for tat's move is stored at once)."""
    with sqlite3.connect(db) as conn:
        return conn.execute("select count(*) from decisions where match_id like ? and agent = 'm'",
                            [match_prefix + "%"]).fetchone()[0]


def watch_plain(db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coop_tui.cli", "watch", "--plain", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lines_until(proc: subprocess.Popen, needle: str) -> list[str]:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if needle in line:
            return seen
    raise AssertionError(f"the watcher ended without {needle!r}:\n" + "\n".join(seen)
                         + (proc.stderr.read() if proc.stderr else ""))


@pytest.mark.slow
def test_a_late_watcher_sees_the_dashboard_and_reasoning_before_the_answer_is_stored(
        tmp_path: Path, held_server: LoopbackServer) -> None:
    sweep, db = start_sweep(tmp_path, held_server)
    watcher = None
    try:
        wait_for_channel(sweep, db)
        watcher = watch_plain(db)
        head = lines_until(watcher, "following the sweep's events live")
        # late: the strategy match finished before the watcher attached, read from the database
        assert any("strategies first: matches 1 done, 0 running, 0 failed of 1" in line
                   for line in head), head
        held_server.gate.open()
        seen = lines_until(watcher, "reasoning:")
        if REASONING[:20] not in seen[-1]:  # the reasoning may arrive in pieces
            seen += lines_until(watcher, REASONING[-12:])
        match = seen[-1].split()[1]
        assert stored_decisions(db, match) == 0  # shown live, not yet in the database
        text = "\n".join(seen)
        assert KEY not in text and REASONING[:20] in text
        sweep.send_signal(signal.SIGTERM)
        tail = lines_until(watcher, "sweep ended")
        assert watcher.wait(DEADLINE) == 0
        rest = watcher.stdout.read() if watcher.stdout else ""
        assert "stopped" in "\n".join(tail) + rest
        assert sweep.wait(DEADLINE) == 143
        assert not list(tmp_path.glob(".w.db.watch-*.sock"))  # the socket is gone
    finally:
        for proc in (sweep, watcher):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_a_killed_sweep_is_reported_gone(tmp_path: Path, held_server: LoopbackServer) -> None:
    sweep, db = start_sweep(tmp_path, held_server)
    watcher = None
    try:
        wait_for_channel(sweep, db)
        watcher = watch_plain(db)
        lines_until(watcher, "following the sweep's events live")
        held_server.gate.open()
        lines_until(watcher, "reasoning:")
        sweep.send_signal(signal.SIGKILL)
        sweep.wait(DEADLINE)
        lines_until(watcher, "sweep process is gone")
        assert watcher.wait(DEADLINE) == 0
    finally:
        for proc in (sweep, watcher):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_watch_with_no_running_run_exits_2_naming_run(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    Store(db).close()
    done = subprocess.run([sys.executable, "-m", "coop_tui.cli", "watch", "--db", str(db)],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 2
    assert "RUN" in done.stderr and "no running run" in done.stderr


@pytest.mark.slow
async def test_the_watch_screen_shows_the_dashboard_and_follows_a_match_live(
        tmp_path: Path, held_server: LoopbackServer) -> None:
    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen
    from coop_tui.screens.runs import RunsScreen
    from coop_tui.screens.watch import WatchScreen

    sweep, db = start_sweep(tmp_path, held_server)
    try:
        run_id = await asyncio.to_thread(wait_for_channel, sweep, db)
        store = Store(db)
        run = store.run(run_id)
        store.close()
        app = CoopApp(db, watch=run)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, WatchScreen)
            await asyncio.wait_for(screen.attached.wait(), DEADLINE)
            exp = screen.state.experiments[0]
            assert (exp.done, exp.total) == (1, 1)
            # the runs screen marks the run live and opens the same view
            runs = RunsScreen(app.store)
            await app.push_screen(runs)
            while not runs.loaded:
                await pilot.pause()
            assert run_id in runs.live
            cell = runs.query_one("#runs-table").get_row(run_id)[3]
            assert "live" in str(cell)
            await pilot.press("w")
            screen = app.screen
            assert isinstance(screen, WatchScreen) and screen.run["id"] == run_id
            await asyncio.wait_for(screen.attached.wait(), DEADLINE)
            while not screen.state.connected:
                await pilot.pause()
            held_server.gate.open()
            while not screen.state.running:
                await pilot.pause()
            await pilot.press("f")
            live = app.screen
            assert isinstance(live, LiveScreen)
            session = live.session
            while not _pane_has(live, REASONING[:20]):
                await pilot.pause()
            assert stored_decisions(db, session.match_id) == 0
            assert not _pane_has(live, KEY)
            sweep.send_signal(signal.SIGTERM)
            await asyncio.wait_for(screen.finished.wait(), DEADLINE)
            assert screen.state.status == "ended"
            assert "sweep ended (stopped" in screen.state.headline()
    finally:
        if sweep.poll() is None:
            sweep.kill()
        sweep.wait()


def _pane_has(live, text: str) -> bool:
    from coop_tui.screens.widgets import DecisionBlock

    return any(text in (block.text + block.reasoning_text)
               for pane in live.panes for block in pane.query(DecisionBlock))


def test_the_dashboard_counts_matches_decisions_and_fills_the_cooperation_curve() -> None:
    from coop_tui.events import MatchStarted, RunDone
    from coop_tui.watch import WatchState

    plan = {"matches_total": 4, "model_calls": 8, "models": ["a"],
            "experiments": {"1": {"name": "the model", "total": 4}}}
    state = WatchState({"id": "r1", "name": "n", "spec": json.dumps({"budget_usd": 2.0})},
                       {"plan": plan})
    for i, cooperated in enumerate((True, False)):
        mid = f"m{i}"
        state.apply(MatchStarted("r1", mid, 1, "prisoners", "none", ("a", "tft"),
                                 {"similarity": 80}), now=float(i))
        d = decision(mid)
        d.cooperated, d.valid, d.attempts, d.cost_usd = cooperated, cooperated, 2, 0.5
        state.apply(DecisionDone(d), now=i + 0.5)
        state.apply(MatchDone(mid, (1.0, 1.0)), now=i + 0.6)
    exp = state.experiments[1]
    assert (exp.done, exp.running, exp.total, exp.decisions, exp.calls) == (2, 0, 4, 2, 2)
    assert state.rates(exp) == (0.5, 1.0)
    (cond,) = state.conditions.values()
    assert cond.label == "prisoners · none · similarity=80"
    assert cond.curve == [1.0, 0.5]
    assert "spend $1.0000 of $2" in state.headline(now=2.0)
    assert "model calls 2/8" in state.headline(now=2.0)
    state.apply(RunDone("r1", "done"))
    assert state.headline().startswith("sweep ended (done)")
