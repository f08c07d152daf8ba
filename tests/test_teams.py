"""Team tournaments (super-additive cooperation) as expected transcripts, Axelrod style.

Players are numbered team by team (2 x 2: players 0, 1 in group 0; 2, 3 in group 1).
Strategies leave a match exactly when they would not cooperate next (documented default
in strategy_agent.py), answer 0 / false to comprehension questions and write one
sentence as a plan. Every number below is worked out by hand from those rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from coop_tui.mechanisms._teams import (
    MatchLog,
    Round,
    battery,
    forgiveness,
    pairings,
    schedule,
    score_answer,
    tft_share,
)
from coop_tui.session import prompt_text
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer, last_user_message
from tests.test_mechanisms import STRATEGIES, phases, rounds, run, seat_payoffs, sweep_data

C, D = 0, 1


def teams_exp(seats: list[str], **params: Any) -> dict[str, Any]:
    return {"game": "ipd", "mechanism": "teams", "matchup": [seats], "schedule": "ordered",
            **params}


def tournament(store: Store, match_id: str) -> dict[str, Any]:
    return phases(store, match_id)["tournament"]


def transcript(store: Store, match_id: str) -> list[tuple[int, int, str, str]]:
    """(pairing, match round, seat a's move, seat b's move) per tournament round, C/D."""
    out = []
    for _t, seats in sorted(rounds(store, match_id).items()):
        (a, ra), (b, rb) = sorted(seats.items())
        out.append((ra["info"]["pairing"], ra["info"]["match_round"], "CD"[ra["action"]], "CD"[rb["action"]]))
    return out


# ------------------------------------------------------------------ schedules
def test_pairings_follow_the_paper_for_every_structure() -> None:
    assert len(pairings("RI", 2, 3)) == len(pairings("SA", 2, 3)) == 15  # C(6, 2)
    gc = pairings("GC", 2, 3)
    assert len(gc) == 9 and all(a // 3 != b // 3 for a, b in gc)
    # three teams: every inter-team pair survives (the public code keeps only the last
    # team pair's 4 matches)
    gc3 = pairings("GC", 3, 2)
    assert gc3 == [(0, 2), (0, 3), (1, 2), (1, 3), (0, 4), (0, 5), (1, 4), (1, 5),
                   (2, 4), (2, 5), (3, 4), (3, 5)]
    shuffled = schedule("SA", 2, 3, "shuffled", np.random.default_rng(7))
    assert sorted(tuple(sorted(p)) for p in shuffled) == pairings("SA", 2, 3)
    assert shuffled == schedule("SA", 2, 3, "shuffled", np.random.default_rng(7))
    assert shuffled != schedule("SA", 2, 3, "shuffled", np.random.default_rng(8))
    assert schedule("RI", 2, 3, "ordered", np.random.default_rng(7)) == pairings("RI", 2, 3)


@pytest.mark.parametrize(("params", "field", "words"), [
    ({"rounds": 3, "budget": 9}, "budget", "n*m = 9"),           # 2 x 2 SA: m = 3
    ({"structure": "GC", "rounds": 3, "budget": 6}, "budget", "n*m = 6"),  # GC: m = 2
    ({"team_size": 0}, "team_size", "greater than or equal to 1"),
    ({"teams": 0}, "teams", "greater than or equal to 1"),
    ({"plan_every": 0}, "plan_every", "greater than or equal to 1"),
    ({"structure": "GC", "teams": 1}, "teams", "at least 2 teams"),
])
def test_bad_tournament_settings_name_the_field(params: dict[str, Any], field: str, words: str) -> None:
    exp = {"game": "ipd", "mechanism": "teams", "matchup": "self", "agents": ["tft"],
           "teams": 2, "team_size": 2, "rounds": 3, "budget": 5, **params}
    with pytest.raises(SpecError) as err:
        build_sweep(sweep_data(exp), check_keys=False)
    assert err.value.field == f"experiments[0].{field}"
    assert words in str(err.value)


def test_bad_budget_is_an_exit_2_error_and_writes_nothing(tmp_path: Any) -> None:
    sweep = tmp_path / "t.toml"
    sweep.write_text(
        'name = "t"\n[agents.tft]\nstrategy = "tit_for_tat"\n[[experiments]]\ngame = "ipd"\n'
        'mechanism = "teams"\nmatchup = "self"\nagents = ["tft"]\nteams = 2\nteam_size = 3\n'
        "rounds = 20\nbudget = 100\n"
    )
    db = tmp_path / "t.db"
    proc = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "budget" in proc.stderr and "n*m = 100" in proc.stderr
    assert not db.exists()


# ------------------------------------------------------------------ transcripts
async def test_sa_transcript_exits_plans_and_scores(tmp_path: Any) -> None:
    # 0 tft, 1 alld (group 0); 2 allc, 3 grim (group 1); n = 3, N = 8 (< 3 * 3), K = 2;
    # the exit asked after each round (the option; the paper's with-move is below)
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["tft", "alld", "allc", "grim"], structure="SA", teams=2, team_size=2, rounds=3,
        budget=8, plan_every=2, winner_bonus=1.0, exit_timing="after_round")))
    assert transcript(store, m["id"]) == [
        (0, 1, "C", "D"),                                # tft meets alld: both walk away
        (1, 1, "C", "C"), (1, 2, "C", "C"), (1, 3, "C", "C"),  # tft-allc: full length
        (2, 1, "C", "C"), (2, 2, "C", "C"), (2, 3, "C", "C"),  # tft-grim
        (3, 1, "D", "C"),                                # alld-allc: alld leaves
        (4, 1, "D", "C"),                                # alld-grim: both leave
        (5, 1, "C", "C"), (5, 2, "C", "C"), (5, 3, "C", "C"),  # allc-grim (intra, group 1)
    ]
    info = tournament(store, m["id"])
    assert [(x["players"], x["rounds"], x["ended"], x["left"]) for x in info["matches"]] == [
        ([0, 1], 1, "left", [0, 1]), ([0, 2], 3, "max_rounds", []), ([0, 3], 3, "max_rounds", []),
        ([1, 2], 1, "left", [1]), ([1, 3], 1, "left", [1, 3]), ([2, 3], 3, "max_rounds", []),
    ]
    assert info["used"] == [7, 3, 7, 7]
    assert info["points"] == [17, 15, 17, 17]     # -1+9+9, 5+5+5, 9-1+9, 9-1+9
    assert info["team_points"] == [32, 34] and info["winners"] == [1]
    assert seat_payoffs(store, m["id"]) == [17, 15, 34, 34]  # 100% bonus for group 1
    r = rounds(store, m["id"])
    assert [r[t][min(r[t])]["info"]["intra"] for t in sorted(r)] == [True] + [False] * 8 + [True] * 3
    assert all(r[t][min(r[t])]["info"]["first"] == (r[t][min(r[t])]["info"]["match_round"] == 1) for t in r)
    counts = dict(store.db.execute(
        "select phase, count(*) from decisions where match_id = ? group by phase", [m["id"]]).fetchall())
    # exits after every round except the last of a full match; plans when a player's own
    # count reaches 2, 4, 6 before a move: player 0 at t 3, 5, 7; 1 at t 9; 2 at t 4, 10, 12;
    # 3 at t 7, 10, 12 -> 10 plannings (draft + revision + critique)
    assert counts == {"play": 24, "exit": 18, "plan": 20, "critique": 10, "meta": 120}
    ph = store.db.execute("select round, info from phases where match_id = ? and phase = 'plan'",
                          [m["id"]]).fetchall()
    planned = sorted((t, int(s)) for t, info_ in ph for s in json.loads(info_))
    assert planned == [(3, 0), (4, 2), (5, 0), (7, 0), (7, 3), (9, 1), (10, 2), (10, 3),
                       (12, 2), (12, 3)]


async def test_budget_hard_skips_and_soft_plays_one_round(tmp_path: Any) -> None:
    # four cooperators, n = 3, N = 5: nobody leaves, only limits end matches
    seats = ["allc"] * 4
    common = {"structure": "SA", "teams": 2, "team_size": 2, "rounds": 3, "budget": 5,
              "planning": False, "meta": "off"}
    store, (hard,) = await run(tmp_path / "h", sweep_data(teams_exp(seats, **common)))
    info = tournament(store, hard["id"])
    assert [(x["rounds"], x["ended"]) for x in info["matches"]] == [
        (3, "max_rounds"), (2, "budget"), (0, "skipped"), (2, "budget"), (0, "skipped"), (1, "budget")]
    assert info["used"] == [5, 5, 5, 1] and info["points"] == [15, 15, 15, 3]
    store, (soft,) = await run(tmp_path / "s", sweep_data(teams_exp(seats, budget_rule="soft", **common)))
    info = tournament(store, soft["id"])
    # the public code checks the budget after a round: every later match plays one
    assert [(x["rounds"], x["ended"]) for x in info["matches"]] == [
        (3, "max_rounds"), (2, "budget"), (1, "budget"), (2, "budget"), (1, "budget"), (1, "budget")]
    assert info["used"] == [6, 6, 5, 3] and info["points"] == [18, 18, 15, 9]


async def test_gc_three_teams_meets_only_other_groups(tmp_path: Any) -> None:
    seats = ["tft", "alld", "allc", "tft", "grim", "alld"]  # groups {0,1} {2,3} {4,5}
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        seats, structure="GC", teams=3, team_size=2, rounds=2, budget=7, planning=False, meta="off")))
    info = tournament(store, m["id"])
    assert [tuple(x["players"]) for x in info["matches"]] == pairings("GC", 3, 2)
    assert not any(x["intra"] for x in info["matches"])
    # e.g. 0 tft vs 2 allc: two cooperative rounds; 1 alld vs 2 allc: one round, alld leaves
    by_pair = {tuple(x["players"]): (x["rounds"], x["ended"]) for x in info["matches"]}
    assert by_pair[(0, 2)] == (2, "max_rounds") and by_pair[(1, 2)] == (1, "left")
    assert by_pair[(1, 5)] == (1, "left")  # alld vs alld: D/D, both leave
    assert sum(x["rounds"] for x in info["matches"]) == len(rounds(store, m["id"]))


async def test_ri_shuffled_schedule_is_seeded(tmp_path: Any) -> None:
    exp = {"game": "ipd", "mechanism": "teams", "matchup": [["tft", "allc", "alld", "grim"]],
           "structure": "RI", "teams": 2, "team_size": 2, "rounds": 2, "budget": 5,
           "planning": False, "meta": "off"}
    store, (m,) = await run(tmp_path / "a", sweep_data(exp, seed=3))
    again, (m2,) = await run(tmp_path / "b", sweep_data(exp, seed=3))
    first = [x["players"] for x in tournament(store, m["id"])["matches"]]
    assert first == [x["players"] for x in tournament(again, m2["id"])["matches"]]
    assert sorted(tuple(sorted(p)) for p in first) == pairings("RI", 2, 2)
    expected = schedule("RI", 2, 2, "shuffled", _match_rng(store, m["id"]))
    assert [tuple(p) for p in first] == expected


def _match_rng(store: Store, match_id: str) -> np.random.Generator:
    from coop_tui.engine import derived_seed

    seed = store.db.execute("select seed from matches where id = ?", [match_id]).fetchone()[0]
    return np.random.default_rng(derived_seed(seed, "schedule"))


# ------------------------------------------------------------------ meta battery
def test_meta_truths_are_computed_from_the_match() -> None:
    log = MatchLog(0, (0, 1), [Round((C, C), (3, 3)), Round((D, C), (5, -1)), Round((C, D), (-1, 5))])
    view = log.view_of(0)  # co-player: C, C, D = tit-for-tat on player 0's C, D
    assert tft_share(view, C) == 1.0
    assert forgiveness(view, C) == 0.0  # after player 0's D (round 2) it played D
    assert forgiveness([(C, C, 3, 3)], C) is None

    def pay(a: int, b: int) -> float:
        return [[3, -1], [5, 0]][a][b]

    qs = {q.key: q for q in battery(pay, ("A0", "A1"), view, C, np.random.default_rng(1))}
    assert qs["payoff_range"].truth == {"lowest": -1, "highest": 5}
    assert qs["rounds"].truth == 3 and qs["co_total"].truth == 7
    assert qs["tit_for_tat"].truth == {"tit_for_tat": True}
    assert qs["forgiving"].truth == {"forgiving": False}
    assert qs["actions"].truth == {"A0": True, "A1": True, "A2": False}
    assert score_answer(qs["rounds"], 3) and not score_answer(qs["rounds"], 2)
    assert score_answer(qs["payoff_range"], {"lowest": -1, "highest": 5})
    assert not score_answer(qs["payoff_range"], None)  # unparseable: wrong, not guessed
    assert score_answer(qs["tit_for_tat"], {"tit_for_tat": True})


# ------------------------------------------------------------------ the move and leave in one answer
@pytest.mark.parametrize(("kind", "text", "move", "leave"), [
    ("mixed", '{"A0": 100, "A1": 0, "leave": false}', (1.0, 0.0), False),
    ("mixed", 'I defect. {"A0": 30, "A1": 70, "Leave": true}', (0.3, 0.7), True),
    ("choice", '{"choice": "A1", "leave": true}', "A1", True),
    ("choice", '{"choice": "A0", "leave": "no"}', "A0", False),
])
def test_a_combined_answer_parses_to_a_move_and_a_leave(
    kind: str, text: str, move: Any, leave: bool
) -> None:
    from coop_tui.parsing import parse_answer, parse_leave

    parsed, _note = parse_answer(kind, text, labels=("A0", "A1"), options={"ask_leave": True})
    assert (parsed.probabilities if kind == "mixed" else parsed) == pytest.approx(move)
    assert parse_leave(kind, text, ("A0", "A1"))[0] is leave


@pytest.mark.parametrize(("kind", "text", "reason"), [
    ("mixed", '{"A0": 100, "A1": 0}', 'needs the key "leave" beside the move'),
    ("choice", '{"choice": "A0"}', 'needs the key "leave" beside the move'),
    ("mixed", '{"A0": 100, "A1": 0, "leave": "maybe"}', "leave must be true or false"),
    ("mixed", '{"A0": 100, "A2": 0, "leave": true}', "unknown key 'A2'"),
    ("choice", "A0", 'no JSON object with the key "choice"'),
])
def test_a_malformed_combined_answer_is_refused_with_the_reason(kind: str, text: str, reason: str) -> None:
    from coop_tui.parsing import ParseError, parse_answer

    with pytest.raises(ParseError) as err:
        parse_answer(kind, text, labels=("A0", "A1"), options={"ask_leave": True})
    assert reason in err.value.reason
    # without the option, "leave" is no key of a move
    with pytest.raises(ParseError):
        parse_answer("mixed", '{"A0": 100, "A1": 0, "leave": true}', labels=("A0", "A1"))


def test_the_combined_answer_has_a_schema_a_grammar_and_a_typed_line() -> None:
    from coop_tui.agents.local import answer_grammar
    from coop_tui.schemas import answer_schema
    from coop_tui.session import human_answer

    schema = answer_schema("choice", ("A0", "A1"), {"ask_leave": True})
    assert schema is not None and schema["required"] == ["choice", "leave"]
    assert schema["properties"]["leave"] == {"type": "boolean"}
    kind, grammar = answer_grammar("choice", ("A0", "A1"), schema, {"ask_leave": True})
    assert kind == "gbnf" and 'leave ::= "," space "\\"leave\\""' in grammar
    mixed = answer_schema("mixed", ("A0", "A1"), {"ask_leave": True})
    kind, grammar = answer_grammar("mixed", ("A0", "A1"), mixed, {"ask_leave": True})
    assert kind == "gbnf" and 'root ::= "{" space z0 leave "}" space' in grammar
    assert json.loads(human_answer("1 leave", ("A0", "A1"), "mixed", ask_leave=True)) == {
        "A0": 0, "A1": 100, "leave": True}
    assert json.loads(human_answer("A0 stay", ("A0", "A1"), "choice", ask_leave=True)) == {
        "choice": "A0", "leave": False}
    with pytest.raises(ValueError, match="leave or stay"):
        human_answer("0", ("A0", "A1"), "mixed", ask_leave=True)


async def test_a_combined_answer_without_leave_is_asked_again_with_the_reason(tmp_path: Any) -> None:
    """Seat 0 (loopback model) first forgets "leave", then answers move and leave; the
    decision keeps the refused attempt and its reason, and one decision per player-round."""
    asked: list[str] = []

    def forgetful(body: dict[str, Any]) -> str:
        text = last_user_message(body)
        asked.append(text)
        if 'needs the key "leave"' in text:
            return '{"A0": 0, "A1": 100, "leave": true}'
        return '{"A0": 100, "A1": 0}'

    with LoopbackServer(latency=0.0, chunks=1, answer=forgetful) as server:
        store, (m,) = await run(tmp_path, sweep_data(teams_exp(
            ["m", "allc"], structure="RI", teams=2, team_size=1, rounds=3, budget=2,
            planning=False, meta="off"), agents={**STRATEGIES, "m": llm(server)}))
    (d,) = [d for d in store.decisions(m["id"]) if d.seat == 0]
    assert (d.phase, d.attempts, d.action, d.leave, d.valid) == ("play", 2, D, True, True)
    assert 'needs the key "leave" beside the move' in d.retries[0].error
    assert len(asked) == 2 and 'Add the key "leave"' in asked[0]
    assert [(x["rounds"], x["ended"], x["left"]) for x in tournament(store, m["id"])["matches"]] == [
        (1, "left", [0])]


# ------------------------------------------------------------------ prompts (loopback model)
def teams_model(body: dict[str, Any]) -> str:
    """Cooperates, stays, writes DRAFT / CRITIQUE / REVISED, and knows the payoff range."""
    text = last_user_message(body)
    if "You write the strategy" in text:
        return "REVISED plan" if "A critic reviewed the plan" in text and "DRAFT" in text else "DRAFT plan"
    if "You review the strategy" in text:
        return "CRITIQUE: be concrete"
    if 'Add the key "leave"' in text:  # the move and the keep-playing choice at once
        return '{"A0": 100, "A1": 0, "leave": false}'
    if '"leave"' in text:
        return '{"leave": false}'
    if "Question:" in text:
        if "lowest and the highest" in text:
            return '{"lowest": -1, "highest": 5}'
        keys = re.findall(r'"(\w+)": (?:false|<)', text.split("Question:")[1])
        if keys and keys != ["answer"]:
            return json.dumps({k: False for k in keys})
        return '{"answer": 3}'
    return '{"A0": 100, "A1": 0}'


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=teams_model) as server:
        yield server


def llm(server: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test", "style": "direct"}


def play_prompts(store: Store, match_id: str, seat: int) -> list[str]:
    return [prompt_text(d.prompt) for d in store.decisions(match_id) if d.phase == "play" and d.seat == seat]


@pytest.mark.parametrize(("structure", "revised", "timing"), [
    ("SA", True, "after_round"), ("RI", False, "separate"), ("GC", True, "with_move")])
async def test_prompts_unknown_opponent_plans_and_exit_timing(
    tmp_path: Any, model: LoopbackServer, structure: str, revised: bool, timing: str
) -> None:
    # one player per group: n = 4, N = 3, K = 2 -> plan before round 3, budget ends round 3
    agents = {**STRATEGIES, "m": llm(model)}
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m", "m"], structure=structure, teams=2, team_size=1, rounds=4, budget=3, plan_every=2,
        revised_plan=revised, exit_timing=timing), agents=agents))
    prompts = play_prompts(store, m["id"], 0)
    assert len(prompts) == 3
    assert "co-player in this match is Agent unknown" in prompts[0] and "is Agent #2" not in prompts[0]
    assert "co-player in this match is Agent #2" in prompts[1]
    personal = "Your goal is to collect as many points as you can"
    if structure == "SA":
        assert "Group unknown" in prompts[0] and "from Group 2" in prompts[1]
        assert "the highest group score and the highest personal score" in prompts[0]
        assert personal in prompts[0]
    elif structure == "GC":  # the paper's GC goal: the group's score, and nothing personal
        assert "Group unknown" in prompts[0] and "from Group 2" in prompts[1]
        assert "Your goal: your group should end with the highest group score" in prompts[0]
        assert personal not in prompts[0] and "personal" not in prompts[0]
        assert all(personal not in p and "personal" not in p for p in prompts)
    else:
        assert "Group" not in prompts[0] and "highest personal score" in prompts[0]
        assert personal in prompts[0]
    exit_prompt = next((prompt_text(d.prompt) for d in store.decisions(m["id"])
                        if d.phase == "exit" and d.seat == 0), None)
    if timing == "with_move":  # in the move's own prompt and answer: no exit request
        assert exit_prompt is None
        assert "Together with your action, decide whether to leave this match" in prompts[0]
        assert 'Add the key "leave" to the same object' in prompts[0]
        assert prompts[0].endswith('{"A0": <INT>, "A1": <INT>, "leave": <true/false>}')
        plays = [d for d in store.decisions(m["id"]) if d.phase == "play"]
        assert [(d.response, d.leave) for d in plays[:2]] == [('{"A0": 100, "A1": 0, "leave": false}', False)] * 2
        assert all(d.options == {"ask_leave": True} for d in plays)
    elif timing == "separate":  # asked beside the first move: nothing of round 1 shown yet
        assert "Together with your action for this round" in exit_prompt
        assert "co-player in this match is Agent unknown" in exit_prompt
        assert "no rounds played yet" in exit_prompt
    else:  # asked once round 1 is known
        assert "leave this match now" in exit_prompt and "Round 1: you chose" in exit_prompt
    assert "plan" not in prompts[1].split("This match so far")[1]
    assert ("REVISED plan" in prompts[2]) is revised
    assert ("DRAFT plan" in prompts[2]) is (not revised)
    ph = phases(store, m["id"])
    exits = store.db.execute("select round from phases where match_id = ? and phase = 'exit' "
                             "order by round", [m["id"]]).fetchall()
    # after a round: not after the budget's last round; with the move: every round
    assert [t for (t,) in exits] == ([1, 2] if timing == "after_round" else [1, 2, 3])
    assert tournament(store, m["id"])["matches"][0]["ended"] == "budget"
    meta = ph["meta"]["0"]["questions"]
    by_key = {q["key"]: q for q in meta}
    assert by_key["payoff_range"]["correct"] is True
    assert by_key["rounds"]["correct"] is True   # 3 rounds, the model says 3
    assert by_key["tit_for_tat"]["correct"] is False  # the co-player did play tit-for-tat-like C, C, C
    kinds = {d.phase for d in store.decisions(m["id"])}
    assert kinds == {"play", "plan", "critique", "meta"} | (set() if timing == "with_move" else {"exit"})


async def test_exit_comes_with_the_move_by_default(tmp_path: Any) -> None:
    """The paper's keep-playing choice is made with the move, before the round's outcome.
    RI of 0 alt, 1 allc, 2 tft (three groups of one), n = 3, N = 5 (< 3 * 2), ordered.
    Strategies leave when they would not cooperate next *given what they have seen*: with
    the move, the alternator sees its round-1 C only in round 2, where it plays D and
    leaves; after the round it has seen round 1 and leaves at once."""
    seats = ["alt", "allc", "tft"]
    params = {"structure": "RI", "teams": 3, "team_size": 1, "rounds": 3, "budget": 5,
              "planning": False, "meta": "off"}
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(seats, **params)))
    assert transcript(store, m["id"]) == [
        (0, 1, "C", "C"), (0, 2, "D", "C"),                   # alt-allc: alt leaves with its D
        (1, 1, "C", "C"), (1, 2, "D", "C"),                   # alt-tft: the same
        (2, 1, "C", "C"), (2, 2, "C", "C"), (2, 3, "C", "C"),  # allc-tft: full length
    ]
    info = tournament(store, m["id"])
    assert [(x["rounds"], x["ended"], x["left"]) for x in info["matches"]] == [
        (2, "left", [0]), (2, "left", [0]), (3, "max_rounds", [])]
    exits = store.db.execute("select round, json_extract(info, '$.timing') from phases"
                             " where match_id = ? and phase = 'exit' order by round", [m["id"]]).fetchall()
    assert exits == [(t, "with_move") for t in range(1, 8)]  # decided with every move
    counts = dict(store.db.execute("select phase, count(*) from decisions where match_id = ?"
                                   " group by phase", [m["id"]]).fetchall())
    assert counts == {"play": 14}  # one answer per player and round: move and leave
    # the alternator's answers in match 0: what it answers, the move and leave read from it
    alt = [(d.round, d.response, d.action, d.leave) for d in store.decisions(m["id"]) if d.seat == 0][:2]
    assert alt == [(1, '{"A0": 100, "A1": 0, "leave": false}', C, False),
                   (2, '{"A0": 0, "A1": 100, "leave": true}', D, True)]
    store.close()
    # the exit as its own request from the same pre-round state: the same tournament,
    # twice the requests
    store, (m,) = await run(tmp_path / "separate", sweep_data(teams_exp(
        seats, **params, exit_timing="separate")))
    assert transcript(store, m["id"]) == [
        (0, 1, "C", "C"), (0, 2, "D", "C"), (1, 1, "C", "C"), (1, 2, "D", "C"),
        (2, 1, "C", "C"), (2, 2, "C", "C"), (2, 3, "C", "C")]
    counts = dict(store.db.execute("select phase, count(*) from decisions where match_id = ?"
                                   " group by phase", [m["id"]]).fetchall())
    assert counts == {"play": 14, "exit": 14}
    store.close()
    store, (m,) = await run(tmp_path / "after", sweep_data(teams_exp(
        seats, **params, exit_timing="after_round")))
    assert transcript(store, m["id"]) == [
        (0, 1, "C", "C"), (1, 1, "C", "C"),
        (2, 1, "C", "C"), (2, 2, "C", "C"), (2, 3, "C", "C")]


def prompt_of(store: Store, match_id: str, phase: str, seat: int, t: int) -> str:
    """The first prompt of that phase, seat and tournament round (the draft, for plans)."""
    return next(d.prompt[-1]["content"] for d in store.decisions(match_id)
                if d.phase == phase and d.seat == seat and d.round == t)


@pytest.mark.parametrize("structure", ["SA", "RI"])
async def test_planner_sees_the_co_player_and_the_match_stats_as_the_code_does(
    tmp_path: Any, model: LoopbackServer, structure: str
) -> None:
    """The public code's planner and critic are told the real co-player (only the move
    of a match's first round hides it), the current match's stats of both players, and
    every past match headed by its two players and (not in RI) their groups.
    2 x 2, n = 3, N = 8, K = 2, ordered, everyone cooperates: Agent #1 plays t 1-3 against
    #2, t 4-6 against #3 and plans before t 3, 5 and 7 (used 2, 4, 6)."""
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure=structure, teams=2, team_size=2, rounds=3, budget=8, plan_every=2,
        meta="off"), agents={**STRATEGIES, "m": llm(model)}))
    grouped = structure != "RI"

    def who(seat: int) -> str:
        return f"Agent #{seat + 1}" + (f" from Group {seat // 2 + 1}" if grouped else "")

    first = prompt_of(store, m["id"], "plan", 0, 7)  # the first round of the match with #4
    assert f"Your co-player in this match is {who(3)}." in first and "unknown" not in first.split(
        "Players' stats")[0]
    assert ("Players' stats in the current match:\n"
            "- Agent #1: share of A0 unknown, points 0\n"
            "- Agent #4: share of A0 unknown, points 0\n"
            "Everything Agent #1 has played so far:\n"
            f"Match between {who(0)} and {who(1)}:\n") in first
    assert f"Match between {who(0)} and {who(2)}:\n- Round 1: you chose A0" in first
    assert "Match against" not in first
    if grouped:  # the rank alone, as the paper's code (standings = "points" adds them)
        assert "Your group is ranked 1 of 2." in first and "points):" not in first
    middle = prompt_of(store, m["id"], "plan", 0, 5)  # round 2 against #3: one round played
    assert ("- Agent #1: share of A0 100%, points 3\n"
            "- Agent #3: share of A0 100%, points 3\n") in middle
    critique = prompt_of(store, m["id"], "critique", 0, 7)
    assert f"Your co-player in this match is {who(3)}." in critique
    assert "- Agent #4: share of A0 unknown, points 0" in critique
    # the move of that round still meets an unknown co-player (one-shot cooperation)
    play = prompt_of(store, m["id"], "play", 0, 7)
    assert "Your co-player in this match is Agent unknown" in play and "Players' stats" not in play
    assert ("from Group unknown" in play) is grouped



async def test_planner_and_critic_are_told_the_current_match_round(
    tmp_path: Any, model: LoopbackServer
) -> None:
    """The public code's rules block gives its planner and critic the current round of the
    match (the round about to be played), as it gives the move. 2 x 2, n = 3, N = 8, K = 2,
    ordered, everyone cooperates: Agent #1 plans before its match rounds 3 (against #2),
    2 (against #3) and 1 (against #4), at tournament rounds 3, 5 and 7."""
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure="SA", teams=2, team_size=2, rounds=3, budget=8, plan_every=2,
        meta="off"), agents={**STRATEGIES, "m": llm(model)}))
    for t, match_round in ((3, 3), (5, 2), (7, 1)):
        asked = [d.prompt[-1]["content"] for d in store.decisions(m["id"])
                 if d.phase in ("plan", "critique") and d.seat == 0 and d.round == t]
        assert len(asked) == 3  # draft, critique, revision
        for prompt in asked:
            assert f"This is round {match_round} of the current match (at most 3).\n" in prompt

async def test_one_numbering_in_every_prompt(tmp_path: Any, model: LoopbackServer) -> None:
    """A player is "Agent #k" everywhere: the game wrapper's "you are Player 2" (its
    seat in the two-player game) is left out of the move's prompt."""
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure="SA", teams=2, team_size=2, rounds=2, budget=5, plan_every=2,
        meta="first_player", exit_timing="separate"), agents={**STRATEGIES, "m": llm(model)}))
    decisions = store.decisions(m["id"])
    assert {d.phase for d in decisions} == {"play", "exit", "plan", "critique", "meta"}
    for d in decisions:
        text = d.prompt[-1]["content"]
        assert re.search(r"\bPlayer \d", text) is None, (d.phase, d.seat, text)
        assert text.count(f"You are Agent #{d.seat + 1} in Group {d.seat // 2 + 1}.") == 1
    second = prompt_of(store, m["id"], "play", 1, 1)  # Agent #2 sits second in its first match
    assert "Players are numbered" not in second and "If it matters" not in second


async def test_report_curves_follow_the_papers_figures(tmp_path: Any) -> None:
    """Figure 2's curve is the running share within the current match at a player's r-th
    round; the paper's mu_c pools those running shares (the run above, by hand)."""
    from coop_tui.report import build_report

    data = sweep_data(teams_exp(["alt", "allc", "tft"], structure="RI", teams=3, team_size=1,
                                rounds=3, budget=5, planning=False, meta="off"))
    store, (m,) = await run(tmp_path, data)
    (c,) = build_report(store, m["run_id"])["teams"]["conditions"]
    # alt: C D | C D (matches 0, 1) -> within-match 1, 1/2, 1, 1/2 (cumulative 1, 1/2, 2/3, 1/2)
    # allc: 5 x C; tft: 5 x C
    assert [p["x"] for p in c["per_round"]] == [1, 2, 3, 4, 5]
    assert [p["mean"] for p in c["per_round"]] == pytest.approx([1, 5 / 6, 1, 5 / 6, 1])
    assert [p["mean"] for p in c["per_round_cumulative"]] == pytest.approx([1, 5 / 6, 8 / 9, 5 / 6, 1])
    assert c["mu_c_running"]["mean"] == pytest.approx(13 / 14)   # 4 + 5 + 5 running shares
    assert c["mu_c_running"]["n"] == 14
    assert c["mu_c"]["mean"] == pytest.approx(12 / 14)
    assert [p["mean"] for p in c["osc_curve"]] == [1, 1, 1]


# ------------------------------------------------------------------ report section
async def test_report_gives_mu_c_one_shot_intra_inter_and_scores(tmp_path: Any) -> None:
    from rich.console import Console

    from coop_tui.report import build_report, render_text

    data = sweep_data(teams_exp(
        ["tft", "alld", "allc", "grim"], structure="SA", teams=2, team_size=2, rounds=3,
        budget=8, plan_every=2, winner_bonus=1.0, exit_timing="after_round"))
    data["replicates"] = 2  # strategies: both replications play the same transcript
    store, matches = await run(tmp_path, data)
    assert len(matches) == 2
    report = build_report(store, matches[0]["run_id"])
    (c,) = report["teams"]["conditions"]
    assert c["structure"] == "SA" and c["tournaments"] == 2
    # 21 of 24 moves cooperate (alld's three Ds); identical replications: a zero-width interval
    assert c["mu_c"]["mean"] == pytest.approx(21 / 24) and c["mu_c"]["ci"] == pytest.approx([21 / 24] * 2)
    # first rounds: (C,D) (C,C) (C,C) (D,C) (D,C) (C,C); intra = pairings 0 and 5
    # the paper's mu_osc (Tables 6-8): every first move is one value, pooled over both
    # tournaments, the interval over those 24 values. First rounds: (C,D) (C,C) (C,C)
    # (D,C) (D,C) (C,C); intra = pairings 0 and 5
    t23, t3 = 2.0686576104190406, 3.182446305284263   # Student t 0.975 quantiles, 23 and 3 df
    osc = c["one_shot"]["all"]
    assert osc["mean"] == pytest.approx(18 / 24) and osc["n"] == 24
    half = t23 * (0.75 * 0.25 * 24 / 23) ** 0.5 / 24 ** 0.5
    assert osc["ci"] == pytest.approx([0.75 - half, 0.75 + half])
    assert c["one_shot"]["intra"]["mean"] == pytest.approx(3 / 4) and c["one_shot"]["intra"]["n"] == 8
    assert c["one_shot"]["inter"]["mean"] == pytest.approx(6 / 8) and c["one_shot"]["inter"]["n"] == 16
    # Figure 4: the mean of per-match rates. Intra matches: tft-alld 1/2, allc-grim 1 (per
    # tournament); inter: 1, 1, 1/2, 1/2. Pooled rounds would give 7/8 and 14/16 instead.
    assert c["intra"]["mean"] == pytest.approx(3 / 4) and c["intra"]["n"] == 4
    half = t3 * (0.25 / 3) ** 0.5 / 2
    assert 0.75 + half > 1  # the share's interval is clipped to [0, 1], as the figures draw it
    assert c["intra"]["ci"] == pytest.approx([0.75 - half, 1.0])
    assert c["inter"]["mean"] == pytest.approx(3 / 4) and c["inter"]["n"] == 8
    # Figure 2: alld (3 rounds) pulls a player's rounds 1-3 down to 3/4; rounds 4-7 are 1
    assert [p["mean"] for p in c["per_round"]] == pytest.approx([0.75, 0.75, 0.75, 1, 1, 1, 1])
    # Figure 3: the share of cooperative first moves after each match, in play order
    assert [p["mean"] for p in c["osc_curve"]] == pytest.approx([1 / 2, 3 / 4, 5 / 6, 6 / 8, 7 / 10, 9 / 12])
    assert c["exits"]["left"]["mean"] == 0.5 and c["exits"]["match_length"]["mean"] == 2.0
    assert [t["points"]["mean"] for t in c["teams"]] == [32, 34] and [t["wins"] for t in c["teams"]] == [0, 2]
    assert [p["final"]["mean"] for p in c["players"]] == [17, 15, 34, 34]
    # strategies answer 0 / false: right only where the truth is 0 or false
    assert 0 < c["meta_accuracy"]["all"]["mean"] < 0.5
    assert c["meta_accuracy"]["by_question"]["payoff_range"] == 0
    console = Console(width=200, record=True, color_system=None)
    console.print(render_text(report))
    text = console.export_text()
    assert "Team tournaments" in text and "0.88" in text
    assert "Figure 2" in text and "Figure 3" in text


async def test_osc_curve_pads_shorter_tournaments_and_share_intervals_stay_in_0_1(tmp_path: Any) -> None:
    """Figure 3 as the public code makes it: a tournament that played fewer matches (a
    small budget skips the last ones) keeps its last one-shot share at every later point,
    so every point averages all four tournaments (it averaged only those that got there);
    a share's interval is clipped to [0, 1] as the figures draw it."""
    from coop_tui.analysis.sections.teams import tournament_metrics
    from coop_tui.report import build_report

    data = sweep_data(teams_exp(["alt", "alld", "tft", "allc"], structure="RI", teams=2,
                                team_size=2, rounds=3, budget=4, planning=False, meta="off",
                                schedule="shuffled"))
    data["replicates"] = 4
    store, matches = await run(tmp_path, data)
    curves = [tournament_metrics(store, m["id"])["osc_curve"] for m in matches]
    lengths = sorted(len(c) for c in curves)
    assert lengths[0] < lengths[-1]  # the schedules skip different numbers of matches
    (c,) = build_report(store, matches[0]["run_id"])["teams"]["conditions"]
    osc = c["osc_curve"]
    assert [p["x"] for p in osc] == list(range(1, lengths[-1] + 1))
    assert [p["n"] for p in osc] == [4] * lengths[-1]
    last = [c_[-1] for c_ in curves]
    assert osc[-1]["mean"] == pytest.approx(sum(last) / 4)
    for point in osc:
        k = point["x"]
        values = [c_[min(k, len(c_)) - 1] for c_ in curves]
        assert point["mean"] == pytest.approx(sum(values) / 4)
    bounds = [b for p in osc if p["ci"] for b in p["ci"]]
    bounds += [b for key in ("mu_c", "mu_c_running", "intra", "inter")
               if c[key]["ci"] for b in c[key]["ci"]]
    assert bounds and all(0.0 <= b <= 1.0 for b in bounds)
    assert 1.0 in bounds  # an unclipped bound lay above 1 (n = 4, wide t-intervals)
    store.close()


async def test_self_play_of_several_agents_reports_one_condition_each(tmp_path: Any) -> None:
    from coop_tui.report import build_report

    store, matches = await run(tmp_path, sweep_data(
        {"game": "ipd", "mechanism": "teams", "matchup": "self", "agents": ["tft", "alld"],
         "teams": 2, "team_size": 2, "rounds": 2, "planning": False, "meta": "off"}))
    conditions = build_report(store, matches[0]["run_id"])["teams"]["conditions"]
    by_agent = {tuple(c["agents"]): c for c in conditions}
    assert set(by_agent) == {("tft",), ("alld",)}
    assert by_agent[("tft",)]["mu_c"]["mean"] == 1 and by_agent[("alld",)]["mu_c"]["mean"] == 0
    # alld players leave after every first round; tft players never leave, but the default
    # budget N = n*m - 1 = 5 caps four players at 4 * 5 / 2 = 10 rounds over 6 matches;
    # the seeded schedule (seeded by the match key) leaves one round unplayed here
    assert by_agent[("alld",)]["exits"]["match_length"]["mean"] == 1
    assert by_agent[("tft",)]["exits"]["match_length"]["mean"] == pytest.approx(9 / 6)
    assert by_agent[("tft",)]["exits"]["left"]["mean"] == 0


async def test_a_cross_play_team_population_is_not_a_coopeval_population_table(tmp_path: Any) -> None:
    """A teams tournament filled from the roster by cross-play is stored as a population,
    like Reputation; CoopEval's Mean/Fitness tables are about Reputation populations and
    cross-play metagames only, so they must not list it."""
    from coop_tui.report import build_report

    exp = teams_exp(["tft", "alld", "allc", "grim"], structure="SA", teams=2, team_size=2,
                    rounds=2, budget=3, plan_every=2)
    exp["matchup"] = "cross"
    exp["agents"] = ["tft", "alld"]
    store, matches = await run(tmp_path, sweep_data(exp))
    assert matches and {m["matchup"] for m in matches} == {"population"}
    report = build_report(store, matches[0]["run_id"])
    assert report["teams"]["conditions"]
    assert not report.get("tables")


@pytest.mark.parametrize("standings", [None, "points"])
async def test_group_standings_show_rank_only_as_the_code_does(
    tmp_path: Any, model: LoopbackServer, standings: str | None
) -> None:
    """The paper's code tells a GC or SA player its group's rank, never the groups'
    points: that is the default; ``standings = "points"`` (ours) adds every group's points."""
    extra = {} if standings is None else {"standings": standings}
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure="SA", teams=2, team_size=2, rounds=3, budget=8, plan_every=2,
        meta="off", **extra), agents={**STRATEGIES, "m": llm(model)}))
    first = prompt_of(store, m["id"], "plan", 0, 7)
    assert "Your group is ranked 1 of 2." in first
    if standings == "points":
        assert "Group standings so far (points): Group 1 27, Group 2 9. Your group is ranked" in first
    else:
        assert "points):" not in first and "Group 2 9" not in first


@pytest.mark.parametrize(("rank_counts", "shown"), [
    (None, "Group 1 0, Group 2 0"), ("live", "Group 1 12, Group 2 0")])
async def test_the_group_rank_counts_finished_matches_only(
    tmp_path: Any, model: LoopbackServer, rank_counts: str | None, shown: str
) -> None:
    """The paper's code adds a match's points to the group scores when the match ends, so
    mid-match the rank (and our points standings) count finished matches only: the
    default; ``rank_counts = "live"`` (ours) counts every point so far."""
    extra = {} if rank_counts is None else {"rank_counts": rank_counts}
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure="SA", teams=2, team_size=2, rounds=3, budget=8, plan_every=2,
        meta="off", standings="points", **extra), agents={**STRATEGIES, "m": llm(model)}))
    mid_match = prompt_of(store, m["id"], "plan", 0, 3)  # round 3 of the first match
    assert f"Group standings so far (points): {shown}. Your group is ranked 1 of 2." in mid_match
    after = prompt_of(store, m["id"], "plan", 0, 7)  # both agree once matches have ended
    assert "Group standings so far (points): Group 1 27, Group 2 9." in after


PLANNER_ITEMS = ("when does it choose A0, and when the other action?", "which actions answer that pattern",
                 "playing on with this co-player pays, or moving on", "building trust with A0, or taking advantage",
                 "Say which action to choose and when")
CRITIC_ITEMS = ("keeps to the rules of the game", "what the co-player has done so far",
                "answers the co-player's strategy", "short- and the long-term payoff",
                "which action to choose and when?")
GOALS = ("your personal goal and your group's goal", "your personal goal against your group's goal")


@pytest.mark.parametrize("structure", ["SA", "GC", "RI"])
async def test_planner_and_critic_checklists_carry_every_item_of_the_code(
    tmp_path: Any, model: LoopbackServer, structure: str
) -> None:
    """The public code's planner lists opponent patterns, the counter, staying or moving
    on, short- against long-term (trust or betrayal) and, outside RI, individual and group
    goals, in every plan (a revision too); its critic: the rules, the opponent's strategy
    described, countered, short against long term, specificity and, outside RI, the goals."""
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m"] * 4, structure=structure, teams=2, team_size=2, rounds=3, budget=8 if structure != "GC" else 4,
        plan_every=2, meta="off"), agents={**STRATEGIES, "m": llm(model)}))
    plans = [d.prompt[-1]["content"] for d in store.decisions(m["id"]) if d.phase == "plan"]
    critiques = [d.prompt[-1]["content"] for d in store.decisions(m["id"]) if d.phase == "critique"]
    assert plans and critiques and any("A critic reviewed the plan" in p for p in plans)
    for prompt in plans:
        assert all(item in prompt for item in PLANNER_ITEMS), prompt
        assert (GOALS[0] in prompt) == (structure != "RI")
    for prompt in critiques:
        assert all(item in prompt for item in CRITIC_ITEMS), prompt
        assert (GOALS[1] in prompt) == (structure != "RI")
        assert "stay or leave" not in prompt  # not an item of the code's critic


async def test_an_unreadable_meta_answer_counts_as_wrong_and_the_match_plays_on(tmp_path: Any) -> None:
    """The battery measures a match already played: the paper's code scores an answer it
    cannot read as wrong and plays on, so ours stores the answer invalid with its reason,
    counts it wrong and never fails the match for it (even under on_invalid = "abort")."""

    def answer(body: dict[str, Any]) -> str:
        if '"lowest"' in last_user_message(body):
            return '{"lowest": -1, "highest": 9999}'  # above the stated maximum, every time
        return teams_model(body)

    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as server:
        store, (m,) = await run(tmp_path, sweep_data(teams_exp(
            ["m"] * 4, structure="SA", teams=2, team_size=2, rounds=2, budget=4, plan_every=2,
            meta="first_player", meta_questions=["payoff_range"]),
            agents={**STRATEGIES, "m": llm(server)}))
    meta = [d for d in store.decisions(m["id"]) if d.phase == "meta"]
    assert meta and all(not d.valid and "above the maximum" in (d.error or "") for d in meta)
    info = phases(store, m["id"])["meta"]
    assert all(entry["accuracy"] == 0 for entry in info.values())
    assert all(q["valid"] is False and q["correct"] is False
               for entry in info.values() for q in entry["questions"])
