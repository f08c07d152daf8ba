"""The runs, decision inspector and analysis screens, driven with Textual's pilot.

The data are real: strategy sweeps (a similarity sweep and a repeated-game cross-play
tournament) and one LLM match against the loopback server whose first answer per
decision is unusable, all run through ``run_sweep`` into a temporary store. Each test
works on its own copy of that database.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Static, TextArea

from coop_tui.app import CoopApp
from coop_tui.report import build_report
from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.runs import ConfirmScreen, DecisionsScreen, RunsScreen
from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer

SIM_RUN, TOUR_RUN, LLM_RUN = "run-sim", "run-tour", "run-llm"
CREATED = {SIM_RUN: 1_750_000_000.0, TOUR_RUN: 1_750_003_600.0, LLM_RUN: 1_750_007_200.0}
"""Fixed creation times (2025-06-15 UTC) so dates and order are reproducible."""

STRATEGIES = {
    "tft": {"strategy": "tit_for_tat"},
    "alld": {"strategy": "always_defect"},
    "rnd": {"strategy": "random"},
    "grim": {"strategy": "grim_trigger"},
}


def sim_sweep() -> dict[str, Any]:
    return {
        "name": "sim", "seed": 1, "samples": 1, "concurrency": 1, "agents": STRATEGIES,
        "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                         "agents": ["tft", "alld", "rnd"], "similarity": [0, 50, 100]}],
    }


def tour_sweep() -> dict[str, Any]:
    return {
        "name": "tour", "seed": 2, "concurrency": 1, "agents": STRATEGIES,
        "experiments": [{"game": "prisoners", "mechanism": "repetition", "matchup": "cross",
                         "agents": ["tft", "alld", "grim"], "rounds": 4}],
    }


def llm_sweep(url: str) -> dict[str, Any]:
    return {
        "name": "llm", "seed": 3, "concurrency": 1,
        "agents": {"bot": {"model": "openai/loopback", "api_base": url, "style": "direct"}},
        "experiments": [{"game": "prisoners", "mechanism": "none", "matchup": "self",
                         "agents": ["bot"]}],
    }


def scripted_answer(body: dict[str, Any]) -> str:
    """First attempt: prose with no JSON (rejected); after the retry message: a valid answer.
    A prompt containing "ALWAYS DEFECT" gets an all-defect answer (the re-ask test edits it in).
    """
    messages = body.get("messages", [])
    if any("ALWAYS DEFECT" in str(m.get("content", "")) for m in messages):
        return 'Fine, I defect. {"A0": 0, "A1": 100}'
    if not any(m.get("role") == "assistant" for m in messages):  # the first attempt
        return "I would rather not commit to numbers."
    return 'Alright: {"A0": 70, "A1": 30}'


async def build_db(path: Path, url: str | None) -> None:
    """Run the sweeps into ``path`` and pin creation times and latencies."""
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    store = Store(path)
    # One match at a time: concurrent strategy matches interleave by the clock (the engine
    # yields the loop every few ms), so decision ids, shown in the inspector's title, would
    # depend on the machine's load.
    await run_sweep(build_sweep(sim_sweep()), store, run_id=SIM_RUN, match_workers=1)
    await run_sweep(build_sweep(tour_sweep()), store, run_id=TOUR_RUN, match_workers=1)
    if url is not None:
        await run_sweep(build_sweep(llm_sweep(url)), store, run_id=LLM_RUN, match_workers=1)
    with store.transaction():
        for run_id, created in CREATED.items():
            store.db.execute("update runs set created_at = ?, finished_at = ? where id = ?",
                             [created, created + 60, run_id])
        store.db.execute("update decisions set latency_ms = 1.0, created_at = 1750000000")
    store.db.execute("pragma wal_checkpoint(truncate)")
    store.close()


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(latency=0.02, chunks=4, answer=scripted_answer) as srv:
        yield srv


@pytest.fixture(scope="module")
def seed_db(tmp_path_factory: pytest.TempPathFactory, server: LoopbackServer) -> Path:
    path = tmp_path_factory.mktemp("tui") / "seed.db"
    asyncio.run(build_db(path, server.url))
    return path


@pytest.fixture
def db(seed_db: Path, tmp_path: Path) -> Path:
    """A private copy of the seeded database."""
    path = tmp_path / "coop.db"
    shutil.copy(seed_db, path)
    return path


class ScreenApp(CoopApp):
    """The real app (store, ``open_replay``, live screen), opening on one screen."""

    def __init__(self, db: Path, make: Callable[[Store], Any]) -> None:
        super().__init__(db, replay_speed=0)
        self.make = make

    def on_mount(self, event: Any) -> None:
        event.prevent_default()  # no setup screen underneath
        self.push_screen(self.make(self.store))


async def until(pilot: Any, condition: Callable[[], bool], limit: float = 20.0) -> None:
    """Let the app run until ``condition`` holds (fails the test only if it never does)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the screen never reached the expected state")
        await pilot.pause(0.02)


def cell(table: DataTable, row: int, col: int) -> str:
    value = table.get_cell_at(Coordinate(row, col))
    return value.plain if isinstance(value, Text) else str(value)


def column(table: DataTable, col: int) -> list[str]:
    return [cell(table, r, col) for r in range(table.row_count)]


# ====================================================================== store reads
def test_run_summaries_count_and_search(db: Path) -> None:
    store = Store(db)
    rows = {r["id"]: r for r in store.run_summaries()}
    assert list(rows) == [LLM_RUN, TOUR_RUN, SIM_RUN]  # newest first
    assert (rows[SIM_RUN]["matches"], rows[SIM_RUN]["decisions"]) == (9, 18)
    assert (rows[TOUR_RUN]["matches"], rows[TOUR_RUN]["decisions"]) == (9, 72)

    def ids(query: str) -> list[str]:
        return [r["id"] for r in store.run_summaries(query)]

    assert ids("mech:repetition") == [TOUR_RUN]
    assert ids("agent:rnd") == [SIM_RUN]
    assert ids("similarity agent:tft") == [SIM_RUN]
    assert ids("game:prisoners") == [LLM_RUN, TOUR_RUN, SIM_RUN]
    assert ids("100%") == []  # % is literal, not a wildcard
    assert ids("name:_im") == []  # so is _
    date = rows[SIM_RUN]["date"][:10]
    assert set(ids(f"date:{date}")) <= {SIM_RUN, TOUR_RUN, LLM_RUN} and SIM_RUN in ids(f"date:{date}")
    matches = store.match_summaries(TOUR_RUN, "agent:alld")
    assert len(matches) == 5  # cross-play of 3 agents: alld in 5 of the 9 seatings
    assert all("alld" in m["agents"].split(" · ") for m in matches)
    store.close()


# ====================================================================== runs screen
async def test_runs_screen_lists_filters_and_shows_matches(db: Path) -> None:
    app = ScreenApp(db, RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await until(pilot, lambda: screen.loaded >= 1 and screen.matches_loaded >= 1)
        runs = screen.query_one("#runs-table", DataTable)
        assert column(runs, 0) == [LLM_RUN, TOUR_RUN, SIM_RUN]
        row = column(runs, 0).index(TOUR_RUN)
        assert [cell(runs, row, c) for c in (1, 2, 3, 5, 6)] == ["tour", "sweep", "done", "9", "72"]

        # the highlighted run's matches are listed below it
        runs.move_cursor(row=row)
        matches = screen.query_one("#matches-table", DataTable)
        await until(pilot, lambda: screen.shown_run == TOUR_RUN and matches.row_count == 9)
        assert set(column(matches, 5)) == {"repetition"}
        assert "tft · alld" in column(matches, 1)
        assert "rounds=4" in matches.border_title  # shared condition fields: once, in the title

        # the search box narrows the runs (and, for agent: words, the matches)
        box = screen.query_one("#runs-filter", Input)
        box.focus()
        loaded = screen.loaded
        await pilot.press(*"agent:alld")
        await until(pilot, lambda: screen.loaded > loaded and screen.query_text == "agent:alld"
                    and runs.row_count == 2)
        assert column(runs, 0) == [TOUR_RUN, SIM_RUN]
        await until(pilot, lambda: screen.shown_run == TOUR_RUN and matches.row_count == 5)
        assert all("alld" in a.split(" · ") for a in column(matches, 1))
        box.value = ""
        await pilot.press(*"mech:repet")
        await until(pilot, lambda: runs.row_count == 1)
        assert column(runs, 0) == [TOUR_RUN]
        box.value = "zzz-nothing"
        await until(pilot, lambda: runs.row_count == 0)
        assert matches.row_count == 0


async def test_open_match_replays_it_in_the_live_screen(db: Path) -> None:
    store = Store(db)
    expected = store.match_summaries(TOUR_RUN, "agent:tft agent:alld")
    target = next(m for m in expected if m["agents"] == "tft · alld")
    stored = {d.seat: d.response for d in store.decisions(target["id"]) if d.round == 4}
    store.close()
    app = ScreenApp(db, RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        runs = screen.query_one("#runs-table", DataTable)
        runs.move_cursor(row=column(runs, 0).index(TOUR_RUN))
        matches = screen.query_one("#matches-table", DataTable)
        await until(pilot, lambda: screen.shown_run == TOUR_RUN and matches.row_count == 9)
        matches.focus()
        matches.move_cursor(row=column(matches, 1).index("tft · alld"))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        live = app.screen
        assert live.session.kind == "replay" and live.session.match_id == target["id"]
        await live.wait_finished()
        await pilot.pause()
        # every seat's pane shows the recorded text of the last round, then the payoff
        for seat, pane in enumerate(live.panes):
            assert pane.blocks and pane.blocks[-1].text == stored[seat]
        timeline = live.query_one("#timeline")
        assert timeline.final == tuple(json.loads(target["payoffs"]))
        assert [r[1] for r in timeline.rounds][:2] == [(0, 1), (1, 1)]  # TFT copies ALLD's defection

        # the live screen's "i" opens this inspector on the selected seat's last decision
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InspectorScreen))
        await until(pilot, lambda: app.screen.target is not None)
        assert app.screen.target.decision.round == 4 and app.screen.target.decision.seat == 0


async def test_the_first_enter_reaches_the_latest_run_and_the_second_replays_its_match(db: Path) -> None:
    """No Tab, arrows and Tab again: the runs table has focus with its cursor on the
    newest run; Enter opens its matches, Enter again replays the first one (r too)."""
    app = ScreenApp(db, RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1 and screen.matches_loaded >= 1)
        runs = screen.query_one("#runs-table", DataTable)
        matches = screen.query_one("#matches-table", DataTable)
        assert app.focused is runs and runs.cursor_row == 0
        assert screen.selected_run() == LLM_RUN  # the newest run first
        await pilot.press("enter")
        await until(pilot, lambda: app.focused is matches and matches.row_count > 0)
        assert screen.shown_run == LLM_RUN and matches.cursor_row == 0
        first = screen.selected_match()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        assert app.screen.session.kind == "replay" and app.screen.session.match_id == first
        await app.screen.wait_finished()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        await pilot.press("r")  # the help's "Replay match"
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        assert app.screen.session.match_id == first


async def test_delete_run_asks_then_removes_it_from_the_database(db: Path) -> None:
    app = ScreenApp(db, RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        runs = screen.query_one("#runs-table", DataTable)
        runs.focus()
        runs.move_cursor(row=column(runs, 0).index(SIM_RUN))
        await pilot.pause()
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # declined: nothing happens
        await until(pilot, lambda: app.screen is screen)
        assert app.store.run(SIM_RUN) is not None
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        loaded = screen.loaded
        await pilot.press("y")
        await until(pilot, lambda: screen.loaded > loaded)
        assert column(runs, 0) == [LLM_RUN, TOUR_RUN]
    store = Store(db)
    assert store.run(SIM_RUN) is None
    assert store.db.execute("select count(*) from matches where run_id = ?", [SIM_RUN]).fetchone()[0] == 0
    assert store.db.execute("select count(*) from decisions where match_id not in "
                            "(select id from matches)").fetchone()[0] == 0
    assert store.run(TOUR_RUN) is not None and len(store.matches(TOUR_RUN)) == 9
    store.close()


async def test_decision_list_opens_the_inspector(db: Path) -> None:
    app = ScreenApp(db, RunsScreen)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        runs = screen.query_one("#runs-table", DataTable)
        runs.move_cursor(row=column(runs, 0).index(TOUR_RUN))
        matches = screen.query_one("#matches-table", DataTable)
        await until(pilot, lambda: screen.shown_run == TOUR_RUN and matches.row_count == 9)
        matches.focus()
        matches.move_cursor(row=column(matches, 1).index("alld · grim"))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DecisionsScreen) and app.screen.loaded)
        listing = app.screen.query_one(DataTable)
        assert listing.row_count == 8  # 4 rounds x 2 seats
        assert column(listing, 4)[:2] == ["alld", "grim"]
        assert column(listing, 7) == ["A1", "A0", "A1", "A1", "A1", "A1", "A1", "A1"]
        listing.move_cursor(row=3)  # round 2, grim: it has seen a defection
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, InspectorScreen))
        inspector = app.screen
        await until(pilot, lambda: inspector.target is not None)
        d = inspector.target.decision
        assert (d.round, d.seat, d.agent, d.action) == (2, 1, "grim", 1)


# ====================================================================== inspector
def llm_decision_id(store: Store) -> int:
    mid = store.matches(LLM_RUN)[0]["id"]
    return store.decision_list(mid)[0]["id"]


def static_text(widget: Any) -> str:
    """The plain text a Static shows (rendered at a wide width)."""
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


async def test_inspector_shows_messages_response_parse_and_rejected_attempts(db: Path) -> None:
    store = Store(db)
    decision_id = llm_decision_id(store)
    stored = store.get_decision(decision_id)
    store.close()
    assert stored is not None and len(stored.retries) == 1 and stored.valid
    app = ScreenApp(db, lambda s: InspectorScreen(s, decision_id))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        text = static_text(screen.query_one("#insp-details"))
        system, user = (m["content"] for m in stored.retries[0].messages)
        # CoopEval's layout: the reasoning instruction as a system message, then the game
        assert system in text and "── 1. system ──" in text
        assert user.splitlines()[0] in text and "── 2. user ──" in text
        assert 'Alright: {"A0": 70, "A1": 30}' in text  # the raw response
        assert "✓ valid mixed" in text and '"A0": 0.7' in text  # the parse result
        assert "Rejected attempts (1)" in text
        assert "I would rather not commit to numbers." in text  # the rejected answer
        assert f"attempt 1: {stored.retries[0].error}" in text
        assert "Final conversation" in text  # the retry instruction that followed
        assert "latency 1 ms" in text and "attempts 2" in text
        # the editor holds the request's user message, not the retry conversation
        assert screen.query_one("#insp-prompt", TextArea).text == user


async def test_the_inspector_opens_with_the_prompt_editor_focused(db: Path) -> None:
    store = Store(db)
    decision_id = llm_decision_id(store)
    store.close()
    app = ScreenApp(db, lambda s: InspectorScreen(s, decision_id))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        editor = screen.query_one("#insp-prompt", TextArea)
        assert app.focused is editor
        await pilot.press("X")  # typing goes straight into the prompt
        assert "X" in editor.text and editor.text != screen.original_prompt


async def test_inspector_reask_with_a_strategy_stores_a_new_decision(db: Path) -> None:
    store = Store(db)
    grim_vs_alld = next(m for m in store.match_summaries(TOUR_RUN) if m["agents"] == "grim · alld")
    original = next(r for r in store.decision_list(grim_vs_alld["id"])
                    if r["round"] == 3 and r["seat"] == 0)
    store.close()
    app = ScreenApp(db, lambda s: InspectorScreen(s, original["id"]))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        editor = screen.query_one("#insp-prompt", TextArea)
        editor.load_text("Short prompt: choose A0 or A1.")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.result is not None or screen.error is not None)
        await screen.wait_reasked()
        assert screen.error is None
        result = screen.result
        # grim trigger has seen a defection in round 1: it defects again, as before
        assert result.decision.action == 1 == original["action"]
        assert screen.new_text == result.decision.response == '{"A0": 0, "A1": 100}'
        outcome = static_text(screen.query_one("#insp-new-outcome"))
        assert "re-asked" in outcome and "original" in outcome and "same answer" in outcome
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, InspectorScreen) and app.screen is not screen)
        assert app.screen.decision_id == result.decision_id
    store = Store(db)
    new = store.get_decision(result.decision_id)
    assert new is not None and new.prompt == [{"role": "user", "content": "Short prompt: choose A0 or A1."}]
    match = store.match(new.match_id)
    assert match["matchup"] == "reask" and match["run_id"] == f"reask-{TOUR_RUN}"
    assert json.loads(match["info"])["reask_of"] == {
        "run_id": TOUR_RUN, "match_id": grim_vs_alld["id"], "decision_id": original["id"]}
    assert store.run(f"reask-{TOUR_RUN}")["kind"] == "reask"
    assert [r["id"] for r in store.reasks_of(original["id"])] == [result.decision_id]
    assert store.get_decision(original["id"]).prompt != new.prompt  # the original is untouched
    store.close()


async def test_inspector_reask_streams_an_llm_answer_beside_the_original(db: Path) -> None:
    store = Store(db)
    decision_id = llm_decision_id(store)
    store.close()
    app = ScreenApp(db, lambda s: InspectorScreen(s, decision_id))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        editor = screen.query_one("#insp-prompt", TextArea)
        editor.load_text(editor.text + "\nALWAYS DEFECT.")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.result is not None or screen.error is not None)
        await screen.wait_reasked()
        assert screen.error is None
        d = screen.result.decision
        # the loopback server answered the edited prompt on the first attempt
        assert d.valid and d.attempts == 1 and d.distribution == (0.0, 1.0)
        assert screen.new_text == 'Fine, I defect. {"A0": 0, "A1": 100}'
        outcome = static_text(screen.query_one("#insp-new-outcome"))
        assert "A0 0%  A1 100%" in outcome and "A0 70%  A1 30%" in outcome
        assert "the answer changed" in outcome
        assert "ALWAYS DEFECT." in d.prompt[-1]["content"]


def test_reask_refuses_what_it_cannot_ask(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coop_tui.reask import ReaskError, reask

    store = Store(db)
    with pytest.raises(ReaskError, match="no decision #999999"):
        asyncio.run(reask(store, 999999, "x"))
    decision_id = llm_decision_id(store)
    match_id = store.get_decision(decision_id).match_id
    with store.transaction():
        store.db.execute("update seats set agent_spec = ? where match_id = ?",
                         [json.dumps({"model": "openai/gpt-4o-mini"}), match_id])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ReaskError, match="OPENAI_API_KEY"):
        asyncio.run(reask(store, decision_id, "x"))
    with store.transaction():
        store.db.execute("update seats set agent_spec = ? where match_id = ?",
                         [json.dumps({"human": True}), match_id])
    with pytest.raises(ReaskError, match="human"):
        asyncio.run(reask(store, decision_id, "x"))
    assert store.reasks_of(decision_id) == []  # nothing was stored for refused re-asks
    store.close()


# ====================================================================== analysis
def test_report_per_round_matches_the_stored_decisions(db: Path) -> None:
    store = Store(db)
    report = build_report(store, TOUR_RUN)
    per_round = report["experiments"][0]["per_round"]
    assert set(per_round) == {"tft", "alld", "grim"}
    for agent, points in per_round.items():
        assert [p["round"] for p in points] == [1, 2, 3, 4]
        for p in points:
            probs = [d.coop_prob for m in store.matches(TOUR_RUN) for d in store.decisions(m["id"])
                     if d.agent == agent and d.round == p["round"]]
            assert p["n"] == len(probs) == 6  # 5 seatings, self-play counts both seats
            assert p["coop_rate"] == pytest.approx(sum(probs) / len(probs))
    tft = {p["round"]: p["coop_rate"] for p in per_round["tft"]}
    assert tft[1] == 1.0 and tft[2] == pytest.approx(4 / 6)  # only ALLD's defection is copied
    assert build_report(store, SIM_RUN)["experiments"][0]["per_round"] == {}  # one-shot
    store.close()


async def test_analysis_similarity_curve_with_b_star(db: Path, tmp_path: Path) -> None:
    app = ScreenApp(db, lambda s: AnalysisScreen(s, SIM_RUN, export_dir=tmp_path / "out"))
    async with app.run_test(size=(140, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        assert screen.query_one("#an-curve").display and not screen.query_one("#an-rounds").display
        assert screen.b_star_line == 50.0  # Prisoners: b* = 1/2, drawn at 50% similarity
        assert "b* = 0.5" in static_text(screen.query_one("#an-title"))
        assert not screen.query_one("#an-matchup-box").display  # self-play: no tournament
        conditions = screen.query_one("#an-conditions", DataTable)
        assert conditions.row_count == 9
        rows = {(cell(conditions, r, 0), cell(conditions, r, 1)): cell(conditions, r, 3)
                for r in range(conditions.row_count)}
        assert rows[("similarity=50", "tft")] == "100.0%" and rows[("similarity=0", "alld")] == "0.0%"
        payoff = static_text(screen.query_one("#an-payoff"))
        assert "2, 2" in payoff and "0, 3" in payoff and "3, 0" in payoff and "1, 1" in payoff


async def test_analysis_tournament_tables_equal_the_report(db: Path, tmp_path: Path) -> None:
    store = Store(db)
    report = build_report(store, TOUR_RUN)
    store.close()
    e = report["experiments"][0]
    out = tmp_path / "export"
    app = ScreenApp(db, lambda s: AnalysisScreen(s, TOUR_RUN, export_dir=out))
    async with app.run_test(size=(140, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        assert screen.query_one("#an-rounds").display and not screen.query_one("#an-curve").display
        matchup = screen.query_one("#an-matchup", DataTable)
        agents = list(e["matchup_matrix"])
        assert column(matchup, 0) == [f"{i} {a}" for i, a in enumerate(agents, start=1)]
        for i, a in enumerate(agents):
            for j, b in enumerate(agents):
                assert cell(matchup, i, j + 1).strip() == f"{e['matchup_matrix'][a][b]:.3f}"
        population = screen.query_one("#an-population", DataTable)
        for r in range(population.row_count):
            m = e["population"][cell(population, r, 0)]
            assert cell(population, r, 1) == f"{m['mean_payoff']:.4f}"
            assert cell(population, r, 2) == f"{m['fitness']:.4f}"
            assert cell(population, r, 4) == f"{m['deviation_rating']:.4f}"
        assert population.row_count == 3

        assert screen.query_one("#an-export-dir", Input).value == str(out)
        screen.query_one("#an-conditions").focus()
        await pilot.press("c")
        await until(pilot, lambda: len(screen.exported) == 5)
        await pilot.press("p")
        await until(pilot, lambda: any(p.suffix == ".parquet" for p in screen.exported))
    import pandas as pd

    decisions = pd.read_csv(out / "decisions.csv")
    assert len(decisions) == 72 and set(decisions["agent"]) == {"tft", "alld", "grim"}
    assert len(pd.read_parquet(out / "matches.parquet")) == 9


@pytest.mark.slow
async def test_inspector_reask_with_the_embedded_model(tmp_path: Path) -> None:
    """SmolLM2 in process: the re-ask's worker thread runs llama.cpp and streams back."""
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    path = tmp_path / "local.db"
    store = Store(path)
    sweep = build_sweep({
        "name": "local", "seed": 4, "concurrency": 1,
        "agents": {"small": {"model": "local/smollm2", "max_tokens": 8, "seed": 5,
                             "style": "direct"},
                   "tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "mechanism": "none", "matchup": [["small", "tft"]],
                         "agents": ["small", "tft"]}],
    })
    await run_sweep(sweep, store, run_id="run-local")
    mid = store.matches("run-local")[0]["id"]
    decision_id = next(r["id"] for r in store.decision_list(mid) if r["agent"] == "small")
    store.close()
    app = ScreenApp(path, lambda s: InspectorScreen(s, decision_id))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        editor = screen.query_one("#insp-prompt", TextArea)
        edited = editor.text.replace("Setup:", "Setup (edited):", 1)
        assert edited != editor.text
        editor.load_text(edited)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.result is not None or screen.error is not None, limit=120)
        await screen.wait_reasked()
        assert screen.error is None
        d = screen.result.decision
        # the grammar-constrained answer streamed into the pane and parsed
        assert d.constrained and d.answer is not None and d.valid
        assert d.output_tokens and d.output_tokens > 0
        assert d.answer.strip() in screen.new_text
        assert "re-asked" in static_text(screen.query_one("#insp-new-outcome"))
    store = Store(path)
    stored = store.get_decision(screen.result.decision_id)
    assert stored is not None and stored.agent == "small"
    # the edit replaces the user message; the system message is kept
    assert [m["role"] for m in stored.prompt] == ["system", "user"]
    assert stored.prompt[-1]["content"].startswith("Setup (edited):")
    spec = json.loads(store.seats(stored.match_id)[0]["agent_spec"])
    assert spec["model"] == "local/smollm2" and spec["max_tokens"] == 8
    store.close()


async def test_analysis_shows_ballots_of_an_imported_mediation_tournament(tmp_path: Path) -> None:
    from coop_tui.importers.coopeval import import_command

    sample = Path(__file__).parent / "data" / "coopeval_sample"
    db = tmp_path / "ce.db"
    assert import_command(sample / "mediation_trust_game", db) == 0
    store = Store(db)
    run_id = store.latest_run()["id"]
    votes = build_report(store, run_id)["mechanisms"]["votes"]
    store.close()
    app = ScreenApp(db, lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        ballots = screen.query_one("#an-ballots", DataTable)
        assert ballots.display and ballots.row_count == len(votes) == 6
        shown = {cell(ballots, r, 0): (cell(ballots, r, 3), cell(ballots, r, 8))
                 for r in range(ballots.row_count)}
        for v in votes:
            assert shown[v["agent"]] == (str(v["adopted"]), f"{100 * v['delegate_rate']:.1f}%")


# ====================================================================== report sections
@pytest.fixture
def decisions_per_agent_section() -> Iterator[None]:
    """A report section defined by the test: play decisions per agent, from the store."""
    from rich.table import Table

    from coop_tui.analysis import sections

    def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, int] | None:
        rows = store.db.execute(
            """select s.agent, count(*) from decisions d
               join matches m on m.id = d.match_id
               join seats s on s.match_id = d.match_id and s.seat = d.seat
               where m.run_id = ? and d.phase = 'play' group by s.agent""", [run_id]).fetchall()
        return {agent: n for agent, n in rows} or None

    def render(value: dict[str, int]) -> list[Any]:
        table = Table("agent", "play decisions")
        for agent, n in sorted(value.items()):
            table.add_row(agent, str(n))
        return [table]

    section = sections.register(sections.Section(
        key="test_play_counts", title="Play decisions per agent", build=build, render=render))
    yield
    sections._SECTIONS.pop(section.key)


async def test_a_report_section_appears_in_json_text_and_the_analysis_screen(
        db: Path, tmp_path: Path, decisions_per_agent_section: None) -> None:
    from rich.console import Console

    from coop_tui.report import render_text

    store = Store(db)
    report = build_report(store, TOUR_RUN)
    # cross-play of 3 agents x 4 rounds: each agent sits in 5 of 9 seatings (self-play twice)
    assert report["test_play_counts"] == {"tft": 24, "alld": 24, "grim": 24}
    console = Console(width=120, record=True, color_system=None)
    console.print(render_text(report))
    text = console.export_text()
    assert "Play decisions per agent" in text and "grim" in text.split("Play decisions per agent")[1]
    store.close()
    app = ScreenApp(db, lambda s: AnalysisScreen(s, TOUR_RUN, export_dir=tmp_path / "out"))
    async with app.run_test(size=(140, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        await pilot.pause()
        panel = screen.query_one("#an-section-test_play_counts")
        assert panel.border_title == "Play decisions per agent"
        shown = static_text(panel.query_one(Static))
        assert "alld" in shown and "24" in shown
