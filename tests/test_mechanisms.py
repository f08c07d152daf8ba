"""Repetition, Reputation, Mediation and Contracting as short expected transcripts.

Every match runs through the real engine, sweep runner and SQLite store, with real
strategy agents; where a mechanism needs an agent that delegates, proposes a contract
with payments or refuses to sign, that agent is an LLM agent talking HTTP to the
loopback server, answering from a script keyed on the prompt it receives.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coop_tui.games import get_game
from coop_tui.mechanisms import mechanism_class
from coop_tui.mechanisms.contracting import contract_game, transfers
from coop_tui.mechanisms.mediation import mediated_game, resolve
from coop_tui.mechanisms.repetition import round_weights
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

C, D = 0, 1  # Prisoner's Dilemma: A0 cooperates, A1 defects

STRATEGIES: dict[str, dict[str, Any]] = {
    "tft": {"strategy": "tit_for_tat"},
    "alld": {"strategy": "always_defect"},
    "allc": {"strategy": "always_cooperate"},
    "alt": {"strategy": "alternator"},
    "grim": {"strategy": "grim_trigger"},
}


def sweep_data(*experiments: dict[str, Any], agents: dict[str, Any] | None = None,
               seed: int = 5) -> dict[str, Any]:
    return {"name": "mech", "seed": seed, "agents": agents or STRATEGIES,
            "experiments": list(experiments)}


async def run(tmp_path: Any, data: dict[str, Any]) -> tuple[Store, list[dict[str, Any]]]:
    store = Store(tmp_path / "mech.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    return store, matches


def phases(store: Store, match_id: str) -> dict[str, dict[str, Any]]:
    rows = store.db.execute("select phase, info from phases where match_id = ?", [match_id])
    return {phase: json.loads(info) for phase, info in rows.fetchall()}


def rounds(store: Store, match_id: str) -> dict[int, dict[int, dict[str, Any]]]:
    """round -> seat -> row (info decoded)."""
    out: dict[int, dict[int, dict[str, Any]]] = {}
    for r in store.rounds(match_id):
        out.setdefault(r["round"], {})[r["seat"]] = {**r, "info": json.loads(r["info"] or "{}")}
    return out


def seat_payoffs(store: Store, match_id: str) -> list[float]:
    return [s["payoff"] for s in store.seats(match_id)]


def pts(x: float) -> str:
    return f"{x:g} point" + ("" if x == 1 else "s")


def prompt_of(decision: Any) -> str:
    """The first user message of a decision (the prompt before any re-ask)."""
    return next(m["content"] for m in decision.prompt if m["role"] == "user")


# ----------------------------------------------------------------- Repetition
def test_repetition_defaults_are_coopeval_and_bad_values_are_explained() -> None:
    params = mechanism_class("repetition").Params()
    assert (params.rounds, params.continuation, params.history, params.payoff) == (15, 0.8, 3, "discounted")
    with pytest.raises(SpecError, match="continuation 1.5 is outside"):
        build_sweep(sweep_data({"game": "prisoners", "mechanism": "repetition", "agents": ["tft"],
                                "continuation": 1.5}), check_keys=False)


def test_discounted_weights_credit_the_tail_to_the_last_round() -> None:
    w = round_weights(4, 0.8, "discounted")
    assert w == pytest.approx([0.2, 0.16, 0.128, 0.512])
    assert sum(w) == pytest.approx(1.0)
    assert round_weights(3, 0.5, "mean") == pytest.approx([1 / 3] * 3)
    assert round_weights(3, 1.0, "discounted") == pytest.approx([1 / 3] * 3)
    assert round_weights(1, 0.8, "discounted") == [1.0]


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_repetition_tft_against_alternator_transcript(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "repetition", "matchup": [["tft", "alt"]],
        "rounds": 5, "continuation": 0.8, "history": 2, "history_payoffs": True,
    }))
    r = rounds(store, match["id"])
    moves = [(r[t][0]["action"], r[t][1]["action"]) for t in range(1, 6)]
    # alternator: C, D, C, D, C; tit for tat echoes it one round late
    assert moves == [(C, C), (C, D), (D, C), (C, D), (D, C)]
    pay = [(r[t][0]["payoff"], r[t][1]["payoff"]) for t in range(1, 6)]
    assert pay == [(2, 2), (0, 3), (3, 0), (0, 3), (3, 0)]
    assert [r[t][0]["cooperated"] for t in range(1, 6)] == [1, 1, 0, 1, 0]
    w = round_weights(5, 0.8, "discounted")
    assert seat_payoffs(store, match["id"]) == pytest.approx(
        [sum(wt * p[0] for wt, p in zip(w, pay, strict=True)),
         sum(wt * p[1] for wt, p in zip(w, pay, strict=True))])
    # the round-4 prompt shows rounds 2 and 3 only (history = 2), in the agent's labels
    d4 = next(d for d in store.decisions(match["id"]) if d.round == 4 and d.seat == 0)
    text = prompt_of(d4)
    assert "80% chance that another round follows" in text
    assert "This is round 4: you have played 3 rounds with this player so far." in text
    assert "- Round 2: you played A0, the other player played A1; you got 0 points." in text
    assert "- Round 3: you played A1, the other player played A0; you got 3 points." in text
    assert "Round 1:" not in text


async def test_repetition_mean_payoff(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "repetition", "matchup": [["grim", "alt"]],
        "rounds": 4, "payoff": "mean",
    }))
    # grim: C then D forever after the alternator's first defection in round 2
    r = rounds(store, match["id"])
    assert [(r[t][0]["action"], r[t][1]["action"]) for t in range(1, 5)] == [(C, C), (C, D), (D, C), (D, D)]
    assert seat_payoffs(store, match["id"]) == pytest.approx([(2 + 0 + 3 + 1) / 4, (2 + 3 + 0 + 1) / 4])


# ----------------------------------------------------------------- Reputation
def test_reputation_population_fits_matchups() -> None:
    data = sweep_data({"game": "prisoners", "mechanism": "reputation", "matchup": "cross",
                       "agents": ["tft", "alld", "allc"], "population": 6, "rounds": 2})
    [cell] = build_sweep(data, check_keys=False).cells
    assert cell.seats == ("tft", "alld", "allc", "tft", "alld", "allc")
    assert cell.matchup == "population"  # one mixed population, not a metagame tournament
    selfplay = build_sweep(sweep_data({"game": "prisoners", "mechanism": "reputation",
                                       "agents": ["tft"], "population": 4}), check_keys=False)
    assert [c.seats for c in selfplay.cells] == [("tft",) * 4]
    with pytest.raises(SpecError, match="multiple of 2"):
        build_sweep(sweep_data({"game": "prisoners", "mechanism": "reputation",
                                "agents": ["tft"], "population": 5}), check_keys=False)
    with pytest.raises(SpecError, match="matchup has 2 agents"):
        build_sweep(sweep_data({"game": "prisoners", "mechanism": "reputation",
                                "matchup": [["tft", "alld"]], "population": 4}), check_keys=False)
    with pytest.raises(SpecError, match="order"):
        build_sweep(sweep_data({"game": "prisoners", "mechanism": "reputation",
                                "agents": ["tft"], "order": "third"}), check_keys=False)


def _pairs(r: dict[int, dict[int, dict[str, Any]]], t: int) -> dict[int, int]:
    """seat -> co-player seat in round t (two-player groups)."""
    groups: dict[int, list[int]] = {}
    for seat, row in r[t].items():
        groups.setdefault(row["info"]["group"], []).append(seat)
    out = {}
    for a, b in groups.values():
        out[a], out[b] = b, a
    return out


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_reputation_first_order_rematches_and_shows_records(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "reputation",
        "matchup": [["alld", "allc", "tft", "tft"]],
        "population": 4, "rounds": 4, "history": 2, "order": "first", "seating": "shuffled",
    }))
    assert len(store.seats(match["id"])) == 4
    r = rounds(store, match["id"])
    assert sorted(r) == [1, 2, 3, 4]
    pairings = [_pairs(r, t) for t in range(1, 5)]
    assert all(sorted(p) == [0, 1, 2, 3] for p in pairings)
    assert len({tuple(sorted(p.items())) for p in pairings}) > 1, "co-players never changed"
    for t in range(1, 5):
        for seat, co in pairings[t - 1].items():
            a, b = r[t][seat]["action"], r[t][co]["action"]
            assert r[t][seat]["payoff"] == {(C, C): 2, (C, D): 0, (D, C): 3, (D, D): 1}[(a, b)]
    # fixed strategies: always defect / always cooperate regardless of partner
    assert {r[t][0]["action"] for t in r} == {D} and {r[t][1]["action"] for t in r} == {C}
    # tit for tat answers its *own* last co-player (it is given its own history)
    for t in range(2, 5):
        for tft in (2, 3):
            last_partner = pairings[t - 2][tft]
            assert r[t][tft]["action"] == r[t - 1][last_partner]["action"]
    # match payoff: discounted per-round payoffs of each agent
    w = round_weights(4, 0.8, "discounted")
    expected = [sum(w[t - 1] * r[t][s]["payoff"] for t in range(1, 5)) for s in range(4)]
    assert seat_payoffs(store, match["id"]) == pytest.approx(expected)
    # the prompt of round 3 shows the agent's and its co-player's last two rounds
    decisions = {(d.round, d.seat): d for d in store.decisions(match["id"])}
    seat = 2
    co = pairings[2][seat]
    text = prompt_of(decisions[(3, seat)])
    assert "population" not in text and "Agent #3" not in text  # CoopEval: "you", no size
    assert f"You play against 1 other agent: Agent #{co + 1}." in text
    for t in (1, 2):
        mine = pairings[t - 1][seat]
        assert (f"- Round {t}: You played A{r[t][seat]['action']} and received "
                f"{pts(r[t][seat]['payoff'])}; Agent #{mine + 1} played "
                f"A{r[t][mine]['action']} and received {pts(r[t][mine]['payoff'])}.") in text
        theirs = pairings[t - 1][co]
        other = "you" if theirs == seat else f"Agent #{theirs + 1}"
        assert (f"- Round {t}: Agent #{co + 1} played A{r[t][co]['action']} and received "
                f"{pts(r[t][co]['payoff'])}; {other} played") in text
    assert f"Past play of Agent #{co + 1}:" in text
    assert "did before that round" not in text
    assert "You have not played this game before." in prompt_of(decisions[(1, 0)])


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_reputation_higher_order_nests_co_players_records(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "reputation",
        "matchup": [["alld", "allc", "tft", "grim"]],
        "population": 4, "rounds": 3, "history": 2, "order": "higher", "seating": "shuffled",
    }))
    r = rounds(store, match["id"])
    pairings = [_pairs(r, t) for t in range(1, 4)]
    decisions = {(d.round, d.seat): d for d in store.decisions(match["id"])}
    seat = 0
    co = pairings[2][seat]
    text = prompt_of(decisions[(3, seat)])
    # the co-player's round-2 entry unfolds what its round-2 partner did in round 1
    partner = pairings[1][co]
    name = "you" if partner == seat else f"Agent #{partner + 1}"
    assert f"What {name} did before that round:" in text
    before = pairings[0][partner]
    subject = "You" if partner == seat else f"Agent #{partner + 1}"
    assert f"    - Round 1: {subject} played A{r[1][partner]['action']}" in text
    assert f"; {'you' if before == seat else f'Agent #{before + 1}'} played" in text
    # round-1 entries have nothing earlier to unfold
    assert "Round 0" not in text


# ----------------------------------------------------------------- Mediation
def test_mediated_game_replaces_delegators_moves() -> None:
    pd = get_game("prisoners")
    plan = {1: D, 2: C}
    assert resolve((2, 2), plan, 2) == (C, C)
    assert resolve((2, C), plan, 2) == (D, C)
    m = mediated_game(pd, plan)
    assert m.action_names[0] == ("Cooperate", "Defect", "Delegate")
    assert m.payoff((2, 2)) == (2, 2) and m.payoff((2, C)) == (3, 0) and m.payoff((D, 2)) == (1, 1)
    assert m.cooperative == pd.cooperative


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_mediation_with_strategies_stores_every_phase(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "mediation", "matchup": [["tft", "alld"]],
        "payoff_view": "resolved", "design_scope": "match",
    }))
    ph = phases(store, match["id"])
    # strategies propose "cooperate whatever the number of delegators" and approve all
    assert all(p["asked_in"] == match["id"] and not p["reused"] for p in ph["propose"]["proposals"].values())
    assert {pid: {k: p[k] for k in ("seat", "plan", "plan_names")}
            for pid, p in ph["propose"]["proposals"].items()} == {
        "M1": {"seat": 0, "plan": {"1": C, "2": C}, "plan_names": {"1": "Cooperate", "2": "Cooperate"}},
        "M2": {"seat": 1, "plan": {"1": C, "2": C}, "plan_names": {"1": "Cooperate", "2": "Cooperate"}},
    }
    assert ph["vote"]["approvals"] == {"M1": 2, "M2": 2}
    assert ph["vote"]["tied"] == ["M1", "M2"] and ph["vote"]["winner"] in ("M1", "M2")
    assert ph["vote"]["ballots"] == {"1": ["M1", "M2"], "2": ["M1", "M2"]}
    by_phase = {}
    for d in store.decisions(match["id"]):
        by_phase.setdefault(d.phase, []).append(d)
    assert {p: len(ds) for p, ds in by_phase.items()} == {"propose": 2, "vote": 2, "play": 2}
    assert {d.kind for d in by_phase["propose"]} == {"mediator"}
    assert {d.kind for d in by_phase["vote"]} == {"approvals"}
    assert all(d.labels == ("A0", "A1", "A2") for d in by_phase["play"])
    # strategies never delegate: tft cooperates first, alld defects
    r = rounds(store, match["id"])[1]
    assert (r[0]["action"], r[1]["action"]) == (C, D)
    assert r[0]["info"]["delegated"] == [False, False] and r[0]["info"]["mediator_action"] is None
    assert seat_payoffs(store, match["id"]) == [0, 3]
    play = prompt_of(by_phase["play"][0])
    assert 'A2 stands for "delegate my move to the mediator"' in play
    assert "- If 1 player delegates, the mediator plays A0 for that player." in play


def scripted_model(body: dict[str, Any]) -> str:
    """A loopback 'model': proposes "defect alone, cooperate together", approves its own
    design only, signs, proposes a contract fining defection, and delegates when it can."""
    text = last_user_message(body)
    me = int(re.search(r"you are Player (\d+)", text).group(1))  # type: ignore[union-attr]
    if "your job right now is to design one" in text:
        if "mediator" in text.split("Here is the twist:")[1]:
            return 'Defect if alone.\n{"1": "A1", "2": "A0"}'
        return '{"A0": 0, "A1": -3}'
    if "Your job right now is to vote" in text:
        ids = re.findall(r"^([MC]\d+) \(designed by Player (\d+)\)", text, re.M)
        return json.dumps({pid: int(p) == me for pid, p in ids})
    if "decide whether to sign" in text:
        return '{"sign": true}'
    delegate = re.search(r'(A\d) stands for "delegate', text)
    labels = re.findall(r"^- (A\d)$", text, re.M)
    target = delegate.group(1) if delegate else "A1"
    return json.dumps({label: 100 if label == target else 0 for label in labels})


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted_model) as server:
        yield server


def llm(server: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
            "style": "direct"}


async def test_mediation_delegation_outcomes(tmp_path: Any, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": [["m", "allc"], ["m", "m"]],
         "payoff_view": "resolved"},
        agents=agents,
    ))
    by_seats = {tuple(s["agent"] for s in store.seats(m["id"])): m for m in matches}
    alone, both = by_seats[("m", "allc")], by_seats[("m", "m")]
    # the model approves only its own design, the strategy approves both: M1 wins 2 to 1
    ph = phases(store, alone["id"])
    assert ph["propose"]["proposals"]["M1"]["plan"] == {"1": D, "2": C}
    assert ph["vote"]["approvals"] == {"M1": 2, "M2": 1} and ph["vote"]["winner"] == "M1"
    assert ph["vote"]["winner_seat"] == 0
    # alone, the delegator is played as a defector against the cooperator
    r = rounds(store, alone["id"])[1]
    assert r[0]["info"]["chosen"] == [2, C] and r[0]["info"]["delegated"] == [True, False]
    assert r[0]["info"]["mediator_action"] == D
    assert (r[0]["action"], r[1]["action"]) == (D, C)
    assert seat_payoffs(store, alone["id"]) == [3, 0]
    # both delegate: the mediator cooperates for both
    r = rounds(store, both["id"])[1]
    assert r[0]["info"]["chosen"] == [2, 2] and r[0]["info"]["mediator_action"] == C
    assert seat_payoffs(store, both["id"]) == [2, 2]
    assert phases(store, both["id"])["vote"]["approvals"] == {"M1": 1, "M2": 1}
    play = next(d for d in store.decisions(alone["id"]) if d.phase == "play" and d.seat == 0)
    assert play.distribution == (0.0, 0.0, 1.0) and play.cooperated is False


# ----------------------------------------------------------------- Contracting
def test_transfers_are_zero_sum_and_split_equally() -> None:
    assert transfers({C: 0, D: -3}, (D, C)) == (-3, 3)
    assert transfers({0: 0, 1: -2}, (1, 0, 0)) == (-2, 1, 1)
    assert transfers({0: 4, 1: 0}, (0, 0, 1)) == (2, 2, -4)
    assert sum(transfers({0: 5, 1: -1}, (0, 1, 1, 0))) == pytest.approx(0)
    pd = contract_game(get_game("prisoners"), {C: 0, D: -3})
    assert pd.payoff((D, C)) == (0, 3) and pd.payoff((C, C)) == (2, 2) and pd.payoff((D, D)) == (1, 1)


async def test_contracting_with_strategies_signs_an_empty_contract(tmp_path: Any) -> None:
    store, [match] = await run(tmp_path, sweep_data({
        "game": "prisoners", "mechanism": "contracting", "matchup": [["tft", "alld"]],
    }))
    ph = phases(store, match["id"])
    assert ph["propose"]["proposals"]["C1"]["terms"] == {"0": 0, "1": 0}
    assert ph["vote"]["approvals"] == {"C1": 2, "C2": 2}
    assert ph["sign"]["signed"] == [True, True] and ph["sign"]["active"] is True
    assert ph["sign"]["contract"] == ph["vote"]["winner"]
    kinds = sorted((d.phase, d.kind) for d in store.decisions(match["id"]))
    assert kinds == sorted([("propose", "contract")] * 2 + [("vote", "approvals")] * 2
                           + [("sign", "sign")] * 2 + [("play", "mixed")] * 2)
    r = rounds(store, match["id"])[1]
    assert r[0]["info"]["transfers"] == [0, 0] and seat_payoffs(store, match["id"]) == [0, 3]


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_contracting_transfers_and_refusal(tmp_path: Any, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "allc"]],
         "payoff_view": "resolved"},
        agents=agents,
    ))
    ph = phases(store, match["id"])
    assert ph["propose"]["proposals"]["C1"]["terms"] == {"0": 0, "1": -3}
    assert ph["vote"]["winner"] == "C1" and ph["sign"]["active"] is True
    r = rounds(store, match["id"])[1]
    # the model defects and pays the cooperator 3 points
    assert (r[0]["action"], r[1]["action"]) == (D, C)
    assert r[0]["info"]["base_payoffs"] == [3, 0] and r[0]["info"]["transfers"] == [-3, 3]
    assert seat_payoffs(store, match["id"]) == [0, 3]
    play = next(d for d in store.decisions(match["id"]) if d.phase == "play" and d.seat == 0)
    text = prompt_of(play)
    assert "- Whoever plays A1 pays 3 points to the other player." in text
    assert "- If you choose A1 and the other player chooses A0: you get 0 points" in text


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_contract_is_void_unless_everyone_signs(tmp_path: Any) -> None:
    def refuser(body: dict[str, Any]) -> str:
        text = last_user_message(body)
        if "decide whether to sign" in text:
            return '{"sign": false}'
        return scripted_model(body)

    with LoopbackServer(latency=0.0, chunks=1, answer=refuser) as server:
        agents = {**STRATEGIES, "m": llm(server)}
        store, [match] = await run(tmp_path, sweep_data(
            {"game": "prisoners", "mechanism": "contracting", "matchup": [["allc", "m"]]},
            agents=agents,
        ))
    ph = phases(store, match["id"])
    assert ph["sign"]["signed"] == [True, False] and ph["sign"]["active"] is False
    r = rounds(store, match["id"])[1]
    assert r[0]["info"]["active"] is False and r[0]["info"]["transfers"] == [0, 0]
    assert seat_payoffs(store, match["id"]) == [0, 3]
    play = next(d for d in store.decisions(match["id"]) if d.phase == "play" and d.seat == 0)
    assert "Player 2 did not sign it" in prompt_of(play)


# ----------------------------------------------------------------- strategy tournaments
async def test_strategy_only_tournament_runs_every_mechanism(tmp_path: Any) -> None:
    roster = ["tft", "alld", "allc"]
    store, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "repetition", "matchup": "cross", "agents": roster,
         "rounds": 3},
        {"game": "trust", "mechanism": "mediation", "matchup": "cross", "agents": roster},
        {"game": "public_good", "mechanism": "contracting", "matchup": "self", "agents": roster},
        {"game": "trust", "mechanism": "reputation", "matchup": "cross", "agents": roster,
         "population": 6, "rounds": 2, "order": ["first", "higher"]},
    ))
    by_mech: dict[str, int] = {}
    for m in matches:
        by_mech[m["mechanism"]] = by_mech.get(m["mechanism"], 0) + 1
    assert by_mech == {"repetition": 9, "mediation": 9, "contracting": 3, "reputation": 2}
    counts = dict(store.db.execute(
        "select phase, count(*) from decisions group by phase").fetchall())
    assert counts == {"play": 9 * 2 * 3 + 9 * 2 + 3 * 3 + 2 * 6 * 2,
                      # one design per agent x seat per tournament, votes per match
                      "propose": 3 * 2 + 3 * 3, "vote": 9 * 2 + 3 * 3, "sign": 3 * 3}
    assert store.db.execute("select count(*) from decisions where valid = 0").fetchone()[0] == 0


async def test_shuffled_labels_map_back_to_game_actions(tmp_path: Any) -> None:
    store, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": [["tft", "allc"]],
         "randomize_labels": True, "samples": 4},
        {"game": "prisoners", "mechanism": "contracting", "matchup": [["tft", "allc"]],
         "randomize_labels": True, "samples": 4},
    ))
    shuffled = 0
    for m in matches:
        ph = phases(store, m["id"])
        for p in ph["propose"]["proposals"].values():
            # strategies propose cooperation (game action 0) whatever label it wore
            assert p.get("plan", {"1": C, "2": C}) == {"1": C, "2": C}
            assert p.get("terms", {"0": 0, "1": 0}) == {"0": 0, "1": 0}
        for d in store.decisions(m["id"]):
            shuffled += d.label_to_action not in ((), (0, 1), (0, 1, 2))
            if d.phase == "play":
                assert d.action == C  # tft opens with C, allc always cooperates
        assert seat_payoffs(store, m["id"]) == [2, 2]
    assert shuffled > 0


async def test_lenient_policy_drops_unreadable_proposals_votes_and_signatures(tmp_path: Any) -> None:
    def garbled(body: dict[str, Any]) -> str:
        text = last_user_message(body)
        if "Here is the twist:" in text and "Give each value in whole percentage" not in text:
            return "I would rather not say."
        return '{"A0": 100, "A1": 0}'

    with LoopbackServer(latency=0.0, chunks=1, answer=garbled) as server:
        agents = {**STRATEGIES, "m": llm(server)}
        data = sweep_data(
            {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "alld"]],
             "on_invalid": "uniform", "max_attempts": 1},
            agents=agents,
        )
        store, [match] = await run(tmp_path, data)
    ph = phases(store, match["id"])
    assert list(ph["propose"]["proposals"]) == ["C2"] and ph["propose"]["invalid"] == [0]
    assert ph["vote"]["approvals"] == {"C2": 1} and ph["vote"]["invalid"] == [0]
    assert ph["sign"]["signed"] == [False, True] and ph["sign"]["invalid"] == [0]
    assert ph["sign"]["active"] is False
    invalid = [(d.phase, d.valid) for d in store.decisions(match["id"]) if d.seat == 0]
    assert sorted(invalid) == [("play", True), ("propose", False), ("sign", False), ("vote", False)]
    assert seat_payoffs(store, match["id"]) == [0, 3]


# ----------------------------------------------------------------- the embedded model
@pytest.mark.slow
async def test_embedded_model_runs_every_mechanism(tmp_path: Any) -> None:
    """SmolLM2 in process, with tiny answers: every phase of every mechanism is asked,
    answered and stored (grammar-constrained answers keep the matches going).

    One seat per match is the model (11 decisions in all): each costs seconds of CPU (its
    prompt evaluated from scratch), so each mechanism is played once, with two rounds where
    later rounds show a history, and reputation in its richer prompt (higher order)."""
    agents = {**STRATEGIES, "local": {"model": "local/smollm2", "max_tokens": 12,
                                      "temperature": 0.0, "seed": 1, "style": "direct"}}
    store, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "repetition", "matchup": [["local", "tft"]],
         "rounds": 2, "on_invalid": "uniform"},
        {"game": "prisoners", "mechanism": "mediation", "matchup": [["local", "tft"]],
         "on_invalid": "uniform"},
        {"game": "prisoners", "mechanism": "contracting", "matchup": [["tft", "local"]],
         "on_invalid": "uniform"},
        {"game": "prisoners", "mechanism": "reputation", "matchup": [["local", "tft", "alld", "allc"]],
         "population": 4, "rounds": 2, "order": "higher", "on_invalid": "uniform"},
        agents=agents,
    ))
    assert sorted(m["mechanism"] for m in matches) == [
        "contracting", "mediation", "repetition", "reputation"]
    rows = store.db.execute(
        """select m.mechanism, d.phase, d.kind, count(*) from decisions d
           join matches m on m.id = d.match_id where d.agent = 'local'
           group by 1, 2, 3""").fetchall()
    assert {(mech, phase, kind): n for mech, phase, kind, n in rows} == {
        ("repetition", "play", "mixed"): 2,
        ("mediation", "propose", "mediator"): 1,
        ("mediation", "vote", "approvals"): 1,
        ("mediation", "play", "mixed"): 1,
        ("contracting", "propose", "contract"): 1,
        ("contracting", "vote", "approvals"): 1,
        ("contracting", "sign", "sign"): 1,
        ("contracting", "play", "mixed"): 1,
        ("reputation", "play", "mixed"): 2,  # two rounds
    }
    for m in matches:
        ph = phases(store, m["id"])
        if m["mechanism"] in ("mediation", "contracting"):
            assert {"propose", "vote"} <= set(ph)
            assert ph["vote"]["winner"] in ph["propose"]["proposals"]
        if m["mechanism"] == "contracting":
            assert len(ph["sign"]["signed"]) == 2
        assert len(seat_payoffs(store, m["id"])) == (4 if m["mechanism"] == "reputation" else 2)
    local = [d for m in matches for d in store.decisions(m["id"]) if d.agent == "local"]
    assert all(d.response or d.answer for d in local)
    assert all(d.action is not None for d in local if d.kind == "mixed")
