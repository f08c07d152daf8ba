"""Hostile input, dead hosts and edited files, kept as cases so every feature meets them.

Each case replays an attack once seen in the wild of testing: an answer the model could
not give, an input edited between a kill and ``--resume``, a size that would allocate
gigabytes, a secret echoed by a provider, a name that rewrites the terminal. The promise
each checks: the stated exit code, one message naming the field or file and the fix,
bounded memory, nothing written on refusal, nothing secret stored or shown.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

SECRET = "sk-hostile-SECRET-9137"


# The CLI run as with -m, reporting its own peak memory (VmHWM) on exit: RUSAGE_CHILDREN is
# the peak of every child this process ever waited for, and on Linux a child's ru_maxrss
# starts at its parent's peak (kept across exec): a pytest worker that loaded the model.
_CLI_REPORTING_ITS_PEAK = (
    "import atexit, os, re, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['PEAK_RSS_FILE'], 'a').write(re.search("
    "r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1) + '\\n'))\n"
    "sys.argv[0] = 'coop-tui'\n"
    "runpy.run_module('coop_tui.cli', run_name='__main__', alter_sys=True)\n"
)
_PEAKS_KB: list[int] = []


@pytest.fixture(autouse=True)
def _peaks_of_this_test() -> None:
    _PEAKS_KB.clear()


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        env = {**os.environ, "HOSTILE_KEY": SECRET, "COLUMNS": "200", "PEAK_RSS_FILE": str(peak_file)}
        result = subprocess.run(
            [sys.executable, "-c", _CLI_REPORTING_ITS_PEAK, *args], env=env, capture_output=True,
            text=True, timeout=300, cwd=cwd,
        )
        if peak_file.exists():
            _PEAKS_KB.extend(int(line) for line in peak_file.read_text().split())
    return result


def count(db: Path, sql: str, args: tuple[Any, ...] = ()) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchone()[0]
    finally:
        conn.close()


def chat_count(server: LoopbackServer) -> int:
    return len([r for r in server.requests if r.path.endswith("/chat/completions")])


def choice_sweep(path: Path, url: str) -> Path:
    path.write_text(
        f"""
name = "refuser"
seed = 1
samples = 2

[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "HOSTILE_KEY"

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
agents = ["m", "tft"]
answer = "choice"
max_attempts = 1
"""
    )
    return path


# ------------------------------------------------------------------ 2: resume retries
def test_resume_asks_again_what_had_no_usable_answer(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=1, answer="I refuse.") as server:
        sweep = choice_sweep(tmp_path / "s.toml", server.url)
        db = tmp_path / "r.db"
        first = cli("--batch", str(sweep), "--db", str(db))
        assert first.returncode == 1, first.stdout + first.stderr
        failed = count(db, "select count(*) from matches where status = 'failed'")
        assert failed >= 1

        server.configure(answer='{"choice": "A0"}')  # the model is fixed
        again = cli("--batch", str(sweep), "--db", str(db), "--resume")
        assert again.returncode == 0, again.stdout + again.stderr
        assert chat_count(server) == failed * 2  # both seats of each failed match, asked again
        assert "asked again" in again.stdout
        assert count(db, "select count(*) from matches where status != 'done'") == 0
        assert count(db, "select count(*) from decisions where valid = 0") == 0


# ------------------------------------------------------------------ 4 / 8: bounded, refused
STRATEGY_BENCH = """
name = "items"
[agents.a]
strategy = "always_cooperate"
[[experiments]]
game = "prisoners"
mechanism = "benchmark"
benchmark = "mine.jsonl"
agents = ["a"]
"""


def _peak_rss_mb_of_children() -> float:
    """The highest peak memory of the CLI runs of this test."""
    assert _PEAKS_KB, "no CLI run reported its peak memory"
    return max(_PEAKS_KB) / 1024


ITEM_CASES = {
    "a Likert scale of 10^8 points": (
        '{"id": "q", "prompt": "p", "kind": "likert", "scale": [1, 100000000]}', "mine.jsonl:1.scale", "at most 101"),
    "a Likert scale of floats": (
        '{"id": "q", "prompt": "p", "kind": "likert", "scale": [-1e21, 1]}', "mine.jsonl:1.scale", "whole numbers"),
    "min = NaN": ('{"id": "q", "prompt": "p", "kind": "number", "min": NaN}', "mine.jsonl:1.min", "finite"),
    "max = 1e999": ('{"id": "q", "prompt": "p", "kind": "number", "max": 1e999}', "mine.jsonl:1.max", "finite"),
    "max = 10^400": ('{"id": "q", "prompt": "p", "kind": "number", "max": 1' + "0" * 400 + "}",
                     "mine.jsonl:1.max", "between"),
    "step = 1e-300": ('{"id": "q", "prompt": "p", "kind": "number", "min": 0, "max": 1, "step": 1e-300}',
                      "mine.jsonl:1.step", "at least"),
}


@pytest.mark.parametrize("case", sorted(ITEM_CASES))
def test_item_files_naming_huge_or_broken_sizes_are_refused_with_exit_2(case: str, tmp_path: Path) -> None:
    line, field, words = ITEM_CASES[case]
    (tmp_path / "mine.jsonl").write_text(line + "\n")
    sweep = tmp_path / "s.toml"
    sweep.write_text(STRATEGY_BENCH)
    db = tmp_path / "x.db"
    for args in (("--dry-run",), ()):
        result = cli("--batch", str(sweep), "--db", str(db), *args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert field in result.stderr and words in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        assert not db.exists()
    assert _peak_rss_mb_of_children() < 500


def test_an_item_file_that_is_not_utf8_is_refused_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_bytes(
        b'{"id": "q1", "prompt": "fine", "kind": "text"}\n{"id": "q2", "prompt": "caf\xe9", "kind": "text"}\n'
    )
    (tmp_path / "s.toml").write_text(STRATEGY_BENCH)
    result = cli("--batch", str(tmp_path / "s.toml"), "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2, result.stderr
    assert "mine.jsonl:2" in result.stderr and "UTF-8" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_an_oversized_item_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from coop_tui.grounded.items import MAX_ITEM_FILE_BYTES

    line = b'{"id": "q%d", "prompt": "' + b"x" * 200 + b'", "kind": "text"}\n'
    with (tmp_path / "mine.jsonl").open("wb") as fh:
        n = 0
        while fh.tell() <= MAX_ITEM_FILE_BYTES:
            fh.write(line.replace(b"%d", str(n).encode()) * 1)
            n += 1
    (tmp_path / "s.toml").write_text(STRATEGY_BENCH)
    result = cli("--batch", str(tmp_path / "s.toml"), "--db", str(tmp_path / "x.db"), "--dry-run")
    assert result.returncode == 2, result.stderr
    assert "MiB" in result.stderr and "split it" in result.stderr


def test_a_source_run_that_does_not_exist_is_refused_before_writing(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'name = "x"\n[agents.a]\nstrategy = "always_cooperate"\n[agents.b]\nstrategy = "always_defect"\n'
        '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["a", "b"]\n'
        'matchup = "cross"\nsimilarity_source = "exogenous:die"\nsource_run = "nonexistent-run"\n'
    )
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "experiments[0].source_run" in result.stderr and "nonexistent-run" in result.stderr
    assert not db.exists()


def test_an_aliased_exogenous_source_plays_on_the_answers_of_its_benchmark(tmp_path: Path) -> None:
    """``similarity_source = "exogenous:die"`` (the documented alias) reads the answers the
    administration stored under the benchmark's own key."""
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'name = "die"\n[agents.a]\nstrategy = "always_cooperate"\n[agents.b]\nstrategy = "always_defect"\n'
        '[[experiments]]\ngame = "prisoners"\nmechanism = "benchmark"\nbenchmark = "die"\n'
        'agents = ["a", "b"]\nsamples = 2\n'
        '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["a", "b"]\n'
        'matchup = "cross"\nsimilarity_source = "exogenous:die"\n'
    )
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 0, result.stdout + result.stderr
    assert count(db, "select count(*) from matches where mechanism = 'similarity' and status = 'done'") == 4


# ------------------------------------------------------------------ 5: prompt size per prompt
def _repeated_sweep(path: Path, url: str, *, limit: int | None, rounds: int) -> Path:
    path.write_text(
        f"""
name = "long"
seed = 2
{f"max_prompt_tokens = {limit}" if limit else ""}
[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "HOSTILE_KEY"
[agents.alld]
strategy = "always_defect"
[[experiments]]
game = "prisoners"
mechanism = "repetition"
matchup = "versus"
agents = ["m"]
opponents = ["alld"]
rounds = {rounds}
history = "all"
horizon = "known"
"""
    )
    return path


@pytest.mark.slow
def test_a_prompt_that_grows_past_the_limit_is_refused_by_the_dry_run(tmp_path: Path) -> None:
    """Known horizon, whole history: the first prompt is short, the 1400th is not."""
    sweep = _repeated_sweep(tmp_path / "s.toml", "http://127.0.0.1:9/v1", limit=None, rounds=1400)
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db), "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "max_prompt_tokens" in result.stderr and "prompt number" in result.stderr
    assert not db.exists()
    assert _peak_rss_mb_of_children() < 500


def test_every_prompt_is_checked_at_ask_time_re_asks_included(tmp_path: Path) -> None:
    """A re-ask carries the rejected answer and the reason: longer than any prompt the dry
    run could render. It is measured when it is about to be sent, and not sent."""
    from coop_tui.prompt_size import measure_sync
    from coop_tui.spec import load_sweep

    with LoopbackServer(latency=0.0, chunks=1, answer="I refuse.") as server:
        probe = load_sweep(_repeated_sweep(tmp_path / "p.toml", server.url, limit=None, rounds=1))
        largest = max(t for seats in measure_sync(probe).largest_by_cell.values() for t, _n in seats.values())
        limit = largest + 10  # every first attempt fits; a re-ask does not
        sweep = _repeated_sweep(tmp_path / "s.toml", server.url, limit=limit, rounds=1)
        sweep.write_text(sweep.read_text().replace('seed = 2', 'seed = 2\nmax_attempts = 2'))
        db = tmp_path / "x.db"
        result = cli("--batch", str(sweep), "--db", str(db))
        assert result.returncode == 1, result.stdout + result.stderr
        sent = [sum(len(m["content"]) for m in r.body["messages"]) for r in server.chat_requests]
        assert sent and max(sent) <= limit * 4
        errors = [r[0] for r in sqlite3.connect(db).execute(
            "select error from decisions where valid = 0")]
        assert errors and all("prompt not sent" in e and "max_prompt_tokens" in e for e in errors)


# ------------------------------------------------------------------ 7: inputs edited before --resume
def test_resume_refuses_when_a_game_file_changed_since_the_run_started(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    game = tmp_path / "snow.toml"
    game.write_text((repo / "data/games/example_snowdrift.toml").read_text())
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'name = "edit"\nsamples = 3\n[agents.a]\nstrategy = "tit_for_tat"\n[agents.b]\nstrategy = "always_defect"\n'
        '[[experiments]]\ngame = "snow.toml"\nmechanism = "repetition"\nrounds = 3\nagents = ["a", "b"]\n'
        'matchup = "cross"\n'
    )
    db = tmp_path / "x.db"
    first = cli("--batch", str(sweep), "--db", str(db))
    assert first.returncode == 0, first.stdout + first.stderr
    conn = sqlite3.connect(db)
    recorded = conn.execute("select inputs from runs").fetchone()[0]
    conn.close()
    assert str(game.resolve()) in recorded
    same = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert same.returncode == 0, same.stdout + same.stderr

    game.write_text(game.read_text().replace("Dig = [3, 3]", "Dig = [30, 30]"))
    before = count(db, "select count(*) from decisions")
    edited = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert edited.returncode == 2, edited.stdout + edited.stderr
    assert "snow.toml has changed" in edited.stderr and "without --resume" in edited.stderr
    assert count(db, "select count(*) from decisions") == before


def test_an_item_file_named_by_a_sweep_is_fingerprinted_too(tmp_path: Path) -> None:
    from coop_tui.spec import load_sweep

    (tmp_path / "mine.jsonl").write_text('{"id": "q", "prompt": "p", "kind": "text"}\n')
    (tmp_path / "s.toml").write_text(STRATEGY_BENCH)
    sweep = load_sweep(tmp_path / "s.toml")
    assert str((tmp_path / "mine.jsonl").resolve()) in sweep.inputs


# ------------------------------------------------------------------ 9: secrets in URLs and answers
def test_query_keys_and_echoed_credentials_never_reach_the_database(tmp_path: Path) -> None:
    echo = f"I was sent Authorization: Bearer {SECRET}, and Bearer sk-other-Unregistered-77.\n"
    with LoopbackServer(latency=0.0, chunks=3, answer=echo + '{"A0": 50, "A1": 50}') as server:
        sweep = tmp_path / "s.toml"
        sweep.write_text(
            f'name = "leak"\n[agents.m]\nmodel = "openai/loopback"\n'
            f'api_base = "{server.url}?key=sk-query-KEY-5150"\napi_key_env = "HOSTILE_KEY"\n'
            '[[experiments]]\ngame = "prisoners"\nagents = ["m"]\n'
        )
        db = tmp_path / "x.db"
        result = cli("--batch", str(sweep), "--db", str(db))
        assert result.returncode == 0, result.stdout + result.stderr
        assert server.chat_requests  # the agent still connects with the full URL
        export = cli("export", "--db", str(db), "--out", str(tmp_path / "out"))
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("x.db"))
    for secret in (SECRET, "sk-query-KEY-5150", "sk-other-Unregistered-77"):
        assert secret.encode() not in data, secret
        assert secret not in result.stdout + result.stderr
    assert export.returncode == 0, export.stderr
    exported = [f for f in (tmp_path / "out").rglob("*") if f.is_file()]
    assert any(f.name.startswith("seats") for f in exported)
    for f in exported:
        assert b"sk-query-KEY-5150" not in f.read_bytes()
        assert SECRET.encode() not in f.read_bytes()
    assert count(db, "select count(*) from decisions where response like '%Bearer ***%'") >= 1


# ------------------------------------------------------------------ 10: terminal injection
ESCAPE = "\u001b]0;PWNED\u0007\u001b[2J"


def test_a_name_holding_escape_sequences_is_refused(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        f'name = "x{ESCAPE}"\n[agents.a]\nstrategy = "always_cooperate"\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["a"]\n'.replace("\u001b", "\\u001b").replace("\u0007", "\\u0007")
    )
    result = cli("--batch", str(sweep), "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "control character" in result.stderr
    assert "\u001b" not in result.stderr + result.stdout
    assert not (tmp_path / "x.db").exists()


def test_stored_names_with_escapes_or_markup_are_shown_not_obeyed(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "plain"\n[agents.a]\nstrategy = "always_cooperate"\n'
                     '[[experiments]]\ngame = "prisoners"\nagents = ["a"]\n')
    db = tmp_path / "x.db"
    assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
    conn = sqlite3.connect(db)  # as an import or an older version could have stored it
    with conn:
        conn.execute("update runs set name = ?", [f"[red]evil{ESCAPE}"])
        conn.execute("update seats set agent = ?", [f"[bold]a{ESCAPE}"])
    conn.close()
    for args in (("list", "runs", "--db", str(db)), ("report", "--db", str(db))):
        out = cli(*args)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "\u001b" not in out.stdout + out.stderr and "\u0007" not in out.stdout
        assert "[red]evil" in out.stdout


# ------------------------------------------------------------------ 6: one game spec per spec
def test_a_many_player_game_spec_is_stored_once_not_per_match(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'name = "pg"\nsamples = 20\n[agents.a]\nstrategy = "always_cooperate"\n'
        '[[experiments]]\ngame = "public_good"\ngame_params = { players = 12 }\nagents = ["a"]\n'
    )
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 0, result.stdout + result.stderr
    assert count(db, "select count(*) from matches") == 20
    assert count(db, "select count(*) from game_specs") == 1
    assert count(db, "select count(*) from matches where game_spec is not null") == 0
    spec_bytes = count(db, "select length(spec) from game_specs")
    assert spec_bytes > 100_000  # a 2^12 x 12 payoff tensor
    match_bytes = count(db, "select sum(length(coalesce(game_spec, '')) + length(game_spec_hash))"
                            " from matches")
    assert match_bytes < 20 * 100
    report = cli("report", "--db", str(db), "--json")
    assert report.returncode == 0, report.stderr
    export = cli("export", "--db", str(db), "--out", str(tmp_path / "out"))
    assert export.returncode == 0, export.stderr
    assert b'"public_good"' in (tmp_path / "out" / "matches.csv").read_bytes() or \
        b"public_good" in (tmp_path / "out" / "matches.csv").read_bytes()


def test_the_migration_moves_inline_game_specs_out_of_match_rows(tmp_path: Path) -> None:
    from coop_tui.store import Store, game_spec_sql

    db = tmp_path / "old.db"
    store = Store(db)
    conn = store.db.conn
    with conn:  # rows as written before m130: the spec inline in every match
        conn.execute("insert into runs (id, name, kind, status) values ('r', 'old', 'sweep', 'done')")
        for i in range(3):
            conn.execute("insert into matches (id, run_id, match_key, game, game_spec, status)"
                         " values (?, 'r', ?, 'prisoners', '{\"key\": \"prisoners\"}', 'done')",
                         [f"m{i}", f"k{i}"])
        conn.execute("delete from _migrations where name = 'm130_content_addressed_game_specs'")
    store.close()
    store = Store(db)
    assert "m130_content_addressed_game_specs" in store.applied
    rows = store.db.execute(f"select game_spec, {game_spec_sql()} from matches").fetchall()
    assert rows == [(None, '{"key": "prisoners"}')] * 3
    assert store.match("m0")["game_spec"] == '{"key": "prisoners"}'
    store.close()


# ------------------------------------------------------------------ imports: bombs, NaN, .gz
PD_RUN = Path(__file__).parent / "data" / "coopeval_sample" / "no_mechanism_prisoners_dilemma"


def _copy_run(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "run"
    shutil.copytree(PD_RUN, target)
    for f in target.iterdir():
        f.chmod(0o644)
    return target


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e308"])
def test_coopeval_payoffs_must_be_finite_and_bounded(value: str, tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    records = run / "records.jsonl"
    lines = records.read_text().splitlines()
    lines[0] = lines[0].replace('"points": 1,', f'"points": {value},', 1)
    records.write_text("\n".join(lines) + "\n")
    (run / "matchup_payoffs.json").unlink()
    db = tmp_path / "x.db"
    result = cli("import", "coopeval", str(run), "--db", str(db))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "records.jsonl:1" in result.stderr and "finite" in result.stderr
    assert "Traceback" not in result.stderr


def test_coopeval_records_may_be_gzip_compressed(tmp_path: Path) -> None:
    import gzip

    run = _copy_run(tmp_path)
    records = run / "records.jsonl"
    (run / "records.jsonl.gz").write_bytes(gzip.compress(records.read_bytes()))
    records.unlink()
    db = tmp_path / "x.db"
    result = cli("import", "coopeval", str(run), "--db", str(db))
    assert result.returncode == 0, result.stdout + result.stderr
    assert count(db, "select count(*) from decisions") > 0  # moves came from the .gz records


def test_a_gzip_bomb_is_refused_while_streaming_not_imported(tmp_path: Path) -> None:
    import gzip

    from coop_tui.inputs import MAX_DECOMPRESSED_BYTES

    row = (b"pd_canonical,PD,c,t,m,o,self,baseline,1,10,a,b,30,30,0.5,0.5,C,C,1,1,0.0,,"
           b"2025-01-01\n")
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = row * 50_000
        written = 0
        while written <= MAX_DECOMPRESSED_BYTES:
            fh.write(chunk)
            written += len(chunk)
    assert bomb.stat().st_size < MAX_DECOMPRESSED_BYTES // 50
    db = tmp_path / "x.db"
    result = cli("import", "strategic-personalities", str(bomb), "--db", str(db))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "MiB" in result.stderr and "bomb.csv.gz" in result.stderr
    assert not db.exists() or count(db, "select count(*) from runs") == 0
    assert _peak_rss_mb_of_children() < 500


# ------------------------------------------------------------------ 4: one huge match, bounded memory
def _teams_run(tmp_path: Path, name: str) -> dict[str, Any]:
    import asyncio
    import json

    from coop_tui.report import build_report
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    sweep = build_sweep({
        "name": "teams", "agents": {"tft": {"strategy": "tit_for_tat"}, "alld": {"strategy": "always_defect"}},
        "experiments": [{"game": "ipd", "mechanism": "teams", "matchup": [["tft", "alld", "tft", "alld"]],
                         "teams": 2, "team_size": 2, "rounds": 4}],
    })
    store = Store(tmp_path / f"{name}.db")
    summary = asyncio.run(run_sweep(sweep, store))
    assert summary.status == "done"
    conn = store.db.conn
    out = {
        "report": json.loads(json.dumps(build_report(store, summary.run_id)["experiments"], default=str)),
        "decisions": conn.execute("select count(*) from decisions").fetchone()[0],
        "rounds": conn.execute("select count(*) from rounds").fetchone()[0],
        "phases": conn.execute("select count(*) from phases").fetchone()[0],
        "totals": conn.execute("select decisions, cost_usd from match_totals").fetchall(),
    }
    store.close()
    return out


def test_a_match_bigger_than_the_write_batch_is_written_as_it_goes_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coop_tui.store import writer as store_module  # the event writer holds the batches

    held = _teams_run(tmp_path, "held")
    monkeypatch.setattr(store_module, "SPILL_ROWS", 7)  # every few rows go out at once
    spilled = _teams_run(tmp_path, "spilled")
    assert held["decisions"] > 7 * 5
    assert spilled == held


def _fixed_model(body: dict[str, Any]) -> str:
    """The model after its fix: option A for a benchmark question, a mix for a move."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    return '{"choice": "A"}' if '"choice"' in prompt else '{"A0": 60, "A1": 40}'


@pytest.mark.slow
def test_resume_runs_the_downstream_stages_of_a_benchmark_that_failed_before(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.0, chunks=1, answer="I refuse.") as server:
        sweep = tmp_path / "s.toml"
        sweep.write_text(
            f'name = "staged"\nmax_attempts = 1\n[agents.m]\nmodel = "openai/loopback"\n'
            f'api_base = "{server.url}"\napi_key_env = "HOSTILE_KEY"\n'
            f'[agents.s]\nmodel = "openai/loopback2"\napi_base = "{server.url}"\napi_key_env = "HOSTILE_KEY"\n'
            '[[experiments]]\ngame = "prisoners"\nmechanism = "benchmark"\nbenchmark = "demo_choices"\n'
            'agents = ["m", "s"]\nsamples = 2\n'
            '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["m", "s"]\n'
            'matchup = "cross"\nsimilarity_source = "exogenous:demo_choices"\n'
        )
        db = tmp_path / "x.db"
        first = cli("--batch", str(sweep), "--db", str(db))
        assert first.returncode == 1, first.stdout + first.stderr
        downstream = "select count(*) from matches where mechanism = 'similarity' and status = ?"
        assert count(db, downstream, ("failed",)) >= 1

        server.configure(answer=_fixed_model)
        again = cli("--batch", str(sweep), "--db", str(db), "--resume")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "asked again" in again.stdout
        assert count(db, "select count(*) from matches where status != 'done'") == 0
        assert count(db, downstream, ("done",)) == 4


# ------------------------------------------------------------------ 11: smaller ones
def test_progress_counts_stopped_matches_apart_from_failed_ones(tmp_path: Path) -> None:
    from rich.console import Console

    from coop_tui.events import MatchDone, MatchStarted
    from coop_tui.runner import ProgressView
    from coop_tui.spec import build_sweep

    sweep = build_sweep({"name": "p", "agents": {"a": {"strategy": "tit_for_tat"}},
                         "experiments": [{"game": "prisoners", "agents": ["a"], "samples": 3}]})
    view = ProgressView(sweep, Console(file=open(os.devnull, "w")))  # noqa: SIM115
    for i, status in enumerate(("stopped", "stopped", "failed")):
        view(MatchStarted(run_id="r", match_id=f"m{i}", experiment=0, game="prisoners",
                          mechanism="none", seats=("a", "a"), condition={}, sample=i, seed=0))
        view(MatchDone(f"m{i}", (), status=status))
    assert view.stats["all"]["failed"] == 1


def test_a_second_judge_pass_at_once_is_told_to_run_again_not_to_resume(tmp_path: Path) -> None:
    from coop_tui.spec import SpecError
    from coop_tui.store import Store
    from coop_tui.sweep import RunLease

    store = Store(tmp_path / "x.db")
    store.create_run("j", "judge", kind="judge", seed=0, sweep_hash="h", spec={})
    RunLease(store, "j").acquire()
    with pytest.raises(SpecError) as err:
        RunLease(store, "j").acquire(field="judge", then="run the same judge command again")
    assert err.value.field == "judge" and "resume" not in err.value.message
    store.close()


def test_reimporting_a_judged_run_leaves_no_judgement_on_a_missing_decision(tmp_path: Path) -> None:
    from coop_tui.importers.coopeval import import_coopeval
    from coop_tui.store import Store

    store = Store(tmp_path / "x.db")
    import_coopeval(PD_RUN, store)
    run_id = store.db.execute("select id from runs").fetchone()[0]
    ids = [r[0] for r in store.db.execute("select id from decisions limit 5")]
    with store.db.conn:  # five judgements of the imported run, as `coop-tui judge` links them
        for i, decision_id in enumerate(ids):
            store.db.execute(
                "insert into judgements (judge_run_id, judged_decision_id, judge_decision_id,"
                " judged_run_id, judge, rubric, rubric_version, valid) values"
                " ('jr', ?, ?, ?, 'j', 'r', '1', 1)", [decision_id, 10_000 + i, run_id])
            store.db.execute("insert into judgement_labels values (?, 'c', 0.9, 1)", [10_000 + i])
    import_coopeval(PD_RUN, store)  # replaces the run: its decisions get new ids
    dangling = store.db.execute(
        "select count(*) from judgements j where not exists"
        " (select 1 from decisions d where d.id = j.judged_decision_id)").fetchone()[0]
    assert dangling == 0
    assert store.db.execute("select count(*) from judgement_labels").fetchone()[0] == 0
    store.close()
