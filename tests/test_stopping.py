"""Stopping a run with a signal, and reproducing one by its seed.

Real processes in their own process group receive SIGINT / SIGTERM with ``os.killpg``
(as a terminal's Ctrl-C reaches every process of the foreground group) once work is
visibly under way: a finished match or decision in the database, never a sleep. Each
stopped run must end with the promised exit code, the ``--resume`` line and no crash, and
``--resume`` must complete it to exactly the decisions of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

STRATEGY_SWEEP = """
name = "signals-strategies"
seed = 3
samples = {samples}

[agents.tft]
strategy = "tit_for_tat"

[agents.grim]
strategy = "grim_trigger"

[[experiments]]
game = "prisoners"
mechanism = "repetition"
matchup = "cross"
agents = ["tft", "grim"]
rounds = 5
continuation = 0.8
"""

LOCAL_SWEEP = """
name = "signals-local"
seed = 5
samples = 2
templates = "prompts"

[agents.local]
model = "local/smollm2"
max_tokens = 16
threads = 1
seed = 5

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = [["local", "tft"]]
"""


PADDING = (
    "Background, to read before the game. Groups that meet again tend to remember who "
    "kept their word, and people who expect to meet again often cooperate more. "
) * 6
"""About 190 tokens in front of every prompt (some 670 in all: a first llama.cpp batch
of 512 tokens, then the rest): each model decision starts with seconds inside one
llama.cpp call (the prompt's evaluation), the window in which the old exit freed the model
under the running decode (a segmentation fault, exit 139). The signal lands within a poll
(50 ms) of the first decision's row, while the other decision is in that evaluation; a
longer prompt only made every decision, and the resume, slower."""


def long_prompts(folder: Path) -> Path:
    """A copy of the shipped templates whose game text starts with :data:`PADDING`."""
    import shutil

    from coop_tui.prompts import default_template_dir

    shipped = default_template_dir()
    target = folder / "prompts"
    shutil.copytree(shipped, target)
    game = target / "game.j2"
    game.write_text(PADDING + "\n" + game.read_text(encoding="utf-8"), encoding="utf-8")
    return target


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def count(db: Path, sql: str) -> int:
    """A count that reads 0 while the database or its tables do not exist yet."""
    try:
        return int(query(db, sql)[0][0] or 0)
    except sqlite3.Error:
        return 0


def wait_for(condition: Any, proc: subprocess.Popen[str], limit: float = 300.0) -> None:
    """Poll an observable event (a row in the database); fail early if the process ended."""
    deadline = time.monotonic() + limit
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before the event:\n{out}\n{err}")
        assert time.monotonic() < deadline, "the event never came"
        time.sleep(0.05)


def start(*args: str) -> subprocess.Popen[str]:
    """coop-tui in its own session, so the signal goes to its whole process group."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.Popen(
        [sys.executable, "-m", "coop_tui.cli", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=600)
    return out + err


SIGNALS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]


@pytest.fixture
def sigint_heard() -> Iterator[None]:
    """Children hear Ctrl-C even when pytest was started with SIGINT ignored (a shell's
    background job ``cmd &``): an ignored signal stays ignored across ``exec``, a caught one
    is reset to its default, so the run would otherwise ignore SIGINT and finish."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# ===================================================== strategies: the loop must breathe
@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
@pytest.mark.usefixtures("sigint_heard")
@pytest.mark.slow
def test_a_signal_stops_a_strategy_sweep_and_resume_completes_it(
    signum: int, code: int, word: str, tmp_path: Path
) -> None:
    # x 4 seatings = 4,000 matches of 5 rounds: seconds of pure computing. The signal lands
    # a poll after the first group commit (50 ms of play): measured, under 100 matches were
    # done when it was handled; a quiet machine three times as fast stays well under 4,000
    samples = 1000
    total = 4 * samples
    sweep = tmp_path / "s.toml"
    sweep.write_text(STRATEGY_SWEEP.format(samples=samples))
    db = tmp_path / "s.db"
    proc = start("--batch", str(sweep), "--db", str(db))
    wait_for(lambda: count(db, "select count(*) from matches where status = 'done'") > 0, proc)
    os.killpg(proc.pid, signum)
    output = finish(proc)
    assert proc.returncode == code, output
    assert "Traceback" not in output and word in output and "--resume" in output
    assert query(db, "select status from runs") == [("stopped",)]
    done = count(db, "select count(*) from matches where status = 'done'")
    assert 0 < done < total  # stopped while it ran, not after it had finished
    assert count(db, "select count(*) from matches where status = 'running'") == 0

    resumed = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db), "--resume"],
        capture_output=True, text=True, timeout=600,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert query(db, "select status from runs") == [("done",)]
    assert query(db, "select count(*), sum(status = 'done') from matches")[0] == (total, total)
    # 5 rounds x 2 seats per match, each exactly once
    assert query(db, "select count(*), count(distinct match_id || '/' || round || '/' || seat)"
                     " from decisions")[0] == (total * 10, total * 10)


# ===================================================== the embedded model mid-generation
@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
@pytest.mark.usefixtures("sigint_heard")
@pytest.mark.slow
def test_a_signal_during_generation_exits_cleanly_and_resume_completes(
    signum: int, code: int, word: str, tmp_path: Path
) -> None:
    sweep = tmp_path / "l.toml"
    sweep.write_text(LOCAL_SWEEP)
    long_prompts(tmp_path)
    db = tmp_path / "l.db"
    proc = start("--batch", str(sweep), "--db", str(db))
    # one model decision stored: the other match's model seat is inside llama.cpp now
    # (the two matches run at once and queue on the model; its seed makes it evaluate
    # the long prompt from scratch)
    wait_for(lambda: count(db, "select count(*) from decisions where agent = 'local'") >= 1, proc)
    os.killpg(proc.pid, signum)
    output = finish(proc)
    assert proc.returncode == code, output  # not 139: no segmentation fault at exit
    assert "Traceback" not in output and word in output and "--resume" in output
    assert query(db, "select status from runs") == [("stopped",)]
    first = query(db, "select cache_key, response, answer, action from decisions"
                      " where agent = 'local' order by id")
    assert len(first) == 1

    resumed = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db), "--resume"],
        capture_output=True, text=True, timeout=600,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert query(db, "select count(*), sum(status = 'done') from matches")[0] == (2, 2)
    rows = query(db, "select cache_key, response, answer, action from decisions"
                     " where agent = 'local' order by id")
    assert len(rows) == 2 and rows[0] == first[0]  # the stored one kept, not asked again
    assert count(db, "select count(distinct cache_key) from decisions where agent = 'local'") == 2
    assert count(db, "select count(*) from decisions") == 4


# ===================================================== reproducible by seed
REPRO_SWEEP = """
name = "repro"
seed = {seed}
samples = 1

[agents.local]
model = "local/smollm2"
style = "direct"
temperature = 1.0
threads = 1

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = [["local", "tft"]]
"""


def _answers(db: Path) -> list[tuple[Any, ...]]:
    return query(db, "select m.match_key, d.round, d.phase, d.seat, d.response, d.answer,"
                     " d.parsed, d.action, d.content_key from decisions d join matches m"
                     " on m.id = d.match_id order by m.match_key, d.round, d.phase, d.seat")


def _play(tmp_path: Path, db: Path, seed: int) -> Any:
    from coop_tui.spec import load_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    path = tmp_path / f"repro-{seed}.toml"
    path.write_text(REPRO_SWEEP.format(seed=seed))
    store = Store(db)
    try:
        return asyncio.run(run_sweep(load_sweep(path), store))
    finally:
        store.close()


@pytest.mark.slow
def test_the_same_seed_stores_the_same_answers_and_another_seed_asks_again(tmp_path: Path) -> None:
    # two fresh databases, the same file and seed: every stored answer identical (the
    # model runs in this process, so the second run also starts from the first's state).
    # One match of two seats per run: each model decision costs seconds of CPU
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    assert _play(tmp_path, first, 21).status == "done"
    assert _play(tmp_path, second, 21).status == "done"
    a, b = _answers(first), _answers(second)
    assert len(a) == 2 and a == b
    # another seed in the first database: a new content key, so asked again, not reused
    other = _play(tmp_path, first, 22)
    assert other.status == "done" and other.decisions == 2 and other.reused == 0
    keys = {row[-1] for row in a} - {None}  # a strategy's decision has no content key
    again = query(first, "select content_key from decisions d join matches m on m.id = d.match_id"
                         f" where m.run_id = '{other.run_id}' and d.agent = 'local'")
    assert len(keys) == len(again) == 1 and not keys & {row[0] for row in again}


# ===================================================== the TUI
async def test_escape_on_the_setup_screen_quits_as_the_footer_says(tmp_path: Path) -> None:
    from coop_tui.app import CoopApp
    from coop_tui.screens.setup import SetupScreen

    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app._exit  # closing: not a blank screen over a running app
    assert app.return_code == 0


async def test_the_setup_seed_field_reaches_the_sweep(tmp_path: Path) -> None:
    from textual.widgets import Input

    from coop_tui.app import CoopApp
    from coop_tui.screens.setup import SetupScreen

    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(160, 48)):
        screen = app.screen
        assert isinstance(screen, SetupScreen)
        await screen.wait_ready()
        field = screen.query_one("#seed", Input)
        assert field.value == "0"
        field.value = "42"
        setup, sweep = screen.validated()
        assert setup.seed == 42 and sweep.spec.seed == 42
        field.value = "-3"
        with pytest.raises(ValueError, match="seed"):
            screen.read_setup()


async def test_sigterm_closes_the_tui_with_143_and_the_run_stopped(tmp_path: Path) -> None:
    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen
    from coop_tui.session import build_setup_sweep, play_setup

    sweep = build_setup_sweep(play_setup("prisoners", "tit_for_tat", 3, None))
    app = CoopApp(tmp_path / "t.db", play=sweep)
    async with app.run_test(size=(160, 48)) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        for _ in range(3000):  # until the human seat is asked: the match is live
            if live.session_waiting(0):
                break
            await pilot.pause(0.02)
        assert live.session_waiting(0)
        os.kill(os.getpid(), signal.SIGTERM)  # a real signal, heard by the app's loop
        for _ in range(3000):
            if app._exit:
                break
            await pilot.pause(0.02)
    assert app.return_code == 143 and app.stopped_by_signal == signal.SIGTERM
    run_id = app.sessions[0].run_id
    assert app.interrupted_runs() == [run_id]
    assert query(tmp_path / "t.db", f"select status from runs where id = '{run_id}'") == [("stopped",)]
