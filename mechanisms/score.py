"""Endogenous similarity (similarity signals, §4, App. I.8): a judge rates how alike a target is.

A match seats the judge (seat 1) and names the target (seat 2, never asked). The judge
reads a dossier of the target's answers to a benchmark - decisions only, explanations
with the answers redacted, or both - and answers ``SIMILARITY SCORE: n`` (0-100,
decimals allowed; the raw reply is stored, an answer without a score is re-asked). The
dossier is built by the runner from the benchmark stage of the same sweep (or
``source_run``) just before the match, so this module never reads the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from coop_tui.decisions import DecisionRequest, SeatView
from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.grounded.domains import benchmark_key
from coop_tui.grounded.stages import resolve_params
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.schemas import answer_schema

if TYPE_CHECKING:
    from coop_tui.spec_models import Cell
    from coop_tui.store import Store

PLACEHOLDER = "(the target's record is filled in from the benchmark stage when the match runs)"


class ScoreParams(MechanismParams):
    benchmark: str = Field(description="the administered benchmark whose answers the judge reads")
    view: Literal["decision", "explanation", "both"] = "both"
    items: int | None = Field(default=None, ge=1, le=10_000,
                              description="show at most this many of the target's items")
    dossier: str | None = Field(default=None, description="set by the runner; not a sweep field")


@register_mechanism
class SimilarityJudgement(Mechanism):
    key = "score"
    title = "Endogenous similarity judgement (grounded similarity, stage 2)"
    Params = ScoreParams
    phases = ("score",)
    stage = True
    """A pipeline stage run from sweep files, not a game to play in the setup screen."""

    def seat_count(self, game: Game, roster: int | None = None) -> int:
        return 2

    def check_game(self, game: Game, n_seats: int) -> None:
        if n_seats != 2:
            raise ValueError("a judgement seats the judge and its target: two agents")

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        return 1

    @classmethod
    def resolve_inputs(cls, cell: Cell, store: Store | None, run_id: str) -> dict[str, Any]:
        """The judge's dossier: the target's answers from the benchmark stage (this run's,
        or ``source_run``'s), built by :func:`coop_tui.grounded.stages.resolve_params`."""
        return resolve_params(cell, store, run_id)

    def condition(self) -> dict[str, Any]:
        assert isinstance(self.params, ScoreParams)
        return {"benchmark": benchmark_key(self.params.benchmark), "view": self.params.view}

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        assert isinstance(self.params, ScoreParams)
        messages: tuple[dict[str, str], ...] = ()
        if ctx.reads_prompt(0):
            text = ctx.renderer.render("score.j2", view=self.params.view,
                                       dossier=self.params.dossier or PLACEHOLDER)
            messages = ({"role": "user", "content": text},)
        options = {"min": 0, "max": 100, "decimals": True}

        request = DecisionRequest(
            seat=0, round=1, phase="score", kind="score", messages=messages,
            view=SeatView(game=ctx.game, seat=0, round=1, extra={"view": self.params.view}),
            schema=answer_schema("score", (), options), options=options,
        )
        decision = ctx.require(await ctx.ask(request))
        return MatchOutcome((), {"score": decision.parsed})
