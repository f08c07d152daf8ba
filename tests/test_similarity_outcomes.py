"""Expected payoffs, welfare recovered and the similarity signals paper's Table 2, on hand-computed cases.

The loopback 'model' cooperates with the probability it is told as similarity, so every
stated strategy is known in advance. In Prisoners (2,2 / 0,3 / 3,0 / 1,1) a seat that
cooperates with p against a co-player cooperating with q expects
2pq + 3(1-p)q + (1-p)(1-q) = 1 + 2q - p.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.similarity_play import benchmark_and_method
from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message


def cooperate_as_told(body: dict[str, Any]) -> str:
    """Puts the mean similarity figure of its prompt on A0 (cooperate)."""
    text = last_user_message(body)
    figures = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)% similar", text)]
    coop = round(sum(figures) / len(figures))
    return json.dumps({"A0": coop, "A1": 100 - coop})


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=cooperate_as_told) as s:
        yield s


ENDO = {"a": {"a": 90, "b": 20}, "b": {"a": 70, "b": 100}}
EXO = {"a": {"a": 0, "b": 0}, "b": {"a": 0, "b": 0}}


@pytest.fixture(scope="module")
def played(server: LoopbackServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    import asyncio

    agent = {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test", "style": "direct"}
    data = {
        "name": "outcomes", "seed": 11,
        "agents": {"a": {**agent, "temperature": 0.1}, "b": {**agent, "temperature": 0.2}},
        "experiments": [
            {"game": "prisoners", "mechanism": "similarity", "matchup": "cross", "agents": ["a", "b"],
             "similarity_scores": ENDO, "similarity_label": "endogenous:newcomb:both"},
            {"game": "prisoners", "mechanism": "similarity", "matchup": "cross", "agents": ["a", "b"],
             "similarity_scores": EXO, "similarity_label": "exogenous:newcomb"},
            {"game": "public_good", "mechanism": "similarity", "matchup": [["a", "b", "b"]],
             "similarity_scores": ENDO},
        ],
    }
    db = tmp_path_factory.mktemp("outcomes") / "outcomes.db"
    store = Store(db)
    summary = asyncio.run(run_sweep(build_sweep(data, check_keys=False), store))
    assert summary.matches_failed == 0
    report = build_report(store, summary.run_id)
    yield db, summary.run_id, store, report
    store.close()


def by_experiment(section: dict[str, Any], experiment: int) -> dict[str, Any]:
    (c,) = [c for c in section["conditions"] if c["experiment"] == experiment]
    return c


def test_expected_payoffs_from_the_stated_strategies(played: Any) -> None:
    _, _, store, report = played
    endo = by_experiment(report["expected"], 0)
    # (a,a): 0.9 vs 0.9 -> 1.9 each; (a,b): a 0.2 vs b 0.7 -> a 1 + 1.4 - 0.2 = 2.2,
    # b 1 + 0.4 - 0.7 = 0.7; (b,b): 1 vs 1 -> 2 each
    assert {tuple(m["seats"]): m["expected"] for m in endo["matchups"]} == {
        ("a", "a"): [1.9, 1.9], ("a", "b"): [2.2, 0.7], ("b", "a"): [0.7, 2.2], ("b", "b"): [2.0, 2.0]}
    assert {tuple(m["seats"]): m["told"] for m in endo["matchups"]}[("a", "b")] == [20.0, 70.0]
    assert endo["agents"]["a"]["expected"] == pytest.approx((1.9 * 2 + 2.2 * 2) / 4)
    assert endo["agents"]["b"]["expected"] == pytest.approx((0.7 * 2 + 2.0 * 2) / 4)
    assert endo["per_player"]["expected"] == pytest.approx(1.7)
    # realised: the sampled actions' payoffs, as the seats table holds them
    paid = [s["payoff"] for m in store.matches(played[1]) if m["experiment"] == 0
            for s in store.seats(m["id"])]
    assert endo["per_player"]["realised"] == pytest.approx(sum(paid) / len(paid), abs=1e-4)
    # three players, public goods (alpha 1.5): a hears 20 twice, each b hears 70 and 100
    # (cooperates 0.85); E_i = (1 - p_i) + 0.5 * sum(p) -> a 0.8 + 0.95, b 0.15 + 0.95
    pg = by_experiment(report["expected"], 2)
    (m,) = pg["matchups"]
    assert m["seats"] == ["a", "b", "b"] and m["expected"] == [1.75, 1.1, 1.1]


def test_welfare_recovered_places_payoffs_between_defection_and_cooperation(played: Any) -> None:
    report = played[3]
    endo, exo, pg = (by_experiment(report["welfare"], e) for e in (0, 1, 2))
    assert (endo["all_defect"], endo["all_cooperate"]) == (1.0, 2.0)
    assert endo["recovered_expected"] == pytest.approx(0.7)  # (1.7 - 1) / (2 - 1)
    assert exo["expected_per_player"] == 1.0 and exo["recovered_expected"] == 0.0
    assert exo["recovered_realised"] == 0.0  # told 0: both always defect
    # public goods: all defect 1 per player, all contribute 1.5; mean (1.75 + 2.2) / 3
    assert (pg["all_defect"], pg["all_cooperate"]) == (1.0, 1.5)
    assert pg["recovered_expected"] == pytest.approx(((1.75 + 1.1 + 1.1) / 3 - 1) / 0.5, abs=1e-4)


def test_table_2_groups_by_benchmark_and_method_and_curves_follow_the_figure_told(played: Any) -> None:
    table = played[3]["similarity_table"]
    t = table["tables"]["prisoners"]
    assert t["methods"] == ["exogenous", "endogenous (both)"] and t["benchmarks"] == ["newcomb"]
    row = t["rows"]["newcomb"]
    assert row["exogenous"]["expected"] == 1.0 and row["exogenous"]["recovered_expected"] == 0.0
    assert row["endogenous (both)"]["expected"] == pytest.approx(1.7)
    assert row["endogenous (both)"]["matches"] == 4
    # the run has two games: curve names carry the game
    curve = table["curves"]["newcomb"]
    assert [(p["told"], p["coop_rate"], p["n"]) for p in curve["a · endogenous (both) · prisoners"]] == [
        (20.0, 0.2, 2), (90.0, 0.9, 2)]
    assert [(p["told"], p["coop_rate"]) for p in curve["b · exogenous · prisoners"]] == [(0.0, 0.0)]
    # b*: full cooperation is a b-similarity equilibrium from 1/2 in Prisoners (2 >= 3 - 2b
    # ... 3(1-b) + b) and in 3-player public goods with alpha 1.5 (1.5 >= 1 + (1-b))
    assert table["b_star"] == {"newcomb": 0.5, "unlabelled": 0.5}
    # scores without a label: their own row, in the public goods game's table
    pg = table["tables"]["public_good"]
    assert pg["rows"]["unlabelled"]["given scores"]["expected"] == pytest.approx((1.75 + 2.2) / 3, abs=1e-4)


def test_method_names_from_source_or_label() -> None:
    assert benchmark_and_method({"similarity_source": "endogenous:trait:explanation",
                                 "similarity_label": "ignored"}) == ("trait", "endogenous (explanations)")
    assert benchmark_and_method({"similarity_label": "exogenous:hle"}) == ("hle", "exogenous")
    assert benchmark_and_method({"similarity": 40, "prompt": "benchmark", "benchmark": "ggb"}) == (
        "ggb", "abstract")
    assert benchmark_and_method({"similarity": 40, "prompt": "percentage_updated"}) == ("no domain", "abstract")
    assert benchmark_and_method({"similarity": None, "prompt": "base"}) is None


def test_text_report_prints_the_three_sections(played: Any) -> None:
    from rich.console import Console

    from coop_tui.report import render_text

    console = Console(width=160, record=True, color_system=None)
    console.print(render_text(played[3]))
    text = console.export_text()
    assert "Welfare recovered" in text and "70%" in text
    assert "endogenous (both)" in text and "1.700 (70%)" in text
    assert "Expected and realised payoffs" in text
    # the matchup table of experiment 0 (row / column expected payoffs)
    block = text.split("experiment 0, newcomb · endogenous (both): expected payoff row / column")[1]
    a_row = next(line for line in block.splitlines() if line.startswith("│ a "))
    assert "1.90 / 1.90" in a_row and "2.20 / 0.70" in a_row


async def test_analysis_screen_shows_table_2_and_a_curve_per_benchmark(played: Any, tmp_path: Path) -> None:
    from rich.console import Console
    from textual.widgets import Static
    from textual_plotext import PlotextPlot

    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen

    db, run_id, _, _ = played

    class ScreenApp(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(AnalysisScreen(self.store, run_id, export_dir=tmp_path / "out"))

    app = ScreenApp(db, replay_speed=0)
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        for _ in range(500):
            if getattr(screen, "loaded", 0) >= 1 and screen.query("#an-section-similarity_table"):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        panel = screen.query_one("#an-section-similarity_table")
        assert "Table 2" in str(panel.border_title)
        console = Console(width=200, record=True, color_system=None)
        console.print(panel.query_one(Static).content)
        shown = console.export_text()
        assert "newcomb" in shown and "exogenous" in shown and "1.700 (70%)" in shown
        plots = list(panel.query(PlotextPlot))
        # one plot per benchmark: newcomb, and the unlabelled scores of the public goods game
        assert [p.id for p in plots] == ["similarity-curve-0", "similarity-curve-1"]
        assert [p.size.height for p in plots] == [16, 16]
        assert screen.query_one("#an-section-welfare") is not None


def test_seatings_given_their_own_slice_of_one_source_are_one_condition() -> None:
    """A stage may hand each seating only its own pair of the matrix; the conditions that
    differ in nothing else are pooled (sums add, seatings are kept apart)."""
    from coop_tui.analysis.similarity_play import _Condition, _merge_sources, welfare_section
    from coop_tui.games import get_game

    game = get_game("prisoners")

    def cond(scores: dict[str, Any], seats: tuple[str, str], expected: float, n: int) -> Any:
        c = _Condition(2, "k", {"similarity_source": "exogenous:hle", "similarity_scores": scores,
                                "framing": "similar"}, game, 2)
        c.matches = n
        for k in range(2):
            c.expected[seats[k]].add(expected, n)
            c.expected_all.add(expected, n)
            c.realised_all.add(expected * n, n, expected * expected * n)
        c.pairs[seats] = {"n": n}
        return c

    pooled = _merge_sources([cond({"a": {"a": 50}}, ("a", "a"), 1.0, 3),
                             cond({"a": {"b": 0}, "b": {"a": 10}}, ("a", "b"), 1.5, 1)])
    (one,) = pooled
    assert one.matches == 4 and set(one.pairs) == {("a", "a"), ("a", "b")}
    assert "similarity_scores" not in one.condition
    assert one.expected_all.mean() == pytest.approx((1.0 * 6 + 1.5 * 2) / 8)
    (row,) = welfare_section(pooled)["conditions"]
    assert row["label"] == "hle · exogenous" and row["recovered_expected"] == pytest.approx(0.125)


async def test_the_base_control_is_no_point_of_the_similarity_curve(tmp_path: Path) -> None:
    """Figures 2 and 9 show "Base" (no similarity sentence) as its own row; the base prompt's
    nominal ``similarity = 0`` once put it on the curve as if X = 0 had been told."""
    data = {"name": "base", "seed": 2, "samples": 2, "agents": {"r": {"strategy": "random"}},
            "experiments": [
                {"game": "stag_hunt", "mechanism": "similarity", "matchup": "self",
                 "agents": ["r"], "similarity": [0, 100]},
                {"game": "stag_hunt", "mechanism": "similarity", "matchup": "self",
                 "agents": ["r"], "prompt": "base", "similarity": 0}]}
    store = Store(tmp_path / "b.db")
    summary = await run_sweep(build_sweep(data), store)
    report = build_report(store, summary.run_id)
    store.close()
    swept, base = report["experiments"]
    assert [p["similarity"] for pts in swept["curve"].values() for p in pts] == [0, 100]
    assert base["curve"] == {}
    (row,) = base["conditions"]  # the Base row is still reported, per agent
    assert row["condition"]["prompt"] == "base" and row["agents"]["r"]["n"] == 4
