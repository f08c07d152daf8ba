"""The importer takes every CoopEval game and mechanism; report survives Contracting.

Small tournaments written here in CoopEval's file formats: Public Goods with 3 players,
Traveler's Dilemma and Matching Pennies known only by ``matchup_payoffs.json``, and a
Contracting tournament with records (its signatures once crashed the vote statistics).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from coop_tui.cli import main

AGENTS = [
    {"llm": {"model": "x/alpha"}, "type": "CoTAgent"},
    {"llm": {"model": "x/beta"}, "type": "IOAgent"},
]
LABELS = ["x/alpha(CoT)", "x/beta(IO)"]


def _tournament(root: Path, name: str, game: dict, mechanism: dict, profiles: list) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(
        {"game": game, "mechanism": mechanism, "agents": AGENTS, "name": name}))
    (d / "matchup_payoffs.json").write_text(json.dumps({"discount": 1.0, "profile": profiles}))
    return d


def _player(i: int, seat: int) -> dict:
    return {**AGENTS[i], "player_id": seat + 1}


def _report(db: Path, capsys) -> dict:
    assert main(["report", "--json", "--db", str(db)]) == 0
    return json.loads(capsys.readouterr().out)


def _cells(report: dict, table: str, metric: str) -> dict[str, dict]:
    return {c["agent"]: c for c in report["tables"] if (c["table"], c["metric"]) == (table, metric)}


def test_public_goods_with_three_players(tmp_path, capsys):
    # alpha contributes, beta keeps: with k contributors a contributor gets 1.5k/3.
    profiles = []
    for seating in itertools.product([0, 1], repeat=3):
        k = seating.count(0)
        pay = [1.5 * k / 3 + (1.0 if a == 1 else 0.0) for a in seating]
        profiles.append({"players": [_player(a, s) for s, a in enumerate(seating)],
                         "payoffs": [[pay]]})
    d = _tournament(tmp_path, "no_mechanism_public_goods",
                    {"type": "PublicGoods", "kwargs": {"num_players": 3, "multiplier": 1.5}},
                    {"type": "NoMechanism", "kwargs": {}}, profiles)
    db = tmp_path / "pg.db"
    assert main(["import", "coopeval", str(d), "--db", str(db)]) == 0
    capsys.readouterr()
    report = _report(db, capsys)
    mean = _cells(report, "public_good", "mean")
    # alpha: (1.5 + 2 x 1.0 + 0.5) / 4 over co-player pairs; beta: (2 + 2 x 1.5 + 1) / 4
    assert mean["x/alpha(CoT)"]["value"] == pytest.approx(1.0)
    assert mean["x/beta(IO)"]["value"] == pytest.approx(1.5)
    fitness = _cells(report, "public_good", "fitness")
    assert fitness["x/beta(IO)"]["value"] == pytest.approx(1.0, abs=1e-3)  # beta takes over
    assert fitness["average"]["value"] == pytest.approx(1.0, abs=1e-3)
    agg = _cells(report, "all", "mean")["average"]  # 0 = all keep (1), 1 = all give (1.5)
    assert agg["value"] == pytest.approx((1.25 - 1.0) / 0.5)


def test_travelers_dilemma_and_matching_pennies(tmp_path, capsys):
    td = []  # alpha claims 5, beta claims 2: the lower claim wins the bonus of 2
    claims = {0: 5, 1: 2}
    for a, b in itertools.product([0, 1], repeat=2):
        x, y = claims[a], claims[b]
        pay = [x, y] if x == y else ([x + 2, x - 2] if x < y else [y - 2, y + 2])
        td.append({"players": [_player(a, 0), _player(b, 1)], "payoffs": [[pay]]})
    _tournament(tmp_path / "run1", "no_mechanism_travellers_dilemma",
                {"type": "TravellersDilemma",
                 "kwargs": {"min_claim": 2, "num_actions": 4, "claim_spacing": 1, "bonus": 2.0}},
                {"type": "NoMechanism", "kwargs": {}}, td)
    mp = [{"players": [_player(a, 0), _player(b, 1)], "payoffs": [[[1, -1]], [[-1, 1]]]}
          for a, b in itertools.product([0, 1], repeat=2)]
    _tournament(tmp_path / "run1", "no_mechanism_matching_pennies",
                {"type": "MatchingPennies", "kwargs": {"payoff_matrix": {
                    "HH": [1, -1], "HT": [-1, 1], "TH": [-1, 1], "TT": [1, -1]}}},
                {"type": "NoMechanism", "kwargs": {}}, mp)
    db = tmp_path / "two.db"
    assert main(["import", "coopeval", str(tmp_path / "run1"), "--db", str(db)]) == 0
    capsys.readouterr()
    report = _report(db, capsys)
    mean = _cells(report, "travelers", "mean")
    assert mean["x/alpha(CoT)"]["value"] == pytest.approx((5 + 0) / 2)
    assert mean["x/beta(IO)"]["value"] == pytest.approx((4 + 2) / 2)
    pennies = _cells(report, "matching_pennies", "mean")
    assert pennies["average"]["value"] == pytest.approx(0.0)  # two repeats cancel out
    assert "matching_pennies" not in {c["table"] for c in report["tables"]
                                      if c["table"] == "all"}


def test_reputation_players_give_mean_only(tmp_path, capsys):
    d = tmp_path / "reputation_prisoners_dilemma"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "game": {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": {
            "CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}}},
        "mechanism": {"type": "Reputation", "kwargs": {"num_rounds": 3, "discount": 0.5}},
        "agents": AGENTS}))
    points = {(0, 0): [2, 2, 2], (0, 1): [0, 2, 2], (1, 0): [3, 1, 1], (1, 1): [1, 1, 1]}
    (d / "matchup_payoffs.json").write_text(json.dumps({"discount": 0.5, "profile": [
        {"player": _player(a, s), "points": p} for (a, s), p in points.items()]}))
    db = tmp_path / "rep.db"
    assert main(["import", "coopeval", str(d), "--db", str(db)]) == 0
    capsys.readouterr()
    report = _report(db, capsys)
    assert {c["metric"] for c in report["tables"]} == {"mean"}
    mean = _cells(report, "prisoners", "mean")
    weights = [0.5, 0.25, 0.25]  # (1 - d) d^(t-1), the last round d^(T-1)

    def value(p):
        return sum(w * x for w, x in zip(weights, p, strict=True))

    assert mean["x/alpha(CoT)"]["value"] == pytest.approx((value([2, 2, 2]) + value([0, 2, 2])) / 2)
    assert mean["x/beta(IO)"]["value"] == pytest.approx((value([3, 1, 1]) + value([1, 1, 1])) / 2)
    assert {c["order"] for c in report["tables"]} == {"higher"}


def _contracting_record(a: int, b: int, signed: tuple[bool, bool]) -> list:
    p1, p2 = f"{LABELS[a]}#P1", f"{LABELS[b]}#P2"
    both = all(signed)
    return [{
        "moves": [
            {"player": p1, "action": "Action.COOPERATE", "points": 2.0 if both else 1.0},
            {"player": p2, "action": "Action.COOPERATE" if both else "Action.DEFECT",
             "points": 2.0 if both else 1.0},
        ],
        "votes": [{"voter_name": p1, "votes": {"1": True, "2": False}},
                  {"voter_name": p2, "votes": {"1": True, "2": True}}],
        "selected_contract_index": 1,
        "signatures": {p1: {"agree": signed[0]}, p2: {"agree": signed[1]}},
        "all_signed": both,
    }]


def test_contracting_records_report_without_crashing(tmp_path, capsys):
    d = tmp_path / "contracting_prisoners_dilemma"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "game": {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": {
            "CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}}},
        "mechanism": {"type": "Contracting", "kwargs": {}}, "agents": AGENTS}))
    lines = [_contracting_record(a, b, (a == 0 or a == b, b == 0 or a == b))
             for a, b in itertools.product([0, 1], repeat=2)]
    (d / "records.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    db = tmp_path / "c.db"
    assert main(["import", "coopeval", str(d), "--db", str(db)]) == 0
    capsys.readouterr()
    report = _report(db, capsys)
    votes = {v["agent"]: v for v in report["mechanisms"]["votes"]}
    # alpha signs every contract; beta only against itself (2 of its 4 seats)
    assert votes["x/alpha(CoT)"]["sign_rate"] == pytest.approx(1.0)
    assert votes["x/beta(IO)"]["sign_rate"] == pytest.approx(0.5)
    # binding when both sign: alpha-alpha (both seats) and beta-beta; alpha plays 4 seats
    assert votes["x/alpha(CoT)"]["active_rate"] == pytest.approx(0.5)
    assert main(["report", "--db", str(db)]) == 0  # the text report too


def test_reputation_records_read_like_the_payoff_file(tmp_path, capsys):
    config = {
        "game": {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": {
            "CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}}},
        "mechanism": {"type": "ReputationFirstOrder", "kwargs": {"num_rounds": 3, "discount": 0.5}},
        "agents": AGENTS}
    points = {(0, 0): [2, 2, 2], (0, 1): [0, 2, 2], (1, 0): [3, 1, 1], (1, 1): [1, 1, 1]}
    with_file = tmp_path / "a" / "reputation_first_order_prisoners_dilemma"
    with_file.mkdir(parents=True)
    (with_file / "config.json").write_text(json.dumps(config))
    (with_file / "matchup_payoffs.json").write_text(json.dumps({"discount": 0.5, "profile": [
        {"player": _player(a, s), "points": p} for (a, s), p in points.items()]}))
    with_records = tmp_path / "b" / "reputation_first_order_prisoners_dilemma"
    with_records.mkdir(parents=True)
    (with_records / "config.json").write_text(json.dumps(config))

    def move(a: int, s: int, t: int) -> dict:
        return {"player": f"{LABELS[a]}#P{s + 1}", "action": "Action.COOPERATE",
                "points": points[(a, s)][t]}

    games = [[[move(0, 0, t), move(1, 1, t)], [move(1, 0, t), move(0, 1, t)]] for t in range(3)]
    (with_records / "records.jsonl").write_text(json.dumps(games) + "\n")
    means = []
    for d in (with_file, with_records):
        db = d.parent / "r.db"
        assert main(["import", "coopeval", str(d), "--db", str(db)]) == 0
        capsys.readouterr()
        means.append({a: c["value"] for a, c in _cells(_report(db, capsys), "prisoners", "mean").items()})
    assert means[0] == pytest.approx(means[1])
    assert set(means[0]) == {"average", *LABELS}


def test_travelers_and_public_goods_records_map_actions_by_meaning(tmp_path, capsys):
    """CoopEval's CLAIM_k is the claim min + k and its label Ak; CONTRIBUTE is Contribute."""
    from coop_tui.store import Store

    td = tmp_path / "no_mechanism_travellers_dilemma"
    td.mkdir()
    (td / "config.json").write_text(json.dumps({
        "game": {"type": "TravellersDilemma",
                 "kwargs": {"min_claim": 2, "num_actions": 4, "claim_spacing": 1, "bonus": 2.0}},
        "mechanism": {"type": "NoMechanism", "kwargs": {}}, "agents": AGENTS}))
    claim = {0: 3, 1: 0}  # alpha claims 5 (CLAIM_3), beta claims 2 (CLAIM_0)
    answer = {0: '{"A0": 0, "A1": 0, "A2": 0, "A3": 100}', 1: '{"A0": 100, "A1": 0, "A2": 0, "A3": 0}'}
    lines = []
    for a, b in itertools.product([0, 1], repeat=2):
        x, y = 2 + claim[a], 2 + claim[b]
        pay = [x, y] if x == y else ([x + 2, x - 2] if x < y else [y - 2, y + 2])
        lines.append([
            {"player": f"{LABELS[a]}#P1", "action": f"TravellersDilemmaAction.CLAIM_{claim[a]}",
             "points": pay[0], "response": answer[a], "trace_id": f"t{a}{b}1"},
            {"player": f"{LABELS[b]}#P2", "action": f"TravellersDilemmaAction.CLAIM_{claim[b]}",
             "points": pay[1], "response": answer[b], "trace_id": f"t{a}{b}2"},
        ])
    (td / "records.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    db = tmp_path / "td.db"
    assert main(["import", "coopeval", str(td), "--db", str(db)]) == 0
    capsys.readouterr()
    store = Store(db)
    try:
        spec = json.loads(store.db.execute("select spec from game_specs limit 1").fetchone()[0])
        names = spec["action_names"][0]
        played = store.db.execute(
            "select s.agent, r.action, r.payoff from rounds r join seats s "
            "on s.match_id = r.match_id and s.seat = r.seat").fetchall()
        assert {(agent, names[action]) for agent, action, _ in played} == {
            ("x/alpha(CoT)", "Claim 5"), ("x/beta(IO)", "Claim 2")}
        rows = store.db.execute(
            "select agent, distribution, coop_prob, label_map from decisions").fetchall()
    finally:
        store.close()
    assert len(rows) == 8
    for agent, dist, coop, mapping in rows:
        dist = json.loads(dist)
        want = "Claim 5" if agent == "x/alpha(CoT)" else "Claim 2"
        assert dist[names.index(want)] == pytest.approx(1.0)  # per game action, not per label
        assert coop == pytest.approx(1.0 if want == "Claim 5" else 0.0)
        assert [names[i] for i in json.loads(mapping)] == ["Claim 2", "Claim 3", "Claim 4", "Claim 5"]

    pg = tmp_path / "no_mechanism_public_goods"
    pg.mkdir()
    (pg / "config.json").write_text(json.dumps({
        "game": {"type": "PublicGoods", "kwargs": {"num_players": 3, "multiplier": 1.5}},
        "mechanism": {"type": "NoMechanism", "kwargs": {}}, "agents": AGENTS}))
    lines = []
    for seating in itertools.product([0, 1], repeat=3):
        k = seating.count(0)
        lines.append([{"player": f"{LABELS[a]}#P{s + 1}",
                       "action": "PublicGoodsAction.CONTRIBUTE" if a == 0 else "PublicGoodsAction.FREE_RIDE",
                       "points": 1.5 * k / 3 + (0.0 if a == 0 else 1.0)} for s, a in enumerate(seating)])
    (pg / "records.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    db = tmp_path / "pg.db"
    assert main(["import", "coopeval", str(pg), "--db", str(db)]) == 0
    capsys.readouterr()
    store = Store(db)
    try:
        coop = dict(store.db.execute(
            "select s.agent, avg(r.cooperated) from rounds r join seats s "
            "on s.match_id = r.match_id and s.seat = r.seat group by s.agent").fetchall())
    finally:
        store.close()
    assert coop == {"x/alpha(CoT)": 1.0, "x/beta(IO)": 0.0}
    mean = _cells(_report(db, capsys), "public_good", "mean")
    assert mean["x/alpha(CoT)"]["value"] == pytest.approx(1.0)
