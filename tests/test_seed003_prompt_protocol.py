"""prompt_protocol = "seed003": what a seat receives and what its answer parses to.

The strategic personalities paper's code sends the rules as a system message and the round (history and question)
as a user message, asks for the answer in ``<answer>`` tags (``<answer>Option J</answer>``,
a number for numeric moves) and reads numbers as decimals. These tests pin the transcript
over the loopback server (real HTTP), against today's protocol ("coop_tui": one user
message, a JSON object, whole numbers) kept as the named option.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.parsing import ParseError, parse_answer
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message


def tag_answers(body: dict[str, Any]) -> str:
    """A model that always names the first option it is offered, in a tag, or guesses
    22.5 in the beauty contest; under today's protocol it answers in JSON."""
    text = last_user_message(body)
    offered = re.search(r"one option: Option (\w+)", text)
    if offered:
        return f"I will go with it.\n<answer>Option {offered.group(1)}</answer>"
    if "<answer>" in text:
        return "About two thirds of two thirds of 50.\n<answer>22.5</answer>"
    labels = re.search(r"one of your actions: (\w+)", text)
    if labels:
        return json.dumps({"choice": labels.group(1)})
    return '{"guess": 22.5}'


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=tag_answers) as server:
        yield server


def llm(server: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
            "style": "plain"}


async def run(tmp_path: Path, experiment: dict[str, Any], agents: dict[str, Any]) -> Store:
    data = {"name": "pp", "seed": 5, "max_attempts": 2, "on_invalid": "uniform",
            "agents": agents, "experiments": [experiment]}
    store = Store(tmp_path / "pp.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    return store


PD = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known", "rounds": 2,
      "rounds_told": "two_by_two", "answer": "choice", "randomize_labels": "trial",
      "matchup": [["m", "tft"]]}


@pytest.mark.parametrize("protocol", ["seed003", "coop_tui"])
async def test_pd_rules_go_as_a_system_message_and_the_answer_in_a_tag(
        tmp_path: Path, model: LoopbackServer, protocol: str) -> None:
    agents = {"m": llm(model), "tft": {"strategy": "tit_for_tat_sp"}}
    store = await run(tmp_path, {**PD, "prompt_protocol": protocol}, agents)
    sent = [r.body["messages"] for r in model.chat_requests]
    assert len(sent) == 2  # one call per round: both answers read the first time
    for messages in sent:
        if protocol == "coop_tui":
            [only] = messages
            assert only["role"] == "user" and "Payoff description" in only["content"]
            assert '"choice"' in only["content"] and "<answer>" not in only["content"]
            continue
        system, user = messages
        assert system["role"] == "system" and user["role"] == "user"
        # the rules alone in the system message; the round, history and question after
        assert "Payoff description" in system["content"]
        assert "This is round" not in system["content"] and "<answer>" not in system["content"]
        assert "Payoff description" not in user["content"]
        assert "This is round" in user["content"]
        assert re.search(r"Wrap your final answer in <answer> tags .*<answer>Option \w</answer>",
                         user["content"])
        assert '"choice"' not in user["content"]
    [match] = store.matches(store.runs()[0]["id"])
    decisions = [d for d in store.decisions(match["id"]) if d.agent == "m"]
    assert [d.valid and d.attempts for d in decisions] == [1, 1]
    for d in decisions:
        assert d.prompt == sent[d.round - 1]  # stored exactly as sent
        assert d.parsed in d.labels
        if protocol == "seed003":
            assert d.normalisation == "from the <answer> tag"
    # the second round's user message carries the first round's history
    assert "Round 1" in sent[1][-1]["content"] or "round 1" in sent[1][-1]["content"].lower()


async def test_a_tag_naming_no_option_is_reasked_with_the_reason(
        tmp_path: Path) -> None:
    calls: list[int] = []

    def wrong_then_right(body: dict[str, Any]) -> str:
        calls.append(1)
        offered = re.search(r"one option: Option (\w+)", body["messages"][1]["content"])
        assert offered is not None  # the round's user message, re-sent with the re-ask
        label = offered.group(1)
        return "<answer>Option Maybe</answer>" if len(calls) == 1 else f"<answer>{label}</answer>"

    with LoopbackServer(latency=0.0, chunks=1, answer=wrong_then_right) as server:
        agents = {"m": llm(server), "tft": {"strategy": "tit_for_tat_sp"}}
        store = await run(tmp_path, {**PD, "rounds": 1, "prompt_protocol": "seed003"}, agents)
        second = server.chat_requests[1].body["messages"]
    [match] = store.matches(store.runs()[0]["id"])
    [d] = [d for d in store.decisions(match["id"]) if d.agent == "m"]
    assert d.valid and d.attempts == 2 and d.parsed in d.labels
    reason = d.retries[0].error
    assert "the <answer> tag must hold exactly one option" in reason and '"Option Maybe"' in reason
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "Option Maybe" in second[2]["content"] and "the <answer> tag" in second[3]["content"]


@pytest.mark.parametrize("protocol", ["seed003", "coop_tui"])
async def test_numeric_moves_take_decimals_under_the_codes_protocol(
        tmp_path: Path, model: LoopbackServer, protocol: str) -> None:
    agents = {"m": llm(model)}
    store = await run(tmp_path, {
        "game": "beauty_contest_23", "game_params": {"rounds": 1}, "mechanism": "none",
        "rounds_told": "two_by_two", "answer": "choice", "matchup": [["m", "m"]],
        "prompt_protocol": protocol}, agents)
    [match] = store.matches(store.runs()[0]["id"])
    decisions = store.decisions(match["id"])
    if protocol == "coop_tui":  # whole numbers: 22.5 is re-asked, then played at random
        assert all(not d.valid and "steps of 1" in (d.error or "") for d in decisions)
        return
    assert [(d.valid, d.parsed, d.attempts) for d in decisions] == [(True, 22.5, 1)] * 2
    for d in decisions:
        system, user = d.prompt
        assert system["role"] == "system" and "Rules:" in system["content"]
        assert "decimals allowed" in user["content"] and "<answer>" in user["content"]
        assert "This is round 1" in user["content"]


@pytest.mark.parametrize(("kind", "text", "options", "expected"), [
    ("choice", "Thinking...\n<answer>Option J</answer>", {}, "J"),
    ("choice", "<answer>f</answer>", {}, "F"),
    ("choice", "<answer>Option J</answer> then <answer>Option F</answer>", {}, "F"),
    ("choice", '{"choice": "J"}', {}, "J"),  # the embedded model's constrained final step
    ("number", "<answer>37.5</answer>",
     {"name": "bid", "min": 0, "max": 100, "step": 1, "decimals": True}, 37.5),
    ("number", '{"bid": 40}', {"name": "bid", "min": 0, "max": 100, "step": 1, "decimals": True}, 40),
])
def test_what_answer_text_parses_to(kind: str, text: str, options: dict[str, Any],
                                    expected: Any) -> None:
    parsed, _ = parse_answer(kind, text, labels=("J", "F") if kind == "choice" else (),
                             options=options)
    assert parsed == expected


@pytest.mark.parametrize(("kind", "text", "options", "reason"), [
    ("choice", "<answer>Option Z</answer>", {}, "must hold exactly one option (Option J or Option F)"),
    ("number", "<answer>37.5</answer>", {"name": "bid", "min": 0, "max": 100, "step": 1},
     "steps of 1"),
    ("number", "<answer>120.5</answer>",
     {"name": "bid", "min": 0, "max": 100, "step": 1, "decimals": True}, "above the maximum 100"),
])
def test_what_answer_text_is_reasked_with(kind: str, text: str, options: dict[str, Any],
                                          reason: str) -> None:
    with pytest.raises(ParseError, match=re.escape(reason)):
        parse_answer(kind, text, labels=("J", "F") if kind == "choice" else (), options=options)


def test_moves_that_name_a_thing_keep_whole_numbers() -> None:
    """The strategic personalities paper's code truncated a decimal take node, request or message to a whole one;
    these moves stay whole numbers (re-asked) under either protocol."""
    from coop_tui.games.kinds import NumberSpace

    assert NumberSpace("bid", 0, 100).decimals_allowed
    source = {name: (Path(__file__).parents[1] / "games" / f"{name}.py").read_text()
              for name in ("centipede", "eleven_twenty", "signalling")}
    assert all("decimals_allowed=False" in text for text in source.values())


def test_the_embedded_models_grammar_writes_the_tag_when_the_tag_is_asked_for() -> None:
    """The constrained answer step follows the form asked for: a choice as
    ``<answer>Option J</answer>``, a whole-number move in its range; without ``form``
    (today's protocol) the JSON grammars stay. The end-to-end check on the embedded model
    is in test_seed003_studies.py (every smollm2 answer there is a parsed tag)."""
    from coop_tui.agents.local import answer_grammar
    from coop_tui.schemas import answer_schema

    choice = answer_schema("choice", ("J", "F"), {})
    assert answer_grammar("choice", ("J", "F"), choice, {"form": "tag"}) == (
        "gbnf", 'root ::= "<answer>Option " ( "J" | "F" ) "</answer>"\n')
    assert 'choice' in answer_grammar("choice", ("J", "F"), choice, {})[1]  # the JSON object
    offer = {"name": "take_node", "min": 1, "max": 3, "step": 1, "form": "tag"}
    assert answer_grammar("number", (), answer_schema("number", (), offer), offer) == (
        "gbnf", 'root ::= "<answer>" ( "1" | "2" | "3" ) "</answer>"\n')
    split = {"keys": ["B1", "B2"], "min": 0, "max": 10, "step": 1, "total": 10, "form": "tag"}
    assert answer_grammar("allocation", (), answer_schema("allocation", (), split), split)[1] \
        .startswith("root ::= ")  # a split keeps its JSON grammar
