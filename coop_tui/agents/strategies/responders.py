"""The strategic personalities paper's second movers: ultimatum, bargaining and signalling responders, trust players.

As its public code plays them against a model in seat 1. A responder reads what the first
mover did this round from the move's facts (the offer, the demand, the signal) and picks
option 0 (accept / send the signal) or option 1 (reject / no signal); a number move gets
the rule's own number (what the code's strategy answers as a proposer: an offer, a
demand, a punishment), brought into the move's range.
"""

from __future__ import annotations

from typing import Any

from coop_tui.agents.strategies.base import register
from coop_tui.agents.strategies.numeric import _even_split, _NumericStrategy, _snap, first_move
from coop_tui.decisions import SeatView

ACCEPT, REJECT = 0, 1


def _param(view: SeatView, name: str, default: float) -> float:
    return float(view.extra.get("game_params", {}).get(name, default))


class _Responder(_NumericStrategy):
    """Accepts when :meth:`accepts` says so; numbers: ``share`` of ``base`` (endowment/pie)."""

    classifier = {"memory_depth": 0, "stochastic": False}
    base = "endowment"
    share = 0.5

    def accepts(self, view: SeatView) -> bool:
        return True

    def option(self, view: SeatView, n: int) -> int:
        return ACCEPT if self.accepts(view) else REJECT

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        whole = _param(view, self.base, 100)
        return _snap(float(int(whole * self.share)), options)


def _offered(view: SeatView) -> float | None:
    """What the responder is offered: the ultimatum offer, or the pie minus a demand."""
    facts = view.extra.get("facts", {})
    if "offer" in facts:
        return float(facts["offer"])
    if "demand" in facts:
        return _param(view, "pie", 100) - float(facts["demand"])
    return None


class _Threshold(_Responder):
    cut = 0.0

    def accepts(self, view: SeatView) -> bool:
        offered = _offered(view)
        return offered is not None and offered >= _param(view, self.base, 100) * self.cut


# ------------------------------------------------------------------ ultimatum (fairness)
@register
class RejectUnfair(_Threshold):
    """Ultimatum responder: accepts offers of at least 30% of the endowment; offers 40%.

    The strategic personalities paper's ``reject_unfair``. As the observer of third-party punishment it spends 40
    (its code answers every number move with its proposer's 40%).
    """

    name = "reject_unfair"
    cut, share = 0.3, 0.4


@register
class AcceptAll(_Responder):
    """Accepts every offer; answers a number move with 1 (its code's minimal offer).

    The strategic personalities paper's ``accept_all``: the payoff-maximising responder of the subgame-perfect
    equilibrium.
    """

    name = "accept_all"

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        return _even_split(options) if "keys" in options else _snap(1.0, options)


@register
class FairOffer(_Threshold):
    """Ultimatum responder: accepts offers of at least 45% of the endowment; offers half.

    The strategic personalities paper's ``fair_offer``.
    """

    name = "fair_offer"
    cut, share = 0.45, 0.5


# ------------------------------------------------------------------ negotiation
@register
class AcceptFair(_Threshold):
    """Bargaining responder: accepts when it is left at least 40% of the pie; demands 55%.

    The strategic personalities paper's ``accept_fair`` (alternating offers, Nash demand). The pie is the game's
    ``pie`` parameter (100), undiscounted, as in its code.
    """

    name = "accept_fair"
    base, cut, share = "pie", 0.4, 0.55


@register
class AcceptGenerous(_Threshold):
    """Bargaining responder: accepts when it is left at least 20% of the pie; demands 60%.

    The strategic personalities paper's ``accept_generous``.
    """

    name = "accept_generous"
    base, cut, share = "pie", 0.2, 0.6


@register
class AlwaysReject(_Responder):
    """Rejects every proposal; demands 90% of the pie.

    The strategic personalities paper's ``always_reject``.
    """

    name = "always_reject"
    base, share = "pie", 0.9

    def accepts(self, view: SeatView) -> bool:
        return False


@register
class AlwaysAccept(_Responder):
    """Accepts every proposal; demands half the pie.

    The strategic personalities paper's ``always_accept``.
    """

    name = "always_accept"
    base, share = "pie", 0.5


# ------------------------------------------------------------------ signalling
@register
class AlwaysSignal(_Responder):
    """Signalling: sends the signal as the sender and accepts as the receiver.

    The strategic personalities paper's ``always_signal``.
    """

    name = "always_signal"


@register
class NeverSignal(_Responder):
    """Signalling: sends no signal as the sender and rejects as the receiver.

    The strategic personalities paper's ``never_signal``.
    """

    name = "never_signal"

    def accepts(self, view: SeatView) -> bool:
        return False


@register
class BayesianReceiver(_Responder):
    """Signalling receiver meant to accept only after a signal; accepts always, as run.

    The strategic personalities paper's ``bayesian_receiver`` looks for the word "signal" in the sender's move,
    which "no_signal" contains too, so its receiver accepts after either move (and its
    sender always signals). ``as_run = false`` plays the documented intent instead:
    accept after a signal, reject after none.
    """

    name = "bayesian_receiver"

    def __init__(self, as_run: bool = True) -> None:
        if not isinstance(as_run, bool):
            raise TypeError(f"as_run must be true or false, got {as_run!r}")
        self.as_run = as_run

    def accepts(self, view: SeatView) -> bool:
        if self.as_run:
            return True
        return bool(view.extra.get("facts", {}).get("signalled", False))


# ------------------------------------------------------------------ trust
@register
class TrustFull(_NumericStrategy):
    """Trust games: sends its whole endowment; as a second mover returns half of the tripled
    amount (rounded down onto the move's grid).

    The strategic personalities paper's ``trust_full``. Its trustee rule equals ``trust_proportional``'s (1.5 times
    what was sent); in the gift-exchange game it answers 1.5 times the wage as effort,
    clamped to the effort range, as its code does.
    """

    name = "trust_full"
    classifier = {"memory_depth": 0, "stochastic": False}

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        facts = view.extra.get("facts", {})
        first = first_move(view)
        received = facts.get("received", None if first is None else 3 * first)
        if received is None:
            return _snap(float(options["max"]), options)
        step = float(options.get("step", 1) or 1)
        return _snap(float(received) / 2 // step * step, options)


@register
class TrustNone(_NumericStrategy):
    """Trust games: sends nothing and returns nothing (every number move: its minimum).

    The strategic personalities paper's ``trust_none``: the subgame-perfect play of the trust game.
    """

    name = "trust_none"
    classifier = {"memory_depth": 0, "stochastic": False}

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        if "keys" in options:
            return _even_split(options)
        return _snap(0.0, options)
