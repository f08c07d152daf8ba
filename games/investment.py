"""The strategic personalities paper's trust games with amounts: Berg trust (send, tripled, return) and gift exchange.

Payoff rules as run by the public code:

- trust_berg: the investor sends s of 10; the trustee receives 3s and returns r of it ->
  (10 - s + r, 3s - r). The trustee is asked within 0..3s (the code clamps to that range).
- gift_exchange: the employer pays a wage w (0-100); the worker then chooses effort
  e (0-10) -> (10e - w, w - e^2).
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


def trust_payoffs(sent: float, returned: float, endowment: float = 10,
                  multiplier: float = 3) -> tuple[float, float]:
    return (endowment - sent + returned, multiplier * sent - returned)


def gift_exchange_payoffs(wage: float, effort: float) -> tuple[float, float]:
    return (10 * effort - wage, wage - effort**2)


@register_game("trust_berg")
def trust_berg(endowment: int = 10, multiplier: int = 3, rounds: int = 10) -> ProtocolGame:
    """Berg trust: the investor sends 0-10, it is tripled, the trustee returns part (strategic personalities)."""
    e = as_int("endowment", endowment, minimum=1)
    m = as_int("multiplier", multiplier, minimum=1)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    rules = (
        f"Player 1 (the Investor) has {e} points and sends some of them to Player 2 (the "
        f"Trustee). Whatever is sent is multiplied by {m} on the way. The Trustee sees how much "
        "arrived and sends back any part of it. The Investor ends with what it kept plus what "
        "came back; the Trustee keeps the rest of what arrived."
    )

    async def play(turn: Turn) -> RoundResult:
        sent = await turn.number(
            0, "send", f"You are the Investor. How many of your {e} points do you send to the "
            f"Trustee (they arrive multiplied by {m})?", NumberSpace("send", 0, e, example=5))
        received = m * sent
        returned = await turn.number(
            1, "return", f"You are the Trustee. The Investor sent {sent:g} points, which "
            f"arrived as {received:g}. How many of these {received:g} points do you send back?",
            NumberSpace("return", 0, received), facts={"sent": sent, "received": received})
        pay = trust_payoffs(sent, returned, e, m)
        return RoundResult(pay, {"sent": sent, "returned": returned}, points_summaries(pay))

    return protocol_game(
        "trust_berg", f"Berg trust game (send 0-{e}, x{m})",
        "An investor sends part of an endowment, multiplied on the way; the trustee "
        "returns any part. Subgame-perfect: send nothing, return nothing.",
        moves=(f"send 0-{e}", f"return 0-{m}x sent"), roles=("Player 1, the Investor",
                                                            "Player 2, the Trustee"),
        called="the Trust Game", rules=rules, protocol=play, rounds=r, params={"endowment": e, "multiplier": m},
    )


@register_game("gift_exchange")
def gift_exchange(rounds: int = 10) -> ProtocolGame:
    """Gift exchange: the employer sets a wage 0-100, the worker answers with effort 0-10 (strategic personalities)."""
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    rules = (
        "Player 1 (the Employer) sets a wage from 0 to 100 points for Player 2 (the Worker). "
        "The Worker sees the wage and chooses an effort level from 0 to 10. The Employer earns "
        "10 x effort - wage; the Worker earns wage - effort x effort."
    )

    async def play(turn: Turn) -> RoundResult:
        wage = await turn.number(
            0, "wage", "You are the Employer. What wage (0 to 100) do you pay the Worker?",
            NumberSpace("wage", 0, 100))
        effort = await turn.number(
            1, "effort", f"You are the Worker. The Employer pays you a wage of {wage:g}. What "
            "effort level (0 to 10) do you choose? Effort costs you effort x effort points and "
            "earns the Employer 10 points per level.", NumberSpace("effort", 0, 10),
            facts={"wage": wage})
        pay = gift_exchange_payoffs(wage, effort)
        return RoundResult(pay, {"wage": wage, "effort": effort}, points_summaries(pay))

    return protocol_game(
        "gift_exchange", "Gift exchange game",
        "An employer pays a wage up front; the worker then picks a costly effort. "
        "Self-interest: wage 0, effort 0; reciprocity: higher wages, more effort.",
        moves=("wage 0-100", "effort 0-10"), roles=("Player 1, the Employer",
                                                    "Player 2, the Worker"),
        called="the Gift Exchange Game", rules=rules, protocol=play, rounds=r, params={},
    )
