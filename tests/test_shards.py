"""Slices of a sweep (``--shard K/N``) and ``coop-tui merge``, through real processes and
real SQLite files: slices merged equal one process playing the whole sweep (matches,
decisions, report), a staged pipeline of the similarity signals paper stays in one
slice, merging again adds nothing, other sweeps stay runs of their own, and bad input
stops with exit code 2 before anything is written."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui import summaries
from coop_tui.cli import main
from coop_tui.shards import Shard, apply_shard, parse_shard, slice_plan, staged_experiments
from coop_tui.spec import SpecError, build_sweep, estimate_decisions, load_sweep
from coop_tui.testing.server import LoopbackServer

STRATEGIES = """
name = "{name}"
seed = 11
samples = 3

[agents.tft]
strategy = "tit_for_tat"

[agents.alld]
strategy = "always_defect"

[agents.coin]
strategy = "random"
params = {{ p = 0.4 }}

[agents.grim]
strategy = "grim_trigger"

[[experiments]]
name = "repeated"
game = "prisoners"
mechanism = "repetition"
rounds = {rounds}
matchup = "cross"
agents = ["tft", "alld", "coin", "grim"]

[[experiments]]
name = "one-shot"
game = ["prisoners", "stag_hunt"]
mechanism = "none"
matchup = "self"
agents = ["coin", "tft"]
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args], env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


def ok(*args: str) -> subprocess.CompletedProcess[str]:
    done = cli(*args)
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def only_run(db: Path) -> str:
    (run,) = rows(db, "select id from runs where kind = 'sweep'")
    return run[0]


MATCH_FIELDS = ("match_key", "experiment", "game", "mechanism", "condition", "condition_key",
                "matchup", "sample", "replicate", "seed", "status", "payoffs", "welfare",
                "game_spec_hash", "plan_index", "info")
DECISION_FIELDS = ("d.round", "d.phase", "d.seat", "d.kind", "d.agent", "d.content_key",
                   "d.response", "d.reasoning", "d.answer", "d.parsed", "d.valid", "d.attempts",
                   "d.labels", "d.label_map", "d.distribution", "d.action", "d.coop_prob",
                   "d.cooperated", "d.input_tokens", "d.output_tokens", "d.cost_usd",
                   "coalesce(t.text, d.prompt)")


def matches_of(db: Path, run: str) -> list[tuple[Any, ...]]:
    return sorted(rows(db, f"select {', '.join(MATCH_FIELDS)} from matches where run_id = ?", (run,)))


def decisions_of(db: Path, run: str) -> list[tuple[Any, ...]]:
    """Every decision of the run with its match key in place of the (run-derived) id."""
    return sorted(rows(db, f"""
        select m.match_key, {', '.join(DECISION_FIELDS)}
        from decisions d join matches m on m.id = d.match_id
        left join texts t on t.hash = d.prompt_hash where m.run_id = ?""", (run,)), key=repr)


def side_rows(db: Path, run: str) -> dict[str, list[tuple[Any, ...]]]:
    """Seats, rounds and phases by match key."""
    out = {}
    for table, cols in (("seats", "s.seat, s.agent, s.agent_kind, s.agent_spec, s.payoff"),
                        ("rounds", "s.round, s.seat, s.action, s.payoff, s.cooperated, s.info"),
                        ("phases", "s.round, s.phase, s.info")):
        out[table] = sorted(rows(db, f"select m.match_key, {cols} from {table} s join matches m"
                                     " on m.id = s.match_id where m.run_id = ?", (run,)), key=repr)
    return out


RUN_SPECIFIC = {"run", "run_id", "id", "created_at", "finished_at", "elapsed_s", "db", "database"}


def report(db: Path, run: str) -> Any:
    """``report --json`` with what names the run (its id, its times) left out."""
    data = json.loads(ok("report", run, "--db", str(db), "--json").stdout)
    return scrub(data, run)


def scrub(value: Any, run: str) -> Any:
    if isinstance(value, dict):
        return {k: scrub(v, run) for k, v in value.items() if k not in RUN_SPECIFIC}
    if isinstance(value, list):
        return [scrub(v, run) for v in value]
    if isinstance(value, str):
        return value.replace(run, "RUN")
    return value


def close(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 relative: what an order of float additions can change."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def assert_same_run(whole: Path, merged: Path, *, exact: bool = True) -> None:
    """The merged run holds what the whole run holds. ``exact``: the report to the last
    digit too (a strategy sweep; with models, one process finishes its matches, and adds
    up their numbers, in the order the answers arrive)."""
    a, b = only_run(whole), only_run(merged)
    assert matches_of(merged, b) == matches_of(whole, a)
    assert decisions_of(merged, b) == decisions_of(whole, a)
    assert side_rows(merged, b) == side_rows(whole, a)
    if exact:
        assert report(merged, b) == report(whole, a)
    else:
        assert close(report(merged, b), report(whole, a))
    (status,) = rows(merged, "select status from runs where id = ?", (b,))
    assert status == ("done",)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ----------------------------------------------------------------- the slices themselves
def test_slices_are_disjoint_cover_the_plan_and_differ_by_at_most_one(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="plan", rounds=3))
    whole = [cell.match_key(slot) for cell, slot in load_sweep(sweep_file).matches()]
    slices = []
    for k in (1, 2, 3):
        sweep = apply_shard(load_sweep(sweep_file), Shard(k, 3))
        keys = [cell.match_key(slot) for cell, slot in sweep.matches()]
        assert sweep.total_matches == len(keys)
        assert sweep.shard == f"{k}/3"
        slices.append(keys)
    assert sorted(k for keys in slices for k in keys) == sorted(whole)
    assert len({k for keys in slices for k in keys}) == len(whole)
    sizes = sorted(len(keys) for keys in slices)
    assert sizes[-1] - sizes[0] <= 1
    # the same cut every time: it depends on the sweep file alone
    again = [cell.match_key(slot) for cell, slot in
             apply_shard(load_sweep(sweep_file), Shard(2, 3)).matches()]
    assert again == slices[1]


DESIGNS = {
    "name": "designs", "seed": 1, "samples": 2, "replicates": 3,
    "agents": {"tft": {"strategy": "tit_for_tat"}, "alld": {"strategy": "always_defect"},
               "coop": {"strategy": "always_cooperate"}},
    "experiments": [{"game": "prisoners", "mechanism": "mediation", "matchup": "cross",
                     "agents": ["tft", "alld", "coop"]},
                    {"game": "prisoners", "mechanism": "none", "matchup": "self",
                     "agents": ["tft", "alld"]}],
}


def test_a_shared_design_tournament_stays_in_one_slice_and_its_designs_count_there() -> None:
    sweep = build_sweep(json.loads(json.dumps(DESIGNS)))
    owner: dict[str, int] = {}
    for k in (1, 2, 3, 4):
        for cell, slot in slice_plan(sweep, Shard(k, 4)):
            if cell.mechanism == "mediation":
                assert cell.mechanism_params.get("design_scope") == "tournament"
                assert owner.setdefault(cell.tournament_key(slot), k) == k
    assert len(owner) == 3  # one per replicate, dealt to three slices
    # the estimate of each slice counts the designs of its own tournaments, once
    whole = estimate_decisions(build_sweep(json.loads(json.dumps(DESIGNS))))
    parts = [estimate_decisions(apply_shard(build_sweep(json.loads(json.dumps(DESIGNS))),
                                            Shard(k, 4))) for k in (1, 2, 3, 4)]
    assert sum(parts) == whole and all(parts)


@pytest.mark.parametrize(("value", "says"), [
    ("0/3", "K runs from 1"), ("4/3", "does not exist"), ("3", "not K/N"), ("a/b", "not K/N"),
    ("1/0", "N = 0"), ("-1/3", "not K/N"), ("1/3/5", "not K/N"), ("", "not K/N"),
])
def test_bad_shard_values_stop_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, says: str) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="bad", rounds=2))
    db = tmp_path / "never.sqlite"
    assert main(["--batch", str(sweep_file), "--db", str(db), f"--shard={value}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--shard" in lines[0] and says in lines[0], lines
    assert not db.exists()


@pytest.mark.slow
def test_a_bad_shard_in_a_real_process_and_a_shard_without_a_sweep(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="bad", rounds=2))
    db = tmp_path / "never.sqlite"
    done = cli("--batch", str(sweep_file), "--db", str(db), "--shard", "4/3")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--shard" in done.stderr and "slice 4 of 3" in done.stderr
    done = cli("--db", str(db), "--shard", "1/2", "list", "runs")
    assert done.returncode == 2 and "--batch" in done.stderr
    assert not db.exists()
    with pytest.raises(SpecError):
        parse_shard("2/1")


@pytest.mark.slow
def test_dry_run_shows_each_slice_and_the_slices_add_up(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="sizes", rounds=4))
    db = tmp_path / "dry.sqlite"

    def size(*extra: str) -> tuple[int, int]:
        out = ok("--batch", str(sweep_file), "--db", str(db), "--dry-run", *extra).stdout
        found = re.search(r"(\d+) matches, ~(\d+) decisions", out)
        assert found, out
        if extra:
            assert f"slice {extra[-1]} of the sweep" in out
        return int(found.group(1)), int(found.group(2))

    total = size()
    parts = [size("--shard", f"{k}/3") for k in (1, 2, 3)]
    assert (sum(p[0] for p in parts), sum(p[1] for p in parts)) == total
    assert not db.exists()


# ----------------------------------------------------------------- slices merged = one run
@pytest.mark.slow
def test_three_slices_merged_equal_one_run_and_merging_again_adds_nothing(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="tournament", rounds=6))
    whole = tmp_path / "whole.sqlite"
    ok("--batch", str(sweep_file), "--db", str(whole))
    slices = []
    for k in (1, 2, 3):
        db = tmp_path / f"slice-{k}.sqlite"
        ok("--batch", str(sweep_file), "--db", str(db), "--shard", f"{k}/3")
        assert rows(db, "select shard, sweep_hash from runs") == [
            (f"{k}/3", rows(whole, "select sweep_hash from runs")[0][0])]
        slices.append(str(db))
    merged = tmp_path / "merged.sqlite"
    out = ok("merge", *slices, "--db", str(merged)).stdout
    assert "done" in out
    assert_same_run(whole, merged)
    counts = rows(merged, "select (select count(*) from matches), (select count(*) from decisions),"
                          " (select count(*) from rounds), (select count(*) from match_totals)")
    again = ok("merge", slices[1], slices[0], slices[2], "--db", str(merged)).stdout
    assert "0 matches, 0 decisions added" in again
    assert rows(merged, "select (select count(*) from matches), (select count(*) from decisions),"
                        " (select count(*) from rounds), (select count(*) from match_totals)") == counts
    assert_same_run(whole, merged)
    # each slice resumes its own run, and a finished one asks nothing
    resumed = ok("--batch", str(sweep_file), "--db", slices[1], "--shard", "2/3", "--resume").stdout
    assert re.search(r"resuming run \S+: (\d+) of \1 matches already done", resumed), resumed


@pytest.mark.slow
def test_a_partial_merge_says_which_slices_are_missing_then_completes(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="partial", rounds=2))
    dbs = []
    for k in (1, 2):
        db = tmp_path / f"p{k}.sqlite"
        ok("--batch", str(sweep_file), "--db", str(db), "--shard", f"{k}/2")
        dbs.append(str(db))
    merged = tmp_path / "m.sqlite"
    out = ok("merge", dbs[1], "--db", str(merged)).stdout
    assert "stopped" in out and "1/2" in out
    out = ok("merge", dbs[0], "--db", str(merged)).stdout
    assert rows(merged, "select status, error from runs") == [("done", None)]
    whole = tmp_path / "w.sqlite"
    ok("--batch", str(sweep_file), "--db", str(whole))
    assert matches_of(merged, only_run(merged)) == matches_of(whole, only_run(whole))
    assert decisions_of(merged, only_run(merged)) == decisions_of(whole, only_run(whole))


@pytest.mark.slow
def test_runs_of_two_sweeps_stay_two_runs_and_a_same_named_other_sweep_is_refused(
        tmp_path: Path) -> None:
    a = write(tmp_path / "a.toml", STRATEGIES.format(name="alpha", rounds=2))
    b = write(tmp_path / "b.toml", STRATEGIES.format(name="beta", rounds=3))
    db_a, db_b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    ok("--batch", str(a), "--db", str(db_a), "--shard", "1/1")
    ok("--batch", str(b), "--db", str(db_b))
    merged = tmp_path / "m.sqlite"
    ok("merge", str(db_a), str(db_b), "--db", str(merged))
    names = rows(merged, "select name, status from runs order by name")
    assert names == [("alpha", "done"), ("beta", "done")]
    for name, db in (("alpha", db_a), ("beta", db_b)):
        (run,) = rows(merged, "select id from runs where name = ?", (name,))
        assert matches_of(merged, run[0]) == matches_of(db, only_run(db))
    # the same name from another sweep file: one clear line, nothing written
    other = write(tmp_path / "other.toml", STRATEGIES.format(name="alpha", rounds=5))
    db_other = tmp_path / "other.sqlite"
    ok("--batch", str(other), "--db", str(db_other))
    fresh = tmp_path / "fresh.sqlite"
    done = cli("merge", str(db_a), str(db_other), "--db", str(fresh))
    assert done.returncode == 2
    assert "different sweep file" in done.stderr and str(db_other) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not fresh.exists()
    before = rows(merged, "select count(*) from matches")
    done = cli("merge", str(db_other), "--db", str(merged))
    assert done.returncode == 2 and rows(merged, "select count(*) from matches") == before


@pytest.mark.slow
def test_merge_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="refused", rounds=2))
    good = tmp_path / "good.sqlite"
    ok("--batch", str(sweep_file), "--db", str(good))
    newer = tmp_path / "newer.sqlite"
    newer.write_bytes(good.read_bytes())
    conn = sqlite3.connect(newer)
    conn.execute("insert into _migrations (name, applied_at) values ('m999_from_the_future', 0)")
    conn.commit()
    conn.close()
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all, just words " * 100)
    broken = tmp_path / "broken.sqlite"  # claims today's schema, lacks a column of it
    broken.write_bytes(good.read_bytes())
    conn = sqlite3.connect(broken)
    conn.execute("drop index if exists idx_seats_payoff")
    conn.execute("alter table seats drop column payoff")
    conn.commit()
    conn.close()
    out = tmp_path / "out.sqlite"
    for bad, says in ((newer, "newer coop-tui"), (text, "not a"),
                      (tmp_path / "missing.sqlite", "does not exist"),
                      (broken, "could not be merged")):
        done = cli("merge", str(bad), str(good), "--db", str(out))
        assert done.returncode == 2, done.stderr
        assert str(bad) in done.stderr and says in done.stderr, done.stderr
        assert not out.exists()
    done = cli("merge", str(good), str(good), "--db", str(out))
    assert done.returncode == 2 and "twice" in done.stderr
    done = cli("merge", str(good), "--db", str(good))
    assert done.returncode == 2 and "--db" in done.stderr


# ----------------------------------------------------------------- a staged pipeline over HTTP
def scripted(body: dict[str, Any]) -> str:
    """Answers that depend on the prompt alone (never on arrival order), so one process
    and three get the same ones: the first option, a rating, a score, a split."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    tag = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    if "SIMILARITY SCORE" in prompt:
        return f"Much like me ({tag}).\nSIMILARITY SCORE: {int(tag, 16) % 100}"
    if '"choice"' in prompt:
        letters = re.findall(r"^([A-Z])\) ", prompt, re.M)
        return f"I weigh it up ({tag}).\n{{\"choice\": \"{letters[int(tag, 16) % len(letters)]}\"}}"
    if '"rating"' in prompt:
        return f"Hmm ({tag}).\n{{\"rating\": {1 + int(tag, 16) % 5}}}"
    if "comma-separated" in prompt:
        return f"3, 1, 4 ({tag})"
    coop = int(tag, 16) % 101
    return f"Thinking ({tag}).\n{{\"A0\": {coop}, \"A1\": {100 - coop}}}"


PIPELINE = """
name = "staged"
seed = 5
concurrency = 4

[agents.a]
model = "openai/loopback"
api_base = "{url}"
api_key = "sk-test"
style = "cot"

[agents.b]
model = "openai/loopback2"
api_base = "{url}"
api_key = "sk-test"

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
name = "administer"
game = "prisoners"
mechanism = "benchmark"
benchmark = ["demo_choices", "demo_ratings"]
agents = ["a", "b"]
samples = 2
shuffle_options = false

[[experiments]]
name = "judge"
game = "prisoners"
mechanism = "score"
matchup = "cross"
benchmark = "demo_choices"
view = ["decision", "explanation"]
agents = ["a", "b"]

[[experiments]]
name = "play"
game = "prisoners"
mechanism = "similarity"
matchup = "cross"
similarity_source = ["exogenous:demo_choices", "endogenous:demo_choices:decision"]
agents = ["a", "b"]

[[experiments]]
name = "plain"
game = "prisoners"
mechanism = "repetition"
rounds = 2
matchup = "cross"
agents = ["a", "tft"]
samples = 2
"""


@pytest.mark.slow
def test_a_staged_llm_sweep_in_three_slices_merges_into_the_same_run(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted) as srv:
        sweep_file = write(tmp_path / "staged.toml", PIPELINE.format(url=srv.url))
        sweep = load_sweep(sweep_file)
        assert staged_experiments(sweep) == {0, 1, 2}
        whole = tmp_path / "whole.sqlite"
        ok("--batch", str(sweep_file), "--db", str(whole))
        asked_once = sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))
        slices = []
        for k in (1, 2, 3):
            db = tmp_path / f"slice-{k}.sqlite"
            ok("--batch", str(sweep_file), "--db", str(db), "--shard", f"{k}/3")
            slices.append(db)
        asked = sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))
        assert asked == 2 * asked_once  # the slices asked what one process asked, once each
        # the whole pipeline (administration, judgements, play) went to one slice
        staged = [db for db in slices if rows(db, "select count(*) from matches where mechanism"
                                                  " in ('benchmark', 'score')")[0][0]]
        assert len(staged) == 1
        assert rows(staged[0], "select count(*) from matches where mechanism = 'similarity'"
                               " and status = 'done'")[0][0] == 8
        merged = tmp_path / "merged.sqlite"
        ok("merge", *map(str, slices), "--db", str(merged))
        assert_same_run(whole, merged, exact=False)
        # the merged run resumes like one played here: a match stopped half way replays
        # from its stored decisions (found by their cache keys, derived again), asking nothing
        (match,) = rows(merged, "select id from matches where mechanism = 'repetition'"
                                " order by rowid limit 1")
        conn = sqlite3.connect(merged)
        summaries.unfold(conn, match[0])  # as the store takes a match out that plays again
        conn.execute("update matches set status = 'stopped' where id = ?", match)
        conn.execute("delete from rounds where match_id = ?", match)
        conn.commit()
        conn.close()
        before = rows(merged, "select count(*) from decisions")
        resumed = ok("--batch", str(sweep_file), "--db", str(merged), "--resume").stdout
        assert "resuming run" in resumed
        assert sum(1 for r in srv.requests if r.path.endswith("/chat/completions")) == asked
    assert rows(merged, "select count(*) from decisions") == before
    assert rows(merged, "select count(*) from decisions where reused = 1") == [(0,)]
    assert_same_run(whole, merged, exact=False)
    # prompts are stored once each, and every model decision has its prompt
    assert rows(merged, "select count(*) from texts") == \
        rows(merged, "select count(distinct prompt_hash) from decisions")
    missing = rows(merged, "select count(*) from decisions d where d.agent in ('a', 'b') and"
                           " not exists (select 1 from texts t where t.hash = d.prompt_hash)")
    assert missing == [(0,)]


@pytest.mark.slow
def test_slices_sharing_one_database_resume_their_own_runs_and_merge_as_one(
        tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="shared", rounds=3))
    db = tmp_path / "both.sqlite"
    ok("--batch", str(sweep_file), "--db", str(db), "--shard", "1/2")
    ok("--batch", str(sweep_file), "--db", str(db), "--shard", "2/2")
    runs = dict(rows(db, "select shard, id from runs"))
    for shard in ("1/2", "2/2"):
        out = ok("--batch", str(sweep_file), "--db", str(db), "--shard", shard, "--resume").stdout
        assert f"resuming run {runs[shard]}" in out, out
    merged = tmp_path / "m.sqlite"
    ok("merge", str(db), "--db", str(merged))
    whole = tmp_path / "w.sqlite"
    ok("--batch", str(sweep_file), "--db", str(whole))
    assert_same_run(whole, merged)


@pytest.mark.slow
def test_an_unfinished_match_merged_earlier_is_replaced_by_its_finished_copy(
        tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="replace", rounds=4))
    slices = []
    for k in (1, 2):
        db = tmp_path / f"r{k}.sqlite"
        ok("--batch", str(sweep_file), "--db", str(db), "--shard", f"{k}/2")
        slices.append(db)
    # slice 1 as a process stopped in the middle of a match would have left it
    early = tmp_path / "early.sqlite"
    early.write_bytes(slices[0].read_bytes())
    conn = sqlite3.connect(early)
    (match_id,) = conn.execute("select id from matches where mechanism = 'repetition'"
                               " order by rowid desc limit 1").fetchone()
    conn.execute("delete from decisions where match_id = ? and round > 1", [match_id])
    conn.execute("delete from rounds where match_id = ? and round > 1", [match_id])
    conn.execute("delete from match_totals where match_id = ?", [match_id])
    conn.execute("update matches set status = 'stopped', payoffs = null where id = ?", [match_id])
    conn.execute("update runs set status = 'stopped'")
    conn.commit()
    conn.close()
    merged = tmp_path / "m.sqlite"
    out = ok("merge", str(early), str(slices[1]), "--db", str(merged)).stdout
    assert "stopped" in out
    ok("merge", str(slices[0]), "--db", str(merged))
    whole = tmp_path / "w.sqlite"
    ok("--batch", str(sweep_file), "--db", str(whole))
    assert_same_run(whole, merged)


@pytest.mark.slow
def test_two_slices_merged_in_process_equal_one_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In one process (under a debugger, say), and the summary tables themselves."""
    sweep_file = write(tmp_path / "s.toml", STRATEGIES.format(name="quick", rounds=3))
    whole, merged = tmp_path / "w.sqlite", tmp_path / "m.sqlite"
    assert main(["--batch", str(sweep_file), "--db", str(whole)]) == 0
    slices = [str(tmp_path / f"q{k}.sqlite") for k in (1, 2)]
    for k, db in enumerate(slices, start=1):
        assert main(["--batch", str(sweep_file), "--db", db, "--shard", f"{k}/2"]) == 0
    assert main(["merge", *slices, "--db", str(merged)]) == 0
    assert main(["merge", *slices, "--db", str(merged)]) == 0
    capsys.readouterr()
    a, b = only_run(whole), only_run(merged)
    assert matches_of(merged, b) == matches_of(whole, a)
    assert decisions_of(merged, b) == decisions_of(whole, a)
    assert side_rows(merged, b) == side_rows(whole, a)
    # the summaries the report reads, folded as the store folds them, in the same order
    for table in ("coop_rounds", "action_counts", "conditional_counts"):
        cols = "experiment, condition_key, agent, n" + (", coop_sum, coop_sq" if table ==
                                                        "coop_rounds" else "")
        assert rows(merged, f"select {cols} from {table} order by 1, 2, 3, 4") == \
            rows(whole, f"select {cols} from {table} order by 1, 2, 3, 4")
