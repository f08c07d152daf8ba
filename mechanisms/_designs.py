"""What Mediation and Contracting share: the CoopEval options for designs and payoffs.

- ``payoff_view``: ``"base"`` (CoopEval) shows the base game's payoffs and the
  mediator's plan / the contract's terms beside them, and leaves the agent to combine
  them; ``"resolved"`` shows the payoff table with the mediator or the transfers
  already worked in (our earlier default, an easier task).
- ``design_scope``: ``"tournament"`` (CoopEval) asks every agent x seat for its design
  once per tournament (per replicate) and reuses it in every match the agent plays
  from that seat; ``"match"`` asks for new designs in every match. Votes, signatures
  and play are per match either way.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import Field

from coop_tui.decisions import Decision, DecisionRequest
from coop_tui.engine import MatchContext
from coop_tui.mechanisms.base import MechanismParams


class DesignParams(MechanismParams):
    payoff_view: Literal["base", "resolved"] = Field(
        default="base",
        description="base: base payoffs + the plan/terms (CoopEval); resolved: combined table",
    )
    explain_payoffs: bool = Field(
        default=False,
        description="with payoff_view = base: add a sentence on how delegating or the "
        "contract's payments combine with the payoffs shown (not in CoopEval's prompt)",
    )
    design_scope: Literal["tournament", "match"] = Field(
        default="tournament",
        description="tournament: one design per agent x seat, reused in all its matches (CoopEval)",
    )


async def ask_designs(
    ctx: MatchContext, requests: Sequence[DecisionRequest], scope: str
) -> tuple[list[Decision], list[dict[str, Any]]]:
    """Ask every seat for its design; returns the decisions and, per seat, where the
    design comes from: ``design`` (one id per agent x seat x tournament, or per match
    seat), ``decision`` (its decision's cache key; none for a strategy, which answers
    without a prompt), ``asked_in`` (the match that asked) and ``reused`` (True when
    this match took a design asked elsewhere or earlier)."""
    if scope == "match":
        decisions = await ctx.ask_all(requests)
        return decisions, [
            {"design": f"{ctx.match_id}:{d.seat}", "decision": d.cache_key,
             "asked_in": ctx.match_id, "reused": bool(d.reused)}
            for d in decisions
        ]
    results = await asyncio.gather(*(ctx.ask_design(r) for r in requests), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    out: list[Decision] = []
    refs: list[dict[str, Any]] = []
    for decision, asked_here, key in results:  # type: ignore[misc]
        out.append(decision)
        refs.append({
            "design": key,
            "decision": decision.cache_key,
            "asked_in": decision.match_id,
            "reused": not asked_here or bool(decision.reused),
        })
    return out, refs


def per_match_designs(params: Any, n_seats: int) -> int:
    """Designs one match asks for itself: all of them with ``design_scope = "match"``,
    none when the tournament's shared designs are counted once (see below)."""
    return n_seats if getattr(params, "design_scope", "match") == "match" else 0


def shared_designs_by_agent(cells: Iterable[Any], only: set[str] | None = None) -> Counter[str]:
    """How many tournament-wide designs each agent is asked for: one per seat it takes x
    tournament x replicate, for the cells whose mechanism shares its designs (the
    estimate counts them as that agent's calls: 468 in CoopEval's full study).
    ``only``: the tournament keys a slice of the sweep plays (``--shard``)."""
    keys: set[tuple[str, str, int]] = set()
    for cell in cells:
        if cell.mechanism_params.get("design_scope") != "tournament":
            continue
        for replicate in range(cell.replicates):
            tkey = cell.tournament_key(replicate * cell.samples)
            if only is not None and tkey not in only:
                continue
            keys.update((tkey, name, seat) for seat, name in enumerate(cell.seats))
    return Counter(name for _tkey, name, _seat in keys)


def shared_design_count(cells: Iterable[Any], only: set[str] | None = None) -> int:
    """How many tournament-wide designs a sweep (or its slice: ``only``) asks for, all
    agents together."""
    return sum(shared_designs_by_agent(cells, only).values())
