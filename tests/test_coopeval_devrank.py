"""DevRank's modes from the command line and the study file.

``report --devrank`` (and a study's ``devrank``) choose how deviation ratings are
obtained; ``published`` ranks an imported replicate by CoopEval's own
``deviation_ratings.json`` (the optimum its solver returned), falls back to CoopEval's
LP where a replicate has none, and every DevRank cell says which it used.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import numpy as np
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


@pytest.mark.parametrize("mode", ["every_optimum", "vertex", "coopeval"])
def test_only_published_reads_coopevals_rating_files(tmp_path: Path, capsys, mode: str) -> None:
    """Every mode but ``published`` computes the ratings from the payoffs: planting
    ratings that rank the defector c first and the cooperator a last changes nothing."""
    planted = {LABELS[0]: -9.0, LABELS[1]: -5.0, LABELS[2]: 0.0}
    reports = {}
    for name, published in (("bare", {}), ("planted", {1: planted, 2: planted})):
        db = tmp_path / f"{name}.db"
        study = _study(tmp_path / name, published=published)
        assert main(["import", "coopeval", str(study), "--db", str(db)]) == 0
        capsys.readouterr()
        reports[name] = _report(db, capsys, "--devrank", mode)
    bare, planted_report = (_ranks(reports[k]) for k in ("bare", "planted"))
    assert {a: c["value"] for a, c in planted_report.items()} == {a: c["value"] for a, c in bare.items()}
    assert planted_report[LABELS[2]]["value"] != 1.0  # not the planted order
    assert {r["devrank_source"] for r in reports["planted"]["per_replicate"]} == {mode}


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


# ----------------------------------------------------------------------------- CoopEval's solver

DATA = Path(__file__).parent / "data"
BUNDLED = ("coopeval_main_study", "coopeval_contracting_travellers",
           "coopeval_contracting_public_goods")
SAMPLES = DATA / "coopeval_sample"


@pytest.fixture(scope="module")
def bundled_dbs(tmp_path_factory) -> dict[str, Path]:
    """Each bundled CoopEval study imported into a database of its own."""
    root = tmp_path_factory.mktemp("bundled")
    dbs = {}
    for name in BUNDLED:
        dbs[name] = root / f"{name}.db"
        assert main(["import", "coopeval", str(DATA / name), "--db", str(dbs[name])]) == 0
    return dbs


def _printed_devrank_agreement(db: Path) -> tuple[int, int, set[str]]:
    """(cells equal to the printed DevRank cells, cells compared, solvers named) under
    ``--devrank coopeval``, as the report prints them (1 decimal, the average 3)."""
    from coop_tui.analysis.coopeval_tables import paper_tables
    from coop_tui.store import Store
    from tests.coopeval_paper_tables import PAPER_TABLES

    store = Store(db)
    try:
        run_id = store.db.execute("select id from runs").fetchone()[0]
        cells = paper_tables(store, run_id, freeze="coopeval")["tables"]
    finally:
        store.close()
    agree = compared = 0
    solvers = set()
    for c in cells:
        if c["table"] == "all" or c["metric"] != "deviation_rank":
            continue
        digits = 1 if c["agent"] != "average" else 3
        printed = PAPER_TABLES[c["table"]][(c["mechanism"], c["order"], c["metric"])][c["agent"]]
        agree += (f"{c['value']:.{digits}f}", f"{c['se']:.{digits}f}") == printed
        compared += 1
        solvers.add(c["devrank_solver"])
    return agree, compared, solvers


def test_gurobi_reproduces_more_printed_devrank_cells_than_the_highs_emulation(
        bundled_dbs, monkeypatch, capsys):
    """Every DevRank cell the bundled CoopEval data reaches (Table 6 and 7 NoMechanism,
    Table 5 and Table 4 Contracting: 28 cells): CoopEval's LP on Gurobi, its own solver,
    with the agents in config.json's order (the order CoopEval's LP takes them in) prints
    all 28 as the paper does; the same LP on HiGHS 9."""
    per_study = {}
    for name, db in bundled_dbs.items():
        gurobi = _printed_devrank_agreement(db)
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "gurobipy", None)  # the extra not installed
            highs = _printed_devrank_agreement(db)
        per_study[name] = (gurobi, highs)
    with capsys.disabled():
        print("\nprinted DevRank cells reproduced (Gurobi / HiGHS emulation): " + ", ".join(
            f"{name} {g[0]}/{g[1]} / {h[0]}/{h[1]}" for name, (g, h) in per_study.items()))
    assert {k: (g[0], h[0], g[1]) for k, (g, h) in per_study.items()} == {
        "coopeval_main_study": (14, 6, 14),
        "coopeval_contracting_travellers": (7, 2, 7),
        "coopeval_contracting_public_goods": (7, 1, 7),
    }
    assert {s for g, h in per_study.values() for s in g[2]} == {"gurobi"}
    assert {s for g, h in per_study.values() for s in h[2]} == {"highs-ipm"}
    gurobi_total = sum(g[0] for g, _ in per_study.values())
    highs_total = sum(h[0] for _, h in per_study.values())
    assert (gurobi_total, highs_total) == (28, 9)


def test_gurobi_reproduces_more_published_ratings_than_the_highs_emulation(bundled_dbs) -> None:
    """Agent by agent, against every deviation_ratings.json of a bundled tournament
    (CoopEval's Prisoner's Dilemma and Mediation x Trust samples, run 1's Trust and Stag
    Hunt of the main study): with the agents in the order CoopEval's LP took them (its
    ratings file's order), Gurobi gives all 24 published ratings; by name it misses three
    of run 1's Stag Hunt. HiGHS's interior point stands in for neither order everywhere."""
    from coop_tui.analysis.coopeval_devrating import coopeval_deviation_ratings
    from coop_tui.analysis.coopeval_tables import (
        _groups,
        _permuted,
        _roster_permutation,
        _rosters,
        _tensor,
    )
    from coop_tui.importers.coopeval_records import _roster
    from coop_tui.store import Store
    from tests.coopeval_paper_tables import RUN_1_DEVIATION_RATINGS
    from tests.test_population import _sample_tensor

    cases = []
    for name in ("no_mechanism_prisoners_dilemma", "mediation_trust_game"):
        tensor = _sample_tensor(name)
        published = json.loads((SAMPLES / name / "deviation_ratings.json").read_text())
        cases.append((tensor, _roster({}, SAMPLES / name), published))
    store = Store(bundled_dbs["coopeval_main_study"])
    try:
        run_id = store.db.execute("select id from runs").fetchone()[0]
        rosters = _rosters(store, run_id)
        for game in ("trust", "stag_hunt"):
            published = RUN_1_DEVIATION_RATINGS[game]
            group = next(g for g in _groups(store.db, run_id) if (g["game"], g["mechanism"]) == (game, "none"))
            cases.append((_tensor(store.db, run_id, group, 0), rosters[(group["experiment"], 0)], published))
    finally:
        store.close()
    counts = {}
    for method in ("gurobi", "highs-ipm"):
        for ordered in (True, False):
            agreed = []
            for tensor, roster, published in cases:
                order = _roster_permutation(tensor.agents, roster if ordered else None)
                ratings = coopeval_deviation_ratings(_permuted(tensor.payoffs, order), method=method)
                agents = [tensor.agents[i] for i in order]
                agreed.append(sum(abs(r - published[a]) < 1e-9 for a, r in zip(agents, ratings, strict=True)))
            counts[method, ordered] = agreed
    assert counts == {("gurobi", True): [6, 6, 6, 6], ("gurobi", False): [6, 6, 6, 3],
                      ("highs-ipm", True): counts["highs-ipm", True],
                      ("highs-ipm", False): [6, 2, 3, 6]}


def _synthetic_db(tmp_path: Path, capsys) -> Path:
    study = _study(tmp_path / "study", published={})
    db = tmp_path / "c.db"
    assert main(["import", "coopeval", str(study), "--db", str(db)]) == 0
    capsys.readouterr()
    return db


def test_the_report_names_gurobi_when_it_rated(tmp_path: Path, capsys) -> None:
    db = _synthetic_db(tmp_path, capsys)
    report = _report(db, capsys, "--devrank", "coopeval")
    assert (report["devrank"], report["devrank_solver"]) == ("coopeval", "gurobi")
    assert "devrank_solver_note" not in report
    assert {c["devrank_solver"] for c in _ranks(report).values()} == {"gurobi"}
    assert {r["devrank_solver"] for r in report["per_replicate"]} == {"gurobi"}
    assert main(["report", "--db", str(db), "--devrank", "coopeval"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the caption may wrap
    assert "DevRank ratings: CoopEval's LP; solver: Gurobi barrier + crossover, CoopEval's solver" in text
    assert main(["report", "--db", str(db), "--devrank", "coopeval", "--format", "latex"]) == 0
    assert "% DevRank ratings: CoopEval's LP; solver: Gurobi" in capsys.readouterr().out
    # our own ratings need no solver of CoopEval's, and say nothing about one
    ours = _report(db, capsys)
    assert "devrank_solver" not in ours and all("devrank_solver" not in c for c in ours["tables"])


def test_without_gurobipy_the_highs_emulation_rates_and_the_report_says_so(
        tmp_path: Path, capsys, monkeypatch) -> None:
    db = _synthetic_db(tmp_path, capsys)
    with_gurobi = _report(db, capsys, "--devrank", "coopeval")
    monkeypatch.setitem(sys.modules, "gurobipy", None)  # `import gurobipy` fails, as uninstalled
    report = _report(db, capsys, "--devrank", "coopeval")
    assert (report["devrank"], report["devrank_solver"]) == ("coopeval", "highs-ipm")
    assert report["devrank_solver_note"] == "gurobipy is not installed (pip install 'coop-tui[gurobi]')"
    ranks = _ranks(report)
    assert {c["devrank_solver"] for c in ranks.values()} == {"highs-ipm"}
    assert {c["devrank_solver_note"] for c in ranks.values()} == {report["devrank_solver_note"]}
    # this small study has one optimum: both solvers rank alike
    assert {a: c["value"] for a, c in ranks.items()} == {
        a: c["value"] for a, c in _ranks(with_gurobi).items()}
    assert main(["report", "--db", str(db), "--devrank", "coopeval"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("solver: HiGHS interior point + crossover, an emulation of CoopEval's Gurobi "
            "(gurobipy is not installed (pip install 'coop-tui[gurobi]'))") in text
    assert main(["report", "--db", str(db), "--devrank", "coopeval", "--format", "latex"]) == 0
    assert "HiGHS interior point + crossover" in capsys.readouterr().out


def test_a_model_too_large_for_gurobis_free_licence_falls_back_to_highs() -> None:
    """The pip wheel's licence stops at 2,000 variables: thirteen agents in a three-player
    game make 13**3 = 2,197 seatings. HiGHS rates them and the result says why."""
    from coop_tui.analysis.coopeval_devrating import coopeval_ratings

    solved = coopeval_ratings(np.ones((13, 13, 13)))  # clones: every rating is 0
    assert solved.solver == "highs-ipm"
    assert solved.note is not None and solved.note.startswith("Gurobi refused the LP")
    assert solved.ratings.tolist() == [0.0] * 13


def _published_ratings_reproduced(tournament: Path, db: Path, published: dict[str, float]) -> int:
    """Import one CoopEval tournament and count the published ratings `--devrank coopeval`
    gives (Gurobi), agent by agent."""
    from coop_tui.analysis.coopeval_tables import paper_tables
    from coop_tui.store import Store

    assert main(["import", "coopeval", str(tournament), "--db", str(db)]) == 0
    store = Store(db)
    try:
        run_id = store.db.execute("select id from runs").fetchone()[0]
        (rep,) = paper_tables(store, run_id, freeze="coopeval")["per_replicate"]
    finally:
        store.close()
    assert rep["devrank_solver"] == "gurobi"
    return sum(abs(rep["deviation_rating"][a] - r) < 1e-9 for a, r in published.items())


def test_solver_order_comes_from_the_tournaments_evaluation_files(tmp_path: Path, capsys) -> None:
    """CoopEval's LP takes the agents in its payoff tensor's order, which each of its
    evaluation outputs is keyed in (deviation_ratings.json, replicator_dynamics_fitness.json,
    population_history.json) and which differs from config.json's. On run 1's Mediation x
    Trust (tests/data/coopeval_sample): with its ratings file, or only its replicator file,
    or only its population history, the import keeps that order and Gurobi gives all six
    published ratings; with none of them, config.json's order gives two."""
    from coop_tui.importers.coopeval_records import _roster

    source = SAMPLES / "mediation_trust_game"
    published = json.loads((source / "deviation_ratings.json").read_text())
    tensor_order = list(published)
    config_order = _roster(json.loads((source / "config.json").read_text()), tmp_path)
    replicator = json.loads((source / "replicator_dynamics_fitness.json").read_text())
    assert list(replicator) == tensor_order
    assert config_order != tensor_order and sorted(config_order) == sorted(tensor_order)
    history = [dict.fromkeys(tensor_order, 1 / 6), dict.fromkeys(tensor_order, 1 / 6)]
    reproduced = {}
    for case, drop, add in (
        ("ratings file", (), {}),
        ("replicator file", ("deviation_ratings.json",), {}),
        ("population history", ("deviation_ratings.json", "replicator_dynamics_fitness.json"),
         {"population_history.json": history}),
        ("config.json", ("deviation_ratings.json", "replicator_dynamics_fitness.json"), {}),
    ):
        tournament = tmp_path / case.replace(" ", "_") / source.name
        shutil.copytree(source, tournament)
        for name in drop:
            (tournament / name).unlink()
        for name, content in add.items():
            (tournament / name).write_text(json.dumps(content))
        config = json.loads((tournament / "config.json").read_text())
        roster = _roster(config, tournament)
        assert roster == (config_order if case == "config.json" else tensor_order), case
        reproduced[case] = _published_ratings_reproduced(
            tournament, tmp_path / f"{case.replace(' ', '_')}.db", published)
    capsys.readouterr()
    assert reproduced == {"ratings file": 6, "replicator file": 6, "population history": 6,
                          "config.json": 2}
