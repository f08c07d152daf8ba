"""The similarity signals paper's study files: the paper-scale one validates (with stand-in item files for
the published benchmarks, which are not shipped), and a cut-down copy of the offline one
runs end to end on the embedded model: benchmark answers -> exogenous and endogenous
matrices -> cross-play of Prisoners under the computed per-pair scores -> report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from coop_tui.report import build_report
from coop_tui.spec import build_sweep, load_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDIES = Path(__file__).resolve().parents[1] / "data" / "studies"


def test_paper_study_validates_with_user_supplied_benchmarks(tmp_path: Path) -> None:
    shutil.copy(STUDIES / "similarity.toml", tmp_path / "similarity.toml")
    (tmp_path / "benchmarks").mkdir()
    for name in ("trait", "hle", "moral_choice", "newcomb"):
        rows = [{"id": f"{name}-{i}", "prompt": f"question {i}", "kind": "options",
                 "options": ["yes", "no", "unsure"]} for i in range(200)]
        (tmp_path / "benchmarks" / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    sweep = load_sweep(tmp_path / "similarity.toml", check_keys=False)
    by_name = {sweep.spec.experiments[c.experiment].name: c for c in sweep.cells}
    assert by_name["rq5_administer"].mechanism_params["items"] == 150
    assert by_name["rq5_administer"].samples == 3
    assert {c.source for c in sweep.cells if c.source} >= {"exogenous:trait", "endogenous:newcomb:explanation"}
    assert all(a.temperature == 1.0 for a in sweep.spec.agents.values())
    from coop_tui.grounded.stages import experiment_stages

    stages = dict(zip((e.name for e in sweep.spec.experiments), experiment_stages(sweep), strict=True))
    assert stages["rq5_administer"] == 0 and stages["rq5_judge"] == 1
    assert stages["rq6_exogenous_trait"] == 1 and stages["rq6_endogenous"] == 2
    # Figure 6 (cooperation bonus +3 / +7) and Figure 7 (reasoning effort, "no reasoning"
    # without chain of thought)
    bonus = [c for c in sweep.cells if sweep.spec.experiments[c.experiment].name == "rq2_bonus"]
    assert sorted({c.game_params["bonus"] for c in bonus}) == [3.0, 7.0] and len(bonus) == 2 * 5 * 11
    reasoning = {c.seats[0] for c in sweep.cells if sweep.spec.experiments[c.experiment].name == "rq2_reasoning"}
    efforts = {sweep.spec.agents[a].reasoning_effort: sweep.spec.agents[a].style for a in reasoning}
    assert efforts == {"none": "direct", "low": "cot", "medium": "cot", "high": "cot"}
    # Figure 9: the four other games in Base (no similarity signal) as well as under X
    base = [c for c in sweep.cells if sweep.spec.experiments[c.experiment].name == "rq3_base"]
    swept = [c for c in sweep.cells if sweep.spec.experiments[c.experiment].name == "rq3_games"]
    assert {c.game for c in base} == {c.game for c in swept} == {
        "stag_hunt", "chicken", "public_good", "travelers"}
    assert {c.seats[0] for c in base} == {c.seats[0] for c in swept}
    assert {c.mechanism_params["prompt"] for c in base} == {"base"}
    # --dry-run sizes a judge's prompt by the record it will read: the 150 items asked
    from coop_tui.grounded.stages import resolve_params

    judge = next(c for c in sweep.cells if c.mechanism == "score"
                 and c.mechanism_params.get("view") == "both")
    dossier = resolve_params(judge, None, "probe")["dossier"]
    assert dossier.count("Question ") == 150 and dossier.count("Their reasoning:") == 150


def test_the_study_without_its_benchmarks_says_where_they_come_from(tmp_path: Path) -> None:
    """The published benchmarks are not shipped: the dry run's one error names the file,
    what it is and the page that says where to get it; that page lists every file the
    study reads."""
    import subprocess
    import sys

    shutil.copy(STUDIES / "similarity.toml", tmp_path / "similarity.toml")
    done = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", "similarity.toml",
                           "--dry-run", "--db", str(tmp_path / "s.db")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "TRAIT (Lee et al., 2025)" in done.stderr
    assert f"save it as {tmp_path / 'benchmarks' / 'trait.jsonl'}" in done.stderr
    assert "docs/reproducing-similarity.md#where-the-benchmarks-come-from" in done.stderr
    assert not (tmp_path / "s.db").exists()
    page = (STUDIES.parents[1] / "docs" / "reproducing-similarity.md").read_text()
    section = page.split("### Where the benchmarks come from", 1)[1].split("\n## ", 1)[0]
    files = {ref for ref in read_sweep_file(STUDIES / "similarity.toml").__repr__().split("'")
             if ref.startswith("benchmarks/")}
    assert files == {"benchmarks/trait.jsonl", "benchmarks/hle.jsonl",
                     "benchmarks/moral_choice.jsonl", "benchmarks/newcomb.jsonl"}
    assert all(f"`{ref}`" in section for ref in files)


def test_offline_study_is_valid_as_shipped() -> None:
    sweep = load_sweep(STUDIES / "similarity-offline.toml")
    assert {c.mechanism for c in sweep.cells} == {"benchmark", "score", "similarity"}
    assert {a.model for a in sweep.spec.agents.values()} == {"local/smollm2"}
    names = {sweep.spec.experiments[c.experiment].name for c in sweep.cells}
    assert {"bonus", "reasoning"} <= names
    # Figure 7's axis is the reasoning setting alone: the two agents compared differ in
    # their prompt style and nothing else (not temperature, not max tokens)
    exp = next(e for e in sweep.spec.experiments if e.name == "reasoning")
    direct, cot = (sweep.spec.agents[a] for a in exp.agents)
    assert (direct.style, cot.style) == ("direct", "cot")
    assert direct.model_copy(update={"style": "cot"}) == cot


ITEMS = 2
"""Items asked per benchmark: two is the fewest from which every metric is computed the
paper's way (one item leaves the similarity game's JSD no other item to estimate chance
from), and each item costs every agent one embedded-model call."""


def cut_down() -> dict[str, Any]:
    """Two demo benchmarks and the similarity game, one run each of a seeded subsample of
    ITEMS items; the two agents judge each other and play each other once per source (no
    diagonal, so one run is enough)."""
    data = read_sweep_file(STUDIES / "similarity-offline.toml")
    pair = [["smol_hot", "smol_cool"], ["smol_cool", "smol_hot"]]
    _bonus, _reasoning, admin, judge, play = data["experiments"]
    data["experiments"] = [admin, judge, play]  # the RQ2 sweeps: validated above
    admin["samples"] = 1
    admin["benchmark"] = ["demo_choices", "demo_ratings", "similarity_game"]
    admin["items"] = ITEMS
    judge["matchup"] = pair
    judge["view"] = ["explanation", "both"]
    play["matchup"] = pair[:1]
    play["samples"] = 1
    play["similarity_source"] = ["exogenous:demo_ratings", "endogenous:demo_choices:explanation"]
    return data


@pytest.mark.slow
async def test_offline_pipeline_end_to_end_and_resume_asks_nothing(tmp_path: Path) -> None:
    sweep = build_sweep(cut_down(), source=STUDIES / "similarity-offline.toml")
    store = Store(tmp_path / "sim.db")
    summary = await run_sweep(sweep, store)
    assert summary.status == "done", (summary.errors, summary.failures)
    run_id = summary.run_id
    phases = dict(store.db.execute(
        "select d.phase, count(*) from decisions d join matches m on m.id = d.match_id"
        " where m.run_id = ? group by d.phase", [run_id]).fetchall())
    assert phases == {"item": 2 * 3 * ITEMS, "score": 2 * 2, "play": 2 * 2}
    asked = store.db.execute(
        "select json_extract(m.condition, '$.benchmark'), count(distinct d.round) from decisions d"
        " join matches m on m.id = d.match_id where m.run_id = ? and d.phase = 'item'"
        " group by 1", [run_id]).fetchall()
    assert len(asked) == 3 and {n for _b, n in asked} == {ITEMS}
    report = build_report(store, run_id)
    exo = report["exogenous"]
    assert set(exo) == {"demo_choices", "demo_ratings", "similarity_game"}
    assert exo["similarity_game"]["metric"] == "jsd" and exo["demo_ratings"]["metric"] == "qwk"
    for bench in exo.values():
        value = bench["matrix"]["smol_hot"]["smol_cool"]
        assert value is None or 0.0 <= value <= 100.0
        assert bench["matrix"]["smol_hot"]["smol_hot"] == 100.0  # identical to itself (the paper)
        assert bench["run_agreement"]["smol_hot"] is None  # one run: nothing to compare
    endo = report["endogenous"]["demo_choices"]
    assert set(endo) == {"explanation", "both"}
    assert 0 <= endo["both"]["matrix"]["smol_hot"]["smol_cool"] <= 100
    assert set(report["baseline"]) == set(exo)
    assert {b["items"] for b in report["baseline"].values()} == {ITEMS}  # chance over the items asked
    # sim-play's outcome sections see the computed scores: Table 2's shape and welfare
    table = report["similarity_table"]["tables"]["prisoners"]["rows"]
    assert set(table["demo_ratings"]) == {"exogenous"}
    assert set(table["demo_choices"]) == {"endogenous (explanations)"}
    cell = table["demo_ratings"]["exogenous"]
    assert 0 <= cell["expected"] <= 3 and 0 <= cell["realised"] <= 3
    assert {c["source"] for c in report["welfare"]["conditions"]} == {
        "exogenous:demo_ratings", "endogenous:demo_choices:explanation"}
    dossiers = [json.loads(text)[0]["content"] for (text,) in store.db.execute(
        "select t.text from decisions d join matches m on m.id = d.match_id join texts t"
        " on t.hash = d.prompt_hash where m.run_id = ? and d.phase = 'score'"
        " and json_extract(m.condition, '$.view') = 'explanation'", [run_id]).fetchall()]
    assert len(dossiers) == 2
    assert all("Their reasoning:" in d and "Their answer:" not in d for d in dossiers)
    assert any(line.startswith("Their reasoning:") and "(none given)" not in line
               for d in dossiers for line in d.splitlines())  # the agents reasoned first
    # each seat was told its own agent's figure for the co-player
    for source, told in store.db.execute(
        "select json_extract(condition, '$.similarity_source'), json_extract(condition, '$.similarity_scores')"
        " from matches where run_id = ? and mechanism = 'similarity'", [run_id]).fetchall():
        scores = json.loads(told)
        if source.startswith("exogenous"):
            expected = exo["demo_ratings"]["matrix"]["smol_hot"]["smol_cool"]
            assert scores["smol_hot"]["smol_cool"] == round(expected, 1)
        else:
            assert scores["smol_cool"]["smol_hot"] == round(endo["explanation"]["matrix"]["smol_cool"]["smol_hot"], 1)
    before = store.db.execute("select count(*) from decisions").fetchone()[0]
    again = await run_sweep(sweep, store, resume=True)
    assert again.status == "done"
    assert again.matches_skipped == sweep.total_matches and again.decisions == 0
    assert store.db.execute("select count(*) from decisions").fetchone()[0] == before
    store.close()
