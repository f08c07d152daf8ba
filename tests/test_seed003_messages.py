"""prompt_protocol "seed003": the information of every message family against the strategic
personalities paper's code (FelipeMAffonso/strategic-personalities, ``environments/``).

One test per family — a simultaneous matrix game, a numeric move, an accept/reject move, a
signalling move and the centipede — plays a real match over the loopback server and checks
what the stored messages tell the model: the roles, the game's name, the answer format and
its example, the horizon statement, and the goal (none at baseline, as the code states a goal
only in its goal_* conditions). The assertions are on content, not on whole sentences: the
wording is ours.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import Decision
from coop_tui.parsing import ParseError, parse_answer
from coop_tui.schemas import tag_gbnf
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message


def scripted(body: dict[str, Any]) -> str:
    """Answers in the form each message asks for: a word where a word is asked, an option
    letter where letters are offered, 4 for a number."""
    text = last_user_message(body)
    if "one word: accept or reject" in text:
        return "I turn it down.\n<answer>reject</answer>"
    if "one word: signal or no_signal" in text:
        return "Too costly.\n<answer>no_signal</answer>"
    offered = re.search(r"one option: Option (\w+)", text)
    if offered:
        return f"<answer>Option {offered.group(1)}</answer>"
    return "<answer>4</answer>"


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted) as server:
        yield server


def agents(server: LoopbackServer, **others: Any) -> dict[str, Any]:
    return {"m": {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
                  "style": "plain"}, **others}


async def decisions(tmp_path: Path, experiment: dict[str, Any],
                    seats: dict[str, Any]) -> list[Decision]:
    """Play one experiment under the code's protocol; the model's stored decisions."""
    data = {"name": "msg", "seed": 3, "max_attempts": 2, "on_invalid": "abort",
            "agents": seats, "experiments": [
                {"prompt_protocol": "seed003", "rounds_told": "two_by_two", **experiment}]}
    store = Store(tmp_path / "msg.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    return [d for d in store.decisions(match["id"]) if d.agent == "m"]


def split(d: Decision) -> tuple[str, str]:
    system, user = d.prompt
    assert (system["role"], user["role"]) == ("system", "user")
    return system["content"], user["content"]


GOAL_WORDS = re.compile(r"\bgoal\b|as many points|\baim\b", re.IGNORECASE)


async def test_matrix_game_states_no_goal_at_baseline_and_the_conditions_goal(
        tmp_path: Path, model: LoopbackServer) -> None:
    pd = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known", "rounds": 2,
          "answer": "choice", "randomize_labels": "trial", "matchup": [["m", "tft"]]}
    seats = agents(model, tft={"strategy": "tit_for_tat_sp"})
    baseline = await decisions(tmp_path / "b", pd, seats)
    for d in baseline:
        system, user = split(d)
        assert not GOAL_WORDS.search(system + user), "the code's baseline states no goal"
        assert "Player" in system and "Payoff description" in system
        assert f"round {d.round} of 2" in user  # two-by-two games: "round t of T", as the code
        assert re.search(r"<answer>Option [A-Z]</answer>", user)  # letters, as the code
        assert d.valid and d.attempts == 1
    goal = await decisions(tmp_path / "g", {**pd, "condition": "goal_maximise"}, seats)
    system, _ = split(goal[0])
    assert len(GOAL_WORDS.findall(system)) == 2  # the condition's one sentence ("aim", "as many points")
    assert "all rounds" in system


async def test_numeric_moves_name_the_game_the_role_and_the_codes_example(
        tmp_path: Path, model: LoopbackServer) -> None:
    ultimatum = await decisions(tmp_path / "u", {
        "game": "ultimatum", "game_params": {"rounds": 2}, "mechanism": "none",
        "matchup": [["m", "resp"]]}, agents(model, resp={"strategy": "threshold_responder"}))
    trust = await decisions(tmp_path / "t", {
        "game": "trust_berg", "game_params": {"rounds": 1}, "mechanism": "none",
        "matchup": [["m", "ret"]]}, agents(model, ret={"strategy": "trust_proportional"}))
    for d, name, role, example in [(ultimatum[0], "the Ultimatum Game", "the Proposer", 40),
                                   (trust[0], "the Trust Game", "the Investor", 5)]:
        system, user = split(d)
        assert name in system and role in system + user
        assert not GOAL_WORDS.search(system + user)
        assert f"for example: <answer>{example}</answer>" in user and "in place of N" not in user
        assert "This is round 1." in user and "round 1 of" not in user  # "round t", as the code
        assert d.valid and d.parsed == 4
    assert "What happened so far" in split(ultimatum[1])[1]  # the history of round 1


async def test_accept_or_reject_is_asked_and_read_as_the_word(
        tmp_path: Path, model: LoopbackServer) -> None:
    [d] = await decisions(tmp_path, {
        "game": "ultimatum", "game_params": {"rounds": 1}, "mechanism": "none",
        "matchup": [["prop", "m"]]},
        agents(model, prop={"strategy": "fixed_number", "params": {"value": 40}}))
    system, user = split(d)
    assert "the Ultimatum Game" in system and "the Responder" in system + user
    assert "offers you 40" in user and not GOAL_WORDS.search(system + user)
    assert "one word: accept or reject" in user
    assert "<answer>accept</answer>" in user and "Option" not in user
    assert (d.valid, d.attempts, d.parsed, d.labels) == (True, 1, "reject", ("accept", "reject"))
    assert d.normalisation == "from the <answer> tag"


async def test_signalling_asks_for_the_signal_word_and_names_the_game(
        tmp_path: Path, model: LoopbackServer) -> None:
    sender, receiver = await decisions(tmp_path, {
        "game": "signaling", "game_params": {"rounds": 1}, "mechanism": "none",
        "matchup": [["m", "m"]]}, agents(model))
    system, user = split(sender)
    assert "a Signaling Game" in system and "the Sender" in system + user
    assert "one word: signal or no_signal" in user and "<answer>signal</answer>" in user
    assert (sender.valid, sender.parsed) == (True, "no_signal")
    _, user = split(receiver)
    assert "one word: accept or reject" in user and (receiver.valid, receiver.parsed) == (
        True, "reject")


@pytest.mark.parametrize("described", [None, "exact"])
async def test_centipede_tells_the_codes_payoff_description_unless_exact_is_asked(
        tmp_path: Path, model: LoopbackServer, described: str | None) -> None:
    params: dict[str, Any] = {"rounds": 1, **({"described": described} if described else {})}
    [d] = await decisions(tmp_path, {
        "game": "centipede_6", "game_params": params, "mechanism": "none",
        "matchup": [["m", "plan"]]},
        agents(model, plan={"strategy": "fixed_number", "params": {"value": 7}}))
    system, user = split(d)
    assert "the Centipede Game" in system and "6 decision nodes" in system
    assert "for example: <answer>4</answer>" in user and "node 1" in user  # the equilibrium hint
    assert not GOAL_WORDS.search(system + user)
    code_words = ("starts at 2 points", "roughly doubles", "about 2/3", "split equally")
    schedule = "node 2 (Player 2 takes): 2 and 8"
    if described is None:  # the default: the code's information, inaccurate as it is
        assert all(w in system for w in code_words) and schedule not in system
    else:
        assert schedule in system and not any(w in system for w in code_words)
    assert d.valid and d.parsed == 4


async def test_the_other_protocol_keeps_its_goal_and_letters(
        tmp_path: Path, model: LoopbackServer) -> None:
    data = {"name": "msg", "seed": 3, "max_attempts": 2, "on_invalid": "uniform",
            "agents": agents(model, prop={"strategy": "fixed_number", "params": {"value": 40}}),
            "experiments": [{"game": "ultimatum", "game_params": {"rounds": 1},
                             "mechanism": "none", "matchup": [["prop", "m"]]}]}
    store = Store(tmp_path / "c.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    [d] = [d for d in store.decisions(match["id"]) if d.agent == "m"]
    first = d.prompt[0]  # one user message (a re-ask adds the reply and the reason after it)
    assert first["role"] == "user" and "Your goal is to collect as many points" in first["content"]
    assert "the Ultimatum Game" in first["content"] and "accept" not in d.labels


def test_word_answers_have_a_word_grammar_and_a_word_reason() -> None:
    """The embedded model's grammar writes the word the prompt asks for, and a tag naming
    neither word is re-asked naming the words (not "Option accept")."""
    grammar = tag_gbnf("choice", ("accept", "reject"), {"words": True, "form": "tag"})
    assert grammar is not None and '"<answer>" ( "accept" | "reject" )' in grammar
    assert "Option" in (tag_gbnf("choice", ("J", "F"), {"form": "tag"}) or "")
    words = ("accept", "reject")
    assert parse_answer("choice", "<answer>Reject</answer>", labels=words)[0] == "reject"
    with pytest.raises(ParseError, match=r"exactly one option \(accept or reject\)"):
        parse_answer("choice", "<answer>maybe</answer>", labels=words)
