"""Grounded similarity end to end over real HTTP (the loopback server): the benchmark
stage, the judgement stage that reads it, stage validation, the matrices in the report,
judges never reading their own answers, and kill -9 + --resume asking nothing twice."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coop_tui.grounded.domains import SIMILARITY_LEVELS
from coop_tui.mechanisms.benchmark import BenchmarkParams, selected_items
from coop_tui.spec import SpecError, build_sweep
from coop_tui.testing.server import LoopbackServer

_counter = itertools.count(1)
_lock = threading.Lock()


def scripted(body: dict[str, Any]) -> str:
    """A 'model' per name: loopback picks the first option, loopback2 the last; every
    reply carries a unique marker so a test can tell whose answer a judge was shown."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    second = body.get("model", "").endswith("2")
    with _lock:
        marker = f"marker-{body.get('model')}-{next(_counter)}"
    if "SIMILARITY SCORE" in prompt:
        return f"They reason a lot like me ({marker}).\nSIMILARITY SCORE: {'64.5' if second else '80'}"
    if '"choice"' in prompt:
        letters = re.findall(r"^([A-Z])\) ", prompt, re.M)
        pick = letters[-1] if second else letters[0]
        return f"I weigh it up ({marker}).\n{{\"choice\": \"{pick}\"}}"
    if '"rating"' in prompt:
        return f"Hmm ({marker}).\n{{\"rating\": {2 if second else 4}}}"
    if "comma-separated" in prompt:
        return f"3, 1, 4 ({marker})"
    return f"Thinking ({marker}).\n{{\"A0\": {30 if second else 70}, \"A1\": {70 if second else 30}}}"


SWEEP = """
name = "grounded"
seed = 5
concurrency = {concurrency}

[agents.a]
model = "openai/loopback"
api_base = "{url}"
api_key = "sk-test"

[agents.b]
model = "openai/loopback2"
api_base = "{url}"
api_key = "sk-test"

[[experiments]]
name = "administer"
game = "prisoners"
mechanism = "benchmark"
benchmark = ["demo_choices", "demo_ratings", "die"]
agents = ["a", "b"]
samples = 2
shuffle_options = false   # the scripted models pick by position (shuffling: its own test)

[[experiments]]
name = "judge"
game = "prisoners"
mechanism = "score"
matchup = "cross"
benchmark = "demo_choices"
view = ["decision", "explanation"]
agents = ["a", "b"]

[[experiments]]
name = "play"
game = "prisoners"
mechanism = "similarity"
matchup = "cross"
similarity_source = ["exogenous:demo_choices", "endogenous:demo_choices:decision"]
agents = ["a", "b"]
"""
# administration: 2 agents x 2 runs x (5 choices + 4 ratings + 1 die request);
# judgement: 4 judge/target pairs x 2 views; play: 4 seatings x 2 sources x 2 seats
STAGE_1, STAGE_2, STAGE_3 = 2 * 2 * (5 + 4 + 1), 4 * 2, 4 * 2 * 2
EXPECTED = STAGE_1 + STAGE_2 + STAGE_3


def write(tmp: Path, url: str, concurrency: int = 4) -> Path:
    path = tmp / "grounded.toml"
    path.write_text(SWEEP.format(url=url, concurrency=concurrency))
    return path


def cli(*args: str, wait: bool = True) -> Any:
    cmd = [sys.executable, "-m", "coop_tui.cli", *args]
    if not wait:
        return subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=300)


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def chat(server: LoopbackServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


@pytest.mark.slow
def test_stages_run_in_order_and_the_report_carries_both_matrices(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, answer=scripted) as srv:
        sweep = write(tmp_path, srv.url)
        db = tmp_path / "g.db"
        first = cli("--batch", str(sweep), "--db", str(db))
        assert first.returncode == 0, first.stderr + first.stdout
        assert chat(srv) == EXPECTED
        again = cli("--batch", str(sweep), "--db", str(db), "--resume")
        assert again.returncode == 0, again.stderr
        assert chat(srv) == EXPECTED  # a finished pipeline asks nothing again
        report = cli("report", "--db", str(db), "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    # every judgement started after the last benchmark answer was stored
    (last_item,) = rows(db, "select max(created_at) from decisions where phase = 'item'")[0]
    (first_score,) = rows(db, "select min(created_at) from decisions where phase = 'score'")[0]
    assert first_score > last_item
    exo = data["exogenous"]
    choices = exo["demo_choices"]["matrix"]
    assert choices["a"]["b"] == 0.0 and choices["a"]["a"] == 100.0  # first vs last option
    assert exo["demo_choices"]["metric"] == "agreement" and exo["demo_ratings"]["metric"] == "qwk"
    assert exo["demo_choices"]["runs"] == {"a": 2, "b": 2}
    die = exo["random_die_roll_alt"]["matrix"]
    assert 0 <= die["a"]["b"] <= 40  # external draws: chance-level, whatever the agents said
    # identical agents would still differ: the draws are per agent and run
    assert rows(db, "select count(distinct p.info) from phases p join matches m on m.id = p.match_id"
                    " where json_extract(m.condition, '$.benchmark') = 'random_die_roll_alt'")[0][0] == 4
    endo = data["endogenous"]["demo_choices"]
    assert endo["decision"]["matrix"]["a"]["b"] == 80.0
    assert endo["explanation"]["matrix"]["b"]["a"] == 64.5  # decimals kept, rows are judges
    assert data["baseline"]["random_die_roll_alt"]["paper_pct"] == 17.2
    assert abs(data["baseline"]["random_die_roll_alt"]["random_pct"] - 16.7) < 2.0
    raw = rows(db, "select response from decisions where phase = 'score'")
    assert all("SIMILARITY SCORE" in r[0] for r in raw)  # the raw reply is recorded
    (last_score,) = rows(db, "select max(created_at) from decisions where phase = 'score'")[0]
    (first_play,) = rows(db, "select min(created_at) from decisions where phase = 'play'")[0]
    assert first_play > last_score


def test_each_seat_is_told_its_own_agents_computed_score(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, answer=scripted) as srv:
        db = tmp_path / "p.db"
        assert cli("--batch", str(write(tmp_path, srv.url)), "--db", str(db)).returncode == 0
    told = rows(db, "select json_extract(m.condition, '$.similarity_source'), s.agent, o.agent, tx.text"
                    " from decisions d join matches m on m.id = d.match_id"
                    " join seats s on s.match_id = m.id and s.seat = d.seat"
                    " join seats o on o.match_id = m.id and o.seat = 1 - d.seat"
                    " join texts tx on tx.hash = d.prompt_hash where d.phase = 'play'")
    assert len(told) == STAGE_3
    for source, agent, other, prompt in told:
        if source.startswith("endogenous"):  # a judged b at 80, b judged a at 64.5: asymmetric
            expected = "80%" if agent == "a" else "64.5%"
        else:  # a picks first options, b last: 0% apart, 100% with itself across runs
            expected = "100%" if agent == other else "0%"
        assert f" {expected} similar" in prompt, (source, agent, other)


def test_a_judge_never_reads_its_own_answers(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, answer=scripted) as srv:
        db = tmp_path / "j.db"
        assert cli("--batch", str(write(tmp_path, srv.url)), "--db", str(db)).returncode == 0
    markers: dict[tuple[str, int], set[str]] = {}
    for agent, sample, response in rows(
        db, "select s.agent, m.sample, d.response from decisions d join matches m on m.id = d.match_id"
            " join seats s on s.match_id = m.id and s.seat = 0 where d.phase = 'item'"
            " and json_extract(m.condition, '$.benchmark') = 'demo_choices'"):
        markers.setdefault((agent, sample), set()).update(re.findall(r"marker-[\w-]+", response))
    judged = rows(db, "select j.agent, t.agent, tx.text, json_extract(m.condition, '$.view')"
                      " from decisions d join matches m on m.id = d.match_id"
                      " join seats j on j.match_id = m.id and j.seat = 0"
                      " join seats t on t.match_id = m.id and t.seat = 1"
                      " join texts tx on tx.hash = d.prompt_hash where d.phase = 'score'")
    assert len(judged) == 8
    for judge, target, prompt, view in judged:
        shown = set(re.findall(r"marker-[\w-]+", prompt))
        own = markers[(judge, 0)]  # the run that counts as the judge's own answers
        assert not shown & own, (judge, target)
        if view == "explanation":
            assert shown and shown <= markers[(target, 1 if judge == target else 0)]
            assert '"choice"' not in prompt  # answers redacted
        else:
            assert not shown  # decisions only: no reasoning at all
            assert "Their answer:" in prompt


@pytest.mark.slow
def test_kill_9_in_the_judgement_stage_then_resume_asks_nothing_twice(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.3, chunks=3, answer=scripted) as srv:
        sweep = write(tmp_path, srv.url, concurrency=2)
        db = tmp_path / "k.db"
        proc = cli("--batch", str(sweep), "--db", str(db), wait=False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if db.exists() and rows(db, "select count(*) from decisions where phase = 'score'")[0][0] >= 2:
                    break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stored = rows(db, "select count(*) from decisions")[0][0]
        assert STAGE_1 < stored < STAGE_1 + STAGE_2  # killed inside the second stage
        before = chat(srv)
        resumed = cli("--batch", str(sweep), "--db", str(db), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        asked_after = chat(srv) - before
    assert asked_after == EXPECTED - stored  # only what was missing was asked
    assert rows(db, "select count(*) from decisions")[0][0] == EXPECTED
    assert rows(db, "select count(distinct content_key) from decisions")[0][0] == EXPECTED
    assert rows(db, "select count(*) from runs")[0][0] == 1
    assert rows(db, "select count(*) from matches where status = 'done'")[0][0] == 2 * 2 * 3 + 8 + 8


# ----------------------------------------------------------------- validation
BASE = {"name": "v", "agents": {"a": {"strategy": "always_cooperate"}}}


def _exp(**fields: Any) -> dict[str, Any]:
    return {"game": "prisoners", "agents": ["a"], **fields}


@pytest.mark.parametrize(("experiments", "field", "words"), [
    ([_exp(mechanism="similarity", matchup="cross", similarity_source="exogenous:demo_choices")],
     "experiments[0].similarity_source", "administers benchmark 'demo_choices'"),
    ([_exp(mechanism="benchmark", benchmark="demo_choices"),
      _exp(mechanism="similarity", similarity_source="endogenous:demo_choices:both")],
     "experiments[1].similarity_source", "judges benchmark 'demo_choices' with view 'both'"),
    ([_exp(mechanism="similarity", similarity_source="exogenous")],
     "experiments[0].similarity_source", "endogenous:<benchmark>:<view>"),
    ([_exp(mechanism="score", matchup="cross", benchmark="demo_ratings")],
     "experiments[0].benchmark", "no experiment of this sweep administers"),
    ([_exp(mechanism="benchmark", benchmark="no_such_set")], "experiments[0].benchmark", "built-in domain"),
    ([_exp(mechanism="benchmark")], "experiments[0].benchmark", "is missing"),
    ([_exp(mechanism="benchmark", benchmark="die", matchup="cross")], "experiments[0].matchup", "alone"),
    ([_exp(mechanism="none", similarity_source="exogenous:die")], "experiments[0].similarity_source",
     "similarity"),
])
def test_stage_links_are_checked_before_anything_runs(experiments: list[dict[str, Any]], field: str,
                                                      words: str) -> None:
    with pytest.raises(SpecError) as err:
        build_sweep({**BASE, "experiments": experiments})
    assert err.value.field == field
    assert words in err.value.message


def test_a_stored_run_can_feed_a_later_sweep(tmp_path: Path) -> None:
    sweep = build_sweep({**BASE, "experiments": [
        _exp(mechanism="score", matchup="cross", benchmark="demo_ratings", source_run="20260101-000000-abcdef"),
    ]})
    assert [c.mechanism for c in sweep.cells] == ["score"]


def test_cli_exits_2_and_writes_nothing_for_a_broken_item_file(tmp_path: Path) -> None:
    items = tmp_path / "mine.jsonl"
    items.write_text('{"id": "q1", "prompt": "p", "kind": "likert", "scale": [1]}\n')
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "x"\n[agents.a]\nstrategy = "always_cooperate"\n[[experiments]]\n'
                     'game = "prisoners"\nmechanism = "benchmark"\nbenchmark = "mine.jsonl"\nagents = ["a"]\n')
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 2
    assert "mine.jsonl:1.scale" in result.stderr + result.stdout
    assert not db.exists()


async def test_matrices_appear_as_heat_tables_on_the_analysis_screen(tmp_path: Path) -> None:
    from rich.console import Console
    from textual.widgets import Static

    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen
    from coop_tui.spec import load_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    with LoopbackServer(latency=0.01, chunks=2, answer=scripted) as srv:
        sweep = load_sweep(write(tmp_path, srv.url))
        store = Store(tmp_path / "ui.db")
        summary = await run_sweep(sweep, store)
        store.close()
    assert summary.status == "done"

    class App(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(AnalysisScreen(self.store, summary.run_id, export_dir=tmp_path / "out"))

    def shown(widget: Any) -> str:
        console = Console(width=200, record=True, color_system=None)
        console.print(widget.content)
        return console.export_text()

    app = App(tmp_path / "ui.db", replay_speed=0)
    async with app.run_test(size=(160, 60)) as pilot:
        deadline = time.monotonic() + 30
        while not app.screen.query("#an-section-endogenous") and time.monotonic() < deadline:
            await pilot.pause(0.05)
        exo = app.screen.query_one("#an-section-exogenous")
        endo = app.screen.query_one("#an-section-endogenous")
        assert exo.border_title.startswith("Exogenous similarity")
        text = "".join(shown(s) for s in exo.query(Static))
        assert "demo_choices" in text and "100.0" in text
        assert "judge" in "".join(shown(s) for s in endo.query(Static))
        assert app.screen.query("#an-section-baseline")


async def test_a_later_sweep_plays_under_scores_of_a_stored_run(tmp_path: Path) -> None:
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    with LoopbackServer(latency=0.01, chunks=2, answer=scripted) as srv:
        agents = {"a": {"model": "openai/loopback", "api_base": srv.url, "api_key": "sk-test"},
                  "b": {"model": "openai/loopback2", "api_base": srv.url, "api_key": "sk-test"}}
        store = Store(tmp_path / "two.db")
        first = await run_sweep(build_sweep({"name": "measure", "agents": agents, "experiments": [
            {"game": "prisoners", "mechanism": "benchmark", "benchmark": "demo_choices", "agents": ["a", "b"]},
            {"game": "prisoners", "mechanism": "score", "matchup": [["a", "b"], ["b", "a"]],
             "benchmark": "demo_choices", "view": "both", "agents": ["a", "b"]},
        ]}), store)
        assert first.status == "done"
        second = await run_sweep(build_sweep({"name": "play", "agents": agents, "experiments": [
            {"game": "prisoners", "mechanism": "similarity", "matchup": [["a", "b"]], "agents": ["a", "b"],
             "similarity_source": "endogenous:demo_choices:both", "source_run": first.run_id},
        ]}), store)
        assert second.status == "done", second.failures
        told = store.db.execute(
            "select json_extract(condition, '$.similarity_scores') from matches where run_id = ?",
            [second.run_id]).fetchone()[0]
        store.close()
    assert json.loads(told) == {"a": {"b": 80.0}, "b": {"a": 64.5}}


SHUFFLE_SWEEP = """
name = "shuffled"
seed = 7

[agents.first]
model = "openai/loopback"
api_base = "{url}"
api_key = "sk-test"

[agents.longest]
model = "openai/loopback-longest"
api_base = "{url}"
api_key = "sk-test"

[[experiments]]
game = "prisoners"
mechanism = "benchmark"
benchmark = "demo_choices"
agents = ["first", "longest"]
samples = 3
"""


def by_content_or_position(body: dict[str, Any]) -> str:
    """'longest' picks the option with the longest text wherever it is shown; the other
    model always picks the first option shown."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    shown = re.findall(r"^([A-Z])\) (.*)$", prompt, re.M)
    if body.get("model", "").endswith("longest"):
        pick = max(shown, key=lambda lt: len(lt[1]))[0]
    else:
        pick = shown[0][0]
    return f'{{"choice": "{pick}"}}'


def test_options_are_shuffled_and_answers_scored_under_the_stored_order(tmp_path: Path) -> None:
    """The paper shuffles multiple-choice options. Each (agent, run, item) shows its own
    seeded order, stored with the answer; the answer is recorded as the file's option,
    so an agent that answers by content agrees with itself across runs while one that
    answers by position does not."""
    from coop_tui.grounded.domains import load_benchmark

    items = {i.id: i for i in load_benchmark("demo_choices").items}
    with LoopbackServer(latency=0.0, chunks=1, answer=by_content_or_position) as srv:
        path = tmp_path / "s.toml"
        path.write_text(SHUFFLE_SWEEP.format(url=srv.url))
        db = tmp_path / "s.db"
        done = cli("--batch", str(path), "--db", str(db))
        assert done.returncode == 0, done.stderr
        report = json.loads(cli("report", "--db", str(db), "--json").stdout)
    shown = rows(db, "select s.agent, m.sample, p.info, tx.text from phases p"
                     " join matches m on m.id = p.match_id join seats s on s.match_id = m.id"
                     " join decisions d on d.match_id = m.id and d.round = p.round and d.phase = 'item'"
                     " join texts tx on tx.hash = d.prompt_hash where p.phase = 'item'")
    assert len(shown) == 2 * 3 * len(items)
    orders = set()
    for agent, _sample, info, prompt in shown:
        data = json.loads(info)
        item = items[data["item"]]
        order = data["order"]
        orders.add((data["item"], tuple(order)))
        listed = re.findall(r"^[A-Z]\) (.*)$", json.loads(prompt)[0]["content"], re.M)
        assert listed == [item.options[i] for i in order]  # the prompt shows the stored order
        answer = data["answers"][data["item"]]
        if agent == "longest":
            assert answer == max(range(len(item.options)), key=lambda i: len(item.options[i]))
        else:
            assert answer == order[0]  # position A, mapped back to the file's option
    assert len(orders) > len(items)  # orders differ between agents and runs
    exo = report["exogenous"]["demo_choices"]
    assert exo["run_agreement"]["longest"] == 100.0 and exo["run_agreement"]["first"] < 100.0
    assert exo["matrix"]["first"]["first"] == 100.0  # the paper's diagonal, whatever the runs


def test_self_play_is_told_100_by_default_and_run_agreement_under_runs(tmp_path: Path) -> None:
    """The paper's exogenous diagonal is 100% (an agent is identical to itself); the
    agreement of an agent's separate runs is the ``exogenous:<benchmark>:runs`` variant.
    Options are shuffled here, so 'a' (first option shown) disagrees with its other run."""
    text = SWEEP.format(url="{url}", concurrency=4).replace(
        'similarity_source = ["exogenous:demo_choices", "endogenous:demo_choices:decision"]',
        'similarity_source = ["exogenous:demo_choices", "exogenous:demo_choices:runs"]'
    ).replace("shuffle_options = false", "shuffle_options = true")
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted) as srv:
        path = tmp_path / "d.toml"
        path.write_text(text.replace("{url}", srv.url))
        db = tmp_path / "d.db"
        done = cli("--batch", str(path), "--db", str(db))
        assert done.returncode == 0, done.stderr
        report = json.loads(cli("report", "--db", str(db), "--json").stdout)
    agreement = report["exogenous"]["demo_choices"]["run_agreement"]["a"]
    assert agreement < 100.0
    told = rows(db, "select json_extract(m.condition, '$.similarity_source'), s.agent, o.agent, tx.text"
                    " from decisions d join matches m on m.id = d.match_id"
                    " join seats s on s.match_id = m.id and s.seat = d.seat"
                    " join seats o on o.match_id = m.id and o.seat = 1 - d.seat"
                    " join texts tx on tx.hash = d.prompt_hash where d.phase = 'play'")
    self_a = {source: prompt for source, agent, other, prompt in told if agent == other == "a"}
    assert " 100% similar" in self_a["exogenous:demo_choices"]
    assert f" {round(agreement, 1):g}% similar" in self_a["exogenous:demo_choices:runs"]


def test_items_subsamples_the_similarity_games_levels_as_it_does_an_item_file() -> None:
    """``items`` used to cut only item files: the similarity game asked all 11 levels
    whatever the sweep said. It now picks a seeded subsample of the levels, the same for
    every agent and run (a different item_seed, another one); without it every level."""
    def levels(**params: Any) -> list[int]:
        return [i.extra["similarity"] for i in selected_items(BenchmarkParams(benchmark="similarity_game", **params))]

    assert levels() == list(SIMILARITY_LEVELS)
    few = levels(items=3)
    assert len(few) == 3 and set(few) < set(SIMILARITY_LEVELS) and few == sorted(few)
    assert levels(items=3) == few
    assert any(levels(items=3, item_seed=s) != few for s in range(1, 6))
    assert len(selected_items(BenchmarkParams(benchmark="demo_choices", items=2))) == 2
    # a noise control is one request: its length sizes it, not items
    assert len(selected_items(BenchmarkParams(benchmark="die", items=3, length=7))) == 7
