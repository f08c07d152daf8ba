"""The facts our CoopEval messages tell otherwise than CoopEval's code, each listed under
"Remaining differences" of docs/reproducing-coopeval.md (issue #40's audit).

Each test pins our side of one listed difference and that the page names it, so a change
to either the prompts or the page shows up here. CoopEval's side (its code at commit
8559e85, and the logs of its published study) is quoted in the page; the stand-in of
``tests/data/sources/coopeval`` does not carry its sentences, so it is not rendered here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import AgentReply, DecisionRequest, Message
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.judging.rubric import load_rubric
from coop_tui.mechanisms import mechanism_class

PAGE = Path(__file__).parent.parent / "docs" / "reproducing-coopeval.md"


def remaining_differences() -> str:
    """The page's last section, its lines joined (a phrase may wrap)."""
    return " ".join(PAGE.read_text().split("## Remaining differences", 1)[1].split())


class Seat:
    """A model seat that keeps each request's messages and answers a fixed move."""

    kind = "llm"
    reads_prompt = True

    def __init__(self, name: str, style: str, first: dict[str, str] | None = None) -> None:
        self.name, self.style, self.spec = name, style, {"model": name, "style": style}
        self.seen: list[tuple[DecisionRequest, list[Message]]] = []
        self.first = dict(first or {})  # phase -> a first (faulty) answer there, to re-ask

    async def reply(self, request: DecisionRequest, messages: list[Message], sink: Any) -> AgentReply:
        self.seen.append((request, list(messages)))
        if request.phase in self.first:
            return AgentReply(text=self.first.pop(request.phase))
        if request.kind == "mediator":
            n = request.options.get("n_players", 2)
            return AgentReply(text=json.dumps({str(k): "A0" for k in range(1, n + 1)}))
        if request.kind == "contract":
            return AgentReply(text=json.dumps({"A0": 0, "A1": -3}))
        if request.kind == "approvals":
            return AgentReply(text=json.dumps({label: True for label in request.labels}))
        if request.kind == "sign":
            return AgentReply(text='{"sign": true}')
        labels = list(request.labels)
        pick = (request.seat + request.round) % len(labels)
        return AgentReply(text=json.dumps({x: 100 if i == pick else 0 for i, x in enumerate(labels)}))


async def play(game: str, mechanism: str, params: dict[str, Any] | None = None,
               seats: int | None = None) -> list[Seat]:
    """One match with the study's layout (``user_end``) and strict answers."""
    cls = mechanism_class(mechanism)
    mech = cls(cls.Params.model_validate(params or {}))
    g = get_game(game)
    players = [Seat(f"s{i}", "cot") for i in range(seats or g.n_players)]
    ctx = MatchContext(run_id="run", match_id="m", game=g, agents=players, bus=EventBus(), seed=5,
                       policy=DecisionPolicy(max_attempts=1, strict=True, style_message="user_end"))
    await mech.play(ctx)
    return players


def user_text(seats: list[Seat], phase: str, seat: int, round_: int = 1) -> str:
    return next(m["content"] for s in seats for q, ms in s.seen
                if q.phase == phase and q.seat == seat and q.round == round_
                for m in ms if m["role"] == "user")


async def test_matching_pennies_player_2_is_shown_its_own_payoffs() -> None:
    """CoopEval declares Matching Pennies symmetric and shows Player 2 Player 1's lines (a
    match pays "you" 1); ours shows Player 2 that a match costs it a point."""
    seats = await play("matching_pennies", "none")
    assert ("If you choose A0 and the other player chooses A0: you get 1 point"
            in user_text(seats, "play", 0))
    assert ("If you choose A0 and the other player chooses A0: you get -1 point, "
            "the other player gets 1 point." in user_text(seats, "play", 1))
    assert "Matching Pennies" in remaining_differences()


async def test_matching_pennies_reputation_records_name_positions() -> None:
    """CoopEval's records of a game it declares symmetric name no positions; ours treat
    Matching Pennies as the asymmetric game it is, as CoopEval treats Trust."""
    seats = await play("matching_pennies", "reputation",
                       {"rounds": 2, "continuation": 0.8, "history": 3, "population": 4}, seats=4)
    assert re.search(r"- Round 1: You played A\d as Player \d and received", user_text(seats, "play", 0, 2))
    assert "as Player 2" in remaining_differences()


@pytest.mark.parametrize("mechanism", ["mediation", "contracting"])
async def test_vote_prompts_label_each_design_with_its_key(mechanism: str) -> None:
    """Ours: "M1 (designed by Player 1):"; CoopEval lists "proposed by Player 1" unlabelled
    and names the keys only in the answer format."""
    seats = await play("prisoners", mechanism)
    key = "M" if mechanism == "mediation" else "C"
    text = user_text(seats, "vote", 0)
    assert f"{key}1 (designed by Player 1):" in text and f"{key}2 (designed by Player 2):" in text
    assert "designs unlabelled" in remaining_differences()


async def test_public_goods_mediation_vote_says_all_players_vote() -> None:
    """CoopEval's Mediation vote says "you and the other player" even with three players."""
    seats = await play("public_good", "mediation")
    text = user_text(seats, "vote", 0)
    assert "All players" in user_text(seats, "propose", 0) and "the other player " not in text
    assert "a single other player" in remaining_differences()


@pytest.mark.parametrize(("mechanism", "phase"), [
    ("mediation", "propose"), ("mediation", "vote"), ("contracting", "propose"),
    ("contracting", "vote"), ("contracting", "sign")])
async def test_design_vote_and_sign_answers_end_with_the_json_on_any_lines(
    mechanism: str, phase: str,
) -> None:
    """CoopEval asks for a design's JSON "in a single line" and does not say where the
    object goes; ours asks to end the reply with it and sets no line rule."""
    seats = await play("prisoners", mechanism)
    text = user_text(seats, phase, 0)
    assert "End your reply with the JSON object" in text and "line" not in text.lower()
    assert "JSON on one line" in remaining_differences()


async def test_the_mediator_is_called_a_neutral_party() -> None:
    """Ours calls the mediator "a neutral party"; CoopEval "an entity" that plays for the
    players who delegate."""
    seats = await play("prisoners", "mediation")
    assert "A mediator is a neutral party" in user_text(seats, "propose", 0)
    assert "neutral party" in remaining_differences()


def test_the_coopeval_judge_is_told_to_judge_only_what_the_text_says() -> None:
    """Our judge instructions add a sentence CoopEval's classification prompt does not have."""
    prompt = load_rubric("justifications").prompt("I cooperate.", "Game: PrisonersDilemma")
    assert "Judge only what the text says, not whether the reasoning is correct" in prompt
    assert "not whether the reasoning is correct" in remaining_differences()


async def test_a_reask_names_our_parsers_fault_first() -> None:
    """A mediator with a count missing and an unknown action: our reason names the missing
    count (CoopEval's parser stops at the unknown action first)."""
    seat = Seat("s0", "cot", first={"propose": '{"1": "A5"}'})
    mech_cls = mechanism_class("mediation")
    ctx = MatchContext(run_id="run", match_id="m", game=get_game("prisoners"),
                       agents=[seat, Seat("s1", "cot")], bus=EventBus(), seed=5,
                       policy=DecisionPolicy(max_attempts=2, strict=True, style_message="user_end"))
    await mech_cls(mech_cls.Params()).play(ctx)
    (reask,) = [ms for q, ms in seat.seen if q.phase == "propose" and len(ms) > 1]
    assert "missing: 2" in reask[-1]["content"] and "A5" not in reask[-1]["content"]
    assert "names the missing count" in remaining_differences()
