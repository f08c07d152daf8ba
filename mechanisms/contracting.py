"""Contracting (CoopEval): design a payment contract, approve one, sign, then play.

One match, all in round 1:

1. ``propose`` — every seat designs a contract: one whole number per action. A player
   who plays an action with value v > 0 receives v points in total, paid in equal
   shares by the other players; with v < 0 they pay |v| in total, shared equally
   among the others. Payments only move points between players (zero-sum).
2. ``vote`` — every seat approves any subset of the designs (``C<i>`` is Player i's);
   the winner is drawn uniformly (seeded) among the most approved.
3. ``sign`` — every seat signs the winning contract or not; it binds only if all sign.
4. ``play`` — with a binding contract, the payments apply. With ``payoff_view =
   "base"`` (CoopEval) the prompt shows the base game's payoffs and the contract's
   terms beside them, and the agent combines them; with ``"resolved"`` the payoff
   description already includes the transfers. Without a binding contract, the base
   game, with the contract that was refused and who refused it.

Designs live per tournament or per match (``design_scope``), as in Mediation; see
:mod:`coop_tui.mechanisms._designs`.

Designs (in game action indices), ballots, the winner and signatures go to the phase
infos; each round's info carries the transfers and the base-game payoffs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from coop_tui.decisions import Decision
from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms._ballot import count_approvals
from coop_tui.mechanisms._designs import DesignParams, ask_designs, per_match_designs
from coop_tui.mechanisms.base import Mechanism
from coop_tui.mechanisms.mediation import same_actions
from coop_tui.prompts import Labelling, PromptRenderer

Terms = dict[int, int]
"""Game action -> payment its player receives (positive) or pays (negative)."""


class ContractingParams(DesignParams):
    max_payment: int | None = Field(
        default=None, ge=1,
        description="largest payment (absolute value) a contract may name; none: no limit",
    )
    explain_steps: bool = Field(
        default=False,
        description="add our sentences CoopEval's prompts leave out: the design prompt says "
        "payments only move points between players, the vote prompt that every player "
        "decides afterwards whether to sign",
    )


def transfers(terms: Mapping[int, int], profile: Sequence[int]) -> tuple[float, ...]:
    """What each player receives (+) or pays (-) under ``terms`` when ``profile`` is played."""
    n = len(profile)
    values = [float(terms.get(int(a), 0)) for a in profile]
    total = sum(values)
    return tuple(v - (total - v) / (n - 1) for v in values)


def contract_game(game: Game, terms: Mapping[int, int]) -> Game:
    """The base game with the contract's transfers added to every outcome."""
    payoffs = np.array(game.payoffs, dtype=float)
    for profile in itertools.product(*(range(c) for c in game.action_counts)):
        payoffs[profile] = payoffs[profile] + np.asarray(transfers(terms, profile))
    return Game(
        key=game.key,
        title=f"{game.title} under a contract",
        description=game.description,
        action_names=game.action_names,
        payoffs=payoffs,
        cooperative=game.cooperative,
        defect=game.defect,
        params={**game.params, "contract": {str(a): int(v) for a, v in terms.items()}},
    )


def terms_from(decision: Decision) -> Terms | None:
    """A proposal's terms in game actions; None when the answer is unusable."""
    if not decision.valid or not isinstance(decision.parsed, Mapping):
        return None
    labels = list(decision.labels)
    terms: Terms = {}
    for label, value in decision.parsed.items():
        if label not in labels:
            return None
        terms[decision.label_to_action[labels.index(label)]] = int(value)
    return terms


def terms_lines(terms: Mapping[int, int], own: Labelling) -> list[dict[str, Any]]:
    """The terms in the reader's labels, in label order."""
    return [
        {"label": label, "value": terms.get(action, 0)}
        for label, action in zip(own.labels, own.label_to_action, strict=True)
    ]


def _signed(d: Decision) -> bool:
    """A signature counts only when it is an explicit, readable yes."""
    return bool(d.valid and d.parsed is True)


@register_mechanism
class Contracting(Mechanism):
    key = "contracting"
    title = "Contracting (propose, approve, sign, play)"
    Params = ContractingParams
    phases = ("propose", "vote", "sign", "play")

    def check_game(self, game: Game, n_seats: int) -> None:
        super().check_game(game, n_seats)
        same_actions(game)
        if game.n_players < 2:
            raise ValueError("a contract moves points between players; the game needs two or more")

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        # votes, signatures and play per match; designs per match or per tournament
        return 3 * n_seats + per_match_designs(self.params, n_seats)

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p = self.params
        assert isinstance(p, ContractingParams)
        designs, proposers = await self._propose(ctx, p)
        winner: str | None = None
        signed: list[bool] = [False] * ctx.n_seats
        if designs:
            winner = await self._vote(ctx, p, designs, proposers)
            signed = await self._sign(ctx, winner, designs[winner], proposers[winner])
        return await self._play(ctx, p, designs, proposers, winner, signed)

    async def _propose(
        self, ctx: MatchContext, p: ContractingParams
    ) -> tuple[dict[str, Terms], dict[str, int]]:
        """1. Every seat designs a contract (once per tournament by default): the usable
        designs by id (``C<seat + 1>``) and who proposed each."""
        game, n, r = ctx.game, ctx.n_seats, ctx.renderer
        options: dict[str, Any] = {} if p.max_payment is None else {"max_abs": p.max_payment}
        proposals, refs = await ask_designs(ctx, [
            ctx.phase_request(
                seat, 1, "propose", "contract",
                twist=r.render("twist/contracting_propose.j2", n_players=n,
                               explain_steps=p.explain_steps),
                options=options, shared=p.design_scope == "tournament",
            )
            for seat in range(n)
        ], p.design_scope)
        designs: dict[str, Terms] = {}
        proposers: dict[str, int] = {}
        invalid: list[int] = []
        for d in proposals:
            terms = terms_from(ctx.require(d))
            if terms is None:
                invalid.append(d.seat)
                continue
            designs[f"C{d.seat + 1}"] = terms
            proposers[f"C{d.seat + 1}"] = d.seat
        ctx.phase_done(1, "propose", {
            "proposals": {
                cid: {"seat": proposers[cid], "terms": _json_terms(terms),
                      "terms_names": {game.action_names[0][a]: v for a, v in sorted(terms.items())},
                      **refs[proposers[cid]]}
                for cid, terms in designs.items()
            },
            "invalid": invalid,
            "design_scope": p.design_scope,
        })
        return designs, proposers

    async def _vote(
        self, ctx: MatchContext, p: ContractingParams, designs: dict[str, Terms],
        proposers: dict[str, int],
    ) -> str:
        """2. Approval vote over the designs; the winner drawn among the most approved."""
        ids = list(designs)
        votes = await ctx.ask_all([
            ctx.phase_request(
                seat, 1, "vote", "approvals",
                twist=_vote_twist(ctx.renderer, designs, proposers, ctx.n_seats, p.explain_steps),
                labels=ids, extra=_on_table(designs, proposers),
            )
            for seat in range(ctx.n_seats)
        ])
        result = count_approvals([ctx.require(v) for v in votes], ids, ctx.rng("winner"))
        ctx.phase_done(1, "vote", result.info(proposers))
        return result.winner

    async def _sign(
        self, ctx: MatchContext, winner: str, terms: Terms, proposer: int
    ) -> list[bool]:
        """3. Every seat signs the winning contract or not (an explicit yes counts)."""
        n = ctx.n_seats
        sign_twist = _terms_twist(ctx.renderer, "twist/contracting_sign.j2", terms, proposer, n)
        signatures = await ctx.ask_all([
            ctx.phase_request(seat, 1, "sign", "sign", twist=sign_twist, extra={
                "contract": dict(terms), "proposer": proposer})
            for seat in range(n)
        ])
        signed = [_signed(ctx.require(s)) for s in signatures]
        ctx.phase_done(1, "sign", {
            "contract": winner,
            "signed": signed,
            "active": all(signed),
            "invalid": [s.seat for s in signatures if not s.valid],
        })
        return signed

    async def _play(
        self, ctx: MatchContext, p: ContractingParams, designs: dict[str, Terms],
        proposers: dict[str, int], winner: str | None, signed: list[bool],
    ) -> MatchOutcome:
        """4. Play, with the transfers when every player signed."""
        game, n, r = ctx.game, ctx.n_seats, ctx.renderer
        active = winner is not None and all(signed)
        if active:
            assert winner is not None
            terms = designs[winner]
            if p.payoff_view == "base":
                played = game
                twist = _terms_twist(r, "twist/contracting_play_base.j2", terms, proposers[winner], n,
                                     explain=p.explain_payoffs)
            else:
                played = contract_game(game, terms)
                twist = _terms_twist(r, "twist/contracting_play.j2", terms, proposers[winner], n)
        else:
            terms = {}
            played = game
            refused = [i + 1 for i, s in enumerate(signed) if not s]
            twist = _rejected_twist(
                r, designs.get(winner) if winner is not None else None,
                proposers.get(winner, 0) if winner is not None else 0, refused, n,
            )
        # the contract voted for, its proposer and who refused it (a paper's own wording)
        offered = {} if winner is None else {
            "proposed": dict(designs[winner]), "proposer": proposers[winner],
            "refused": [i + 1 for i, s in enumerate(signed) if not s]}
        decisions = await ctx.ask_all([
            ctx.play_request(seat, 1, game=played, twist=twist, extra={
                "contract": dict(terms), "active": active, **offered})
            for seat in range(n)
        ])
        actions = [int(ctx.require(d).action) for d in decisions]  # type: ignore[arg-type]
        base = game.payoff(actions)
        moved = transfers(terms, actions) if active else (0.0,) * n
        payoffs = tuple(b + t for b, t in zip(base, moved, strict=True))
        ctx.finish_round(1, actions, payoffs, info={
            "contract": winner,
            "active": active,
            "transfers": list(moved),
            "base_payoffs": list(base),
            "cooperated": [game.is_cooperative(i, a) for i, a in enumerate(actions)],
        })
        return MatchOutcome(payoffs, {
            "contract": winner,
            "active": active,
            "terms": _json_terms(terms) if active else None,
            "transfers": list(moved),
        })


def _on_table(designs: Mapping[str, Terms], proposers: Mapping[str, int]) -> dict[str, Any]:
    """The contracts a vote is about and who proposed each, in the request (a paper's own
    wording, :mod:`coop_tui.sources`, renders the ballot from them)."""
    return {"proposals": {cid: dict(t) for cid, t in designs.items()},
            "proposers": dict(proposers)}


def _json_terms(terms: Mapping[int, int]) -> dict[str, int]:
    return {str(a): int(v) for a, v in sorted(terms.items())}


def _vote_twist(
    r: PromptRenderer, designs: Mapping[str, Terms], proposers: Mapping[str, int], n: int,
    explain_steps: bool = False,
) -> Callable[[Labelling], str]:
    def render(own: Labelling) -> str:
        shown = [
            {"id": cid, "proposer": proposers[cid] + 1, "terms": terms_lines(terms, own)}
            for cid, terms in designs.items()
        ]
        return r.render("twist/contracting_vote.j2", proposals=shown, n_players=n,
                        explain_steps=explain_steps)

    return render


def _rejected_twist(
    r: PromptRenderer, terms: Terms | None, proposer: int, refused: list[int], n: int
) -> Callable[[Labelling], str]:
    """CoopEval shows the refused contract and who refused it."""

    def render(own: Labelling) -> str:
        return r.render(
            "twist/contracting_rejected.j2",
            had_contract=terms is not None, refused=refused, n_players=n,
            terms=terms_lines(terms, own) if terms is not None else [], proposer=proposer + 1,
        )

    return render


def _terms_twist(
    r: PromptRenderer, template: str, terms: Terms, proposer: int, n: int, *, explain: bool = False
) -> Callable[[Labelling], str]:
    def render(own: Labelling) -> str:
        return r.render(template, terms=terms_lines(terms, own), proposer=proposer + 1, n_players=n,
                        explain_payoffs=explain)

    return render
