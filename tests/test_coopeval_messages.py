"""The messages CoopEval runs send, as transcripts of the loopback server's requests.

CoopEval's code (``agents/agent_manager.py``) sends every question as two messages: a
system message with the agent's reasoning instruction (chain of thought: reason step by
step, then answer; answer-only: the output alone, nothing else) and a user message with
the game, the twist and the answer format, the same for both kinds of agent. Its
Traveler's Dilemma says each action corresponds to a number, never "claim"; its
Contracting vote prompt does not mention signing, its design prompt not that payments
only move points. These tests pin the roles and the information of every message per
game family (matrix games, Traveler's, Mediation, Contracting); our earlier layouts stay
available as named options (``style_message = "user"``, ``wording = "claim"``,
``explain_steps = true``). The judge's request is pinned in
``tests/test_judge_coopeval.py`` and below (its parser and grammar).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.human import HumanAgent
from coop_tui.engine import MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.importers.coopeval_records import GAMES
from coop_tui.judging.rubric import COOPEVAL_GAME_NAMES
from coop_tui.judging.run import game_name
from coop_tui.parsing import parse_answer
from coop_tui.schemas import judgement_types_gbnf
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

REASON = "step by step, in small steps"
ONLY_OUTPUT = "Reply with only the output"


def answer(body: dict[str, Any]) -> str:
    """Designs a cooperative mediator / a fine on A1, approves and signs all, plays A0."""
    text = last_user_message(body)
    if "your job right now is to design one" in text:
        twist = text.split("Here is the twist:")[1]
        return '{"1": "A0", "2": "A0"}' if "mediator" in twist else '{"A0": 0, "A1": -3}'
    if "Your job right now is to vote" in text:
        return json.dumps({pid: True for pid in re.findall(r"^([MC]\d+) \(designed", text, re.M)})
    if "decide whether to sign" in text:
        return '{"sign": true}'
    labels = re.findall(r"^- (A\d+)", text.split("Actions you can choose from:")[1], re.M)
    return json.dumps({label: (100 if i == 0 else 0) for i, label in enumerate(labels)})


@pytest.fixture
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


async def bodies(tmp_path: Path, server: LoopbackServer, experiment: dict[str, Any]) -> list[dict[str, Any]]:
    """Play ``experiment`` with a chain-of-thought and an answer-only seat; every request body."""
    agents = {style: {"model": f"openai/{style}", "api_base": server.url, "api_key": "sk-test",
                      "style": style} for style in ("cot", "direct")}
    data = {"name": "messages", "seed": 3, "agents": agents,
            "experiments": [{"agents": ["cot", "direct"], "matchup": [["cot", "direct"]],
                             **experiment}]}
    store = Store(tmp_path / "m.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    for match in store.matches(summary.run_id):
        assert match["status"] == "done", match["error"]
    return [r.body for r in server.chat_requests if r.body is not None]


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


def check_coopeval_layout(requests: list[dict[str, Any]]) -> None:
    """Every request: the style's instruction as the system message, the rest as one user
    message that names no reasoning style."""
    assert requests
    for body in requests:
        assert roles(body) == ["system", "user"]
        system, user = (m["content"] for m in body["messages"])
        style = body["model"].split("/")[-1]
        assert (REASON in system) == (style == "cot") and (ONLY_OUTPUT in system) == (style == "direct")
        assert "step by step" not in user and "nothing else" not in user
        assert REASON not in user and ONLY_OUTPUT not in user
        assert "Finish with one JSON object" in user  # the format, as for every style


async def test_a_matrix_game_sends_the_style_as_a_system_message(
    tmp_path: Path, server: LoopbackServer
) -> None:
    requests = await bodies(tmp_path, server, {"game": "prisoners", "mechanism": "none"})
    check_coopeval_layout(requests)
    # the user message is the same whichever style asks (but for the seat's number)
    by_style = {b["model"]: re.sub(r"you are Player \d", "", last_user_message(b)) for b in requests}
    assert len(by_style) == 2 and len(set(by_style.values())) == 1


async def test_our_layout_puts_everything_in_one_user_message(
    tmp_path: Path, server: LoopbackServer
) -> None:
    requests = await bodies(tmp_path, server, {"game": "prisoners", "mechanism": "none",
                                               "style_message": "user"})
    assert requests and all(roles(b) == ["user"] for b in requests)
    texts = {b["model"]: b["messages"][0]["content"] for b in requests}
    assert "Reason about the situation step by step" in texts["cot"]
    assert "and nothing else" in texts["direct"]


async def test_travelers_actions_correspond_to_numbers(tmp_path: Path, server: LoopbackServer) -> None:
    requests = await bodies(tmp_path, server, {"game": "travelers", "mechanism": "none"})
    check_coopeval_layout(requests)
    user = last_user_message(requests[0])
    for label, number in (("A0", 2), ("A1", 3), ("A2", 4), ("A3", 5)):
        assert f"- {label}: correspond to the number {number}\n" in user
    assert "Suppose you choose number X and the other player chooses number Y." in user
    assert "claim" not in user.lower()


async def test_travelers_claim_wording_is_an_option(tmp_path: Path, server: LoopbackServer) -> None:
    requests = await bodies(tmp_path, server, {"game": "travelers", "mechanism": "none",
                                               "game_params": {"wording": "claim"}})
    user = last_user_message(requests[0])
    assert "- A0: claim 2\n" in user and "Suppose you claim X" in user
    assert "correspond to the number" not in user


def by_phase(requests: list[dict[str, Any]]) -> dict[str, list[str]]:
    """User messages grouped by what they ask: design, vote, sign or play."""
    out: dict[str, list[str]] = {"design": [], "vote": [], "sign": [], "play": []}
    for body in requests:
        text = last_user_message(body)
        phase = ("design" if "your job right now is to design one" in text else
                 "vote" if "Your job right now is to vote" in text else
                 "sign" if "decide whether to sign" in text else "play")
        out[phase].append(text)
    return out


async def test_mediation_propose_vote_and_play(tmp_path: Path, server: LoopbackServer) -> None:
    requests = await bodies(tmp_path, server, {"game": "prisoners", "mechanism": "mediation"})
    check_coopeval_layout(requests)
    phases = by_phase(requests)
    assert phases["design"] and phases["vote"] and phases["play"] and not phases["sign"]
    # propose: the mediator plays one action for all who delegate, knowing how many did
    assert all("how many players delegated" in t and "from 1 to 2" in t for t in phases["design"])
    # vote: the designs with their designers
    assert all(re.search(r"^M\d+ \(designed by Player \d\)", t, re.M) for t in phases["vote"])


async def test_contracting_design_vote_sign_carry_coopevals_information(
    tmp_path: Path, server: LoopbackServer
) -> None:
    requests = await bodies(tmp_path, server, {"game": "prisoners", "mechanism": "contracting"})
    check_coopeval_layout(requests)
    phases = by_phase(requests)
    assert all(phases.values())
    for text in phases["design"]:
        # CoopEval's design prompt: payments per action, drawn from / paid to the others,
        # approval vote, a contract active only if every player accepts it
        assert "A positive number" in text and "A negative number" in text
        assert "takes effect only if all players sign it" in text
        assert "no points are created or destroyed" not in text
    for text in phases["vote"]:
        assert re.search(r"^C\d+ \(designed by Player \d\)", text, re.M)
        assert "most approvals" in text and "whether to sign" not in text
    for text in phases["sign"]:
        # the winning contract, its designer and terms; active only if everyone signs
        assert re.search(r"designed by Player \d", text) and "pays 3 points" in text
        assert "takes effect only if every player signs" in text


async def test_contracting_our_sentences_are_an_option(tmp_path: Path, server: LoopbackServer) -> None:
    requests = await bodies(tmp_path, server, {"game": "prisoners", "mechanism": "contracting",
                                               "explain_steps": True})
    phases = by_phase(requests)
    assert all("no points are created or destroyed" in t for t in phases["design"])
    assert all("every player decides whether to sign" in t for t in phases["vote"])


NAMES = {"reciprocity": "Reciprocity", "trust_evaluation": "Trust evaluation",
         "others": "Others"}


def test_the_judge_answer_in_coopevals_keys_is_read() -> None:
    text = ('{"Reasoning_behind_classification": "returns the favour", "Confidence": 0.85, '
            '"justification_type": "Reciprocity, Trust evaluation"}')
    parsed, _note = parse_answer("judgement", text, labels=tuple(NAMES),
                              options={"shape": "types", "names": NAMES})
    assert parsed == {"reasoning": "returns the favour", "confidence": 0.85,
                               "types": ["reciprocity", "trust_evaluation"]}


def test_the_embedded_judges_grammar_writes_coopevals_keys() -> None:
    grammar = judgement_types_gbnf(tuple(NAMES.values()))
    for key in ("Reasoning_behind_classification", "Confidence", "justification_type"):
        assert f'\\"{key}\\"' in grammar
    assert '", "' in grammar  # names joined by commas inside one string


def test_the_judge_names_games_as_coopeval_does() -> None:
    assert {key: name for name, (key, _title) in GAMES.items()} == COOPEVAL_GAME_NAMES
    assert game_name({"game": "travelers", "game_spec": '{"title": "Traveler\'s Dilemma (4 claims)"}'}) \
        == "TravellersDilemma"
    # a game CoopEval does not have keeps its title
    assert game_name({"game": "chicken", "game_spec": '{"title": "Chicken"}'}) == "Chicken"


class _Model:
    """A seat that reads prompts, as a model does (no call is made here)."""

    kind = "llm"
    style = "direct"
    name = "m"
    spec: dict[str, Any] = {}


def test_a_person_at_a_seat_reads_one_message_beside_a_model() -> None:
    ctx = MatchContext(run_id="r", match_id="m", game=get_game("prisoners"),
                       agents=[HumanAgent(), _Model()], bus=EventBus(), seed=1)
    human, model = ctx.play_request(0, 1), ctx.play_request(1, 1)
    assert roles({"messages": human.messages}) == ["user"]
    assert "and nothing else" in human.messages[0]["content"]  # the answer-only wording
    assert roles({"messages": model.messages}) == ["system", "user"]
    assert ONLY_OUTPUT in model.messages[0]["content"]
    assert "nothing else" not in model.messages[1]["content"]
