"""Store reads that must stay fast at a million decisions and exact: the Runs screen's
per-run counts (from match_totals, live only for matches not folded), deleting a run
(its prompt texts go unless another run shares them), and opening a database for
``report`` without sqlite-utils or scipy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, EventBus, MatchDone, MatchStarted
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

SWEEP = {
    "name": "reads", "seed": 5, "reuse": False,
    "agents": {"tft": {"strategy": "tit_for_tat"}, "rand": {"strategy": "random", "params": {"p": 0.5}}},
    "experiments": [{"game": "prisoners", "mechanism": "repetition", "rounds": 5,
                     "matchup": "cross", "agents": ["tft", "rand"], "payoff": "mean"}],
}


def plain_counts(store: Store) -> dict[str, tuple[int, float]]:
    rows = store.db.execute(
        """select r.id, count(d.id), coalesce(sum(d.cost_usd), 0.0) from runs r
           left join matches m on m.run_id = r.id left join decisions d on d.match_id = m.id
           group by r.id""").fetchall()
    return {run: (n, cost) for run, n, cost in rows}


def listed(store: Store) -> dict[str, tuple[int, float]]:
    return {r["id"]: (r["decisions"], r["cost_usd"]) for r in store.run_summaries()}


def llm_decision(match_id: str, seat: int, prompt: str, key: str) -> Decision:
    return Decision(
        match_id=match_id, round=1, phase="play", seat=seat, kind="mixed", agent="m",
        prompt=[{"role": "user", "content": prompt}], response='{"A0": 50, "A1": 50}',
        reasoning="", parsed={"A0": 0.5, "A1": 0.5}, valid=True, attempts=1, error=None,
        cache_key=key, content_key="c" + key, labels=("A0", "A1"), label_to_action=(0, 1),
        distribution=(0.5, 0.5), action=1, coop_prob=0.5, cooperated=False, cost_usd=0.25,
        input_tokens=10, output_tokens=5, created_at=1.0,
    )


def llm_run(store: Store, bus: EventBus, run_id: str, prompts: list[str], *, done: bool = True) -> None:
    store.create_run(run_id, run_id, kind="sweep", seed=1, sweep_hash=run_id, spec={})
    match_id = f"{run_id}-m"
    bus.emit(MatchStarted(run_id, match_id, 0, "prisoners", "none", ("m", "m"),
                          info={"agent_kinds": ["llm", "llm"]}))
    for seat, prompt in enumerate(prompts):
        bus.emit(DecisionDone(llm_decision(match_id, seat, prompt, f"{run_id}-{seat}")))
    if done:
        bus.emit(MatchDone(match_id, (1.0, 1.0)))


async def test_run_list_counts_equal_a_count_of_every_decision(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    summary = await run_sweep(build_sweep(SWEEP, check_keys=False), store)
    assert summary.status == "done"
    bus = EventBus()
    bus.subscribe(store, critical=True)
    llm_run(store, bus, "paid", ["p one", "p two"])
    llm_run(store, bus, "unfinished", ["p three", "p four"], done=False)  # not folded
    counts = plain_counts(store)
    assert counts[summary.run_id][0] == summary.decisions > 0
    assert counts["paid"] == (2, 0.5) and counts["unfinished"] == (2, 0.5)
    assert listed(store) == counts
    # a match whose fold is missing (an older database, a crash) is counted live
    first = store.db.execute("select match_id from match_totals where run_id = ? limit 1",
                             [summary.run_id]).fetchone()[0]
    with store.db.conn:
        store.db.execute("delete from match_totals where match_id = ?", [first])
    assert listed(store) == counts
    store.close()


def test_deleting_a_run_deletes_the_prompt_texts_only_it_used(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    bus = EventBus()
    bus.subscribe(store, critical=True)
    llm_run(store, bus, "a", ["shared prompt", "only in a"])
    llm_run(store, bus, "b", ["shared prompt", "only in b"])

    def texts() -> set[str]:
        return {r[0] for r in store.db.execute("select text from texts")}

    assert len(texts()) == 3
    store.delete_run("a")
    left = texts()
    assert len(left) == 2 and not any("only in a" in t for t in left)
    assert any("shared prompt" in t for t in left) and any("only in b" in t for t in left)
    d = store.find_decision("b-0")  # the other run still reads its prompt
    assert d is not None and d.prompt[0]["content"] == "shared prompt"
    store.delete_run("b")
    assert texts() == set()
    plan = " ".join(str(r) for r in store.db.execute(
        "explain query plan select 1 from decisions d where d.prompt_hash = 'x'"))
    assert "idx_decisions_prompt_hash" in plan  # no scan of every decision per text
    store.close()


async def test_report_opens_the_store_without_sqlite_utils_or_scipy(tmp_path: Path) -> None:
    """Once the batch command has rated the run's tournaments, ``report`` imports neither
    sqlite-utils (and with it pandas) nor scipy, and prints the same ratings."""
    from coop_tui.analysis.coopeval_tables import rate_run
    from coop_tui.report import build_report

    db = tmp_path / "r.db"
    store = Store(db)
    summary = await run_sweep(build_sweep(SWEEP, check_keys=False), store)
    assert rate_run(store, summary.run_id) == 1
    n_rated = store.db.execute("select count(*) from rating_results").fetchone()[0]
    assert n_rated >= 1
    fresh = build_report(store, summary.run_id)["experiments"][0]["population"]
    store.close()
    code = (
        "import sys, json\n"
        "from coop_tui.cli import main\n"
        "main(['report', '--json'])\n"
        "bad = [m for m in ('sqlite_utils', 'pandas', 'scipy') if m in sys.modules]\n"
        "print('LOADED', json.dumps(bad), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "COOP_TUI_DB": str(db)})
    assert 'LOADED []' in out.stderr, out.stderr
    import json

    stored = json.loads(out.stdout)["experiments"][0]["population"]
    assert stored == json.loads(json.dumps(fresh))
    assert Store(db).db.execute("select count(*) from rating_results").fetchone()[0] == n_rated
