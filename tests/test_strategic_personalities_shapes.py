"""The published trial table as published: fragment rows, re-run duplicates and a model
outside the paper, on a synthetic file (plain and gzipped) built from known outcomes, and
the paper's analyses of the table (Supplementary Tables 2 and 5, Cohen's h, CV per
domain, fold difference, generational drift) checked against values computed here."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import statistics
from pathlib import Path

import pytest

from coop_tui.cli import main
from coop_tui.store import Store

R, S, T, P = 3, 0, 5, 1  # pd_canonical as run


def pd_row(model: str, trial: int, c0: float, c1: float, joint: float,
           opponent: str = "tit_for_tat", timestamp: str = "2026-03-01 10:00:00") -> list[str]:
    """A 10-round canonical PD trial whose outcomes are known: joint·10 CC rounds, etc."""
    cc, cd, dc = round(10 * joint), round(10 * (c0 - joint)), round(10 * (c1 - joint))
    dd = 10 - cc - cd - dc
    total0 = R * cc + S * cd + T * dc + P * dd
    total1 = R * cc + T * cd + S * dc + P * dd
    return ["pd_canonical", "Prisoner's Dilemma (Canonical Axelrod)", "cooperation",
            "simultaneous", model, opponent, "model_vs_strategy", "baseline", f"{trial}.0",
            "10.0", model, opponent, f"{total0}.0", f"{total1}.0", str((c0 + c1) / 2),
            str(joint), "cooperate", "cooperate", "1000.0", "900.0", "0.001", "False", timestamp]


def bos_row(model: str, mean: float, joint: float) -> list[str]:
    return ["bos_standard", "Battle of the Sexes", "coordination", "simultaneous", model,
            model, "self_play", "baseline", "1.0", "10.0", model, model, "70.0", "70.0",
            str(mean), str(joint), "ballet", "ballet", "1000.0", "900.0", "0.001", "False",
            "2026-03-01 10:00:00"]


def focal_row(model: str, matched_rounds: int) -> list[str]:
    """Focal point (four options): no cooperation columns; 10 points per matched round."""
    total = f"{10 * matched_rounds}.0"
    return ["focal_point", "Focal Point (4 options)", "coordination", "simultaneous", model,
            "always_cooperate", "model_vs_strategy", "baseline", "1.0", "10.0", model,
            "always_cooperate", total, total, "", "", "", "", "1000.0", "900.0", "0.001",
            "False", "2026-03-01 10:00:00"]


def fragment(*lead: str) -> list[str]:
    return [*lead, *[""] * (23 - len(lead))]


ROWS = [
    pd_row("claude-opus-4.6", 1, 0.8, 0.8, 0.8),
    pd_row("claude-opus-4.6", 2, 0.6, 0.6, 0.5),
    fragment("a1b2c3d4", "False", "2026-02-28 14:43:06"),   # line 3
    pd_row("deepseek-r1", 1, 0.2, 0.3, 0.1),                # superseded by line 7
    pd_row("deepseek-r1", 2, 0.4, 0.4, 0.4),
    pd_row("gpt-4o", 1, 1.0, 1.0, 1.0),                      # not one of the 25
    pd_row("deepseek-r1", 1, 0.6, 0.6, 0.6, timestamp="2026-03-09 10:00:00"),
    fragment("9f8e7d", "True"),                              # line 8
    pd_row("gpt-4o-mini", 1, 0.5, 0.5, 0.5),
    pd_row("gpt-5-nano", 1, 0.1, 0.1, 0.0),
    bos_row("claude-opus-4.6", 0.5, 0.5),   # both on ballet every round: coordination 1
    bos_row("gpt-5-nano", 0.5, 0.0),        # never on the same option: coordination 0
    bos_row("gpt-4o-mini", 0.5, 0.25),      # half the rounds: 0.5
    # the public code scores every coordination game and condition: a focal point trial
    # (7 of 10 rounds matched: 0.7) and a Battle of the Sexes trial under another condition
    # (both on ballet every round: 1) count too
    focal_row("gpt-4o-mini", 7),
    [*bos_row("gpt-5-nano", 0.5, 0.5)[:7], "cheap_talk", *bos_row("gpt-5-nano", 0.5, 0.5)[8:]],
]
COORDINATION = {"claude-opus-4.6": 1.0, "gpt-5-nano": (0.0 + 1.0) / 2,
                "gpt-4o-mini": (0.5 + 0.7) / 2}
"""Each model's mean coordination rate over its coordination trials."""
TABLE2 = {"claude-opus-4.6": [0.8, 0.6], "deepseek-r1": [0.4, 0.6], "gpt-4o-mini": [0.5],
          "gpt-5-nano": [0.1]}
"""Each model's own cooperation per Table 2 trial (the last copy of deepseek-r1 trial 1)."""


def write(path: Path, rows: list[list[str]], *, gz: bool) -> Path:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    if gz:
        with gzip.open(path, "wt", newline="") as fh:
            fh.write(buf.getvalue())
    else:
        path.write_text(buf.getvalue())
    return path


@pytest.fixture(params=["plain", "gzip"])
def imported(request: pytest.FixtureRequest, tmp_path: Path,
             capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    gz = request.param == "gzip"
    src = write(tmp_path / ("t.csv.gz" if gz else "t.csv"), ROWS, gz=gz)
    db = tmp_path / "coop.db"
    assert main(["import", "strategic-personalities", str(src), "--db", str(db)]) == 0
    return db, capsys.readouterr().out


def report(db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fragments_duplicates_and_outside_models_are_named_in_the_summary(
        imported: tuple[Path, str]) -> None:
    db, out = imported
    assert "13 trials" in out
    assert "skipped 2 fragment rows" in out and "lines 3, 8" in out
    assert "1 re-run duplicates superseded" in out and "deepseek-r1 1" in out
    assert "gpt-4o (1 rows)" in out
    store = Store(db)
    rows = store.db.execute("select line, superseded_by, in_paper from sp_trials"
                            " where model in ('deepseek-r1', 'gpt-4o') order by line").fetchall()
    store.close()
    # nothing lost: the earlier copy and the outside model are stored, marked
    assert rows == [(4, 7, 1), (5, None, 1), (6, None, 0), (7, None, 1)]


def test_table2_uses_the_last_copy_and_leaves_the_outside_model_out(
        imported: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    got = report(imported[0], capsys)
    table = got["cooperation_by_model"]
    assert set(table) == set(TABLE2)
    for model, values in TABLE2.items():
        assert table[model]["n"] == len(values)
        assert table[model]["mean"] == pytest.approx(100 * statistics.fmean(values))
    summary = got["published_trials"]
    assert [f["line"] for f in summary["fragments_skipped"]] == [3, 8]
    assert summary["fragments_skipped"][0]["cells"] == ["a1b2c3d4", "False", "2026-02-28 14:43:06"]
    assert summary["duplicates_superseded"] == 1 and summary["models_outside_paper"] == {"gpt-4o": 1}


def h(p1: float, p2: float) -> float:
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


def test_the_papers_analyses_of_the_table(imported: tuple[Path, str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    got = report(imported[0], capsys)
    rates = {m: statistics.fmean(v) for m, v in TABLE2.items()}
    providers = got["provider_summary"]["providers"]
    assert providers["openai"]["models"] == ["gpt-4o-mini", "gpt-5-nano"]
    assert providers["openai"]["cooperation_mean"] == pytest.approx(30.0)
    assert providers["openai"]["cooperation_range"] == pytest.approx([10.0, 50.0])
    # coordination 0.6 and 0.5 across OpenAI's two models (was 0.5 and 0: the focal point
    # and the non-baseline trial were left out)
    openai = [COORDINATION["gpt-4o-mini"], COORDINATION["gpt-5-nano"]]
    assert providers["openai"]["coordination_cv"] == pytest.approx(
        statistics.stdev(openai) / statistics.fmean(openai), abs=1e-4)
    assert providers["anthropic"]["cooperation_range"] is None

    hm = got["cohens_h_models"]
    assert hm["models"][0] == "claude-opus-4.6" and hm["models"][-1] == "gpt-5-nano"
    pairs = {p["name"]: p for p in hm["pairs"]}
    assert pairs["most vs least cooperative"]["h"] == pytest.approx(h(0.7, 0.1), abs=1e-4)
    assert pairs["openai oldest vs newest"]["h"] == pytest.approx(h(0.5, 0.1), abs=1e-4)
    assert pairs["openai oldest vs newest"]["paper"] == 1.32

    spread = got["domain_spread"]["domains"]
    coop = list(rates.values())
    assert spread["cooperation"]["cv"] == pytest.approx(
        statistics.stdev(coop) / statistics.fmean(coop), abs=1e-4)
    assert spread["coordination"]["range"] == [0.5, 1.0]
    assert spread["coordination"]["mean"] == pytest.approx(
        statistics.fmean(COORDINATION.values()), abs=1e-4)
    assert "six coordination games" in got["domain_spread"]["coordination_method"]
    assert "strategic_depth" in got["domain_spread"]["not_available"]

    fold = got["fold_difference"]
    assert (fold["most"], fold["least"]) == ("claude-opus-4.6", "gpt-5-nano")
    assert fold["fold"] == pytest.approx(7.0)

    drift = got["generational_drift"]["openai"]
    assert [c["model"] for c in drift["chain"]] == ["gpt-4o-mini", "gpt-5-nano"]
    assert drift["change_pp"] == pytest.approx(-40.0) and drift["fold"] == pytest.approx(5.0)
    assert drift["direction"] == "down"


def test_the_text_report_shows_every_analysis(imported: tuple[Path, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["report", "--db", str(imported[0])]) == 0
    text = capsys.readouterr().out
    for title in ("Supplementary Table 2", "Supplementary Table 5", "Cohen's h between models",
                  "Spread across models by domain", "7.0-fold", "gpt-4o-mini 50.0"):
        assert title in text, title


def test_a_row_missing_only_its_model_is_still_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [pd_row("claude-opus-4.6", 1, 0.8, 0.8, 0.8), pd_row("", 2, 0.6, 0.6, 0.5)]
    db = tmp_path / "coop.db"
    src = write(tmp_path / "bad.csv.gz", rows, gz=True)
    assert main(["import", "strategic-personalities", str(src), "--db", str(db)]) == 2
    assert "line 2: column 5 (model) is empty" in capsys.readouterr().err
    assert not db.exists()


def test_a_table_imported_before_is_marked_by_the_migration(imported: tuple[Path, str]) -> None:
    db = imported[0]
    store = Store(db)
    store.db.execute("update sp_trials set superseded_by = null, in_paper = null")
    store.db.execute("delete from _migrations where name like 'm150_%'")
    store.db.conn.commit()
    store.close()
    store = Store(db)
    rows = store.db.execute("select line, superseded_by, in_paper from sp_trials"
                            " where model in ('deepseek-r1', 'gpt-4o') order by line").fetchall()
    store.close()
    assert rows == [(4, 7, 1), (5, None, 1), (6, None, 0), (7, None, 1)]


async def test_our_own_runs_score_coordination_in_every_coordination_game(tmp_path: Path) -> None:
    """Battle of the Sexes and Matching Pennies have no cooperative action, so comparing the
    seats' cooperation flags left them out and the coordination domain came out empty; the
    public code compares the options chosen, in all six coordination games."""
    from coop_tui.analysis.paper_tables import COORDINATION_GAMES
    from coop_tui.games import load_game
    from coop_tui.report import build_report
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    for game in COORDINATION_GAMES:  # the same option is the same action index
        names = load_game(game).action_names
        assert names[0] == names[1], game
    common = {"mechanism": "repetition", "horizon": "known", "rounds": 4, "answer": "choice",
              "matchup": "versus", "agents": ["gpt-steady", "gpt-switch"], "opponents": ["first"]}
    data = {
        "name": "coordination", "seed": 3,
        "agents": {"gpt-steady": {"strategy": "always_action"},
                   "gpt-switch": {"strategy": "cycle"},
                   "first": {"strategy": "always_action"}},
        "experiments": [{**common, "game": game}
                        for game in ("pd_canonical", "bos_standard", "matching_pennies",
                                     "focal_point")],
    }
    store = Store(tmp_path / "own.db")
    summary = await run_sweep(build_sweep(data), store)
    assert summary.status == "done", summary.errors
    report = build_report(store, summary.run_id)
    store.close()
    # always the first option against the first option: matched every round; alternating
    # first / second: half the rounds, in each of the three coordination games
    spread = report["domain_spread"]["domains"]["coordination"]
    assert spread["models"] == 2 and spread["range"] == [0.5, 1.0]
    assert (spread["lowest"], spread["highest"]) == ("gpt-switch", "gpt-steady")
    openai = report["provider_summary"]["providers"]["openai"]
    assert openai["coordination_cv"] == pytest.approx(
        statistics.stdev([1.0, 0.5]) / 0.75, abs=1e-4)


def test_table2_counts_every_trial_number_and_the_last_copy_of_a_rerun(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The public code's analysis reads every trial file: trials 6 and 9 count (they were
    cut by a ``trial <= 5`` filter before); a cell run two or three times is one trial
    file, the last copy written."""
    rows = [pd_row("claude-opus-4.5", t, c, c, c)
            for t, c in [(1, 0.8), (2, 0.6), (3, 0.7), (6, 0.9), (9, 0.2)]]
    rows += [pd_row("ministral-14b", 1, c, c, c, timestamp=f"2026-03-0{i} 10:00:00")
             for i, c in enumerate((0.1, 0.3, 0.5), start=1)]           # three copies
    rows += [pd_row("gemini-2.5-flash", 4, 0.2, 0.2, 0.2),
             pd_row("gemini-2.5-flash", 4, 0.4, 0.4, 0.4, timestamp="2026-03-09 10:00:00")]
    db = tmp_path / "coop.db"
    src = write(tmp_path / "t.csv.gz", rows, gz=True)
    assert main(["import", "strategic-personalities", str(src), "--db", str(db)]) == 0
    table = report(db, capsys)["cooperation_by_model"]
    assert table["claude-opus-4.5"]["n"] == 5
    assert table["claude-opus-4.5"]["mean"] == pytest.approx(100 * statistics.fmean(
        [0.8, 0.6, 0.7, 0.9, 0.2]))
    assert (table["ministral-14b"]["n"], table["ministral-14b"]["mean"]) == (1, pytest.approx(50))
    assert (table["gemini-2.5-flash"]["n"], table["gemini-2.5-flash"]["mean"]) == (
        1, pytest.approx(40))


def test_supplementary_table_2_leaves_out_the_sentinel_test_trials(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The published table holds test trials numbered 998, 999 (dated 2026-03-06) and
    997 to 9999, 8888, 7777, 6666, 5555; the code numbers a cell's trials 1 to 20 at most.
    Those that pass Table 2's filters (10-round baseline PD) must not add to N; the report
    says the rule it applies (not the stale "max_trial": 5) and which numbers it left out."""
    rows = [pd_row("claude-haiku-4.5", t, c, c, c) for t, c in [(1, 0.8), (2, 0.6), (20, 0.4)]]
    rows += [pd_row("claude-haiku-4.5", 999, 0.0, 0.0, 0.0, timestamp="2026-03-06 10:00:00"),
             pd_row("claude-haiku-4.5-thinking", 998, 0.0, 0.0, 0.0,
                    timestamp="2026-03-06 11:00:00"),
             pd_row("claude-haiku-4.5-thinking", 3, 0.5, 0.5, 0.5),
             pd_row("gpt-5-nano", 5555, 1.0, 1.0, 1.0), pd_row("gpt-5-nano", 1, 0.1, 0.1, 0.0)]
    db = tmp_path / "coop.db"
    src = write(tmp_path / "t.csv.gz", rows, gz=True)
    assert main(["import", "strategic-personalities", str(src), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "3 test trials (trial numbers 998, 999, 5555)" in out
    got = report(db, capsys)
    table = got["cooperation_by_model"]
    assert (table["claude-haiku-4.5"]["n"], table["claude-haiku-4.5"]["mean"]) == (
        3, pytest.approx(60.0))
    assert (table["claude-haiku-4.5-thinking"]["n"],
            table["claude-haiku-4.5-thinking"]["mean"]) == (1, pytest.approx(50.0))
    assert (table["gpt-5-nano"]["n"], table["gpt-5-nano"]["mean"]) == (1, pytest.approx(10.0))
    summary = got["published_trials"]
    selection = summary["cooperation_by_model_selection"]
    assert "max_trial" not in selection and "1 to 20" in selection["trials"]
    assert summary["test_trials"]["rows"] == 3
    assert summary["test_trials"]["trial_numbers"] == [998, 999, 5555]


def test_supplementary_table_2_says_each_fragment_row_is_a_trial_the_table_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fragment row of the published table is the tail of a trial row that another row,
    appended by another process at the same moment, was written over: only the lost row's
    last cells remain (its cost, flag and timestamp; or just the end of its flag). That
    trial is not in the file, so Table 2's N counts the rows that are there and the report
    says at least one trial is lost per fragment and why the paper's N can be larger."""
    from coop_tui.analysis.paper_tables import LOST_ROWS_RULE

    rows = [pd_row("gemini-2.5-flash", 1, 0.2, 0.2, 0.2),
            pd_row("gemini-2.5-flash", 2, 0.0, 0.0, 0.0, timestamp="2026-03-09 10:07:40"),
            fragment("", "0.0419", "False", "2026-03-09 10:07:39"),     # line 3
            pd_row("gemini-2.5-flash", 3, 0.1, 0.1, 0.0, timestamp="2026-03-09 10:09:12"),
            fragment("e", "2026-03-09 10:09:12")]                         # line 5
    db = tmp_path / "coop.db"
    src = write(tmp_path / "t.csv.gz", rows, gz=True)
    assert main(["import", "strategic-personalities", str(src), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert ("skipped 2 fragment rows (tails of trial rows another row was written over: no "
            "model, trial or totals; those trials are not in the file), lines 3, 5") in out
    got = report(db, capsys)
    assert got["cooperation_by_model"]["gemini-2.5-flash"]["n"] == 3
    summary = got["published_trials"]
    assert summary["lost_trials"] == {"at_least": 2, "fragment_lines": [3, 5],
                                      "rule": LOST_ROWS_RULE}
    assert summary["cooperation_by_model_selection"]["lost_rows"] == LOST_ROWS_RULE
    assert [f["cells"] for f in summary["fragments_skipped"]] == [
        ["0.0419", "False", "2026-03-09 10:07:39"], ["e", "2026-03-09 10:09:12"]]
    assert main(["report", "--db", str(db)]) == 0
    assert "at least that many trials are not in the table" in capsys.readouterr().out


def test_folds_report_the_papers_division_of_rounded_rates_and_the_exact_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The paper divides the rates it prints (71.5 / 1.5 = 47.7, its "48-fold"); the exact
    rates give another fold. Both are reported, each named for what it is."""
    from coop_tui.analysis import paper_tables
    from coop_tui.analysis.sections import fold_difference, generational_drift

    coop = {"claude-opus-4.6": 0.71534, "gpt-5-nano": 0.01467, "gpt-4o-mini": 0.50349}
    fold = paper_tables.fold_difference(coop)
    assert fold is not None
    assert fold["fold"] == pytest.approx(0.71534 / 0.01467, abs=1e-4)          # 48.8
    assert fold["fold_of_printed_rates"] == pytest.approx(71.5 / 1.5, abs=1e-4)  # 47.7
    assert "rounded to one decimal" in fold["fold_methods"]["fold_of_printed_rates"]
    assert "exact" in fold["fold_methods"]["fold"]
    [line] = fold_difference.render(fold)
    assert "48.8-fold from the exact rates" in line
    assert "47.7-fold from the rates rounded as printed (the paper's way)" in line
    drift = paper_tables.generational_drift(coop)["openai"]
    assert drift["fold"] == pytest.approx(0.50349 / 0.01467, abs=1e-4)          # 34.3
    assert drift["fold_of_printed_rates"] == pytest.approx(50.3 / 1.5, abs=1e-4)  # 33.5
    [text] = generational_drift.render({"openai": drift})
    assert "34.3-fold from the exact rates" in text and "33.5-fold from the rates rounded" in text
