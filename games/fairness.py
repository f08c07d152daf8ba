"""The strategic personalities paper's fairness games, played in turn: ultimatum, dictator, third-party punishment.

Payoff rules as run by the public code (endowment 100):

- ultimatum: the proposer offers x; accepted -> (100 - x, x), rejected -> (0, 0);
- dictator: the dictator gives x -> (100 - x, x); the recipient never moves;
- third_party_punishment: the allocator gives x to a passive recipient; an observer with 50
  points then spends p on punishment, each point removing 3 from the allocator ->
  (max(0, 100 - x - 3p), x, 50 - p).

The code clamps out-of-range numbers; coop-tui re-asks with the reason instead, and the
observer's spending is asked within 0-50 (the code clamps it to 50 in the payoff).
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
)

ACCEPT, REJECT = 0, 1


def ultimatum_payoffs(offer: float, accepted: bool, endowment: float = 100) -> tuple[float, float]:
    return (endowment - offer, offer) if accepted else (0.0, 0.0)


def dictator_payoffs(gift: float, endowment: float = 100) -> tuple[float, float]:
    return (endowment - gift, gift)


def punishment_payoffs(gift: float, punishment: float, endowment: float = 100,
                       observer_endowment: float = 50, multiplier: float = 3
                       ) -> tuple[float, float, float]:
    allocator = max(0.0, endowment - gift - multiplier * punishment)
    return (allocator, gift, max(0.0, observer_endowment - punishment))


@register_game("ultimatum")
def ultimatum(endowment: int = 100, rounds: int = 10) -> ProtocolGame:
    """Ultimatum: the proposer offers 0-100, the responder accepts or rejects (strategic personalities)."""
    e = as_int("endowment", endowment, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    offer_space = NumberSpace("offer", 0, e, example=40)
    rules = (
        f"Player 1 (the Proposer) has {e} points and offers some of them to Player 2 (the "
        f"Responder). The Responder sees the offer and accepts or rejects it. If accepted, "
        f"the Responder gets the offer and the Proposer keeps the rest; if rejected, both get 0."
    )

    async def play(turn: Turn) -> RoundResult:
        offer = await turn.number(
            0, "offer", f"You are the Proposer. How many of the {e} points do you offer the "
            "Responder?", offer_space)
        choice = await turn.choose(
            1, "respond",
            f"You are the Responder. The Proposer offers you {offer:g} of {e} points. If you "
            f"accept you get {offer:g} and the Proposer keeps {e - offer:g}; if you reject, "
            "both of you get 0. Do you accept or reject?",
            ("accept the offer", "reject the offer"), facts={"offer": offer, "endowment": e},
            words=("accept", "reject"))
        pay = ultimatum_payoffs(offer, choice == ACCEPT, e)
        return RoundResult(pay, {"offer": offer, "accepted": choice == ACCEPT}, points_summaries(pay))

    return protocol_game(
        "ultimatum", f"Ultimatum game ({e} points)",
        "A proposer offers a split; the responder sees it and accepts (split paid) or "
        "rejects (both get nothing). Subgame-perfect: offer the minimum, accept.",
        moves=(f"offer 0-{e}", "accept/reject"), roles=("Player 1, the Proposer",
                                                        "Player 2, the Responder"),
        called="the Ultimatum Game", rules=rules, protocol=play, rounds=r, params={"endowment": e},
    )


@register_game("dictator")
def dictator(endowment: int = 100, rounds: int = 10) -> ProtocolGame:
    """Dictator: one player gives 0-100 to a recipient who cannot refuse (strategic personalities)."""
    e = as_int("endowment", endowment, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space = NumberSpace("gift", 0, e, example=30)
    rules = (
        f"Player 1 (the Dictator) has {e} points and decides how many to give to Player 2 "
        "(the Recipient). The Recipient keeps what is given and cannot refuse; the Dictator "
        "keeps the rest."
    )

    async def play(turn: Turn) -> RoundResult:
        gift = await turn.number(
            0, "give", f"You are the Dictator. How many of your {e} points do you give to the "
            "Recipient?", space)
        pay = dictator_payoffs(gift, e)
        return RoundResult(pay, {"gift": gift}, points_summaries(pay))

    return protocol_game(
        "dictator", f"Dictator game ({e} points)",
        "The dictator splits an endowment with a passive recipient. Self-interest: give 0.",
        moves=(f"give 0-{e}", "(no move)"), roles=("Player 1, the Dictator",
                                                  "Player 2, the Recipient"),
        called="the Dictator Game", rules=rules, protocol=play, rounds=r, params={"endowment": e},
    )


@register_game("third_party_punishment")
def third_party_punishment(endowment: int = 100, observer_endowment: int = 50,
                           multiplier: int = 3, rounds: int = 10) -> ProtocolGame:
    """Third-party punishment: allocator gives 0-100, an observer pays to punish (strategic personalities)."""
    e = as_int("endowment", endowment, minimum=1)
    oe = as_int("observer_endowment", observer_endowment, minimum=1)
    k = as_int("multiplier", multiplier, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    gift_space, punish_space = NumberSpace("gift", 0, e), NumberSpace("punishment", 0, oe)
    rules = (
        f"Player 1 (the Allocator) has {e} points and gives some of them to Player 2 (the "
        f"Recipient), who does not move. Player 3 (the Observer) has {oe} points, sees the "
        f"allocation, and may spend some of them to punish the Allocator: every point the "
        f"Observer spends takes {k} points from the Allocator (never below 0)."
    )

    async def play(turn: Turn) -> RoundResult:
        gift = await turn.number(
            0, "allocate", f"You are the Allocator. How many of your {e} points do you give "
            "to the Recipient?", gift_space)
        punishment = await turn.number(
            2, "punish", f"You are the Observer and hold {oe} points. The Allocator gave "
            f"{gift:g} of {e} points to the Recipient and kept {e - gift:g}. How many of your "
            f"points do you spend on punishment (each removes {k} from the Allocator)?",
            punish_space, facts={"gift": gift, "endowment": e})
        pay = punishment_payoffs(gift, punishment, e, oe, k)
        return RoundResult(pay, {"gift": gift, "punishment": punishment}, points_summaries(pay))

    return protocol_game(
        "third_party_punishment", "Third-party punishment",
        "An allocator splits with a passive recipient; an unaffected observer can pay to "
        "punish the allocator. Self-interest: never punish.",
        moves=(f"give 0-{e}", "(no move)", f"punish 0-{oe}"),
        roles=("Player 1, the Allocator", "Player 2, the Recipient", "Player 3, the Observer"),
        called="the Third-Party Punishment Game", rules=rules, protocol=play, rounds=r,
        params={"endowment": e, "observer_endowment": oe, "multiplier": k},
    )
