"""Mediation (CoopEval): design a mediator, approve one by vote, play with "delegate".

One match, all in round 1:

1. ``propose`` — every seat designs a mediator: for each number k = 1..n of players
   who delegate, the one action the mediator then plays for all of them.
2. ``vote`` — every seat sees all designs (``M<i>`` is Player i's) and approves any
   subset; the winner is drawn uniformly, with the match's seeded RNG, among the
   designs with the most approvals.
3. ``play`` — the base game with one extra action per seat, "delegate". Delegators'
   moves are replaced by the winner's action for their number; everyone is paid the
   base game's payoffs for the resulting profile. With ``payoff_view = "base"``
   (CoopEval) the prompt shows the base game's payoffs and the twist the mediator's
   plan and the label that means "delegate": the agent works out what delegating does.
   With ``"resolved"`` the payoff description is the modified game's, so the
   consequences of delegating are spelled out.

Designs are asked once per agent x seat per tournament and reused in every match the
agent plays from that seat (``design_scope = "tournament"``, CoopEval), or in every
match (``"match"``); see :mod:`coop_tui.mechanisms._designs`. Each match's ``propose``
phase info says, per design, which decision it is and whether this match asked it.

Designs are stored in game action indices (labels may be shuffled per decision) in the
``propose`` phase info; ballots, counts and the winner in the ``vote`` phase info; what
each seat chose, who delegated and the mediator's move in the round's info. The round
records the *effective* actions, so cooperation and payoff tables stay comparable
with the other mechanisms; delegation is never counted as cooperation by itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from coop_tui.decisions import Decision
from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms._ballot import count_approvals
from coop_tui.mechanisms._designs import DesignParams, ask_designs, per_match_designs
from coop_tui.mechanisms.base import Mechanism
from coop_tui.prompts import Labelling, PromptRenderer

DELEGATE = "Delegate"
"""Name of the action Mediation appends to every seat (strategies never choose it)."""

Plan = dict[int, int]
"""Number of delegating players (1..n) -> the game action the mediator plays for them."""


class MediationParams(DesignParams):
    """What the play prompt shows and how long a design lives (propose, approve, play)."""


def same_actions(game: Game) -> None:
    if len(set(game.action_counts)) != 1:
        raise ValueError(
            f"{game.key} gives the seats different numbers of actions {game.action_counts}; "
            "a mediator plays one action for every delegator, so every seat needs the same actions"
        )


def mediated_game(game: Game, plan: Mapping[int, int]) -> Game:
    """The base game plus a last action per seat, "delegate", resolved by ``plan``."""
    same_actions(game)
    n = game.n_players
    c = game.action_counts[0]
    payoffs = np.zeros((*(c + 1 for _ in range(n)), n))
    for profile in itertools.product(range(c + 1), repeat=n):
        payoffs[profile] = game.payoff(resolve(profile, plan, c))
    return Game(
        key=game.key,
        title=f"{game.title} with a mediator",
        description=game.description,
        action_names=tuple((*names, DELEGATE) for names in game.action_names),
        payoffs=payoffs,
        cooperative=game.cooperative,
        defect=game.defect,
        params={**game.params, "mediator": {str(k): int(a) for k, a in plan.items()}},
    )


def resolve(chosen: Sequence[int], plan: Mapping[int, int], n_base: int) -> tuple[int, ...]:
    """Replace every "delegate" (action index ``n_base``) with the plan's action."""
    k = sum(1 for a in chosen if a == n_base)
    return tuple(int(plan[k]) if a == n_base else int(a) for a in chosen)


def plan_from(decision: Decision) -> Plan | None:
    """A proposal's plan in game actions; None when the answer is unusable."""
    if not decision.valid or not isinstance(decision.parsed, Mapping):
        return None
    labels = list(decision.labels)
    plan: Plan = {}
    for k, label in decision.parsed.items():
        if label not in labels:
            return None
        plan[int(k)] = decision.label_to_action[labels.index(label)]
    return plan


def plan_lines(plan: Mapping[int, int], own: Labelling) -> list[dict[str, Any]]:
    return [{"count": k, "label": own.label_of(plan[k])} for k in sorted(plan)]


def _names(game: Game, plan: Mapping[int, int]) -> dict[str, str]:
    return {str(k): game.action_names[0][a] for k, a in sorted(plan.items())}


@register_mechanism
class Mediation(Mechanism):
    key = "mediation"
    title = "Mediation (propose, approve, delegate)"
    Params = MediationParams
    phases = ("propose", "vote", "play")

    def check_game(self, game: Game, n_seats: int) -> None:
        super().check_game(game, n_seats)
        same_actions(game)

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        # votes and play per match; designs per match or per tournament
        return 2 * n_seats + per_match_designs(self.params, n_seats)

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p = self.params
        assert isinstance(p, MediationParams)
        plans, proposers = await self._propose(ctx, p)
        if not plans:
            return await self._play_without_mediator(ctx)
        winner = await self._vote(ctx, plans, proposers)
        return await self._play_mediated(ctx, p, plans[winner], winner, proposers[winner])

    async def _propose(
        self, ctx: MatchContext, p: MediationParams
    ) -> tuple[dict[str, Plan], dict[str, int]]:
        """1. Every seat designs a mediator (once per tournament by default): the usable
        designs by id (``M<seat + 1>``) and who proposed each."""
        game, n, r = ctx.game, ctx.n_seats, ctx.renderer
        proposals, refs = await ask_designs(ctx, [
            ctx.phase_request(
                seat, 1, "propose", "mediator",
                twist=r.render("twist/mediation_propose.j2", n_players=n),
                options={"n_players": n}, shared=p.design_scope == "tournament",
            )
            for seat in range(n)
        ], p.design_scope)
        plans: dict[str, Plan] = {}
        proposers: dict[str, int] = {}
        invalid: list[int] = []
        for d in proposals:
            plan = plan_from(ctx.require(d))
            if plan is None:
                invalid.append(d.seat)
                continue
            plans[f"M{d.seat + 1}"] = plan
            proposers[f"M{d.seat + 1}"] = d.seat
        ctx.phase_done(1, "propose", {
            "proposals": {
                pid: {"seat": proposers[pid], "plan": {str(k): a for k, a in plan.items()},
                      "plan_names": _names(game, plan), **refs[proposers[pid]]}
                for pid, plan in plans.items()
            },
            "invalid": invalid,
            "design_scope": p.design_scope,
        })
        return plans, proposers

    async def _vote(
        self, ctx: MatchContext, plans: dict[str, Plan], proposers: dict[str, int]
    ) -> str:
        """2. Approval vote over the designs on the table; the winner drawn among the most
        approved."""
        ids = list(plans)
        votes = await ctx.ask_all([
            ctx.phase_request(
                seat, 1, "vote", "approvals",
                twist=_vote_twist(ctx.renderer, plans, proposers, ctx.n_seats),
                labels=ids,
                extra=_on_table(plans, proposers),
            )
            for seat in range(ctx.n_seats)
        ])
        result = count_approvals([ctx.require(v) for v in votes], ids, ctx.rng("winner"))
        ctx.phase_done(1, "vote", result.info(proposers))
        return result.winner

    async def _play_mediated(
        self, ctx: MatchContext, p: MediationParams, plan: Plan, winner: str, proposer: int
    ) -> MatchOutcome:
        """3. The game with "delegate" added; the mediator plays for those who delegate."""
        game, n = ctx.game, ctx.n_seats
        base_actions = game.action_counts[0]
        mgame = mediated_game(game, plan)
        base_view = p.payoff_view == "base"
        decisions = await ctx.ask_all([
            ctx.play_request(
                seat, 1, game=mgame, describe=game if base_view else None,
                twist=_play_twist(ctx.renderer, plan, proposer, n, base_actions, base_view,
                                  explain=p.explain_payoffs),
                extra={"mediator": dict(plan), "delegate_action": base_actions,
                       "proposer": proposer},
            )
            for seat in range(n)
        ])
        chosen = [int(ctx.require(d).action) for d in decisions]  # type: ignore[arg-type]
        effective = resolve(chosen, plan, base_actions)
        payoffs = game.payoff(effective)
        delegated = [a == base_actions for a in chosen]
        k = sum(delegated)
        ctx.finish_round(1, effective, payoffs, info={
            "chosen": chosen,
            "delegated": delegated,
            "mediator_action": plan[k] if k else None,
            "mediator": winner,
            "cooperated": [game.is_cooperative(i, a) for i, a in enumerate(effective)],
        })
        return MatchOutcome(payoffs, {
            "mediator": winner,
            "plan": {str(c): a for c, a in plan.items()},
            "delegated": delegated,
        })

    async def _play_without_mediator(self, ctx: MatchContext) -> MatchOutcome:
        """No readable design at all (lenient policy only): the base game, said plainly."""
        text = ctx.renderer.render("twist/mediation_none.j2")
        decisions = await ctx.ask_all(
            [ctx.play_request(seat, 1, twist=text) for seat in range(ctx.n_seats)]
        )
        actions = [int(ctx.require(d).action) for d in decisions]  # type: ignore[arg-type]
        payoffs = ctx.game.payoff(actions)
        ctx.finish_round(1, actions, payoffs, info={
            "mediator": None,
            "cooperated": [ctx.game.is_cooperative(i, a) for i, a in enumerate(actions)],
        })
        return MatchOutcome(payoffs, {"mediator": None})


def _on_table(designs: Mapping[str, Mapping[int, int]], proposers: Mapping[str, int]) -> dict[str, Any]:
    """The designs a vote is about and who proposed each, in the request (a paper's own
    wording, :mod:`coop_tui.sources`, renders the ballot from them)."""
    return {"proposals": {pid: dict(d) for pid, d in designs.items()},
            "proposers": dict(proposers)}


def _vote_twist(
    r: PromptRenderer, plans: Mapping[str, Plan], proposers: Mapping[str, int], n: int
) -> Callable[[Labelling], str]:
    def render(own: Labelling) -> str:
        shown = [
            {"id": pid, "proposer": proposers[pid] + 1, "lines": plan_lines(plan, own)}
            for pid, plan in plans.items()
        ]
        return r.render("twist/mediation_vote.j2", proposals=shown, n_players=n)

    return render


def _play_twist(
    r: PromptRenderer, plan: Plan, proposer: int, n: int, delegate_action: int, base_view: bool,
    *, explain: bool = False,
) -> Callable[[Labelling], str]:
    template = "twist/mediation_play_base.j2" if base_view else "twist/mediation_play.j2"

    def render(own: Labelling) -> str:
        return r.render(
            template,
            lines=plan_lines(plan, own),
            proposer=proposer + 1,
            delegate_label=own.label_of(delegate_action),
            n_players=n,
            explain_payoffs=explain,
        )

    return render
