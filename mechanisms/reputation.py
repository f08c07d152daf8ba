"""Reputation (CoopEval): a population re-matched at random every round, with records.

How it fits our matchups: a match's seats *are* the population, so one match has
``population`` seats (not the game's 2 or n). ``matchup = "self"`` fills the
population with copies of one agent, ``"cross"`` fills it from the roster in turn
(roster a, b, c with population 6 gives a b c a b c: one mixed population, not every
ordered assignment) and an explicit matchup lists ``population`` agents. The
population must be a multiple of the game's players so everyone plays every round.
Without ``population`` a cross-play population is every roster agent in every game
position (CoopEval: 6 agents give 12 seats in a two-player game, 18 in 3-player Public
Goods); self-play gets two agents per position.

Seating. ``seating = "fixed"`` (CoopEval): the population's seats are cut into one
consecutive block per game position (block r plays Player r + 1 for the whole
match), and each round ``ctx.rng("matching", t)`` shuffles every block on its own and
forms the i-th group from the i-th seat of each block: an agent keeps its role and
its co-players are re-drawn among the other roles' agents. ``seating = "shuffled"``
(our earlier default): the whole population is shuffled and cut into groups, and the
position in the group is the player position, so roles change from round to round.
Before deciding, an agent sees (``context = "coopeval"``, the default: exactly the
information of CoopEval's prompt) that it meets players at random, the chance of another
round, how many rounds it has played, its co-players' names, and the last ``history``
rounds of its own record and of each co-player's record (``order = "first"``);
``context = "extended"`` adds the population's size, its own number, its fixed position
and the round number. With ``order = "higher"`` every listed round also unfolds what the agents met there had done *before* that round,
and so on, within the same window of rounds (the nested record of CoopEval's
Listing 9; each level goes at least one round further back, so the depth is at most
``history``).

Every pairing is one ``finish_round`` with the seats of that group; the round's
info carries the group index. The match payoff of a seat is its weighted per-round
payoff, with the same weights as Repetition (``discounted``: CoopEval's numbers;
``mean``: the plain average). Deterministic strategies receive their own history,
as in Repetition, plus the co-players' records in ``view.extra``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism
from coop_tui.mechanisms.repetition import RepetitionParams, round_weights
from coop_tui.prompts import Labelling


class ReputationParams(RepetitionParams):
    """Repetition's rounds, continuation, history and payoff, plus the population."""

    population: int | None = Field(
        default=None, ge=2, le=1000,
        description="agents in the population (seats); none: every roster agent in every position",
    )
    order: Literal["first", "higher"] = "first"
    seating: Literal["fixed", "shuffled"] = Field(
        default="fixed",
        description="fixed: each agent keeps its game position (CoopEval); shuffled: re-drawn each round",
    )
    history_payoffs: bool = True
    """CoopEval's records show the points each agent received."""
    context: Literal["coopeval", "extended"] = Field(
        default="coopeval",
        description="coopeval: exactly CoopEval's information; extended: also the population's "
        "size, the agent's own number, its fixed position and the round number",
    )


@dataclass(frozen=True)
class Encounter:
    """One group's round: who sat where, what they played, what they got."""

    round: int
    seats: tuple[int, ...]
    actions: tuple[int, ...]
    payoffs: tuple[float, ...]


class Records:
    """Every seat's encounters, for building the records agents are shown."""

    def __init__(self, n_seats: int) -> None:
        self.by_seat: list[list[Encounter]] = [[] for _ in range(n_seats)]

    def add(self, e: Encounter) -> None:
        for s in e.seats:
            self.by_seat[s].append(e)

    def window(self, seat: int, first: int, before: int) -> list[Encounter]:
        """The seat's encounters in rounds ``first`` .. ``before - 1``, most recent first."""
        return [e for e in reversed(self.by_seat[seat]) if first <= e.round < before]


def _fmt(x: float) -> str:
    return f"{x:g}"


class RecordView:
    """Turns encounters into the nested entries the template renders for one reader."""

    def __init__(
        self, records: Records, game: Game, reader: int, own: Labelling, first: int, higher: bool
    ) -> None:
        self.records, self.game, self.reader, self.own = records, game, reader, own
        self.first, self.higher = first, higher
        self.show_positions = not game.symmetric

    def name(self, seat: int) -> str:
        return "you" if seat == self.reader else f"Agent #{seat + 1}"

    def label(self, action: int, position: int) -> str:
        if self.game.action_counts[position] == len(self.own.labels):
            return self.own.label_of(action)
        return f"A{action}"

    def player(self, e: Encounter, pos: int) -> dict[str, Any]:
        return {
            "name": self.name(e.seats[pos]),
            "is_you": e.seats[pos] == self.reader,
            "action": self.label(e.actions[pos], pos),
            "payoff": _fmt(e.payoffs[pos]),
            "position": pos + 1,
        }

    def entries(self, seat: int, before: int) -> list[dict[str, Any]]:
        out = []
        for e in self.records.window(seat, self.first, before):
            pos = e.seats.index(seat)
            others = [j for j in range(len(e.seats)) if j != pos]
            children = []
            if self.higher:
                for j in others:
                    sub = self.entries(e.seats[j], e.round)
                    if sub:
                        children.append({"name": self.name(e.seats[j]), "entries": sub})
            out.append({
                "round": e.round,
                "subject": self.player(e, pos),
                "others": [self.player(e, j) for j in others],
                "children": children,
            })
        return out


@register_mechanism
class Reputation(Mechanism):
    key = "reputation"
    title = "Reputation (random re-matching, visible records)"
    Params = ReputationParams
    pooled = True

    def seat_count(self, game: Game, roster: int | None = None) -> int:
        assert isinstance(self.params, ReputationParams)
        if self.params.population is not None:
            return self.params.population
        return (roster or 2) * game.n_players

    def check_game(self, game: Game, n_seats: int) -> None:
        p = self.params
        assert isinstance(p, ReputationParams)
        if p.population is None:
            if n_seats % game.n_players:
                raise ValueError(
                    f"a population of {n_seats} cannot be split into groups of {game.n_players} "
                    f"({game.key} players); list a multiple of {game.n_players} agents"
                )
            return
        if n_seats != p.population:
            raise ValueError(
                f"reputation with population = {p.population} needs {p.population} seats, "
                f"the matchup gives {n_seats}; list {p.population} agents or change population"
            )
        if p.population % game.n_players:
            raise ValueError(
                f"population {p.population} cannot be split into groups of {game.n_players} "
                f"({game.key} players); use a multiple of {game.n_players}"
            )

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        assert isinstance(self.params, ReputationParams)
        return n_seats * self.params.rounds

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p = self.params
        assert isinstance(p, ReputationParams)
        game = ctx.game
        size = game.n_players
        weights = round_weights(p.rounds, p.continuation, p.payoff)
        records = Records(ctx.n_seats)
        totals = [0.0] * ctx.n_seats
        for t in range(1, p.rounds + 1):
            groups = self.groups(ctx, t, size)
            requests = []
            for g, group in enumerate(groups):
                for pos, seat in enumerate(group):
                    coplayers = [s for s in group if s != seat]
                    requests.append(ctx.play_request(
                        seat, t, position=pos, total_rounds=p.rounds,
                        twist=self._twist(ctx, records, seat, pos, coplayers, t),
                        extra={
                            "group": g,
                            "coplayers": coplayers,
                            "coplayer_histories": {s: tuple(ctx.histories[s]) for s in coplayers},
                            # the whole record and what agents are told, for a paper's
                            # own wording (coop_tui.sources)
                            "records": records,
                            "continuation": p.continuation,
                            "history": p.history,
                            "order": p.order,
                        },
                    ))
            decisions = {d.seat: d for d in await ctx.ask_all(requests)}
            for g, group in enumerate(groups):
                actions = [int(ctx.require(decisions[s]).action) for s in group]  # type: ignore[arg-type]
                payoffs = game.payoff(actions)
                ctx.finish_round(t, actions, payoffs, seats=group, info={
                    "group": g,
                    "cooperated": [game.is_cooperative(i, a) for i, a in enumerate(actions)],
                })
                records.add(Encounter(t, group, tuple(actions), tuple(payoffs)))
                for seat, x in zip(group, payoffs, strict=True):
                    totals[seat] += weights[t - 1] * x
        return MatchOutcome(tuple(totals), {
            "rounds": p.rounds, "payoff": p.payoff, "order": p.order, "population": ctx.n_seats,
            "seating": p.seating,
        })

    def groups(self, ctx: MatchContext, round_: int, size: int) -> list[tuple[int, ...]]:
        """This round's groups; a group's i-th seat plays game position i."""
        assert isinstance(self.params, ReputationParams)
        rng = ctx.rng("matching", round_)
        if self.params.seating == "shuffled":
            order = [int(s) for s in rng.permutation(ctx.n_seats)]
            return [tuple(order[i:i + size]) for i in range(0, len(order), size)]
        per_role = ctx.n_seats // size
        blocks = [
            [r * per_role + int(i) for i in rng.permutation(per_role)] for r in range(size)
        ]
        return [tuple(blocks[r][i] for r in range(size)) for i in range(per_role)]

    def _twist(
        self, ctx: MatchContext, records: Records, seat: int, pos: int,
        coplayers: list[int], round_: int,
    ) -> Callable[[Labelling], str]:
        p = self.params
        assert isinstance(p, ReputationParams)

        def render(own: Labelling) -> str:
            first = max(1, round_ - p.history)
            view = RecordView(records, ctx.game, seat, own, first, p.order == "higher")
            shown = p.history > 0 and round_ > 1
            blocks = []
            if p.history > 0:  # round 1 too: CoopEval says who has no history yet
                blocks.append({"name": "you", "entries": view.entries(seat, round_)})
                blocks.extend(
                    {"name": view.name(c), "entries": view.entries(c, round_)} for c in coplayers
                )
            template = "twist/reputation.j2" if p.context == "coopeval" else (
                "twist/reputation_extended.j2")
            return ctx.renderer.render(
                template,
                population=ctx.n_seats,
                fixed_seat=p.seating == "fixed",
                played=round_ - 1,
                show_payoffs=p.history_payoffs,
                self_name=f"Agent #{seat + 1}",
                opponents=[view.name(c) for c in coplayers],
                n_others=len(coplayers),
                continuation_pct=f"{100 * p.continuation:g}",
                round=round_,
                history=p.history,
                window=min(p.history, round_ - 1),
                higher=p.order == "higher",
                show_positions=view.show_positions,
                position=pos + 1,
                shown=shown,
                blocks=blocks,
            )

        return render

