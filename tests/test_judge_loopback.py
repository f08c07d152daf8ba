"""Reasoning judges end to end against the loopback server, through the real CLI.

A run of four play decisions is made by two loopback "players" whose answers carry a
marker (TEXT-0 .. TEXT-3) and a known cooperation mass; two loopback "judges" answer
from the marker with scripted confidences. Every figure of the ``judgements`` section —
category frequencies per agent, cooperation given each category, Cohen's kappa between
the judges — is compared with values worked out by hand below.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

# marker -> (player, cooperation mass in percent)
PLAYS = {0: ("alpha", 100), 1: ("alpha", 50), 2: ("beta", 0), 3: ("beta", 20)}
LOW = 0.1
# marker -> confidences (categories not named get LOW: absent)
JUDGE_A = {
    0: {"reciprocity": 0.9, "trust_evaluation": 0.8},
    1: {"reciprocity": 0.6, "individual_utility": 0.7},
    2: {"individual_utility": 0.95},
    3: {"individual_utility": 0.5, "risk_aversion": 0.3},
}
JUDGE_B = {
    0: {"reciprocity": 0.7, "trust_evaluation": 0.2},
    1: {"reciprocity": 0.4, "individual_utility": 0.9},
    2: {"individual_utility": 0.8, "risk_aversion": 0.6},
    3: {"individual_utility": 0.2, "risk_aversion": 0.7},
}
MARKER = re.compile(r"TEXT-(\d)")


def category_ids() -> tuple[str, ...]:
    from coop_tui.judging.rubric import load_rubric

    return load_rubric("justifications").ids


class Script:
    """The loopback server's answers: players by model name, judges by marker."""

    def __init__(self) -> None:
        self.played: dict[str, int] = {"alpha": 0, "beta": 0}
        self.judged: list[tuple[str, int]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        model = body.get("model", "")
        if model in self.played:
            marker = [k for k, (who, _) in PLAYS.items() if who == model][self.played[model] % 2]
            self.played[model] += 1
            coop = PLAYS[marker][1]
            return (f"TEXT-{marker}: I weigh what the other player did.\n"
                    f'{{"A0": {coop}, "A1": {100 - coop}}}')
        marker = int(MARKER.search(body["messages"][0]["content"]).group(1))
        self.judged.append((model, marker))
        table = JUDGE_A if model == "judge-a" else JUDGE_B
        if model == "judge-a" and marker == 2 and len(body["messages"]) == 1:
            return '{"individual_utility": 95}'  # a percentage: refused, then re-asked
        answer = {cid: table[marker].get(cid, LOW) for cid in category_ids()}
        return "Here is my reading.\n" + json.dumps(answer)


def write_sweep(path: Path, url: str) -> Path:
    path.write_text(f"""
name = "judged"
seed = 5
concurrency = 1

[agents.alpha]
model = "openai/alpha"
api_base = "{url}"
style = "cot"

[agents.beta]
model = "openai/beta"
api_base = "{url}"
style = "cot"

[agents.cheap]
model = "openai/judge-a"
api_base = "{url}"

[agents.dear]
model = "openai/judge-b"
api_base = "{url}"

[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = "self"
agents = ["alpha", "beta"]
""")
    return path


def cli(*args: str, wait: bool = True) -> Any:
    if args[:1] == ("judge",) and "justifications" in args and "--protocol" not in args:
        # the machinery below is checked under the per-category protocol (one confidence
        # per category, every decision with text); the coopeval protocol has its own test
        args = (*args, "--protocol", "per-category")
    cmd = [sys.executable, "-m", "coop_tui.cli", *args]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Script, LoopbackServer]]:
    """A run of four play decisions, judged by 'cheap' (judge-a) and then 'dear' (judge-b)."""
    tmp = tmp_path_factory.mktemp("judge")
    script = Script()
    with LoopbackServer(latency=0.01, chunks=2, answer=script) as server:
        sweep = write_sweep(tmp / "sweep.toml", server.url)
        db = tmp / "j.db"
        made = cli("--batch", str(sweep), "--db", str(db))
        assert made.returncode == 0, made.stdout + made.stderr
        for judge in ("cheap", "dear"):
            done = cli("judge", "--judge", judge, "--agents", str(sweep), "--rubric",
                       "justifications", "--db", str(db))
            assert done.returncode == 0, done.stdout + done.stderr
        yield db, sweep, script, server


@pytest.mark.slow
def test_every_play_decision_is_judged_once_by_each_judge_and_linked(judged: Any) -> None:
    db, _sweep, script, _server = judged
    plays = rows(db, "select id, response from decisions where phase = 'play'")
    assert len(plays) == 4 and {int(MARKER.search(r).group(1)) for _, r in plays} == {0, 1, 2, 3}
    links = rows(db, """select j.judge, j.judged_decision_id, j.valid, d.phase, d.kind, d.valid,
                              j.rubric, j.rubric_version, r.kind, r.spec
                       from judgements j join decisions d on d.id = j.judge_decision_id
                       join matches m on m.id = d.match_id join runs r on r.id = m.run_id""")
    assert len(links) == 8
    for judge, _judged, valid, phase, kind, dvalid, rubric, version, rkind, spec in links:
        assert (valid, phase, kind, dvalid, rubric, version, rkind) == (
            1, "judge", "judgement", 1, "justifications", "2", "judge")
        assert json.loads(spec)["judge"] == judge
    for judge in ("cheap", "dear"):
        judged_ids = sorted(r[1] for r in links if r[0] == judge)
        assert judged_ids == sorted(pid for pid, _ in plays)
    # the judge read the text it judged: its request carries that decision's marker
    pairs = rows(db, """select p.response, t.text from judgements j
                        join decisions p on p.id = j.judged_decision_id
                        join decisions d on d.id = j.judge_decision_id
                        join texts t on t.hash = d.prompt_hash""")
    for response, prompt in pairs:
        assert MARKER.search(response).group(0) in prompt
    # 4 decisions x 2 judges, plus one re-ask of judge-a's malformed answer
    assert sorted(script.judged) == sorted(
        [("judge-a", m) for m in range(4)] + [("judge-a", 2)] + [("judge-b", m) for m in range(4)])


def test_a_malformed_judge_answer_is_reasked_and_recorded(judged: Any) -> None:
    db = judged[0]
    (attempts, retries, parsed), = rows(
        db, """select d.attempts, d.retries, d.parsed from judgements j
               join decisions d on d.id = j.judge_decision_id
               join decisions p on p.id = j.judged_decision_id
               where j.judge = 'cheap' and p.response like 'TEXT-2%'""")
    assert attempts == 2
    rejected = json.loads(retries)
    assert len(rejected) == 1 and "from 0 to 1" in rejected[0]["error"]
    assert '"individual_utility": 95' in rejected[0]["response"]
    assert json.loads(parsed)["individual_utility"] == 0.95


def test_report_figures_equal_hand_computed_values(judged: Any) -> None:
    db = judged[0]
    report = cli("report", "judged", "--db", str(db), "--json")
    assert report.returncode == 0, report.stderr
    section = json.loads(report.stdout)["judgements"]
    assert [(j["judge"], j["judged"], j["valid"]) for j in section["judges"]] == [
        ("cheap", 4, 4), ("dear", 4, 4)]

    freq = {(r["judge"], r["agent"]): r for r in section["frequencies"]}
    assert {(r["mechanism"], r["game"], r["n"]) for r in freq.values()} == {("none", "prisoners", 2)}
    # threshold 0.5: judge A sees reciprocity in TEXT-0 and TEXT-1 (alpha), trust in TEXT-0,
    # individual utility in TEXT-1, TEXT-2 and TEXT-3 (0.5 counts); judge B sees
    # reciprocity in TEXT-0, individual utility in TEXT-1 and TEXT-2, risk in TEXT-2, TEXT-3
    expected = {
        ("cheap", "alpha"): {"Reciprocity": 1.0, "Trust evaluation": 0.5, "Individual utility maximization": 0.5,
                             "Risk aversion": 0.0},
        ("cheap", "beta"): {"Reciprocity": 0.0, "Trust evaluation": 0.0, "Individual utility maximization": 1.0,
                            "Risk aversion": 0.0},
        ("dear", "alpha"): {"Reciprocity": 0.5, "Trust evaluation": 0.0, "Individual utility maximization": 0.5,
                            "Risk aversion": 0.0},
        ("dear", "beta"): {"Reciprocity": 0.0, "Trust evaluation": 0.0, "Individual utility maximization": 0.5,
                           "Risk aversion": 1.0},
    }
    for key, cats in expected.items():
        for name, value in cats.items():
            assert freq[key]["categories"][name] == pytest.approx(value), (key, name)
        assert len(freq[key]["categories"]) == 16
        assert freq[key]["categories"]["Social welfare maximization"] == 0.0

    coop = {(r["judge"], r["category"]): r for r in section["cooperation_given_category"]}
    # stated cooperation: TEXT-0 1.0, TEXT-1 0.5, TEXT-2 0.0, TEXT-3 0.2
    assert coop[("cheap", None)]["n"] == 4
    assert coop[("cheap", None)]["coop_rate"] == pytest.approx((1.0 + 0.5 + 0.0 + 0.2) / 4)
    assert coop[("cheap", "Reciprocity")]["coop_rate"] == pytest.approx(0.75)
    assert coop[("cheap", "Trust evaluation")]["coop_rate"] == pytest.approx(1.0)
    assert coop[("cheap", "Individual utility maximization")]["n"] == 3
    assert coop[("cheap", "Individual utility maximization")]["coop_rate"] == pytest.approx(0.7 / 3)
    assert coop[("dear", "Risk aversion")]["coop_rate"] == pytest.approx(0.1)
    assert coop[("dear", "Reciprocity")]["coop_rate"] == pytest.approx(1.0)
    assert ("dear", "Trust evaluation") not in coop
    # sampled actions: the share of cooperative draws among the same decisions
    drawn = dict(rows(db, "select substr(response, 1, 6), cooperated from decisions where phase = 'play'"))
    assert coop[("cheap", "Reciprocity")]["sampled_coop_rate"] == pytest.approx(
        (drawn["TEXT-0"] + drawn["TEXT-1"]) / 2)

    (agreement,) = section["agreement"]
    assert agreement["judges"] == ["cheap", "dear"] and agreement["n"] == 4
    kappa = agreement["kappa"]
    # reciprocity A=[1,1,0,0] B=[1,0,0,0]: po 3/4, pe .5*.25+.5*.75 = .5 -> .5
    assert kappa["Reciprocity"] == pytest.approx(0.5)
    # individual utility A=[0,1,1,1] B=[0,1,1,0]: po 3/4, pe .75*.5+.25*.5 = .5 -> .5
    assert kappa["Individual utility maximization"] == pytest.approx(0.5)
    # trust A=[1,0,0,0] B=[0,0,0,0]: po 3/4, pe .75 -> 0; risk A=[0,0,0,0] B=[0,0,1,1] -> 0
    assert kappa["Trust evaluation"] == pytest.approx(0.0)
    assert kappa["Risk aversion"] == pytest.approx(0.0)
    # both judges constant and equal: chance agreement is total, kappa undefined
    assert kappa["Social welfare maximization"] is None
    assert agreement["agreement"]["Social welfare maximization"] == 1.0

    text = cli("report", "judged", "--db", str(db))
    assert "Reasoning judgements" in text.stdout and "agreement cheap vs dear" in text.stdout


def test_pooled_frequency_tables_per_mechanism_model_and_game(judged: Any) -> None:
    """The reasoning taxonomy's pooled tables (CoopEval's paper): per mechanism, per model
    x mechanism and per game x mechanism, each pool's share weighted by its decisions;
    found by the section registry and printed."""
    db = judged[0]
    report = cli("report", "judged", "--db", str(db), "--json")
    assert report.returncode == 0, report.stderr
    taxonomy = json.loads(report.stdout)["taxonomy"]
    cheap = next(p for p in taxonomy["passes"] if p["judge"] == "cheap")
    (mech,) = cheap["by_mechanism"]
    assert (mech["mechanism"], mech["n"]) == ("none", 4)
    # alpha (2 decisions): reciprocity 1.0, utility 0.5; beta (2): reciprocity 0, utility 1.0
    assert mech["categories"]["Reciprocity"] == pytest.approx(0.5)
    assert mech["categories"]["Individual utility maximization"] == pytest.approx(0.75)
    assert mech["categories"]["Trust evaluation"] == pytest.approx(0.25)
    models = {r["agent"]: r for r in cheap["by_model_mechanism"]}
    assert set(models) == {"alpha", "beta"} and models["alpha"]["categories"]["Reciprocity"] == 1.0
    (game,) = cheap["by_game_mechanism"]
    assert (game["game"], game["mechanism"], game["n"]) == ("prisoners", "none", 4)
    assert game["categories"] == mech["categories"]
    printed = cli("report", "judged", "--db", str(db))
    for what in ("mechanism", "model × mechanism", "game × mechanism"):
        assert re.search(rf"justifications by cheap, per {what} *\n", printed.stdout)


def test_taxonomy_figures_2_and_4_to_7_from_a_judged_run(judged: Any, tmp_path: Path) -> None:
    """``coop-tui figures`` on a judged run draws the CoopEval paper's taxonomy figures per
    judge: the bars (Figures 2 and 4) and heat maps (5-7) are the taxonomy section's shares."""
    pytest.importorskip("matplotlib", reason="the figures extra (matplotlib) is not installed")
    from coop_tui.figures import figures_for

    db = judged[0]
    out = tmp_path / "figs"
    done = cli("figures", "judged", "--db", str(db), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    names = {p.stem for p in out.iterdir()}
    for judge in ("cheap", "dear"):
        assert {f"taxonomy_fig2_by_model_{judge}", f"taxonomy_fig4_profile_{judge}",
                f"taxonomy_fig5_heatmap_{judge}", f"taxonomy_fig6_heatmap_per-model_{judge}",
                f"taxonomy_fig7_heatmap_per-game_{judge}"} <= names
    report = json.loads(cli("report", "judged", "--db", str(db), "--json").stdout)
    drawn = {d.name: d.figure for d in figures_for(report)}
    cheap = next(p for p in report["taxonomy"]["passes"] if p["judge"] == "cheap")
    bars = {p.get_gid(): p.get_height() for ax in drawn["taxonomy_fig2_by_model_cheap"].axes
            for p in ax.patches if p.get_gid()}
    assert bars and all(
        height == pytest.approx(100 * next(r for r in cheap["by_model_mechanism"]
                                           if r["agent"] == gid.split("|")[0])["categories"][gid.split("|")[2]])
        for gid, height in bars.items())
    assert bars["alpha|none|Reciprocity"] == pytest.approx(100.0)
    profile = {p.get_gid(): p.get_height() for p in drawn["taxonomy_fig4_profile_cheap"].axes[0].patches}
    assert profile["all|none|Individual utility maximization"] == pytest.approx(75.0)
    (mech,) = cheap["by_mechanism"]
    image = drawn["taxonomy_fig5_heatmap_cheap"].axes[0].images[0].get_array()
    assert [float(v) for v in image[:, 0]] == pytest.approx([100 * v for v in mech["categories"].values()])
    per_model = [ax for ax in drawn["taxonomy_fig6_heatmap_per-model_cheap"].axes if ax.images]
    assert [ax.get_title() for ax in per_model] == ["alpha", "beta"]


def test_a_rerun_asks_nothing_and_relinks_a_judgement_stored_before_a_kill(judged: Any,
                                                                           tmp_path: Path) -> None:
    db, sweep, script, _server = judged
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    before = len(script.judged)
    again = cli("judge", "--judge", "cheap", "--agents", str(sweep), "--rubric", "justifications",
                "--db", str(copy), "--resume")
    assert again.returncode == 0, again.stderr
    assert "nothing to ask" in again.stdout
    # a kill after the decision was stored but before its link: the rerun links it for free
    conn = sqlite3.connect(copy)
    with conn:
        conn.execute("delete from judgements where judge = 'cheap' and judged_decision_id ="
                     " (select min(judged_decision_id) from judgements)")
    conn.close()
    relinked = cli("judge", "--judge", "cheap", "--agents", str(sweep), "--rubric",
                   "justifications", "--db", str(copy))
    assert relinked.returncode == 0, relinked.stderr
    assert "reused 1" in relinked.stdout
    assert len(script.judged) == before
    assert rows(copy, "select count(*) from judgements where judge = 'cheap' and valid = 1") == [(4,)]
    assert rows(copy, "select count(*) from decisions where phase = 'judge'") == \
        rows(db, "select count(*) from decisions where phase = 'judge'")


@pytest.mark.slow
def test_kill_9_then_resume_asks_only_what_was_not_stored(tmp_path: Path) -> None:
    script = Script()
    with LoopbackServer(latency=0.01, chunks=2, answer=script) as server:
        sweep = write_sweep(tmp_path / "sweep.toml", server.url)
        db = tmp_path / "k.db"
        assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
        server.configure(latency=0.6)
        proc = cli("judge", "--judge", "dear", "--agents", str(sweep), "--rubric",
                   "justifications", "--db", str(db), "--concurrency", "1", wait=False)
        deadline = time.monotonic() + 60
        stored: list[tuple[Any, ...]] = []
        while time.monotonic() < deadline and not stored:
            time.sleep(0.1)
            with contextlib.suppress(sqlite3.OperationalError):  # created by the judge
                stored = rows(db, "select response from decisions where phase = 'judge'")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert stored, "the judge stored nothing before the kill"
        asked_before = [m for model, m in script.judged if model == "judge-b"]
        kept = {int(MARKER.search(t).group(1)) for (t,) in rows(
            db, """select t.text from decisions d join texts t on t.hash = d.prompt_hash
                   where d.phase = 'judge'""")}
        server.configure(latency=0.01)
        resumed = cli("judge", "--judge", "dear", "--agents", str(sweep), "--rubric",
                      "justifications", "--db", str(db), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        asked_after = [m for model, m in script.judged if model == "judge-b"][len(asked_before):]
    assert not kept & set(asked_after), "a judgement stored before the kill was asked again"
    assert sorted(kept | set(asked_after)) == [0, 1, 2, 3]
    assert rows(db, "select count(*), count(distinct judged_decision_id) from judgements") == [(4, 4)]
    assert rows(db, "select count(*) from decisions where phase = 'judge'") == [(4,)]


async def test_analysis_screen_and_inspector_show_the_judgements(judged: Any, tmp_path: Path) -> None:
    from rich.console import Console
    from textual.widgets import Static

    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen
    from coop_tui.screens.inspector import InspectorScreen

    db = tmp_path / "screen.db"
    shutil.copy(judged[0], db)
    run_id = rows(db, "select id from runs where name = 'judged'")[0][0]
    play_id = rows(db, "select id from decisions where phase = 'play' and response like 'TEXT-0%'")[0][0]

    class App(CoopApp):
        def __init__(self, make: Any) -> None:
            super().__init__(db, replay_speed=0)
            self.make = make

        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(self.make(self.store))

    def shown(widget: Any) -> str:
        console = Console(width=220, record=True, color_system=None)
        console.print(widget.content)
        return console.export_text()

    async def until(pilot: Any, condition: Any) -> None:
        deadline = time.monotonic() + 20
        while not condition():
            assert time.monotonic() < deadline, "the screen never got there"
            await pilot.pause(0.02)

    app = App(lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        await pilot.pause()
        panel = screen.query_one("#an-section-judgements")
        assert panel.border_title == "Reasoning judgements"
        heat = shown(panel.query_one(Static))
        assert "justifications v2 by cheap" in heat and "Reciprocity" in heat
        assert "100%" in heat and "agreement cheap vs dear" in heat

    app = App(lambda s: InspectorScreen(s, play_id))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.target is not None)
        await pilot.pause()
        assert [j["judge"] for j in screen.judgements] == ["cheap", "dear"]
        details = shown(screen.query_one("#insp-details", Static))
        assert "Judgements (2)" in details
        assert "Reciprocity 0.90" in details and "Trust evaluation 0.80" in details
        assert "Judged text" in details and "TEXT-0: I weigh" in details


SAMPLES = Path(__file__).parent / "data" / "coopeval_sample"


@pytest.mark.slow
def test_an_imported_coopeval_run_is_judged_from_its_stored_responses(tmp_path: Path) -> None:
    """CoopEval's records keep each model's full response: every play decision is judged
    once, by agent as CoopEval labels them, with both built-in rubrics side by side."""
    from coop_tui.judging.rubric import load_rubric

    source = SAMPLES / "no_mechanism_prisoners_dilemma"
    db = tmp_path / "ce.db"
    imported = cli("import", "coopeval", str(source), "--db", str(db))
    assert imported.returncode == 0, imported.stderr
    seen: list[str] = []

    def judge(body: dict[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        seen.append(prompt)
        rubric = "similarity-reasoning" if "similarity information" in prompt else "justifications"
        ids = load_rubric(rubric).ids
        # "dominant" in the judged text -> the first category, else none
        judged = prompt[prompt.index("=== BEGIN TEXT ===\n") + 19:prompt.rindex("\n=== END TEXT ===")]
        first = 0.9 if "dominant" in judged.lower() else 0.0
        return json.dumps({cid: first if i == 0 else 0.0 for i, cid in enumerate(ids)})

    with LoopbackServer(latency=0.0, chunks=1, answer=judge) as server:
        agents = tmp_path / "agents.toml"
        agents.write_text(f'[agents.j]\nmodel = "openai/j"\napi_base = "{server.url}"\n')
        for rubric in ("justifications", "similarity-reasoning"):
            done = cli("judge", "--judge", "j", "--agents", str(agents), "--rubric", rubric,
                       "--db", str(db), "--concurrency", "8")
            assert done.returncode == 0, done.stdout + done.stderr
    plays = rows(db, """select d.id, d.agent, d.response from decisions d
                        join matches m on m.id = d.match_id join runs r on r.id = m.run_id
                        where r.kind = 'import' and d.phase = 'play'""")
    assert plays and all(text for _, _, text in plays)
    for rubric in ("justifications", "similarity-reasoning"):
        linked = rows(db, "select judged_decision_id from judgements where rubric = ? and valid = 1",
                      (rubric,))
        assert sorted(r[0] for r in linked) == sorted(p[0] for p in plays)
    # identical texts are asked once: requests = distinct judged prompts of both passes
    assert len(seen) == len(set(seen)) <= 2 * len(plays)

    report = json.loads(cli("report", "--db", str(db), "--json", rows(
        db, "select id from runs where kind = 'import'")[0][0]).stdout)["judgements"]
    freq = {(r["rubric"], r["agent"]): r for r in report["frequencies"]}
    agents_seen = {a for _, a, _ in plays}
    assert {a for _, a in freq} == agents_seen
    for agent in agents_seen:
        texts = [t for _, a, t in plays if a == agent]
        expected = sum("dominant" in t.lower() for t in texts) / len(texts)
        row = freq[("justifications", agent)]
        assert row["mechanism"] == "none" and row["game"] == "prisoners"
        assert row["categories"]["Individual utility maximization"] == pytest.approx(expected)
        assert freq[("similarity-reasoning", agent)]["categories"]["Causal"] == pytest.approx(expected)
    assert report["agreement"] == []  # different rubrics are never compared


@pytest.mark.slow
def test_a_budget_stops_the_pass_and_a_rerun_asks_only_the_rest(tmp_path: Path) -> None:
    """A judge with a known price (gpt-4o-mini's, from litellm's offline map) served by the
    loopback server: the first paid judgement exhausts a tiny budget."""
    script = Script()
    with LoopbackServer(latency=0.01, chunks=2, answer=script) as server:
        sweep = write_sweep(tmp_path / "sweep.toml", server.url)
        db = tmp_path / "b.db"
        assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
        agents = tmp_path / "judge.toml"
        agents.write_text(f'[agents.priced]\nmodel = "openai/gpt-4o-mini"\napi_base = "{server.url}"\n')

        def answer(body: dict[str, Any]) -> str:
            marker = int(MARKER.search(body["messages"][0]["content"]).group(1))
            return json.dumps({cid: JUDGE_B[marker].get(cid, LOW) for cid in category_ids()})

        server.configure(answer=answer)
        args = ("judge", "--judge", "priced", "--agents", str(agents), "--rubric",
                "justifications", "--db", str(db), "--concurrency", "1")
        dry = cli(*args, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert re.search(r"~\$0\.0\d*[1-9]", dry.stdout.replace("\n", " ")), dry.stdout
        stopped = cli(*args, "--budget", "0.0000001")
        assert stopped.returncode == 0, stopped.stderr
        assert "budget of $1e-07 reached" in stopped.stdout.replace("\n", " ")
        assert len(server.chat_requests) == 1  # one judgement (configure reset the log)
        assert rows(db, "select status from runs where kind = 'judge'") == [("stopped",)]
        assert rows(db, "select count(*), sum(cost_usd > 0) from decisions where phase = 'judge'") == [(1, 1)]
        rest = cli(*args)
        assert rest.returncode == 0, rest.stderr
        assert len(server.chat_requests) == 4
    assert rows(db, "select status from runs where kind = 'judge'") == [("done",)]
    assert rows(db, "select count(distinct judged_decision_id) from judgements where valid = 1") == [(4,)]


def test_the_present_mask_migration_fills_judgements_stored_before_it(judged: Any,
                                                                      tmp_path: Path) -> None:
    from coop_tui.store import Store

    db = tmp_path / "old.db"
    shutil.copy(judged[0], db)
    written = rows(db, "select judge_run_id, judged_decision_id, present_mask from judgements"
                       " order by 1, 2")
    assert {m for _, _, m in written} - {0}, "no judgement has a category present"
    conn = sqlite3.connect(db)
    with conn:  # as a database written before m071: no mask yet
        conn.execute("update judgements set present_mask = null")
        conn.execute("delete from _migrations where name = 'm071_judge_present_mask'")
    conn.close()
    Store(db).close()
    assert rows(db, "select judge_run_id, judged_decision_id, present_mask from judgements"
                    " order by 1, 2") == written


@pytest.mark.slow
def test_a_judgement_the_provider_refuses_is_counted_and_a_rerun_asks_only_it(tmp_path: Path) -> None:
    script = Script()
    with LoopbackServer(latency=0.01, chunks=2, answer=script) as server:
        sweep = write_sweep(tmp_path / "sweep.toml", server.url)
        db = tmp_path / "f.db"
        assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
        server.configure(fault_script=["401"])  # the first judge request is refused
        args = ("judge", "--judge", "dear", "--agents", str(sweep), "--rubric", "justifications",
                "--db", str(db), "--concurrency", "1")
        first = cli(*args)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "failed 1" in first.stdout and "HTTP 401" in first.stdout.replace("\n", " ")
        assert rows(db, "select status from runs where kind = 'judge'") == [("failed",)]
        assert rows(db, "select count(*) from judgements") == [(3,)]
        asked = len(script.judged)
        again = cli(*args)
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(script.judged) == asked + 1
    assert rows(db, "select status from runs where kind = 'judge'") == [("done",)]
    assert rows(db, "select count(*), sum(valid) from judgements") == [(4, 4)]
