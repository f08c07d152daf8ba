"""The offline CoopEval study file, end to end on the embedded model, with replicates.

A cut-down copy of ``data/studies/coopeval-offline.toml`` (same agents and protocol
defaults, two replicates; fewer games and rounds so it runs in about a minute on two
cores) goes through the real sweep runner and SQLite store. It checks what replicates
promise: every tournament is played once per replicate, designs are shared by all
matches of one replicate and asked afresh in the next.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coop_tui.report import build_report
from coop_tui.spec import build_sweep, load_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "coopeval-offline.toml"


def test_offline_study_file_is_valid_as_shipped() -> None:
    sweep = load_sweep(STUDY)
    assert {c.mechanism for c in sweep.cells} == {"none", "repetition", "reputation", "mediation", "contracting"}
    assert sweep.spec.agents["smollm2"].temperature == 1.0


def cut_down() -> dict[str, Any]:
    data = read_sweep_file(STUDY)
    data["replicates"] = 2  # the shipped file plays one, for time; replicates are the point here
    keep = {"no_mechanism", "mediation"}
    data["experiments"] = [e for e in data["experiments"] if e["name"] in keep]
    for e in data["experiments"]:
        e["game"] = "prisoners"
        e["agents"] = ["smollm2", "tft"]
    return data


@pytest.mark.slow
async def test_offline_study_runs_with_replicates_and_shares_designs_within_one(tmp_path: Path) -> None:
    data = cut_down()
    sweep = build_sweep(data, source=STUDY)
    assert sweep.total_matches == 2 * (4 + 4)
    store = Store(tmp_path / "study.db")
    summary = await run_sweep(sweep, store)
    assert summary.status == "done", summary.errors
    run_id = summary.run_id
    per_rep = store.db.execute(
        """select replicate, mechanism, count(*) from matches where run_id = ? and status = 'done'
           group by replicate, mechanism order by replicate, mechanism""", [run_id]).fetchall()
    assert per_rep == [(0, "mediation", 4), (0, "none", 4), (1, "mediation", 4), (1, "none", 4)]
    # which design decision each (replicate, agent, seat) used, over all its matches
    used: dict[tuple[int, str, int], set[str]] = {}
    for match_id, replicate in store.db.execute(
        "select id, replicate from matches where run_id = ? and mechanism = 'mediation'", [run_id]
    ).fetchall():
        agents = [s["agent"] for s in store.seats(match_id)]
        info = json.loads(store.db.execute(
            "select info from phases where match_id = ? and phase = 'propose'", [match_id]
        ).fetchone()[0])
        assert info["design_scope"] == "tournament"
        for prop in info["proposals"].values():
            used.setdefault((replicate, agents[prop["seat"]], prop["seat"]), set()).add(prop["design"])
    # shared within a replicate: one decision per agent x seat ...
    assert len(used) == 2 * 2 * 2 and all(len(keys) == 1 for keys in used.values())
    # ... and fresh in the other replicate
    for agent in ("smollm2", "tft"):
        for seat in (0, 1):
            assert used[(0, agent, seat)] != used[(1, agent, seat)]
    # the model's designs were asked once per seat and replicate, and stored once
    n = store.db.execute(
        """select count(*) from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'propose' and d.agent = 'smollm2'""", [run_id]).fetchone()[0]
    assert n == 4
    # replicates draw afresh: the no-mechanism matches of the two replicates differ in seed
    seeds = store.db.execute(
        """select replicate, group_concat(seed) from matches where run_id = ? and mechanism = 'none'
           group by replicate""", [run_id]).fetchall()
    assert seeds[0][1] != seeds[1][1]
    # population metrics per replicate, then mean ± SE over the replicates
    report = build_report(store, run_id)
    per_rep = [r for r in report["per_replicate"] if r["mechanism"] == "none"]
    assert sorted(r["replicate"] for r in per_rep) == [0, 1]
    for r in per_rep:
        assert set(r["mean"]) == {"smollm2", "tft"} and set(r["fitness"]) == {"smollm2", "tft"}
        assert sum(r["share"].values()) == pytest.approx(1.0)
    checked = 0
    for cell in report["tables"]:
        if cell["mechanism"] != "none" or cell["agent"] == "average" or cell["table"] != "prisoners":
            continue
        values = [r[cell["metric"]][cell["agent"]] for r in per_rep]
        assert cell["n"] == 2
        assert cell["value"] == pytest.approx(sum(values) / 2)
        assert cell["se"] == pytest.approx(abs(values[0] - values[1]) / 2)
        checked += 1
    assert checked == 2 * 3  # two agents x Mean, Fitness, DevRank
    # resuming the finished run asks nothing
    again = await run_sweep(build_sweep(data, source=STUDY), store, resume=True, run_id=run_id)
    assert again.matches_skipped == 16 and again.decisions == 0
