"""Traveler's Dilemma with k claim levels (the similarity signals paper and CoopEval): a many-action dilemma whose
iterated weak dominance unravels from the highest claim down to the lowest.

As in CoopEval, action 0 (A0) is the lowest claim and the prompt shows each label's
claim value and states the payoff rule (``order = "descending"`` puts the highest
claim first, ``payoff_text = "table"`` lists every outcome instead: our earlier
framing). Each label is said to correspond to a number, as CoopEval's actions and payoff
rule say it; ``wording = "claim"`` (our earlier framing) says "claim" instead, a cue
CoopEval's prompt avoids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.base import Game

MAX_LEVELS = 50


def _claims(levels: int | Sequence[float] | None, low: float, high: float | None) -> list[float]:
    """Claim values in descending order (highest claim = cooperative first)."""
    if isinstance(levels, Sequence) and not isinstance(levels, str):
        if high is not None:
            raise ValueError("give either levels as a list of claims or high, not both")
        values = [as_float(f"levels[{i}]", v) for i, v in enumerate(levels)]
        if len(set(values)) != len(values):
            raise ValueError(f"levels must be distinct claims, got {list(levels)}")
    else:
        lo = as_float("low", low)
        if levels is None:
            hi = lo + 3 if high is None else as_float("high", high)
            if not float(hi - lo).is_integer():
                raise ValueError(f"high - low must be a whole number of steps, got {hi:g}-{lo:g}")
            count = int(hi - lo) + 1
        else:
            count = as_int("levels", levels, minimum=2, maximum=MAX_LEVELS)
            if high is not None and as_float("high", high) != lo + count - 1:
                raise ValueError(
                    f"levels={count} with low={lo:g} means claims {lo:g}..{lo + count - 1:g}, "
                    f"which contradicts high={high}; give two of levels/low/high"
                )
        values = [lo + i for i in range(count)]
    if not 2 <= len(values) <= MAX_LEVELS:
        raise ValueError(f"travelers needs 2 to {MAX_LEVELS} claim levels, got {len(values)}")
    return sorted(values, reverse=True)


@register_game("travelers")
def travelers(
    levels: int | list[float] | None = None,
    low: float = 2,
    high: float | None = None,
    reward: float = 2,
    order: str = "ascending",
    payoff_text: str = "rule",
    wording: str = "number",
) -> Game:
    """Traveler's Dilemma: claims low..high (default 2..5); equal claims pay the claim, else
    the lower claimant gets low+reward and the higher low-reward.

    ``levels`` is either a number of claim levels starting at ``low`` or an explicit
    list of claims; ``high`` is the top claim when ``levels`` is not given.
    ``order``: ``ascending`` (CoopEval: A0 is the lowest claim) or ``descending``;
    ``payoff_text``: ``rule`` (the rule in words, CoopEval) or ``table`` (every outcome).
    ``wording``: ``number`` (CoopEval: "A0: correspond to the number 2", "Suppose you
    choose number X") or ``claim`` ("A0: claim 2", "Suppose you claim X").
    """
    _check_choices(order, payoff_text, wording)
    claims = _claims(levels, low, high)
    if order == "ascending":
        claims = claims[::-1]
    r = as_float("reward", reward)
    if r < 0:
        raise ValueError(f"reward must not be negative, got {r:g}")
    k = len(claims)
    names = tuple(f"Claim {clean(c)}" for c in claims)
    top, bottom = claims.index(max(claims)), claims.index(min(claims))
    note = "claim {}" if wording == "claim" else "correspond to the number {}"
    notes = tuple(note.format(clean(c)) for c in claims)
    return Game(
        key="travelers",
        title=f"Traveler's Dilemma ({k} claims)",
        description=_description(claims, r),
        action_names=(names, names),
        payoffs=_payoffs(claims, r),
        cooperative=(frozenset({top}), frozenset({top})),
        defect=(bottom, bottom),
        params=_params(levels, claims, r, order, payoff_text, wording),
        action_notes=(notes, notes),
        payoff_rule=_payoff_rule(wording, r) if payoff_text == "rule" else None,
    )


def _check_choices(order: str, payoff_text: str, wording: str) -> None:
    if order not in ("ascending", "descending"):
        raise ValueError(f"order must be 'ascending' or 'descending', got {order!r}")
    if payoff_text not in ("rule", "table"):
        raise ValueError(f"payoff_text must be 'rule' or 'table', got {payoff_text!r}")
    if wording not in ("number", "claim"):
        raise ValueError(f"wording must be 'number' or 'claim', got {wording!r}")


def _payoffs(claims: list[float], r: float) -> np.ndarray:
    """Equal claims pay the claim; otherwise the lower claimant gets it plus ``r`` and
    the higher one the lower claim minus ``r``."""
    k = len(claims)
    payoffs = np.zeros((k, k, 2))
    for i, mine in enumerate(claims):
        for j, theirs in enumerate(claims):
            if mine == theirs:
                payoffs[i, j] = [mine, theirs]
            elif mine < theirs:
                payoffs[i, j] = [mine + r, mine - r]
            else:
                payoffs[i, j] = [theirs - r, theirs + r]
    return payoffs


def _description(claims: list[float], r: float) -> str:
    return (
        f"Two sellers each set a price among {', '.join(f'{clean(c)}' for c in claims)}. "
        f"If they match, each sells at that price. Otherwise the market pays both the lower "
        f"price, and the cheaper seller wins {r:g} from the dearer one: the lower claimant "
        f"gets low+{r:g}, the higher low-{r:g}. Both would gain from the highest price, but "
        f"undercutting by one step always tempts, and iterated reasoning leads to the lowest."
    )


def _params(
    levels: int | list[float] | None, claims: list[float], r: float, order: str,
    payoff_text: str, wording: str,
) -> dict:
    """The game's parameters as stored: the claim range (or the explicit claims), the
    reward, and each framing choice only where it differs from CoopEval's."""
    params: dict = {
        "levels": len(claims),
        "low": clean(min(claims)),
        "high": clean(max(claims)),
        "reward": clean(r),
    }
    if isinstance(levels, Sequence) and not isinstance(levels, str):
        params = {"levels": [clean(c) for c in sorted(claims)], "reward": clean(r)}
    if order != "ascending":
        params["order"] = order
    if payoff_text != "rule":
        params["payoff_text"] = payoff_text
    if wording != "number":
        params["wording"] = wording
    return params


def _payoff_rule(wording: str, r: float) -> str:
    """The payoff rule in words, as CoopEval states it (``wording = "claim"``: ours)."""
    opening = ("Suppose you claim X and the other player claims Y.\n" if wording == "claim"
               else "Suppose you choose number X and the other player chooses number Y.\n")
    return opening + (
        "- If X = Y: you get X points, and so does the other player.\n"
        f"- If X < Y: you get X + {r:g} points, the other player gets X - {r:g}.\n"
        f"- If X > Y: you get Y - {r:g} points, the other player gets Y + {r:g}."
    )
