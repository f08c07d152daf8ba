"""Repetition (CoopEval): the same co-players for T rounds, told the continuation
probability and shown the last k rounds.

Match payoff ``discounted`` (CoopEval's published numbers): round t < T weighs
(1 - d) * d**(t - 1) and the last round d**(T - 1), crediting the unobserved tail to
the last round so the weights sum to one. ``mean`` is the plain per-round mean (as the
Axelrod library reports). With d = 1 (no chance the game ends) the discounted weights
would put everything on the last round, so they fall back to the mean.

Each round's info carries whether each seat's action was cooperative, so the rounds
table (and per-round cooperation curves) need not re-derive it from the game.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from coop_tui.decisions import Move
from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.prompts import Labelling, PromptRenderer


class RepetitionParams(MechanismParams):
    rounds: int = Field(default=15, ge=1, le=10_000, description="rounds played (T)")
    continuation: float = Field(default=0.8, description="continuation probability told to agents")
    history: int = Field(default=3, ge=0, description="past rounds shown in each prompt")
    payoff: Literal["discounted", "mean"] = "discounted"
    history_payoffs: bool = Field(
        default=False,
        description="show the points of past rounds too (CoopEval shows actions only)",
    )

    @field_validator("continuation")
    @classmethod
    def _in_unit(cls, v: float) -> float:
        if not 0 < v <= 1:
            raise ValueError(f"continuation {v:g} is outside (0, 1]; give a probability such as 0.8")
        return v


def round_weights(rounds: int, continuation: float, payoff: str) -> list[float]:
    if payoff == "mean" or continuation >= 1:
        return [1.0 / rounds] * rounds
    d = continuation
    weights = [(1 - d) * d ** (t - 1) for t in range(1, rounds)]
    weights.append(d ** (rounds - 1))
    return weights


def history_lines(
    moves: Sequence[Move], own: Labelling, game: Game, seat: int, n_players: int,
    others_seats: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """Past rounds named in the labels of the current decision."""
    others_seats = list(others_seats if others_seats is not None else [j for j in range(n_players) if j != seat])
    out = []
    for m in moves:
        others = []
        for j, a in zip(others_seats, m.others, strict=False):
            who = "the other player" if n_players == 2 else f"Player {j + 1}"
            if game.action_counts[j] == game.action_counts[seat]:
                label = own.label_of(a)
            else:
                label = f"A{a}"
            others.append({"who": who, "label": label})
        out.append({"round": m.round, "own": own.label_of(m.own), "others": others,
                    "payoff": f"{m.payoff:g}"})
    return out


def repetition_twist(
    renderer: PromptRenderer, ctx: MatchContext, seat: int, round_: int, params: RepetitionParams
) -> Callable[[Labelling], str]:
    def render(own: Labelling) -> str:
        shown = ctx.histories[seat][-params.history:] if params.history else []
        return renderer.render(
            "twist/repetition.j2",
            n_others=ctx.n_seats - 1,
            continuation_pct=f"{100 * params.continuation:g}",
            round=round_,
            played=round_ - 1,
            show_payoffs=params.history_payoffs,
            history=list(reversed(history_lines(shown, own, ctx.game, seat, ctx.n_seats))),
        )

    return render


@register_mechanism
class Repetition(Mechanism):
    key = "repetition"
    title = "Repeated game (same co-players)"
    Params = RepetitionParams

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        assert isinstance(self.params, RepetitionParams)
        return n_seats * self.params.rounds

    def condition(self) -> dict[str, Any]:
        return self.params.model_dump()

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p = self.params
        assert isinstance(p, RepetitionParams)
        weights = round_weights(p.rounds, p.continuation, p.payoff)
        totals = [0.0] * ctx.n_seats
        direct = ctx.plays_directly()  # strategies only: no prompts to build
        for t in range(1, p.rounds + 1):
            if direct:
                actions = await ctx.direct_round(t, total_rounds=p.rounds)
            else:
                requests = [
                    ctx.play_request(
                        seat, t,
                        twist=repetition_twist(ctx.renderer, ctx, seat, t, p),
                        total_rounds=p.rounds,
                    )
                    for seat in range(ctx.n_seats)
                ]
                decisions = await ctx.ask_all(requests)
                actions = [ctx.require(d).action for d in decisions]
            payoffs = ctx.game.payoff(actions)  # type: ignore[arg-type]
            ctx.finish_round(t, actions, payoffs, info={  # type: ignore[arg-type]
                "cooperated": [ctx.game.is_cooperative(i, a) for i, a in enumerate(actions)],
            })
            for seat, x in enumerate(payoffs):
                totals[seat] += weights[t - 1] * x
        return MatchOutcome(tuple(totals), {"rounds": p.rounds, "payoff": p.payoff})
