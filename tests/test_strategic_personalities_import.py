"""``coop-tui import strategic-personalities``: the strategic personalities paper's published trial table.

The full table (52,872 trials) is not in the repository; its 200-row sample (the first
line and every 250th row) is, in tests/data. The tests import the sample through the CLI
and check ``cooperation_by_model`` against an independent count: for each prisoner's dilemma row
we search the integer outcome counts (CC, CD, DC, DD over the trial's rounds) that give
both stored totals, the pair's mean and the joint rate, and read seat 0's cooperation
off them — a different route from the importer's closed-form difference of totals.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from scipy.stats import t as student_t

from coop_tui.cli import main
from coop_tui.importers.strategic_personalities import SymmetricGame
from coop_tui.migrations import answer_rule_broken
from coop_tui.store import Store

SAMPLE = Path(__file__).parent / "data" / "strategic_personalities.sample.csv.gz"
# R, S, T, P of the public code's prisoner's dilemmas (README, "Games as run")
PD = {"pd_canonical": (3, 0, 5, 1), "pd_harsh": (8, 0, 10, 5), "pd_medium": (6, 0, 10, 2),
      "pd_mild": (8, 0, 10, 2)}


def brute_force_own(row: list[str]) -> float | None:
    """Seat 0's cooperation from the outcome counts that reproduce the row, or None."""
    r, s, t, p = PD[row[0]]
    rounds = int(float(row[9]))
    total0, total1 = float(row[12]), float(row[13])
    mean, joint = float(row[14]), float(row[15])
    found = set()
    for cc in range(rounds + 1):
        for cd in range(rounds + 1 - cc):
            for dc in range(rounds + 1 - cc - cd):
                dd = rounds - cc - cd - dc
                if (r * cc + s * cd + t * dc + p * dd == total0
                        and r * cc + t * cd + s * dc + p * dd == total1
                        and math.isclose((2 * cc + cd + dc) / (2 * rounds), mean)
                        and math.isclose(cc / rounds, joint)):
                    found.add((cc + cd) / rounds)
    assert len(found) <= 1
    return found.pop() if found else None


def expected_table() -> dict[str, dict]:
    per_model: dict[str, list[float]] = defaultdict(list)
    with gzip.open(SAMPLE, "rt", newline="") as fh:
        for i, row in enumerate(csv.reader(fh)):
            if i == 0 or row[0] not in PD or row[7] != "baseline":
                continue
            if int(float(row[9])) != 10 or int(float(row[8])) > 5 or row[10] != row[4]:
                continue
            own = brute_force_own(row)
            assert own is not None, row
            per_model[row[4]].append(100 * own)
    return per_model


def run_cli(args: list[str]) -> int:
    return main(args)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("sp") / "coop.db"
    assert run_cli(["import", "strategic-personalities", str(SAMPLE), "--db", str(db)]) == 0
    return db


def report_json(db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert run_cli(["report", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cooperation_by_model_matches_an_independent_count(
        imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = expected_table()
    assert sum(len(v) for v in expected.values()) >= 20  # the sample holds enough PD rows
    got = report_json(imported, capsys)["cooperation_by_model"]
    assert set(got) == set(expected)
    for model, values in expected.items():
        row = got[model]
        assert row["n"] == len(values)
        assert row["mean"] == pytest.approx(statistics.fmean(values), abs=1e-3)
        if len(values) > 1:
            sd = statistics.stdev(values)
            assert row["sd"] == pytest.approx(sd, abs=1e-3)
            mean = statistics.fmean(values)
            # the paper's bounds are mean ± 1.96 se; the public code's t-interval is ci_t
            half = 1.959964 * sd / math.sqrt(len(values))
            assert row["ci_method"] == "normal-1.96"
            assert row["ci"] == pytest.approx(
                [max(0.0, mean - half), min(100.0, mean + half)], abs=1e-3)
            half_t = student_t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
            assert row["ci_t"] == pytest.approx(
                [max(0.0, mean - half_t), min(100.0, mean + half_t)], abs=1e-3)
        else:
            assert row["sd"] is None and row["ci"] is None


def test_the_trial_table_is_stored_with_its_first_line_decoded(
        imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(imported)
    rows = store.db.execute("select count(*), count(own_coop0) from sp_trials").fetchone()
    first = store.db.execute(
        "select game, model, seat0, seat1, payoff0, payoff1, coop_mean, joint, modal0, trial,"
        " rounds, tokens0 from sp_trials where line = 1").fetchone()
    pd_row = store.db.execute(
        "select own_coop0, own_coop1 from sp_trials where game = 'pd_medium'"
        " and model = 'deepseek-v3' and opponent = 'false_defector'").fetchone()
    store.close()
    assert rows[0] == 201  # the header line was a data row
    # pandas had renamed it: "claude-haiku-4.5.1", "mirror.1", "50.0.1", "Unnamed: 14"
    assert first == ("beauty_contest_23", "claude-haiku-4.5", "claude-haiku-4.5", "mirror",
                     50.0, 50.0, None, None, None, 1, 10, 1675)
    # 34 vs 24 points over 10 rounds of 10/0 temptation/sucker, pair mean 0.15: 0.1 and 0.2
    assert pd_row == pytest.approx((0.1, 0.2))
    summary = report_json(imported, capsys)["published_trials"]
    assert summary["trials"] == 201 and summary["conditions"]["payoff_10x"] == 2
    assert any("reciprocity" in x for x in summary["not_recoverable"])


def test_the_import_keeps_the_answer_rule(imported: Path) -> None:
    """The trial table holds totals, not answers: the import stores trials and no decision,
    so no answer can be stored valid without a parse (the store's rule for decisions)."""
    store = Store(imported)
    try:
        assert store.db.execute("select count(*) from sp_trials").fetchone()[0] > 0
        assert store.db.execute("select count(*) from decisions").fetchone()[0] == 0
        assert store.db.execute(
            f"select count(*) from decisions where {answer_rule_broken()}").fetchone()[0] == 0
    finally:
        store.close()


def test_importing_the_same_file_again_replaces_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "coop.db"
    for _ in range(2):
        assert run_cli(["import", "strategic-personalities", str(SAMPLE), "--db", str(db)]) == 0
    assert "replaced run sp-" in capsys.readouterr().out
    store = Store(db)
    assert store.db.execute("select count(*) from runs").fetchone()[0] == 1
    assert store.db.execute("select count(*) from sp_trials").fetchone()[0] == 201
    store.close()


def _write_gz(path: Path, rows: list[list[str]]) -> Path:
    with gzip.open(path, "wt", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return path


def _sample_rows(n: int) -> list[list[str]]:
    with gzip.open(SAMPLE, "rt", newline="") as fh:
        return [row for _, row in zip(range(n), csv.reader(fh), strict=False)]


@pytest.mark.parametrize(("damage", "message"), [
    (lambda rows: rows[3].pop(), "line 4: 22 columns, expected 23"),
    (lambda rows: rows[2].__setitem__(12, "lots"), "line 3: column 13 (seat 0 total payoff) is 'lots'"),
    (lambda rows: rows[4].__setitem__(14, "1.5"), "line 5: column 15 (mean cooperation) is 1.5"),
    (lambda rows: rows[1].__setitem__(8, "2.5"), "line 2: column 9 (trial number) is '2.5', not a whole"),
])
def test_a_damaged_table_is_refused_naming_line_and_column_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage, message: str) -> None:
    rows = _sample_rows(10)
    damage(rows)
    bad = _write_gz(tmp_path / "bad.csv.gz", rows)
    db = tmp_path / "coop.db"
    assert run_cli(["import", "strategic-personalities", str(bad), "--db", str(db)]) == 2
    assert message in capsys.readouterr().err
    assert not db.exists()


def test_a_missing_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "coop.db"
    assert run_cli(["import", "strategic-personalities", str(tmp_path / "nope.csv.gz"),
                    "--db", str(db)]) == 2
    assert "no such file" in capsys.readouterr().err and not db.exists()


def test_own_cooperation_is_refused_when_the_totals_do_not_add_up() -> None:
    canonical = SymmetricGame(3, 0, 5, 1)
    # 10 rounds: seat 0 cooperated 3 times, seat 1 once, one joint round -> 3+0+0+5+5... checked
    assert canonical.own_cooperation(10, 3 + 2 * 0 + 0 * 5 + 7 * 1, 3 + 2 * 5 + 7, 0.2, 0.1) \
        == pytest.approx((0.3, 0.1))
    assert canonical.own_cooperation(10, 11, 20, 0.2, 0.1) is None  # joint rate contradicts
    assert canonical.own_cooperation(10, 50, 0, 0.2, 0.1) is None   # rates leave 0..1


async def test_the_analysis_screen_opens_on_the_imported_table(imported: Path, tmp_path: Path) -> None:
    import shutil
    import time

    from textual.widgets import Static

    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen

    path = tmp_path / "copy.db"
    shutil.copy(imported, path)
    store = Store(path)
    run_id = store.runs()[0]["id"]
    store.close()

    class App(CoopApp):
        def on_mount(self, event) -> None:
            event.prevent_default()
            self.push_screen(AnalysisScreen(self.store, run_id, export_dir=tmp_path / "out"))

    app = App(path, replay_speed=0)
    async with app.run_test(size=(140, 50)) as pilot:
        screen = app.screen
        deadline = time.monotonic() + 30
        while not screen.query("#an-section-cooperation_by_model"):
            assert time.monotonic() < deadline, "the imported table never showed"
            await pilot.pause(0.05)
        await pilot.pause()
        panel = screen.query_one("#an-section-cooperation_by_model")
        from rich.console import Console

        console = Console(width=200, record=True, color_system=None)
        console.print(panel.query_one(Static).content)
        shown = console.export_text()
        assert "gpt-4o-mini" in shown and "76.7" in shown  # (100 + 40 + 90) / 3 in the sample
        assert screen.query("#an-section-published_trials")
        for key in ("provider_summary", "cohens_h_models", "domain_spread", "fold_difference"):
            assert screen.query(f"#an-section-{key}"), key


def test_export_writes_the_trial_table(imported: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run_cli(["export", "--db", str(imported), "--out", str(out)]) == 0
    with (out / "trials.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 201
    pd_row = next(r for r in rows if r["game"] == "pd_medium" and r["model"] == "deepseek-v3")
    assert (float(pd_row["own_coop0"]), float(pd_row["own_coop1"])) == pytest.approx((0.1, 0.2))
