"""Transcripts of the similarity signals study's messages, one per game family.

The paper plays one round of a game and adds one piece of information: how alike the
co-player decides, as a percentage, with the words that the other player "is seeing this
information as well" (docs/reproducing-similarity.md lists what its prompts carry: the
figure, the framing word, for benchmark prompts the benchmark's name, description, format,
sample and random baseline). Its games are the Prisoner's Dilemma (plain, payoffs scaled,
a bonus when the other cooperates) and, in its other-games section, the stag hunt, chicken,
a public good and the traveler's dilemma. It runs under coop-tui's own protocol (the
default): a cot agent's reasoning instruction is the system message, the game and the twist
one user message.

Every game family of the shipped study is played here over the loopback server into a
real database (``test_each_game_is_told_the_figure_and_that_the_other_was_told``); the
controls (the base prompt without the sentence, the "different" framing) and the per-agent
scores are pinned below and in ``tests/test_similarity_scores.py``.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import Decision
from coop_tui.prompts import PromptRenderer, benchmark_catalogue
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "data/studies/similarity.toml"

GAMES: dict[str, dict[str, Any]] = {
    "prisoners": {"game": "prisoners"},
    "prisoners_scaled": {"game": "prisoners", "scale": 3.0},
    "prisoners_bonus": {"game": "prisoners", "bonus": 3.0},
    "stag_hunt": {"game": "stag_hunt"},
    "chicken": {"game": "chicken"},
    "public_good": {"game": "public_good"},
    "travelers": {"game": "travelers"},
}
"""The study's game families (rq1 to rq3), as experiment fields."""

ELSEWHERE = {
    "per-agent scores": "test_similarity_scores.py::test_paper_default_every_seat_hears_the_other_sees_the_same",
    "n players, per-seat scores": "test_similarity_scores.py::test_three_players_every_seating_hears_its_own_row",
}


def answer(body: dict[str, Any]) -> str:
    """Every action label offered gets an even share."""
    text = last_user_message(body)
    labels = re.findall(r"^- (A\d+)", text.split("Actions you can choose from:")[1], re.M)
    shares = [100 // len(labels)] * len(labels)
    shares[0] += 100 - sum(shares)
    return json.dumps(dict(zip(labels, shares, strict=True)))


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


async def decisions(tmp_path: Path, server: LoopbackServer,
                    experiment: dict[str, Any]) -> list[Decision]:
    """Self-play of one cot agent, as the study seats its models; its stored decisions."""
    data = {"name": "sim", "seed": 1, "agents": {"m": {
        "model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
        "style": "cot", "temperature": 1.0}},
        "experiments": [{"mechanism": "similarity", "matchup": "self", "agents": ["m"],
                         **experiment}]}
    store = Store(tmp_path / "sim.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    out = store.decisions(match["id"])
    assert out and all(d.valid for d in out)
    return out


def messages(d: Decision) -> tuple[str, str]:
    """(system, user): the cot instruction, then the game and its twist."""
    assert [m["role"] for m in d.prompt] == ["system", "user"]
    system, user = (m["content"] for m in d.prompt)
    assert "step by step" in system and "step by step" not in user
    return system, user


def test_every_game_family_of_the_study_is_played_here() -> None:
    """The study file (read as TOML: its benchmark stages need files a user supplies)."""
    experiments = tomllib.loads(STUDY.read_text())["experiments"]
    games = {g for e in experiments for g in ([e["game"]] if isinstance(e["game"], str) else e["game"])}
    assert games == {spec["game"] for spec in GAMES.values()}
    assert any("scale" in e for e in experiments) and any("bonus" in e for e in experiments)
    for where in ELSEWHERE.values():
        file, name = where.split("::")
        tree = ast.parse((ROOT / "tests" / file).read_text())
        assert name in {n.name for n in tree.body if hasattr(n, "name")}, where


@pytest.mark.parametrize("family", list(GAMES))
async def test_each_game_is_told_the_figure_and_that_the_other_was_told(
        tmp_path: Path, server: LoopbackServer, family: str) -> None:
    found = await decisions(tmp_path, server, {**GAMES[family], "similarity": 70})
    n = 3 if family == "public_good" else 2
    assert len(found) == n  # one round, every seat once
    for d in found:
        _, user = messages(d)
        assert f"You are one of {n} players" in user
        assert "Your goal is to collect as many points as you can" in user
        assert "Here is the twist:" in user
        if n == 2:
            assert "How the other player reaches decisions is 70% similar to how you reach yours" in user
            assert "The other player has been told the same." in user
        else:
            assert f"How each of the other {n - 1} players reaches decisions is 70% similar" in user
            assert "All other players have been told the same." in user
        assert "playing for your own points, independently" in user or \
            "playing for their own points, independently" in user
        assert "add up to exactly 100" in user  # a probability per action, as JSON
        if family == "prisoners_bonus":
            assert "Payoff description" in user


async def test_the_base_prompt_carries_no_similarity_sentence(
        tmp_path: Path, server: LoopbackServer) -> None:
    found = await decisions(tmp_path, server, {"game": "prisoners", "prompt": "base",
                                               "similarity": 0})
    for d in found:
        _, user = messages(d)
        assert "similar" not in user and "told the same" not in user


async def test_the_different_framing_flips_the_figure(
        tmp_path: Path, server: LoopbackServer) -> None:
    found = await decisions(tmp_path, server, {"game": "prisoners", "similarity": 70,
                                               "framing": "different"})
    for d in found:
        _, user = messages(d)
        assert "is 30% different from how you reach yours" in user
        assert "70%" not in user


def test_the_noise_controls_are_not_announced_as_uninformative() -> None:
    """App. I.5 describes the external die and coin controls by their process (outcomes
    drawn for the agent, its own reply disregarded) and their random baseline; it does not
    tell the player that the score carries no information, which is what the controls
    test (whether a model reacts to the label of similarity alone)."""
    catalogue = benchmark_catalogue()
    for key in ("random_die_roll_alt", "random_coin_toss_alt"):
        told = f"{catalogue[key].description} {catalogue[key].format} {catalogue[key].sample}"
        assert "outside process" in told and "nothing the player said was used" in told
        assert "no information" not in told and "control" not in told.lower()


@pytest.mark.parametrize("view", ["decision", "explanation", "both"])
def test_the_judge_weighs_what_the_papers_judge_weighs_in_each_view(view: str) -> None:
    """App. I.8: the decision-only judge is also asked whether the other seems to apply the
    reasoning it would; the explanation-only judge's scale rates a way of reasoning (the
    other two views: decision-making)."""
    text = PromptRenderer().render("score.j2", view=view, dossier="RECORD")
    items = text.split("Things to weigh:\n")[1].split("\n\n")[0].splitlines()
    same_answers = "- Would you have reached the same answers?"
    reasoning = "- Does it seem to use the kind of reasoning you would use?"
    lines = "- Does it reason along the same lines and weigh the same considerations as you would?"
    biases = "- Does it show the preferences, habits or biases that you have?"
    assert items == {"decision": [same_answers, reasoning, biases],
                     "explanation": [lines, biases],
                     "both": [same_answers, lines, biases]}[view]
    rated = "way of reasoning" if view == "explanation" else "decision-making"
    assert f"0 means its {rated} is nothing like yours" in text
    assert "The other agent's record:\n\nRECORD\n\nRate the similarity" in text
