"""``coop-tui compare``: two runs side by side per shared condition, tested with the match
as the unit and Holm's correction over every test of the pair.

The runs are real strategy sweeps in real SQLite files, compared through the CLI and
through the analysis screen's compare screen (``v``), driven with Textual's pilot."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input

from coop_tui.analysis.compare import fisher_counts, holm, welch
from coop_tui.api import run_sweep
from coop_tui.app import CoopApp
from coop_tui.cli import main
from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.compare import CompareScreen

ROSTER = ("x", "tft", "coin", "alld")


def _sweep(name: str, x_strategy: str, *, game: str = "prisoners") -> dict[str, Any]:
    """Four agents playing themselves, once repeated and once one-shot; only ``x``'s
    strategy changes between the runs compared, and the seed is the same."""
    return {
        "name": name,
        "seed": 11,
        "samples": 8,
        "agents": {
            "x": {"strategy": x_strategy},
            "tft": {"strategy": "tit_for_tat"},
            "coin": {"strategy": "random", "params": {"p": 0.5}},
            "alld": {"strategy": "always_defect"},
        },
        "experiments": [
            {"game": game, "mechanism": "repetition", "rounds": 6, "matchup": "self",
             "agents": list(ROSTER)},
            {"game": game, "mechanism": "none", "matchup": "self", "agents": list(ROSTER)},
        ],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run A (x cooperates), run B (x defects) in one database; run C (x cooperates, a
    different game) in a second database."""
    folder = tmp_path_factory.mktemp("compare")
    db, db2 = folder / "a.db", folder / "b.db"
    a = run_sweep(_sweep("x-cooperates", "always_cooperate"), db)
    b = run_sweep(_sweep("x-defects", "always_defect"), db)
    c = run_sweep(_sweep("x-cooperates-again", "always_cooperate"), db2)
    stag = run_sweep(_sweep("stag", "always_cooperate", game="stag_hunt"), db2)
    return {"db": db, "db2": db2, "a": a, "b": b, "c": c, "stag": stag}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "compare", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_only_the_changed_agent_is_different(runs: dict[str, Any],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    result = _json(capsys, runs["a"], runs["b"], "--db", str(runs["db"]))
    rows = result["shared"]
    # four agents in two conditions (repeated, one-shot), each with cooperation and payoff
    assert len(rows) == 8 and result["tests"] == 16
    assert not result["only_a"] and not result["only_b"]
    flagged = {(r["mechanism"], r["agent"]) for r in rows if r["different"]}
    assert flagged == {("repetition", "x"), ("none", "x")}
    for r in rows:
        if r["agent"] != "x":
            assert r["cooperation"]["difference"] == 0 and r["cooperation"]["p_holm"] == 1
            assert not r["cooperation"]["different"] and not r["payoff"]["different"]
    by = {r["mechanism"]: r for r in rows if r["agent"] == "x"}
    repeated, one_shot = by["repetition"]["cooperation"], by["none"]["cooperation"]
    # repeated play: one value per match (8 matches), Welch; one-shot: counts, Fisher
    assert (repeated["test"], repeated["unit"], repeated["a"]["n"]) == ("welch", "match", 8)
    assert (one_shot["test"], one_shot["unit"], one_shot["a"]["n"]) == ("fisher", "decision", 16)
    assert repeated["difference"] == pytest.approx(-1.0)
    assert one_shot["a"]["rate"] == 1.0 and one_shot["b"]["rate"] == 0.0
    lo, hi = one_shot["ci"]
    assert lo < -0.5 and hi < 0  # Newcombe's interval excludes no difference
    assert by["repetition"]["payoff"]["different"] and by["none"]["payoff"]["different"]


def test_text_marks_the_different_rows(runs: dict[str, Any],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", runs["a"], runs["b"], "--db", str(runs["db"]))
    assert code == 0, err
    assert "cooperation rate: B − A per shared condition" in out
    marked = [line for line in out.splitlines() if "│ * │" in line]
    # x's two conditions, in the cooperation table and in the payoff table
    assert len(marked) == 4 and all("│ x " in line for line in marked)
    assert "Holm's correction over 16 tests" in out


def test_latex(runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", runs["a"], runs["b"], "--db", str(runs["db"]),
                         "--format", "latex")
    assert code == 0, err
    assert out.count(r"\begin{tabular}") == 2 and r"\toprule" in out
    x_rows = [line for line in out.splitlines() if "& x &" in line]
    assert len(x_rows) == 4 and all("$^{*}$" in line for line in x_rows)
    assert not [line for line in out.splitlines() if "$^{*}$" in line and "& x &" not in line]
    assert r"history\_payoffs" in out and r"\%" in out  # LaTeX's special characters escaped


def test_json_is_deterministic(runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    args = ("compare", runs["a"], runs["b"], "--db", str(runs["db"]), "--format", "json")
    first, second = cli(capsys, *args), cli(capsys, *args)
    assert first == second and first[0] == 0


def test_runs_from_two_databases(runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Replicates of the same sweep in two files: everything shared, nothing different;
    the other run of the second file shares nothing with A (another game)."""
    result = _json(capsys, runs["a"], runs["c"], "--db", str(runs["db"]), "--db-b", str(runs["db2"]))
    assert len(result["shared"]) == 8 and not any(r["different"] for r in result["shared"])
    assert result["runs"]["b"]["name"] == "x-cooperates-again"
    # run ids resolve like report's: a prefix is enough
    prefix = _json(capsys, runs["a"][:-2], runs["c"], "--db", str(runs["db"]), "--db-b", str(runs["db2"]))
    assert prefix == result


def test_no_shared_condition(runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", runs["a"], runs["stag"], "--db", str(runs["db"]),
                         "--db-b", str(runs["db2"]), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["shared"] == [] and result["tests"] == 0
    assert len(result["only_a"]) == 8 and len(result["only_b"]) == 8
    assert "share no condition" in result["note"] and "share no condition" in err
    code, out, _ = cli(capsys, "compare", runs["a"], runs["stag"], "--db", str(runs["db"]),
                       "--db-b", str(runs["db2"]))
    assert code == 0 and "share no condition" in out and "only in run B (8)" in out
    code, out, _ = cli(capsys, "compare", runs["a"], runs["stag"], "--db", str(runs["db"]),
                       "--db-b", str(runs["db2"]), "--format", "latex")
    assert code == 0 and "% the runs share no condition" in out and r"\begin{tabular}" not in out


def test_bad_input(runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", runs["a"], "nope", "--db", str(runs["db"]))
    assert code == 2 and out == "" and "no run 'nope'" in err
    missing = tmp_path / "missing.db"
    code, out, err = cli(capsys, "compare", runs["a"], runs["b"], "--db", str(runs["db"]),
                         "--db-b", str(missing))
    assert code == 2 and "--db-b: no database" in err and not missing.exists()
    code, _, err = cli(capsys, "compare", runs["a"], runs["b"], "--json", "--format", "latex",
                       "--db", str(runs["db"]))
    assert code == 2 and "--json" in err


def test_a_bad_second_database_is_named_not_the_first(runs: dict[str, Any], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Each error names the file it is about: a damaged --db-b is not the user's --db."""
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database, it only has the name of one\n" * 200)
    before = bad.read_bytes()
    code, out, err = cli(capsys, "compare", runs["a"], runs["b"], "--db", str(runs["db"]),
                         "--db-b", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--db-b:" in err and str(bad) in err, err
    assert str(runs["db"]) not in err and "another --db-b path" in err, err
    assert bad.read_bytes() == before  # nothing written
    code, _, err = cli(capsys, "compare", runs["a"], "nope", "--db", str(runs["db"]),
                       "--db-b", str(runs["db2"]))
    assert code == 2 and "--db-b: no run 'nope'" in err and str(runs["db2"]) in err, err


@pytest.mark.parametrize("source, data", [
    ("strategic-personalities", "strategic_personalities.sample.csv.gz"),
    ("coopeval", "coopeval_sample/no_mechanism_prisoners_dilemma"),
])
def test_imports_in_two_databases(source: str, data: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The same published data imported into two databases: every condition shared (the
    strategic personalities paper's trials as matches, CoopEval's games named though its
    condition keys do not name them), nothing different."""
    path = Path(__file__).parent / "data" / data
    dbs = [tmp_path / "one.db", tmp_path / "two.db"]
    for db in dbs:
        assert main(["import", source, str(path), "--db", str(db)]) == 0
    capsys.readouterr()
    ref = "sp-" if source == "strategic-personalities" else "coopeval-"
    result = _json(capsys, ref, ref, "--db", str(dbs[0]), "--db-b", str(dbs[1]))
    assert result["shared"] and result["tests"] > 0
    assert not result["only_a"] and not result["only_b"]
    assert not any(r["different"] for r in result["shared"])
    assert all(r["game"] for r in result["shared"])
    code, out, _ = cli(capsys, "compare", ref, ref, "--db", str(dbs[0]), "--db-b", str(dbs[1]))
    assert code == 0 and "game=" in out


def test_names_cannot_drive_the_terminal(runs: dict[str, Any], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An agent name with an escape sequence and Rich markup (a database from someone
    else) is printed as visible text in the text and LaTeX outputs."""
    db = tmp_path / "hostile.db"
    db.write_bytes(runs["db"].read_bytes())
    conn = sqlite3.connect(db)
    with conn:
        for table in ("decisions", "seats"):
            conn.execute(f"update {table} set agent = ? where agent = 'x'", ["x\x1b[2J[red]"])
    conn.close()
    for fmt in ("text", "latex"):
        code, out, err = cli(capsys, "compare", runs["a"], runs["b"], "--db", str(db), "--format", fmt)
        assert code == 0, err
        assert "\x1b" not in out
        shown = r"x\textbackslash{}x1b" if fmt == "latex" else r"x\x1b[2J[red]"
        assert shown in out


def test_figures_compare(runs: dict[str, Any], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """``figures --compare``: a forest plot per measure whose filled points are exactly
    the rows different after Holm (x's), at the differences the JSON gives."""
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_rgba

    from coop_tui.analysis.compare import compare_runs
    from coop_tui.figures.comparison import comparison_figures
    from coop_tui.store import Store

    out = tmp_path / "figs"
    code, printed, err = cli(capsys, "figures", runs["a"], "--compare", runs["b"],
                             "--db", str(runs["db"]), "--out", str(out), "--format", "svg")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["compare_cooperation.svg", "compare_payoff.svg"]
    store = Store(runs["db"])
    result = compare_runs(store, runs["a"], store, runs["b"])
    drawn = {d.name: d.figure for d in comparison_figures(result)}
    ax = drawn["compare_cooperation"].axes[0]
    points = [line for line in ax.get_lines() if line.get_marker() == "o"]
    rows = list(reversed(result["shared"]))  # drawn bottom-up
    assert len(points) == len(rows)
    for line, row in zip(points, rows, strict=True):
        assert line.get_xdata()[0] == pytest.approx(row["cooperation"]["difference"])
        filled = to_rgba(line.get_markerfacecolor()) != (1.0, 1.0, 1.0, 1.0)
        assert filled == (row["agent"] == "x")
    code, printed, _ = cli(capsys, "figures", runs["a"], "--compare", runs["stag"], "--db",
                           str(runs["db"]), "--db-b", str(runs["db2"]), "--out", str(tmp_path / "none"))
    assert code == 0 and "share no condition" in printed and not (tmp_path / "none").exists()
    code, _, err = cli(capsys, "figures", runs["a"], "--db-b", str(runs["db2"]), "--db", str(runs["db"]))
    assert code == 2 and "--db-b" in err


# ---------------------------------------------------------------- the statistics alone
def test_holm_steps_down() -> None:
    # m = 3 (None not counted): 0.01·3, max(0.03, 0.02·2), max(0.04, 0.04·1)
    assert holm([0.04, None, 0.01, 0.02]) == [pytest.approx(0.04), None, pytest.approx(0.03),
                                              pytest.approx(0.04)]
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_welch_matches_scipy() -> None:
    from scipy import stats

    a, b = [0.1, 0.4, 0.35, 0.8, 0.5], [0.6, 0.9, 0.7, 0.95]
    got = welch(a, b)
    want = stats.ttest_ind(b, a, equal_var=False)
    assert got["p"] == pytest.approx(want.pvalue)
    ci = want.confidence_interval(0.95)
    assert got["ci"] == [pytest.approx(ci.low), pytest.approx(ci.high)]
    assert welch([1.0], [0.0, 1.0])["p"] is None  # one match: no variance
    assert welch([1.0, 1.0], [1.0, 1.0])["p"] == 1.0


def test_fisher_counts() -> None:
    got = fisher_counts(3, 10, 9, 10)
    assert got["difference"] == pytest.approx(0.6)
    assert got["p"] == pytest.approx(0.0198, abs=1e-4)
    lo, hi = got["ci"]
    assert 0 < lo < 0.6 < hi <= 1


# ---------------------------------------------------------------- the analysis screen's compare
class _App(CoopApp):
    """The real app on run A's database, opening on run A's analysis screen."""

    def __init__(self, db: Path, run_a: str) -> None:
        super().__init__(db, replay_speed=0)
        self.run_a = run_a

    def on_mount(self, event: Any) -> None:
        event.prevent_default()  # no setup screen underneath
        self.push_screen(AnalysisScreen(self.store, self.run_a, export_dir=self.db.parent / "out"))


async def _until(pilot: Any, condition: Callable[[], bool], limit: float = 30.0) -> None:
    """Let the app run until ``condition`` holds (fails only if it never does)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the screen never reached the expected state")
        await pilot.pause(0.02)


def _shown(widget: Any) -> str:
    from rich.console import Console

    console = Console(width=220, record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


async def _open_compare(pilot: Any, app: _App) -> CompareScreen:
    """``v`` on the analysis screen opens the compare screen, its runs listed."""
    await _until(pilot, lambda: isinstance(app.screen, AnalysisScreen) and app.screen.loaded >= 1)
    await pilot.press("v")
    await _until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.listed >= 1)
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    return screen


async def _compare_typed(pilot: Any, screen: CompareScreen, ref: str, db: Path | None = None) -> None:
    """Run B typed (and its database), Enter in the run field."""
    done = screen.compared
    screen.query_one("#cmp-db", Input).value = str(db or "")
    screen.query_one("#cmp-run", Input).value = ref
    screen.query_one("#cmp-run", Input).focus()
    await pilot.press("enter")
    await _until(pilot, lambda: screen.compared > done)


async def test_screen_flags_exactly_the_changed_agent(runs: dict[str, Any], tmp_path: Path) -> None:
    """From run A's analysis screen, ``v`` then Enter on run B in the list: the screen shows
    what ``compare_runs`` (the CLI's function) gives, and marks only x's rows."""
    from coop_tui.analysis.compare import compare_runs
    from coop_tui.store import Store

    db = tmp_path / "a.db"
    db.write_bytes(runs["db"].read_bytes())
    app = _App(db, runs["a"])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_compare(pilot, app)
        table = screen.query_one("#cmp-runs", DataTable)
        keys = [str(table.coordinate_to_cell_key(Coordinate(r, 0)).row_key.value)
                for r in range(table.row_count)]
        assert keys == [runs["b"]]  # the other run of the file; A itself is not offered
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await _until(pilot, lambda: screen.compared >= 1)
        assert screen.error is None and screen.result is not None
        store = Store(db)
        assert screen.result == compare_runs(store, runs["a"], store, runs["b"])
        store.close()
        flagged = {(r["mechanism"], r["agent"]) for r in screen.result["shared"] if r["different"]}
        assert flagged == {("repetition", "x"), ("none", "x")}
        text = _shown(screen.query_one("#cmp-result"))
        assert "cooperation rate: B − A per shared condition" in text and "Holm p" in text
        marked = [line for line in text.splitlines() if "│ * │" in line]
        assert len(marked) == 4 and all("│ x " in line for line in marked)
        assert "only in run" not in text
        status = _shown(screen.query_one("#cmp-status"))
        assert "8 shared rows, 16 tests: 2 rows different after Holm's correction" in status
        await pilot.press("escape")
        assert isinstance(app.screen, AnalysisScreen)


async def test_screen_compares_with_another_database(runs: dict[str, Any], tmp_path: Path) -> None:
    """Run B typed with the path of another file: a replicate there shares everything and
    differs nowhere; a run of another game shares nothing, and both "only in" lists show."""
    app = _App(runs["db"], runs["a"])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_compare(pilot, app)
        await _compare_typed(pilot, screen, runs["c"][:-2], runs["db2"])  # a prefix resolves
        assert screen.result is not None and screen.result["runs"]["b"]["name"] == "x-cooperates-again"
        assert len(screen.result["shared"]) == 8 and not any(r["different"] for r in screen.result["shared"])
        await _until(pilot, lambda: screen.listed >= 2)  # the typed file's runs are listed
        assert screen.query_one("#cmp-runs", DataTable).row_count == 2

        await _compare_typed(pilot, screen, "stag", runs["db2"])
        assert screen.result is not None and screen.result["shared"] == []
        text = _shown(screen.query_one("#cmp-result"))
        assert "share no condition" in text
        assert "only in run A (8)" in text and "only in run B (8)" in text
        assert "0 shared rows" in _shown(screen.query_one("#cmp-status"))


async def test_screen_says_what_is_wrong_with_run_b(runs: dict[str, Any], tmp_path: Path) -> None:
    app = _App(runs["db"], runs["a"])
    missing = tmp_path / "missing.db"
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_compare(pilot, app)
        await _compare_typed(pilot, screen, "nope")
        assert screen.error is not None and "no run 'nope'" in screen.error
        await _compare_typed(pilot, screen, "x-defects", missing)
        assert screen.error is not None and f"no database at {missing}" in screen.error
        assert not missing.exists()  # nothing created
        await _compare_typed(pilot, screen, "x-defects")  # the field emptied: this database
        assert screen.error is None and screen.result is not None
        assert screen.result["runs"]["b"]["id"] == runs["b"]


async def test_leaving_the_screen_closes_its_connections(runs: dict[str, Any]) -> None:
    """Esc right after asking for a comparison: the worker is cancelled if it was still
    reading (a small database may be done already), every connection it opened is closed,
    and nothing is drawn on the screen that has gone."""
    app = _App(runs["db"], runs["a"])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_compare(pilot, app)
        screen.query_one("#cmp-run", Input).value = runs["b"]
        screen.action_compare()
        worker = screen.comparing
        await pilot.press("escape")
        assert isinstance(app.screen, AnalysisScreen)
        drawn = screen.compared
        await _until(pilot, lambda: worker.is_finished and screen.reads_ended == screen.reads_started)
        await pilot.pause()
        assert worker.is_cancelled or worker.state.name == "SUCCESS"
        assert screen.compared == drawn  # nothing drawn after leaving


def test_a_cancelled_comparison_stops_at_its_next_step_of_sql(runs: dict[str, Any]) -> None:
    """The comparison's connection asks SQLite to stop once its worker is cancelled: the
    running query aborts with one sentence instead of reading to the end."""
    from coop_tui.analysis.compare import compare_runs
    from coop_tui.screens.compare import _Reader, _Unavailable

    class Eager(_Reader):
        CHECK_EVERY = 100  # a small database's queries are short

    cancelled, ended = [False], []
    with (pytest.raises(_Unavailable, match="the comparison was stopped"),
          Eager(runs["db"], lambda: cancelled[0], lambda: ended.append(1)) as store):
        assert compare_runs(store, runs["a"], store, runs["b"])["shared"]  # reads while wanted
        cancelled[0] = True
        compare_runs(store, runs["a"], store, runs["b"])
    assert ended == [1]  # closed on the way out


def test_welch_of_the_same_values_in_another_order_is_exactly_zero() -> None:
    """Two runs alike, their matches stored in another order: the difference is 0, not a
    rounding error shown as "-2.22e-16" in the payoff table."""
    a = [1 / 3, 2 / 3, 0.2, 1 / 3, 2 / 3, 0.1, 0.7, 0.2]
    b = [0.1, 0.7, 1 / 3, 0.2, 2 / 3, 2 / 3, 1 / 3, 0.2]  # a, shuffled
    assert sorted(a) == sorted(b)
    got = welch(a, b)
    assert got["difference"] == 0.0 and got["p"] == pytest.approx(1.0)


def test_a_narrow_table_wraps_the_condition_not_the_numbers(runs: dict[str, Any]) -> None:
    """At 110 columns (a terminal, the compare screen) the repeated game's long condition
    wraps; every number, interval and p-value stays whole (they were cut to "…")."""
    from rich.console import Console

    from coop_tui.analysis.compare import compare_runs, render_text
    from coop_tui.store import Store

    store = Store(runs["db"])
    result = compare_runs(store, runs["a"], store, runs["b"])
    store.close()
    console = Console(width=110, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_text(result))
    text = console.export_text()
    assert "…" not in text and "Holm p" in text and "[-100.0%, -72.6%]" in text
    assert max(len(line) for line in text.splitlines()) <= 110


def test_the_readmes_compare_example_compares(tmp_path: Path) -> None:
    """The README's example: one sweep, then the same sweep with one field changed, then
    ``compare`` of the two by name. It must find shared conditions (an example of two
    unrelated runs printed "the runs share no condition")."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).parent.parent
    block = (repo / "README.md").read_text().split("**Headless sweeps**", 1)[1].split("```", 2)[1]
    wanted = [line.split("  #", 1)[0].strip() for line in block.splitlines()
              if "strategies-prisoners" in line or "coin" in line]
    assert len(wanted) == 3 and wanted[-1].startswith("coop-tui compare"), wanted
    (tmp_path / "data").symlink_to(repo / "data")
    env = {**os.environ, "COOP_TUI_DB": str(tmp_path / "readme.db"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in wanted:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr)
    assert "share no condition" not in done.stdout + done.stderr
    assert "strategies-coin-0.8" in done.stdout and "similarity=100" in done.stdout
