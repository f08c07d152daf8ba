"""Team tournaments (super-additive cooperation, super-additive cooperation): one match is a whole tournament.

Like Reputation, the match's seats are a population: ``teams`` x ``team_size`` players
with fixed identities (seat i is Player i + 1 of group i // team_size + 1; each seat is an
agent of the roster, so a group may mix models). The tournament plays the structure's
matches one after another, in a seeded order (``schedule = "shuffled"``; ``"ordered"``
is the public code's fixed order):

- ``RI`` repeated interactions: every pair of players meets; goal: personal score; no
  group information in the prompts.
- ``GC`` group competition: only players of different groups meet; goal: the group's
  score; group standings shown.
- ``SA`` super-additive: every pair meets; goal: both; group standings shown.

Each match is an iterated game (the super-additive cooperation paper's IPD by default) of at most ``rounds`` (n)
rounds. In the first round of every match the move's prompt shows the co-player as
"unknown" (name and group), which is what one-shot cooperation measures; the planner and
critic always see who it is (as the public code). Each player's move carries the
paper's keep-playing choice in the same answer (``exit_timing = "with_move"``: the play
answer is the move plus ``"leave": true|false``, decided before the round's outcome is
known, one request per player and round); if either leaves, the match ends after that
round. ``"separate"`` asks it as a second request (phase ``exit``) right after the move,
from the same pre-round state; ``"after_round"`` asks it (phase ``exit``) once the
round's outcome is shown (not after the last possible round). Each player may play at most ``budget`` (N) rounds in
the whole tournament, and N < n*m must hold (m: matches per player). With the default
``budget_rule = "hard"`` a match ends when a player's budget is spent and a scheduled
match whose player has nothing left is skipped; ``"soft"`` is the public code: the
check runs after a round, so every later match still plays one round.

Planning (``planning``, every ``plan_every`` = K rounds of a player's own count, before
its move): the planner writes a draft from the player's whole history, its previous
plan and the last critique (phase ``plan``); the critic reviews it (``critique``); the
planner revises it (a second ``plan`` decision) and the revised plan is what the player
is shown from then on (``revised_plan = false``: the draft, as the public code does,
which computes the revision and drops it). After every match each player (``meta =
"all"``; ``"first_player"``: only Player 1, as the code) answers the comprehension
battery of :mod:`coop_tui.mechanisms._teams` (phase ``meta``), each answer scored against
the truth computed from the match.

Everything is a stored decision; rounds carry the pairing, the match round, whether it
was the first round and whether the two players share a group; phases ``exit``,
``plan`` and ``meta`` carry the answers in tournament terms; phase ``tournament``
(round 0) the schedule, match lengths, who left, budgets and scores. The match payoff
of a seat is the player's tournament score (times 1 + ``winner_bonus`` for the members
of the winning group when a bonus is set; the code's "100% bonus" is ``winner_bonus =
1``, which it also applies in RI: ``bonus_in_ri = true``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from coop_tui.decisions import Decision, DecisionRequest, Move, SeatView
from coop_tui.engine import MatchContext, MatchOutcome, _neutral, example_for
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms._teams import (
    META_KEYS,
    MatchLog,
    Round,
    battery,
    matches_per_player,
    meta_draws,
    schedule,
    score_answer,
    team_of,
)
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.prompts import Labelling, payoff_description
from coop_tui.schemas import answer_schema


class TeamsParams(MechanismParams):
    """The super-additive cooperation paper's tournament; defaults are the paper's (2 groups of 3, n = 20, K = 5) with
    the largest budget its rule N < n*m allows (the paper's N = 100 breaks that rule:
    set it with ``check_budget = false``)."""

    structure: Literal["RI", "GC", "SA"] = "SA"
    teams: int = Field(default=2, ge=1, le=100, description="number of groups (h)")
    team_size: int = Field(default=3, ge=1, le=100, description="players per group (m)")
    rounds: int = Field(default=20, ge=1, le=100000, description="most rounds per match (n)")
    check_budget: bool = True
    """False accepts N >= n*m, as the paper's own n = 20, N = 100 does (the budget then
    never binds); only for reproducing those runs."""
    budget: int | None = Field(
        default=None, ge=1, validate_default=True,
        description="most rounds per player in the tournament (N); none: n*m - 1",
    )
    budget_rule: Literal["hard", "soft"] = "hard"
    planning: bool = True
    plan_every: int = Field(default=5, ge=1, description="rounds between plans (K)")
    revised_plan: bool = True
    exit_timing: Literal["with_move", "separate", "after_round"] = "with_move"
    """with_move: the paper's keep-playing decision in the move's own answer (one request
    per player and round); separate: a second request right after the move, from the same
    pre-round state; after_round: a second request once the round's outcome is known."""
    meta: Literal["all", "first_player", "off"] = "all"
    meta_questions: list[str] | None = None
    """A subset of the battery (keys of ``_teams.META_KEYS``); none: all ten."""
    schedule: Literal["shuffled", "ordered"] = "shuffled"
    winner_bonus: float = Field(default=0.0, ge=0, le=100)
    bonus_in_ri: bool = False
    standings: Literal["rank", "points"] = "rank"
    """What GC and SA players are told of the groups: ``rank``, their group's rank only,
    as the paper's code tells them (the default); ``points``, ours, every group's points
    beside it (more to act on than the paper's players had)."""
    rank_counts: Literal["finished", "live"] = "finished"
    """What the group rank and standings count: ``finished``, the points of finished
    matches only, as the paper's code adds a match to the group scores when it ends (the
    default); ``live``, ours, every point scored so far, so the rank can move during a
    match."""

    @property
    def rounds_budget(self) -> int:
        """N, resolved (the validator fills a missing budget in)."""
        assert self.budget is not None
        return self.budget

    @field_validator("teams")
    @classmethod
    def _teams_for_gc(cls, v: int, info: ValidationInfo) -> int:
        if info.data.get("structure") == "GC" and v < 2:
            raise ValueError("GC pairs players of different groups, so it needs at least 2 teams")
        return v

    @field_validator("meta_questions")
    @classmethod
    def _known_questions(cls, v: list[str] | None) -> list[str] | None:
        if v is not None:
            unknown = [k for k in v if k not in META_KEYS]
            if unknown or not v:
                raise ValueError(
                    f"unknown question(s) {unknown or '(empty list)'}; choose from {', '.join(META_KEYS)}"
                )
        return v

    @field_validator("budget")
    @classmethod
    def _budget_below_n_m(cls, v: int | None, info: ValidationInfo) -> int | None:
        d = info.data
        if not {"structure", "teams", "team_size", "rounds"} <= d.keys():
            return v  # an earlier field already failed
        m = matches_per_player(d["structure"], d["teams"], d["team_size"])
        if v is None:
            return d["rounds"] * m - 1 if d["rounds"] * m > 1 else 1
        if d.get("check_budget") is False:
            return v
        if v >= d["rounds"] * m:
            raise ValueError(
                f"must be below n*m = {d['rounds'] * m} ({d['rounds']} rounds x {m} matches per "
                "player; the super-additive cooperation paper's rule N < n*m); lower budget or raise rounds"
            )
        return v


@dataclass
class _State:
    """What carries from match to match: budgets, scores, plans, every match's log."""

    n_players: int
    used: list[int] = field(init=False)
    points: list[float] = field(init=False)
    plans: list[str | None] = field(init=False)
    critiques: list[str | None] = field(init=False)
    planned_at: list[int] = field(init=False)
    logs: list[MatchLog] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = self.n_players
        self.used, self.points = [0] * n, [0.0] * n
        self.plans, self.critiques = [None] * n, [None] * n
        self.planned_at = [0] * n


def _pts(x: float) -> str:
    return f"{x:g}"


@register_mechanism
class Teams(Mechanism):
    key = "teams"
    title = "Team tournament (the super-additive cooperation paper: RI / GC / SA, partner choice, planner and critic)"
    Params = TeamsParams
    phases = ("plan", "critique", "play", "exit", "meta")

    @classmethod
    def phases_for(cls, condition: dict[str, Any]) -> tuple[str, ...]:
        """No plan or critique without planning; no meta-prompts with ``meta = "off"``."""
        off = set()
        if not condition.get("planning", True):
            off |= {"plan", "critique"}
        if condition.get("meta", "all") == "off":
            off.add("meta")
        return tuple(p for p in cls.phases if p not in off)
    pooled = True
    seats_are_players = True
    """The setup screen's seats are the players, one agent each (a human takes one seat)."""

    @property
    def p(self) -> TeamsParams:
        assert isinstance(self.params, TeamsParams)
        return self.params

    def seat_count(self, game: Game, roster: int | None = None) -> int:
        return self.p.teams * self.p.team_size

    def check_game(self, game: Game, n_seats: int) -> None:
        if game.n_players != 2 or not all(game.cooperative):
            raise ValueError(
                f"team tournaments play a two-player game with a cooperative action; {game.key} "
                "is not one (use ipd, the super-additive cooperation paper's Prisoner's Dilemma)"
            )
        if n_seats != self.seat_count(game):
            raise ValueError(
                f"{self.p.teams} teams x {self.p.team_size} players need {self.seat_count(game)} "
                f"seats, the matchup gives {n_seats}; list that many agents or use self/cross"
            )

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        """An upper bound: every player plays min(N, n*m) rounds (its budget, or all its
        matches at full length when the budget cannot bind, as in GC with the paper's
        N = 100 > 20 * 3), one answer per round with the leave choice in it (two with a
        separate exit request; at most two after the round), a planning of 2 or 3 calls
        every K of its rounds, and the battery after each of its matches."""
        p = self.p
        m = matches_per_player(p.structure, p.teams, p.team_size)
        per_player = min(p.rounds_budget, p.rounds * m)
        plays = n_seats * per_player
        plannings = n_seats * ((per_player - 1) // p.plan_every) if p.planning else 0
        plans = plannings * (3 if p.revised_plan else 2)
        per_match = len(p.meta_questions or META_KEYS)
        answering = {"all": n_seats * m, "first_player": m, "off": 0}[p.meta]
        per_play = 1 if p.exit_timing == "with_move" else 2
        return per_play * plays + plans + per_match * answering

    # ------------------------------------------------------------------ the tournament
    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p, game = self.p, ctx.game
        state = _State(ctx.n_seats)
        order = schedule(p.structure, p.teams, p.team_size, p.schedule, ctx.rng("schedule"))
        t = 0
        for k, (a, b) in enumerate(order):
            log = MatchLog(k, (a, b))
            state.logs.append(log)
            if p.budget_rule == "hard" and (
                state.used[a] >= p.rounds_budget or state.used[b] >= p.rounds_budget
            ):
                log.ended = "skipped"
                continue
            for r in range(1, p.rounds + 1):
                t += 1
                if p.planning:
                    await self._plan(ctx, state, log, t, r)
                requests = [self._play_request(ctx, state, log, pos, t, r) for pos in (0, 1)]
                # separate: built from the same pre-round state and asked right after the
                # moves (one request per seat at a time, so a person answers in turn)
                separate = [self._exit_request(ctx, state, log, pos, t, r) for pos in (0, 1)] \
                    if p.exit_timing == "separate" else []
                decisions = await ctx.ask_all(requests)
                exits: list[Decision] = await ctx.ask_all(separate) if separate else []
                if p.exit_timing == "with_move":
                    exits = decisions
                actions = [int(ctx.require(d).action) for d in decisions[:2]]  # type: ignore[arg-type]
                payoffs = game.payoff(actions)
                log.rounds.append(Round((actions[0], actions[1]), (payoffs[0], payoffs[1])))
                for pos, seat in enumerate((a, b)):
                    state.used[seat] += 1
                    state.points[seat] += payoffs[pos]
                intra = team_of(a, p.team_size) == team_of(b, p.team_size)
                ctx.finish_round(t, actions, payoffs, seats=(a, b), info={
                    "pairing": k, "match_round": r, "first": r == 1, "intra": intra,
                    "teams": [team_of(a, p.team_size), team_of(b, p.team_size)],
                    "cooperated": [game.is_cooperative(i, x) for i, x in enumerate(actions)],
                })
                end = self._limit(state, log, r)
                if p.exit_timing == "after_round" and end is None:
                    exits = await ctx.ask_all(
                        [self._exit_request(ctx, state, log, pos, t, r + 1) for pos in (0, 1)]
                    )
                if exits:
                    leave = [_leaves(ctx.require(d)) for d in exits]
                    log.left = [seat for seat, gone in zip((a, b), leave, strict=True) if gone]
                    ctx.phase_done(t, "exit", {
                        "pairing": k, "match_round": r,
                        "leave": {str(s): gone for s, gone in zip((a, b), leave, strict=True)},
                        "timing": p.exit_timing,
                    })
                    if log.left and end is None:
                        end = "left"
                if end is not None:
                    log.ended = end
                    break
            if p.meta != "off":
                await self._meta(ctx, state, log, t)
        return self._finish(ctx, state, t)

    def _limit(self, state: _State, log: MatchLog, r: int) -> str | None:
        """Why the match must end after round r regardless of what the players want."""
        if r >= self.p.rounds:
            return "max_rounds"
        if any(state.used[s] >= self.p.rounds_budget for s in log.players):
            return "budget"
        return None

    def _finish(self, ctx: MatchContext, state: _State, t: int) -> MatchOutcome:
        p = self.p
        team_scores = [0.0] * p.teams
        for seat, x in enumerate(state.points):
            team_scores[team_of(seat, p.team_size)] += x
        best = max(team_scores)
        winners = [g for g, x in enumerate(team_scores) if x == best]
        apply = p.winner_bonus > 0 and (p.structure != "RI" or p.bonus_in_ri)
        final = [
            x * (1 + p.winner_bonus) if apply and team_of(s, p.team_size) in winners else x
            for s, x in enumerate(state.points)
        ]
        summary = {
            "structure": p.structure,
            "teams": [list(range(g * p.team_size, (g + 1) * p.team_size)) for g in range(p.teams)],
            "matches": [
                {"pairing": log.index, "players": list(log.players), "rounds": len(log.rounds),
                 "ended": log.ended, "left": log.left,
                 "intra": team_of(log.players[0], p.team_size) == team_of(log.players[1], p.team_size)}
                for log in state.logs
            ],
            "used": state.used,
            "budget": p.rounds_budget,
            "points": state.points,
            "team_points": team_scores,
            "winners": winners,
            "bonus_applied": apply,
            "final": final,
            "rounds_played": t,
        }
        ctx.phase_done(0, "tournament", summary)
        return MatchOutcome(tuple(final), {
            "structure": p.structure, "teams": p.teams, "team_size": p.team_size,
            "winners": winners, "rounds_played": t,
        })

    # ------------------------------------------------------------------ what players see
    def _situation(
        self, ctx: MatchContext, state: _State, log: MatchLog, seat: int, r: int,
        label: Callable[[int], str], hide_opponent: bool | None = None,
    ) -> dict[str, Any]:
        """What a player reads about the tournament. The co-player is "unknown" in a
        match's first round (``hide_opponent``, default: r == 1), for the moves that
        measure one-shot cooperation; the planner and critic always see it, as in the
        public code."""
        p = self.p
        other = log.other(seat)
        unknown = r == 1 if hide_opponent is None else hide_opponent
        team_scores = [0.0] * p.teams
        for s, x in enumerate(state.points):
            team_scores[team_of(s, p.team_size)] += x
        if p.rank_counts == "finished":  # this match's points count once it has ended
            for pos, s in enumerate(log.players):
                team_scores[team_of(s, p.team_size)] -= sum(r.payoffs[pos] for r in log.rounds)
        mine = team_of(seat, p.team_size)
        ranked = sorted(range(p.teams), key=lambda g: (-team_scores[g], g))
        return {
            "structure": p.structure,
            "exit_timing": p.exit_timing,
            "players": ctx.n_seats,
            "teams": p.teams,
            "team_size": p.team_size,
            "max_rounds": p.rounds,
            "budget": p.rounds_budget,
            "used": state.used[seat],
            "left": max(0, p.rounds_budget - state.used[seat]),
            "bonus_pct": f"{100 * p.winner_bonus:g}" if p.winner_bonus and (p.structure != "RI" or p.bonus_in_ri) else "",
            "me": f"Agent #{seat + 1}",
            "opponent": "Agent unknown" if unknown else f"Agent #{other + 1}",
            "show_groups": p.structure != "RI",
            "my_group": f"Group {mine + 1}",
            "opponent_group": "Group unknown" if unknown else f"Group {team_of(other, p.team_size) + 1}",
            "members": [f"Agent #{s + 1}" for s in range(mine * p.team_size, (mine + 1) * p.team_size)],
            "standings": ([{"name": f"Group {g + 1}", "score": _pts(team_scores[g])} for g in ranked]
                          if p.standings == "points" else []),
            "rank": ranked.index(mine) + 1,
            "match_round": r,
            "match": _match_block(log, seat, "This match so far", label),
            "plan": state.plans[seat],
        }

    def _rules_context(
        self, ctx: MatchContext, state: _State, log: MatchLog, seat: int, r: int,
        hide_opponent: bool | None = None,
    ) -> dict[str, Any]:
        """The situation plus the game itself, for prompts that are not play decisions."""
        own = _neutral(ctx.game.action_counts[0])
        s = self._situation(ctx, state, log, seat, r, own.label_of, hide_opponent)
        s["labels"] = list(own.labels)
        s["payoff_description"] = payoff_description(ctx.game, log.players.index(seat), [own, own])
        return s

    def _play_request(
        self, ctx: MatchContext, state: _State, log: MatchLog, pos: int, t: int, r: int
    ) -> DecisionRequest:
        seat = log.players[pos]

        def twist(own: Labelling) -> str:
            s = self._situation(ctx, state, log, seat, r, own.label_of)
            return ctx.renderer.render("teams/play.j2", s=s)

        # GC: the players pursue the group's score only (the paper's GC prompt); the
        # wrapper's personal goal would make it SA
        request = ctx.play_request(
            seat, t, position=pos, history=_moves(log, seat), total_rounds=self.p.rounds,
            twist=twist, extra={"pairing": log.index, "co_player": log.other(seat),
                                **_facts(ctx, self.p, state, log, seat)},
            goal="" if self.p.structure == "GC" else None,
            ask_leave=self.p.exit_timing == "with_move",
            numbered=False,  # the twist names the player: "Agent #k", never "Player 2"
        )
        return replace(request, view=replace(request.view, round=r))

    def _exit_request(
        self, ctx: MatchContext, state: _State, log: MatchLog, pos: int, t: int, next_round: int
    ) -> DecisionRequest:
        """Leave or stay; the view's history is the match so far (strategies' rule)."""
        seat = log.players[pos]
        text = None
        if ctx.reads_prompt(seat):
            s = self._rules_context(ctx, state, log, seat, next_round)
            text = ctx.renderer.render("teams/exit.j2", s=s, cot=_cot(ctx, seat))
        return _request(ctx, seat, t, "exit", "approvals", text, ("leave",), {},
                        _view(ctx, log, pos, next_round, _facts(ctx, self.p, state, log, seat)))

    async def _plan(self, ctx: MatchContext, state: _State, log: MatchLog, t: int, r: int) -> None:
        """Planner, critic, revision for every player of this match whose own round count
        has reached a new multiple of K (before its move)."""
        due = [
            pos for pos, seat in enumerate(log.players)
            if state.used[seat] > 0 and state.used[seat] % self.p.plan_every == 0
            and state.planned_at[seat] != state.used[seat]
        ]
        if not due:
            return
        results = await asyncio.gather(*(self._plan_one(ctx, state, log, pos, t, r) for pos in due))
        ctx.phase_done(t, "plan", {str(log.players[pos]): res for pos, res in zip(due, results, strict=True)})

    async def _plan_one(
        self, ctx: MatchContext, state: _State, log: MatchLog, pos: int, t: int, r: int
    ) -> dict[str, Any]:
        seat = log.players[pos]
        state.planned_at[seat] = state.used[seat]

        def view(**asked: Any) -> SeatView:
            return _view(ctx, log, pos, r, _facts(ctx, self.p, state, log, seat, **asked))

        def text(template: str, **extra: Any) -> str | None:
            if not ctx.reads_prompt(seat):
                return None
            s = self._rules_context(ctx, state, log, seat, r, hide_opponent=False)
            s["history"] = _history(state, seat, self.p.team_size, s["show_groups"])
            s["stats"] = _match_stats(log, seat, min(ctx.game.cooperative[0]), s["labels"])
            s.update(extra)
            return ctx.renderer.render(template, s=s)

        draft_d = ctx.require(await ctx.ask(_request(
            ctx, seat, t, "plan", "text",
            text("teams/plan.j2", previous_plan=state.plans[seat], critique=state.critiques[seat]),
            (), {}, view(old_plan=state.plans[seat], critique=state.critiques[seat]))))
        draft = draft_d.parsed if draft_d.valid else state.plans[seat]
        critique_d = ctx.require(await ctx.ask(_request(
            ctx, seat, t, "critique", "text", text("teams/critique.j2", draft=draft), (), {},
            view(draft=draft))))
        critique = critique_d.parsed if critique_d.valid else None
        final = draft
        if self.p.revised_plan:
            revised_d = ctx.require(await ctx.ask(_request(
                ctx, seat, t, "plan", "text",
                text("teams/plan.j2", previous_plan=draft, critique=critique), (), {},
                view(old_plan=draft, critique=critique))))
            if revised_d.valid:
                final = revised_d.parsed
        state.plans[seat], state.critiques[seat] = final, critique
        return {"draft": draft, "critique": critique, "plan": final, "revised": self.p.revised_plan,
                "rounds_played": state.used[seat]}

    async def _meta(self, ctx: MatchContext, state: _State, log: MatchLog, t: int) -> None:
        """The comprehension battery for the players of a finished match, scored."""
        if not log.rounds:
            return

        game = ctx.game
        cooperate = min(game.cooperative[0])
        labels = _neutral(game.action_counts[0]).labels
        asked = [pos for pos, seat in enumerate(log.players) if self.p.meta == "all" or seat == 0]
        plan: list[tuple[int, Any]] = []
        requests = []
        for pos in asked:
            seat = log.players[pos]

            def pay(own: int, other: int, pos: int = pos) -> float:
                profile = [0, 0]
                profile[pos], profile[1 - pos] = own, other
                return float(game.payoff(profile)[pos])

            drawn = meta_draws(ctx.rng("meta", log.index, seat), len(labels), len(log.rounds))
            questions = battery(pay, labels, log.view_of(seat), cooperate, drawn)
            if self.p.meta_questions is not None:
                questions = [q for q in questions if q.key in self.p.meta_questions]
            s = self._rules_context(ctx, state, log, seat, len(log.rounds)) if ctx.reads_prompt(seat) else None
            if s is not None:
                s["opponent"] = f"Agent #{log.other(seat) + 1}"
                s["opponent_group"] = f"Group {team_of(log.other(seat), self.p.team_size) + 1}"
                s["match"] = _match_block(log, seat, "The match you just finished", lambda a: labels[a])
            for q in questions:
                text = None
                if s is not None:
                    text = ctx.renderer.render(
                        "teams/meta.j2", s=s, question=q.text, cot=_cot(ctx, seat),
                        example=example_for(q.kind, q.labels, q.options).replace("<true/false>", "false"),
                    )
                plan.append((seat, q))
                facts = _facts(ctx, self.p, state, log, seat, draws=drawn, question=q.key)
                requests.append(_request(ctx, seat, t, "meta", q.kind, text, q.labels, dict(q.options),
                                         _view(ctx, log, pos, len(log.rounds) + 1, facts)))
        decisions = await ctx.ask_all(requests)
        by_seat: dict[str, dict[str, Any]] = {}
        for (seat, q), d in zip(plan, decisions, strict=True):
            # no ctx.require: the battery measures a match already played, and the paper's
            # code scores an answer it cannot read as wrong and plays on; the decision stays
            # stored invalid with its reason, and counts as a wrong answer
            correct = score_answer(q, d.parsed if d.valid else None)
            entry = by_seat.setdefault(str(seat), {"pairing": log.index, "questions": []})
            entry["questions"].append({"key": q.key, "truth": q.truth, "answer": d.parsed,
                                       "valid": d.valid, "correct": correct})
        for entry in by_seat.values():
            scored = [q["correct"] for q in entry["questions"] if q["correct"] is not None]
            entry["accuracy"] = sum(scored) / len(scored) if scored else None
        ctx.phase_done(t, "meta", by_seat)


# ---------------------------------------------------------------------- helpers
def _cot(ctx: MatchContext, seat: int) -> bool:
    return (getattr(ctx.agents[seat], "style", "cot") or "cot") == "cot"


def _leaves(d: Decision) -> bool:
    """A valid answer's leave choice (a move carrying it, or an exit request's); an
    unusable one (lenient policy: played at random) stays, recorded."""
    if d.leave is not None:
        return d.leave
    return bool(d.phase == "exit" and d.valid and isinstance(d.parsed, dict) and d.parsed.get("leave"))


def _moves(log: MatchLog, seat: int) -> list[Move]:
    return [
        Move(i + 1, own, (other,), own_pts, (other_pts,))
        for i, (own, other, own_pts, other_pts) in enumerate(log.view_of(seat))
    ]


def _facts(
    ctx: MatchContext, p: TeamsParams, state: _State, log: MatchLog, seat: int, **asked: Any,
) -> dict[str, Any]:
    """The whole tournament as a prompt-reading seat's request carries it (key
    ``"tournament"`` of the view's extra), so a wording read from the paper's own
    code (:mod:`coop_tui.sources.superadditive`) can rebuild the code's state from
    the request alone: the settings, every match so far in the order played (players,
    rounds as (actions, payoffs), how it ended), the index of this one, each player's
    plan and critique, and what this request was asked with (``asked``: the planner's
    old plan and critique, the critic's draft, the battery's draws). Plain data only;
    none for seats that read no prompt, so strategy tournaments pay nothing for it."""
    if not ctx.reads_prompt(seat):
        return {}
    return {"tournament": {
        "structure": p.structure, "teams": p.teams, "team_size": p.team_size,
        "rounds": p.rounds, "budget": p.rounds_budget, "winner_bonus": p.winner_bonus,
        "plan_every": p.plan_every if p.planning else 0,
        "cooperate": min(ctx.game.cooperative[0]),
        "matches": tuple(
            (m.players, tuple((r.actions, r.payoffs) for r in m.rounds), m.ended)
            for m in state.logs
        ),
        "current": log.index,
        "plans": tuple(state.plans), "critiques": tuple(state.critiques),
        "asked": dict(asked),
    }}


def _view(
    ctx: MatchContext, log: MatchLog, pos: int, round_: int, facts: dict[str, Any] | None = None,
) -> SeatView:
    seat = log.players[pos]
    return SeatView(game=ctx.game, seat=pos, round=round_, history=tuple(_moves(log, seat)),
                    extra={"pairing": log.index, "co_player": log.other(seat), **(facts or {})})


def _request(
    ctx: MatchContext, seat: int, t: int, phase: str, kind: Any, text: str | None,
    labels: tuple[str, ...], options: dict[str, Any], view: SeatView,
) -> DecisionRequest:
    """A tournament decision with our own prompt (none for agents that read none)."""
    return DecisionRequest(
        seat=seat, round=t, phase=phase, kind=kind,
        messages=({"role": "user", "content": text},) if text is not None else (),
        view=view, labels=labels, schema=answer_schema(kind, labels, options), options=options,
    )


def _match_block(
    log: MatchLog, seat: int, title: str, label: Callable[[int], str]
) -> dict[str, Any]:
    return {
        "title": title,
        "lines": [
            {"round": i + 1, "own": label(own), "other": label(other),
             "own_points": _pts(op), "other_points": _pts(xp)}
            for i, (own, other, op, xp) in enumerate(log.view_of(seat))
        ],
    }


def _history(state: _State, seat: int, team_size: int, groups: bool) -> list[dict[str, Any]]:
    """Every match the player has played rounds in, for the planner and the critic,
    each headed by its two players in the match's order and (GC, SA) their groups, as
    the public code heads them."""
    labels = _neutral(2).labels

    def name(s: int) -> str:
        return f"Agent #{s + 1} from Group {team_of(s, team_size) + 1}" if groups else f"Agent #{s + 1}"

    return [
        _match_block(log, seat, f"Match between {name(log.players[0])} and {name(log.players[1])}",
                     lambda a: labels[a])
        for log in state.logs if seat in log.players and log.rounds
    ]


def _match_stats(log: MatchLog, seat: int, cooperate: int, labels: list[str]) -> dict[str, str]:
    """The players' stats block of the planner and critic, as the public code gives it:
    both players' share of the cooperative action and their points, in the current
    match only ("unknown" share before its first round)."""
    rows = log.view_of(seat)

    def share(moves: list[int]) -> str:
        return f"{100 * moves.count(cooperate) / len(moves):.0f}%" if moves else "unknown"

    return {
        "action": labels[cooperate],
        "own_rate": share([own for own, _o, _p, _q in rows]),
        "other_rate": share([other for _m, other, _p, _q in rows]),
        "own_score": _pts(sum(p for _m, _o, p, _q in rows)),
        "other_score": _pts(sum(q for _m, _o, _p, q in rows)),
    }


__all__ = ["Teams", "TeamsParams"]
