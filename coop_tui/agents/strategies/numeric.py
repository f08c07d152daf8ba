"""Fixed strategies for the strategic personalities paper's numeric and sequential games (offers, bids, responses).

These answer the moves of a protocol game (``coop_tui.games.kinds``): a number move through
:meth:`numeric_answer`, a named-option move (accept/reject, take/pass, signal or not)
through :meth:`distribution` on the option view, where ``view.extra["facts"]`` holds what
the mover was told (the offer, the demand, its private value). They are the reference
opponents the strategic personalities paper calibrates per game family (its code names a proportional trustee,
equilibrium bidders and fixed demanders) reduced to what tests and offline studies need.

On an ordinary matrix game an option move is just an action: they play the action their
option rule picks (``fixed_number``: action ``option``; the others: action 0).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    number,
    register,
    watched_seat,
    whole,
)
from coop_tui.decisions import SeatView

CODE_RANGES: dict[tuple[str, str], tuple[float, float]] = {
    ("trust_berg", "return"): (0, 30),
    ("gift_exchange", "effort"): (0, 100),
    ("third_party_punishment", "punishment"): (0, 100),
}
"""Moves whose range in the strategic personalities paper's code is wider than the move's range here: its random
and anti-mirror opponents draw and reflect on the code's range, and the payoff then clamps
the number (coop-tui clamps it into the move's range, with the same result)."""

FIRST_MOVE_FACTS = ("offer", "sent", "wage", "gift", "demand", "message")
"""Facts that carry the first mover's number to a later mover (the code's "their choice"
for a second mover is the first mover's move of the same round)."""


def code_range(view: SeatView, options: dict[str, Any]) -> tuple[float, float]:
    """The range the strategic personalities paper's code draws from for this move (the move's own range unless it
    is one of :data:`CODE_RANGES`)."""
    key = (view.game.key, str(options.get("name", "")))
    if key in CODE_RANGES:
        return CODE_RANGES[key]
    return float(options["min"]), float(options["max"])


def first_move(view: SeatView) -> float | None:
    """This round's first-mover number shown to a second mover, if any."""
    facts = view.extra.get("facts", {})
    for key in FIRST_MOVE_FACTS:
        if key in facts:
            return float(facts[key])
    return None


def their_move(view: SeatView) -> Any:
    """The watched co-player's number: this round's first move for a second mover, else its
    move of the last round (a number, or a list for allocations); None in round 1."""
    first = first_move(view)
    if first is not None:
        return first
    past = view.extra.get("past") or []
    if not past:
        return None
    j = watched_seat(view)
    for value in past[-1].values():
        if isinstance(value, list) and len(value) == view.game.n_players:
            return value[j]
    return None


def move_rng(view: SeatView) -> np.random.Generator:
    """A generator seeded by the match for this round, seat and move (``extra["seed"]``)."""
    return np.random.default_rng(int(view.extra.get("seed", 0)))


def random_number(view: SeatView, options: dict[str, Any]) -> Any:
    """The strategic personalities paper's random number: a whole number drawn uniformly from the code's range, then
    brought into the move's range; allocations get a uniformly random split."""
    rng = move_rng(view)
    if "keys" in options:
        keys = list(options["keys"])
        if options.get("total") is not None:
            split = rng.multinomial(int(options["total"]), [1 / len(keys)] * len(keys))
            return {k: int(v) for k, v in zip(keys, split, strict=True)}
        lo, hi = int(options["min"]), int(options["max"])
        return {k: int(rng.integers(lo, hi + 1)) for k in keys}
    lo, hi = code_range(view, options)
    return _snap(float(rng.integers(int(lo), int(hi) + 1)), options)


def _snap(value: float, options: dict[str, Any]) -> float:
    lo, hi = float(options.get("min", value)), float(options.get("max", value))
    step = float(options.get("step", 1) or 1)
    value = min(max(value, lo), hi)
    snapped = lo + round((value - lo) / step) * step
    return int(snapped) if float(snapped).is_integer() else snapped


def _even_split(options: dict[str, Any]) -> dict[str, float]:
    keys = list(options.get("keys") or [])
    total = options.get("total")
    if total is None:
        return dict.fromkeys(keys, _snap((float(options["min"]) + float(options["max"])) / 2, options))
    base, extra = divmod(int(total), len(keys))
    return {k: base + (1 if i < extra else 0) for i, k in enumerate(keys)}


def mirror_number(view: SeatView, options: dict[str, Any]) -> Any:
    """The strategic personalities paper's numeric mirror: the co-player's number (this round's first move for a
    second mover, else its last one); in round 1 the middle of the code's range
    (allocations: an even split)."""
    theirs = their_move(view)
    if "keys" in options:
        keys = list(options["keys"])
        if isinstance(theirs, list) and len(theirs) == len(keys):
            return {k: _snap(float(v), options) for k, v in zip(keys, theirs, strict=True)}
        return _even_split(options)
    if theirs is None or isinstance(theirs, list):
        lo, hi = code_range(view, options)
        return _snap(float((int(lo) + int(hi)) // 2), options)
    return _snap(float(theirs), options)


def anti_mirror_number(view: SeatView, options: dict[str, Any]) -> Any:
    """The strategic personalities paper's numeric anti-mirror: the co-player's number reflected in the code's range
    (low + high - theirs); in round 1 a random number. For allocations (which the code
    read as one number) our own choice: the co-player's split in reverse key order."""
    theirs = their_move(view)
    if "keys" in options:
        keys = list(options["keys"])
        if isinstance(theirs, list) and len(theirs) == len(keys):
            return {k: _snap(float(v), options) for k, v in zip(keys, reversed(theirs), strict=True)}
        return random_number(view, options)
    if theirs is None or isinstance(theirs, list):
        return random_number(view, options)
    lo, hi = code_range(view, options)
    return _snap(lo + hi - float(theirs), options)


class _NumericStrategy(Strategy):
    needs_cooperation = False

    def distribution(self, view: SeatView) -> list[float]:
        n = view.game.action_counts[view.seat]
        if n == 1:  # the placeholder action of a protocol game: nothing to choose
            return [1.0]
        probs = [0.0] * n
        probs[self.option(view, n)] = 1.0
        return probs

    def option(self, view: SeatView, n: int) -> int:
        return 0

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        raise NotImplementedError


@register
class FixedNumber(_NumericStrategy):
    """Answers every number move with the same value and every option move with one option.

    Values outside a move's range are clamped into it; allocations are split evenly (the
    remainder goes to the first keys). ``option`` 0 is the first option listed by the game
    (accept, take, send the signal).
    """

    name = "fixed_number"
    classifier = {"memory_depth": 0, "stochastic": False}

    def __init__(self, value: float = 50, option: int = 0) -> None:
        self.value = number("value", value)
        self.option_index = whole("option", option)

    @property
    def params(self) -> dict[str, Any]:
        return {"value": self.value, "option": self.option_index}

    def option(self, view: SeatView, n: int) -> int:
        return min(self.option_index, n - 1)

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        return _snap(self.value, options)


@register
class ThresholdResponder(_NumericStrategy):
    """Accepts an offer worth at least ``threshold`` to it, rejects smaller ones.

    The ultimatum responder of experimental economics: it reads what it is offered (the
    ultimatum offer, or the pie minus the proposer's demand in alternating offers) and
    accepts at or above its threshold. As a proposer it offers (or leaves the other side)
    ``threshold``; other number moves get the middle of their range.
    """

    name = "threshold_responder"
    classifier = {"memory_depth": 0, "stochastic": False}

    def __init__(self, threshold: float = 30) -> None:
        self.threshold = number("threshold", threshold)

    def option(self, view: SeatView, n: int) -> int:
        facts = view.extra.get("facts", {})
        if "offer" in facts:
            offered = float(facts["offer"])
        elif "demand" in facts:
            pie = float(facts.get("worth", view.extra.get("game_params", {}).get("pie", 100)))
            offered = pie - float(facts["demand"])
        else:
            return 0
        return 0 if offered >= self.threshold else 1

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        name = options.get("name")
        if name == "offer":
            return _snap(self.threshold, options)
        if name == "demand":
            return _snap(float(options["max"]) - self.threshold, options)
        return _snap((float(options["min"]) + float(options["max"])) / 2, options)


@register
class TruthfulBidder(_NumericStrategy):
    """Bids its private value in auctions (the dominant strategy of a Vickrey auction).

    Where a move carries no private value (an all-pay auction) it bids ``default``;
    other number moves get ``default`` clamped into their range.
    """

    name = "truthful_bidder"
    classifier = {"memory_depth": INF, "stochastic": False}

    def __init__(self, default: float = 25) -> None:
        self.default = number("default", default)

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        value = view.extra.get("facts", {}).get("value", self.default)
        return _snap(float(value), options)


@register
class TrustProportional(_NumericStrategy):
    """Trust games: sends half its endowment and returns half of what arrives (rounded down).

    The strategic personalities paper's ``trust_proportional``. As an investor it sends half of the most it may
    send; as a second mover it returns 1.5 times the first mover's amount (half of the
    tripled amount; in the gift-exchange game 1.5 times the wage, clamped to the effort
    range, as the code plays it), rounded down onto the move's grid where the code would
    return a half point; other number moves get the middle of their range.
    """

    name = "trust_proportional"
    classifier = {"memory_depth": 0, "stochastic": False}

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        received = view.extra.get("facts", {}).get("received")
        first = first_move(view)
        if received is None and first is not None:
            received = 3 * first  # the code's trustee formula, applied to any first move
        if received is not None:  # half, rounded down onto the move's grid (7.5 -> 7)
            step = float(options.get("step", 1) or 1)
            return _snap(math.floor(float(received) / 2 / step) * step, options)
        return _snap((float(options["min"]) + float(options["max"])) / 2, options)
