"""NoMechanism: the base game, played once."""

from __future__ import annotations

from coop_tui.engine import MatchContext, MatchOutcome, one_shot_payoffs
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism


@register_mechanism
class NoMechanism(Mechanism):
    key = "none"
    title = "No mechanism (one-shot)"

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        requests = [ctx.play_request(seat, 1) for seat in range(ctx.n_seats)]
        decisions = await ctx.ask_all(requests)
        return MatchOutcome(one_shot_payoffs(ctx, decisions))
