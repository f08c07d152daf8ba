"""The strategic personalities paper's games with a message phase: costly signalling and cheap talk.

Payoff rules as run by the public code (chance moves from the match's seeded RNG):

- signaling: the sender's type is high or low with equal chance each round; the sender
  signals (cost 3 if high, 12 if low) or not; the receiver is told whether it signalled
  and accepts or rejects. Accept: sender 10 - cost, receiver 10 (high) or -5 (low).
  Reject: sender -cost, receiver 3. ``rule = "as_run"`` (the default) plays it as the
  public code did, which produced the published data: its test for a signal matches inside
  "no_signal", so the sender pays the signal cost every round and the receiver is always
  told a signal was sent, whatever the sender chose (the players are told the intended
  rules, as there). ``rule = "intended"`` plays the rules as described.
- cheap_talk: a state 1-5 is drawn; the sender sees it and sends a message 1-5 for free; the
  receiver sees the message and chooses an action 1-5. Sender: -|action - state - 1|,
  receiver: -|action - state|.
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

SIGNALING_RULES = ("as_run", "intended")


def signaling_payoffs(high: bool, signalled: bool, accepted: bool, cost_high: float = 3,
                      cost_low: float = 12, rule: str = "intended") -> tuple[float, float]:
    """(sender, receiver) points of one round; under ``as_run`` the cost is paid whether or
    not the sender signalled."""
    charged = signalled or rule == "as_run"
    cost = (cost_high if high else cost_low) if charged else 0.0
    if accepted:
        return (10 - cost, 10.0 if high else -5.0)
    return (-cost, 3.0)


def cheap_talk_payoffs(state: int, action: float, bias: float = 1) -> tuple[float, float]:
    return (-abs(action - state - bias), -abs(action - state))


@register_game("signaling")
def signaling(cost_high: int = 3, cost_low: int = 12, rounds: int = 20,
              rule: str = "as_run", told: str = "") -> ProtocolGame:
    """Signalling: a high or low sender may signal at a cost; the receiver accepts or rejects (strategic personalities).

    ``told = "code"`` (the strategic personalities protocol's default) tells what the
    paper's code tells: no signal is free, nothing about how likely each quality is, nothing
    of the Sender's points after a rejection. ``told = "ours"`` (coop-tui's own protocol's)
    tells the rules as played: the equal chance of each quality and, under ``as_run``,
    that the cost is paid in every case, which changes the Sender's incentive."""
    how = told_param(told)
    if rule not in SIGNALING_RULES:
        raise ValueError(f"rule must be one of {', '.join(SIGNALING_RULES)}, not {rule!r}: "
                         "as_run plays the strategic personalities paper's code (cost every round, the receiver always "
                         "told of a signal), intended the rules as described")
    ch = as_int("cost_high", cost_high, minimum=0)
    cl = as_int("cost_low", cost_low, minimum=0)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    rules = (
        "Player 1 (the Sender) is of high or low quality, with equal chance every round, and "
        f"only the Sender knows which. The Sender may send a signal, which costs {ch} points "
        f"for a high-quality Sender and {cl} for a low-quality one. Player 2 (the Receiver) "
        "sees whether a signal was sent, not the quality, and accepts or rejects the Sender. "
        "Accepting a high-quality Sender gives both 10; accepting a low-quality one gives the "
        "Sender 10 and the Receiver -5; rejecting gives the Receiver 3 and the Sender 0."
        + (" The Sender pays its signal cost in every case." if rule == "as_run" else "")
    )
    code_rules = (
        "Player 1 (the Sender) is of high or low quality, and only the Sender knows which. "
        f"Sending a signal costs a high-quality Sender {ch} points and a low-quality one {cl}. "
        "Player 2 (the Receiver) sees whether a signal was sent and accepts or rejects the "
        "Sender. Accepting a high-quality Sender gives both 10; accepting a low-quality one "
        "gives the Sender 10 and costs the Receiver 5; rejecting gives the Receiver a sure 3."
    )

    async def play(turn: Turn) -> RoundResult:
        high = bool(turn.rng("type").integers(2) == 0)
        kind, cost = ("high", ch) if high else ("low", cl)
        if turn.as_code:
            ask = (f"You are the Sender. This round you are of {kind} quality. The signal "
                   f"costs you {cost} points; sending none costs nothing. The Receiver learns "
                   "whether you signalled, not your quality. Do you send the signal?")
        else:
            ask = (f"You are the Sender. This round you are of {kind} quality, so a signal "
                   f"costs you {cost} points. Do you send the signal?")
        signal = await turn.choose(
            0, "signal", ask,
            ("send the signal", "send no signal"), facts={"type": kind},
            words=("signal", "no_signal"))
        signalled = signal == 0
        shown = signalled or rule == "as_run"  # as run, the receiver always hears of a signal
        seen = "sent the signal" if shown else "did not send the signal"
        answer = await turn.choose(
            1, "respond", f"You are the Receiver. The Sender {seen}. Do you accept or reject "
            "the Sender?", ("accept", "reject"), facts={"signalled": shown},
            words=("accept", "reject"))
        pay = signaling_payoffs(high, signalled, answer == 0, ch, cl, rule)
        return RoundResult(pay, {"type": kind, "signalled": signalled, "shown_signal": shown,
                                 "accepted": answer == 0, "rule": rule},
                           points_summaries(pay))

    return protocol_game(
        "signaling", "Signalling game (sender-receiver)",
        "A privately typed sender may pay for a signal; the receiver sees it and accepts or "
        "rejects. Separating equilibrium: only high types signal.",
        moves=("signal/no signal", "accept/reject"), roles=("Player 1, the Sender",
                                                           "Player 2, the Receiver"),
        called="a Signaling Game", rules=rules, code_rules=code_rules, protocol=play, rounds=r,
        params={"cost_high": ch, "cost_low": cl, "rule": rule, **told_params(how)},
    )


@register_game("cheap_talk")
def cheap_talk(bias: int = 1, rounds: int = 20, told: str = "") -> ProtocolGame:
    """Cheap talk: the sender sees a state 1-5 and sends a free message; the receiver acts 1-5 (strategic personalities).

    ``told = "code"`` (the strategic personalities protocol's default) states the payoffs
    as the paper's code does, as preferences (the Receiver does best at the state, the
    Sender prefers an action higher by the bias); ``"ours"`` states the points lost per
    step. Under both, the Sender's ideal action is capped at 5, the highest there is."""
    how = told_param(told)
    b = as_int("bias", bias, minimum=0, maximum=4)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    space_msg = NumberSpace("message", 1, 5, decimals_allowed=False)
    space_act = NumberSpace("action", 1, 5, decimals_allowed=False)
    rules = (
        "Every round a hidden state from 1 to 5 is drawn. Player 1 (the Sender) sees it and "
        "sends Player 2 (the Receiver) a message, a number from 1 to 5 that costs nothing and "
        "need not be true. The Receiver then chooses an action from 1 to 5. The Receiver loses "
        f"one point per step its action is away from the state; the Sender loses one point per "
        f"step the action is away from the state plus {b}."
    )
    step = "one" if b == 1 else f"{b}"
    code_rules = (
        "Every round a hidden state from 1 to 5 is drawn. Player 1 (the Sender) sees it and "
        "sends Player 2 (the Receiver) a message that costs nothing. The Receiver then "
        "chooses an action from 1 to 5. The Receiver does best when the action equals the "
        f"state; the Sender would rather have the action {step} higher than the state."
    )

    async def play(turn: Turn) -> RoundResult:
        state = int(turn.rng("state").integers(1, 6))
        message = await turn.number(
            0, "message", f"You are the Sender. The state is {state}. You would like the "
            f"Receiver to choose {min(5, state + b)}. Which message (1 to 5) do you send?", space_msg,
            facts={"state": state})
        action = await turn.number(
            1, "act", f"You are the Receiver. The Sender's message says {message:g}. It is "
            f"free and may be untrue; the Sender prefers actions {b} above the state. Which "
            "action (1 to 5) do you choose?", space_act, facts={"message": message})
        pay = cheap_talk_payoffs(state, action, b)
        return RoundResult(pay, {"state": state, "message": message, "action": action},
                           points_summaries(pay))

    return protocol_game(
        "cheap_talk", f"Cheap talk (bias {b})",
        "A sender who knows the state sends a free message to a receiver whose action pays "
        "both; with a bias, full truth-telling is not an equilibrium.",
        moves=("message 1-5", "action 1-5"), roles=("Player 1, the Sender",
                                                   "Player 2, the Receiver"),
        called="a Cheap Talk Game", rules=rules, code_rules=code_rules, protocol=play, rounds=r,
        params={"bias": b, **told_params(how)},
    )
