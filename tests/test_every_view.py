"""Every shape of run through every view.

One database holds a run of each shape a researcher can make: every mechanism alone, and
Mediation with Contracting in one run; every game kind (matrix, numeric, move-by-move,
n-player, teams); grounded stages; replicates; CoopEval and strategic personalities imports; an LLM run
(loopback server) and a judge pass over it; a run whose matches failed and one that was
stopped. The grid below sends each run through each view: ``report`` as text, JSON, LaTeX
and CSV, CSV and Parquet export, the analysis screen (every experiment, every section
panel), and the runs screen, decision inspector and replay. No view may fail on a run
another view accepts; a view with nothing to show says so.

The database is built once per module (strategies and the loopback server: seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from rich.console import Console
from textual.widgets import DataTable

from coop_tui.analysis.sections import sections
from coop_tui.app import CoopApp
from coop_tui.cli import main
from coop_tui.events import EventBus, MatchDone
from coop_tui.importers.coopeval import import_command as import_coopeval
from coop_tui.importers.strategic_personalities import import_command as import_sp
from coop_tui.judging.rubric import load_rubric
from coop_tui.judging.run import judge_command
from coop_tui.report import build_report, render_text
from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.runs import RunsScreen
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

DATA = Path(__file__).parent / "data"
STRATEGIES = {
    "tft": {"strategy": "tit_for_tat"}, "alld": {"strategy": "always_defect"},
    "allc": {"strategy": "always_cooperate"}, "grim": {"strategy": "grim_trigger"},
    "fixed": {"strategy": "fixed_number"}, "thr": {"strategy": "threshold_responder"},
    "rnd": {"strategy": "random"},
}


def sweep(name: str, *experiments: dict[str, Any], agents: dict[str, Any] | None = None,
          **top: Any) -> dict[str, Any]:
    return {"name": name, "seed": 1, "concurrency": 1, "agents": agents or STRATEGIES,
            "experiments": list(experiments), **top}


def prisoners(mechanism: str, matchup: Any = "cross", agents: tuple[str, ...] = ("tft", "allc"),
       **params: Any) -> dict[str, Any]:
    return {"game": "prisoners", "mechanism": mechanism, "matchup": matchup,
            "agents": list(agents), **params}


SWEEPS: dict[str, dict[str, Any]] = {
    "none": sweep("none", prisoners("none", "self", ("tft", "alld"))),
    "similarity": sweep("similarity", prisoners("similarity", "self", ("tft", "alld"), similarity=[0, 100])),
    # a many-action game under similarity signals, with its Base control: the claim distribution
    "similarity-travelers": sweep(
        "similarity-travelers",
        {"game": "travelers", "mechanism": "similarity", "matchup": "self", "agents": ["tft", "alld"],
         "similarity": [0, 100]},
        {"game": "travelers", "mechanism": "similarity", "matchup": "self", "agents": ["tft", "alld"],
         "prompt": "base", "similarity": 0}),
    "repetition": sweep("repetition", prisoners("repetition", agents=("tft", "alld"), rounds=3)),
    "reputation": sweep("reputation", prisoners("reputation", agents=("tft", "alld", "allc"), rounds=2)),
    "mediation": sweep("mediation", prisoners("mediation")),
    "contracting": sweep("contracting", prisoners("contracting")),
    # the two design mechanisms in one run: their ballot rows carry different fields
    "mediation+contracting": sweep("med-con", prisoners("mediation"), prisoners("contracting")),
    "teams": sweep("teams", {"game": "ipd", "mechanism": "teams",
                             "matchup": [["tft", "alld", "allc", "grim"]], "structure": "SA",
                             "teams": 2, "team_size": 2, "rounds": 3, "budget": 5,
                             "planning": False, "meta": "off"}),
    "numeric": sweep("numeric", {"game": "beauty_contest_23", "mechanism": "none",
                                 "matchup": "cross", "agents": ["fixed", "rnd"]}),
    "sequential": sweep("sequential", {"game": "ultimatum", "mechanism": "none",
                                       "matchup": "cross", "agents": ["fixed", "thr"]}),
    "n-player": sweep("n-player", {"game": "public_good", "mechanism": "repetition",
                                   "matchup": "self", "agents": ["tft", "alld"], "rounds": 2}),
    "replicates": sweep("replicates", prisoners("repetition", agents=("tft", "alld", "grim"), rounds=2),
                        replicates=2),
    "stages": sweep(
        "stages",
        {"name": "administer", "game": "prisoners", "mechanism": "benchmark",
         "benchmark": ["die", "coin"], "agents": ["tft", "alld"], "samples": 2},
        {"name": "play", "game": "prisoners", "mechanism": "similarity", "matchup": "cross",
         "similarity_source": ["exogenous:die", "exogenous:coin"], "agents": ["tft", "alld"]},
    ),
}
"""Strategy-only runs, by the run id they are stored under."""

IMPORTS = {
    "coopeval": ("coopeval", DATA / "coopeval_sample" / "no_mechanism_prisoners_dilemma"),
    "coopeval-study": ("coopeval", DATA / "coopeval_contracting_public_goods"),
    "strategic-personalities": ("strategic-personalities",
                                DATA / "strategic_personalities.sample.csv.gz"),
}
"""Imported runs: (importer, input) by a name the fixture maps to the stored run id."""

LOOPBACK_RUNS = ("llm", "judged", "failed", "stopped")


def judge_answer() -> str:
    """A valid judgement in the shape the justifications rubric asks for."""
    rubric = load_rubric("justifications")
    if rubric.coopeval:  # one overall confidence and the types present
        return json.dumps({"reasoning": "it weighs the other's move", "confidence": 0.8,
                           "types": list(rubric.names.values())[:1]})
    return json.dumps({cid: 0.5 for cid in rubric.ids})


def loopback_answer(body: dict[str, Any]) -> str:
    """Players reason (long enough to be judged) and answer; "broken" never gives a usable
    answer; the judge classifies."""
    model = body.get("model", "")
    if model.endswith("player"):
        return ("I weigh what the other player might do: if they cooperate, cooperating keeps "
                "us both well off, so I lean that way.\n" + '{"A0": 60, "A1": 40}')
    if model.endswith("broken"):
        return "I would rather not say."
    return judge_answer()


async def build_sweeps(db: Path, url: str) -> None:
    store = Store(db)
    for run_id, data in SWEEPS.items():
        await run_sweep(build_sweep(data, check_keys=False), store, run_id=run_id)
    llm = {"player": {"model": "openai/player", "api_base": url, "api_key": "sk-test",
                      "style": "cot"},
           "broken": {"model": "openai/broken", "api_base": url, "api_key": "sk-test",
                      "style": "direct"}}
    await run_sweep(build_sweep(sweep("llm", prisoners("repetition", "self", ("player",), rounds=2),
                                      agents=llm), check_keys=False), store, run_id="llm")
    await run_sweep(build_sweep(sweep("failed", prisoners("none", "self", ("broken", "player")),
                                      agents=llm, on_invalid="abort"), check_keys=False),
                    store, run_id="failed")
    # stopped after its first match, as Ctrl-C leaves a run
    stop, bus = asyncio.Event(), EventBus()
    bus.subscribe(lambda e: stop.set() if isinstance(e, MatchDone) else None)
    await run_sweep(build_sweep(sweep("stopped", prisoners("repetition", agents=("tft", "alld", "grim"),
                                                    rounds=2)), check_keys=False),
                    store, run_id="stopped", stop=stop, bus=bus, match_workers=1)
    store.close()


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The database and {shape: run id}."""

    base = tmp_path_factory.mktemp("shapes")
    db = base / "shapes.db"
    runs = {name: name for name in SWEEPS}
    with LoopbackServer(latency=0.0, chunks=2, answer=loopback_answer) as server:
        asyncio.run(build_sweeps(db, server.url))
        runs.update({name: name for name in ("llm", "failed", "stopped")})
        agents = base / "judge.toml"
        agents.write_text(f'[agents.judge]\nmodel = "openai/judge"\napi_base = "{server.url}"\n'
                          'api_key = "sk-test"\nstyle = "direct"\n')
        with contextlib.redirect_stdout(io.StringIO()):
            assert judge_command(db, "llm", judge="judge", rubric_ref="justifications",
                                 agents_file=str(agents), phase="play", limit=None,
                                 resume=False, concurrency=2, budget_usd=None, dry_run=False,
                                 assume_yes=True) == 0
    store = Store(db)
    known = {r["id"] for r in store.runs()}
    runs["judged"] = next(r["id"] for r in store.runs() if r["kind"] == "judge")
    for name, (kind, path) in IMPORTS.items():
        with contextlib.redirect_stdout(io.StringIO()):
            code = (import_sp if kind == "strategic-personalities" else import_coopeval)(path, db)
        assert code == 0, name
        new = {r["id"] for r in store.runs()} - known
        (runs[name],) = new
        known |= new
    statuses = {r["id"]: r["status"] for r in store.runs()}
    failed = store.db.execute("select count(*) from matches where run_id = 'failed' "
                              "and status = 'failed'").fetchone()[0]
    store.close()
    # the shapes are what their names say
    assert statuses["stopped"] == "stopped" and failed > 0
    assert all(statuses[runs[s]] == "done" for s in SWEEPS)
    return db, runs


SHAPES = [*SWEEPS, *LOOPBACK_RUNS, *IMPORTS]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ====================================================================== report and export
@pytest.mark.parametrize("shape", SHAPES)
def test_text_report(shape: str, shapes: tuple[Path, dict[str, str]],
                     capsys: pytest.CaptureFixture[str]) -> None:
    db, runs = shapes
    code, out, err = cli(capsys, "report", runs[shape], "--db", str(db))
    assert code == 0, err
    assert out.startswith(f"run {runs[shape]}")
    # every section the JSON report has is printed under its title

    _, data, _ = cli(capsys, "report", runs[shape], "--json", "--db", str(db))
    report = json.loads(data)
    for section in sections():
        if report.get(section.key):
            assert section.title in out, section.key
    if report["mechanisms"].get("votes"):
        assert "proposals and votes" in out


def test_the_ballot_table_has_the_columns_of_both_design_mechanisms(
        shapes: tuple[Path, dict[str, str]]) -> None:
    """Mediation rows have a delegation rate, Contracting rows a signing rate: the table
    has both columns, "-" where a row's mechanism has no such field."""

    db, runs = shapes
    store = Store(db)
    report = build_report(store, runs["mediation+contracting"])
    store.close()
    console = Console(width=400, record=True, color_system=None)
    console.print(render_text(report))
    table = console.export_text().split("proposals and votes")[1].split("└")[0]
    lines = table.splitlines()
    header = next(line for line in lines if "agent" in line)
    columns = [c.strip() for c in header.strip(" ┃").split("┃")]
    assert {"sign_rate", "active_rate", "delegate_rate"} <= set(columns)
    rows = [[c.strip() for c in line.strip(" │").split("│")] for line in lines
            if line.strip().startswith("│")]
    by_mechanism = {row[columns.index("mechanism")]: row for row in rows}
    assert by_mechanism["mediation"][columns.index("sign_rate")] == "-"
    assert by_mechanism["contracting"][columns.index("delegate_rate")] == "-"
    assert by_mechanism["mediation"][columns.index("delegate_rate")].endswith("%")


@pytest.mark.parametrize("shape", SHAPES)
def test_json_report(shape: str, shapes: tuple[Path, dict[str, str]],
                     capsys: pytest.CaptureFixture[str]) -> None:
    db, runs = shapes
    code, out, err = cli(capsys, "report", runs[shape], "--json", "--db", str(db))
    assert code == 0, err
    report = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert report["run"]["id"] == runs[shape]


@pytest.mark.parametrize("fmt", ["latex", "csv"])
@pytest.mark.parametrize("shape", SHAPES)
def test_paper_tables(shape: str, fmt: str, shapes: tuple[Path, dict[str, str]],
                      capsys: pytest.CaptureFixture[str]) -> None:
    """A run without population tables says so (and exits 0: nothing is wrong with it)."""
    db, runs = shapes
    code, out, err = cli(capsys, "report", runs[shape], "--format", fmt, "--db", str(db))
    assert code == 0, err
    _, data, _ = cli(capsys, "report", runs[shape], "--json", "--db", str(db))
    tables = json.loads(data).get("tables")
    if tables:
        assert ("\\begin{tabular}" in out) if fmt == "latex" else out.startswith("table,")
        if all(c["n"] == 1 for c in tables):  # one replicate: no standard error exists
            assert all(c["se"] is None for c in tables)
            assert "\\pm" not in out if fmt == "latex" else all(
                row.split(",")[6] == "" for row in out.splitlines()[1:])
    else:
        assert "no population tables" in err
        assert out.startswith("% ") if fmt == "latex" else out.startswith("table,")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("shape", SHAPES)
def test_export(shape: str, fmt: str, shapes: tuple[Path, dict[str, str]], tmp_path: Path,
                capsys: pytest.CaptureFixture[str]) -> None:
    db, runs = shapes
    code, out, err = cli(capsys, "export", runs[shape], "--format", fmt, "--out", str(tmp_path),
                         "--db", str(db))
    assert code == 0, err
    written = [Path(line) for line in out.split()]
    assert {p.stem for p in written} >= {"matches", "seats", "decisions", "rounds", "phases"}
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    store = Store(db)
    n = store.db.execute("select count(*) from matches where run_id = ?", [runs[shape]]).fetchone()[0]
    store.close()
    assert len(read(tmp_path / f"matches.{fmt}")) == n


# ====================================================================== the TUI
async def until(pilot: Any, condition: Callable[[], bool], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the screen never reached the expected state")
        await pilot.pause(0.02)


def screen_app(db: Path, make: Callable[[Store], Any]) -> Any:
    class ScreenApp(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()  # no setup screen underneath
            self.push_screen(make(self.store))

    return ScreenApp(db, replay_speed=0)


@pytest.mark.parametrize("shape", SHAPES)
async def test_analysis_screen(shape: str, shapes: tuple[Path, dict[str, str]],
                               tmp_path: Path) -> None:
    db, runs = shapes
    store = Store(db)
    report = build_report(store, runs[shape])
    store.close()
    app = screen_app(db, lambda s: AnalysisScreen(s, runs[shape], export_dir=tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        assert screen.error is None

        for section in sections():  # one panel per section the report has
            assert bool(screen.query(f"#an-section-{section.key}")) == bool(report.get(section.key))
        for _ in report["experiments"][1:]:  # every experiment shows
            await pilot.press("right_square_bracket")
            await pilot.pause()
        assert screen.index == max(len(report["experiments"]) - 1, 0)
        title = str(screen.query_one("#an-title").render())
        if report["experiments"]:
            e = report["experiments"][screen.index]
            assert f"experiment {e['experiment']}" in title
        else:
            assert "no finished matches" in title


@pytest.mark.parametrize("shape", SHAPES)
async def test_runs_inspector_and_replay(shape: str, shapes: tuple[Path, dict[str, str]]) -> None:
    db, runs = shapes
    run_id = runs[shape]
    store = Store(db)
    matches = store.matches(run_id)
    decision = next((d for m in matches for d in store.decision_list(m["id"])), None)
    store.close()
    app = screen_app(db, RunsScreen)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        table = screen.query_one("#runs-table", DataTable)
        ids = [str(table.get_row_at(r)[0]) for r in range(table.row_count)]
        table.move_cursor(row=ids.index(run_id))
        await until(pilot, lambda: screen.shown_run == run_id and screen.matches_loaded >= 1)
        assert screen.query_one("#matches-table", DataTable).row_count == min(len(matches), 1000) \
            or screen.query_one("#matches-table", DataTable).row_count > 0 or not matches
        if decision is not None:
            app.push_screen(InspectorScreen(app.store, decision["id"]))
            await until(pilot, lambda: isinstance(app.screen, InspectorScreen)
                        and (app.screen.target is not None or app.screen.error is not None))
            assert app.screen.error is None
            app.pop_screen()
        played = [m for m in matches if m["status"] in ("done", "failed")]
        if played:
            app.open_replay(played[0]["id"])
            await until(pilot, lambda: isinstance(app.screen, LiveScreen))
            await app.screen.wait_finished()
            await pilot.pause()
            assert app.screen.session.kind == "replay"
