"""The strategic personalities paper's negotiation games: Nash demand, alternating offers, multi-issue demands.

Payoff rules as run by the public code:

- nash_demand: both demand 0-100 of a pie of 100 at once; if the demands add up to at most
  100 each gets its demand, else both get 0.
- alternating_offers: every round (5 by default, each scored on its own) Player 1 demands
  d of the pie and Player 2 accepts or rejects; accepted -> (d, 100 - d) x 0.9^(round - 1),
  rejected -> (0, 0). The proposer is told the pie is worth 100 x 0.9^(round - 1) and the
  payoff multiplies the demand by the discount again, as the code does. The paper's text
  (Rubinstein: proposers alternate, the game ends at the first acceptance, delay shrinks
  the pie) is ``alternating_offers_deadline``: the proposer alternates, an accepted split of
  the pie 100 x 0.9^(offer - 1) ends the game, and nobody gets anything if no offer is
  accepted by the deadline.
- multi_issue: both demand a share 0-100 of issue A and of issue B at once; if on both issues
  the demands add up to at most 100, Player 1 earns (3a + b) / 100 and Player 2 (a + 3b) / 100
  of its own demands, else both get 0. As run, the code read these two numbers with its
  single-number parser, so every pair became the fallback (50, 50) and each round paid 2 to
  each (the published data shows 20 per 10-round trial); coop-tui plays the stated rule.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_float, as_int, clean
from coop_tui.games.kinds import (
    AllocationSpace,
    NumberSpace,
    ProtocolGame,
    RoundResult,
    Turn,
    points_summaries,
    protocol_game,
    told_param,
    told_params,
)


def nash_demand_payoffs(demands: list[float], pie: float = 100) -> tuple[float, ...]:
    return tuple(demands) if sum(demands) <= pie else (0.0,) * len(demands)


def alternating_payoffs(demand: float, accepted: bool, round_: int, pie: float = 100,
                        delta: float = 0.9) -> tuple[float, float]:
    d = delta ** (round_ - 1)
    return (demand * d, (pie - demand) * d) if accepted else (0.0, 0.0)


def multi_issue_payoffs(d1: tuple[float, float], d2: tuple[float, float]) -> tuple[float, float]:
    if d1[0] + d2[0] <= 100 and d1[1] + d2[1] <= 100:
        return ((3 * d1[0] + d1[1]) / 100, (d2[0] + 3 * d2[1]) / 100)
    return (0.0, 0.0)


@register_game("nash_demand")
def nash_demand(pie: int = 100, rounds: int = 10) -> ProtocolGame:
    """Nash demand: both demand 0-100 of 100 at once; compatible demands are paid (strategic personalities)."""
    p = as_int("pie", pie, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("demand", 0, p, example=50)
    rules = (
        f"You and the other player split {p} points. Both of you state a demand from 0 to {p} "
        f"at the same time. If the two demands add up to {p} or less, each gets what it "
        "demanded; if they add up to more, both get 0."
    )

    async def play(turn: Turn) -> RoundResult:
        query = f"How many of the {p} points do you demand?"
        demands = await turn.numbers([(s, "demand", query, space, None) for s in range(2)])
        pay = nash_demand_payoffs(demands, p)
        return RoundResult(pay, {"demands": demands}, points_summaries(pay))

    return protocol_game(
        "nash_demand", f"Nash demand game (pie {p})",
        "Simultaneous demands; compatible demands are paid, incompatible ones pay nothing. "
        "Every split summing to the pie is an equilibrium; 50/50 is focal.",
        moves=(f"demand 0-{p}",) * 2, roles=("Player 1", "Player 2"), rules=rules,
        protocol=play, rounds=r, params={"pie": p}, called_by_code="the Nash Demand Game",
    )


@register_game("alternating_offers")
def alternating_offers(pie: int = 100, discount: float = 0.9, rounds: int = 5,
                       told: str = "") -> ProtocolGame:
    """Alternating offers as run: each round Player 1 demands, Player 2 accepts or rejects (strategic personalities).

    ``told = "code"`` (the strategic personalities protocol's default) asks as the paper's
    code does: the Proposer demands from 0 to the pie's worth this round rounded (90, 81,
    73, 66 after 100), and the Responder answers "accept" or a counter-demand (a number,
    which the code scores as a rejection, so it is read as "reject"). ``"ours"``: demands
    from 0 to the whole pie every round, and the Responder accepts or rejects."""
    how = told_param(told)
    p = as_int("pie", pie, minimum=1)
    delta = as_float("discount", discount, positive=True)
    if delta > 1:
        raise ValueError(f"discount must be at most 1, got {delta:g}")
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    rules = (
        f"Player 1 (the Proposer) and Player 2 (the Responder) split a pie of {p} points that "
        f"shrinks by a factor {delta:g} every round. Each round the Proposer demands part of "
        "it and the Responder accepts or rejects. Accepted: the Proposer gets its demand and "
        f"the Responder the rest of {p}, both multiplied by {delta:g} for every round already "
        "played. Rejected: both get 0 this round. Every round is scored on its own."
    )
    # the code's rules: the shrinking pie and a counter-offer, not what a round pays
    code_rules = (
        f"Player 1 (the Proposer) and Player 2 (the Responder) split a pie worth {p} points. "
        "The Proposer demands an amount, and the Responder accepts it or makes a "
        f"counter-demand. The pie shrinks by a factor {delta:g} every round, so waiting costs."
    )

    async def play(turn: Turn) -> RoundResult:
        d = delta ** (turn.round - 1)
        worth = p * d
        as_code = turn.as_code
        top = int(f"{worth:.0f}") if as_code else p  # the code's stated range, rounded
        demand = await turn.number(
            0, "propose", f"You are the Proposer. The pie is worth {worth:.1f} points this "
            f"round ({p} x {d:.2f}). How many points do you demand for yourself? The "
            "Responder gets the rest.", NumberSpace("demand", 0, top, example=55))
        if as_code:
            ask = (f"You are the Responder. The Proposer demands {demand:g} and leaves you "
                   f"{p - demand:g} (the pie is worth {worth:.1f} this round). If you reject, "
                   f"the game goes on next round with the pie shrunk by a factor {delta:g}. "
                   "Do you accept, or do you make a counter-demand?")
        else:
            ask = (f"You are the Responder. The Proposer demands {demand:g} and leaves you "
                   f"{p - demand:g} (the pie is worth {worth:.1f} this round). If you reject, "
                   "both get 0 this round and the pie shrinks. Do you accept?")
        choice = await turn.choose(
            1, "respond", ask, ("accept", "reject"),
            facts={"demand": demand, "round": turn.round}, words=("accept", "reject"),
            number_as=(1, 45) if as_code else None)
        pay = alternating_payoffs(demand, choice == 0, turn.round, p, delta)
        return RoundResult(pay, {"demand": demand, "accepted": choice == 0}, points_summaries(pay))

    return protocol_game(
        "alternating_offers", f"Alternating offers as run (discount {delta:g})",
        "Each round a demand meets accept/reject; accepted demands are discounted by the "
        "round. Subgame-perfect first demand of the Rubinstein game: 100/(1+0.9) = 52.6.",
        moves=(f"demand 0-{p}", "accept/reject"), roles=("Player 1, the Proposer",
                                                        "Player 2, the Responder"),
        rules=rules, code_rules=code_rules, protocol=play, rounds=r,
        params={"pie": p, "discount": clean(delta), **told_params(how)},
        called_by_code="the Alternating Offers Game",
    )


@register_game("alternating_offers_deadline")
def alternating_offers_deadline(pie: int = 100, discount: float = 0.9,
                                deadline: int = 5, rounds: int = 1) -> ProtocolGame:
    """Alternating offers as the paper describes: proposers alternate until acceptance or a deadline."""
    p = as_int("pie", pie, minimum=1)
    delta = as_float("discount", discount, positive=True)
    if delta > 1:
        raise ValueError(f"discount must be at most 1, got {delta:g}")
    last = as_int("deadline", deadline, minimum=1, maximum=50)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    rules = (
        f"Two players split a pie of {p} points by taking turns: Player 1 proposes first, then "
        f"Player 2, and so on. The other player accepts (the split is paid and the game ends) "
        f"or rejects (the other player proposes next). After every rejection the pie shrinks "
        f"by a factor {delta:g}. If no proposal is accepted within {last} proposals, both get 0."
    )

    async def play(turn: Turn) -> RoundResult:
        offers = []
        for k in range(1, last + 1):
            proposer, responder = (0, 1) if k % 2 == 1 else (1, 0)
            worth = p * delta ** (k - 1)
            share = await turn.number(
                proposer, f"propose{k}", f"Proposal {k} of at most {last}: the pie is now worth "
                f"{worth:g}. What percentage of it (0 to 100) do you demand for yourself? The "
                "other player would get the rest.", NumberSpace("share", 0, 100),
                facts={"proposal": k, "worth": worth})
            demand = worth * share / 100
            choice = await turn.choose(
                responder, f"respond{k}", f"Proposal {k} of at most {last}: the other player "
                f"demands {share:g}% of the pie worth {worth:g}, i.e. {demand:g}, and leaves you "
                f"{worth - demand:g}. Do you accept? If you reject, "
                + ("you propose next on a smaller pie." if k < last else "both get 0."),
                ("accept", "reject"), facts={"proposal": k, "demand": demand, "worth": worth},
                words=("accept", "reject"))
            offers.append({"proposer": proposer + 1, "share": share, "accepted": choice == 0})
            if choice == 0:
                pay = [0.0, 0.0]
                pay[proposer], pay[responder] = demand, worth - demand
                return RoundResult(tuple(pay), {"offers": offers}, points_summaries(tuple(pay)))
        return RoundResult((0.0, 0.0), {"offers": offers}, points_summaries((0.0, 0.0)))

    return protocol_game(
        "alternating_offers_deadline", f"Alternating offers, deadline {last} (paper's text)",
        "Rubinstein bargaining with a shrinking pie and a deadline; the first acceptance ends it.",
        moves=("propose/respond", "propose/respond"), roles=("Player 1", "Player 2"),
        rules=rules, protocol=play, rounds=r,
        params={"pie": p, "discount": clean(delta), "deadline": last},
    )


@register_game("multi_issue")
def multi_issue(rounds: int = 10) -> ProtocolGame:
    """Multi-issue demands on issues A and B with opposite weights 3:1 / 1:3 (strategic personalities)."""
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = AllocationSpace(("A", "B"), 0, 100, example=(80, 20))
    weights = ((3, 1), (1, 3))

    def rules_for(seat: int) -> str:
        a, b = weights[seat]
        return (f"You value issue A at {a} and issue B at {b} points per unit; the other "
                f"player values A at {b} and B at {a}.")

    rules = (
        "You and the other player negotiate over two issues, A and B. At the same time, each "
        "of you demands a share from 0 to 100 of each issue. If on both issues the two demands "
        "add up to 100 or less, each gets its demands, worth (weight of A x demand on A + "
        "weight of B x demand on B) / 100 points; if either issue is over-demanded, both get 0."
    )

    async def play(turn: Turn) -> RoundResult:
        asks = [(s, "demand", rules_for(s) + " What share of issue A and of issue B do you "
                 "demand?", space) for s in range(2)]
        d = await turn.allocations(asks)
        pay = multi_issue_payoffs((d[0]["A"], d[0]["B"]), (d[1]["A"], d[1]["B"]))
        return RoundResult(pay, {"demands": [[x["A"], x["B"]] for x in d]}, points_summaries(pay))

    return protocol_game(
        "multi_issue", "Multi-issue negotiation (2 issues, logrolling)",
        "Demands on two issues valued oppositely; logrolling (100/0 vs 0/100) pays 3 each, "
        "50/50 pays 2 each.",
        moves=("demand A 0-100 and B 0-100",) * 2, roles=("Player 1", "Player 2"),
        rules=rules, protocol=play, rounds=r, params={},
    )
