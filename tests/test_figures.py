"""`coop-tui figures`: every paper figure is drawn from a small fixed run of the shape
its study produces, and what it plots equals the report it was drawn from (read back
from the artists: bar heights, line data, image arrays; never pixels).

Runs are strategy-only sweeps of the offline studies' shapes (no model), and the
CoopEval study fixture in tests/data imported as CoopEval's own output.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the figures extra (matplotlib) is not installed")

from coop_tui.cli import main  # noqa: E402
from coop_tui.figures import Drawn, figures_for  # noqa: E402
from coop_tui.importers.coopeval import import_coopeval  # noqa: E402
from coop_tui.report import build_report, strict_json  # noqa: E402
from coop_tui.spec import build_sweep, read_sweep_file  # noqa: E402
from coop_tui.store import Store  # noqa: E402
from coop_tui.sweep import run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "data" / "studies"
COOPEVAL_STUDY = ROOT / "tests" / "data" / "coopeval_main_study"


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    yield
    plt = sys.modules.get("matplotlib.pyplot")  # None or absent: no figure was drawn
    if plt is not None:
        plt.close("all")


def _report(store: Store, run_id: str) -> dict[str, Any]:
    return json.loads(strict_json(build_report(store, run_id)))


def _strategy_run(path: Path, data: dict[str, Any], db: Path, source: Path) -> tuple[Store, str]:
    store = Store(db)
    summary = asyncio.run(run_sweep(build_sweep(data, source=source), store))
    assert summary.matches_done, summary.errors
    return store, summary.run_id


def _by_name(drawn: list[Drawn]) -> dict[str, Drawn]:
    return {d.name: d for d in drawn}


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _image(drawn: Drawn) -> list[list[float | None]]:
    array = drawn.figure.axes[0].images[0].get_array()
    return [[None if array.mask is not False and array.mask[i, j] else float(array.data[i, j])
             for j in range(array.shape[1])] for i in range(array.shape[0])]


def _lines(drawn: Drawn) -> dict[str, Any]:
    return {line.get_gid(): line for ax in drawn.figure.axes for line in ax.get_lines()
            if line.get_gid()}


# ------------------------------------------------------------------ CoopEval (imported)
@pytest.fixture(scope="module")
def coopeval(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = Store(tmp_path_factory.mktemp("coopeval") / "coop.db")
    summary = import_coopeval(COOPEVAL_STUDY, store)
    return _report(store, summary["run_id"])


def test_coopeval_mean_and_fitness_bars_are_the_tables_values(coopeval: dict[str, Any]) -> None:
    drawn = _by_name(figures_for(coopeval))
    tables = {r["table"] for r in coopeval["tables"]}
    assert {f"coopeval_mean_fitness_{t.replace('_', '-')}" for t in tables} <= set(drawn)
    for table in tables:
        fig = drawn[f"coopeval_mean_fitness_{table.replace('_', '-')}"].figure
        plotted = sorted((p.get_gid(), round(p.get_height(), 9)) for ax in fig.axes
                         for p in ax.patches if p.get_gid())
        expected = sorted((f"{r['metric']}|{r['agent']}", round(r["value"], 9))
                          for r in coopeval["tables"] if r["table"] == table
                          and r["metric"] in ("mean", "fitness") and r["agent"] != "average")
        assert plotted == expected
        # error bars: one per bar, the report's SE (three replicates here: not all zero)
        segments = [seg for ax in fig.axes for coll in ax.collections
                    for seg in coll.get_segments()]
        assert len(segments) == len(expected)
        spans = sorted(round((s[1][1] - s[0][1]) / 2, 9) for s in segments)
        ses = sorted(round(r["se"] or 0.0, 9) for r in coopeval["tables"] if r["table"] == table
                     and r["metric"] in ("mean", "fitness") and r["agent"] != "average")
        assert spans == pytest.approx(ses)
        assert any(ses)


def test_coopeval_aggregate_bars_name_the_games_they_pool(coopeval: dict[str, Any]) -> None:
    """The study fixture holds Trust, Public Goods and the Prisoner's Dilemma, not the four
    dilemmas: the aggregate's panels say which (they said "all four dilemmas")."""
    fig = _by_name(figures_for(coopeval))["coopeval_mean_fitness_all"].figure
    assert fig.get_suptitle() == (
        "CoopEval — Prisoner's Dilemma, Public Goods and Trust only (normalised)")


def test_coopeval_matchup_heat_maps_are_the_matchup_matrices(coopeval: dict[str, Any]) -> None:
    drawn = figures_for(coopeval)
    maps = [d for d in drawn if d.name.startswith("coopeval_matchups_")]
    with_matrix = [e for e in coopeval["experiments"] if e.get("matchup_matrix")]
    assert len(maps) == len(with_matrix) >= 2
    for e, d in zip(with_matrix, maps, strict=True):
        matrix = e["matchup_matrix"]
        cols = list(dict.fromkeys(c for row in matrix.values() for c in row))
        expected = [[matrix[r].get(c) for c in cols] for r in matrix]
        got = _image(d)
        assert all(_close(g, x) for gr, xr in zip(got, expected, strict=True)
                   for g, x in zip(gr, xr, strict=True))


def test_coopeval_replicator_trajectories_are_the_evolution(coopeval: dict[str, Any]) -> None:
    drawn = [d for d in figures_for(coopeval) if d.name.startswith("coopeval_replicator_")]
    assert drawn
    checked = 0
    for d in drawn:
        lines = _lines(d)
        for ev in coopeval["evolution"]:
            for agent, shares in ev["shares"].items():
                line = lines.get(f"{ev['table']}|{ev['mechanism']}|{ev['order']}|"
                                 f"{ev['replicate'] or 0}|{agent}")
                if line is None:
                    continue
                assert list(line.get_xdata()) == ev["steps"]
                assert list(line.get_ydata()) == pytest.approx(shares)
                checked += 1
    assert checked >= 3 * 6  # three replicates of six agents at least


# ------------------------------------------------------------------ the similarity signals paper
@pytest.fixture(scope="module")
def similarity_abstract(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = read_sweep_file(ROOT / "data" / "sweeps" / "strategies-prisoners.toml")
    data["experiments"] = data["experiments"][:1]
    store, run_id = _strategy_run(ROOT, data, tmp_path_factory.mktemp("sim") / "coop.db",
                                  ROOT / "data" / "sweeps" / "strategies-prisoners.toml")
    return _report(store, run_id)


def test_cooperation_over_similarity_is_the_curve_with_b_star(similarity_abstract: dict[str, Any]) -> None:
    e = similarity_abstract["experiments"][0]
    d = _by_name(figures_for(similarity_abstract))[f"similarity_fig2_cooperation_over_similarity_exp{e['experiment']}"]
    lines = _lines(d)
    assert set(e["curve"]) <= set(lines)
    for agent, points in e["curve"].items():
        assert list(lines[agent].get_xdata()) == [p["similarity"] for p in points]
        assert list(lines[agent].get_ydata()) == [p["coop_rate"] for p in points]
    assert e["b_star"] is not None
    assert list(lines["b_star"].get_xdata()) == [100 * e["b_star"]] * 2


@pytest.fixture(scope="module")
def similarity_grounded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """the similarity signals paper's offline pipeline (benchmarks, judges, play) with strategies in the
    model seats; they read the prompts (as the strategies_read_prompts fixture does)."""
    from coop_tui.agents.strategy_agent import StrategyAgent

    source = STUDIES / "similarity-offline.toml"
    data = read_sweep_file(source)
    for i, (name, agent) in enumerate(list(data["agents"].items())):
        if "model" in agent:
            data["agents"][name] = {"strategy": "random", "params": {"p": 0.3 + 0.2 * (i % 3)}}
    for exp in data["experiments"]:  # cross-play, as the full study (the offline file plays
        if exp.get("name") == "play":  # one seat order to stay small): CoopEval's tables
            exp["matchup"] = "cross"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StrategyAgent, "reads_prompt", True)
        store, run_id = _strategy_run(source, data, tmp_path_factory.mktemp("grounded") / "c.db", source)
    return _report(store, run_id)


def test_grounded_curves_and_similarity_matrices(similarity_grounded: dict[str, Any]) -> None:
    report = similarity_grounded
    drawn = _by_name(figures_for(report))
    lines = _lines(drawn["similarity_fig3_cooperation_by_benchmark"])
    curves = report["similarity_table"]["curves"]
    for bench, series in curves.items():
        for name, points in series.items():
            points = sorted(points, key=lambda p: p["told"])
            assert list(lines[f"{bench}|{name}"].get_xdata()) == [p["told"] for p in points]
            assert list(lines[f"{bench}|{name}"].get_ydata()) == [p["coop_rate"] for p in points]
    matrices = 0
    for bench, block in report["exogenous"].items():
        d = drawn.get(f"similarity_fig4_exogenous_{bench.replace('_', '-')}")
        values = [[block["matrix"][r][c] for c in block["agents"]] for r in block["agents"]]
        if all(v is None for row in values for v in row):
            assert d is None  # nothing to show: no figure
            continue
        assert _image(d) == values
        matrices += 1
    for bench, views in report["endogenous"].items():
        for view, block in views.items():
            name = next(n for n in drawn if n.endswith(f"_endogenous_{bench.replace('_', '-')}_{view}"))
            assert _image(drawn[name]) == [[block["matrix"][r][c] for c in block["agents"]]
                                           for r in block["agents"]]
            matrices += 1
    assert matrices >= 4


# ------------------------------------------------------------------ the strategic personalities paper
@pytest.fixture(scope="module")
def personalities(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    source = STUDIES / "strategic-personalities-offline.toml"
    data = read_sweep_file(source)
    data["experiments"] = [e for e in data["experiments"] if e.get("mechanism") != "none"]
    for exp in data["experiments"]:
        exp["rounds"] = 4
    for name, agent in list(data["agents"].items()):
        if "model" in agent:  # (anti-)mirror plays every game, and answers its co-player
            data["agents"][name] = {"strategy": "anti_mirror" if "hot" in name else "mirror"}
    store, run_id = _strategy_run(source, data, tmp_path_factory.mktemp("sp") / "c.db", source)
    return _report(store, run_id)


@pytest.mark.parametrize("key, suffix", [("strategic_personality", ""),
                                         ("strategic_personality_pooled", "_pooled")])
def test_personality_figures_are_the_sections_values(
    personalities: dict[str, Any], key: str, suffix: str
) -> None:
    value = personalities[key]
    drawn = {name.removesuffix(suffix): d for name, d in _by_name(figures_for(personalities)).items()
             if name.endswith(suffix) or not suffix}
    coop = drawn["personalities_cooperation_by_model"].figure.axes[0]
    widths = sorted(round(p.get_width(), 12) for p in coop.patches)
    assert widths == sorted(round(a["cooperation"]["rate"], 12) for a in value["agents"].values())
    arche = drawn["personalities_archetype_map"].figure.axes[0]
    points = {c.get_gid(): tuple(c.get_offsets()[0]) for c in arche.collections if c.get_gid()}
    for agent, a in value["agents"].items():
        rec = a["reciprocity"]
        assert points[agent] == pytest.approx((rec["p_c_after_c"], rec["p_c_after_d"]))
    lines = _lines(drawn["personalities_endgame_curves"])
    for agent, a in value["agents"].items():
        assert list(lines[agent].get_xdata()) == a["curve"]["rounds"]
        assert list(lines[agent].get_ydata()) == a["curve"]["rate"]
    if len(value["agents"]) > 1:
        assert _image(drawn["personalities_cohens_h"]) == value["cohens_h"]["matrix"]
    else:  # the paper's sample holds seat 0 only: one agent, no effect size to draw
        assert "personalities_cohens_h" not in drawn
    if suffix:
        return
    trials = drawn["personalities_cooperation_by_model_trials"].figure.axes[0].patches
    assert sorted(round(p.get_width(), 9) for p in trials) == sorted(
        round(v["mean"], 9) for v in personalities["cooperation_by_model"].values())


SP_SAMPLE = Path(__file__).parent / "data" / "strategic_personalities.sample.csv.gz"


def test_imported_trial_table_draws_cooperation_by_model(tmp_path: Path) -> None:
    from coop_tui.importers.strategic_personalities import import_file

    store = Store(tmp_path / "c.db")
    run_id, _new, _summary = import_file(store, SP_SAMPLE)
    report = _report(store, run_id)
    drawn = _by_name(figures_for(report))
    assert set(drawn) == {"personalities_cooperation_by_model_trials"}  # no per-round data
    bars = drawn["personalities_cooperation_by_model_trials"].figure.axes[0].patches
    assert sorted(round(p.get_width(), 9) for p in bars) == sorted(
        round(v["mean"], 9) for v in report["cooperation_by_model"].values())


# ------------------------------------------------------------------ the super-additive cooperation paper
@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    source = STUDIES / "superadditive-offline.toml"
    data = read_sweep_file(source)
    data["agents"]["smollm2"] = {"strategy": "random", "params": {"p": 0.5}}
    for exp in data["experiments"]:
        exp["samples"] = 2
        exp.pop("replicates", None)
    store, run_id = _strategy_run(source, data, tmp_path_factory.mktemp("sa") / "c.db", source)
    return _report(store, run_id)


def test_team_figures_are_the_sections_values(teams: dict[str, Any]) -> None:
    conds = teams["teams"]["conditions"]
    assert {c["structure"] for c in conds} == {"SA", "RI", "GC"}
    drawn = _by_name(figures_for(teams))
    for name, key in (("superadditive_fig2_cooperation_per_round", "per_round"),
                      ("superadditive_fig3_one_shot_over_matches", "osc_curve")):
        lines = _lines(drawn[name])
        for i, c in enumerate(conds):
            assert list(lines[str(i)].get_xdata()) == [p["x"] for p in c[key]]
            assert list(lines[str(i)].get_ydata()) == pytest.approx([100 * p["mean"] for p in c[key]])
    bars = [p for ax in drawn["superadditive_fig3_one_shot_by_structure"].figure.axes for p in ax.patches]
    plotted = sorted((p.get_gid(), round(p.get_height(), 9)) for p in bars)
    expected = sorted((k, round(100 * c["one_shot"][k]["mean"], 9)) for c in conds
                      for k in ("all", "intra", "inter")
                      if (c["one_shot"].get(k) or {}).get("mean") is not None)
    assert plotted == expected
    bars = drawn["superadditive_fig4_intra_inter_cooperation"].figure.axes[0].patches
    assert sorted((p.get_gid(), round(p.get_height(), 9)) for p in bars) == sorted(
        (k, round(100 * c[k]["mean"], 9)) for c in conds for k in ("intra", "inter")
        if c["structure"] == "SA" and (c.get(k) or {}).get("mean") is not None)


@pytest.fixture(scope="module")
def teams_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The full study's shape (self-play of three models x RI, GC, SA), each model a
    random player of its own cooperation rate, in small 2 x 2 tournaments."""
    source = STUDIES / "superadditive.toml"
    data = read_sweep_file(source)
    for name, p in (("qwen3", 0.5), ("phi4", 0.9), ("cogito", 0.2)):
        data["agents"][name] = {"strategy": "random", "params": {"p": p}}
    data["replicates"] = 2
    (exp,) = data["experiments"]
    exp.update(team_size=2, rounds=3, budget=5, check_budget=True, planning=False, meta="off")
    store, run_id = _strategy_run(source, data, tmp_path_factory.mktemp("sam") / "c.db", source)
    return _report(store, run_id)


def test_superadditive_figures_2_to_4_have_panels_per_model_and_structure_on_a_percent_axis(
    teams_models: dict[str, Any]
) -> None:
    """As the paper draws them: Figures 2 and 3 one panel per model x structure (rows
    models by name, columns SA, RI, GC), every axis 0-100% with the 50% line; the bars of
    the pooled Figure 3 and Figure 4 in percent too, Figure 4 for SA only."""
    conds = teams_models["teams"]["conditions"]
    models = ["cogito", "phi4", "qwen3"]  # rows by name
    assert sorted((c["agents"][0], c["structure"]) for c in conds) == sorted(
        (m, s) for m in models for s in ("RI", "GC", "SA"))
    drawn = _by_name(figures_for(teams_models))
    for name, key in (("superadditive_fig2_cooperation_per_round", "per_round"),
                      ("superadditive_fig3_one_shot_over_matches", "osc_curve")):
        axes = [ax for ax in drawn[name].figure.axes if ax.get_visible()]
        assert [ax.get_title() for ax in axes] == [f"{m} — {s}" for m in models
                                                   for s in ("SA", "RI", "GC")], name
        for ax in axes:
            (half,) = [line for line in ax.get_lines() if line.get_gid() == "half"]
            assert list(half.get_ydata()) == [50, 50]  # the paper's 50% line, in percent
            assert ax.get_ylim()[0] == 0 and 100 <= ax.get_ylim()[1] <= 105
            (curve,) = [line for line in ax.get_lines() if line.get_gid() != "half"]
            c = conds[int(curve.get_gid())]
            assert ax.get_title() == f"{c['agents'][0]} — {c['structure']}"
            assert list(curve.get_ydata()) == pytest.approx([100 * p["mean"] for p in c[key]])
    pooled = [ax for ax in drawn["superadditive_fig3_one_shot_by_structure"].figure.axes
              if ax.get_visible()]
    assert [ax.get_title() for ax in pooled] == models
    for ax in pooled:
        assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_gid() == "half"] == [50]
    fig4 = drawn["superadditive_fig4_intra_inter_cooperation"].figure
    (ax,) = fig4.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == models
    assert not [line for line in ax.get_lines() if line.get_gid() == "half"]  # none in the paper's
    sa = {c["agents"][0]: c for c in conds if c["structure"] == "SA"}
    bars = sorted((p.get_gid(), round(p.get_x() + p.get_width() / 2), round(p.get_height(), 9))
                  for p in ax.patches)
    assert bars == sorted((k, round(i - 0.4 + 0.4 * (j + 0.5)), round(100 * sa[m][k]["mean"], 9))
                          for i, m in enumerate(models) for j, k in enumerate(("intra", "inter"))
                          if sa[m][k]["mean"] is not None)  # a slot with no match: labelled, no bar
    assert len(bars) >= 4


def test_superadditive_figure_5_meta_prompt_accuracy(teams: dict[str, Any]) -> None:
    """Meta-prompt accuracy in the SA tournaments: a bar per question asked and the
    overall share, in percent, read back against the report."""
    conds = teams["teams"]["conditions"]
    sa = [(i, c) for i, c in enumerate(conds) if c["structure"] == "SA"]
    assert sa and all(c["meta_accuracy"]["by_question"] for _i, c in sa)
    fig = _by_name(figures_for(teams))["superadditive_fig5_meta_prompt_accuracy"].figure
    bars: dict[str, list[float]] = {}
    for ax in fig.axes:
        for p in ax.patches:
            bars.setdefault(p.get_gid(), []).append(round(p.get_height(), 9))
    for i, c in sa:
        meta = c["meta_accuracy"]
        assert bars[f"{i}|questions"] == [round(100 * v, 9) for v in meta["by_question"].values()]
        assert bars[f"{i}|all"] == [round(100 * meta["all"]["mean"], 9)]
    assert set(bars) == {f"{i}|{k}" for i, _c in sa for k in ("questions", "all")}


# ------------------------------------------------------------------ the command
@pytest.mark.slow
def test_command_writes_every_figure_in_the_format_asked(tmp_path: Path) -> None:
    db = tmp_path / "coop.db"
    store = Store(db)
    import_coopeval(COOPEVAL_STUDY, store)
    store.close()
    out = tmp_path / "figs"
    assert main(["figures", "--db", str(db), "--out", str(out), "--format", "svg"]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files and all(name.endswith(".svg") for name in files)
    assert any(n.startswith("coopeval_mean_fitness_") for n in files)
    assert any(n.startswith("coopeval_matchups_") for n in files)
    assert any(n.startswith("coopeval_replicator_") for n in files)
    first = (out / files[0]).read_bytes()
    assert main(["figures", "--db", str(db), "--out", str(out), "--format", "svg"]) == 0
    assert (out / files[0]).read_bytes() == first  # no dates in the files: reproducible


def test_command_without_matplotlib_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "figs"
    assert main(["figures", "--db", str(tmp_path / "none.db"), "--out", str(out)]) == 2
    assert "pip install 'coop-tui[figures]'" in capsys.readouterr().err
    assert not out.exists()


def test_bad_run_is_one_message_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "coop.db"
    Store(db).close()
    assert main(["figures", "nosuchrun", "--db", str(db), "--out", str(tmp_path / "f")]) == 2
    assert "no run 'nosuchrun'" in capsys.readouterr().err


# ------------------------------------------------------------------ what a reader sees
def _legend_colours(fig: Any) -> dict[str, tuple[float, ...]]:
    from matplotlib.colors import to_rgba

    legend = next(lg for lg in (fig.legends + [ax.get_legend() for ax in fig.axes]) if lg)
    return {text.get_text(): to_rgba(handle.get_facecolor())
            for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)}


def test_a_table_without_fitness_draws_no_empty_panel_and_a_legend_in_every_colour(
    coopeval: dict[str, Any]
) -> None:
    """CoopEval's Prisoner's Dilemma table holds Reputation- only (a Mean, no Fitness):
    one panel, every agent's legend entry in its own bar colour."""
    from matplotlib.colors import to_rgba

    drawn = _by_name(figures_for(coopeval))
    for name in ("coopeval_mean_fitness_prisoners", "coopeval_mean_fitness_public-good"):
        fig = drawn[name].figure
        assert [ax.get_title() for ax in fig.axes] == ["Mean"]
        assert all(p.get_height() for ax in fig.axes for p in ax.patches)  # nothing empty
        assert "no Fitness" in fig.axes[0].get_xlabel()
        legend = _legend_colours(fig)
        bars = {p.get_gid().split("|", 1)[1]: to_rgba(p.get_facecolor())
                for p in fig.axes[0].patches}
        assert len(set(legend.values())) == len(legend) == len(bars) == 6
        assert sorted(legend.values()) == sorted(bars.values())


def test_the_pooled_table_says_which_games_it_pooled(similarity_abstract: dict[str, Any]) -> None:
    played = _by_name(figures_for(similarity_abstract))["coopeval_mean_fitness_all"].figure
    assert played.get_suptitle() == "CoopEval — Prisoner's Dilemma only (normalised)"
    assert "four" not in played.get_suptitle()


def test_similarity_columns_are_named_by_their_value_in_order(similarity_abstract: dict[str, Any]) -> None:
    for name in ("coopeval_mean_fitness_all", "coopeval_mean_fitness_prisoners"):
        fig = _by_name(figures_for(similarity_abstract))[name].figure
        for ax in fig.axes:
            assert [t.get_text() for t in ax.get_xticklabels()] == [
                "similarity=0", "similarity=50", "similarity=100"]


def test_a_zero_bar_is_marked_on_the_axis(similarity_abstract: dict[str, Any]) -> None:
    """always_defect's Fitness is 0 (it takes the whole population): a bar of height 0
    shows nothing, so each zero gets a hollow marker at 0 in the agent's colour."""
    from matplotlib.colors import to_rgba

    fig = _by_name(figures_for(similarity_abstract))["coopeval_mean_fitness_all"].figure
    zeros = 0
    for ax in fig.axes:
        markers = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
        for bar in ax.patches:
            if bar.get_height() != 0:
                continue
            line = markers[f"{bar.get_gid()}|zero"]
            x = bar.get_x() + bar.get_width() / 2
            assert any(math.isclose(x, mx) for mx in line.get_xdata())
            assert set(line.get_ydata()) == {0.0}
            assert line.get_marker() == "o"
            assert to_rgba(line.get_markeredgecolor()) == bar.get_facecolor()
            zeros += 1
    assert zeros >= 3  # always_defect's Fitness at each similarity


def test_structures_are_told_apart_and_gc_says_it_has_no_intra_group_matches(
    teams: dict[str, Any]
) -> None:
    """The offline study mixes agents: SA's roster is one panel, RI and GC (the same
    four strategies) share the other, panels by name."""
    conds = teams["teams"]["conditions"]
    drawn = _by_name(figures_for(teams))
    for name in ("superadditive_fig2_cooperation_per_round", "superadditive_fig3_one_shot_over_matches"):
        lines = [line for line in _lines(drawn[name]).values() if line.get_gid() != "half"]
        looks = {(line.get_linestyle(), line.get_marker()) for line in lines}
        assert len(looks) == len(lines) == 3  # each structure its own look, in its own panel
        axes = [ax for ax in drawn[name].figure.axes if ax.get_visible()]
        assert [ax.get_title() for ax in axes] == [
            "allc, alld, grim, tft — RI", "allc, alld, grim, tft — GC", "alld, grim, smollm2, tft — SA"]
    gc = next(c for c in conds if c["structure"] == "GC")
    assert (gc.get("intra") or {}).get("mean") is None  # GC pairs players of different groups
    ax, sa_ax = drawn["superadditive_fig3_one_shot_by_structure"].figure.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["RI", "GC"]
    assert [t.get_text() for t in sa_ax.get_xticklabels()] == ["SA"]
    sa_intra = next(p for p in sa_ax.patches if p.get_gid() == "intra")
    notes = [t for t in ax.texts if t.get_gid() == "intra|none"]
    assert [t.get_text() for t in notes] == ["no intra-group"]
    # in GC's intra slot, where SA's intra bar is: the label stays centred on its group
    offset = sa_intra.get_x() + sa_intra.get_width() / 2 - sa_ax.get_xticks()[0]
    assert notes[0].get_position()[0] - ax.get_xticks()[1] == pytest.approx(offset)
    (fig4,) = drawn["superadditive_fig4_intra_inter_cooperation"].figure.axes
    assert [t.get_text() for t in fig4.get_xticklabels()] == ["alld, grim, smollm2, tft"]  # SA only


def test_columns_told_apart_only_by_long_values_are_numbered(similarity_grounded: dict[str, Any]) -> None:
    """Grounded conditions differ by score tables and sources shared between agents: no
    short field names a column, so they are numbered and the labels stay readable."""
    fig = _by_name(figures_for(similarity_grounded))["coopeval_mean_fitness_all"].figure
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == [f"similarity ({i})" for i in range(1, len(labels) + 1)]
    assert len(labels) > 4 and fig.axes[0].get_xticklabels()[0].get_rotation() == 35


def _many_series_report(n: int) -> dict[str, Any]:
    """A grounded table of ``n`` series over two benchmarks (the similarity study's
    Figure 3 has 22 per panel: agents x methods x game variants)."""
    curves = {bench: {f"agent-{k} · method {k % 3} · prisoners (bonus {k % 2 * 3})":
                      [{"told": t, "coop_rate": ((k + t / 10) % 10) / 10, "se": 0.05, "n": 4}
                       for t in (0, 50, 100)] for k in range(n)}
              for bench in ("demo_choices", "demo_ratings")}
    return {"similarity_table": {"curves": curves, "b_star": {"demo_choices": 0.5, "demo_ratings": 0.5},
                                 "b_star_by_series": {}}}


def test_fig_3_with_22_series_has_one_readable_legend_outside_the_panels() -> None:
    import warnings

    report = _many_series_report(22)
    fig = _by_name(figures_for(report))["similarity_fig3_cooperation_by_benchmark"].figure
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied" would fail here
        fig.canvas.draw()
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend under each panel
    (shared,) = fig.legends
    labels = [t.get_text() for t in shared.get_texts()]
    series = sorted(report["similarity_table"]["curves"]["demo_choices"])
    from coop_tui.figures.style import short

    assert sorted(labels) == sorted([short(s, 56) for s in series] + ["b* = 50%"])  # each once
    # outside: the legend sits below every panel, and the panels keep a readable height
    renderer = fig.canvas.get_renderer()
    legend_top = shared.get_window_extent(renderer).y1
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        assert box.y0 >= legend_top - 1
        assert box.height >= 0.35 * fig.get_figheight() * fig.dpi / 2
    # one series, one look in both panels
    lines = _lines(_by_name(figures_for(report))["similarity_fig3_cooperation_by_benchmark"])
    for name in series:
        a, b = lines[f"demo_choices|{name}"], lines[f"demo_ratings|{name}"]
        assert (a.get_color(), a.get_linestyle()) == (b.get_color(), b.get_linestyle())


def test_few_series_keep_their_legend_under_each_panel() -> None:
    fig = _by_name(figures_for(_many_series_report(3)))["similarity_fig3_cooperation_by_benchmark"].figure
    assert not fig.legends
    assert all(ax.get_legend() is not None for ax in fig.axes if ax.get_visible())


# ------------------------------------------------------------------ similarity signals: Figs 2, 8, 9
SIMILARITY_PANELS: dict[str, Any] = {
    "name": "similarity-panels", "seed": 5, "samples": 2,
    "agents": {"tft": {"strategy": "tit_for_tat"}, "coin": {"strategy": "random", "params": {"p": 0.5}}},
    "experiments": [
        # Figure 2 (one game), Figure 8 (framings), Figure 9 (games), and the Base control
        {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "coin"], "similarity": [0, 50, 100]},
        {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "coin"], "similarity": [0, 100],
         "framing": ["similar", "dissimilar", "different"]},
        {"game": ["stag_hunt", "chicken"], "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "coin"], "similarity": [0, 100]},
        {"game": ["prisoners", "stag_hunt", "chicken"], "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "coin"], "prompt": "base", "similarity": 0},
    ],
}


@pytest.fixture(scope="module")
def similarity_panels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("panels") / "c.db"
    store, run_id = _strategy_run(ROOT, SIMILARITY_PANELS, db, Path("similarity-panels.toml"))
    report = _report(store, run_id)
    store.close()
    return db, report


def _base_rates(report: dict[str, Any]) -> dict[tuple[str, str], float]:
    (base,) = [e for e in report["experiments"] if e["experiment"] == 3]
    return {(c["condition"]["game"], agent): a["coop_rate"] for c in base["conditions"]
            for agent, a in c["agents"].items()}


def _drawn_by_command(db: Path, out: Path) -> dict[str, Drawn]:
    """The files ``coop-tui figures`` writes, and the drawn figures they came from."""
    assert main(["figures", "--db", str(db), "--out", str(out)]) == 0
    return {p.stem: p for p in out.iterdir()}


def test_similarity_figure_2_base_row(similarity_panels: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, report = similarity_panels
    files = _drawn_by_command(db, tmp_path)
    assert "similarity_fig2_cooperation_over_similarity_exp0" in files
    fig = _by_name(figures_for(report))["similarity_fig2_cooperation_over_similarity_exp0"].figure
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "Base"
    bases = {line.get_gid().split("|", 1)[1]: line for line in ax.get_lines()
             if (line.get_gid() or "").startswith("base|")}
    expected = _base_rates(report)
    assert set(bases) == {"coin", "tft"}
    for agent, line in bases.items():
        assert list(line.get_ydata()) == [expected[("prisoners", agent)]]
        assert line.get_xdata()[0] < min(ax.get_lines()[0].get_xdata())  # beside the curve, left of X=0


def test_similarity_figure_8_inverted_y_axis(similarity_panels: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, report = similarity_panels
    assert "similarity_fig8_framing_exp1" in _drawn_by_command(db, tmp_path)
    fig = _by_name(figures_for(report))["similarity_fig8_framing_exp1"].figure
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["similar", "dissimilar", "different"]
    assert [a.yaxis_inverted() for a in axes] == [False, True, True]
    curve = {k: v for k, v in report["experiments"][1]["curve"].items()}
    for ax in axes:
        for line in ax.get_lines():
            name = line.get_gid()
            if name in curve:
                assert f"framing={ax.get_title()}" in name
                assert list(line.get_ydata()) == [p["coop_rate"] for p in curve[name]]


def test_similarity_figure_9_one_panel_per_game_with_base(
    similarity_panels: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, report = similarity_panels
    assert "similarity_fig9_games_exp2" in _drawn_by_command(db, tmp_path)
    fig = _by_name(figures_for(report))["similarity_fig9_games_exp2"].figure
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["chicken", "stag_hunt"]
    expected = _base_rates(report)
    for ax in axes:
        bases = {line.get_gid().split("|", 1)[1].partition(" / ")[0]: list(line.get_ydata())
                 for line in ax.get_lines() if (line.get_gid() or "").startswith("base|")}
        assert bases == {agent: [expected[(ax.get_title(), agent)]] for agent in ("coin", "tft")}
        assert not ax.yaxis_inverted()


# ------------------------------------------------------------------ similarity signals: Fig 9's Travelers claims
MIXED_CLAIMS = [0.1, 0.2, 0.3, 0.4]
"""What the ``mixed`` strategy states over the claims 2, 3, 4, 5 (the test's ground truth)."""
TRAVELERS_CLAIMS: dict[str, Any] = {
    "name": "travelers-claims", "seed": 5, "samples": 2,
    "agents": {"tft": {"strategy": "tit_for_tat"},
               "mix": {"strategy": "mixed", "params": {"probs": MIXED_CLAIMS}}},
    "experiments": [
        # the paper's rq3 shape: the X sweep and its Base control, each an experiment
        {"game": "travelers", "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "mix"], "similarity": [0, 50, 100]},
        {"game": "travelers", "mechanism": "similarity", "matchup": "self",
         "agents": ["tft", "mix"], "prompt": "base", "similarity": 0},
        # a second setting: its own panel, without the Base of the first
        {"game": "travelers", "mechanism": "similarity", "matchup": "self",
         "agents": ["mix"], "similarity": [100], "framing": "different"},
    ],
}


@pytest.fixture(scope="module")
def travelers_claims(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("travelers") / "c.db"
    store, run_id = _strategy_run(ROOT, TRAVELERS_CLAIMS, db, Path("travelers-claims.toml"))
    report = _report(store, run_id)
    store.close()
    return db, report


def _claim_bars(fig: Any) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Per panel title and column tick, each claim's (bottom, height), claims in order."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for ax in fig.axes:
        for patch in ax.patches:
            _what, _name, tick, _claim = (patch.get_gid() or "|||").split("|")
            if _what == "claim":
                out.setdefault(ax.get_title(), {}).setdefault(tick, []).append(
                    (patch.get_y(), patch.get_height()))
    return out


def test_similarity_figure_9_travelers_claim_distribution(
    travelers_claims: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The Traveler's Dilemma part of Figure 9: per agent, the mean probability on each
    claim 2-5 at Base and every X told, stacked from the lowest claim; the same numbers in
    the report section (JSON and text) as in the core's action frequencies."""
    from rich.console import Console

    from coop_tui.report import render_text

    db, report = travelers_claims
    value = report["travelers_claims"]
    assert value["claims"] == ["2", "3", "4", "5"]
    rows = {(r["agent"], r["setting"], r["told"]): r for r in value["rows"]}
    assert set(rows) == {
        *((agent, "framing=similar", told) for agent in ("mix", "tft")
          for told in ("Base", "0%", "50%", "100%")),
        ("mix", "framing=different", "100%")}
    for (agent, _setting, _told), r in rows.items():
        assert r["decisions"] == 4  # two seats, two samples
        expected = MIXED_CLAIMS if agent == "mix" else [0.0, 0.0, 0.0, 1.0]  # tft claims 5
        assert [r["mean_prob"][c] for c in value["claims"]] == pytest.approx(expected)
    # the section is the core's action frequencies, regrouped
    for f in report["mechanisms"]["action_frequencies"]:
        (r,) = [r for r in value["rows"] if (r["experiment"], r["condition_key"], r["agent"])
                == (f["experiment"], f["condition"], f["agent"])]
        assert r["mean_prob"][f["name"].removeprefix("Claim ")] == f["mean_prob"]
        assert r["sampled"][f["name"].removeprefix("Claim ")] == f["sampled"]

    assert "similarity_fig9_travelers_claims" in _drawn_by_command(db, tmp_path)
    fig = _by_name(figures_for(report))["similarity_fig9_travelers_claims"].figure
    bars = _claim_bars(fig)
    assert list(bars) == ["mix (framing=different)", "mix (framing=similar)", "tft (framing=similar)"]
    assert list(bars["mix (framing=similar)"]) == ["Base", "0", "50", "100"]
    assert list(bars["mix (framing=different)"]) == ["100"]
    for title, columns in bars.items():
        agent, setting = title.split(" (")
        for tick, stack in columns.items():
            told = "Base" if tick == "Base" else f"{tick}%"
            r = rows[(agent, setting.rstrip(")"), told)]
            assert [h for _y, h in stack] == pytest.approx([r["mean_prob"][c] for c in value["claims"]])
            assert [y for y, _h in stack] == pytest.approx(  # stacked from the lowest claim
                [sum(h for _y, h in stack[:k]) for k in range(len(stack))])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["claim 5", "claim 4", "claim 3", "claim 2"]

    console = Console(width=160, record=True)
    console.print(render_text(report))
    text = console.export_text()
    assert "Traveler's Dilemma claims under similarity signals" in text
    assert "│ mix   │ framing=similar   │ Base │ 1   │ 4 │ 10%     │ 20%     │ 30%     │ 40%     │" in text


def test_similarity_figure_9_travelers_claims_say_when_there_are_none(
    similarity_panels: tuple[Path, dict[str, Any]], coopeval: dict[str, Any]
) -> None:
    """A similarity run without the Traveler's Dilemma draws the figure with one panel
    saying there is nothing to show (and the report has no section); a run without the
    similarity mechanism draws no such figure."""
    _db, report = similarity_panels
    assert "travelers_claims" not in report
    fig = _by_name(figures_for(report))["similarity_fig9_travelers_claims"].figure
    (ax,) = fig.axes
    (text,) = [t for t in ax.texts if t.get_gid() == "nothing_to_show"]
    assert "no Traveler's Dilemma" in text.get_text() and not ax.patches
    assert "similarity_fig9_travelers_claims" not in _by_name(figures_for(coopeval))


def test_similarity_figures_13_to_16_drawn_as_figures(similarity_grounded: dict[str, Any]) -> None:
    """The matchup payoffs of each grounded source as a matrix figure, named after the
    paper's figure of that source (13 exogenous, 14 explanations, 15 decisions, 16
    both), every cell the section's "row / column" expected payoffs."""
    from coop_tui.analysis.sections.expected import matchup_cells
    from coop_tui.figures.style import slug

    drawn = _by_name(figures_for(similarity_grounded))
    figures = {n: d for n, d in drawn.items() if "_matchups_" in n and n.startswith("similarity_")}
    numbers = {n.split("_")[1] for n in figures}
    assert numbers == {"fig13", "fig14", "fig15", "fig16"}
    checked = 0
    for c in similarity_grounded["expected"]["conditions"]:
        found = matchup_cells(c)
        if found is None:
            continue
        agents, cells = found
        (d,) = [d for n, d in figures.items() if n.endswith(f"exp{c['experiment']}_{slug(c['label'])}")]
        texts = {t.get_gid(): t.get_text() for t in d.figure.axes[0].texts if t.get_gid()}
        for (a, b), (mine, theirs) in cells.items():
            assert texts[f"cell|{a}|{b}"] == f"{mine:.2f} / {theirs:.2f}"
        assert _image(d) == [[cells[(a, b)][0] if (a, b) in cells else None for b in agents]
                             for a in agents]
        checked += 1
    assert checked >= 4
