"""``coop-tui compare RUN --by KEY`` and the report's per-wording section.

The run is a real similarity sweep over the loopback server into a real SQLite file: one
model in self-play, told X = 20 or 80 with the framing "similar" or "different". The
server answers by rule, so every figure below follows from it: told "80% similar" the
model cooperates for sure, told anything else it defects for sure. Similarity therefore
moves cooperation by 100 points under the "similar" framing and by none under
"different", and that is what ``--by similarity`` must find.

The per-wording section is keyed on ``wording``. Until sweeps write that key, the same
run stands in for one with two wordings: a copy whose ``framing`` is renamed ``wording``,
stored as a wording is (left out for "ours", the default; here "similar" plays "ours").
Built on ``framing`` directly, the generic section gives the same numbers.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.compare_by import _spread, varied_keys
from coop_tui.analysis.sections.wording import build_axis, spread_line
from coop_tui.api import run_sweep
from coop_tui.cli import main
from coop_tui.store import Store, condition_key
from coop_tui.testing.server import LoopbackServer, last_user_message

SAMPLES = 10


def answer(body: dict[str, Any]) -> str:
    """Cooperate (A0, the first action of the Prisoner's Dilemma) for sure when told the
    other is at least 50% similar, else defect for sure."""
    told = re.search(r"(\d+)% similar to", last_user_message(body))
    coop = 100 if told and int(told.group(1)) >= 50 else 0
    return json.dumps({"A0": coop, "A1": 100 - coop})


def _framing_as_wording(source: Path, target: Path) -> None:
    """A copy of the run whose ``framing`` key is stored as a ``wording`` key would be:
    absent for the default (here "similar"), else its value."""
    conn = sqlite3.connect(target)
    with sqlite3.connect(source) as original:
        original.backup(conn)  # the file with whatever its write-ahead log holds
    with conn:
        for mid, text in conn.execute("select id, condition from matches where mechanism = "
                                      "'similarity'").fetchall():
            cond = json.loads(text)
            framing = cond.pop("framing")
            if framing != "similar":
                cond["wording"] = framing
            conn.execute("update matches set condition = ?, condition_key = ? where id = ?",
                         [json.dumps(cond), condition_key(cond), mid])
    conn.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("compare_by")
    db = folder / "sim.db"
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as server:
        run_id = run_sweep({
            "name": "similarity-by", "seed": 5, "samples": SAMPLES,
            "agents": {"m": {"model": "openai/loopback", "api_base": server.url,
                             "api_key": "sk-test", "style": "direct"}},
            "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                             "agents": ["m"], "similarity": [20, 80],
                             "framing": ["similar", "different"]}],
        }, db)
    flat = run_sweep({"name": "flat", "seed": 5, "samples": 2,
                      "agents": {"tft": {"strategy": "tit_for_tat"}},
                      "experiments": [{"game": "prisoners", "mechanism": "repetition", "rounds": 3,
                                       "matchup": "self", "agents": ["tft"]}]}, db)
    worded = folder / "worded.db"
    _framing_as_wording(db, worded)
    return {"db": db, "id": run_id, "flat": flat, "worded": worded}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["condition"].get("framing", r["condition"].get("similarity")): r for r in result["rows"]}


# ------------------------------------------------------------------ compare --by
def test_by_similarity_finds_the_effect_only_under_the_similar_framing(
        run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", run["id"], "--by", "similarity", "--db", str(run["db"]), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["by"] == "similarity" and result["values"] == ["20", "80"]
    assert result["against"] == "all" and result["correction"] == "holm"
    rows = _rows(result)
    assert set(rows) == {"similar", "different"}  # one row per rest: the framing
    similar, different = rows["similar"], rows["different"]
    assert (similar["a"], similar["b"]) == ("20", "80")
    # one-shot: every sampled action counts (both seats of every match are m's)
    coop = similar["cooperation"]
    assert coop["test"] == "fisher" and coop["a"]["n"] == coop["b"]["n"] == 2 * SAMPLES
    assert coop["difference"] == 1.0 and coop["different"] and coop["p_holm"] < 1e-6
    assert different["cooperation"]["difference"] == 0.0 and not different["different"]
    # mutual cooperation pays 2 each, mutual defection 1: the payoff moves by 1 too
    assert similar["payoff"]["difference"] == pytest.approx(1.0)
    assert result["tests"] == 4  # two rests x (cooperation, payoff); Holm over all four


def test_base_turns_the_comparison_around(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", run["id"], "--by", "similarity", "--base", "80",
                         "--db", str(run["db"]), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["against"] == "base" and result["base"] == "80"
    similar = _rows(result)["similar"]
    assert (similar["a"], similar["b"]) == ("80", "20")
    assert similar["cooperation"]["difference"] == -1.0


def test_text_and_latex(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", run["id"], "--by", "framing", "--db", str(run["db"]))
    assert code == 0, err
    assert "by framing: different, similar (every pair of values)" in out
    assert "framing A" in out and "framing B" in out
    line = next(ln for ln in out.splitlines() if "similarity=80" in ln and "fisher" in ln)
    # told 80: "different" (A) defects, "similar" (B) cooperates; marked different
    assert "0.0% (20)" in line and "100.0% (20)" in line and line.rstrip(" │").endswith("*")
    code, out, err = cli(capsys, "compare", run["id"], "--by", "framing", "--db", str(run["db"]),
                         "--format", "latex")
    assert code == 0, err
    assert out.startswith("% coop-tui compare: run") and out.count(r"\begin{tabular}") == 2
    assert r"framing A & framing B" in out and "$^{*}$" in out


def test_a_key_the_run_does_not_vary(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "compare", run["id"], "--by", "wording", "--db", str(run["db"]))
    assert code == 2 and out == ""
    assert f"--by wording: run {run['id']} does not vary wording; it varies framing, similarity" in err
    code, out, err = cli(capsys, "compare", run["flat"], "--by", "similarity", "--db", str(run["db"]))
    assert code == 2 and "varies no condition key" in err


def test_bad_combinations(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    db = str(run["db"])
    cases = [
        (("compare", run["id"], "--db", db), "RUN_B: compare needs a second run, or --by KEY"),
        (("compare", run["id"], run["flat"], "--by", "framing", "--db", db), "RUN_B: --by compares"),
        (("compare", run["id"], "--base", "80", "--db", db), "--base: only with --by KEY"),
        (("compare", run["id"], "--by", "framing", "--db-b", db, "--db", db), "--db-b: --by compares"),
        (("compare", run["id"], "--by", "similarity", "--base", "50", "--db", db),
         "--base: similarity takes the values 20, 80 in this run, not '50'"),
        (("compare", "nope", "--by", "similarity", "--db", db), "no run 'nope'"),
    ]
    for args, message in cases:
        code, out, err = cli(capsys, *args)
        assert code == 2 and out == "" and message in err, (args, err)


def test_missing_keys_stand_for_their_default() -> None:
    """A condition without ``wording`` was played in our own words: two conditions, one
    naming another wording, vary the key; a key no condition names is not varied."""
    found = varied_keys([{"similarity": 80}, {"similarity": 80, "wording": "mine"}])
    assert found == {"wording": ["ours", "mine"]}
    assert varied_keys([{"similarity": 80.0}, {"similarity": 80}]) == {}
    # every key the sweep leaves out at its default (sweep._game_condition)
    assert varied_keys([{"game": "prisoners"}, {"game": "prisoners", "answer": "choice",
                                                "style_message": "user_end"}]) == {
        "answer": ["mixed", "choice"], "style_message": ["system", "user_end"]}


# ------------------------------------------------------------------ the report section
def test_wording_section_in_json_matches_the_generic_section_on_framing(
        run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "report", run["id"], "--db", str(run["worded"]), "--json")
    assert code == 0, err
    section = json.loads(out)["wording"]
    assert section["key"] == "wording" and section["values"] == ["ours", "different"]
    comparison = section["comparison"]
    assert comparison["against"] == "first" and comparison["base"] == "ours"
    by_sim = {r["condition"]["similarity"]: r for r in comparison["rows"]}
    assert by_sim[80.0]["cooperation"]["difference"] == -1.0 and by_sim[80.0]["different"]
    assert by_sim[20.0]["cooperation"]["difference"] == 0.0
    (spread,) = section["spread"]
    # y: ours 0 (told 20), 1 (told 80); different 0, 0. Grand mean 1/4, T = 3/4; the
    # similarity means (0, 1/2) explain 1/4, so wording accounts for 2/3, 1/3 alone
    assert spread["conditions"] == 4 and spread["share"] == pytest.approx(2 / 3)
    assert spread["main_share"] == pytest.approx(1 / 3)
    assert spread["key_points"] == pytest.approx(50.0) and spread["other_points"] == pytest.approx(50.0)
    # the same section on the original run's framing key: the same numbers
    store = Store(run["db"])
    generic = build_axis(store, run["id"], "framing")
    assert generic is not None
    assert generic["spread"][0]["share"] == pytest.approx(spread["share"])
    # framing has no default, so "different" comes first there: the same differences, turned
    assert generic["values"] == ["different", "similar"]
    assert [r["cooperation"]["difference"] for r in generic["comparison"]["rows"]] == \
        [-r["cooperation"]["difference"] for r in comparison["rows"]]


def test_wording_section_in_text(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "report", run["id"], "--db", str(run["worded"]), "--sections", "wording")
    assert code == 0, err
    assert "Per wording: differences and the share of the spread" in out
    assert "wording: ours, different; each against ours" in out
    assert ("m · similarity · self: wording accounts for 67% of the variance of cooperation "
            "between its 4 conditions (33% by itself") in out
    assert "it moves cooperation by 50.0 points within a condition, the other keys by 50.0 points" in out


def test_wording_section_in_latex_and_csv(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "report", run["id"], "--db", str(run["worded"]), "--format", "latex")
    assert code == 0, err
    assert out.startswith("% wording: ours, different; each against ours")
    assert r"\caption{Cooperation rate, per wording}" in out
    assert r"m · similarity · self & 4 & 67\% & 33\% & 50.0 & 50.0 \\" in out
    code, out, err = cli(capsys, "report", run["id"], "--db", str(run["worded"]), "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    coop = [r for r in rows if r["table"] == "wording" and r["metric"] == "cooperation"]
    assert len(coop) == 2 and {r["value_of_a"] for r in coop} == {"ours"}
    told80 = next(r for r in coop if "similarity=80" in r["condition"])
    assert float(told80["value"]) == -1.0 and float(told80["low"]) < -0.5 < 0 < float(told80["n_a"])
    (spread,) = [r for r in rows if r["table"] == "wording_spread"]
    assert float(spread["value"]) == pytest.approx(2 / 3) and spread["n"] == "4"


def test_a_run_without_two_wordings_has_nothing_to_say(
        run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "report", "--db", str(run["db"]), run["id"], "--json")
    assert code == 0, err
    assert "wording" not in json.loads(out)
    code, out, err = cli(capsys, "report", "--db", str(run["db"]), run["id"])
    assert code == 0 and "Per wording" not in out
    for fmt in ("latex", "csv"):
        code, out, err = cli(capsys, "report", "--db", str(run["db"]), run["id"], "--format", fmt)
        assert code == 0 and "no section with a" in err
        assert "wording" not in out
    assert build_axis(Store(run["db"]), run["id"], "wording") is None


def test_spread_when_the_key_is_the_only_one_varied() -> None:
    """One rest (nothing else varied): all of the spread is the key's; no spread: no share."""
    entry = _spread({"agent": "m", "mechanism": "none", "matchup": "self",
                     "rests": [{"ours": 0.2, "mine": 0.6}]})
    assert entry["share"] == 1.0 and entry["main_share"] == pytest.approx(1.0)
    assert entry["key_points"] == pytest.approx(40.0) and entry["other_points"] is None
    assert spread_line("wording", entry) == ("m · none · self: wording is the only key varied, so all "
                                             "of the spread between its 2 conditions is due to it "
                                             "(40.0 points)")
    flat = _spread({"agent": "m", "mechanism": None, "matchup": None,
                    "rests": [{"ours": 0.5, "mine": 0.5}, {"ours": 0.5}]})
    assert flat["share"] is None and "nothing to share out" in spread_line("wording", flat)


def test_by_game_on_repeated_strategy_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key that is also a column (the game), repeated matches (Welch over matches): two
    always-cooperating agents earn the mutual-cooperation payoff of each game per round."""
    db = tmp_path / "games.db"
    run_id = run_sweep({"name": "games", "seed": 3, "samples": 3,
                        "agents": {"c": {"strategy": "always_cooperate"}},
                        "experiments": [{"game": ["prisoners", "stag_hunt"], "mechanism": "repetition",
                                         "rounds": 4, "matchup": "self", "agents": ["c"]}]}, db)
    code, out, err = cli(capsys, "compare", run_id, "--by", "game", "--db", str(db), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["values"] == ["prisoners", "stag_hunt"]
    (row,) = result["rows"]
    assert row["game"] is None and "game" not in row["condition"]
    assert row["cooperation"]["test"] == "welch" and row["cooperation"]["difference"] == 0.0
    payoff = row["payoff"]
    assert payoff["a"]["n"] == payoff["b"]["n"] == 3
    store = Store(db)
    pay = dict(store.db.execute(
        "select m.game, avg(s.payoff) from seats s join matches m on m.id = s.match_id "
        "where m.run_id = ? group by m.game", [run_id]).fetchall())
    store.close()
    assert payoff["difference"] == pytest.approx(pay["stag_hunt"] - pay["prisoners"])
    assert payoff["difference"] != 0 and payoff["note"] == "no variation within either run"


async def test_the_analysis_screen_shows_the_wording_panel(run: dict[str, Any]) -> None:
    """The section's panel is mounted from the same render as the text report."""
    from textual.widgets import Static

    from tests.analysis_screen import loaded_analysis

    async with loaded_analysis(run["worded"], run["id"]) as screen:
        panel = screen.query_one("#an-section-wording")
        assert panel.border_title == "Per wording: differences and the share of the spread"
        assert panel.query(Static)
