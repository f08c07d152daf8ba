"""NoMechanism: the base game, played once."""

from __future__ import annotations

from coop_tui.engine import MatchContext, MatchOutcome, one_shot_payoffs
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism


@register_mechanism
class NoMechanism(Mechanism):
    key = "none"
    title = "No mechanism (one-shot)"

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        from coop_tui.games.kinds import ProtocolGame

        if isinstance(game, ProtocolGame):  # at most one move per seat and phase per round
            return n_seats * game.rounds
        return n_seats

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        from coop_tui.games.kinds import ProtocolGame, play_protocol

        if isinstance(ctx.game, ProtocolGame):  # seed 003's numeric and sequential games
            return await play_protocol(ctx)
        requests = [ctx.play_request(seat, 1) for seat in range(ctx.n_seats)]
        decisions = await ctx.ask_all(requests)
        return MatchOutcome(one_shot_payoffs(ctx, decisions))
