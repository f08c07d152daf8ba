"""Hostile text through every screen and every command: shown, never obeyed.

One database holds what a hostile model and a hostile colleague can put there: model
answers and reasoning carrying an OSC title change (ESC ] 0 ; ... BEL), a clear-screen CSI,
a one-byte C1 CSI, a right-to-left override (U+202E) and Rich / Textual markup; agent and
run names carrying the same, one of them 10,000 characters long. The answers come from a
real sweep against the loopback server; the names are written into the database the way
an import or an older version could have stored them (a sweep file refuses them).

Every command's stdout and stderr bytes, and every screen's rendered text, must hold no
raw ESC, BEL, C1 or bidi control, and must show the markup literally; a long name is cut
with "…" in tables.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, TextArea

from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.runs import DecisionsScreen, RunsScreen
from coop_tui.testing.server import LoopbackServer
from tests.test_tui_screens import ScreenApp, until

HOSTILE = "\x1b]0;pwned\x07 \x1b[2J \u202eevil [red]x[/] \x9b31m [$accent]v [@click=app.quit]q[/]"
"""What a model's answer or a name may hold: OSC, CSI, C1 CSI, RLO, Rich and Textual markup."""
AGENT = "[bold]agent" + HOSTILE
LONG = "[red]long" + HOSTILE + "N" * 10_000
RUN = "[red]run" + HOSTILE
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
"""What must never reach a terminal raw (tab and newline are fine)."""


def _answer(body: dict[str, Any]) -> str:
    """A first attempt gets the hostile text alone (unusable: re-asked with the reason),
    the re-ask the same text followed by a usable choice: every decision has a rejected
    attempt and an accepted answer carrying the escapes, whatever order requests come in."""
    first = len(body.get("messages") or []) <= 1
    return HOSTILE if first else HOSTILE + '\n{"choice": "A0"}'


def _rename(db: Path) -> None:
    """The agents and the run renamed to hostile names everywhere the database holds them
    (plain columns and JSON), as an import could have stored them."""
    conn = sqlite3.connect(db)
    with conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
        for table in tables:
            for col in [r[1] for r in conn.execute(f"pragma table_info({table})")]:
                for old, new in (("m", AGENT), ("tft", LONG)):
                    conn.execute(f"update {table} set {col} = ? where {col} = ?", [new, old])
                    conn.execute(
                        f"update {table} set {col} = replace({col}, ?, ?) "
                        f"where typeof({col}) = 'text' and instr({col}, ?)",
                        [json.dumps(old), json.dumps(new), json.dumps(old)])
        conn.execute("update runs set name = ?", [RUN])
        # a prompt holding escapes too (a colleague's template could write them)
        for table, col in (("texts", "text"), ("decisions", "prompt"), ("decisions", "retries")):
            conn.execute(f"update {table} set {col} = replace({col}, 'Setup:', ?)",
                         ["Setup: " + json.dumps(HOSTILE)[1:-1]])
        conn.execute("update runs set error = ?", ["RuntimeError: " + HOSTILE])
    conn.close()


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    db = folder / "x.db"
    with LoopbackServer(latency=0.0, chunks=2, answer=_answer, reasoning=HOSTILE) as server:
        sweep = folder / "s.toml"
        sweep.write_text(f"""
name = "plain"
[agents.m]
model = "openai/loopback"
api_base = "{server.url}"
api_key_env = "HOSTILE_KEY"
[agents.tft]
strategy = "tit_for_tat"
[[experiments]]
game = "prisoners"
mechanism = "repetition"
rounds = 2
matchup = "cross"
agents = ["m", "tft"]
answer = "choice"
max_attempts = 2
""")
        run = _cli("--batch", str(sweep), "--db", str(db))
    assert run.returncode == 0, run.stdout + run.stderr
    _assert_shown_not_obeyed(run.stdout + run.stderr)
    _rename(db)
    return db


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", *args], capture_output=True, timeout=300,
        env={**os.environ, "HOSTILE_KEY": "sk-loopback", "OPENAI_API_KEY": "sk-never-used",
             "COLUMNS": "160"},
    )
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode("utf-8"), result.stderr.decode("utf-8"))


def _assert_shown_not_obeyed(text: str) -> None:
    raw = sorted({repr(m.group(0)) for m in RAW.finditer(text)})
    assert not raw, f"raw control characters reached the output: {raw}"


def _assert_markup_literal(text: str, *shown: str) -> None:
    """The markup a name (or an answer: ``shown``) starts with is there as written."""
    for needle in shown or ("[bold]agent", "[red]long"):
        assert needle in text, f"{needle!r} not shown as written: {text[:3000]}"


ANSWER = ("[red]x[/]", "[$accent]v", "[@click=app.quit]q[/]")
"""The markup of a hostile answer (shown whole, never cut)."""


def _assert_long_names_cut(text: str) -> None:
    """The 10,000-character name is cut: no long run of its letters on a line, nor many
    lines of them (a table cell wraps a name it does not cut)."""
    assert "N" * 100 not in text, "a 10,000-character name filled a line"
    assert text.count("N") < 2_000, "a 10,000-character name filled the output"


# ------------------------------------------------------------------ commands
@pytest.mark.parametrize(("args", "shown"), [
    (("list", "runs"), ("[red]run",)),
    (("list", "runs", "--json"), ("[red]run",)),
    (("report",), ("[red]run", "[bold]agent", "[red]long")),
    (("report", "--json"), ("[red]run", "[bold]agent", "[red]long")),
    (("report", "--format", "csv"), ("[bold]agent", "[red]long")),
    (("report", "--format", "latex"), ()),
    (("judge", "--dry-run", "--judge", "openai/gpt-4o-mini", "--rubric", "justifications"),
     ("[red]run",)),
])
def test_commands_show_hostile_text_without_obeying_it(
    hostile_db: Path, args: tuple[str, ...], shown: tuple[str, ...]
) -> None:
    result = _cli(*args, "--db", str(hostile_db))
    assert result.returncode == 0, result.stderr
    _assert_shown_not_obeyed(result.stdout + result.stderr)
    if shown:
        _assert_markup_literal(result.stdout, *shown)
    if args == ("report",):  # tables cut long names; JSON, CSV and piped lists keep them
        _assert_long_names_cut(result.stdout)


def test_merge_shows_a_hostile_run_name_and_error_without_obeying_them(
        hostile_db: Path, tmp_path: Path) -> None:
    merged = tmp_path / "merged.db"
    result = _cli("merge", str(hostile_db), "--db", str(merged))
    assert result.returncode == 0, result.stderr
    _assert_shown_not_obeyed(result.stdout + result.stderr)
    _assert_markup_literal(result.stdout, "[red]run")
    report = _cli("report", "--db", str(merged))
    assert report.returncode == 0, report.stderr
    _assert_shown_not_obeyed(report.stdout + report.stderr)
    _assert_markup_literal(report.stdout, "[bold]agent")


def test_list_runs_on_a_terminal_cuts_long_names(hostile_db: Path) -> None:
    """On a terminal (a real pseudo-terminal here) `list runs` draws a table."""
    conn = sqlite3.connect(hostile_db)
    with conn:
        conn.execute("update runs set name = ?", [LONG])
    conn.close()
    try:
        out = _on_a_terminal("list", "runs", "--db", str(hostile_db))
    finally:
        conn = sqlite3.connect(hostile_db)
        with conn:
            conn.execute("update runs set name = ?", [RUN])
        # a prompt holding escapes too (a colleague's template could write them)
        for table, col in (("texts", "text"), ("decisions", "prompt"), ("decisions", "retries")):
            conn.execute(f"update {table} set {col} = replace({col}, 'Setup:', ?)",
                         ["Setup: " + json.dumps(HOSTILE)[1:-1]])
        conn.close()
    visible = re.sub(r"\x1b\[[0-9;]*m", "", out).replace("\r\n", "\n")  # colours; the tty's CR
    _assert_shown_not_obeyed(visible)
    _assert_markup_literal(visible, "[red]long")
    _assert_long_names_cut(visible)
    assert "[$accent]v" not in visible  # past the name's first 40 characters: cut with "…"
    assert "…" in visible


def _on_a_terminal(*args: str) -> str:
    """What the CLI writes to a terminal: its stdout is a pseudo-terminal, read to the end."""
    import pty

    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "coop_tui.cli", *args], stdout=child,
                            stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "160"})
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8")


# ------------------------------------------------------------------ screens
def screen_text(app: Any) -> str:
    """Every character the screen would write to the terminal now (the compositor's
    segments, without Textual's own control sequences)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return "\n".join("".join(seg.text for strip in line for seg in strip if not seg.control)
                     for line in update.strips)


def _first(db: Path, sql: str) -> Any:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


async def test_runs_screen(hostile_db: Path) -> None:
    app = ScreenApp(hostile_db, RunsScreen)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1 and screen.matches_loaded >= 1)
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text, "[red]run", "[bold]agent")
        _assert_long_names_cut(text)


async def test_decisions_screen(hostile_db: Path) -> None:
    match_id = _first(hostile_db, "select match_id from decisions where response is not null "
                                  "and response != '' order by id limit 1")
    app = ScreenApp(hostile_db, lambda s: DecisionsScreen(s, match_id))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.query_one(DataTable).row_count > 0)
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text)
        _assert_long_names_cut(text)


async def test_inspector_shows_a_hostile_answer_as_text(hostile_db: Path) -> None:
    decision_id = _first(hostile_db, "select id from decisions where response like '%pwned%' "
                                     "and valid = 1 order by id limit 1")
    app = ScreenApp(hostile_db, lambda s: InspectorScreen(s, decision_id))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text, *ANSWER)
        editor = screen.query_one("#insp-prompt", TextArea)
        assert "\\x1b]0;pwned\\x07" in editor.text  # the editor shows the prompt's escapes
        assert "\x1b" in screen.original_prompt  # and an unedited re-ask sends them as they were


@pytest.mark.slow
async def test_analysis_screen(hostile_db: Path, tmp_path: Path) -> None:
    run_id = _first(hostile_db, "select id from runs")
    app = ScreenApp(hostile_db, lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1, limit=120)
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text)
        _assert_long_names_cut(text)


@pytest.mark.slow
async def test_replay_screen(hostile_db: Path) -> None:
    match_id = _first(hostile_db, "select match_id from decisions where response like '%pwned%' "
                                  "order by id limit 1")
    app = ScreenApp(hostile_db, lambda s: RunsScreen(s))
    async with app.run_test(size=(160, 60)) as pilot:
        await until(pilot, lambda: app.screen.loaded >= 1)
        app.open_replay(match_id)
        await until(pilot, lambda: isinstance(app.screen, LiveScreen))
        live = app.screen
        await live.wait_finished()
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text, *ANSWER, "[bold]agent")
        _assert_long_names_cut(text)


# ------------------------------------------------------------------ imports
DATA = Path(__file__).parent / "data"
MODEL = "deepseek-v3"
"""A model of the strategic-personalities sample, renamed to the 10,000-character name."""


def _hostile_trial_table(folder: Path) -> Path:
    import gzip

    text = gzip.decompress((DATA / "strategic_personalities.sample.csv.gz").read_bytes()).decode()
    assert MODEL in text
    path = folder / "trials.csv.gz"
    path.write_bytes(gzip.compress(text.replace(MODEL, LONG).encode()))
    return path


@pytest.mark.slow
def test_strategic_personalities_import_and_report_show_names_as_text(tmp_path: Path) -> None:
    db = tmp_path / "sp.db"
    result = _cli("import", "strategic-personalities", str(_hostile_trial_table(tmp_path)),
                  "--db", str(db))
    assert result.returncode == 0, result.stderr
    _assert_shown_not_obeyed(result.stdout + result.stderr)
    _assert_markup_literal(result.stdout, "[red]long")  # a model outside the paper's 25
    _assert_long_names_cut(result.stdout)
    report = _cli("report", "--db", str(db))
    _assert_shown_not_obeyed(report.stdout + report.stderr)
    _assert_markup_literal(report.stdout, "[red]long")
    _assert_long_names_cut(report.stdout)


@pytest.mark.slow
async def test_strategic_personalities_analysis_screen(tmp_path: Path) -> None:
    db = tmp_path / "sp.db"
    assert _cli("import", "strategic-personalities", str(_hostile_trial_table(tmp_path)),
                "--db", str(db)).returncode == 0
    run_id = _first(db, "select id from runs")
    app = ScreenApp(db, lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(160, 80)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1 and not screen.pending_sections, limit=120)
        await pilot.pause()
        text = screen_text(app)
        _assert_shown_not_obeyed(text)
        _assert_markup_literal(text, "[red]long")
        _assert_long_names_cut(text)


@pytest.mark.slow
def test_coopeval_import_shows_its_run_and_model_names_as_text(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(DATA / "coopeval_sample" / "no_mechanism_prisoners_dilemma", run)
    model = "google/gemini-3-flash-preview"
    for f in run.iterdir():
        f.chmod(0o644)
        f.write_text(f.read_text().replace(model, json.dumps(AGENT)[1:-1]))
    config = json.loads((run / "config.json").read_text())
    config["name"] = LONG
    (run / "config.json").write_text(json.dumps(config))
    db = tmp_path / "ce.db"
    result = _cli("import", "coopeval", str(run), "--db", str(db))
    assert result.returncode == 0, result.stderr
    _assert_shown_not_obeyed(result.stdout + result.stderr)
    _assert_markup_literal(result.stdout, "[red]long")
    _assert_long_names_cut(result.stdout)
    for args in (("report",), ("list", "runs")):
        out = _cli(*args, "--db", str(db))
        assert out.returncode == 0, out.stderr
        _assert_shown_not_obeyed(out.stdout + out.stderr)


# ------------------------------------------------------------------ the path itself
def test_terminal_text_escapes_for_rich_and_textual_alike() -> None:
    from rich.text import Text
    from textual.content import Content

    from coop_tui.terminal import terminal_text

    for written in ("[red]x[/]", "[$accent]v", "[B]b[/B]", "[ red]r", "[@click=app.quit]q[/]"):
        escaped = terminal_text(written)
        assert Text.from_markup(escaped).plain == written
        assert Content.from_markup(escaped).plain == written
    assert terminal_text("a\r\nb\rc\x1b\u202e", lines=True, markup=False) == "a\nb\\x0dc\\x1b\\u202e"
    assert terminal_text("a\nb", markup=False) == "a\\x0ab"  # one line unless lines=True


def test_cut_names_stay_apart() -> None:
    """Two long names alike in their first 40 characters are cut where they differ, so the
    rows a report keys by them are not merged."""
    from coop_tui.terminal import NAME_WIDTH, short_names, terminal_data

    a, b = "m" * 45 + "-alpha", "m" * 45 + "-beta"
    report = {"population": {a: 1, b: 2}, "rows": [{"agent": a}], "note": "x" * 60}
    names = short_names(report)
    assert set(names) == {a, b} and names[a] != names[b]
    assert all(v.endswith("…") and len(v) > NAME_WIDTH for v in names.values())
    shown = terminal_data(report, names)
    assert list(shown["population"].values()) == [1, 2]
    assert shown["rows"][0]["agent"] == names[a]
    assert shown["note"] == "x" * 60  # not a name: kept whole
