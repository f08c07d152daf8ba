"""``coop-tui import coopeval``: the two real sample directories end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.importers.coopeval import import_command, import_coopeval
from coop_tui.report import build_report
from coop_tui.store import Store

SAMPLES = Path(__file__).parent / "data" / "coopeval_sample"
PD = SAMPLES / "no_mechanism_prisoners_dilemma"
TRUST = SAMPLES / "mediation_trust_game"
COOP_TUI = Path(sys.executable).parent / "coop-tui"


def _published(directory: Path, name: str) -> dict:
    return json.loads((directory / name).read_text())


def _imported(tmp_path: Path, directory: Path) -> tuple[Store, dict]:
    store = Store(tmp_path / "coop.db")
    summary = import_coopeval(directory, store)
    return store, summary


def _experiment(report: dict) -> dict:
    (exp,) = report["experiments"]
    return exp


@pytest.mark.parametrize("directory", [PD, TRUST])
def test_report_reproduces_published_fitness_and_mean(tmp_path: Path, directory: Path) -> None:
    store, summary = _imported(tmp_path, directory)
    exp = _experiment(build_report(store, summary["run_id"]))
    assert exp["matchup"] == "cross"
    fitness = _published(directory, "replicator_dynamics_fitness.json")
    mean = _published(directory, "agent_average_payoff.json")
    population = exp["population"]
    assert set(population) == set(fitness)
    for agent, values in population.items():
        assert values["fitness"] == pytest.approx(fitness[agent]["fitness"], abs=1e-6)
        assert values["mean_payoff"] == pytest.approx(mean[agent], abs=1e-9)
        assert exp["published"][agent]["fitness"] == fitness[agent]["fitness"]
    # the per-match payoffs we stored give CoopEval's own matchup table exactly
    spec = json.loads(store.run(summary["run_id"])["spec"])
    assert spec["checks"]["matchup_payoffs"] == "agree"
    store.close()


def test_prisoners_ratings_and_welfare(tmp_path: Path) -> None:
    store, summary = _imported(tmp_path, PD)
    exp = _experiment(build_report(store, summary["run_id"]))
    ratings = _published(PD, "deviation_ratings.json")
    for agent, values in exp["population"].items():
        assert values["deviation_rating"] == pytest.approx(ratings[agent], abs=1e-9)
    # all but GPT-4o always defect: welfare a little above all-defect (0), below 1
    gpt4o = "openai/gpt-4o-2024-05-13(CoT)"
    assert exp["matchup_matrix"][gpt4o]["google/gemini-3-flash-preview(CoT)"] == 0.0
    assert 0.0 < exp["normalised_welfare"] < 0.2
    assert exp["normalised_welfare_final"] == pytest.approx(0.0, abs=1e-6)
    store.close()


@pytest.mark.parametrize("directory", [PD, TRUST])
def test_published_devrank_ranks_by_the_tournaments_own_ratings(tmp_path: Path, directory: Path) -> None:
    """``report --devrank published``: the ranks follow CoopEval's deviation_ratings.json
    (ties sharing the mean rank), and every DevRank cell says so."""
    from coop_tui.analysis.population import deviation_ranks

    store, summary = _imported(tmp_path, directory)
    report = build_report(store, summary["run_id"], devrank="published")
    ratings = _published(directory, "deviation_ratings.json")
    agents = sorted(ratings)
    expected = dict(zip(agents, deviation_ranks([ratings[a] for a in agents]), strict=True))
    cells = {c["agent"]: c for c in report["tables"]
             if c["metric"] == "deviation_rank" and c["table"] != "all"}
    assert report["devrank"] == "published"
    assert {a: cells[a]["value"] for a in agents} == expected
    assert {c["devrank_source"] for c in cells.values()} == {"published"}
    store.close()


@pytest.mark.parametrize(
    ("directory", "matches", "decisions", "failed"),
    [(PD, 36, 72, 0), (TRUST, 36, 12 + 72 + 72, 4)],
)
def test_decisions_joined_to_the_game_log(
    tmp_path: Path, directory: Path, matches: int, decisions: int, failed: int
) -> None:
    store, summary = _imported(tmp_path, directory)
    db = store.db
    assert db.execute("select count(*) from matches").fetchone()[0] == matches
    assert db.execute("select count(*) from seats").fetchone()[0] == 2 * matches
    total, with_prompt, attempts = db.execute(
        "select count(*), sum(prompt != '[]'), sum(attempts - 1) from decisions"
    ).fetchone()
    assert (total, with_prompt, attempts) == (decisions, decisions, failed)
    assert summary["unlinked_log_entries"] == 0
    # every play decision: CoopEval's label order is our action order
    rows = db.execute(
        """select d.parsed, d.action, d.response, r.action, r.info from decisions d
           join rounds r on r.match_id = d.match_id and r.round = d.round and r.seat = d.seat
           where d.phase = 'play'"""
    ).fetchall()
    assert len(rows) == 2 * matches
    checked = 0
    seat_rows = db.execute(
        """select d.seat from decisions d
           join rounds r on r.match_id = d.match_id and r.round = d.round and r.seat = d.seat
           where d.phase = 'play'"""
    ).fetchall()
    for (parsed, action, response, played, info), (seat,) in zip(rows, seat_rows, strict=True):
        probs = json.loads(parsed)
        assert response
        pure = [label for label, p in probs.items() if p == 1.0]
        if pure == ["A2"]:  # delegated: the mediator's action was played
            assert action == 2 and json.loads(info)["delegated"][seat] is True
            checked += 1
        elif pure:
            assert int(pure[0][1:]) == action == played
            checked += 1
    assert checked > matches  # most answers are pure strategies
    store.close()


def test_mediation_phases_and_retries(tmp_path: Path) -> None:
    store, summary = _imported(tmp_path, TRUST)
    db = store.db
    phases = dict(db.execute("select phase, count(*) from decisions group by phase").fetchall())
    assert phases == {"play": 72, "vote": 72, "propose": 12}
    # a decision CoopEval re-asked keeps the rejected answers, oldest first
    row = db.execute(
        "select retries, attempts, prompt from decisions where attempts > 1 order by attempts desc"
    ).fetchone()
    retries = json.loads(row[0])
    assert row[1] == len(retries) + 1
    final_prompt = json.loads(row[2])[0]["content"]
    assert retries[-1]["response"].strip() in final_prompt
    assert all(r["error"] for r in retries)
    # the decision inspector reads them back as ordinary decisions
    loaded = [d for m in store.matches(summary["run_id"]) for d in store.decisions(m["id"])]
    assert len(loaded) == 156
    assert sum(len(d.retries) for d in loaded) == 4
    vote = json.loads(
        db.execute("select info from phases where phase = 'vote' limit 1").fetchone()[0]
    )
    assert vote["selected"] in (1, 2) and set(vote["votes"]) == {"0", "1"}
    delegated = db.execute(
        "select count(*) from rounds where info like '%\"delegated\": [%true%'"
    ).fetchone()[0]
    assert delegated > 0
    store.close()


def test_reimport_replaces_instead_of_duplicating(tmp_path: Path) -> None:
    store, first = _imported(tmp_path, TRUST)
    counts = [
        store.db.execute(f"select count(*) from {t}").fetchone()[0]
        for t in ("runs", "matches", "seats", "decisions", "rounds", "phases")
    ]
    second = import_coopeval(TRUST, store)
    assert second["run_id"] == first["run_id"] and second["replaced"] is True
    again = [
        store.db.execute(f"select count(*) from {t}").fetchone()[0]
        for t in ("runs", "matches", "seats", "decisions", "rounds", "phases")
    ]
    assert again == counts
    import_coopeval(PD, store)
    assert store.db.execute("select count(*) from runs").fetchone()[0] == 2
    store.close()


def test_bad_directories_exit_2_and_write_nothing(tmp_path: Path, capsys) -> None:
    db = tmp_path / "coop.db"
    assert import_command(tmp_path / "nope", db) == 2
    assert "not a directory" in capsys.readouterr().err
    assert not db.exists()

    broken = tmp_path / "broken"
    shutil.copytree(PD, broken)
    (broken / "records.jsonl").write_text(
        '[{"player": "x#P1", "action": "PrisonersDilemmaAction.COOPERATE"'
    )
    assert import_command(broken, db) == 2
    err = capsys.readouterr().err
    assert "records.jsonl:1" in err and err.count("\n") == 1
    assert not db.exists()

    reputation = tmp_path / "reputation"
    shutil.copytree(PD, reputation)
    config = json.loads((reputation / "config.json").read_text())
    config["mechanism"]["type"] = "Reputation"  # with a matchup file, not a Reputation one
    (reputation / "config.json").write_text(json.dumps(config))
    assert import_command(reputation, db) == 2
    assert "a Reputation entry needs 'player' and 'points'" in capsys.readouterr().err

    unknown = tmp_path / "unknown"
    shutil.copytree(PD, unknown)
    config["mechanism"]["type"] = "Bargaining"
    (unknown / "config.json").write_text(json.dumps(config))
    assert import_command(unknown, db) == 2
    assert "mechanism.type 'Bargaining'" in capsys.readouterr().err

    stranger = tmp_path / "stranger"
    shutil.copytree(PD, stranger)
    config["mechanism"]["type"] = "NoMechanism"
    config["agents"] = config["agents"][1:]  # records mention an agent the config lacks
    (stranger / "config.json").write_text(json.dumps(config))
    assert import_command(stranger, db) == 2
    assert "is not among config.json's agents" in capsys.readouterr().err
    assert not db.exists()

    # an existing database is left as it was
    assert import_command(PD, db) == 0
    before = db.stat().st_size, Store(db).db.execute("select count(*) from decisions").fetchone()
    assert import_command(stranger, db) == 2
    after = db.stat().st_size, Store(db).db.execute("select count(*) from decisions").fetchone()
    assert before == after


@pytest.mark.slow
def test_cli_import_then_report_json(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    env_db = ["--db", str(db)]
    done = subprocess.run(
        [str(COOP_TUI), "import", "coopeval", str(TRUST), *env_db],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "36 matches" in done.stdout
    report = subprocess.run(
        [str(COOP_TUI), "report", "--json", *env_db], capture_output=True, text=True, timeout=120
    )
    assert report.returncode == 0, report.stderr
    exp = _experiment(json.loads(report.stdout))
    fitness = _published(TRUST, "replicator_dynamics_fitness.json")
    for agent, values in exp["population"].items():
        assert values["fitness"] == pytest.approx(fitness[agent]["fitness"], abs=1e-6)


# ----------------------------------------------------------------------------- synthetic dirs

PD_TABLE = {"CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}
AGENTS = [
    {"llm": {"provider": "OpenRouter", "model": "lab/a", "kwargs": {}}, "type": "CoTAgent"},
    {"llm": {"provider": "OpenRouter", "model": "lab/b", "kwargs": {}}, "type": "IOAgent"},
]
LABEL = {"lab/a(CoT)": AGENTS[0], "lab/b(IO)": AGENTS[1]}
ACTION = {"C": "PrisonersDilemmaAction.COOPERATE", "D": "PrisonersDilemmaAction.DEFECT"}


def _write_dir(
    path: Path,
    mechanism: dict,
    records: list,
    profiles: dict,
    discount: float,
    extra: dict | None = None,
) -> Path:
    path.mkdir()
    config = {
        "game": {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": PD_TABLE}},
        "mechanism": mechanism,
        "agents": AGENTS,
        "name": path.name,
    }
    (path / "config.json").write_text(json.dumps(config))
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    mp = {
        "discount": discount,
        "profile": [
            {
                "players": [{**LABEL[a], "player_id": i + 1} for i, a in enumerate(seating)],
                "payoffs": [rounds],
            }
            for seating, rounds in profiles.items()
        ],
    }
    (path / "matchup_payoffs.json").write_text(json.dumps(mp))
    for name, data in (extra or {}).items():
        (path / name).write_text(json.dumps(data))
    return path


def _move(agent: str, seat: int, action: str, points: float, trace: str) -> dict:
    return {
        "player": f"{agent}#P{seat}",
        "action": ACTION[action],
        "points": points,
        "trace_id": trace,
    }


def test_repetition_directory_is_scored_with_coopeval_weights(tmp_path: Path) -> None:
    plays = {"lab/a(CoT)": "CCC", "lab/b(IO)": "DCD"}  # fixed action sequences
    records, profiles, n = [], {}, 0
    for s1, s2 in [(a, b) for a in plays for b in plays]:
        rounds, points = [], []
        for t in range(3):
            x, y = plays[s1][t], plays[s2][t]
            p = PD_TABLE[x + y]
            n += 2
            rounds.append([_move(s1, 1, x, p[0], f"t{n}"), _move(s2, 2, y, p[1], f"t{n + 1}")])
            points.append(p)
        records.append(rounds)
        profiles[(s1, s2)] = points
    directory = _write_dir(
        tmp_path / "rep",
        {"type": "Repetition", "kwargs": {"num_rounds": 3, "discount": 0.8, "lookup_depth": 2}},
        records,
        profiles,
        0.8,
    )
    store = Store(tmp_path / "coop.db")
    summary = import_coopeval(directory, store)
    assert summary["matchup_payoffs"] == "agree"
    weights = [0.2, 0.16, 0.64]  # (1-d), (1-d)d, d^2 for the last round
    row = store.db.execute(
        """select s.payoff from seats s join matches m on m.id = s.match_id
           join seats o on o.match_id = m.id and o.seat = 1
           where s.seat = 0 and s.agent = 'lab/a(CoT)' and o.agent = 'lab/b(IO)'"""
    ).fetchone()
    assert row[0] == pytest.approx(sum(w * p for w, p in zip(weights, [0, 2, 0], strict=True)))
    cond = json.loads(store.db.execute("select condition from matches limit 1").fetchone()[0])
    assert cond == {"rounds": 3, "continuation": 0.8, "history": 2}
    assert store.db.execute("select count(*) from rounds").fetchone()[0] == 4 * 3 * 2
    exp = _experiment(build_report(store, summary["run_id"]))
    a_vs_b = sum(w * p for w, p in zip(weights, [0, 2, 0], strict=True))
    b_vs_a = sum(w * p for w, p in zip(weights, [3, 2, 3], strict=True))
    assert exp["matchup_matrix"]["lab/a(CoT)"]["lab/b(IO)"] == pytest.approx(a_vs_b)
    assert exp["matchup_matrix"]["lab/b(IO)"]["lab/a(CoT)"] == pytest.approx(b_vs_a)
    # no game log: decisions are still stored (one per trace id), without prompts
    assert store.db.execute("select count(*), sum(prompt = '[]') from decisions").fetchone() == (
        24,
        24,
    )
    store.close()


def test_contracting_directory_and_disagreeing_matchup_table(tmp_path: Path) -> None:
    seatings = [(a, b) for a in LABEL for b in LABEL]
    records, profiles = [], {}
    for k, (s1, s2) in enumerate(seatings):
        records.append(
            [
                {
                    "votes": [
                        {
                            "voter_name": f"{s1}#P1",
                            "votes": {"1": True, "2": False},
                            "trace_id": f"v{k}a",
                        },
                        {
                            "voter_name": f"{s2}#P2",
                            "votes": {"1": True, "2": True},
                            "trace_id": f"v{k}b",
                        },
                    ],
                    "selected_contract_index": 1,
                    "selected_contract_designer_name": f"{s1}#P1",
                    "signatures": {
                        f"{s1}#P1": {"trace_id": f"s{k}a", "agree": True},
                        f"{s2}#P2": {"trace_id": f"s{k}b", "agree": k != 3},
                    },
                    "all_signed": k != 3,
                    "moves": [_move(s1, 1, "C", 2, f"p{k}a"), _move(s2, 2, "C", 2, f"p{k}b")],
                }
            ]
        )
        profiles[(s1, s2)] = [[2, 2]]
    profiles[seatings[0]] = [[2, 1]]  # CoopEval's table says otherwise for one seating
    designs = {
        f"{a}#P{s}": {"trace_id": f"d{a}{s}", "contract": {ACTION["C"]: 1, ACTION["D"]: -1}}
        for a in LABEL
        for s in (1, 2)
    }
    directory = _write_dir(
        tmp_path / "con",
        {"type": "Contracting", "kwargs": {}},
        records,
        profiles,
        1.0,
        {"contract_design.json": designs},
    )
    store = Store(tmp_path / "coop.db")
    summary = import_coopeval(directory, store)
    assert summary["matchup_payoffs"] == "disagree"
    phases = dict(
        store.db.execute("select phase, count(*) from decisions group by phase").fetchall()
    )
    assert phases == {"play": 8, "vote": 8, "sign": 8, "propose": 4}
    contract = store.db.execute(
        "select parsed from decisions where phase = 'propose' limit 1"
    ).fetchone()
    assert json.loads(contract[0]) == {"A0": 1, "A1": -1}
    sign = json.loads(
        store.db.execute(
            "select p.info from phases p join matches m on m.id = p.match_id "
            "where p.phase = 'sign' and m.match_key = 'coopeval:4'"
        ).fetchone()[0]
    )
    # our own Contracting's shape (a flag per seat, in seat order), so the vote statistics
    # read it; CoopEval's all_signed is kept beside it
    assert sign == {"signed": [True, False], "active": False, "all_signed": False}
    assert store.db.execute("select mechanism, matchup from matches limit 1").fetchone() == (
        "contracting",
        "cross",
    )
    from coop_tui.report import build_report

    run_id = store.db.execute("select id from runs").fetchone()[0]
    votes = build_report(store, run_id)["mechanisms"]["votes"]  # raised KeyError before
    assert votes and all(v["sign_rate"] is not None for v in votes)
    store.close()


def test_imported_mediation_feeds_the_ballot_analysis(tmp_path: Path) -> None:
    from coop_tui.report import build_report

    store, summary = _imported(tmp_path, TRUST)
    report = build_report(store, summary["run_id"])
    votes = report["mechanisms"]["votes"]
    assert {v["agent"] for v in votes} == set(
        report["experiments"][0]["population"]
    )
    # exactly one adopted mediator per match, and every seat's plays counted
    assert sum(v["adopted"] for v in votes) == 36
    assert all(v["delegate_rate"] is not None for v in votes)
    assert len(report["mechanisms"]["design_stability"]) == len(votes)
    store.close()
