"""CoopEval's Table 2 (all four dilemmas) from our own sweep, cell by cell.

A strategy-only sweep in the shape of the shipped study (one experiment per mechanism,
``game`` listing the four dilemmas, two replicates) goes through the real runner and
store. Every "all" cell of the report must equal the hand computation: each game's cell
put on its 0-1 scale with the game's all-defect / all-cooperate payoffs written out
below, averaged over the four games, ± the standard error across games; DevRank
averaged unscaled.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.coopeval_tables import render_latex, render_rich
from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

GAMES = ["prisoners", "public_good", "travelers", "trust"]
# per-player payoff when everyone defects / everyone cooperates, from each game's table
SCALE = {"prisoners": (1.0, 2.0), "public_good": (1.0, 1.5), "travelers": (2.0, 5.0),
         "trust": (4.0, 10.0)}


def study() -> dict[str, Any]:
    agents = ["tft", "allc", "alld"]
    return {
        "name": "table-2",
        "seed": 5,
        "concurrency": 4,
        "replicates": 2,
        "agents": {"tft": {"strategy": "tit_for_tat"}, "allc": {"strategy": "always_cooperate"},
                   "alld": {"strategy": "always_defect"}},
        "experiments": [
            {"name": "no_mechanism", "game": GAMES, "mechanism": "none", "matchup": "cross",
             "agents": agents},
            {"name": "repetition", "game": GAMES, "mechanism": "repetition", "matchup": "cross",
             "agents": agents, "rounds": 3, "continuation": 0.8, "history": 3},
        ],
    }


def _hand_mean_se(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


async def test_table_2_from_our_own_runs_matches_a_hand_computation(tmp_path: Path) -> None:
    store = Store(tmp_path / "t2.db")
    summary = await run_sweep(build_sweep(study()), store)
    assert summary.status == "done", summary.errors
    cells = build_report(store, summary.run_id)["tables"]
    per_game = {(c["table"], c["mechanism"], c["metric"], c["agent"]): c
                for c in cells if c["table"] in GAMES}
    table2 = [c for c in cells if c["table"] == "all"]
    # one row per mechanism x metric, each over the four games (was one per game, n = 1)
    assert {(c["mechanism"], c["metric"]) for c in table2} == {
        (m, metric) for m in ("none", "repetition")
        for metric in ("mean", "fitness", "deviation_rank")}
    assert len(table2) == 2 * 3 * 4  # mechanisms x metrics x (LLM average + 3 agents)
    for c in table2:
        assert c["n"] == 4 and c["games"] == sorted(GAMES)
        key = (c["mechanism"], c["metric"], c["agent"])
        if c["metric"] == "deviation_rank":
            values = [per_game[(g, *key)]["value"] for g in GAMES]
        else:
            values = [(per_game[(g, *key)]["value"] - SCALE[g][0]) / (SCALE[g][1] - SCALE[g][0])
                      for g in GAMES]
        value, se = _hand_mean_se(values)
        assert c["value"] == pytest.approx(value, abs=1e-12), key
        assert c["se"] == pytest.approx(se, abs=1e-12), key
    # one value worked out from the payoff tables alone: always-defect's Mean in the
    # one-shot games is its payoff against the uniform population of the three agents
    # (two cooperators, one defector; in Public Goods its two co-players are drawn
    # from the three: 4/9 both cooperate, 4/9 one does, 1/9 none does)
    alld = {"prisoners": (3 + 3 + 1) / 3, "travelers": (4 + 4 + 2) / 3,
            "public_good": 4 / 9 * 2.0 + 4 / 9 * 1.5 + 1 / 9 * 1.0}
    for game, mean in alld.items():
        assert per_game[(game, "none", "mean", "alld")]["value"] == pytest.approx(mean)
    aggregate = render_rich(cells)[0]
    assert aggregate.title == "CoopEval table: all four dilemmas (normalised)"
    assert "averaged over the games; ± SE across games" in aggregate.caption
    store.close()


def _captions(cells: list[dict[str, Any]]) -> dict[str, str]:
    return {t.title: str(t.caption) for t in render_rich(cells)}


async def test_an_aggregate_of_one_game_says_so(tmp_path: Path) -> None:
    """The offline study plays only the Prisoner's Dilemma: its aggregate table is named
    after that game, and its ± is over replicates, not "across games" (it said "all four
    dilemmas", "± SE across games")."""
    data = study()
    for exp in data["experiments"]:
        exp["game"] = ["prisoners", "stag_hunt"]  # Stag Hunt is no dilemma: never pooled
    store = Store(tmp_path / "pd.db")
    summary = await run_sweep(build_sweep(data), store)
    assert summary.status == "done", summary.errors
    cells = build_report(store, summary.run_id)["tables"]
    assert {tuple(c["games"]) for c in cells if c["table"] == "all"} == {("prisoners",)}
    captions = _captions(cells)
    title = "CoopEval table: Prisoner's Dilemma only (normalised)"
    assert captions[title].startswith("one game per cell: value ± SE over replicates")
    assert not any("four" in t or "across games" in c for t, c in captions.items())
    assert captions["CoopEval table: prisoners"].startswith("value ± SE over replicates")
    assert "% table: all (Prisoner's Dilemma only; one game per cell" in render_latex(cells)
    store.close()
