"""CoopEval's protocol, point by point, as short expected transcripts.

What each seat is shown (asserted on the rendered prompt), which design is reused
where, which seat a Reputation agent keeps, how strict answers are re-asked and how
replicates are keyed. Everything runs through the real engine, sweep runner and
SQLite store; agents are strategies or an LLM agent talking HTTP to the loopback
server with a scripted answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.actions import action_frequencies
from coop_tui.parsing import ParseError, parse_answer, parse_mixed_strategy
from coop_tui.reask import answer_rule, reask
from coop_tui.report import build_report
from coop_tui.spec import build_sweep, load_sweep
from coop_tui.store import Store
from coop_tui.sweep import estimate_decisions, run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

STUDIES = Path(__file__).resolve().parents[1] / "data" / "studies"
C, D = 0, 1
STRATEGIES: dict[str, dict[str, Any]] = {
    "tft": {"strategy": "tit_for_tat"},
    "alld": {"strategy": "always_defect"},
    "allc": {"strategy": "always_cooperate"},
}


def sweep_data(*experiments: dict[str, Any], agents: dict[str, Any] | None = None,
               **top: Any) -> dict[str, Any]:
    return {"name": "protocol", "seed": 3, "agents": agents or STRATEGIES,
            "experiments": list(experiments), **top}


async def run(tmp_path: Path, data: dict[str, Any], **kw: Any) -> tuple[Store, str, list[dict[str, Any]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = Store(tmp_path / "protocol.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store, **kw)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    return store, summary.run_id, matches


def phases(store: Store, match_id: str) -> dict[str, dict[str, Any]]:
    rows = store.db.execute("select phase, info from phases where match_id = ?", [match_id])
    return {phase: json.loads(info) for phase, info in rows.fetchall()}


def prompt_of(decision: Any) -> str:
    return next(m["content"] for m in decision.prompt if m["role"] == "user")


def play_prompt(store: Store, match_id: str, seat: int, round_: int = 1) -> str:
    return prompt_of(next(d for d in store.decisions(match_id)
                          if d.phase == "play" and d.seat == seat and d.round == round_))


def seats_of(store: Store, match_id: str) -> tuple[str, ...]:
    return tuple(s["agent"] for s in store.seats(match_id))


def scripted(body: dict[str, Any]) -> str:
    """Designs "defect alone, cooperate together" / fines defection by 3, approves and
    signs everything, delegates when it can, else defects."""
    text = last_user_message(body)
    if "your job right now is to design one" in text:
        if "mediator" in text.split("Here is the twist:")[1]:
            return '{"1": "A1", "2": "A0"}'
        return '{"A0": 0, "A1": -3}'
    if "Your job right now is to vote" in text:
        return json.dumps({pid: True for pid in re.findall(r"^([MC]\d+) \(designed", text, re.M)})
    if "decide whether to sign" in text:
        return '{"sign": true}'
    delegate = re.search(r"you have (A\d), which means", text) or re.search(r'(A\d) stands for "delegate', text)
    labels = re.findall(r'"(A\d)": <INT>', text)
    target = delegate.group(1) if delegate else "A1"
    return json.dumps({label: 100 if label == target else 0 for label in labels})


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.02, chunks=1, answer=scripted) as server:
        yield server


def llm(server: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test", "style": "direct"}


# ----------------------------------------------------------------- Mediation: what play shows
async def test_mediation_play_shows_base_payoffs_and_the_plan(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": [["m", "alld"]]}, agents=agents))
    text = play_prompt(store, match["id"], 0)
    # the actions listed are the base game's; the delegate action comes with the twist
    assert "Actions you can choose from:\n- A0\n- A1\n\n" in text
    # base payoffs only: four outcomes, none of them mentions A2
    outcomes = [line for line in text.splitlines() if line.startswith("- If you choose")]
    assert outcomes == [
        "- If you choose A0 and the other player chooses A0: you get 2 points, the other player gets 2 points.",
        "- If you choose A0 and the other player chooses A1: you get 0 points, the other player gets 3 points.",
        "- If you choose A1 and the other player chooses A0: you get 3 points, the other player gets 0 points.",
        "- If you choose A1 and the other player chooses A1: you get 1 point, the other player gets 1 point.",
    ]
    assert re.search(r"^- If 1 player delegates, the mediator plays A[01] for that player\.$", text, re.M)
    assert "- If 2 players delegate, the mediator plays A0 for each of them." in text
    assert 'Besides the actions listed above, you have A2, which means "delegate my move to the mediator"' in text
    assert '"A0": <INT>, "A1": <INT>, "A2": <INT>' in text


async def test_mediation_resolved_view_spells_out_delegation(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": [["m", "alld"]],
         "payoff_view": "resolved"}, agents=agents))
    text = play_prompt(store, match["id"], 0)
    assert "- If you choose A2 and the other player chooses A2: you get 2 points" in text
    assert "The payoff description above already spells out what happens when players delegate." in text


# ----------------------------------------------------------------- Contracting: what play shows
async def test_contracting_play_shows_base_payoffs_and_the_terms(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "m"]]}, agents=agents))
    text = play_prompt(store, match["id"], 1)
    assert "- If you choose A1 and the other player chooses A0: you get 3 points, the other player gets 0 points." in text
    assert "- Whoever plays A1 pays 3 points to the other player." in text
    assert "The contract changes your final points, so take it into account" in text
    assert "does not include these payments" not in text  # our sentence: explain_payoffs only
    # both defect and both pay 3: the base payoffs, transfers cancel out
    assert [s["payoff"] for s in store.seats(match["id"])] == [1, 1]


async def test_contracting_resolved_view_folds_the_terms_in(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "m"]],
         "payoff_view": "resolved"}, agents=agents))
    text = play_prompt(store, match["id"], 1)
    assert "- If you choose A1 and the other player chooses A0: you get 0 points, the other player gets 3 points." in text
    assert "already includes these payments" in text


async def test_refused_contract_is_shown_with_who_refused(tmp_path: Path) -> None:
    def refuser(body: dict[str, Any]) -> str:
        return '{"sign": false}' if "decide whether to sign" in last_user_message(body) else scripted(body)

    with LoopbackServer(latency=0.0, chunks=1, answer=refuser) as server:
        agents = {**STRATEGIES, "m": llm(server)}
        store, _, [match] = await run(tmp_path, sweep_data(
            {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "m"]]}, agents=agents))
    text = play_prompt(store, match["id"], 0)
    assert "A payment contract (designed by Player" in text
    assert "- Whoever plays A1 pays 3 points to the other player." in text
    assert "Players 1, 2 did not sign it" in text


# ----------------------------------------------------------------- designs per tournament
async def test_designs_are_asked_once_per_agent_and_seat_and_reused(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, run_id, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": "cross", "agents": ["m", "tft", "allc"]},
        agents=agents, concurrency=9))
    assert len(matches) == 9
    # the model was asked for a design once from each seat, although it plays 5 matches
    designs_asked = [r for r in model.chat_requests
                     if "your job right now is to design one" in last_user_message(r.body)]
    assert len(designs_asked) == 2
    rows = store.db.execute(
        """select d.agent, d.seat, count(*) from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'propose' group by d.agent, d.seat""", [run_id]).fetchall()
    assert sorted(rows) == [("allc", 0, 1), ("allc", 1, 1), ("m", 0, 1), ("m", 1, 1),
                            ("tft", 0, 1), ("tft", 1, 1)]
    # every match references the design of each of its seats; one agent x seat, one decision
    by_agent_seat: dict[tuple[str, int], set[str]] = {}
    reused = asked = 0
    for m in matches:
        info = phases(store, m["id"])["propose"]
        assert info["design_scope"] == "tournament"
        for prop in info["proposals"].values():
            agent = seats_of(store, m["id"])[prop["seat"]]
            by_agent_seat.setdefault((agent, prop["seat"]), set()).add(prop["design"])
            reused += prop["reused"]
            asked += not prop["reused"]
    assert all(len(keys) == 1 for keys in by_agent_seat.values()) and len(by_agent_seat) == 6
    assert asked == 6 and reused == 18 - 6
    # the votes and play stay per match
    votes = store.db.execute(
        """select count(*) from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'vote'""", [run_id]).fetchone()[0]
    assert votes == 18
    # the pre-run estimate counts each shared design once: here it is exact
    total = store.db.execute(
        "select count(*) from decisions d join matches m on m.id = d.match_id where m.run_id = ?",
        [run_id]).fetchone()[0]
    sweep = build_sweep(sweep_data(
        {"game": "prisoners", "mechanism": "mediation", "matchup": "cross", "agents": ["m", "tft", "allc"]},
        agents=agents), check_keys=False)
    assert estimate_decisions(sweep) == total == 6 + 18 + 18


async def test_design_scope_match_asks_in_every_match(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, run_id, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "contracting", "matchup": "cross", "agents": ["m", "tft"],
         "design_scope": "match"}, agents=agents))
    designs_asked = [r for r in model.chat_requests
                     if "your job right now is to design one" in last_user_message(r.body)]
    # m sits in 3 of the 4 matches, twice in the (m, m) one: 4 designs, one per match seat
    assert len(designs_asked) == 4
    n = store.db.execute(
        """select count(*) from decisions d join matches m on m.id = d.match_id
           where m.run_id = ? and d.phase = 'propose'""", [run_id]).fetchone()[0]
    assert n == 8  # one per match seat
    designs = {p["design"] for m in matches for p in phases(store, m["id"])["propose"]["proposals"].values()}
    assert len(designs) == 8


async def test_resume_reuses_the_stored_design(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    # shuffled labels too: a shared design's labels come from the tournament, so the
    # resumed request is the same whichever match asks it first
    data = sweep_data({"game": "prisoners", "mechanism": "mediation", "matchup": "cross",
                       "agents": ["m", "tft"], "randomize_labels": True}, agents=agents)
    store, run_id, matches = await run(tmp_path, data)
    # forget two finished matches (as if the run had been killed before them)
    lost = [m["id"] for m in matches if seats_of(store, m["id"])[0] == "tft"]
    for table in ("rounds", "phases", "seats"):
        store.db.execute(f"delete from {table} where match_id in (?, ?)", lost)
    store.db.execute("update matches set status = 'running' where id in (?, ?)", lost)
    store.db.conn.commit()
    model.reset()
    summary = await run_sweep(build_sweep(data, check_keys=False), store, resume=True, run_id=run_id)
    assert summary.matches_skipped == 2 and summary.status == "done"
    assert not any("design one" in last_user_message(r.body) for r in model.chat_requests)
    (with_m,) = [match_id for match_id in lost if "m" in seats_of(store, match_id)]
    info = phases(store, with_m)["propose"]["proposals"]
    (m_design,) = [p for p in info.values() if seats_of(store, with_m)[p["seat"]] == "m"]
    assert m_design["reused"] is True


# ----------------------------------------------------------------- Reputation seats
async def test_reputation_agents_keep_their_seat_in_a_population_of_every_agent_in_every_seat(
    tmp_path: Path, model: LoopbackServer,
) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "trust", "mechanism": "reputation", "matchup": "cross",
         "agents": ["m", "alld", "allc"], "rounds": 6}, agents=agents))
    # 3 agents x 2 positions: seats 0-2 play Player 1, seats 3-5 Player 2
    assert seats_of(store, match["id"]) == ("m", "alld", "allc", "m", "alld", "allc")
    partners: dict[int, set[int]] = {0: set(), 3: set()}
    for d in store.decisions(match["id"]):
        if d.agent != "m":
            continue
        text = prompt_of(d)
        player = 1 if d.seat < 3 else 2
        assert f"you are Player {player}." in text
        # CoopEval's information only: not the population's size, not the fixed seat
        assert "population" not in text and "always play as" not in text
        opponent = int(re.search(r"You play against 1 other agent: Agent #(\d+)", text).group(1)) - 1
        assert (opponent < 3) != (d.seat < 3)  # always someone from the other role
        partners[d.seat].add(opponent)
    assert any(len(p) > 1 for p in partners.values())  # co-players are re-drawn
    rounds = store.rounds(match["id"])
    for t in range(1, 7):
        groups: dict[int, list[int]] = {}
        for r in rounds:
            if r["round"] == t:
                groups.setdefault(json.loads(r["info"])["group"], []).append(r["seat"])
        # every group: one agent of each role
        assert len(groups) == 3 and all(len(g) == 2 and min(g) < 3 <= max(g) for g in groups.values())


def test_reputation_population_is_every_roster_agent_in_every_seat() -> None:
    sweep = load_sweep(STUDIES / "coopeval.toml", check_keys=False)
    sizes = {(c.game, c.mechanism_params["order"]): len(c.seats)
             for c in sweep.cells if c.mechanism == "reputation"}
    assert sizes[("prisoners", "first")] == 12 and sizes[("trust", "higher")] == 12
    assert sizes[("public_good", "first")] == 18 and sizes[("public_good", "higher")] == 18


async def test_shuffled_seating_is_the_old_behaviour(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "trust", "mechanism": "reputation", "matchup": "cross", "agents": ["m", "alld"],
         "population": 4, "seating": "shuffled", "rounds": 8}, agents=agents))
    positions: dict[int, set[int]] = {}
    for d in store.decisions(match["id"]):
        if d.agent == "m":
            found = re.search(r"you are Player (\d)\.", prompt_of(d))
            positions.setdefault(d.seat, set()).add(int(found.group(1)))  # type: ignore[union-attr]
    assert any(len(p) == 2 for p in positions.values())


# ----------------------------------------------------------------- game framing
async def test_travelers_a0_is_the_lowest_claim_and_values_are_shown(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, matches = await run(tmp_path, sweep_data(
        {"game": "travelers", "mechanism": "none", "matchup": [["m", "alld"], ["tft", "alld"]]},
        agents=agents))
    by_seats = {seats_of(store, m["id"]): m for m in matches}
    text = play_prompt(store, by_seats[("m", "alld")]["id"], 0)
    assert ("- A0: correspond to the number 2\n- A1: correspond to the number 3\n"
            "- A2: correspond to the number 4\n- A3: correspond to the number 5\n") in text
    assert "Suppose you choose number X and the other player chooses number Y." in text
    assert "claim" not in text.lower()  # CoopEval's prompt never says "claim"
    assert "- If X < Y: you get X + 2 points, the other player gets X - 2." in text
    assert "- If you choose" not in text
    # m claims 3 (A1) against alld's 2 (A0): the lower claimant gets 2 + 2
    match = by_seats[("m", "alld")]
    assert {r["seat"]: r["action"] for r in store.rounds(match["id"])} == {0: 1, 1: 0}
    assert [s["payoff"] for s in store.seats(match["id"])] == [0, 4]
    # tft cooperates (the highest claim, A3), alld defects (the lowest, A0)
    match = by_seats[("tft", "alld")]
    assert {r["seat"]: r["action"] for r in store.rounds(match["id"])} == {0: 3, 1: 0}


async def test_public_goods_is_described_by_its_rule(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "public_good", "mechanism": "none", "matchup": [["tft", "m", "allc"]]}, agents=agents))
    text = play_prompt(store, match["id"], 1)
    assert ("Suppose k of the 3 players (you included) play A0.\n"
            "- Whoever plays A0 gets 1.5 * k / 3 points.\n"
            "- Whoever plays A1 gets 1 + 1.5 * k / 3 points.") in text
    assert "- If you choose" not in text
    store2, _, [m2] = await run(tmp_path / "t", sweep_data(
        {"game": "public_good", "game_params": {"payoff_text": "table"}, "mechanism": "none",
         "matchup": [["tft", "m", "allc"]]}, agents=agents))
    assert len([x for x in play_prompt(store2, m2["id"], 1).splitlines() if x.startswith("- If you choose")]) == 8


async def test_repetition_history_shows_what_coopeval_shows(tmp_path: Path, model: LoopbackServer) -> None:
    agents = {**STRATEGIES, "m": llm(model)}
    store, _, [match] = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "repetition", "matchup": [["m", "alld"]],
         "rounds": 5, "history": 3}, agents=agents))
    text = play_prompt(store, match["id"], 0, round_=5)
    assert "This is round 5: you have played 4 rounds with this player so far." in text
    assert "The action drawn from the probabilities you give is what the other player sees" in text
    assert ("What was played in the last 3 rounds (most recent first):\n"
            "- Round 4: you played A1, the other player played A1.\n"
            "- Round 3: you played A1, the other player played A1.\n"
            "- Round 2: you played A1, the other player played A1.") in text
    assert "points." not in text.split("most recent first")[1].split("What to answer")[0]
    store2, _, [m2] = await run(tmp_path / "p", sweep_data(
        {"game": "prisoners", "mechanism": "repetition", "matchup": [["m", "allc"]],
         "rounds": 2, "history_payoffs": True}, agents=agents))
    assert "- Round 1: you played A1, the other player played A0; you got 3 points." in play_prompt(
        store2, m2["id"], 0, round_=2)


# ----------------------------------------------------------------- strict answers
def test_strict_answers_take_no_repair() -> None:
    labels = ("A0", "A1")
    lenient = parse_mixed_strategy('{"A0": 60, "A1": 39}', labels)
    assert lenient.note == "sum 99 normalised to 100"
    for text, reason in [
        ('{"A0": 60, "A1": 39}', "add up to 99; they must add up to exactly 100"),
        ('{"A0": 0.6, "A1": 0.4}', "must be a whole number"),
        ('{"A0": 100}', "the keys must be exactly A0, A1"),
        ('{"a0": 50, "A1": 50}', "the keys must be exactly A0, A1"),
        ("{'A0': 50, 'A1': 50}", "not valid JSON"),
        ('{"A0": "50", "A1": 50}', "must be a whole number"),
        ('{"A0": 150, "A1": -50}', "between 0 and 100"),
    ]:
        with pytest.raises(ParseError, match=re.escape(reason)):
            parse_mixed_strategy(text, labels, strict=True)
    ok = parse_mixed_strategy('draft {"A0": 10, "A1": 90} final {"A0": 70, "A1": 30}', labels, strict=True)
    assert ok.probabilities == (0.7, 0.3)
    with pytest.raises(ParseError, match="exact format"):
        parse_answer("sign", '{"sign": "yes"}', strict=True)
    assert parse_answer("sign", '{"sign": "yes"}')[0] is True


async def test_strict_mode_reasks_up_to_six_times_and_is_recorded(tmp_path: Path) -> None:
    def sloppy(body: dict[str, Any]) -> str:
        # the first five answers add up to 99; the sixth is right
        sloppy.n += 1  # type: ignore[attr-defined]
        return '{"A0": 50, "A1": 49}' if sloppy.n < 6 else '{"A0": 50, "A1": 50}'

    sloppy.n = 0  # type: ignore[attr-defined]
    with LoopbackServer(latency=0.0, chunks=1, answer=sloppy) as server:
        agents = {**STRATEGIES, "m": llm(server)}
        data = sweep_data({"game": "prisoners", "mechanism": "none", "matchup": [["m", "tft"]],
                           "answers": "strict"}, agents=agents)
        sweep = build_sweep(data, check_keys=False)
        assert sweep.cells[0].max_attempts == 6
        store, run_id, [match] = await run(tmp_path, data)
    d = next(d for d in store.decisions(match["id"]) if d.seat == 0)
    assert d.attempts == 6 and len(d.retries) == 5 and d.normalisation is None
    assert "they must add up to exactly 100" in d.retries[0].error
    assert json.loads(match["info"])["answers"] == "strict"
    report = build_report(store, run_id)
    assert [e["answers"] for e in report["experiments"]] == ["strict"]
    # lenient (the default) takes the first answer and records the repair
    with LoopbackServer(latency=0.0, chunks=1, answer='{"A0": 50, "A1": 49}') as server:
        agents = {**STRATEGIES, "m": llm(server)}
        store, _, [match] = await run(tmp_path / "l", sweep_data(
            {"game": "prisoners", "mechanism": "none", "matchup": [["m", "tft"]]}, agents=agents))
    d = next(d for d in store.decisions(match["id"]) if d.seat == 0)
    assert d.attempts == 1 and d.normalisation == "sum 99 normalised to 100"
    assert json.loads(match["info"])["answers"] == "lenient"


async def test_a_reask_reads_a_strict_runs_decision_strictly(tmp_path: Path) -> None:
    """A re-ask from the inspector uses the run's answer rule: a sum of 99 is re-asked
    under a strict run, as the run itself would (a lenient re-ask took it, repaired). The
    rule is not in the condition: it comes from the match's info, else from the run's
    stored spec (runs before the info held it), and a re-ask of the re-ask keeps it."""
    state = {"sloppy": False, "n": 0}

    def answer(body: dict[str, Any]) -> str:
        if state["sloppy"]:  # the re-asks: 99 first, then a right answer
            state["n"] += 1
            return '{"A0": 50, "A1": 49}' if state["n"] % 2 else '{"A0": 50, "A1": 50}'
        return '{"A0": 50, "A1": 50}'

    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as server:
        agents = {**STRATEGIES, "m": llm(server)}
        store, _, [match] = await run(tmp_path, sweep_data(
            {"game": "prisoners", "mechanism": "none", "matchup": [["m", "tft"]],
             "answers": "strict"}, agents=agents))
        first = next(d for d in store.decisions(match["id"]) if d.seat == 0)
        state["sloppy"] = True
        result = await reask(store, store.decision_id(first.cache_key))
        again = await reask(store, result.decision_id)
    for asked in (result.decision, again.decision):
        assert asked.valid and asked.attempts == 2 and asked.normalisation is None
        assert "they must add up to exactly 100" in asked.retries[0].error
    # a run from before match info held the rule: read from the run's stored spec
    info = json.loads(match["info"])
    info.pop("answers")
    store.db.conn.execute("update matches set info = ? where id = ?", [json.dumps(info), match["id"]])
    store.db.conn.commit()
    assert answer_rule(store, store.match(match["id"])) == "strict"
    lenient = {**store.match(match["id"]), "run_id": "no-such-run"}
    assert answer_rule(store, lenient) == "lenient"


# ----------------------------------------------------------------- replicates
def test_replicates_multiply_matches_with_distinct_keys() -> None:
    one = build_sweep(sweep_data({"game": "prisoners", "mechanism": "none", "matchup": "cross",
                                  "agents": ["tft", "alld"], "samples": 2}), check_keys=False)
    three = build_sweep(sweep_data({"game": "prisoners", "mechanism": "none", "matchup": "cross",
                                    "agents": ["tft", "alld"], "samples": 2}, replicates=3),
                        check_keys=False)
    assert one.total_matches == 8 and three.total_matches == 24
    keys = [c.match_key(s) for c, s in three.matches()]
    assert len(set(keys)) == 24
    # replicate 0 keeps the keys a sweep had before replicates existed
    assert [c.match_key(s) for c, s in one.matches()] == [
        c.match_key(s) for c, s in three.matches() if c.replicate_of(s) == 0]
    cell = three.cells[0]
    assert {cell.tournament_key(s) for s in range(cell.slots)} == {
        cell.tournament_key(0), cell.tournament_key(2), cell.tournament_key(4)}
    assert len({cell.tournament_key(s) for s in range(cell.slots)}) == 3
    per_exp = build_sweep(sweep_data({"game": "prisoners", "mechanism": "none", "agents": ["tft"],
                                      "replicates": 2}), check_keys=False)
    assert per_exp.total_matches == 2


async def test_replicates_are_stored_and_resume(tmp_path: Path) -> None:
    data = sweep_data({"game": "prisoners", "mechanism": "repetition", "matchup": "cross",
                       "agents": ["tft", "alld"], "rounds": 2}, replicates=2)
    store, run_id, matches = await run(tmp_path, data)
    reps = store.db.execute(
        "select replicate, count(*) from matches where run_id = ? group by replicate", [run_id]).fetchall()
    assert reps == [(0, 4), (1, 4)]
    assert {m["sample"] for m in matches} == {0}
    summary = await run_sweep(build_sweep(data, check_keys=False), store, resume=True, run_id=run_id)
    assert summary.matches_skipped == 8 and summary.decisions == 0


async def test_reputation_means_are_reported_per_replicate(tmp_path: Path) -> None:
    store, run_id, matches = await run(tmp_path, sweep_data(
        {"game": "prisoners", "mechanism": "reputation", "matchup": "cross",
         "agents": ["tft", "alld"], "rounds": 3}, replicates=2))
    assert len(matches) == 2 and {m["matchup"] for m in matches} == {"population"}
    report = build_report(store, run_id)
    reps = [r for r in report["per_replicate"] if r["mechanism"] == "reputation"]
    assert sorted(r["replicate"] for r in reps) == [0, 1]
    cells = {(c["metric"], c["agent"]): c for c in report["tables"]
             if c["mechanism"] == "reputation" and c["table"] == "prisoners"}
    assert {m for m, _ in cells} == {"mean"}  # Reputation rows have Mean only
    for agent in ("tft", "alld"):
        values = [r["mean"][agent] for r in reps]
        assert cells[("mean", agent)]["value"] == pytest.approx(sum(values) / 2)
        assert cells[("mean", agent)]["n"] == 2


# ----------------------------------------------------------------- mixed-game labels
async def test_each_game_names_its_own_actions_in_a_mixed_experiment(tmp_path: Path) -> None:
    store, run_id, _ = await run(tmp_path, sweep_data(
        {"game": ["prisoners", "public_good", "travelers"], "mechanism": "none", "matchup": "self",
         "agents": ["allc"]}))
    names = {(r["game"], r["name"]) for r in action_frequencies(store, run_id)}
    assert ("public_good", "Contribute") in names and ("prisoners", "Cooperate") in names
    assert ("travelers", "Claim 5") in names
    assert not any(g != "prisoners" and n in ("Cooperate", "Defect") for g, n in names)


# ----------------------------------------------------------------- the study file
def test_coopeval_study_is_the_papers_design() -> None:
    sweep = load_sweep(STUDIES / "coopeval.toml", check_keys=False)
    spec = sweep.spec
    assert spec.replicates == 3 and spec.answers == "strict"
    assert len(spec.agents) == 6 and all(a.temperature == 1.0 for a in spec.agents.values())
    assert {a.style for a in spec.agents.values()} == {"cot", "direct"}
    tournaments = {(c.experiment, c.game) for c in sweep.cells}
    assert len(tournaments) == 36
    mechs = {(c.mechanism, c.mechanism_params.get("order")) for c in sweep.cells}
    assert mechs == {("none", None), ("repetition", None), ("reputation", "first"),
                     ("reputation", "higher"), ("mediation", None), ("contracting", None)}
    for c in sweep.cells:
        assert c.replicates == 3 and c.max_attempts == 6 and c.answers == "strict"
        if c.mechanism in ("repetition", "reputation"):
            p = c.mechanism_params
            assert (p["rounds"], p["continuation"], p["history"]) == (15, 0.8, 3)
        if c.mechanism in ("mediation", "contracting"):
            assert c.mechanism_params["payoff_view"] == "base"
            assert c.mechanism_params["design_scope"] == "tournament"
    # 5 two-player games x 36 ordered pairs + Public Goods x 216, per mechanism
    # except Reputation (one population per game)
    per_mech = {}
    for c in sweep.cells:
        per_mech[(c.mechanism, c.mechanism_params.get("order"))] = per_mech.get(
            (c.mechanism, c.mechanism_params.get("order")), 0) + 1
    assert per_mech[("none", None)] == 5 * 36 + 216
    assert per_mech[("reputation", "first")] == 6
