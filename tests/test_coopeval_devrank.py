"""DevRank's modes from the command line and the study file.

``report --devrank`` (and a study's ``devrank``) choose how deviation ratings are
obtained; ``published`` ranks an imported replicate by CoopEval's own
``deviation_ratings.json`` (the optimum its solver returned), falls back to CoopEval's
LP where a replicate has none, and every DevRank cell says which it used.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from coop_tui.cli import main

AGENTS = [{"llm": {"model": f"x/{name}"}, "type": "CoTAgent"} for name in ("a", "b", "c")]
LABELS = ["x/a(CoT)", "x/b(CoT)", "x/c(CoT)"]
PD = {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": {
    "CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}}}
# a cooperates, b and c defect: b and c tie in every LP rating
PAY = {(0, 0): (2, 2), (0, 1): (0, 3), (1, 0): (3, 0), (1, 1): (1, 1)}
MOVE = {0: 0, 1: 1, 2: 1}


def _study(root: Path, *, published: dict[int, dict[str, float]]) -> Path:
    """Two runs of one NoMechanism tournament; ``published`` ratings per run index."""
    for run in (1, 2):
        d = root / f"run{run}_2026" / "no_mechanism_prisoners_dilemma"
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps(
            {"game": PD, "mechanism": {"type": "NoMechanism", "kwargs": {}}, "agents": AGENTS,
             "name": d.name}))
        profile = [{"players": [{**AGENTS[i], "player_id": 1}, {**AGENTS[j], "player_id": 2}],
                    "payoffs": [[list(PAY[(MOVE[i], MOVE[j])])]]}
                   for i, j in itertools.product(range(3), repeat=2)]
        (d / "matchup_payoffs.json").write_text(json.dumps({"discount": 1.0, "profile": profile}))
        if run in published:
            (d / "deviation_ratings.json").write_text(json.dumps(published[run]))
    return root


def _report(db: Path, capsys, *args: str) -> dict:
    assert main(["report", "--json", "--db", str(db), *args]) == 0
    return json.loads(capsys.readouterr().out)


def _ranks(report: dict) -> dict[str, dict]:
    return {c["agent"]: c for c in report["tables"]
            if c["table"] == "prisoners" and c["metric"] == "deviation_rank"}


def test_published_ratings_rank_agents_and_the_output_says_so(tmp_path: Path, capsys) -> None:
    # CoopEval's optimum split b and c (a vertex our solver-independent rating never picks)
    ratings = {LABELS[0]: -1.0, LABELS[1]: 0.0, LABELS[2]: -0.5}
    study = _study(tmp_path / "study", published={1: ratings, 2: ratings})
    db = tmp_path / "c.db"
    assert main(["import", "coopeval", str(study), "--db", str(db)]) == 0
    capsys.readouterr()
    ours = _report(db, capsys)
    assert ours["devrank"] == "every_optimum"
    assert _ranks(ours)[LABELS[1]]["value"] == _ranks(ours)[LABELS[2]]["value"]  # tied
    assert _ranks(ours)[LABELS[1]]["devrank_source"] == "every_optimum"
    shown = _report(db, capsys, "--devrank", "published")
    assert shown["devrank"] == "published"
    ranks = _ranks(shown)
    assert {a: ranks[a]["value"] for a in LABELS} == {LABELS[0]: 3.0, LABELS[1]: 1.0, LABELS[2]: 2.0}
    assert all(ranks[a]["devrank_source"] == "published" and ranks[a]["n"] == 2 for a in LABELS)
    assert {r["devrank_source"] for r in shown["per_replicate"]} == {"published"}
    # the text report names the source under the table
    assert main(["report", "--db", str(db), "--devrank", "published"]) == 0
    assert "DevRank ratings: CoopEval's own deviation_ratings.json" in capsys.readouterr().out


def test_a_replicate_without_published_ratings_falls_back_and_says_which(tmp_path: Path, capsys) -> None:
    study = _study(tmp_path / "study", published={1: {LABELS[0]: -1.0, LABELS[1]: 0.0, LABELS[2]: -0.5}})
    db = tmp_path / "c.db"
    assert main(["import", "coopeval", str(study), "--db", str(db)]) == 0
    capsys.readouterr()
    shown = _report(db, capsys, "--devrank", "published")
    sources = {r["replicate"]: r["devrank_source"] for r in shown["per_replicate"]}
    assert sources == {0: "published", 1: "coopeval"}
    assert _ranks(shown)[LABELS[0]]["devrank_source"] == "coopeval (1 of 2), published (1 of 2)"


def test_the_study_file_sets_the_mode_and_the_command_line_overrides_it(tmp_path: Path, capsys) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        'name = "dr"\nseed = 1\ndevrank = "vertex"\n'
        '[agents.tft]\nstrategy = "tit_for_tat"\n[agents.alld]\nstrategy = "always_defect"\n'
        '[agents.allc]\nstrategy = "always_cooperate"\n'
        '[[experiments]]\nname = "none"\ngame = "prisoners"\nmechanism = "none"\n'
        'matchup = "cross"\nagents = ["tft", "alld", "allc"]\n')
    db = tmp_path / "s.db"
    assert main(["--batch", str(study), "--db", str(db), "--yes"]) == 0
    capsys.readouterr()
    report = _report(db, capsys)
    assert report["devrank"] == "vertex"
    assert {c["devrank_source"] for c in _ranks(report).values()} == {"vertex"}
    assert _report(db, capsys, "--devrank", "coopeval")["devrank"] == "coopeval"


def test_a_bad_devrank_in_the_study_file_is_refused(tmp_path: Path, capsys) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        'name = "dr"\ndevrank = "gurobi"\n[agents.tft]\nstrategy = "tit_for_tat"\n'
        '[[experiments]]\nname = "none"\ngame = "prisoners"\nmechanism = "none"\n'
        'matchup = "self"\nagents = ["tft"]\n')
    db = tmp_path / "s.db"
    assert main(["--batch", str(study), "--db", str(db), "--yes"]) == 2
    err = capsys.readouterr().err
    assert "devrank" in err
    assert not db.exists()


@pytest.mark.parametrize("mode", ["every_optimum", "vertex", "coopeval", "published"])
def test_every_mode_is_accepted_by_the_command_line(tmp_path: Path, capsys, mode: str) -> None:
    study = _study(tmp_path / "study", published={})
    db = tmp_path / "c.db"
    assert main(["import", "coopeval", str(study), "--db", str(db)]) == 0
    capsys.readouterr()
    assert _report(db, capsys, "--devrank", mode)["devrank"] == mode
