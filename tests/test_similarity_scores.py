"""Play under per-agent similarity scores: each seat hears its own agent's figures.

``similarity_scores = { agent = { co_player = score } }`` is asymmetric: in a match of
agents a and b, the seat of a is told a's score for b and the seat of b is told b's
score for a. The matches run through the real sweep runner and SQLite store; the agents
are LLM agents talking HTTP to the loopback server, whose scripted answer cooperates with
probability equal to the mean figure it was told (so the prompts are also what decides).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

TOLD = re.compile(r"(\d+(?:\.\d+)?)% similar")


def told_figures(text: str) -> dict[int, float]:
    """Player number -> the figure the prompt gives for it ("uniform" prompts name no
    player: every co-player gets the one figure, keyed 0)."""
    per_player = re.findall(r"^- Player (\d+): (\d+(?:\.\d+)?)% similar", text, re.M)
    if per_player:
        return {int(p): float(x) for p, x in per_player}
    return {0: float(TOLD.search(text).group(1))}  # type: ignore[union-attr]


def cooperate_as_told(body: dict[str, Any]) -> str:
    """A loopback 'model': puts the mean figure it was told on A0 (cooperate)."""
    text = last_user_message(body)
    figures = list(told_figures(text).values())
    coop = round(sum(figures) / len(figures))
    return json.dumps({"A0": coop, "A1": 100 - coop})


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=cooperate_as_told) as s:
        yield s


def agents(server: LoopbackServer, *names: str) -> dict[str, Any]:
    # temperatures differ so that two agents never share a stored answer
    return {name: {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
                   "style": "direct", "temperature": 0.1 * (i + 1)} for i, name in enumerate(names)}


SCORES = {"a": {"a": 90, "b": 20}, "b": {"a": 70, "b": 100}}


async def play(tmp_path: Path, data: dict[str, Any]) -> tuple[Store, list[dict[str, Any]]]:
    store = Store(tmp_path / "scores.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    return store, matches


def transcript(store: Store, match: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Per seat: (agent, the figures its prompt gives and what it says the co-players
    were told, the probability it put on cooperating)."""
    seats = [s["agent"] for s in store.seats(match["id"])]
    out = []
    for d in sorted(store.decisions(match["id"]), key=lambda d: d.seat):
        text = next(m["content"] for m in d.prompt if m["role"] == "user")
        figures = told_figures(text)
        shown = " ".join(f"P{p}={x:g}" if p else f"all={x:g}" for p, x in sorted(figures.items()))
        if "has been told the same." in text:
            others = "same"
        elif "may differ" in text:
            others = "own"
        else:
            others = "mutual" if "told the same figure about you" in text else "?"
        out.append((seats[d.seat], f"{shown} {others}", f"coop {d.distribution[0]:g}"))
    return out


async def test_paper_default_every_seat_hears_the_other_sees_the_same(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """The paper's prompts say the other agent sees this information as well, also when
    an endogenous table tells the two seats different figures (20 against 70)."""
    store, matches = await play(tmp_path, {
        "name": "scores", "seed": 3, "agents": agents(server, "a", "b"),
        "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
                         "agents": ["a", "b"], "similarity_scores": SCORES}],
    })
    got = {tuple(s["agent"] for s in store.seats(m["id"])): transcript(store, m) for m in matches}
    assert got[("a", "b")] == [("a", "all=20 same", "coop 0.2"), ("b", "all=70 same", "coop 0.7")]
    assert got[("b", "b")] == [("b", "all=100 same", "coop 1"), ("b", "all=100 same", "coop 1")]
    assert all("may differ" not in t for m in matches for t in prompts_of(store, m))
    assert "others_told" not in json.loads(matches[0]["condition"])
    store.close()


def prompts_of(store: Store, match: dict[str, Any]) -> list[str]:
    return [next(x["content"] for x in d.prompt if x["role"] == "user") for d in store.decisions(match["id"])]


async def test_cross_play_each_seat_is_told_its_own_agents_score(tmp_path: Path, server: LoopbackServer) -> None:
    store, matches = await play(tmp_path, {
        "name": "scores", "seed": 3, "agents": agents(server, "a", "b"),
        "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
                         "agents": ["a", "b"], "similarity_scores": SCORES,
                         "similarity_label": "endogenous:newcomb:both", "others_told": "as_given"}],
    })
    got = {tuple(s["agent"] for s in store.seats(m["id"])): transcript(store, m) for m in matches}
    assert got == {
        ("a", "a"): [("a", "all=90 same", "coop 0.9"),
                     ("a", "all=90 same", "coop 0.9")],
        ("a", "b"): [("a", "all=20 own", "coop 0.2"),
                     ("b", "all=70 own", "coop 0.7")],
        ("b", "a"): [("b", "all=70 own", "coop 0.7"),
                     ("a", "all=20 own", "coop 0.2")],
        ("b", "b"): [("b", "all=100 same", "coop 1"),
                     ("b", "all=100 same", "coop 1")],
    }
    # queryable: the condition carries the matrix and its label (one condition for the
    # whole tournament), each round row the figures each seat was told
    conditions = {m["condition"] for m in matches}
    assert len(conditions) == 1
    cond = json.loads(conditions.pop())
    assert cond["similarity_label"] == "endogenous:newcomb:both"
    assert cond["similarity_scores"] == {"a": {"a": 90, "b": 20}, "b": {"a": 70, "b": 100}}
    ab = next(m for m in matches if [s["agent"] for s in store.seats(m["id"])] == ["a", "b"])
    told = store.db.execute(
        "select seat, json_extract(info, '$.told[' || seat || ']') from rounds where match_id = ?"
        " order by seat", [ab["id"]]).fetchall()
    assert [(seat, json.loads(t)) for seat, t in told] == [(0, {"2": 20.0}), (1, {"1": 70.0})]
    store.close()


async def test_three_players_every_seating_hears_its_own_row(tmp_path: Path, server: LoopbackServer) -> None:
    store, matches = await play(tmp_path, {
        "name": "scores3", "seed": 4, "agents": agents(server, "a", "b"),
        "experiments": [{"game": "public_good", "mechanism": "similarity", "matchup": "cross",
                         "agents": ["a", "b"], "similarity_scores": SCORES, "others_told": "as_given"}],
    })
    assert len(matches) == 8
    for m in matches:
        seats = [s["agent"] for s in store.seats(m["id"])]
        for d in store.decisions(m["id"]):
            text = next(x["content"] for x in d.prompt if x["role"] == "user")
            me = seats[d.seat]
            expected = {j + 1: float(SCORES[me][other]) for j, other in enumerate(seats) if j != d.seat}
            figures = told_figures(text)
            if 0 in figures:  # one figure for every co-player
                assert set(expected.values()) == {figures[0]}, (seats, d.seat, text)
            else:
                assert figures == expected, (seats, d.seat, text)
            mutual = all(SCORES[me][o] == SCORES[o][me] for j, o in enumerate(seats) if j != d.seat)
            assert ("may differ" in text) is (not mutual), (seats, d.seat, text)
    # (a, b, b): a hears 20 for both; each b hears 70 for a and 100 for the other b
    abb = next(m for m in matches if [s["agent"] for s in store.seats(m["id"])] == ["a", "b", "b"])
    assert [transcript(store, abb)[i][1] for i in range(3)] == [
        "all=20 own", "P1=70 P3=100 own", "P1=70 P2=100 own"]
    store.close()


async def test_seat_table_for_abstract_scores_is_per_seat(tmp_path: Path, server: LoopbackServer) -> None:
    """``seat_similarity`` as one row per seat: seat 3 hears what row 3 says, and a
    symmetric table is described as mutual (each co-player heard the same about you)."""
    table = {"1": [80, 60], "2": [80, 50], "3": [60, 50]}
    store, (match,) = await play(tmp_path, {
        "name": "seat-table", "seed": 5, "agents": agents(server, "a"),
        "experiments": [{"game": "public_good", "mechanism": "similarity", "agents": ["a"],
                         "seat_similarity": table, "others_told": "as_given"}],
    })
    assert [t[1] for t in transcript(store, match)] == [
        "P2=80 P3=60 mutual", "P1=80 P3=50 mutual", "P1=60 P2=50 mutual"]
    store.close()


# ------------------------------------------------------------------ bad input
def sweep_with(server_url: str = "http://127.0.0.1:9/v1", **experiment: Any) -> dict[str, Any]:
    agent = {"model": "openai/loopback", "api_base": server_url, "api_key": "sk-test"}
    return {"name": "bad", "agents": {"a": agent, "b": {**agent, "temperature": 0.5}},
            "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
                             "agents": ["a", "b"], **experiment}]}


@pytest.mark.parametrize(("experiment", "field", "words"), [
    ({"similarity_scores": {"a": {"a": 1, "b": 2}, "c": {"a": 3}}},
     "experiments[0].similarity_scores", "unknown agent 'c'"),
    ({"similarity_scores": {"a": {"a": 1, "bb": 2}, "b": {"a": 3, "b": 4}}},
     "experiments[0].similarity_scores.a", "did you mean 'b'"),
    ({"similarity_scores": {"a": {"a": 1, "b": 2}, "b": {"a": 3}}},
     "experiments[0].similarity_scores", "b -> b"),
    ({"similarity_scores": {"a": {"a": 1, "b": 120}, "b": {"a": 3, "b": 4}}},
     "experiments[0].similarity_scores", "similarity_scores.a.b"),
    ({"similarity_scores": {"a": {"a": 1, "b": 2}, "b": {"a": 3, "b": 4}}, "similarity": 50},
     "experiments[0]", "remove similarity"),
    ({"matchup": "self", "game": "public_good", "seat_similarity": [10, 20]},
     "experiments[0].seat_similarity", "one row per seat"),
    ({"matchup": "self", "game": "public_good", "seat_similarity": {"1": [1, 2], "2": [3, 4]}},
     "experiments[0].seat_similarity", "give one row per seat"),
])
def test_bad_scores_name_the_field(experiment: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        build_sweep(sweep_with(**experiment), check_keys=False)
    assert err.value.field == field, str(err.value)
    assert words in str(err.value)


def test_self_play_needs_the_agents_own_score() -> None:
    data = sweep_with(matchup="self", similarity_scores={"a": {"b": 20}, "b": {"a": 70}})
    with pytest.raises(SpecError, match=r"a -> a, b -> b"):
        build_sweep(data, check_keys=False)
    data["experiments"][0]["similarity_scores"] = {"a": {"a": 90}, "b": {"b": 80}}
    assert len(build_sweep(data, check_keys=False).cells) == 2


def test_cli_refuses_a_missing_pair_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(textwrap.dedent("""
        name = "bad"
        [agents.tft]
        strategy = "tit_for_tat"
        [agents.alld]
        strategy = "always_defect"
        [[experiments]]
        game = "prisoners"
        mechanism = "similarity"
        matchup = "cross"
        agents = ["tft", "alld"]
        similarity_scores = { tft = { tft = 90, alld = 10 }, alld = { tft = 40 } }
    """))
    db = tmp_path / "out.db"
    result = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x]
    assert "experiments[0].similarity_scores" in line and "alld -> alld" in line
    assert not db.exists()
