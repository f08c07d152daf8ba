"""The strategic personalities paper's sealed-bid auctions: first-price, second-price (Vickrey) and all-pay.

As run by the public code, two bidders bid 0-100 each round:

- first-price / Vickrey: each bidder has a private value drawn uniformly from 20..80
  (whole numbers) every round; the highest bid wins and pays its own bid (first-price) or
  the other bid (Vickrey): winner gets value - price, the loser 0. A first-price tie is
  won by a random bidder; a Vickrey tie goes to Player 1 (the code sorts stably), who then
  pays its own bid.
- all-pay: a prize of 50; both pay their bids, the highest bid wins the prize (tie: random).

Values and tie-breaks come from the match's seeded RNG, so a replay draws the same ones.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_int
from coop_tui.games.kinds import (
    NumberSpace,
    ProtocolGame,
    RoundResult,
    Turn,
    points_summaries,
    protocol_game,
    told_param,
    told_params,
)


def first_price_payoffs(bids: list[float], values: list[float], winner: int) -> tuple[float, ...]:
    return tuple(values[i] - bids[i] if i == winner else 0.0 for i in range(len(bids)))


def vickrey_payoffs(bids: list[float], values: list[float]) -> tuple[float, ...]:
    order = sorted(range(len(bids)), key=lambda i: bids[i], reverse=True)
    winner, price = order[0], bids[order[1]]
    return tuple(values[i] - price if i == winner else 0.0 for i in range(len(bids)))


def all_pay_payoffs(bids: list[float], prize: float, winner: int) -> tuple[float, ...]:
    return tuple((prize if i == winner else 0.0) - b for i, b in enumerate(bids))


def _winner(turn: Turn, bids: list[float]) -> int:
    top = max(bids)
    tied = [i for i, b in enumerate(bids) if b == top]
    return tied[int(turn.rng("tie").integers(len(tied)))] if len(tied) > 1 else tied[0]


def _value_game(key: str, second_price: bool, rounds: int, low: int, high: int,
                told: str) -> ProtocolGame:
    how = told_param(told)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    lo = as_int("value_min", low, minimum=0)
    hi = as_int("value_max", high, minimum=lo)
    space = NumberSpace("bid", 0, 100, example=42)
    price = "the other bid (the second-highest)" if second_price else "its own bid"
    rules = (
        "You and one other bidder each want an item. Each of you has a private value for it "
        f"(a new one every round, between {lo} and {hi}); you only know your own. Both submit "
        f"a sealed bid from 0 to 100 at the same time. The highest bid wins and pays {price}: "
        "the winner earns its value minus that price, the loser earns 0."
    )
    # the code names a private value but never its range, nor that a new one comes each round
    code_rules = (
        "You and one other bidder each want an item, and each of you has a private value for "
        f"it. Both submit a sealed bid at the same time. The highest bid wins and pays {price}: "
        "the winner earns its value minus that price, the loser earns 0."
    )

    async def play(turn: Turn) -> RoundResult:
        values = [float(v) for v in turn.rng("values").integers(lo, hi + 1, size=2)]
        when = "" if turn.as_code else " this round"  # the code does not say it is redrawn
        asks = [(s, "bid", f"Your private value for the item{when} is {values[s]:g}. "
                 "How much do you bid (0 to 100)?", space, {"value": values[s]})
                for s in range(2)]
        bids = await turn.numbers(asks)
        if second_price:
            pay = vickrey_payoffs(bids, values)
        else:
            pay = first_price_payoffs(bids, values, _winner(turn, bids))
        return RoundResult(pay, {"bids": bids, "values": values}, points_summaries(pay))

    kind = "Second-price (Vickrey)" if second_price else "First-price"
    return protocol_game(
        key, f"{kind} sealed-bid auction",
        f"Two bidders with private values {lo}-{hi} bid 0-100; the highest bid wins and pays "
        f"{price}." + (" Bidding one's value is dominant." if second_price else
                       " Equilibrium: bid half the value."),
        moves=("bid 0-100",) * 2, roles=("Player 1, a bidder", "Player 2, a bidder"),
        rules=rules, code_rules=code_rules, protocol=play, rounds=r,
        params={"value_min": lo, "value_max": hi, **told_params(how)},
        called_by_code=f"a {'second' if second_price else 'first'}-price sealed-bid auction",
    )


@register_game("auction_first_price")
def auction_first_price(rounds: int = 15, value_min: int = 20, value_max: int = 80,
                  told: str = "") -> ProtocolGame:
    """First-price sealed-bid auction, private values 20-80, bids 0-100 (strategic personalities)."""
    return _value_game("auction_first_price", False, rounds, value_min, value_max, told)


@register_game("auction_vickrey")
def auction_vickrey(rounds: int = 15, value_min: int = 20, value_max: int = 80,
                  told: str = "") -> ProtocolGame:
    """Second-price (Vickrey) auction, private values 20-80, bids 0-100 (strategic personalities)."""
    return _value_game("auction_vickrey", True, rounds, value_min, value_max, told)


@register_game("auction_all_pay")
def auction_all_pay(prize: int = 50, rounds: int = 15) -> ProtocolGame:
    """All-pay auction for a prize of 50: both pay their bids 0-100 (strategic personalities)."""
    pz = as_int("prize", prize, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("bid", 0, 100, example=25)
    rules = (
        f"You and one other bidder compete for a prize worth {pz} points. Both submit a sealed "
        "bid from 0 to 100 at the same time. Both of you pay your own bid whether you win or "
        "not; the higher bid wins the prize."
    )

    async def play(turn: Turn) -> RoundResult:
        query = "How much do you bid (0 to 100)? You pay it whether or not you win."
        bids = await turn.numbers([(s, "bid", query, space, None) for s in range(2)])
        pay = all_pay_payoffs(bids, pz, _winner(turn, bids))
        return RoundResult(pay, {"bids": bids}, points_summaries(pay))

    return protocol_game(
        "auction_all_pay", f"All-pay auction (prize {pz})",
        "Both bidders pay their bids; the higher bid wins the prize. Mixed equilibrium: bid "
        f"uniformly on 0-{pz}.",
        moves=("bid 0-100",) * 2, roles=("Player 1, a bidder", "Player 2, a bidder"),
        rules=rules, protocol=play, rounds=r, params={"prize": pz},
        called_by_code="an all-pay auction",
    )
