"""Every Traveler's Dilemma and Reputation decision survives ``import coopeval``.

The published sample has neither shape with its game log, so the tournaments here are
written in CoopEval's file formats as its code writes them:

* Traveler's Dilemma lists its actions as ``- A0: correspond to the number 2`` (the
  claim follows the label), and its moves name ``TravellersDilemmaAction.CLAIM_k``;
* Reputation logs the whole tournament as one ``records.jsonl`` line: a list of games
  in play order, each the list of its players' moves (``<agent>#P<seat>``, action,
  points, trace id); a round is one game per player of each seat.

Each move's prompt and answer sit in ``game_log.txt`` under its trace id. The Mediation
× Public Goods tournament has no game log, as in CoopEval's published study: each move
carries its answer in ``records.jsonl`` (``response``) and ``mediated`` says whether the
player delegated (label A2, the action after the game's two).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from coop_tui.importers.coopeval import import_coopeval
from coop_tui.migrations import answer_rule_broken
from coop_tui.report import build_report
from coop_tui.store import Store

AGENTS = [
    {"llm": {"model": "x/alpha"}, "type": "CoTAgent"},
    {"llm": {"model": "x/beta"}, "type": "IOAgent"},
]
LABELS = ["x/alpha(CoT)", "x/beta(IO)"]
PD = {"type": "PrisonersDilemma", "kwargs": {"payoff_matrix": {
    "CC": [2, 2], "CD": [0, 3], "DC": [3, 0], "DD": [1, 1]}}}
TD = {"type": "TravellersDilemma",
      "kwargs": {"min_claim": 2, "num_actions": 4, "claim_spacing": 1, "bonus": 2.0}}


def _prompt(actions: list[str], extra: str = "") -> str:
    block = "\n".join(f"- {a}" for a in actions)
    return (
        "Setup:\nYou are playing a decision-making game with another player.\n\n"
        f"Actions available to each player:\n{block}\n\nBasic game rules:\n1. ...\n"
        f"{extra}\nFormat requirement:\nReturn exactly one JSON object, for example:\n"
        '{"A0": <INT>, "A1": <INT>, ...}\n'
    )


def _log(entries: list[tuple[str, str, str, str]]) -> str:
    out = []
    for trace, player, prompt, response in entries:
        stamp = "2026-01-19 21:00:21"
        out.append(f"===== Prompt [ID: {trace}] [{stamp}] =====\nagent: {player}\nprompt:\n{prompt}\n")
        out.append(f"===== Response [ID: {trace}] [{stamp}] =====\nagent: {player}\n"
                   f"response:\n{response}\n")
    return "\n".join(out)


def _td_points(a: int, b: int) -> tuple[float, float]:
    x, y = 2 + a, 2 + b
    if x == y:
        return float(x), float(y)
    low = min(x, y)
    return (low + 2.0, low - 2.0) if x < y else (low - 2.0, low + 2.0)


def travelers_tournament(root: Path) -> Path:
    """NoMechanism Traveler's Dilemma: every ordered seating, alpha claims 5, beta 2."""
    d = root / "no_mechanism_travellers_dilemma"
    d.mkdir(parents=True)
    claims = {0: 3, 1: 0}  # agent -> CLAIM_k drawn
    answers = {0: '{"A0": 0, "A1": 10, "A2": 20, "A3": 70}', 1: '{"A0": 100, "A1": 0, "A2": 0, "A3": 0}'}
    actions = [f"A{k}: correspond to the number {2 + k}" for k in range(4)]
    records, entries = [], []
    for n, (a, b) in enumerate(itertools.product([0, 1], repeat=2)):
        pa, pb = _td_points(claims[a], claims[b])
        line = []
        for seat, agent, pts in ((1, a, pa), (2, b, pb)):
            trace = f"td{n}{seat:02d}aa"
            player = f"{LABELS[agent]}#P{seat}"
            line.append({"player": player, "action": f"TravellersDilemmaAction.CLAIM_{claims[agent]}",
                         "points": pts, "trace_id": trace})
            entries.append((trace, player, _prompt(actions), f"I pick.\n{answers[agent]}"))
        records.append(line)
    (d / "config.json").write_text(json.dumps({"game": TD, "mechanism": {"type": "NoMechanism", "kwargs": {}},
                                               "agents": AGENTS, "name": d.name}))
    (d / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (d / "game_log.txt").write_text(_log(entries))
    return d


def reputation_tournament(root: Path, *, with_payoffs: bool) -> Path:
    """ReputationFirstOrder on the Prisoner's Dilemma: 4 players (2 agents x 2 seats),
    3 rounds of 2 games. alpha cooperates, beta defects."""
    d = root / "reputation_first_order_prisoners_dilemma"
    d.mkdir(parents=True)
    pay = {(0, 0): (2, 2), (0, 1): (0, 3), (1, 0): (3, 0), (1, 1): (1, 1)}
    letter = {0: "COOPERATE", 1: "DEFECT"}
    answers = {0: '{"A0": 90, "A1": 10}', 1: '{"A0": 0, "A1": 100}'}
    schedule = [[(0, 1), (1, 0)], [(0, 0), (1, 1)], [(1, 0), (0, 1)]]  # P1 agent, P2 agent
    games, entries = [], []
    points: dict[tuple[int, int], list[float]] = {(a, s): [] for a in (0, 1) for s in (1, 2)}
    for t, round_games in enumerate(schedule, 1):
        for g, (a, b) in enumerate(round_games):
            pa, pb = pay[(a, b)]
            game = []
            for seat, agent, pts in ((1, a, pa), (2, b, pb)):
                trace = f"r{t}g{g}s{seat}ab"
                player = f"{LABELS[agent]}#P{seat}"
                game.append({"player": player, "action": f"PrisonersDilemmaAction.{letter[agent]}",
                             "points": pts, "trace_id": trace})
                points[(agent, seat)].append(float(pts))
                entries.append((trace, player, _prompt(["A0", "A1"], "Here is the twist:\n..."),
                                f"Round {t}.\n{answers[agent]}"))
            games.append(game)
    mech = {"type": "ReputationFirstOrder", "kwargs": {
        "num_rounds": 3, "discount": 0.8, "lookup_depth": 3, "include_prior_distributions": False,
        "max_recursion_depth": 1}}
    (d / "config.json").write_text(json.dumps({"game": PD, "mechanism": mech, "agents": AGENTS,
                                               "name": d.name}))
    (d / "records.jsonl").write_text(json.dumps(games) + "\n")
    (d / "game_log.txt").write_text(_log(entries))
    if with_payoffs:
        profile = [{"player": {**AGENTS[a], "player_id": s}, "points": pts}
                   for (a, s), pts in points.items()]
        (d / "matchup_payoffs.json").write_text(json.dumps({"discount": 0.8, "profile": profile}))
    return d


PG = {"type": "PublicGoods", "kwargs": {"num_players": 3, "multiplier": 1.5}}
DELEGATE = '{"A0": 0, "A1": 0, "A2": 100}'
MIXED = '{"A0": 20, "A1": 80, "A2": 0}'
UNREADABLE = "I would rather not say."


def _pg_points(actions: list[str]) -> list[float]:
    k = actions.count("CONTRIBUTE")
    return [1.5 * k / 3 + (1.0 if a == "FREE_RIDE" else 0.0) for a in actions]


def mediation_public_goods_tournament(root: Path) -> Path:
    """Mediation on 3-player Public Goods, no game log: alpha always delegates (A2),
    beta mixes over A0 / A1, and beta's answer in the last match is unreadable."""
    d = root / "mediation_public_goods"
    d.mkdir(parents=True)
    seatings = [(0, 0, 1), (1, 0, 0), (0, 1, 1)]
    design = [[1, "PublicGoodsAction.FREE_RIDE"], [2, "PublicGoodsAction.FREE_RIDE"],
              [3, "PublicGoodsAction.CONTRIBUTE"]]
    designs = {f"{LABELS[a]}#P{seat}": {"trace_id": f"d{a}{seat}000000"[:8], "mediator": design}
               for a in (0, 1) for seat in (1, 2, 3)}
    records = []
    for n, seating in enumerate(seatings):
        delegates = seating.count(0)
        mediated = design[delegates - 1][1].rsplit(".", 1)[1]
        actions = [mediated if a == 0 else "FREE_RIDE" for a in seating]
        points = _pg_points(actions)
        moves = []
        for seat, (agent, action, pts) in enumerate(zip(seating, actions, points, strict=True), 1):
            response = DELEGATE if agent == 0 else MIXED
            if agent == 1 and n == len(seatings) - 1 and seat == 3:
                response = UNREADABLE
            moves.append({"player": f"{LABELS[agent]}#P{seat}",
                          "action": f"PublicGoodsAction.{action}", "points": pts,
                          "response": f"Thinking it over.\n{response}",
                          "trace_id": f"m{n}s{seat}abcd", "mediated": agent == 0})
        votes = [{"voter_name": f"{LABELS[a]}#P{seat}", "votes": {"1": True, "2": False, "3": True},
                  "trace_id": f"v{n}s{seat}abcd"} for seat, a in enumerate(seating, 1)]
        records.append([{"votes": votes, "selected_mediator_index": 1,
                         "selected_mediator_designer_name": f"{LABELS[seating[0]]}#P1",
                         "moves": moves}])
    (d / "config.json").write_text(json.dumps({
        "game": PG, "mechanism": {"type": "Mediation", "kwargs": {}}, "agents": AGENTS,
        "name": d.name}))
    (d / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (d / "mediator_design.json").write_text(json.dumps(designs))
    return d


def _play_decisions(store: Store, run_id: str) -> list[dict]:
    rows = store.db.execute(
        """select d.agent, d.round, d.seat, d.action, d.parsed, d.distribution, d.coop_prob,
                  d.error, d.labels, d.response, d.valid
           from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'play' order by d.match_id, d.round""", [run_id]).fetchall()
    keys = ["agent", "round", "seat", "action", "parsed", "distribution", "coop_prob", "error",
            "labels", "response", "valid"]
    return [dict(zip(keys, r, strict=True)) for r in rows]


def test_travelers_decisions_keep_their_labels_and_parsed_answers(tmp_path: Path) -> None:
    store = Store(tmp_path / "td.db")
    summary = import_coopeval(travelers_tournament(tmp_path), store)
    decisions = _play_decisions(store, summary["run_id"])
    assert len(decisions) == 8
    for d in decisions:
        assert d["error"] is None, d["error"]  # was "coop-tui's parser disagrees with CoopEval"
        assert json.loads(d["labels"]) == ["A0", "A1", "A2", "A3"]  # was ["A0:"]
        dist = json.loads(d["distribution"])
        if d["agent"] == LABELS[0]:
            assert json.loads(d["parsed"]) == {"A0": 0.0, "A1": 0.1, "A2": 0.2, "A3": 0.7}
            # our Traveler's lists claims low to high: A3 (claim 5) is the cooperative action
            assert dist == pytest.approx([0.0, 0.1, 0.2, 0.7])
            assert d["coop_prob"] == pytest.approx(0.7) and d["action"] == 3
        else:
            assert dist == pytest.approx([1.0, 0.0, 0.0, 0.0])
            assert d["coop_prob"] == 0.0 and d["action"] == 0
    # action frequencies per agent come out of the summaries the report reads
    report = build_report(store, summary["run_id"])
    assert report["tables"]  # population metrics still there
    store.close()


@pytest.mark.parametrize("with_payoffs", [True, False])
def test_reputation_decisions_are_imported_with_parsed_answers(tmp_path: Path, with_payoffs: bool) -> None:
    store = Store(tmp_path / "rep.db")
    summary = import_coopeval(reputation_tournament(tmp_path, with_payoffs=with_payoffs), store)
    assert summary["matches"] == 4  # one per player, as before
    assert summary["decisions"] == 12 and summary["decisions_with_log"] == 12  # was 0
    decisions = _play_decisions(store, summary["run_id"])
    assert sorted((d["agent"], d["round"]) for d in decisions) == sorted(
        (LABELS[a], t) for a in (0, 1) for _ in (1, 2) for t in (1, 2, 3))
    for d in decisions:
        assert d["seat"] == 0 and d["error"] is None
        if d["agent"] == LABELS[0]:
            assert json.loads(d["parsed"]) == {"A0": 0.9, "A1": 0.1}
            assert d["coop_prob"] == pytest.approx(0.9) and d["action"] == 0
        else:
            assert d["coop_prob"] == 0.0 and d["action"] == 1
        assert d["response"].startswith(f"Round {d['round']}.")
    # each player's rounds: the action played, its points, its position and co-player
    rounds = store.db.execute(
        """select s.agent, r.round, r.action, r.payoff, r.cooperated, r.info
           from rounds r join matches m on m.id = r.match_id
           join seats s on s.match_id = r.match_id and s.seat = r.seat
           where m.run_id = ? order by m.id, r.round""", [summary["run_id"]]).fetchall()
    assert len(rounds) == 12
    alpha_p1 = [r for r in rounds if r[0] == LABELS[0] and json.loads(r[5])["position"] == 1]
    assert [(r[1], r[3]) for r in alpha_p1] == [(1, 0.0), (2, 2.0), (3, 0.0)]
    assert json.loads(alpha_p1[0][5])["co_players"] == [f"{LABELS[1]}#P2"]
    # the Mean still comes from the payoffs (δ-weighted per player, mean over seats)
    report = build_report(store, summary["run_id"])
    mean = {c["agent"]: c["value"] for c in report["tables"]
            if c["table"] == "prisoners" and c["metric"] == "mean"}
    w = [0.2, 0.16, 0.64]  # (1-d), (1-d)d, d^2 for three rounds
    # alpha's points are 0, 2, 0 in both seats (met beta, itself, beta)
    assert mean[LABELS[0]] == pytest.approx(0 * w[0] + 2 * w[1] + 0 * w[2])
    store.close()


def test_mediation_public_goods_without_a_game_log_parses_the_delegate_action(
    tmp_path: Path,
) -> None:
    """Every answer is parsed with the delegate label A2 (was: 0 parsed, "unknown key 'A2'",
    stored valid); the one unreadable answer is stored invalid with its reason."""
    store = Store(tmp_path / "med.db")
    summary = import_coopeval(mediation_public_goods_tournament(tmp_path), store)
    decisions = _play_decisions(store, summary["run_id"])
    assert len(decisions) == 9
    unreadable = [d for d in decisions if d["response"].endswith(UNREADABLE)]
    assert len(unreadable) == 1
    assert unreadable[0]["valid"] == 0 and unreadable[0]["parsed"] is None
    assert "parser disagrees with CoopEval" in unreadable[0]["error"]
    for d in decisions:
        if d in unreadable:
            continue
        assert d["valid"] == 1 and d["error"] is None, d["error"]
        assert json.loads(d["labels"]) == ["A0", "A1", "A2"]
        if d["agent"] == LABELS[0]:  # delegated: the stored action is the delegate action
            assert json.loads(d["parsed"]) == {"A0": 0.0, "A1": 0.0, "A2": 1.0}
            assert d["action"] == 2 and d["coop_prob"] == 0.0
        else:
            assert json.loads(d["parsed"]) == {"A0": 0.2, "A1": 0.8, "A2": 0.0}
            assert d["coop_prob"] == pytest.approx(0.2) and d["action"] == 1
    # every imported decision keeps the store's rule: parsed, or invalid with its reason
    assert store.db.execute(f"select count(*) from decisions where {answer_rule_broken()}"
                            ).fetchone()[0] == 0
    assert store.db.execute("select count(*) from decisions").fetchone()[0] == 9 + 9 + 6
    store.close()
