"""The TUI core: setup preset, live matches, pause/stop, play mode, replay, sweep files.

Driven through Textual's pilot with real strategies and the embedded model; every match
goes through the engine and the store, and the assertions read the database back.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

import pytest
from textual.widgets import Button, Input, Select
from textual.worker import Worker, WorkerState, get_current_worker

from coop_tui.app import CoopApp
from coop_tui.mechanisms import mechanism_class
from coop_tui.screens.help import HelpScreen, help_title, key_name, key_sections, screen_classes
from coop_tui.screens.live import TITLE_CONDITION_WIDTH, LiveScreen, condition_shown, condition_text
from coop_tui.screens.setup import SetupScreen, coerce_param
from coop_tui.screens.widgets import SeatPane
from coop_tui.session import (
    MatchSetup,
    ReplaySession,
    build_setup_sweep,
    human_answer,
    play_setup,
    prompt_text,
    setup_to_sweep,
    sweep_toml,
)
from coop_tui.spec import SpecError, build_sweep, load_sweep

SIZE = (160, 48)


async def ready_setup(pilot) -> SetupScreen:  # type: ignore[no-untyped-def]
    screen = pilot.app.screen
    assert isinstance(screen, SetupScreen)
    await screen.wait_ready()
    await pilot.pause()
    return screen


async def finished_live(pilot) -> LiveScreen:  # type: ignore[no-untyped-def]
    # starting may build the session in a worker first: wait for the screen to change
    await until(pilot, lambda: isinstance(pilot.app.screen, LiveScreen), "the live screen")
    screen = pilot.app.screen
    assert isinstance(screen, LiveScreen)
    await asyncio.wait_for(screen.wait_finished(), 300)  # a hang guard, not a timing check
    await pilot.pause()
    return screen


async def until(pilot, condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until ``condition()`` holds; a hang guard, not a timing check."""
    for _ in range(6000):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"gave up waiting for {what}")


async def wait_for_turn(pilot, screen: LiveScreen, seat: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Until the human seat is asked and the input bar shows it."""
    await until(pilot, lambda: screen.session_waiting(seat) and bool(screen.turns), "the human turn")


def plain(widget) -> str:  # type: ignore[no-untyped-def]
    """What a Static shows, as plain text."""
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()


def set_seats(screen: SetupScreen, *agents: str) -> None:
    for i, agent in enumerate(agents):
        screen.query_one(f"#seat-{i}", Input).value = agent


# ---------------------------------------------------------------- setup screen
async def test_launch_shows_preset_with_start_focused(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        assert [screen.query_one(f"#seat-{i}", Input).value for i in (0, 1)] == ["local/smollm2"] * 2
        assert screen.query_one("#game", Select).value == "prisoners"
        assert screen.query_one("#mechanism", Select).value == "similarity"
        assert screen.query_one("#param-similarity", Input).value == "80"
        assert screen.query_one("#param-framing", Select).value == "similar"
        assert screen.query_one("#param-prompt", Select).value == "percentage_updated"
        focused = app.focused
        assert isinstance(focused, Button) and focused.id == "start"
        # the preview is the exact prompt of each seat, twist included
        assert set(screen.preview) == {0, 1}
        seat2 = prompt_text(screen.preview[1])
        assert "80% similar to how you reach yours" in seat2
        assert "you are Player 2" in seat2
        assert "you get 3 points, the other player gets 0 points" in seat2
        # the payoff table of the chosen game is on screen
        assert "Prisoner's Dilemma" in plain(screen.query_one("#payoffs"))


async def test_a_preview_still_rendering_when_its_screen_is_popped_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual removes a screen's widgets before it cancels the screen's workers; a
    preview finishing in between once raised NoMatches('#setup-message') on a busy
    machine. Here the preview finishes exactly then: once the message line is gone."""
    import coop_tui.screens.setup.preview as setup_module

    real_preview = setup_module.preview_prompts
    rendering = asyncio.Event()
    workers: list[Worker] = []

    async def preview_finishing_after_the_widgets_went(sweep):  # type: ignore[no-untyped-def]
        prompts = await real_preview(sweep)
        workers.append(get_current_worker())
        rendering.set()
        while message.is_attached:  # yields to the loop; no clock involved
            await asyncio.sleep(0)
        return prompts

    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        message = screen.query_one("#setup-message")
        monkeypatch.setattr(setup_module, "preview_prompts", preview_finishing_after_the_widgets_went)
        screen.query_one("#param-similarity", Input).value = "70"
        await asyncio.wait_for(rendering.wait(), 120)  # a hang guard, not a timing check
        await app.pop_screen()
        await pilot.pause()
        assert not isinstance(app.screen, SetupScreen)
        assert workers[0].state == WorkerState.CANCELLED
    assert app.return_code in (0, None)


async def test_framing_change_updates_preview(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        screen.query_one("#param-framing", Select).value = "different"
        await screen.wait_ready()
        await pilot.pause()
        await screen.wait_ready()
        text = prompt_text(screen.preview[0])
        assert "20% different from how you reach yours" in text


async def test_invalid_input_names_the_field_and_stays(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        set_seats(screen, "tit_for_tatt", "always_defect")
        screen.query_one("#start", Button).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        message = plain(screen.query_one("#setup-message"))
        assert "seat 1 agent" in message and "tit_for_tat" in message
        set_seats(screen, "tit_for_tat", "always_defect")
        screen.query_one("#param-similarity", Input).value = "120"
        await pilot.press("ctrl+g")  # Start's key (the button ignores a second press for 0.2 s)
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        message = plain(screen.query_one("#setup-message"))
        assert message.startswith("✗ similarity:") and "0-100" in message
    assert app.store.runs() == []


async def test_strategies_match_streams_into_both_panes_and_is_stored(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        set_seats(screen, "tit_for_tat", "always_defect")
        screen.query_one("#start", Button).focus()
        await pilot.press("enter")
        live = await finished_live(pilot)
        panes = list(live.query(SeatPane))
        assert [p.agent for p in panes] == ["tit_for_tat", "always_defect"]
        assert json.loads(panes[0].blocks[-1].text) == {"A0": 100, "A1": 0}
        assert json.loads(panes[1].blocks[-1].text) == {"A0": 0, "A1": 100}
        assert "A0 (Cooperate)" in panes[0].blocks[-1].notes.plain
        assert "A1 (Defect)" in panes[1].blocks[-1].notes.plain
        assert live.query_one("#timeline").final == (0.0, 3.0)
        run_id = live.session.run_id
    store = app.store
    run = store.run(run_id)
    assert run is not None and run["kind"] == "interactive" and run["status"] == "done"
    (match,) = store.matches(run_id)
    assert json.loads(match["payoffs"]) == [0.0, 3.0]
    assert json.loads(match["condition"])["similarity"] == 80
    decisions = store.decisions(match["id"])
    assert [(d.seat, d.agent, d.action) for d in decisions] == [
        (0, "tit_for_tat", 0), (1, "always_defect", 1)]


@pytest.mark.slow
async def test_public_good_shows_one_pane_per_seat(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        screen.query_one("#game", Select).value = "public_good"
        screen.query_one("#mechanism", Select).value = "none"
        await until(pilot, lambda: len(screen.seat_values()) == 3 and screen._built_mechanism == "none",
                    "three seats and the none mechanism")
        set_seats(screen, "always_cooperate", "always_cooperate", "always_defect")
        await screen.wait_ready()
        screen.action_start()
        live = await finished_live(pilot)
        assert len(live.query(SeatPane)) == 3
        assert all(p.last_decision is not None for p in live.query(SeatPane))
        match_id = live.session.match_id
        final = live.query_one("#timeline").final
    # two contributors at alpha 1.5, n = 3: 1.5 * 2 / 3 = 1 each, the free rider gets 1 + 1
    assert final == (1.0, 1.0, 2.0)
    assert len(app.store.decisions(match_id)) == 3


@pytest.mark.slow
async def test_reputation_from_the_setup_fills_its_population_from_the_seats(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        screen.query_one("#mechanism", Select).value = "reputation"
        await until(pilot, lambda: screen._built_mechanism == "reputation", "reputation fields")
        set_seats(screen, "tit_for_tat", "always_defect")
        await screen.wait_ready()
        assert screen.error is None
        screen.action_start()
        live = await finished_live(pilot)
        assert len(live.query(SeatPane)) == 4  # population 4: tft, alld, tft, alld
        match_id = live.session.match_id
    seats = [s["agent"] for s in app.store.seats(match_id)]
    assert seats == ["tit_for_tat", "always_defect"] * 2


@pytest.mark.slow
async def test_live_keys_open_inspector_runs_and_analysis(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready_setup(pilot)
        app.start_match(MatchSetup(seats=["tit_for_tat", "always_defect"], mechanism="repetition",
                                   params={"rounds": 2}))
        await pilot.pause()
        live = await finished_live(pilot)
        await pilot.press("right", "i")  # seat 2 selected, then its last decision
        await pilot.pause()
        inspector = app.screen
        assert type(inspector).__name__ == "InspectorScreen"
        last = live.pane(1).last_decision
        row = app.store.db.execute(  # a strategy decision has no cache key: found by its place
            "select id, seat, round from decisions where id = ?", [app.store.decision_id_of(last)]
        ).fetchone()
        assert row[1:] == (1, 2) and inspector.decision_id == row[0]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is live
        for key, name in (("r", "RunsScreen"), ("a", "AnalysisScreen"), ("question_mark", "HelpScreen")):
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen).__name__ == name
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is live
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)


@pytest.mark.slow
async def test_samples_play_one_match_after_another(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready_setup(pilot)
        app.start_match(MatchSetup(seats=["tit_for_tat", "always_defect"], mechanism="none", samples=3))
        await pilot.pause()
        live = await finished_live(pilot)
        assert live.match_index == 3
        # the panes show the last match only
        assert [len(p.blocks) for p in live.query(SeatPane)] == [1, 1]
        run_id = live.session.run_id
    matches = app.store.matches(run_id)
    assert [m["sample"] for m in matches] == [0, 1, 2]
    assert all(m["status"] == "done" for m in matches)


# ---------------------------------------------------------------- pause / stop / play
def _human_vs(opponent: str, rounds: int, db: Path) -> CoopApp:
    sweep = build_setup_sweep(play_setup("prisoners", opponent, rounds, None))
    return CoopApp(db, play=sweep)


async def test_pause_holds_the_next_decision_and_stop_ends_the_match(tmp_path: Path) -> None:
    app = _human_vs("tit_for_tat", 5, tmp_path / "t.db")
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await wait_for_turn(pilot, live)
        live.query_one("#seat-1", SeatPane).focus()
        await pilot.press("p")
        assert live.session.paused and live.session.status == "paused"
        live.query_one("#human-input", Input).focus()
        await pilot.press("1", "enter")
        # round 1 completes, round 2 is not asked while paused
        await until(pilot, lambda: live.decisions >= 2, "round 1's decisions")
        await pilot.pause()
        assert not live.session.waiting_for
        live.query_one("#seat-1", SeatPane).focus()
        await pilot.press("p")
        assert not live.session.paused
        await wait_for_turn(pilot, live)
        live.query_one("#seat-0", SeatPane).focus()
        await pilot.press("s")
        await live.wait_finished()
        run_id, match_id = live.session.run_id, live.session.match_id
        assert live.session.status == "stopped"
    store = app.store
    assert store.run(run_id)["status"] == "stopped"
    (match,) = store.matches(run_id)
    assert match["id"] == match_id and match["status"] == "stopped"
    rounds = store.rounds(match_id)
    assert [(r["round"], r["seat"], r["action"], r["payoff"]) for r in rounds] == [
        (1, 0, 1, 3.0), (1, 1, 0, 0.0)]


async def test_play_mode_three_rounds_against_tit_for_tat(tmp_path: Path) -> None:
    app = _human_vs("tit_for_tat", 3, tmp_path / "t.db")
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        for rnd in (1, 2, 3):
            await wait_for_turn(pilot, live)
            # the human sees the model's prompt in its pane, answer instruction included;
            # the input bar's keys are a shortcut for that answer, and says so
            assert "Use exactly these keys: A0, A1" in live.pane(0).blocks[-1]._prompt
            assert "sent in the answer format the prompt asks of the model" in plain(
                live.query_one("#human-prompt"))
            # tit_for_tat has answered this round, but its answer stays hidden until we move
            opponent = live.pane(1)

            def answered(pane: SeatPane = opponent, rnd: int = rnd) -> bool:
                return pane.last_decision is not None and pane.last_decision.round == rnd

            await until(pilot, answered, "tit_for_tat's answer")
            hidden = opponent.blocks[-1]
            assert not hidden.display
            assert "shown once you have moved" in opponent.status.plain
            await pilot.press("0", "enter")
            await until(pilot, lambda block=hidden: block.display, "the answer to be revealed")
        live = await finished_live(pilot)
        match_id = live.session.match_id
        run_id = live.session.run_id
    store = app.store
    assert store.run(run_id)["kind"] == "play"
    decisions = store.decisions(match_id)
    human = [d for d in decisions if d.seat == 0]
    tft = [d for d in decisions if d.seat == 1]
    assert len(human) == 3 and len(tft) == 3
    for d in human:
        assert d.agent == "human" and d.phase == "play" and d.valid
        assert d.parsed == {"A0": 1.0, "A1": 0.0} and d.action == 0
        assert json.loads(d.response) == {"A0": 100, "A1": 0}
        assert d.latency_ms > 0
        assert "Use exactly these keys" in prompt_text(d.prompt)
    assert [d.action for d in tft] == [0, 0, 0]
    assert [(r["round"], r["seat"], r["payoff"]) for r in store.rounds(match_id)] == [
        (1, 0, 2.0), (1, 1, 2.0), (2, 0, 2.0), (2, 1, 2.0), (3, 0, 2.0), (3, 1, 2.0)]
    (match,) = store.matches(run_id)
    # told "exactly 3 rounds ... your points add up": the match payoff is the total
    assert json.loads(match["payoffs"]) == [6.0, 6.0]


@pytest.mark.slow
async def test_play_mode_mixed_strategy_and_a_rejected_typo(tmp_path: Path) -> None:
    app = _human_vs("always_defect", 1, tmp_path / "t.db")
    async with app.run_test(size=SIZE) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)
        await wait_for_turn(pilot, live)
        await pilot.press(*"A0=70 A1=20", "enter")
        assert "add up to 90" in plain(live.query_one("#human-prompt"))
        assert live.session.waiting_for == [0]
        live.query_one("#human-input", Input).value = ""
        await pilot.press(*"A0=70 A1=30", "enter")
        live = await finished_live(pilot)
        match_id = live.session.match_id
    (human, alld) = sorted(app.store.decisions(match_id), key=lambda d: d.seat)
    assert json.loads(human.response) == {"A0": 70, "A1": 30}
    assert human.distribution == (0.7, 0.3)
    assert alld.action == 1


# ---------------------------------------------------------------- the embedded model
@pytest.mark.slow
async def test_preset_with_the_embedded_model_streams_into_both_panes(tmp_path: Path) -> None:
    setup = MatchSetup.preset()
    setup.max_tokens = 12
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path, setup=setup)
    async with app.run_test(size=SIZE) as pilot:
        await ready_setup(pilot)
        await pilot.press("enter")  # Start is focused: one Enter starts the match
        live = await finished_live(pilot)
        panes = list(live.query(SeatPane))
        assert [p.agent for p in panes] == ["local/smollm2", "local/smollm2"]
        assert all(p.blocks and p.blocks[-1].text.strip() for p in panes)
        match_id = live.session.match_id
        texts = [p.blocks[-1].text for p in panes]
    decisions = app.store.decisions(match_id)
    assert len(decisions) == 2
    assert all(d.valid and d.action is not None for d in decisions)
    for d, text in zip(sorted(decisions, key=lambda d: d.seat), texts, strict=True):
        # the pane shows the streamed reasoning and then the constrained answer step
        assert text.startswith(d.response.rstrip())
        assert d.answer is None or d.answer.strip() in text


# ---------------------------------------------------------------- an LLM over HTTP
async def test_llm_reasoning_is_apart_and_a_rejected_answer_is_shown(tmp_path: Path, loopback) -> None:  # type: ignore[no-untyped-def]
    """Through litellm against the loopback server: the first answer has no JSON, the
    re-ask succeeds; the pane shows the reasoning in its own block and the rejection."""
    calls: list[int] = []

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        calls.append(1)
        return "I would rather not say." if len(calls) == 1 else 'Fine.\n{"A0": 60, "A1": 40}'

    loopback.configure(answer=answer, reasoning="Weighing both actions first.", chunks=4)
    sweep = build_sweep({
        "name": "llm-live", "seed": 1,
        "agents": {"m": {"model": "openai/loopback", "api_base": loopback.url, "style": "cot"},
                   "tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "mechanism": "none", "matchup": [["m", "tft"]],
                         "agents": ["m", "tft"]}],
    })
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready_setup(pilot)
        app.start_match(sweep)
        await pilot.pause()
        live = await finished_live(pilot)
        pane = live.pane(0)
        first, second = pane.blocks
        assert first.reasoning_text == second.reasoning_text == "Weighing both actions first."
        assert first.text == "I would rather not say."
        assert "attempt 1 rejected" in first.notes.plain
        assert second._header == "Round 1 · play · attempt 2"
        assert second.text.endswith('{"A0": 60, "A1": 40}')
        assert "A0 60%  A1 40%" in second.notes.plain
        match_id = live.session.match_id
    (llm,) = [d for d in app.store.decisions(match_id) if d.seat == 0]
    assert llm.valid and llm.attempts == 2 and len(llm.retries) == 1
    assert llm.reasoning == "Weighing both actions first."


# ---------------------------------------------------------------- replay
async def test_replay_shows_the_stored_match_again(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path, replay_speed=0)
    async with app.run_test(size=SIZE) as pilot:
        await ready_setup(pilot)
        app.start_match(MatchSetup(seats=["tit_for_tat", "always_defect"], mechanism="repetition",
                                   params={"rounds": 3}))
        first = await finished_live(pilot)
        match_id = first.session.match_id
        original = [[b.text for b in p.blocks] for p in first.query(SeatPane)]
        timeline = first.query_one("#timeline").rounds
        await pilot.press("q")
        await pilot.pause()
        app.open_replay(match_id)
        await pilot.pause()
        replay = await finished_live(pilot)
        assert isinstance(replay.session, ReplaySession)
        assert [[b.text for b in p.blocks] for p in replay.query(SeatPane)] == original
        assert replay.query_one("#timeline").rounds == timeline
    assert len(app.store.runs()) == 1  # a replay writes nothing


# ---------------------------------------------------------------- sweep file + headless
async def test_save_sweep_then_run_it_headless(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        set_seats(screen, "tit_for_tat", "always_defect")
        await screen.wait_ready()
        await pilot.press("ctrl+s")
        path = screen.last_saved
        assert path is not None and path.exists()
        sweep = load_sweep(path)
        (cell,) = sweep.cells
        assert cell.seats == ("tit_for_tat", "always_defect")
        assert cell.mechanism_params["similarity"] == 80
        await pilot.press("ctrl+b")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "exited with 0" in plain(screen.query_one("#setup-message"))
    runs = app.store.runs()
    assert [(r["kind"], r["status"]) for r in runs] == [("sweep", "done")]


async def test_help_lists_every_key(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready_setup(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(plain(s) for s in app.screen.query("Static"))
        for words in ("Pause/resume", "Stop", "Inspect", "Runs", "Analysis", "Save sweep",
                      "Run headless", "confirm your move", "Replay match",
                      "on a match: replay it", "Compare with run B", "Compare runs",
                      "on a run: compare run A with it"):
            assert words in text, words
        await pilot.press("escape")
        assert isinstance(app.screen, SetupScreen)


def test_help_lists_every_binding_of_every_screen() -> None:
    """Read from the screens' own BINDINGS: a key added to any screen is in the help, under
    that screen's section, with its description (the runs screen's Replay was missing)."""
    from coop_tui.screens.analysis import AnalysisScreen
    from coop_tui.screens.compare import CompareScreen
    from coop_tui.screens.inspector import InspectorScreen
    from coop_tui.screens.runs import ConfirmScreen, DecisionsScreen, RunsScreen

    classes = screen_classes()
    for cls in (SetupScreen, LiveScreen, RunsScreen, DecisionsScreen, ConfirmScreen,
                InspectorScreen, AnalysisScreen, CompareScreen, HelpScreen):
        assert cls in classes, cls.__name__
    sections = dict(key_sections())
    checked = 0
    for cls in classes:
        rows = sections.get(help_title(cls), [])
        for binding in cls.__dict__.get("BINDINGS", []):  # its own; Textual's are not ours
            if not binding.description:
                continue
            if binding.action == "help":  # the same on every screen: once, under Everywhere
                assert binding.key in ("f1", "question_mark")
                continue
            keys = {k.strip() for k in binding.key.split(",")}
            assert any(desc == binding.description
                       and {key_name(k) for k in keys} <= set(shown.split(", "))
                       for shown, desc in rows), (cls.__name__, binding.key, binding.description)
            checked += 1
    assert checked >= 40
    everywhere = " ".join(k for k, _d in sections["Everywhere"])
    for binding in CoopApp.BINDINGS:
        assert key_name(binding.key) in everywhere
    assert "f1, ?" in everywhere


async def test_help_scrolls_to_its_last_line_at_80x24(tmp_path: Path) -> None:
    """At 80x24 the help is longer than the terminal: it says so, shows a scrollbar,
    scrolls from the keyboard at once, and its last line can be reached."""
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready_setup(pilot)
        await pilot.press("f1")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        scroll = help_screen.query_one("#help-scroll")
        assert app.focused is scroll
        assert scroll.max_scroll_y > 0 and scroll.show_vertical_scrollbar
        assert scroll.region.height <= 24
        assert scroll.border_subtitle == "↓ more below"
        last_line = "command palette"
        assert last_line not in screen_text(app)
        await pilot.press("end")
        await until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y, "the end of the help")
        await pilot.pause()
        assert last_line in screen_text(app)
        assert scroll.border_subtitle == "↑ more above"


def screen_text(app: CoopApp) -> str:
    """What the terminal shows now, as text (read from Textual's own screenshot)."""
    import html
    import re

    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))).replace("\xa0", " ")


async def test_switching_the_mechanism_away_and_back_keeps_its_fields(tmp_path: Path) -> None:
    """similarity -> repetition -> similarity used to empty the similarity field (it has no
    default) and the form then said "similarity is missing"."""
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        screen.query_one("#param-similarity", Input).value = "65"
        screen.query_one("#param-framing", Select).value = "different"

        async def switch(mechanism: str) -> None:
            screen.query_one("#mechanism", Select).value = mechanism
            await until(pilot, lambda: screen._built_mechanism == mechanism
                        and bool(screen.query("#params Row")), f"the {mechanism} form")
            await screen.wait_ready()
            await pilot.pause()

        await switch("repetition")
        rounds = screen.query_one("#param-rounds", Input)
        rounds.value = "7"
        await switch("similarity")
        assert screen.query_one("#param-similarity", Input).value == "65"
        assert screen.query_one("#param-framing", Select).value == "different"
        assert screen.error is None
        assert "missing" not in plain(screen.query_one("#setup-message"))
        setup = screen.read_setup()
        assert setup.params["similarity"] == 65 and setup.params["framing"] == "different"
        await switch("repetition")
        assert screen.query_one("#param-rounds", Input).value == "7"


async def test_similarity_chosen_after_another_preset_starts_from_the_preset_value(tmp_path: Path) -> None:
    setup = MatchSetup(seats=["tit_for_tat", "tit_for_tat"], game="prisoners", mechanism="none")
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path, setup=setup)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        screen.query_one("#mechanism", Select).value = "similarity"
        await until(pilot, lambda: bool(screen.query("#param-similarity")), "the similarity form")
        await screen.wait_ready()
        assert screen.query_one("#param-similarity", Input).value == "80"
        assert screen.error is None


def test_the_live_title_shows_a_short_condition_whole() -> None:
    """README's capture: ``similarity=80 framing=similar prompt=percentage_updated``,
    defaults included; a long one (a Team tournament) keeps what was changed."""
    similarity = {"similarity": 80, "framing": "similar", "prompt": "percentage_updated"}
    assert condition_shown("similarity", similarity) == similarity
    teams = mechanism_class("teams")
    condition = teams(teams.Params(structure="GC", budget=10)).condition()
    assert len(condition_text(condition)) > TITLE_CONDITION_WIDTH
    shown = condition_shown("teams", condition)
    assert shown["structure"] == "GC" and shown["budget"] == 10
    assert "winner_bonus" not in shown and len(shown) < len(condition)


async def test_the_live_title_of_the_preset_names_its_similarity_framing_and_prompt(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready_setup(pilot)
        set_seats(screen, "tit_for_tat", "always_defect")
        screen.query_one("#start", Button).focus()
        await pilot.press("enter")
        live = await finished_live(pilot)
        title = plain(live.query_one("#live-title"))
        assert "similarity=80 framing=similar prompt=percentage_updated" in title
        await pilot.resize_terminal(100, 30)  # still fits in the title's two lines
        await pilot.pause()
        assert "prompt=percentage_updated" in plain(live.query_one("#live-title"))
        await pilot.resize_terminal(50, 30)  # no room: what was set away from the defaults
        await pilot.pause()
        title = plain(live.query_one("#live-title"))
        assert "similarity=80" in title and "framing=" not in title


# ---------------------------------------------------------------- helpers without a terminal
@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        ("0", {"A0": 100, "A1": 0}),
        ("1", {"A0": 0, "A1": 100}),
        ("a1", {"A0": 0, "A1": 100}),
        ("A0=70 A1=30", {"A0": 70, "A1": 30}),
        ("A0: 25, A1: 75", {"A0": 25, "A1": 75}),
        ('{"A1": 40, "A0": 60}', {"A0": 60, "A1": 40}),
        ("A0=100", {"A0": 100, "A1": 0}),
    ],
)
def test_human_answer_is_the_json_the_parser_reads(typed: str, answer: dict[str, int]) -> None:
    assert json.loads(human_answer(typed, ("A0", "A1"))) == answer


@pytest.mark.parametrize(
    ("typed", "reason"),
    [("2", "no action 2"), ("A0=60 A1=60", "add up to 120"), ("A3=100", "not one of your"),
     ("cooperate", "write percentages"), ("", "type an action"), ("{oops", "not valid JSON")],
)
def test_human_answer_rejects_with_a_reason(typed: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        human_answer(typed, ("A0", "A1"))


def test_setup_to_sweep_round_trips_through_toml() -> None:
    setup = MatchSetup(seats=["tit_for_tat", "local/smollm2"], params={"similarity": 30, "framing": "different",
                                                                      "seat_similarity": None},
                       max_tokens=64)
    data = setup_to_sweep(setup)
    assert tomllib.loads(sweep_toml(data)) == data
    sweep = build_sweep(tomllib.loads(sweep_toml(data)))
    (cell,) = sweep.cells
    assert cell.seats == ("tit_for_tat", "local_smollm2")
    assert sweep.spec.agents["local_smollm2"].max_tokens == 64
    assert cell.mechanism_params["framing"] == "different"


def test_self_play_uses_one_agent_and_the_self_matchup() -> None:
    data = setup_to_sweep(MatchSetup.preset())
    (exp,) = data["experiments"]
    assert exp["matchup"] == "self" and exp["agents"] == ["local_smollm2"]


def test_play_setup_repetition_only_for_several_rounds() -> None:
    many = play_setup("prisoners", "tit_for_tat", 4, None)
    assert many.seats == ["human", "tit_for_tat"]
    assert (many.mechanism, many.params) == ("repetition", {"rounds": 4, "horizon": "known"})
    one = play_setup("prisoners", "openai/gpt-4o-mini", 1, None)
    assert one.mechanism == "none" and one.params == {}


def test_errors_name_the_form_field() -> None:
    with pytest.raises(SpecError, match=r"^seat 2 agent: no API key"):
        build_setup_sweep(MatchSetup(seats=["tit_for_tat", "anthropic/claude-x"], mechanism="none"))
    with pytest.raises(SpecError, match=r"^seats: .*the game needs 3"):
        build_setup_sweep(MatchSetup(seats=["tit_for_tat", "always_defect"], game="public_good",
                                     mechanism="none"))


def test_form_text_becomes_typed_parameters() -> None:
    from coop_tui.mechanisms.similarity import SimilarityParams

    fields = SimilarityParams.model_fields
    assert coerce_param(fields["similarity"].annotation, "80") == 80
    assert coerce_param(fields["similarity"].annotation, "") is None
    assert coerce_param(fields["seat_similarity"].annotation, "10, 20") == [10, 20]
    assert coerce_param(fields["benchmark"].annotation, "123") == "123"


async def test_agent_suggestions_complete_strategies_and_litellm_models() -> None:
    from coop_tui.screens.setup import AgentSuggester, litellm_model_names

    suggester = AgentSuggester(["local/smollm2", "human", "tit_for_tat", "tit_for_two_tats"])
    assert await suggester.get_suggestion("tit_for_t") == "tit_for_tat"
    assert await suggester.get_suggestion("loc") == "local/smollm2"
    assert await suggester.get_suggestion("openai/gpt-4o-m") is None
    models = litellm_model_names()  # read from litellm's bundled price map, no import
    assert "openai/gpt-4o-mini" in models
    suggester.extend(models)
    assert (await suggester.get_suggestion("openai/gpt-4o-mi")).startswith("openai/gpt-4o-mini")


def test_a_human_answers_other_phases_in_the_prompts_own_format() -> None:
    from coop_tui.session import human_answer

    proposal = '{"1": "A0", "2": "A1"}'
    assert human_answer(proposal, ["A0", "A1"], "mediator") == proposal
    assert human_answer(' {"M1": true} ', ["M1"], "approvals") == '{"M1": true}'
    assert human_answer("0", ["A0", "A1"], "mixed") == '{"A0": 100, "A1": 0}'
    with pytest.raises(ValueError):
        human_answer("  ", ["M1"], "approvals")
