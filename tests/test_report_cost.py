"""A report computes what is asked for, and the slow sections once per content.

Three LLM agents (the real litellm client against the loopback server, each with its own
wording) play a cross-play Prisoner's Dilemma, so the run has both CoopEval's population
tables and reasoning texts for the fingerprints section. What a report computed is
observable in the database: the fingerprints are stored in ``section_results`` when, and
only when, they were built.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.fingerprints import LEXICON, lexical_rates
from coop_tui.cli import main
from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer

RUN = "run-cost"
FINGERPRINTS = "reasoning_fingerprints"
WORDING = {
    "claude-fair": 'Fairness and mutual benefit matter; I trust them. {"A0": 100, "A1": 0}',
    "claude-kind": 'Mutual trust builds long-term cooperation. {"A0": 100, "A1": 0}',
    "gpt-cold": 'Defecting exploits them; the Nash equilibrium says defect. {"A0": 0, "A1": 100}',
}
DATA = Path(__file__).parent / "data"


def answer(body: dict[str, Any]) -> str:
    return WORDING[body["model"]]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    path = tmp_path_factory.mktemp("cost") / "coop.db"
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        agents = {name: {"model": f"openai/{name}", "api_base": srv.url, "style": "direct"}
                  for name in WORDING}
        sweep = {"name": "cost", "seed": 1, "concurrency": 4, "samples": 1, "agents": agents,
                 "experiments": [{"game": "prisoners", "mechanism": "none", "matchup": "cross",
                                  "agents": list(WORDING)}]}
        store = Store(path)
        asyncio.run(run_sweep(build_sweep(sweep), store, run_id=RUN))
        store.close()
    return path


@pytest.fixture
def db(source: Path, tmp_path: Path) -> Path:
    """A fresh copy per test: nothing stored yet."""
    path = tmp_path / "coop.db"
    shutil.copy(source, path)
    return path


def stored(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("select section, run_id, value from section_results").fetchall()
    finally:
        conn.close()


def report_json(db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["report", RUN, "--db", str(db), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_latex_builds_the_tables_only(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", RUN, "--db", str(db), "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out
    assert stored(db) == []  # the fingerprints were not built
    assert main(["report", RUN, "--db", str(db), "--format", "csv"]) == 0
    assert stored(db) == []


def test_sections_select_and_unknown_keys_are_refused(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = report_json(db, capsys, "--sections", "expected")
    assert "expected" in only and FINGERPRINTS not in only
    assert {"run", "counts", "experiments", "mechanisms"} <= set(only)
    assert stored(db) == []
    none = report_json(db, capsys, "--sections", "")
    assert FINGERPRINTS not in none and "expected" not in none
    chosen = report_json(db, capsys, "--sections", f" {FINGERPRINTS} ")
    assert FINGERPRINTS in chosen and "expected" not in chosen
    assert [r[0] for r in stored(db)] == [FINGERPRINTS]
    capsys.readouterr()
    assert main(["report", RUN, "--db", str(db), "--sections", "expected,nope,welfare"]) == 2
    err = capsys.readouterr().err
    assert "--sections" in err and "'nope'" in err and "known:" in err
    assert FINGERPRINTS in err and "similarity_table" in err
    assert main(["report", RUN, "--db", str(db), "--format", "latex", "--sections",
                 "expected"]) == 2
    assert "--format latex" in capsys.readouterr().err


def test_text_report_with_sections(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["report", RUN, "--db", str(db), "--sections", FINGERPRINTS]) == 0
    out = capsys.readouterr().out
    assert "Reasoning fingerprints" in out
    assert main(["report", RUN, "--db", str(db), "--sections", "expected"]) == 0
    assert "Reasoning fingerprints" not in capsys.readouterr().out


def test_fingerprints_are_stored_read_back_and_rebuilt_when_texts_change(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = report_json(db, capsys)[FINGERPRINTS]
    assert first["traces"] == 18  # 9 ordered pairings x 2 seats
    rows = stored(db)
    assert [(r[0], r[1]) for r in rows] == [(FINGERPRINTS, RUN)]
    assert json.loads(rows[0][2]) == first
    # a second report reads the stored value: a marker put there comes back
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("update section_results set value = ?",
                     [json.dumps({**first, "traces": -1})])
    assert report_json(db, capsys)[FINGERPRINTS]["traces"] == -1
    # a new decision with a text: the stored value no longer applies, it is rebuilt
    with conn:
        columns = [r[1] for r in conn.execute("pragma table_info(decisions)")
                   if r[1] not in ("id", "cache_key")]
        names = ", ".join(columns)
        conn.execute(f"insert into decisions ({names}, cache_key) select {names}, 'copy'"
                     " from decisions where phase = 'play' order by id limit 1")
    conn.close()
    rebuilt = report_json(db, capsys)[FINGERPRINTS]
    assert rebuilt["traces"] == 19
    assert [(r[0], r[1]) for r in stored(db)] == [(FINGERPRINTS, RUN)]  # replaced, not added
    assert json.loads(stored(db)[0][2])["traces"] == 19


def test_a_deleted_run_takes_its_stored_sections(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_json(db, capsys)
    store = Store(db)
    store.delete_run(RUN)
    store.close()
    assert stored(db) == []


def test_read_only_database_still_reports(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from coop_tui.analysis.sections import build_sections

    store = Store(db)  # migrated; then opened read-only below
    store.close()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    class ReadOnly:
        def __init__(self) -> None:
            from coop_tui.database import Database

            self.db = Database(conn)

    value = build_sections(ReadOnly(), RUN, {}, [FINGERPRINTS])  # type: ignore[arg-type]
    assert value[FINGERPRINTS]["traces"] == 18
    conn.close()
    assert stored(db) == []


TEXTS = [
    "Tit-for-tat and tit for tat; unfair, fairly; long term, short-term; best responses",
    "cooperation cooperative non-cooperative asterisk risk-dominant; Nash's NASH nashville",
    "long",  # with the next text: no "long term" across two texts
    "term; the Pareto-optimal strategies, reciprocity—retaliating. don't over-exploit",
    "Ünfair? distrust 100% best-response\nbest\n response  maximise maximize",
    "",
]


def test_lexical_rates_equal_one_search_per_term_and_text() -> None:
    words = sum(len(re.findall(r"\b\w[\w'-]*\b", t)) for t in TEXTS)
    counts = {name: sum(len(re.findall(p, t, re.IGNORECASE)) for t in TEXTS)
              for name, p in LEXICON.items()}
    rates = lexical_rates(TEXTS)
    assert rates["words"] == words
    assert rates["per_1000_words"] == {n: 1000.0 * c / words for n, c in counts.items()}
    assert counts["long-term"] == 1 and counts["nash"] == 2 and counts["risk"] == 1


def test_a_study_import_folds_its_summaries_and_stores_the_sections(tmp_path: Path) -> None:
    from coop_tui.importers.coopeval import import_command

    db = tmp_path / "study.db"
    assert import_command(DATA / "coopeval_contracting_public_goods", db) == 0
    conn = sqlite3.connect(db)
    try:
        matches, folded = conn.execute(
            "select count(*), (select count(*) from match_totals) from matches").fetchone()
        sections = conn.execute("select distinct section from section_results").fetchall()
    finally:
        conn.close()
    assert matches and folded == matches
    assert sections == [(FINGERPRINTS,)]


async def test_analysis_screen_shows_the_rest_first_then_fills_the_fingerprints(
    db: Path, tmp_path: Path
) -> None:
    from textual.widgets import Static

    from coop_tui.screens.analysis import AnalysisScreen
    from tests.test_tui_screens import ScreenApp, static_text, until

    app = ScreenApp(db, lambda s: AnalysisScreen(s, RUN, export_dir=tmp_path / "out"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        assert screen.query("#an-section-expected")
        await until(pilot, lambda: screen.sections_filled >= 1, limit=300)
        panel = screen.query_one(f"#an-section-{FINGERPRINTS}")
        # the panel swaps "computing…" for the section without awaiting the swap: wait for it
        def swapped() -> bool:
            shown = [static_text(w) for w in panel.query(Static)]
            return bool(shown) and not any("computing" in text for text in shown)

        await until(pilot, swapped, limit=120)
        assert "cosine distance" in static_text(panel.query_one(Static))
        assert screen.pending_sections == set()
    assert [r[0] for r in stored(db)] == [FINGERPRINTS]
    # the next time it is read from the database: nothing left to build
    app = ScreenApp(db, lambda s: AnalysisScreen(s, RUN, export_dir=tmp_path / "out"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        assert screen.pending_sections == set()
        panel = screen.query_one(f"#an-section-{FINGERPRINTS}")
        assert "cosine distance" in static_text(panel.query_one(Static))


def test_batch_stores_the_slow_sections_when_the_run_finishes(tmp_path: Path) -> None:
    db = tmp_path / "batch.db"
    sweep = Path(__file__).parent.parent / "data" / "sweeps" / "strategies-prisoners.toml"
    assert main(["--db", str(db), "--batch", str(sweep), "--yes"]) == 0
    rows = stored(db)
    # strategies write no text: stored as nothing to show, so reports read it at once
    assert [(r[0], r[2]) for r in rows] == [(FINGERPRINTS, "null")]
