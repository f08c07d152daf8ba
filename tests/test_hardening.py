"""Hardening: bounds, clear messages instead of tracebacks, one writer per run, visible
failures, strict JSON and mechanism grids. Everything through the real CLI and SQLite."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

STRATEGIES = """
[agents.tft]
strategy = "tit_for_tat"
[agents.alld]
strategy = "always_defect"
"""


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        user: int | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", *args], capture_output=True, text=True,
        timeout=300, env=full, cwd=cwd,
        preexec_fn=(lambda: os.setuid(user)) if user is not None else None,  # noqa: PLW1509
    )


def one_clear_line(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1, result.stderr
    return lines[0]


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def query(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def strategy_sweep(tmp: Path, name: str = "s", extra: str = "", samples: int = 2) -> Path:
    return write(tmp / f"{name}.toml", f'name = "{name}"\nsamples = {samples}\n{extra}\n' + STRATEGIES + """
[[experiments]]
game = "prisoners"
mechanism = "repetition"
matchup = "cross"
agents = ["tft", "alld"]
rounds = 3
""")


# ====================================================================== bounds
BOUNDS = {
    "samples of a billion": ('name = "b"\nsamples = 1000000000\n' + STRATEGIES
                             + '[[experiments]]\ngame = "prisoners"\nagents = ["tft"]\n', "samples"),
    "experiment samples of a billion": (
        'name = "b"\n' + STRATEGIES + '[[experiments]]\ngame = "prisoners"\nagents = ["tft"]\n'
        "samples = 1000000000\n", "experiments[0].samples"),
    "a grid of half a million seatings": (
        'name = "b"\n' + STRATEGIES + '[agents.x]\nstrategy = "always_cooperate"\n'
        '[[experiments]]\ngame = "public_good"\ngame_params = { players = 12 }\n'
        'matchup = "cross"\nagents = ["tft", "alld", "x"]\n', "experiments[0]"),
    "more decisions than max_decisions": (
        'name = "b"\nmax_decisions = 10\nsamples = 4\n' + STRATEGIES
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "repetition"\nagents = ["tft"]\n',
        "max_decisions"),
    "a prompt above max_prompt_tokens": (
        'name = "b"\nmax_prompt_tokens = 50\n[agents.m]\nmodel = "openai/loopback"\n'
        'api_base = "http://127.0.0.1:9/v1"\n[[experiments]]\ngame = "prisoners"\nagents = ["m"]\n',
        "max_prompt_tokens"),
    "a 12-player prompt above the default limit": (
        'name = "b"\n[agents.m]\nmodel = "openai/loopback"\napi_base = "http://127.0.0.1:9/v1"\n'
        # the outcome table (payoff_text = "table"): 4096 lines; the rule would be short
        '[[experiments]]\ngame = "public_good"\ngame_params = { players = 12, payoff_text = "table" }\n'
        'agents = ["m"]\n',
        "max_prompt_tokens"),
    "a prompt beyond the embedded model's context": (
        'name = "b"\nmax_prompt_tokens = 100000000\n[agents.m]\nmodel = "local/smollm2"\n'
        '[[experiments]]\ngame = "public_good"\ngame_params = { players = 12, payoff_text = "table" }\n'
        'agents = ["m"]\n',
        "agents.m.model"),
    "a prompt beyond the model's context": (
        'name = "b"\nmax_prompt_tokens = 100000000\n[agents.m]\nmodel = "openai/gpt-3.5-turbo"\n'
        '[[experiments]]\ngame = "public_good"\ngame_params = { players = 12, payoff_text = "table" }\n'
        'agents = ["m"]\n',
        "agents.m.model"),
}


@pytest.mark.parametrize("case", sorted(BOUNDS))
@pytest.mark.slow
def test_bounds_fail_early_naming_the_field(case: str, tmp_path: Path) -> None:
    text, field = BOUNDS[case]
    sweep = write(tmp_path / "b.toml", text)
    db = tmp_path / "b.db"
    started = time.monotonic()
    line = one_clear_line(cli("--batch", str(sweep), "--db", str(db), "--dry-run",
                              env={"OPENAI_API_KEY": "sk-test-dummy-000"}))
    assert f"error: {field}" in line
    assert time.monotonic() - started < 60  # fails before building anything big
    assert not db.exists()


def test_cost_estimate_uses_the_rendered_prompt(tmp_path: Path) -> None:
    """Input tokens per call = the first rendered prompt's characters / 4, so a 6-player
    public goods game listing its outcomes (64 lines) costs more per call than the dilemma."""
    import asyncio

    from coop_tui.prompt_size import estimate_tokens, measure
    from coop_tui.runner import estimate
    from coop_tui.session import preview_prompts
    from coop_tui.spec import build_sweep

    def sweep(game: dict[str, Any]) -> Any:
        return build_sweep({
            "name": "c", "agents": {"m": {"model": "openai/gpt-4o-mini", "api_key": "sk-x-12345"}},
            "experiments": [{**game, "agents": ["m"], "mechanism": "none"}],
        })

    small = sweep({"game": "prisoners"})
    large = sweep({"game": "public_good", "game_params": {"players": 6, "payoff_text": "table"}})
    results = []
    for s in (small, large):
        sizes = asyncio.run(measure(s))
        est = estimate(s, sizes)
        preview = asyncio.run(preview_prompts(s))
        assert est["prompts_measured"]
        assert est["prompt_tokens_mean"] == pytest.approx(estimate_tokens(preview[0]))
        results.append(est)
    assert results[1]["prompt_tokens_mean"] > 1.5 * results[0]["prompt_tokens_mean"]
    assert results[1]["cost_usd"] / results[1]["model_calls"] > results[0]["cost_usd"] / results[0]["model_calls"]


def test_matches_are_generated_lazily() -> None:
    import types

    from coop_tui.spec import build_sweep

    sweep = build_sweep({
        "name": "lazy", "samples": 100_000, "max_decisions": 10**7,
        "agents": {"tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "agents": ["tft"]}],
    })
    assert len(sweep.cells) == 1 and sweep.total_matches == 100_000
    assert isinstance(sweep.matches(), types.GeneratorType)


# ====================================================================== clear messages
@pytest.mark.slow
def test_deeply_nested_toml_and_yaml(tmp_path: Path) -> None:
    deep_toml = write(tmp_path / "deep.toml", 'name = "d"\nx = ' + "[" * 3000 + "]" * 3000 + "\n")
    deep_yaml = write(tmp_path / "deep.yaml", "name: d\nx: " + "[" * 3000 + "]" * 3000 + "\n")
    nested_40 = write(tmp_path / "n40.yaml", "name: d\nx: " + "[" * 40 + "]" * 40 + "\n")
    for path, words in ((deep_toml, "nested too deeply"), (deep_yaml, "nested too deeply"),
                        (nested_40, "nested more than 32")):
        line = one_clear_line(cli("--batch", str(path), "--db", str(tmp_path / "x.db")))
        assert words in line
    assert not (tmp_path / "x.db").exists()


def test_huge_integers_and_non_finite_numbers(tmp_path: Path) -> None:
    big = "1" + "0" * 400
    cases = {
        "big.yaml": (f"name: b\nsamples: {big}\nagents:\n  tft: {{strategy: tit_for_tat}}\n"
                     "experiments:\n  - {game: prisoners, agents: [tft]}\n", "samples"),
        "inf.yaml": ("name: b\nagents:\n  tft: {strategy: tit_for_tat}\n"
                     "experiments:\n  - {game: prisoners, agents: [tft], scale: .inf}\n",
                     "experiments[0].scale"),
        "nan.toml": ('name = "b"\n' + STRATEGIES + '[[experiments]]\ngame = "prisoners"\n'
                     'agents = ["tft"]\nbonus = nan\n', "experiments[0].bonus"),
    }
    for name, (text, field) in cases.items():
        path = write(tmp_path / name, text)
        line = one_clear_line(cli("--batch", str(path), "--db", str(tmp_path / "x.db")))
        assert f"error: {field}" in line, line


def test_duplicate_yaml_agent_key(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.yaml", """
        name: dup
        agents:
          a: {strategy: tit_for_tat}
          a: {strategy: always_defect}
        experiments:
          - {game: prisoners, agents: [a]}
    """)
    line = one_clear_line(cli("--batch", str(path), "--db", str(tmp_path / "x.db")))
    assert "'a' twice" in line and "line" in line


@pytest.mark.parametrize("payoff", ["1e308", "1" + "0" * 400, ".inf", ".nan"])
def test_non_finite_or_huge_payoffs_are_rejected_at_load(payoff: str, tmp_path: Path) -> None:
    write(tmp_path / "g.yaml", f"""
        title: Huge
        players: 2
        actions: [C, D]
        cooperative: [C]
        defect: D
        payoffs:
          C: {{C: [{payoff}, 2], D: [0, 3]}}
          D: {{C: [3, 0], D: [1, 1]}}
    """)
    sweep = write(tmp_path / "s.toml", 'name = "g"\n' + STRATEGIES
                  + '[[experiments]]\ngame = "g.yaml"\nagents = ["tft"]\n')
    line = one_clear_line(cli("--batch", str(sweep), "--db", str(tmp_path / "x.db")))
    assert "payoffs.C.C" in line


def test_scale_that_overflows_payoffs(tmp_path: Path) -> None:
    sweep = write(tmp_path / "s.toml", 'name = "g"\n' + STRATEGIES
                  + '[[experiments]]\ngame = "prisoners"\nagents = ["tft"]\nscale = 1e300\n')
    assert "experiments[0].scale" in one_clear_line(cli("--batch", str(sweep), "--db", str(tmp_path / "x.db")))


@pytest.mark.slow
def test_invalid_ports_local_directory_and_play_mechanism(tmp_path: Path) -> None:
    for url in ("http://127.0.0.1:99999/v1", "http://127.0.0.1:abc/v1", "127.0.0.1:8000"):
        sweep = write(tmp_path / "p.toml", f'name = "p"\n[agents.m]\nmodel = "openai/x"\napi_base = "{url}"\n'
                      '[[experiments]]\ngame = "prisoners"\nagents = ["m"]\n')
        assert "agents.m.api_base" in one_clear_line(cli("--batch", str(sweep), "--db", str(tmp_path / "x.db")))
    (tmp_path / "models").mkdir()
    sweep = write(tmp_path / "l.toml", 'name = "l"\n[agents.m]\nmodel = "local:models"\n'
                  '[[experiments]]\ngame = "prisoners"\nagents = ["m"]\n')
    assert "not a file" in one_clear_line(cli("--batch", str(sweep), "--db", str(tmp_path / "x.db")))
    line = one_clear_line(cli("play", "--mechanism", "nope", "--db", str(tmp_path / "x.db")))
    assert "--mechanism" in line and "nope" in line
    assert not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_truncated_database(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    sweep = strategy_sweep(tmp_path, samples=20)
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    query(db, "pragma wal_checkpoint(truncate)")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    for args in (["report"], ["report", "--json"], ["list", "runs"],
                 ["export", "--out", str(tmp_path / "e")], ["--batch", str(sweep), "--resume"]):
        result = cli(*args, "--db", str(db))
        assert result.returncode in (1, 2), result.stdout + result.stderr
        assert "Traceback" not in result.stderr + result.stdout
        assert "damaged" in result.stderr + result.stdout, result.stderr
    garbage = tmp_path / "g.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    assert "damaged" in one_clear_line(cli("report", "--db", str(garbage)))


def make_read_only(path: Path) -> Any:
    """Read-only for real: ``chattr +i`` for root (which ignores file modes), else chmod."""
    if os.getuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("running as root without chattr: no way to make a file read-only")
        return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o444)
    return lambda: path.chmod(0o644)


@pytest.mark.slow
def test_read_only_database(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    sweep = strategy_sweep(tmp_path)
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    query(db, "pragma journal_mode = delete")  # one file, no -wal / -shm to write
    undo = make_read_only(db)
    try:
        for args in (["--batch", str(sweep), "--resume"], ["--batch", str(sweep)]):
            line = one_clear_line(cli(*args, "--db", str(db)))
            assert "read-only" in line and str(db) in line
        for args in (["report"], ["report", "--json"], ["list", "runs"]):
            result = cli(*args, "--db", str(db))  # reading may work; if not, one clear line
            assert "Traceback" not in result.stdout + result.stderr
            assert result.returncode == 0 or "read-only" in one_clear_line(result)
    finally:
        undo()


def test_full_database_stops_the_run_with_a_resume_hint(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    """A disk that fills mid-run: one message with the resume hint, then --resume finishes."""
    from coop_tui import runner
    from coop_tui.store import Store

    db = tmp_path / "f.db"
    sweep = strategy_sweep(tmp_path, samples=40)
    Store(db).close()
    pages = query(db, "pragma page_count")[0][0]

    def tiny_store(path: Path) -> Store:
        store = Store(path)
        store.db.conn.execute(f"pragma max_page_count = {pages + 8}")
        return store

    monkeypatch.setattr(runner, "open_store", tiny_store)
    from rich.console import Console

    console = Console(file=open(tmp_path / "out.txt", "w"), width=200)  # noqa: SIM115
    code = runner.run_batch(sweep, db, console=console, assume_yes=True)
    console.file.close()
    out = (tmp_path / "out.txt").read_text()
    assert code == 1
    assert "full" in out and "--resume" in out and "Traceback" not in out
    status, error = query(db, "select status, error from runs")[0]
    assert status == "failed" and "full" in error  # recorded while SQLite could still write
    monkeypatch.undo()
    resumed = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert query(db, "select count(*), sum(status = 'done') from matches")[0] == (160, 160)


@pytest.mark.slow
def test_report_json_into_a_closed_pipe(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    sweep = write(tmp_path / "s.toml", 'name = "pipe"\n' + STRATEGIES + """
[agents.rnd]
strategy = "random"
[[experiments]]
game = "prisoners"
mechanism = "similarity"
agents = ["tft", "alld", "rnd"]
similarity = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100]
framing = ["similar", "different", "dissimilar"]
""")
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    full = cli("report", "--json", "--db", str(db))
    assert len(full.stdout) > 200_000  # more than a pipe holds
    proc = subprocess.Popen([sys.executable, "-m", "coop_tui.cli", "report", "--json", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err
    assert proc.returncode in (0, 141)


LONG_NAMES = ("tit_for_tat_with_a_name_long_enough_to_overflow_eighty_columns_on_its_own",
              "always_defect_whose_name_is_also_far_too_long_for_a_narrow_table_cell")


@pytest.mark.slow  # a sweep and a report in subprocesses: several seconds
def test_a_text_report_into_a_pipe_keeps_every_cell_whole(tmp_path: Path) -> None:
    """Into a file or a pipe, the text report is as wide as its widest table: agent names
    and every column come out whole (at the 80 columns Rich assumes there, wide cells were
    cut to "…" and columns squeezed)."""
    db = tmp_path / "long.db"
    sweep = write(tmp_path / "long.toml", f"""
        name = "long-names"
        [agents.{LONG_NAMES[0]}]
        strategy = "tit_for_tat"
        [agents.{LONG_NAMES[1]}]
        strategy = "always_defect"
        [[experiments]]
        game = "prisoners"
        mechanism = "repetition"
        rounds = 3
        agents = {list(LONG_NAMES)}
        """.replace("'", '"'))
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    report = cli("report", "--db", str(db), env={"COLUMNS": "80"})  # stdout is a pipe
    assert report.returncode == 0, report.stderr
    assert "…" not in report.stdout
    header = next(line for line in report.stdout.splitlines() if "Wilson 95%" in line)
    for column in ("condition", "agent", "n", "coop", "± SE", "Wilson 95%", "sampled", "payoff"):
        assert f" {column} " in header
    rows = [line for line in report.stdout.splitlines() if "[61.0, 100.0]" in line]
    assert len(rows) == 1 and LONG_NAMES[0] in rows[0] and "100.0%" in rows[0]
    for name in LONG_NAMES:
        assert report.stdout.count(name) >= 3  # the experiment, per-round and actions tables


HOSTED = """
name = "hosted"
[agents.routed]
model = "openrouter/openai/gpt-4o"
[agents.also-routed]
model = "openrouter/google/gemini-3-flash"
[agents.own-variable]
model = "openai/gpt-4o-mini"
api_key_env = "LAB_OPENAI_KEY"
[agents.tft]
strategy = "tit_for_tat"
[[experiments]]
game = "prisoners"
mechanism = "none"
agents = ["routed", "also-routed", "own-variable", "tft"]
"""


@pytest.mark.slow  # a CLI process: about 3 s
def test_a_dry_run_needs_no_api_key_and_lists_the_keys_a_run_needs(tmp_path: Path) -> None:
    """A dry run sends nothing: without any key it prints the size and cost, then each
    variable a real run reads, set or missing, with the agents that need it."""
    sweep = write(tmp_path / "hosted.toml", HOSTED)
    db = tmp_path / "dry.db"
    dry = cli("--batch", str(sweep), "--db", str(db), "--dry-run", env={"LAB_OPENAI_KEY": "sk-lab"})
    assert dry.returncode == 0, dry.stderr
    out = " ".join(dry.stdout.split())  # Rich may wrap long lines
    assert "hosted: 4 matches" in out and "model calls" in out and "estimated cost" in out
    assert "API keys a real run needs (1 missing):" in out
    assert "OPENROUTER_API_KEY: missing (agents: routed, also-routed)" in out
    assert "LAB_OPENAI_KEY: set (agents: own-variable)" in out
    assert "sk-lab" not in dry.stdout + dry.stderr
    assert not db.exists()


@pytest.mark.slow  # a CLI process: about 3 s
def test_a_real_run_without_its_api_key_still_refuses(tmp_path: Path) -> None:
    sweep = write(tmp_path / "hosted.toml", HOSTED)
    db = tmp_path / "real.db"
    line = one_clear_line(cli("--batch", str(sweep), "--db", str(db), env={"LAB_OPENAI_KEY": "sk-lab"}))
    assert "agents.routed.model" in line and "OPENROUTER_API_KEY" in line
    assert not db.exists()


def test_error_helper_has_its_own_module() -> None:
    code = ("import sys, coop_tui.report, coop_tui.export, coop_tui.importers.coopeval; "
            "print('coop_tui.cli' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ====================================================================== signals
def slow_llm_sweep(tmp: Path, url: str, name: str = "slow", samples: int = 6) -> Path:
    return write(tmp / f"{name}.toml", f"""
        name = "{name}"
        seed = 5
        concurrency = 2
        samples = {samples}
        [agents.m]
        model = "openai/loopback"
        api_base = "{url}"
        style = "direct"
        [[experiments]]
        game = "prisoners"
        mechanism = "similarity"
        agents = ["m"]
        similarity = [0, 100]
    """)


def wait_for(condition: Any, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def decisions_in(db: Path) -> int:
    try:
        return query(db, "select count(*) from decisions")[0][0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGTERM, 143, "terminated"),
                                                      (signal.SIGINT, 130, "interrupted")])
@pytest.mark.slow
def test_sigterm_stops_the_run_like_ctrl_c(signum: int, code: int, word: str, tmp_path: Path) -> None:
    with LoopbackServer(latency=0.3, chunks=3, answer='{"A0": 50, "A1": 50}') as srv:
        sweep = slow_llm_sweep(tmp_path, srv.url)
        db = tmp_path / "t.db"
        proc = subprocess.Popen([sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: decisions_in(db) >= 2)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, out + err
        assert "Traceback" not in out + err
        assert word in out and "--resume" in out
        assert query(db, "select status from runs") == [("stopped",)]
        assert query(db, "select count(*) from matches where status = 'running'")[0][0] == 0
        assert query(db, "select count(*) from run_leases")[0][0] == 0  # the lease is released
        resumed = cli("--batch", str(sweep), "--db", str(db), "--resume")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert query(db, "select count(*), sum(status = 'done') from matches")[0] == (12, 12)
        assert query(db, "select count(*), count(distinct cache_key) from decisions")[0] == (24, 24)


# ====================================================================== one writer
@pytest.mark.slow
def test_a_second_process_cannot_resume_a_live_run(tmp_path: Path) -> None:
    # the server holds every answer until the second process has been turned away: the
    # first run is live (its first request arrived) for exactly as long as that takes
    with LoopbackServer(hold=True, latency=0.01, chunks=2, answer='{"A0": 50, "A1": 50}') as srv:
        sweep = slow_llm_sweep(tmp_path, srv.url, samples=6)
        db = tmp_path / "w.db"
        first = subprocess.Popen([sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(srv.chat_requests) >= 1)
            second = cli("--batch", str(sweep), "--db", str(db), "--resume")
        finally:
            srv.release()
        line = one_clear_line(second)
        assert "being played by process" in line and str(first.pid) in line
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err
        chat = [r for r in srv.requests if r.path.endswith("/chat/completions")]
        assert len(chat) == 24  # 12 matches x 2 seats, each asked once
        assert query(db, "select count(*) from run_leases")[0][0] == 0


@pytest.mark.slow
def test_a_stale_lease_is_taken_over(tmp_path: Path) -> None:
    import socket

    db = tmp_path / "l.db"
    sweep = strategy_sweep(tmp_path)
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    run_id = query(db, "select id from runs")[0][0]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def lease(pid: int, age: float, host: str | None = None) -> None:
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("insert or replace into run_leases (run_id, pid, host, token, heartbeat, taken_at)"
                         " values (?, ?, ?, 'other', ?, ?)",
                         [run_id, pid, host or socket.gethostname(), time.time() - age, time.time() - age])
        conn.close()

    lease(os.getpid(), 1.0)  # a live process, beating: refused
    assert "being played" in one_clear_line(cli("--batch", str(sweep), "--db", str(db), "--resume"))
    lease(dead.pid, 1.0)  # its process is gone: taken over
    assert cli("--batch", str(sweep), "--db", str(db), "--resume").returncode == 0
    lease(12345, 3600.0, host="another-host")  # silent for an hour: taken over
    assert cli("--batch", str(sweep), "--db", str(db), "--resume").returncode == 0
    assert query(db, "select count(*) from run_leases")[0][0] == 0


# ====================================================================== failures
def test_failures_are_grouped_by_reason_in_summary_and_report(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, api_key="right-key-0000", echo_key_in_errors=False) as srv:
        sweep = slow_llm_sweep(tmp_path, srv.url, samples=1)
        db = tmp_path / "f.db"
        run = cli("--batch", str(sweep), "--db", str(db), env={"OPENAI_API_KEY": "wrong-key-1111"})
    assert run.returncode == 1
    assert "failed matches by reason" in run.stdout and "HTTP 401" in run.stdout
    text = cli("report", "--db", str(db))
    assert "failed matches by reason" in text.stdout and "HTTP 401" in text.stdout
    data = json.loads(cli("report", "--json", "--db", str(db)).stdout)
    assert [(f["reason"], f["count"]) for f in data["failures"]] == [("HTTP 401", 2)]
    assert "Incorrect API key" in data["failures"][0]["example"]
    assert query(db, "select error from runs")[0][0].startswith("2 match(es) failed (HTTP 401: 2)")


def reask_answer(body: dict[str, Any]) -> str:
    """Similarity 0: never a usable answer. Otherwise: prose first, then a valid answer."""
    text = json.dumps(body["messages"])
    if "0%" in text and "100%" not in text:
        return "I refuse to give numbers."
    first = not any(m.get("role") == "assistant" for m in body["messages"])
    return "thinking" if first else '{"A0": 70, "A1": 30}'


def summary_reasks(stdout: str) -> int:
    line = next(line for line in stdout.splitlines() if "re-asks / transport retries" in line)
    return int(line.split("retries")[-1].replace("│", " ").split("/")[0].strip())


@pytest.mark.slow
def test_reask_counts_agree_between_summary_and_report(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, answer=reask_answer) as srv:
        sweep = write(tmp_path / "r.toml", f"""
            name = "reask"
            max_attempts = 3
            on_invalid = "uniform"
            [agents.m]
            model = "openai/loopback"
            api_base = "{srv.url}"
            style = "direct"
            [[experiments]]
            game = "prisoners"
            mechanism = "similarity"
            agents = ["m"]
            similarity = [0, 100]
            prompt = "percentage"
        """)
        db = tmp_path / "r.db"
        counts = []
        for _ in range(2):  # the second run reuses the valid decisions: no re-asks for them
            run = cli("--batch", str(sweep), "--db", str(db))
            assert run.returncode == 0, run.stdout + run.stderr
            report = json.loads(cli("report", "--json", "--db", str(db)).stdout)
            counts.append((summary_reasks(run.stdout), report["counts"]["retries"]))
    expected_first = query(db, "select sum(attempts - 1) from decisions d join matches m on m.id = d.match_id"
                               " where m.run_id = (select id from runs order by created_at limit 1)")[0][0]
    assert expected_first == 6  # two decisions never valid (2 re-asks each), two valid at the 2nd try
    assert counts[0] == (6, 6)
    assert counts[1] == (4, 4)  # only the never-valid decisions are asked again


def test_report_json_is_strict(tmp_path: Path) -> None:
    from coop_tui.report import strict_json

    db = tmp_path / "j.db"
    assert cli("--batch", str(strategy_sweep(tmp_path)), "--db", str(db)).returncode == 0
    conn = sqlite3.connect(db)
    with conn:  # an older database: payoffs so large their squares overflow
        conn.execute("update seats set payoff = 1e308")
    conn.close()
    out = cli("report", "--json", "--db", str(db))
    assert out.returncode == 0, out.stderr

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(out.stdout, parse_constant=refuse)
    assert any("non-finite" in note for note in data["notes"])
    assert json.loads(strict_json({"a": float("nan"), "b": [float("inf"), 1.0]}), parse_constant=refuse) == {
        "a": None, "b": [None, 1.0], "notes": ["non-finite numbers written as null: .a, .b[0]"]}


# ====================================================================== mechanism grid
@pytest.mark.slow
def test_mechanism_list_is_a_grid_axis(tmp_path: Path) -> None:
    ok = write(tmp_path / "m.toml", 'name = "m"\n' + STRATEGIES + """
[[experiments]]
game = "prisoners"
mechanism = ["none", "repetition"]
agents = ["tft", "alld"]
matchup = "cross"
rounds = 3
""")
    db = tmp_path / "m.db"
    run = cli("--batch", str(ok), "--db", str(db))
    assert run.returncode == 0, run.stdout + run.stderr
    rows = dict(query(db, "select mechanism, count(*) from matches group by mechanism"))
    assert rows == {"none": 4, "repetition": 4}
    assert query(db, "select count(*) from decisions")[0][0] == 4 * 2 + 4 * 2 * 3
    report = json.loads(cli("report", "--json", "--db", str(db)).stdout)
    conditions = {c["condition"].get("mechanism") for c in report["experiments"][0]["conditions"]}
    assert conditions == {"none", "repetition"}  # never pooled
    both = write(tmp_path / "c.toml", 'name = "c"\n' + STRATEGIES + """
[[experiments]]
game = "prisoners"
mechanism = ["mediation", "contracting"]
agents = ["tft"]
max_payment = 3
""")
    dry = cli("--batch", str(both), "--db", str(tmp_path / "c.db"), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "2 matches" in dry.stdout
    unused = write(tmp_path / "u.toml", 'name = "u"\n' + STRATEGIES + """
[[experiments]]
game = "prisoners"
mechanism = ["mediation", "contracting"]
agents = ["tft"]
rounds = 3
""")
    line = one_clear_line(cli("--batch", str(unused), "--db", str(tmp_path / "u.db")))
    assert "experiments[0].rounds" in line and "any of the mechanisms" in line


# ====================================================================== TUI and a damaged database
async def test_tui_runs_screen_reports_a_damaged_database(tmp_path: Path) -> None:
    from coop_tui.app import CoopApp
    from coop_tui.screens.runs import RunsScreen
    from coop_tui.screens.setup import SetupScreen
    from coop_tui.store import Store

    db = tmp_path / "d.db"
    assert cli("--batch", str(strategy_sweep(tmp_path, samples=20)), "--db", str(db)).returncode == 0
    query(db, "pragma wal_checkpoint(truncate)")
    healthy = db.read_bytes()
    db.write_bytes(healthy[: len(healthy) // 2])

    def messages(app: Any) -> str:
        return " ".join(str(n.message) for n in app._notifications)

    app = CoopApp(db)  # the setup screen, then ctrl+r: the store cannot even be opened
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(100):
            if isinstance(app.screen, SetupScreen):
                break
            await pilot.pause(0.05)
        await app.screen.wait_ready()  # the form is complete: ctrl+r is answered
        await pilot.press("ctrl+r")
        for _ in range(400):  # a hang guard, not a timing check
            if "damaged" in messages(app):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, SetupScreen)  # still running, still there
        assert "damaged" in messages(app)

    db.write_bytes(healthy)  # opens fine, then the file is damaged under the open store
    store = Store(db)
    db.write_bytes(b"\0" * len(healthy))

    class RunsApp(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(RunsScreen(store))

    app = RunsApp(db)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        for _ in range(100):
            if screen.loaded:
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, RunsScreen)
        status = str(screen.query_one("#runs-status").render())
        assert str(db) in status and ("damaged" in status or "failed" in status), status
    store.close()


def test_limits_do_not_change_the_sweep_hash() -> None:
    """Raising a limit must not make a run unresumable: limits do not change results."""
    from coop_tui.spec import build_sweep

    base = {"name": "h", "agents": {"tft": {"strategy": "tit_for_tat"}},
            "experiments": [{"game": "prisoners", "agents": ["tft"]}]}
    raised = {**base, "max_decisions": 10**9, "max_prompt_tokens": 100_000}
    assert build_sweep(base).hash == build_sweep(raised).hash
    assert build_sweep(base).hash != build_sweep({**base, "seed": 9}).hash


def test_failure_reasons() -> None:
    from coop_tui.errors import failure_reason, failure_summary

    cases = {
        "ProviderError: openai/x at h:1: HTTP 401: Incorrect API key": "HTTP 401",
        "ProviderError: openai/x at h:1: gave up after 6 retries; last error: HTTP 503: busy":
            "HTTP 503 after retries",
        "seat 1 (m) gave no valid answer in 3 attempts: no JSON object": "invalid answers",
        "ProviderError: x: gave up after 6 retries; last error: ReadTimeout: timed out":
            "timeout after retries",
        "ProviderError: x: APIConnectionError: Connection refused": "connection refused",
        "ProviderError: x: gave up after 6 retries; last error: HTTP 500: litellm."
        "APIConnectionError: Cannot connect to host localhost:11434 ssl:default "
        "[Connect call failed ('127.0.0.1', 11434)]": "connection refused",
        "ProviderError: x: DNS lookup failed: ClientConnectorDNSError: Cannot connect to host "
        "gpu9:8000 ssl:default [Name or service not known]": "DNS lookup failed",
        "ProviderError: x: TLS error: ClientConnectorCertificateError: "
        "[SSL: CERTIFICATE_VERIFY_FAILED]": "TLS error",
        "ProviderError: x: gave up after 6 retries; last error: HTTP 502: upstream "
        "connection refused": "HTTP 502 after retries",
        "ProviderError: x: HTTP 500: Internal error": "HTTP 500",
        "ProviderError: x: ServerDisconnectedError: Server disconnected": "connection dropped",
        "ProviderError: x: gave up after 6 retries; last error: connection dropped: "
        "ClientPayloadError: Response payload is not completed": "connection dropped after retries",
        "KeyError: 'seat'": "KeyError",
        "": "unknown error",
    }
    for error, reason in cases.items():
        assert failure_reason(error) == reason, error
    groups = {"HTTP 401": {"count": 2}, "invalid answers": {"count": 5}}
    assert failure_summary(groups) == "invalid answers: 5, HTTP 401: 2"
