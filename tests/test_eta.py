"""The progress ETA counts model calls, not matches (coop_tui/eta.py), and the batch
progress line shows it with the calls answered, estimated and in flight.

The clock is a pure unit: each test feeds it facts with made-up times and reads the
estimate back. One end-to-end ``--batch`` run against the loopback server checks the line
a user sees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.decisions import Decision
from coop_tui.eta import WINDOW, CallClock, clock_text
from coop_tui.events import DecisionDone, DecisionStarted, MatchDone, MatchStarted
from coop_tui.testing.server import LoopbackServer


def call(clock: CallClock, n: int, start: float, end: float) -> None:
    key = ("m", n, 1, "play")
    clock.call_started(key, start)
    clock.call_done(key, end)


def test_strategy_matches_finishing_fast_promise_nothing_before_a_call_is_measured() -> None:
    """The old bar said "eta 0:00:02" after 5 instant strategy matches of 112 with twenty
    minutes of model calls to come."""
    clock = CallClock(calls_total=40, matches_total=112, models={"model"})
    for i in range(5):
        clock.match_done(f"s{i}", 0.1 * i)
    assert clock.seconds_left(0.5) is None
    assert clock.describe(0.5) == "eta ?  model calls 0/40, 0 in flight"
    call(clock, 0, start=0.5, end=30.5)  # one call of 30 s: 39 to go
    assert clock.seconds_left(30.5) == pytest.approx(39 * 30.0)


def test_concurrent_calls_count_at_the_rate_they_complete() -> None:
    """Four calls at once, each taking 8 s, complete one per 2 s of wall time."""
    clock = CallClock(calls_total=20, matches_total=5, models={"model"})
    for seat in range(4):
        clock.call_started(("m", seat, 1, "play"), 0.0)
    assert len(clock.in_flight) == 4
    for seat in range(4):
        clock.call_done(("m", seat, 1, "play"), 8.0)
    assert not clock.in_flight
    assert clock.calls.seconds_each(8.0) == pytest.approx(2.0)
    assert clock.seconds_left(8.0) == pytest.approx(16 * 2.0)


def test_the_rate_is_a_moving_window_that_follows_a_change_of_speed() -> None:
    clock = CallClock(calls_total=100, matches_total=1, models={"model"})
    now = 0.0
    for n in range(WINDOW):  # slow calls first (long prompts, a busy machine)
        call(clock, n, now, now + 10.0)
        now += 10.0
    assert clock.seconds_left(now) == pytest.approx(80 * 10.0)
    for n in range(WINDOW, 2 * WINDOW):  # then fast ones: only these are in the window
        call(clock, n, now, now + 1.0)
        now += 1.0
    assert clock.seconds_left(now) == pytest.approx(60 * 1.0)


def test_a_stalled_run_estimates_more_time_as_it_waits() -> None:
    clock = CallClock(calls_total=10, matches_total=1, models={"model"})
    call(clock, 0, 0.0, 5.0)
    assert clock.seconds_left(5.0) == pytest.approx(9 * 5.0)
    assert clock.seconds_left(50.0) == pytest.approx(9 * 50.0)  # no answer for 45 s


def test_reused_answers_count_as_done_but_do_not_speed_up_the_rate() -> None:
    clock = CallClock(calls_total=10, matches_total=1, models={"model"})
    call(clock, 0, 0.0, 4.0)
    clock.call_started(("m", 1, 1, "play"), 4.0)
    clock.call_done(("m", 1, 1, "play"), 4.0, reused=True)
    assert clock.calls_done == 2
    assert clock.seconds_left(4.0) == pytest.approx(8 * 4.0)


def test_without_model_agents_the_eta_comes_from_matches() -> None:
    clock = CallClock(calls_total=0, matches_total=10, models=set())
    clock.observe(MatchStarted("r", "a", 0, "prisoners", "none", ("x", "y")), 0.0)
    clock.observe(MatchDone("a", (1.0, 1.0)), 2.0)
    assert clock.seconds_left(2.0) == pytest.approx(9 * 2.0)
    assert clock.describe(2.0) == "eta 0:00:18 (from matches: no model agent)"


def decision(agent: str, seat: int, *, reused: bool = False) -> Decision:
    d = Decision(match_id="m", round=1, phase="play", seat=seat, kind="choice", agent=agent,
                 prompt=[], response="A", reasoning="", parsed={}, valid=True, attempts=1,
                 error=None, cache_key=None, content_key=None)  # type: ignore[arg-type]
    d.reused = reused
    return d


def test_events_feed_the_clock_and_a_failed_match_drops_its_calls_in_flight() -> None:
    clock = CallClock(calls_total=6, matches_total=2, models={"model"})
    clock.observe(DecisionStarted("m", 0, 1, "play", 1, (), "model"), 0.0)
    clock.observe(DecisionStarted("m", 0, 1, "play", 2, (), "model"), 1.0)  # a re-ask: same call
    clock.observe(DecisionStarted("m", 1, 1, "play", 1, (), "tft"), 1.0)  # a strategy: no call
    clock.observe(DecisionStarted("m", 2, 1, "play", 1, (), "model"), 1.0)
    assert len(clock.in_flight) == 2
    clock.observe(DecisionDone(decision("model", 0)), 3.0)
    clock.observe(DecisionDone(decision("tft", 1)), 3.0)
    assert (clock.calls_done, len(clock.in_flight)) == (1, 1)
    clock.observe(MatchDone("m", (), status="failed"), 4.0)
    assert not clock.in_flight and clock.matches_done == 1
    assert clock.describe(4.0) == "eta 0:00:20  model calls 1/6, 0 in flight"  # 5 x 4 s


def test_a_resumed_run_starts_from_the_share_of_calls_already_made() -> None:
    clock = CallClock(calls_total=40, matches_total=10, models={"model"})
    clock.skip(5)
    assert (clock.calls_done, clock.matches_done) == (20, 5)


def test_a_long_match_shows_its_model_calls_as_they_are_answered() -> None:
    """A team tournament is one match of many calls: the progress line said "model calls
    0" until it ended, because the counts were drawn only when a match finished."""
    from rich.console import Console

    from coop_tui.runner import ProgressView
    from coop_tui.spec import build_sweep

    sweep = build_sweep({"name": "p", "agents": {"model": {"model": "local/smollm2"},
                                                 "tft": {"strategy": "tit_for_tat"}},
                         "experiments": [{"game": "prisoners", "agents": ["model", "tft"],
                                          "matchup": "cross"}]})
    view = ProgressView(sweep, Console(file=open(os.devnull, "w")), calls=8)  # noqa: SIM115
    view(MatchStarted("r", "m", 0, "prisoners", "none", ("model", "tft")))
    view(DecisionStarted("m", 0, 1, "play", 1, (), "model"))
    view(DecisionDone(decision("model", 0)))
    row = view.progress.tasks[1]  # the experiment's row, its match still playing
    assert row.fields["stats"].startswith("model calls 1 ")
    assert view.clock.describe(0.0).endswith("model calls 1/8, 0 in flight")


def test_a_judge_pass_counts_every_judgement_as_a_call_and_reused_ones_as_instant() -> None:
    from rich.console import Console

    from coop_tui.judging.run import _Progress

    view = _Progress(Console(file=open(os.devnull, "w")), 4)  # noqa: SIM115
    view(DecisionStarted("m", 0, 1, "play", 1, (), "judge-model"))
    view(DecisionDone(decision("judge-model", 0)))
    view(DecisionDone(decision("judge-model", 1, reused=True)))
    assert view.clock.calls_done == 2 and len(view.clock.calls.times) == 1
    assert "model calls 2/4, 0 in flight" in view.clock.describe(0.0)


def test_clock_text() -> None:
    assert clock_text(0) == "0:00:00" and clock_text(3725.4) == "1:02:05"


def _loopback_versus_tft(path: Path, url: str, *, name: str, samples: int) -> Path:
    """A sweep file: a loopback model answering by choice against tit-for-tat, ``samples``
    matches (one model call each)."""
    path.write_text(f"""
name = "{name}"
seed = 1
samples = {samples}

[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "ETA_TEST_KEY"

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
agents = ["m"]
opponents = ["tft"]
matchup = "versus"
answer = "choice"
""")
    return path


def test_the_batch_progress_line_shows_calls_done_estimated_and_in_flight(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=1, answer='{"choice": "A0"}') as server:
        sweep = _loopback_versus_tft(tmp_path / "s.toml", server.url, name="eta", samples=3)
        env = {**os.environ, "ETA_TEST_KEY": "unused", "COLUMNS": "200"}
        done = subprocess.run(
            [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(tmp_path / "e.db")],
            env=env, capture_output=True, text=True, timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "~3 model calls" in done.stdout
    line = next(row for row in done.stdout.splitlines() if " all " in row)
    assert re.search(r"eta 0:00:00\s+model calls 3/3, 0 in flight", line), line


def test_judgements_of_one_round_in_flight_together_count_each() -> None:
    """A judge pass asks about both seats' decisions of a round at once: the same match,
    round and phase. Each counts as in flight until its own answer (a set of keys counted
    them as one, and the first answer dropped both)."""
    clock = CallClock(4, 4, None)
    for attempt in (1, 1, 2):  # two judgements, then a re-ask of one of them
        clock.observe(DecisionStarted("jm", 0, 1, "judge", attempt, (), "judge-model"), 0.0)
    assert clock.describe(0.0).endswith("model calls 0/4, 2 in flight")
    done = decision("judge-model", 0)
    done.match_id, done.phase = "jm", "judge"
    clock.observe(DecisionDone(done), 1.0)
    assert clock.describe(1.0).endswith("model calls 1/4, 1 in flight")
    clock.observe(DecisionStarted("jm", 0, 2, "judge", 1, (), "judge-model"), 1.0)
    clock.observe(MatchDone("jm", (), status="failed"), 2.0)  # its calls are over
    assert clock.calls_in_flight == 0 and not clock.in_flight


def test_the_batch_line_counts_a_call_in_flight_while_it_is_awaited(tmp_path: Path) -> None:
    """A real ``--batch`` process whose one model call is held by the loopback server: its
    progress line (drawn as in a terminal) says "1 in flight" while the answer is awaited,
    and "0 in flight" with the call answered once the server lets it go."""
    import threading

    asked, release = threading.Event(), threading.Event()

    def held(body: dict) -> str:  # type: ignore[type-arg]
        asked.set()
        release.wait(120)  # a hang guard: released as soon as the line has been seen
        return '{"choice": "A0"}'

    with LoopbackServer(latency=0.0, chunks=1, answer=held) as server:
        sweep = _loopback_versus_tft(tmp_path / "s.toml", server.url, name="held", samples=1)
        env = {**os.environ, "ETA_TEST_KEY": "unused", "COLUMNS": "200", "FORCE_COLOR": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(tmp_path / "e.db")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        seen = b""
        try:
            assert proc.stdout is not None
            while b"1 in flight" not in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen):
                chunk = os.read(proc.stdout.fileno(), 65536)  # the live line, redrawn
                assert chunk, seen.decode(errors="replace")  # ended without showing it
                seen += chunk
            assert asked.is_set()
        finally:
            release.set()
        rest, _ = proc.communicate(timeout=300)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", (seen + rest).decode(errors="replace"))
    assert proc.returncode == 0, text
    assert "eta ?  model calls 0/1, 1 in flight" in text
    assert re.search(r"eta 0:00:00\s+model calls 1/1, 0 in flight", text), text


def test_calls_asked_beyond_the_concurrency_are_waiting_not_in_flight() -> None:
    """With ``concurrency = 2`` four matches may each ask for both seats at once: eight
    calls are asked, two are sent; the rest wait for a slot (they were shown as
    "8 in flight")."""
    from coop_tui.events import DecisionStarted
    from coop_tui.watch import WatchState

    bounded, unbounded = CallClock(100, 10, ["m"], limit=2), CallClock(100, 10, ["m"])
    for clock in (bounded, unbounded):
        for match in range(4):
            for seat in (0, 1):
                clock.observe(DecisionStarted(f"m{match}", seat, 1, "play", 1, (), "m"), 0.0)
    assert "2 in flight, 6 waiting for a slot" in bounded.describe(1.0)
    assert "8 in flight" in unbounded.describe(1.0)  # no bound known (provider batches)
    state = WatchState({"id": "r"}, {"plan": {"models": ["m"], "model_calls": 100, "concurrency": 2}})
    for match in range(4):
        state.apply(DecisionStarted(f"m{match}", 0, 1, "play", 1, (), "m"), now=0.0)
    assert "2 in flight, 2 waiting for a slot" in state.headline(now=1.0)
    hostile = WatchState({"id": "r"}, {"plan": {"concurrency": "lots"}})  # from the lease row
    assert hostile.limit is None
