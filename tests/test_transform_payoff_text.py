"""A transformed game (scale, bonus) never states a payoff rule its payoffs no longer follow.

Public Goods, the Traveler's Dilemma, the Diner's Dilemma, El Farol and the focal point
tell their payoffs by a rule in words, under some protocol. A transform changes the
payoff tensor but not the words, so a transformed game lists every outcome instead: each
listed number is checked here against the game's payoffs, for every game with a rule,
every transform and every prompt protocol.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.games import game_keys, load_game
from coop_tui.games.base import Game
from coop_tui.prompts import Labelling, payoff_description
from coop_tui.protocols import protocols
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

TRANSFORMS: tuple[dict[str, float], ...] = ({"scale": 10.0}, {"bonus": 3.0},
                                            {"scale": 10.0, "bonus": 3.0})
"""Scale alone, bonus alone, and both (scale first)."""


def rule_games() -> list[tuple[str, dict[str, Any]]]:
    """Every registered game (and payoff_text variant) that carries a rule in words."""
    found = []
    for key in game_keys():
        for params in ({}, {"payoff_text": "rule"}):
            try:
                game = load_game(key, **params)
            except (TypeError, ValueError):
                continue
            if (game.payoff_rule or game.code_payoff_rule) and (key, params) not in found:
                found.append((key, params))
    return found


RULE_GAMES = rule_games()
CASES = [
    pytest.param(key, params, transform, id=f"{key}-{'-'.join(params.values()) or 'default'}-"
                                            f"{'+'.join(transform)}")
    for (key, params), transform in itertools.product(RULE_GAMES, TRANSFORMS)
]

WHO = re.compile(r"(you|the other player|Player \d+) chooses? (\w+)")
GETS = re.compile(r"(you|the other player|Player \d+) gets? (-?[0-9.e+]+) points?")


def seat_of(who: str, seat: int) -> int:
    """The seat a phrase of ``seat``'s prompt names (two players: "the other player")."""
    if who == "you":
        return seat
    if who == "the other player":
        return 1 - seat
    return int(who.split()[1]) - 1


def listed_payoffs(text: str, seat: int) -> dict[tuple[int, ...], tuple[float, ...]]:
    """Each outcome line's profile (labels A<i> read as action i) and every seat's points."""
    out = {}
    for line in text.splitlines():
        cond, _, gets = line.partition(":")
        chosen = {seat_of(w, seat): int(lab[1:]) for w, lab in WHO.findall(cond)}
        paid = {seat_of(w, seat): float(x) for w, x in GETS.findall(gets)}
        profile = tuple(chosen[j] for j in range(len(chosen)))
        out[profile] = tuple(paid[j] for j in range(len(paid)))
    return out


def check_listed(game: Game, text: str, seat: int) -> None:
    listed = listed_payoffs(text, seat)
    profiles = set(itertools.product(*(range(c) for c in game.action_counts)))
    assert set(listed) == profiles, "every outcome is listed, and nothing else"
    for profile, paid in listed.items():
        want = game.payoff(profile)
        assert all(math.isclose(p, w, rel_tol=1e-5, abs_tol=1e-9)
                   for p, w in zip(paid, want, strict=True)), (profile, paid, want)


def test_the_rule_games_are_found() -> None:
    """The search below covers the games known to state a rule (a guard against an
    empty parametrisation)."""
    keys = {key for key, _ in RULE_GAMES}
    assert {"public_good", "travelers", "diners_dilemma", "el_farol_bar", "focal_point"} <= keys


@pytest.mark.parametrize(("key", "params", "transform"), CASES)
def test_a_transformed_games_prompt_lists_the_transformed_payoffs(
        key: str, params: dict[str, Any], transform: dict[str, float]) -> None:
    plain = load_game(key, **params)
    if "bonus" in transform and not all(plain.cooperative):
        pytest.skip(f"{key} has no cooperative action, so no bonus")
    game = load_game(key, **params, **transform)
    assert game.payoff_rule is None and game.code_payoff_rule is None
    labellings = tuple(Labelling.neutral(c) for c in game.action_counts)
    for protocol in protocols():
        for seat in range(game.n_players):
            text = payoff_description(game, seat, labellings, protocol.payoff_rule(game))
            check_listed(game, text, seat)


def test_an_untransformed_game_keeps_its_rule() -> None:
    """The fix drops the rule only where a transform changed the payoffs (scale 1 and
    bonus 0 change nothing)."""
    game = load_game("public_good", scale=1, bonus=0)
    assert game.payoff_rule and "1.5 * k / 3" in game.payoff_rule


async def test_a_scaled_public_goods_sweep_sends_the_scaled_outcomes(tmp_path: Path) -> None:
    """End to end through the engine and the store: the prompt the model receives for
    Public Goods at scale 10 lists the x10 outcomes, not the unscaled rule."""
    with LoopbackServer(latency=0.0, chunks=1, answer='{"A0": 100, "A1": 0}') as server:
        data = {"name": "scaled", "seed": 1, "agents": {
                    "m": {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-x"}},
                "experiments": [{"game": "public_good", "scale": 10, "matchup": [["m", "m", "m"]]}]}
        store = Store(tmp_path / "scaled.db")
        summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    game = load_game("public_good", scale=10)
    decisions = store.decisions(match["id"])
    assert decisions
    for d in decisions:
        text = "\n".join(m["content"] for m in d.prompt)
        assert "Suppose k of the" not in text and "1.5 * k / 3" not in text
        lines = "\n".join(x for x in text.splitlines() if x.startswith("- If you choose"))
        # the prompt's labels may be shuffled: read them back to actions through the decision
        action = {lab: f"A{a}" for lab, a in zip(d.labels, d.label_to_action, strict=True)}
        relabelled = re.sub(r"\b(" + "|".join(map(re.escape, d.labels)) + r")\b",
                            lambda m, action=action: action[m.group(1)], lines)
        check_listed(game, relabelled, d.seat)
