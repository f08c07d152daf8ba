"""Payoff transforms that apply to any game (the similarity signals paper's robustness checks).

``scale`` multiplies every payoff, testing whether the size of the stakes matters.
``bonus`` raises the value of being cooperated with: each seat gains ``bonus`` for
every co-player who takes a cooperative action, while its own cost of cooperating
stays the same. Scaling happens first, so the bonus is in the units players see.

A transformed game tells its payoffs by listing every outcome: a game's rule in words
(``payoff_rule``, ``code_payoff_rule``: Public Goods' "k contributors", the Traveler's
Dilemma's claims, the Diner's Dilemma's bill) carries the untransformed numbers, so both
are dropped rather than stated for payoffs they no longer describe.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
from typing import Any

import numpy as np

from coop_tui.games.base import Game

TRANSFORM_PARAMS = ("scale", "bonus")
NO_RULE: dict[str, None] = {"payoff_rule": None, "code_payoff_rule": None}
"""The Game fields a transform clears: a rule in words would state the old payoffs."""


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def scale_payoffs(game: Game, factor: float) -> Game:
    """Every payoff multiplied by ``factor`` (> 0, so incentives keep their direction)."""
    factor = _number("scale", factor)
    if factor <= 0:
        raise ValueError(
            f"scale must be positive (it multiplies every payoff), got {factor:g}; "
            "a negative or zero scale would reverse or erase the incentives"
        )
    if factor == 1:
        return game
    return dataclasses.replace(
        game,
        payoffs=game.payoffs * factor,
        **NO_RULE,
        title=f"{game.title} (x{factor:g})",
        description=f"{game.description} Every payoff is multiplied by {factor:g}.",
    )


def add_cooperation_bonus(game: Game, bonus: float) -> Game:
    """Each seat gains ``bonus`` per co-player whose action is cooperative."""
    bonus = _number("bonus", bonus)
    if bonus == 0:
        return game
    if not all(game.cooperative):
        raise ValueError(
            f"bonus needs a cooperative action for every seat, and game {game.key!r} has "
            "none for some seat; drop bonus for this game"
        )
    payoffs = game.payoffs.copy()
    n = game.n_players
    for profile in itertools.product(*(range(c) for c in game.action_counts)):
        coop = np.array([a in game.cooperative[i] for i, a in enumerate(profile)], dtype=float)
        # seat i counts cooperating co-players: everyone cooperating minus itself
        payoffs[profile] += bonus * (coop.sum() - coop[:n])
    return dataclasses.replace(
        game,
        payoffs=payoffs,
        **NO_RULE,
        title=f"{game.title} (+{bonus:g} per cooperating co-player)",
        description=(
            f"{game.description} Each player also gains {bonus:g} for every co-player "
            "who cooperates."
        ),
    )


def apply_transforms(game: Game, scale: Any = None, bonus: Any = None) -> Game:
    """Scale first, then add the bonus; ``None`` leaves the game as it is."""
    if scale is not None:
        game = scale_payoffs(game, scale)
    if bonus is not None:
        game = add_cooperation_bonus(game, bonus)
    return game
