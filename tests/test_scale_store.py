"""Storage at scale: summaries give the report's numbers, prompts are stored once,
strategies store none, old databases migrate, exports stream, batched matches resume.

Every sweep runs through the real engine, sweep runner and SQLite store. The report's
numbers are checked against straightforward GROUP BYs over every stored decision (the
queries the report ran before it read summaries), so a summary that drifts fails here.
"""

from __future__ import annotations

import asyncio
import csv
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from coop_tui import engine, summaries
from coop_tui.analysis.actions import action_frequencies, conditional_frequencies
from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, EventBus, MatchDone, MatchStarted
from coop_tui.export import TABLES, export_run, iter_chunks, table_query
from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import MIGRATIONS, PROMPT_SQL, Store, decision_row
from coop_tui.sweep import run_sweep

AGENTS = {
    "tft": {"strategy": "tit_for_tat"},
    "grim": {"strategy": "grim_trigger"},
    "gtft": {"strategy": "generous_tit_for_tat", "params": {"q": 0.4}},  # draws actions
    "rand": {"strategy": "random", "params": {"p": 0.3}},
}


def sweep_data(**over: Any) -> dict[str, Any]:
    data = {
        "name": "scale", "seed": 3, "agents": AGENTS,
        "experiments": [
            {"game": "prisoners", "mechanism": "repetition", "rounds": 6, "matchup": "cross",
             "samples": 2, "agents": list(AGENTS), "payoff": "mean"},
            {"game": "stag_hunt", "mechanism": "none", "matchup": "cross", "samples": 3,
             "agents": ["tft", "rand"]},
        ],
    }
    data.update(over)
    return data


async def play(db: Path, data: dict[str, Any] | None = None) -> tuple[Store, str]:
    store = Store(db)
    summary = await run_sweep(build_sweep(data or sweep_data(), check_keys=False), store)
    assert summary.status == "done", summary.errors
    return store, summary.run_id


# ----------------------------------------------------------------- reference queries
def reference(db: Any, run_id: str) -> dict[str, Any]:
    """The report's aggregates as plain GROUP BYs over every decision of the run."""
    counts = db.execute(
        """select count(*), coalesce(sum(d.valid = 0), 0), coalesce(sum(d.attempts - 1), 0),
                  coalesce(sum(d.transport_retries), 0), coalesce(sum(d.reused), 0)
           from decisions d join matches m on m.id = d.match_id where m.run_id = ?""",
        [run_id]).fetchone()
    coop = db.execute(
        """select m.experiment, m.condition_key, d.agent, count(*), sum(d.coop_prob),
                  sum(d.coop_prob * d.coop_prob), sum(d.cooperated), count(d.cooperated)
           from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'play' and d.coop_prob is not null
                 and m.status = 'done'
           group by m.experiment, m.condition_key, d.agent""", [run_id]).fetchall()
    per_round = db.execute(
        """select m.experiment, m.condition_key, d.agent, d.round, count(*), sum(d.coop_prob),
                  sum(d.cooperated), count(d.cooperated)
           from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'play' and d.coop_prob is not null
                 and m.status = 'done'
           group by m.experiment, m.condition_key, d.agent, d.round""", [run_id]).fetchall()
    freq = db.execute(
        """select m.experiment, m.condition_key, d.agent, cast(j.key as integer) as act,
                  count(*), sum(j.value),
                  sum(case when d.action = cast(j.key as integer) then 1 else 0 end)
           from decisions d join matches m on m.id = d.match_id, json_each(d.distribution) j
           where m.run_id = ? and m.status = 'done' and d.kind = 'mixed' and d.phase = 'play'
                 and d.distribution is not null
           group by m.experiment, m.condition_key, d.agent, act""", [run_id]).fetchall()
    cond = db.execute(
        """select m.experiment, m.condition_key, st.agent, prev.action, r.action, count(*)
           from rounds r join matches m on m.id = r.match_id
           join seats st on st.match_id = r.match_id and st.seat = r.seat
           join rounds co on co.match_id = r.match_id and co.round = r.round
                and co.seat != r.seat
           join rounds prev on prev.match_id = co.match_id and prev.round = r.round - 1
                and prev.seat = co.seat
           where m.run_id = ? and m.status = 'done'
           group by m.experiment, m.condition_key, st.agent, prev.action, r.action""",
        [run_id]).fetchall()
    return {"counts": counts, "coop": coop, "per_round": per_round, "freq": freq, "cond": cond}


def assert_report_matches(store: Store, run_id: str) -> None:
    ref = reference(store.db.conn, run_id)
    report = build_report(store, run_id)
    c = report["counts"]
    assert (c["decisions"], c["invalid"], c["retries"], c["transport_retries"], c["reused"]) \
        == tuple(ref["counts"])
    exps = {e["experiment"]: e for e in report["experiments"]}
    assert len(ref["coop"]) == sum(len(cd["agents"]) for e in exps.values() for cd in e["conditions"])
    for exp, ckey, agent, n, s, _sq, k, nk in ref["coop"]:
        cond = next(x for x in exps[exp]["conditions"] if x["condition_key"] == ckey)
        a = cond["agents"][agent]
        assert a["n"] == n
        assert a["coop_rate"] == pytest.approx(s / n, rel=1e-12)
        assert a["sampled_coop_rate"] == pytest.approx(k / nk, rel=1e-12)
    points = {
        (exp, key, p["round"]): p
        for exp, e in exps.items() for key, pts in (e.get("per_round") or {}).items() for p in pts
    }
    last = {}
    for r in ref["per_round"]:
        last[r[0]] = max(last.get(r[0], 0), r[3])
    repeated = [r for r in ref["per_round"] if last[r[0]] > 1]  # one-shot games get no curve
    assert len(points) == len(repeated)
    for exp, _ckey, agent, rnd, n, s, k, nk in repeated:
        match = [p for (e, key, r), p in points.items() if e == exp and r == rnd and key.startswith(agent)]
        assert len(match) == 1 and match[0]["n"] == n
        assert match[0]["coop_rate"] == pytest.approx(s / n, rel=1e-12)
        assert match[0]["sampled_coop_rate"] == pytest.approx(k / nk, rel=1e-12)
    freqs = {(f["experiment"], f["condition"], f["agent"], f["action"]): f
             for f in action_frequencies(store, run_id)}
    assert len(freqs) == len(ref["freq"]) > 0
    for exp, ckey, agent, act, n, total, sampled in ref["freq"]:
        f = freqs[(exp, ckey, agent, act)]
        assert f["decisions"] == n
        assert f["mean_prob"] == pytest.approx(total / n, rel=1e-12)
        assert f["sampled"] == pytest.approx(sampled / n, rel=1e-12)
    conds = {(f["experiment"], f["condition"], f["agent"], f["co_previous"], f["action"]): f["count"]
             for f in conditional_frequencies(store, run_id)}
    assert conds == {tuple(r[:5]): r[5] for r in ref["cond"]}


# ----------------------------------------------------------------- tests
async def test_report_numbers_equal_plain_queries_over_every_decision(tmp_path: Path) -> None:
    store, run_id = await play(tmp_path / "r.db")
    assert_report_matches(store, run_id)
    assert conditional_frequencies(store, run_id)  # the repeated game has some
    # the summaries hold one row per match, and nothing is pending
    done = store.db.execute("select count(*) from matches where status = 'done'").fetchone()[0]
    assert store.db.execute("select count(*) from match_totals").fetchone()[0] == done
    assert summaries.pending(store.db.conn, run_id) == []


async def test_unfolded_matches_are_aggregated_live_then_folded(tmp_path: Path) -> None:
    store, run_id = await play(tmp_path / "u.db")
    before = build_report(store, run_id)
    with store.db.conn:  # as if written by a version without summaries
        summaries.delete_run(store.db.conn, run_id)
    assert len(summaries.pending(store.db.conn, run_id)) > 0
    assert_report_matches(store, run_id)
    assert build_report(store, run_id)["experiments"] == before["experiments"]
    with store.db.conn:
        assert summaries.fold_pending(store.db.conn, run_id) > 0
    assert build_report(store, run_id)["experiments"] == before["experiments"]


async def test_strategy_matches_finish_in_the_order_they_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine lets the event loop run on a clock, so how concurrent strategy matches
    interleave depended on the machine's load; they finished, and were folded into the
    summaries' float sums, in that order, and the report's last digits then differed from
    run to run and from the live aggregation (in match order). Here the engine yields at
    every chance, the most interleaving any load could cause: the matches still finish
    in the order they started, and the folded report equals the live one exactly."""
    monkeypatch.setattr(engine.loop, "YIELD_EVERY_S", 0.0)
    bus = EventBus()
    started: list[str] = []
    finished: list[str] = []

    def note(e: Any) -> None:
        if isinstance(e, MatchStarted):
            started.append(e.match_id)
        elif isinstance(e, MatchDone):
            finished.append(e.match_id)

    bus.subscribe(note)
    store = Store(tmp_path / "o.db")
    data = sweep_data()
    data["experiments"][0]["rounds"] = [9, 2]  # 32 long matches, then 32 short ones
    # six at a time: long and short matches side by side where the two groups meet
    summary = await run_sweep(build_sweep(data, check_keys=False), store, bus=bus, concurrency=3)
    assert summary.status == "done" and len(started) == summary.matches_done > 8
    assert finished == started
    folded = build_report(store, summary.run_id)["experiments"]
    with store.db.conn:
        summaries.delete_run(store.db.conn, summary.run_id)
    assert build_report(store, summary.run_id)["experiments"] == folded
    store.close()


async def test_strategy_decisions_store_no_prompt_and_still_inspect(tmp_path: Path) -> None:
    from coop_tui.screens.inspector import decision_details

    store, run_id = await play(tmp_path / "s.db")
    row = store.db.execute(
        "select count(*), count(prompt), count(prompt_hash), count(cache_key), count(content_key)"
        " from decisions").fetchone()
    assert row[0] > 0 and row[1:] == (0, 0, 0, 0)
    assert store.db.execute("select count(*) from texts").fetchone()[0] == 0
    first = store.db.execute("select id from decisions order by id limit 1").fetchone()[0]
    d = store.get_decision(first)
    assert d is not None and d.prompt == [] and d.valid and d.response.startswith("{")
    assert store.decision_id_of(d) == first
    text = "".join(str(part) for part in decision_details(d).renderables)
    assert "no prompt" in text
    # a strategy decision, its round row and its indexes stay well under half a kilobyte
    store.db.conn.execute("pragma wal_checkpoint(truncate)")
    n = store.db.execute("select count(*) from decisions").fetchone()[0]
    used = store.db.execute(  # bytes in use: a few rows leave most of a page empty
        "select sum(pgsize - unused) from dbstat"
        " where name like '%decisions%' or name like '%rounds%'"
    ).fetchone()[0] if _has_dbstat(store) else None
    if used is not None:
        assert used / n <= 512


def _has_dbstat(store: Store) -> bool:
    try:
        store.db.execute("select 1 from dbstat limit 1")
        return True
    except sqlite3.OperationalError:
        return False


def _llm_decision(match_id: str, seat: int, content: str, key: str) -> Decision:
    return Decision(
        match_id=match_id, round=1, phase="play", seat=seat, kind="mixed", agent="m",
        prompt=[{"role": "user", "content": content}], response='{"A0": 60, "A1": 40}',
        reasoning="", parsed={"A0": 0.6, "A1": 0.4}, valid=True, attempts=1, error=None,
        cache_key=key, content_key="c" + key, labels=("A0", "A1"), label_to_action=(0, 1),
        distribution=(0.6, 0.4), action=0, coop_prob=0.6, cooperated=True, cost_usd=0.001,
        input_tokens=10, output_tokens=5, created_at=1.0,
    )


def test_llm_prompts_are_stored_once_and_read_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    store.create_run("r1", "p", kind="sweep", seed=1, sweep_hash="h", spec={})
    bus = EventBus()
    bus.subscribe(store, critical=True)
    bus.emit(MatchStarted("r1", "m1", 0, "prisoners", "none", ("m", "m"),
                          info={"agent_kinds": ["llm", "llm"]}))
    long = "You are player 1. " * 200
    bus.emit(DecisionDone(_llm_decision("m1", 0, long, "k0")))
    # durable at once, before the match ends: an LLM answer is never held back
    other = sqlite3.connect(tmp_path / "p.db")
    assert other.execute("select count(*) from decisions").fetchone()[0] == 1
    bus.emit(DecisionDone(_llm_decision("m1", 1, long, "k1")))
    bus.emit(MatchDone("m1", (1.0, 1.0)))
    assert store.db.execute("select count(*) from texts").fetchone()[0] == 1
    assert store.db.execute("select count(prompt), count(prompt_hash) from decisions").fetchone() == (0, 2)
    for key in ("k0", "k1"):
        d = store.find_decision(key)
        assert d is not None and d.prompt[0]["content"] == long
    prompts = store.db.execute(f"select {PROMPT_SQL} from decisions d").fetchall()
    assert [json.loads(p)[0]["content"] for (p,) in prompts] == [long, long]
    assert store.db.execute("select length(text) from texts").fetchone()[0] > len(long)
    other.close()


def test_an_old_schema_database_migrates_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    db["_migrations"].create({"name": str, "applied_at": float}, pk="name")
    for name, fn in MIGRATIONS[:3]:  # the schema before content-addressed prompts
        fn(db)
        db["_migrations"].insert({"name": name, "applied_at": 0.0})
    assert "prompt_hash" not in db["decisions"].columns_dict
    db["runs"].insert({"id": "old", "name": "old", "kind": "sweep", "status": "done", "seed": 1,
                       "sweep_hash": "h", "spec": "{}", "created_at": 1.0})
    db["matches"].insert({"id": "m1", "run_id": "old", "match_key": "k", "experiment": 0,
                          "game": "prisoners", "mechanism": "none", "condition": "{}",
                          "condition_key": "-", "sample": 0, "seed": 1, "status": "done",
                          "payoffs": "[3, 3]"})
    for seat in (0, 1):
        db["seats"].insert({"match_id": "m1", "seat": seat, "agent": "m", "agent_kind": "llm",
                            "agent_spec": "{}", "payoff": 3.0})
        row = decision_row(_llm_decision("m1", seat, f"old prompt {seat}", f"k{seat}"))
        row.pop("queue_ms")  # columns added after this schema (m020, m004)
        row.pop("options")
        db["decisions"].insert(row)
        db["rounds"].insert({"match_id": "m1", "round": 1, "seat": seat, "action": 0, "payoff": 3.0,
                             "cooperated": 1, "info": "{}"})
    db.conn.close()

    store = Store(path)
    assert {"m010_content_addressed_prompts", "m011_match_summaries"} <= set(store.applied)
    d = store.find_decision("k1")
    assert d is not None and d.prompt == [{"role": "user", "content": "old prompt 1"}]
    assert store.db.execute("select count(*) from match_totals").fetchone()[0] == 1
    assert_report_matches(store, "old")
    report = build_report(store, "old")
    assert report["counts"]["decisions"] == 2
    assert report["experiments"][0]["conditions"][0]["agents"]["m"]["coop_rate"] == pytest.approx(0.6)


async def test_export_in_chunks_yields_the_rows_of_a_full_read(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    store, run_id = await play(tmp_path / "e.db")
    conn = store.db.conn
    for name in TABLES:
        columns, sql = table_query(conn, name)
        whole = conn.execute(sql, [run_id]).fetchall()
        chunked = [row for chunk in iter_chunks(conn, name, run_id, chunk=7) for row in chunk]
        assert chunked == whole and (whole or name == "phases"), name
    store.close()
    csv_files = export_run(tmp_path / "e.db", run_id, tmp_path / "csv", "csv")
    pq_files = export_run(tmp_path / "e.db", run_id, tmp_path / "pq", "parquet")
    store = Store(tmp_path / "e.db")
    n = store.db.execute("select count(*) from decisions").fetchone()[0]
    with (tmp_path / "csv" / "decisions.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == n and rows[0]["response"].startswith("{")
    table = pq.read_table(tmp_path / "pq" / "decisions.parquet")
    assert table.num_rows == n and table.schema.field("round").type.bit_width == 64
    assert [p.name for p in csv_files] == [p.name.replace(".parquet", ".csv") for p in pq_files]


def outcome_rows(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    rows = conn.execute(
        """select m.match_key, d.round, d.phase, d.seat, d.agent, d.response, d.parsed,
                  d.distribution, d.action, d.coop_prob, d.cooperated
           from decisions d join matches m on m.id = d.match_id
           order by m.match_key, d.round, d.phase, d.seat""").fetchall()
    conn.close()
    return rows


@pytest.mark.slow
def test_kill_9_during_batched_strategy_matches_then_resume_loses_nothing(tmp_path: Path) -> None:
    names = ["tit_for_tat", "grim_trigger", "alternator", "always_defect", "random",
             "win_stay_lose_shift"]
    sweep = tmp_path / "k.toml"
    sweep.write_text(
        'name = "kill"\nseed = 9\nconcurrency = 2\n'
        + "".join(f'[agents.{n}]\nstrategy = "{n}"\n' for n in names)
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "repetition"\nrounds = 120\n'
        + f'matchup = "cross"\nagents = {json.dumps(names)}\n'
    )
    expected = len(names) ** 2 * 120 * 2

    def cli(*args: str, wait: bool = True) -> Any:
        cmd = [sys.executable, "-m", "coop_tui.cli", *args]
        if wait:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    clean = tmp_path / "clean.db"
    assert cli("--batch", str(sweep), "--db", str(clean)).returncode == 0
    killed = tmp_path / "killed.db"
    proc = cli("--batch", str(sweep), "--db", str(killed), wait=False)
    deadline = time.monotonic() + 300
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(killed) as conn:
                done = conn.execute("select count(*) from matches where status = 'done'").fetchone()[0]
        except sqlite3.OperationalError:
            done = 0
        if done >= 2:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(killed) as conn:
        partial = conn.execute("select count(*) from decisions").fetchone()[0]
        # a batched match is all or nothing: only finished matches left decisions behind
        done = conn.execute("select count(*) from matches where status = 'done'").fetchone()[0]
    assert 0 < partial < expected and partial == done * 240
    resumed = cli("--batch", str(sweep), "--db", str(killed), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert outcome_rows(killed) == outcome_rows(clean) and len(outcome_rows(clean)) == expected
    for db in (clean, killed):
        store = Store(db)
        assert_report_matches(store, store.latest_run()["id"])
        store.close()


def test_resume_event_replay_does_not_duplicate_a_failed_strategy_match(tmp_path: Path) -> None:
    """A match played twice (failed, then resumed) keeps one copy of its decisions and
    leaves the summaries exactly as one play would."""
    async def twice() -> tuple[Store, str]:
        store, run_id = await play(tmp_path / "t.db")
        mid = store.db.execute("select id from matches where run_id = ? limit 1", [run_id]).fetchone()[0]
        n = store.db.execute("select count(*) from decisions where match_id = ?", [mid]).fetchone()[0]
        with store.db.conn:
            store.db.conn.execute("update matches set status = 'failed' where id = ?", [mid])
        summary = await run_sweep(build_sweep(sweep_data(), check_keys=False), store, resume=True)
        assert summary.status == "done"
        again = store.db.execute("select count(*) from decisions where match_id = ?", [mid]).fetchone()[0]
        assert again == n
        return store, run_id

    store, run_id = asyncio.run(twice())
    assert_report_matches(store, run_id)
