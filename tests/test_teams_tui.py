"""The tournament view in the live screen, with a person in one player's seat (super-additive cooperation).

A 2 x 2 SA tournament: the person is Agent #1 (group 1, with tit-for-tat), against
always-cooperate and always-defect (group 2); n = 2 rounds per match, N = 5, ordered
schedule, no planning or meta-prompts. The person plays and decides to leave or stay
through the input bar; the expected standings are worked out by hand.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from coop_tui.app import CoopApp
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.tournament import TournamentView
from coop_tui.session import MatchSetup, build_setup_sweep

SIZE = (160, 60)


async def until(pilot, condition, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(20000):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"gave up waiting for {what}")


async def answer(pilot, live: LiveScreen, phase: str, text: str) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: bool(live.turns) and live.session_waiting(0)
                and live.turns[0].request.phase == phase, f"the person's {phase} turn")
    asked = live.turns[0].request
    await pilot.press(*text, "enter")
    await until(pilot, lambda: not live.turns or live.turns[0].request is not asked,
                "the answer to land")


@pytest.mark.slow
async def test_a_person_plays_one_seat_and_the_tournament_view_keeps_score(tmp_path: Path) -> None:
    setup = MatchSetup(
        seats=["human", "tit_for_tat", "always_cooperate", "always_defect"], game="ipd",
        mechanism="teams", name="play",
        params={"structure": "SA", "teams": 2, "team_size": 2, "rounds": 2, "budget": 5,
                "planning": False, "meta": "off", "schedule": "ordered",
                "exit_timing": "after_round"},  # the person decides having seen the round
    )
    sweep = build_setup_sweep(setup)
    assert sweep.cells[0].seats == ("human", "tit_for_tat", "always_cooperate", "always_defect")
    app = CoopApp(tmp_path / "t.db", play=sweep)
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        view = live.query_one("#tournament", TournamentView)
        # match 1 vs tit-for-tat: cooperate, then leave
        await answer(pilot, live, "play", "0")
        await until(pilot, lambda: "vs Agent #2" in view.text(), "the pairing on screen")
        assert "match 1: Agent #1 vs Agent #2, round 1 of 2" in view.text()
        await answer(pilot, live, "exit", '{"leave": true}')
        # match 2 vs always-cooperate: two rounds, staying after the first
        await answer(pilot, live, "play", "0")
        await answer(pilot, live, "exit", '{"leave": false}')
        await answer(pilot, live, "play", "0")
        # match 3 vs always-defect: exploited once; the person stays, the strategy leaves
        await answer(pilot, live, "play", "0")
        await answer(pilot, live, "exit", '{"leave": false}')
        await asyncio.wait_for(live.wait_finished(), 120)
        shown = view.text()
        assert view.exits == ["Agent #1 left match 1 (vs Agent #2)",
                              "Agent #4 left match 3 (vs Agent #1)",
                              "Agent #2 left match 5 (vs Agent #4)",
                              "Agent #4 left match 5 (vs Agent #2)"]
        assert "Agent #4 left match 3 (vs Agent #1)" in shown  # the latest three are shown
        assert "tournament over" in shown
        # points: person 3 + 6 - 1; tft 3 + 6 - 1; allc 6 + 6 - 1; alld 5 + 5 + 5
        lines = {line.split()[1]: line for line in shown.splitlines() if line.strip()[:1].isdigit()}
        assert lines["#1"].split()[3:5] == ["8", "4/5"]
        assert lines["#2"].split()[3:5] == ["8", "4/5"]
        assert lines["#3"].split()[3:5] == ["11", "5/5"]
        assert lines["#4"].split()[3:5] == ["15", "3/5"]
        assert "Group 2 26 ★" in shown and "Group 1 16" in shown
        match_id = live.session.match_id
    person = [(d.round, d.phase, d.kind) for d in app.store.decisions(match_id) if d.seat == 0]
    assert person == [(1, "play", "mixed"), (1, "exit", "approvals"), (2, "play", "mixed"),
                      (2, "exit", "approvals"), (3, "play", "mixed"), (4, "play", "mixed"),
                      (4, "exit", "approvals")]


def test_the_setup_fills_the_tournament_from_the_listed_seats() -> None:
    # the setup screen shows the game's two seats; a 2 x 3 tournament needs six players
    setup = MatchSetup(seats=["human", "tit_for_tat"], game="ipd", mechanism="teams",
                       params={"teams": 2, "team_size": 3, "rounds": 4})
    cell = build_setup_sweep(setup).cells[0]
    assert cell.seats == ("human",) + ("tit_for_tat",) * 5
    assert cell.mechanism_params["budget"] == 4 * 5 - 1


async def test_the_analysis_screen_shows_the_team_tournament_panel(tmp_path: Path) -> None:
    from textual.widgets import Static

    from coop_tui.screens.analysis import AnalysisScreen
    from tests.test_mechanisms import run, sweep_data
    from tests.test_tui_screens import ScreenApp, static_text
    from tests.test_tui_screens import until as until_screen

    store, (m,) = await run(tmp_path, sweep_data(
        {"game": "ipd", "mechanism": "teams", "matchup": [["tft", "alld", "allc", "grim"]],
         "structure": "GC", "teams": 2, "team_size": 2, "rounds": 3, "budget": 5,
         "planning": False, "meta": "off"}))
    run_id = m["run_id"]
    db = Path(store.db.conn.execute("pragma database_list").fetchone()[2])
    store.close()
    app = ScreenApp(db, lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        await until_screen(pilot, lambda: screen.loaded >= 1)
        await pilot.pause()
        panel = screen.query_one("#an-section-teams")
        assert panel.border_title == "Team tournaments (super-additive cooperation)"
        shown = "".join(static_text(w) for w in panel.query(Static))
        assert "GC" in shown and "OSC inter" in shown
        # the paper's Figure 2 and Figure 3 curves, as tables of points
        assert "Figure 2" in shown and "Figure 3" in shown


@pytest.mark.slow
async def test_a_person_decides_to_leave_with_the_move_by_default(tmp_path: Path) -> None:
    """The paper's timing: in each round the person answers its move and, before any
    outcome, whether to leave after it, in one line (one request per round). Leaving with
    the first move ends match 1 after that round; then it stays in its other matches (two
    rounds with always-cooperate, one with always-defect, who leaves with its first move).
    A line without leave/stay is refused on screen; JSON without "leave" goes to the
    parser, which asks again with the reason."""
    from textual.widgets import Static

    from tests.test_tui_screens import static_text

    setup = MatchSetup(
        seats=["human", "tit_for_tat", "always_cooperate", "always_defect"], game="ipd",
        mechanism="teams", name="play",
        params={"structure": "SA", "teams": 2, "team_size": 2, "rounds": 2, "budget": 5,
                "planning": False, "meta": "off", "schedule": "ordered"},
    )
    app = CoopApp(tmp_path / "t.db", play=build_setup_sweep(setup))
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await until(pilot, lambda: bool(live.turns) and live.session_waiting(0), "the first move")
        request = live.turns[0].request
        assert request.phase == "play" and request.options.get("ask_leave") is True
        shown = request.messages[0]["content"]
        assert "Together with your action, decide whether to leave this match" in shown
        assert "Round 1: you chose" not in shown  # nothing of this round shown yet
        assert 'Add the key "leave"' in shown
        hint = static_text(live.query_one("#human-prompt", Static))
        assert "leave" in hint and "stay" in hint
        await pilot.press("0", "enter")  # no leave/stay: refused before it is sent
        await until(pilot, lambda: "then leave or stay" in static_text(live.query_one("#human-prompt", Static)),
                    "the refusal")
        assert live.session_waiting(0) and live.turns[0].request is request
        live.query_one("#human-input").value = ""
        await pilot.press(*'{"A0": 100, "A1": 0}', "enter")  # the parser asks again
        await until(pilot, lambda: live.session_waiting(0), "the person asked again")
        await answer(pilot, live, "play", "0 leave")
        for text in ["0 stay", "A0 stay", "A0=100 A1=0 stay"]:
            await answer(pilot, live, "play", text)
        await asyncio.wait_for(live.wait_finished(), 120)
        match_id = live.session.match_id
    person = [d for d in app.store.decisions(match_id) if d.seat == 0]
    assert [(d.round, d.phase, d.action, d.leave) for d in person] == [
        (1, "play", 0, True), (2, "play", 0, False), (3, "play", 0, False), (4, "play", 0, False)]
    first = person[0]
    assert first.attempts == 2 and 'needs the key "leave"' in first.retries[0].error
    assert json.loads(first.response) == {"A0": 100, "A1": 0, "leave": True}
    summary = next(json.loads(info) for phase, info in app.store.db.execute(
        "select phase, info from phases where match_id = ? and round = 0", [match_id]) if phase == "tournament")
    assert [(x["rounds"], x["left"]) for x in summary["matches"][:3]] == [(1, [0]), (2, []), (1, [3])]
