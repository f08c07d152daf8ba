"""What each seat is shown under Reputation, Mediation and Contracting, as transcripts.

The default prompts carry exactly the information of CoopEval's (``mechanisms/
prompts.py`` and ``reputation.py`` of its code), in our words: under Reputation, that
co-players are met at random, that the drawn action is seen later, the chance of another
round, the rounds played, the co-players' names and the records of the last rounds
(including, for every agent, that it has no history yet); not the population's size, not
the reader's own number, not "you always play as Player 2". Mediation and Contracting
show the plan or terms without our sentence on how they combine with the payoffs. Our
additions stay available as named options (``context = "extended"``,
``explain_payoffs = true``). The LLM seat talks HTTP to the loopback server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

STRATEGIES: dict[str, dict[str, Any]] = {"alld": {"strategy": "always_defect"}}


def answer(body: dict[str, Any]) -> str:
    """Proposes "cooperate" mediators and a fine on A1, approves and signs, plays A0."""
    text = last_user_message(body)
    if "your job right now is to design one" in text:
        return '{"1": "A0", "2": "A0"}' if "mediator" in text.split("Here is the twist:")[1] else (
            '{"A0": 0, "A1": -3}')
    if "Your job right now is to vote" in text:
        return json.dumps({pid: True for pid in re.findall(r"^([MC]\d+) \(designed", text, re.M)})
    if "decide whether to sign" in text:
        return '{"sign": true}'
    if '"A2": <INT>' in text:
        return '{"A0": 0, "A1": 0, "A2": 100}'
    return '{"A0": 100, "A1": 0}'


@pytest.fixture
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


async def play(tmp_path: Path, server: LoopbackServer, experiment: dict[str, Any]) -> tuple[Store, str]:
    agents = {**STRATEGIES, "m": {"model": "openai/loopback", "api_base": server.url,
                                  "api_key": "sk-test", "style": "direct"}}
    data = {"name": "prompts", "seed": 3, "agents": agents, "experiments": [experiment]}
    store = Store(tmp_path / "p.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    (match,) = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    return store, match["id"]


def twist(store: Store, match_id: str, seat: int, round_: int = 1) -> str:
    """The part of the play prompt between "Here is the twist:" and the answer format."""
    d = next(d for d in store.decisions(match_id)
             if d.phase == "play" and d.seat == seat and d.round == round_)
    text = next(m["content"] for m in d.prompt if m["role"] == "user")
    return text.split("Here is the twist:\n", 1)[1].split("\nWhat to answer:", 1)[0].strip()


def opponent(store: Store, match_id: str, seat: int, round_: int) -> int:
    groups: dict[int, list[int]] = {}
    for r in store.rounds(match_id):
        if r["round"] == round_:
            groups.setdefault(json.loads(r["info"])["group"], []).append(r["seat"])
    (group,) = [g for g in groups.values() if seat in g]
    (other,) = [s for s in group if s != seat]
    return other


REPUTATION_INTRO = (
    "You play this game repeatedly, but with different players, whom you meet at random. "
    "The action drawn from your probabilities in this round will be seen by the players you "
    "meet in later rounds and may influence their choices.\n"
    "After each round, there is a 80% chance that another round follows. You have played {n} "
    "round{s} of this game so far.\n"
    "What follows is what you know about the past play of yourself and of the player you meet "
    "in the coming round.\n"
    "You play against 1 other agent: Agent #{k}."
)


async def test_reputation_shows_coopevals_information_and_nothing_more(
    tmp_path: Path, server: LoopbackServer,
) -> None:
    # m and alld in both positions: seats 0, 1 are Player 1 and seats 2, 3 Player 2
    store, match_id = await play(tmp_path, server, {
        "game": "prisoners", "mechanism": "reputation", "matchup": "cross", "agents": ["m", "alld"],
        "rounds": 2, "order": "first", "history": 3})
    first = opponent(store, match_id, 0, 1)
    assert twist(store, match_id, 0, 1) == (
        REPUTATION_INTRO.format(n=0, s="s", k=first + 1) + "\n\n"
        "You have not played this game before.\n\n"
        f"Agent #{first + 1} has not played this game before."
    )
    second = opponent(store, match_id, 0, 2)
    theirs = opponent(store, match_id, second, 1)  # whom that co-player met in round 1
    action = {0: "A0", 1: "A1", 2: "A0", 3: "A1"}  # m (seats 0, 2) plays A0, alld A1
    points = {("A0", "A0"): 2, ("A0", "A1"): 0, ("A1", "A0"): 3, ("A1", "A1"): 1}

    def did(me: int, other: int) -> str:
        pts = points[(action[me], action[other])]
        return f"played {action[me]} and received {pts} point{'' if pts == 1 else 's'}"

    assert twist(store, match_id, 0, 2) == (
        REPUTATION_INTRO.format(n=1, s="", k=second + 1) + "\n\n"
        f"Your past play:\n- Round 1: You {did(0, first)}; Agent #{first + 1} {did(first, 0)}.\n\n"
        f"Past play of Agent #{second + 1}:\n- Round 1: Agent #{second + 1} {did(second, theirs)}; "
        f"{'you' if theirs == 0 else 'Agent #2'} {did(theirs, second)}."
    )
    for seat in (0, 2):  # the LLM's two seats (the strategy is shown nothing)
        for round_ in (1, 2):
            text = twist(store, match_id, seat, round_)
            assert "population" not in text and "always play as" not in text
            assert f"Agent #{seat + 1}" not in text  # the reader is "you", never its number
            assert "This is round" not in text


async def test_reputation_in_an_asymmetric_game_names_positions_in_the_records(
    tmp_path: Path, server: LoopbackServer,
) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "trust", "mechanism": "reputation", "matchup": "cross", "agents": ["m", "alld"],
        "rounds": 3, "order": "higher", "history": 2})
    text = twist(store, match_id, 0, 3)
    assert "- Round 2: You played A0 as Player 1 and received" in text
    assert "What Agent #" in text and "did before that round:" in text  # nested records
    assert "population" not in text and "always play as" not in text


async def test_reputation_extended_context_is_our_named_option(tmp_path: Path, server: LoopbackServer) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "trust", "mechanism": "reputation", "matchup": "cross", "agents": ["m", "alld"],
        "rounds": 2, "context": "extended"})
    text = twist(store, match_id, 0, 2)
    assert "within a population of 4 agents, and you are one of them: Agent #1." in text
    assert "while you always play as Player 1" in text
    assert "This is round 2: you have played 1 round so far." in text


async def test_mediation_play_shows_coopevals_information(tmp_path: Path, server: LoopbackServer) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "prisoners", "mechanism": "mediation", "matchup": [["m", "m"]]})
    for seat in (0, 1):
        shown = twist(store, match_id, seat)
        proposer = shown.split("Player ", 1)[1][0]
        assert shown == (
            "In this game you may also hand your move to a mediator instead of choosing an action "
            "yourself. If you delegate, the mediator plays an action for you that depends on how "
            "many players delegated to it. You are free to act on your own instead.\n"
            f"The players chose this mediator by approval vote; Player {proposer} designed it. "
            "What it plays for the players who delegate:\n"
            "- If 1 player delegates, the mediator plays A0 for that player.\n"
            "- If 2 players delegate, the mediator plays A0 for each of them.\n\n"
            'Besides the actions listed above, you have A2, which means "delegate my move to the '
            'mediator". Give a probability to every action, A2 included.'
        )


async def test_mediation_explain_payoffs_adds_our_sentence(tmp_path: Path, server: LoopbackServer) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "prisoners", "mechanism": "mediation", "matchup": [["m", "m"]],
        "explain_payoffs": True})
    assert ("when you delegate, you get the points of the action the mediator plays for you."
            in twist(store, match_id, 0))


async def test_contracting_play_shows_coopevals_information(tmp_path: Path, server: LoopbackServer) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "prisoners", "mechanism": "contracting", "matchup": [["m", "m"]]})
    for seat in (0, 1):
        shown = twist(store, match_id, seat)
        proposer = shown.split("Player ", 1)[1][0]
        assert shown == (
            f"Every player has signed a payment contract (designed by Player {proposer} and chosen "
            "by approval vote), so its payments apply in this game:\n"
            "- Playing A0 involves no payment.\n"
            "- Whoever plays A1 pays 3 points to the other player.\n\n"
            "The contract changes your final points, so take it into account when you choose."
        )


async def test_contracting_explain_payoffs_adds_our_sentence(tmp_path: Path, server: LoopbackServer) -> None:
    store, match_id = await play(tmp_path, server, {
        "game": "prisoners", "mechanism": "contracting", "matchup": [["m", "m"]],
        "explain_payoffs": True})
    assert "The payoff description above does not include these payments" in twist(store, match_id, 0)
