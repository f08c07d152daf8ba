"""Small things a researcher reads: listings that scripts can use, prompts that say what
the screen says, numbers shown only where they mean something, an export that explains
itself. Each test here failed on the code before its fix."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Select, Static

from coop_tui.app import CoopApp
from coop_tui.cli import main
from coop_tui.games import load_game
from coop_tui.mechanisms import mechanism_class
from coop_tui.prompts import Labelling, PromptRenderer, payoff_description
from coop_tui.report import build_report
from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.setup import SetupScreen
from coop_tui.screens.widgets import Timeline
from coop_tui.session import ReplaySession, build_setup_sweep, play_setup, preview_prompts
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

AGENTS = {"tft": {"strategy": "tit_for_tat"}, "allc": {"strategy": "always_cooperate"},
          "alld": {"strategy": "always_defect"}, "grim": {"strategy": "grim_trigger"}}


async def play(db: Path, run_id: str, *experiments: dict[str, Any]) -> None:
    """A strategy sweep of ``experiments`` stored as run ``run_id``."""
    store = Store(db)
    await run_sweep(build_sweep({"name": run_id, "seed": 1, "agents": AGENTS,
                                 "experiments": list(experiments)}, check_keys=False),
                    store, run_id=run_id)
    store.close()


def run(db: Path, run_id: str, *experiments: dict[str, Any]) -> None:
    asyncio.run(play(db, run_id, *experiments))


async def until(pilot: Any, condition: Any) -> None:
    for _ in range(3000):  # a hang guard, not a timing check
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("the screen never reached the expected state")


def plain(widget: Static) -> str:
    from rich.console import Console

    console = Console(width=400, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.render())
    return console.export_text()


# ---------------------------------------------------------------- list
def test_piped_listings_keep_every_name_whole(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "games"]) == 0  # capsys: stdout is not a terminal
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["key", "players", "actions", "title"]
    keys = [line.split("\t")[0] for line in lines[1:]]
    assert "third_party_punishment" in keys and not any("…" in k for k in keys)
    assert all(len(line.split("\t")) == 4 for line in lines)


@pytest.mark.parametrize("what", ["games", "strategies", "mechanisms", "studies"])
def test_listings_as_json(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", what, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(isinstance(r, dict) for r in rows)
    named = {r.get("key") or r.get("name") for r in rows}
    expected = {"games": "third_party_punishment", "strategies": "tit_for_tat",
                "mechanisms": "contracting", "studies": "coopeval-offline"}[what]
    assert expected in named


def test_runs_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    run(db, "one", {"game": "prisoners", "mechanism": "none", "matchup": "self", "agents": ["tft"]})
    assert main(["list", "runs", "--json", "--db", str(db)]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["id"], row["status"], row["matches"], row["decisions"]) == ("one", "done", 1, 2)


def test_a_shipped_study_runs_by_name_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no data/ here
    db = tmp_path / "s.db"
    assert main(["--batch", "strategies-prisoners", "--db", str(db), "-y"]) == 0
    assert "the shipped file" in capsys.readouterr().err
    assert Store(db).latest_run()["name"] == "strategies-prisoners"
    assert main(["--batch", "no-such-study", "--db", str(db)]) == 2  # still one clear error


# ---------------------------------------------------------------- prompts
def test_one_point_is_singular() -> None:
    game = load_game("prisoners")
    own = Labelling(("A0", "A1"), (0, 1))
    text = payoff_description(game, 0, [own, own])
    assert "you get 1 point, the other player gets 1 point." in text
    assert "1 points" not in text and "you get 3 points" in text
    render = PromptRenderer()._env.from_string("{{ x | points }}").render
    assert [render(x=x) for x in (1, "1", -1, 0, 2.5)] == [
        "1 point", "1 point", "-1 point", "0 points", "2.5 points"]


async def test_play_with_rounds_tells_the_known_horizon() -> None:
    """The screen says "Round 1/3": the prompt must not speak of a chance of more rounds."""
    sweep = build_setup_sweep(play_setup("prisoners", "tit_for_tat", 3, None))
    prompts = await preview_prompts(sweep)
    text = " ".join(m["content"] for messages in prompts.values() for m in messages)
    assert "exactly 3 rounds" in text and "round 1 of 3" in text.lower()
    assert "chance that another round follows" not in text


# ---------------------------------------------------------------- report
def test_b_star_only_where_agents_are_told_a_similarity(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    run(db, "b", {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                  "agents": ["tft"], "similarity": [0, 100]},
        {"game": "prisoners", "mechanism": "mediation", "matchup": "cross", "agents": ["tft", "allc"]},
        {"game": "prisoners", "mechanism": "contracting", "matchup": "cross", "agents": ["tft", "allc"]},
        {"game": "prisoners", "mechanism": "reputation", "matchup": "cross",
         "agents": ["tft", "allc", "alld"], "rounds": 2})
    store = Store(db)
    experiments = build_report(store, "b")["experiments"]
    store.close()
    assert experiments[0]["b_star"] == 0.5
    for e in experiments[1:]:
        assert e["b_star"] is None and all(c["b_star"] is None for c in e["conditions"]), e["mechanism"]


def test_a_multi_game_tournament_names_its_game_once(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    run(db, "g", {"game": ["prisoners", "stag_hunt"], "mechanism": "repetition", "matchup": "cross",
                  "agents": ["tft", "alld"], "rounds": 2})
    store = Store(db)
    [e] = build_report(store, "g")["experiments"]
    store.close()
    assert len(e["tournaments"]) == 2
    for key in e["tournaments"]:
        assert key.split().count(f"game={e['tournaments'][key]['game']}") == 1, key


# ---------------------------------------------------------------- screens
async def test_parquet_export_without_pyarrow_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "p.db"
    await play(db, "p", {"game": "prisoners", "mechanism": "none", "matchup": "self", "agents": ["tft"]})
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    assert main(["export", "p", "--format", "parquet", "--out", str(tmp_path / "x"), "--db", str(db)]) == 2
    assert "pip install pyarrow" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing written

    class App(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(AnalysisScreen(self.store, "p", export_dir=tmp_path / "y"))

    app = App(db)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        await pilot.press("p")
        status = screen.query_one("#an-export-status", Static)
        await until(pilot, lambda: "export failed" in plain(status))
        shown = plain(status)
        assert "pip install pyarrow" in shown and "ModuleNotFoundError" not in shown


async def test_setup_shows_benchmark_fields_only_for_a_benchmark_prompt(tmp_path: Path) -> None:
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        assert isinstance(screen, SetupScreen)
        await screen.wait_ready()

        def shown(name: str) -> bool:
            return bool(screen.query_one(f"#param-{name}").parent.display)

        assert screen.query_one("#param-prompt", Select).value == "percentage_updated"
        assert not any(shown(f) for f in ("benchmark", "battery", "benchmarks_file"))
        assert "benchmark" not in screen.read_setup().params
        screen.query_one("#param-prompt", Select).value = "benchmark"
        await until(pilot, lambda: shown("benchmark"))
        assert shown("benchmarks_file") and not shown("battery")
        screen.query_one("#param-prompt", Select).value = "benchmark_sweep"
        await until(pilot, lambda: shown("battery"))
        await screen.wait_ready()
        assert screen.read_setup().params["benchmark"] == "newcomb"


def test_teams_phases_follow_its_parameters() -> None:
    teams = mechanism_class("teams")
    assert teams.phases_for({"planning": True, "meta": "all"}) == (
        "plan", "critique", "play", "exit", "meta")
    assert teams.phases_for({"planning": False, "meta": "off"}) == ("play", "exit")
    assert mechanism_class("mediation").phases_for({}) == ("propose", "vote", "play")


async def test_the_teams_live_title_shows_what_was_set_whole(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await play(db, "t", {"game": "ipd", "mechanism": "teams", "matchup": [["tft", "alld", "allc", "grim"]],
                  "structure": "SA", "teams": 2, "team_size": 2, "rounds": 3, "budget": 5,
                  "planning": False, "meta": "off"})
    store = Store(db)
    match_id = store.matches("t")[0]["id"]
    store.close()

    class App(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(LiveScreen(ReplaySession(self.store, match_id, 0)))

    app = App(db, replay_speed=0)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        await screen.wait_finished()
        await pilot.pause()
        title = screen.query_one("#live-title", Static)
        text = title.render().plain
        assert title.size.height * 160 >= len(text)  # nothing cut
        # what this tournament set, not its twenty parameters at their defaults
        for field in ("budget=5", "meta=off", "planning=False", "rounds=3", "team_size=2"):
            assert field in text
        assert "winner_bonus" not in text and "schedule=" not in text
        timeline = screen.query_one(Timeline)
        assert timeline.phases == ("play", "exit")
        assert "plan" not in timeline.render_text().plain


def test_one_match_has_no_standard_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The two seats of one match are not two samples: "1.600", never "1.600 ± 0.000"."""
    db = tmp_path / "one.db"
    run(db, "one", {"game": "prisoners", "mechanism": "none", "matchup": [["tft", "alld"]],
                    "agents": ["tft", "alld"]})
    store = Store(db)
    [cond] = build_report(store, "one")["expected"]["conditions"]
    store.close()
    assert cond["matches"] == 1
    assert cond["per_player"]["expected_se"] is None and cond["per_player"]["realised_se"] is None
    assert main(["report", "one", "--db", str(db)]) == 0
    section = capsys.readouterr().out.split("Expected and realised payoffs")[1].split("\n\n")[0]
    assert "±" not in section.replace("± SE", "")
