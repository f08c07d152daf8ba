"""Play mode with the strategic personalities paper's move-by-move games: a person types an offer or a guess in the
live screen, the embedded model (or a strategy) answers, and every move is stored.

Driven through Textual's pilot; the assertions read the SQLite store back.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from coop_tui.app import CoopApp
from coop_tui.games.guessing import beauty_contest_payoffs
from coop_tui.screens.live import LiveScreen
from coop_tui.session import build_setup_sweep, play_setup

SIZE = (160, 48)


async def until(pilot, condition, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(30000):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"gave up waiting for {what}")


async def human_turn(pilot, live: LiveScreen) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: live.session_waiting(0) and bool(live.turns), "the human turn")


def prompt_bar(live: LiveScreen) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(live.query_one("#human-prompt").content)
    return console.export_text()


def rows(store, match_id: str) -> dict[int, dict]:  # type: ignore[no-untyped-def]
    return {r["round"]: json.loads(r["info"]) for r in store.rounds(match_id)}


def test_play_setup_runs_protocol_games_under_none_with_their_own_rounds() -> None:
    setup = play_setup("ultimatum", "threshold_responder", 3, None)
    assert setup.mechanism == "none" and setup.params == {"game_params": {"rounds": 3}}
    sweep = build_setup_sweep(setup)
    assert sweep.cells[0].game_params == {"rounds": 3}


@pytest.mark.slow
async def test_a_person_proposes_in_the_ultimatum_game_against_a_threshold_responder(
    tmp_path: Path,
) -> None:
    sweep = build_setup_sweep(play_setup("ultimatum", "threshold_responder", 2, None))
    app = CoopApp(tmp_path / "u.db", play=sweep)
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await human_turn(pilot, live)
        assert "Type your offer (0 to 100)" in prompt_bar(live)
        await pilot.press(*"150", "enter")  # out of range: the parser refuses, asked again
        await until(pilot, lambda: live.session.waiting_for == [0] and bool(live.turns)
                    and "above the maximum" in live.pane(0).blocks[-1]._prompt, "the re-ask")
        await pilot.press(*"40", "enter")
        await human_turn(pilot, live)
        await pilot.press(*"I offer 20", "enter")
        await asyncio.wait_for(live.wait_finished(), 300)
        match_id = live.session.match_id
        from coop_tui.screens.widgets import Timeline

        shown = live.query_one(Timeline).render_text().plain
        assert "R1 offer 40, accepted yes (60,40)" in shown
        assert "R2 offer 20, accepted no (0,0)" in shown
    store = app.store
    decisions = store.decisions(match_id)
    assert [(d.round, d.seat, d.phase, d.kind) for d in decisions] == [
        (1, 0, "offer", "number"), (1, 1, "respond", "choice"),
        (2, 0, "offer", "number"), (2, 1, "respond", "choice")]
    first = decisions[0]
    assert first.agent == "human" and first.parsed == 40 and first.attempts == 2
    assert "above the maximum 100" in first.retries[0].error
    assert decisions[2].parsed == 20
    r = rows(store, match_id)
    assert r[1]["moves"] == {"offer": 40, "accepted": True}
    assert r[2]["moves"] == {"offer": 20, "accepted": False}
    assert [s["payoff"] for s in store.seats(match_id)] == [60, 40]


@pytest.mark.slow
async def test_a_person_and_the_embedded_model_play_ultimatum_and_beauty_contest(
    tmp_path: Path,
) -> None:
    # ultimatum: the person offers, the embedded model accepts or rejects
    sweep = build_setup_sweep(play_setup("ultimatum", "local/smollm2", 1, None))
    app = CoopApp(tmp_path / "m.db", play=sweep)
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await human_turn(pilot, live)
        await pilot.press(*"50", "enter")
        await asyncio.wait_for(live.wait_finished(), 900)
        match_id = live.session.match_id
    store = app.store
    offer, respond = store.decisions(match_id)
    assert (offer.agent, offer.parsed) == ("human", 50)
    assert respond.seat == 1 and respond.valid and respond.constrained
    game = next(m for m in respond.prompt if m["role"] == "user")  # after the style's system message
    assert "The Proposer offers you 50 of 100 points" in game["content"]
    accepted = rows(store, match_id)[1]["moves"]["accepted"]
    assert accepted == (respond.action == 0)
    assert [s["payoff"] for s in store.seats(match_id)] == ([50, 50] if accepted else [0, 0])

    # beauty contest: both guess at once; the model's guess is a constrained number
    sweep = build_setup_sweep(play_setup("beauty_contest_23", "local/smollm2", 1, None))
    app = CoopApp(tmp_path / "b.db", play=sweep)
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await human_turn(pilot, live)
        assert "Type your guess (0 to 100)" in prompt_bar(live)
        await pilot.press(*"33", "enter")
        await asyncio.wait_for(live.wait_finished(), 900)
        match_id = live.session.match_id
    store = app.store
    human, model = sorted(store.decisions(match_id), key=lambda d: d.seat)
    assert human.parsed == 33 and model.kind == "number" and model.valid and model.constrained
    assert 0 <= model.parsed <= 100
    guesses = rows(store, match_id)[1]["moves"]["guesses"]
    assert guesses == [33, model.parsed]
    expected = beauty_contest_payoffs(guesses, 2 / 3)
    assert [s["payoff"] for s in store.seats(match_id)] == list(expected)


async def test_a_stored_trust_match_replays_with_its_moves(tmp_path: Path) -> None:
    from coop_tui.screens.widgets import Timeline
    from coop_tui.session import MatchSetup, ReplaySession

    app = CoopApp(tmp_path / "r.db", sweep_dir=tmp_path, replay_speed=0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.start_match(MatchSetup(seats=["trust_proportional", "trust_proportional"],
                                   game="trust_berg", mechanism="none",
                                   params={"game_params": {"rounds": 2}}))
        await until(pilot, lambda: isinstance(app.screen, LiveScreen), "the live screen")
        first = app.screen
        await asyncio.wait_for(first.wait_finished(), 300)
        await pilot.pause()
        match_id = first.session.match_id
        shown = first.query_one(Timeline).render_text().plain
        assert "R1 sent 5, returned 7 (12,8)" in shown and "R2 sent 5, returned 7" in shown
        await pilot.press("q")
        await pilot.pause()
        app.open_replay(match_id)
        await until(pilot, lambda: isinstance(app.screen, LiveScreen)
                    and isinstance(app.screen.session, ReplaySession), "the replay")
        replay = app.screen
        await asyncio.wait_for(replay.wait_finished(), 300)
        await pilot.pause()
        assert replay.query_one(Timeline).render_text().plain.count("sent 5, returned 7") == 2
        assert replay.query_one(Timeline).totals == [24, 16]
