"""NoMechanism: the base game, played once (a move-by-move game: its rounds)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer

from coop_tui.engine import MatchContext, MatchOutcome, one_shot_payoffs
from coop_tui.games.base import Game
from coop_tui.games.kinds import ProtocolGame, play_protocol
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms._talk import talk_step
from coop_tui.mechanisms.base import Mechanism, MechanismParams


class NoMechanismParams(MechanismParams):
    rounds_told: Literal["always", "two_by_two", "several"] = Field(
        default="always",
        description='move-by-move games: "always" says "round t of T"; "two_by_two" (the '
        'strategic personalities paper\'s code, which states the number of rounds only in its '
        '2 x 2 matrix games) says only "round t"; "several" adds that the game is played '
        'over several rounds with the same players (coop-tui\'s earlier wording)',
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # the default is left out, so existing runs keep their conditions and match keys
        data = handler(self)
        if data.get("rounds_told") == "always":
            data.pop("rounds_told")
        return data


@register_mechanism
class NoMechanism(Mechanism):
    key = "none"
    title = "No mechanism (one-shot)"
    Params = NoMechanismParams
    talks = True

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        if isinstance(game, ProtocolGame):  # at most one move per seat and phase per round
            return n_seats * game.rounds
        return n_seats

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        if isinstance(ctx.game, ProtocolGame):  # the strategic personalities paper's numeric and sequential games
            return await play_protocol(
                ctx, tell_total=self.params.rounds_told == "always",
                say_repeated=self.params.rounds_told == "several")
        await talk_step(ctx, 1)
        requests = [ctx.play_request(seat, 1) for seat in range(ctx.n_seats)]
        decisions = await ctx.ask_all(requests)
        return MatchOutcome(one_shot_payoffs(ctx, decisions))
