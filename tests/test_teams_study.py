"""The offline super-additive cooperation study: one SA tournament on the embedded model, end to end.

The "sa" experiment of ``data/studies/superadditive-offline.toml`` (2 groups x 2 players:
local/smollm2 and tit-for-tat against grim trigger and always-defect; n = 6, N = 12,
K = 3; two of its three meta questions) goes through the real sweep runner, llama.cpp and
SQLite; then ``coop-tui report --json`` must carry the seed's metrics. Slow on two shared
cores (about a minute): the embedded model answers some fifteen decisions of several
hundred prompt tokens each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.spec import build_sweep, load_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "superadditive-offline.toml"
PAPER = STUDY.with_name("superadditive.toml")


def test_study_files_are_valid_as_shipped() -> None:
    paper = load_sweep(PAPER)
    assert paper.spec.replicates == 5
    assert sorted({c.mechanism_params["structure"] for c in paper.cells}) == ["GC", "RI", "SA"]
    assert {c.seats[0] for c in paper.cells} == {"qwen3", "phi4", "cogito"}
    assert all(len(c.seats) == 6 for c in paper.cells)
    assert paper.spec.agents["qwen3"].model == "ollama/qwen3:14b"
    assert all(c.mechanism_params["exit_timing"] == "with_move" for c in paper.cells)
    # per tournament at most: RI/SA 6 players x 100 rounds (one answer each: the move with
    # the leave choice), 19 plannings of 3 calls each, 10 questions x 5 matches; GC 6 x 60
    # (N = 100 never binds: 3 matches of 20), 11 plannings, 10 x 3 -> 30 x 1242 + 15 x 738
    from coop_tui.sweep import estimate_decisions

    assert estimate_decisions(paper) == 30 * (600 + 342 + 300) + 15 * (360 + 198 + 180) == 48_330
    # the exit as its own request doubles the game's calls: 30 x 1842 + 15 x 1098
    separate = read_sweep_file(PAPER)
    for e in separate["experiments"]:
        e["exit_timing"] = "separate"
    assert estimate_decisions(build_sweep(separate, check_keys=False)) == 71_730
    offline = load_sweep(STUDY)
    sa = next(c for c in offline.cells if c.mechanism_params["structure"] == "SA")
    assert sa.seats == ("smollm2", "tft", "grim", "alld")
    p = sa.mechanism_params
    assert (p["teams"], p["team_size"], p["rounds"], p["budget"], p["plan_every"]) == (2, 2, 6, 12, 3)


@pytest.mark.slow
async def test_offline_sa_tournament_runs_on_the_embedded_model(tmp_path: Path) -> None:
    data = read_sweep_file(STUDY)
    data["experiments"] = [e for e in data["experiments"] if e["name"] == "sa"]
    # each question is one call per match the model plays (three matches here, some 4 s a
    # call): two of the study's three still give a per-question table and an average
    asked = ["payoff_range", "co_total"]
    data["experiments"][0]["meta_questions"] = asked
    db = tmp_path / "sa.db"
    store = Store(db)
    summary = await run_sweep(build_sweep(data, source=STUDY), store)
    assert summary.status == "done", summary.errors
    phases = {row[0]: row[1:] for row in store.db.execute(
        "select phase, count(*), sum(agent = 'smollm2') from decisions group by phase").fetchall()}
    assert set(phases) == {"plan", "critique", "play", "meta"}  # leave: in the move's answer
    # the embedded model itself played, chose to stay or leave and answered the battery
    assert phases["play"][1] > 0 and phases["meta"][1] > 0
    assert phases["meta"][1] % len(asked) == 0  # every question after each of its matches
    moves = [d for d in store.decisions(store.db.execute("select id from matches").fetchone()[0])
             if d.phase == "play" and d.agent == "smollm2"]
    assert moves and all(d.valid and d.leave in (True, False) for d in moves)
    assert all(json.loads(d.answer or d.response)["leave"] is d.leave for d in moves)
    stored = store.db.execute(
        "select count(*) from decisions where agent = 'smollm2' and (prompt_hash is null"
        " or response is null)").fetchone()[0]
    assert stored == 0
    info = json.loads(store.db.execute(
        "select info from phases where phase = 'tournament'").fetchone()[0])
    assert all(u <= 12 for u in info["used"])
    assert all(m["rounds"] <= 6 for m in info["matches"])
    store.close()
    proc = subprocess.run([sys.executable, "-m", "coop_tui.cli", "report", "--db", str(db), "--json"],
                          capture_output=True, text=True, check=True)
    (c,) = json.loads(proc.stdout)["teams"]["conditions"]
    assert c["structure"] == "SA"
    assert 0 <= c["mu_c"]["mean"] <= 1 and 0 <= c["mu_c_running"]["mean"] <= 1
    for key in ("all", "intra", "inter"):
        assert 0 <= c["one_shot"][key]["mean"] <= 1
    assert 0 <= c["intra"]["mean"] <= 1 and 0 <= c["inter"]["mean"] <= 1
    assert 0 <= c["meta_accuracy"]["all"]["mean"] <= 1
    assert set(c["meta_accuracy"]["by_question"]) == set(asked)
