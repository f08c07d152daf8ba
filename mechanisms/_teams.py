"""Pure parts of team tournaments (super-additive cooperation): who plays whom, and the meta-prompt battery.

Kept apart from :mod:`coop_tui.mechanisms.teams` so the schedule and the comprehension
questions (with their true answers computed from a finished match) can be tested and
read without the coroutine around them. Nothing here asks an agent.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Structure = str
"""RI (repeated interactions), GC (group competition) or SA (super-additive: both)."""


def team_of(player: int, team_size: int) -> int:
    """Players are numbered team by team: team g holds players g*m .. g*m + m - 1."""
    return player // team_size


def pairings(structure: Structure, teams: int, team_size: int) -> list[tuple[int, int]]:
    """Every match of one tournament, lower player first, in canonical order.

    RI and SA: every pair of players (C(h*m, 2)); GC: every pair from two different teams,
    team pair by team pair (sum over team pairs of |t_i| * |t_j|). The public code's GC
    restarts its match index for each team pair, so with three or more teams only the
    last pair's matches survive there; here every pair is kept.
    """
    players = range(teams * team_size)
    if structure == "GC":
        out = []
        for ta, tb in itertools.combinations(range(teams), 2):
            a_members = range(ta * team_size, (ta + 1) * team_size)
            b_members = range(tb * team_size, (tb + 1) * team_size)
            out.extend(itertools.product(a_members, b_members))
        return [(int(a), int(b)) for a, b in out]
    return [(int(a), int(b)) for a, b in itertools.combinations(players, 2)]


def matches_per_player(structure: Structure, teams: int, team_size: int) -> int:
    """m of the budget rule N < n*m: how many matches each player is scheduled for."""
    if structure == "GC":
        return (teams - 1) * team_size
    return teams * team_size - 1


def schedule(
    structure: Structure, teams: int, team_size: int, order: str, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """The matches in the order they are played: ``ordered`` is the canonical order (the
    public code's), ``shuffled`` a seeded permutation of it (who sits first in a pair is
    drawn too, so nobody is always Player 1 of the game)."""
    pairs = pairings(structure, teams, team_size)
    if order == "ordered":
        return pairs
    perm = [int(i) for i in rng.permutation(len(pairs))]
    flips = rng.random(len(pairs)) < 0.5
    out = []
    for i in perm:
        a, b = pairs[i]
        out.append((b, a) if flips[i] else (a, b))
    return out


@dataclass
class Round:
    """One round of a match from the tournament's side: both players' actions and points."""

    actions: tuple[int, int]
    payoffs: tuple[float, float]


@dataclass
class MatchLog:
    """A match between two players (``players[0]`` sits at game position 0)."""

    index: int
    players: tuple[int, int]
    rounds: list[Round] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    """Players that chose to leave (after the last round)."""
    ended: str = ""
    """left / max_rounds / budget / skipped (a player had no budget before round 1)."""

    def view_of(self, player: int) -> list[tuple[int, int, float, float]]:
        """(own action, co-player's action, own points, co-player's points) per round."""
        me = self.players.index(player)
        other = 1 - me
        return [(r.actions[me], r.actions[other], r.payoffs[me], r.payoffs[other]) for r in self.rounds]

    def other(self, player: int) -> int:
        return self.players[1 - self.players.index(player)]


# --------------------------------------------------------------------- meta-prompts
@dataclass(frozen=True)
class Question:
    """One comprehension question: what to ask, how it is answered, and the truth."""

    key: str
    kind: str
    """number / allocation / approvals (existing answer kinds)."""
    text: str
    truth: Any
    """number: int; allocation: {"lowest": x, "highest": y}; approvals: {label: bool};
    None when the match gives no way to tell (the question is asked, not scored)."""
    labels: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)


PAYOFF_RANGE = {"min": -1000, "max": 1000}
"""Bounds of numeric meta answers: wide, so the range itself gives no hint of the truth."""

TFT_THRESHOLD = 0.9
FORGIVING_THRESHOLD = 0.7
"""The public code calls a co-player tit-for-tat when more than 90% of its moves fit the
strategy, and forgiving above 70% (its thresholds; our measures of "fit" are ours)."""

META_KEYS = (
    "payoff_range", "actions", "payoff", "rounds", "co_action", "co_points", "co_count",
    "co_total", "tit_for_tat", "forgiving",
)


def tft_share(log: list[tuple[int, int, float, float]], cooperate: int) -> float:
    """Share of the co-player's moves a tit-for-tat player would have made: cooperate in
    round 1, then repeat what the asked player did the round before."""
    if not log:
        return 0.0
    fits = [log[0][1] == cooperate]
    fits += [log[i][1] == log[i - 1][0] for i in range(1, len(log))]
    return sum(fits) / len(fits)


def forgiveness(log: list[tuple[int, int, float, float]], cooperate: int) -> float | None:
    """How often the co-player cooperated right after the asked player defected; None when
    the asked player never defected before the last round (nothing to forgive)."""
    chances = [i for i in range(len(log) - 1) if log[i][0] != cooperate]
    if not chances:
        return None
    return sum(log[i + 1][1] == cooperate for i in chances) / len(chances)


def meta_draws(rng: np.random.Generator, n_actions: int, n_rounds: int) -> tuple[int, int, int, int]:
    """The two actions and two rounds the battery names (a1, a2, r1, r2; rounds from 1),
    drawn apart from the questions so a wording read from the paper's code names the
    same ones (its prompt draws them with its own generator)."""
    a1, a2 = (int(x) for x in rng.integers(0, n_actions, size=2))
    r1, r2 = (int(x) for x in rng.integers(1, n_rounds + 1, size=2))
    return a1, a2, r1, r2


def battery(
    payoff: Any, labels: Sequence[str], log: list[tuple[int, int, float, float]],
    cooperate: int, rng: np.random.Generator | tuple[int, int, int, int],
) -> list[Question]:
    """The ten questions for one player after one match, with their truths.

    ``payoff(own, other)`` is the asked player's points; ``labels[a]`` names action a;
    ``log`` is the match from the asked player's side. The random actions and rounds the
    questions name are drawn from ``rng`` (the match seed), as the public code draws them,
    or given already drawn by :func:`meta_draws`.
    """
    n_actions = len(labels)
    drawn = rng if isinstance(rng, tuple) else meta_draws(rng, n_actions, len(log))
    a1, a2, r1, r2 = drawn
    all_payoffs = [payoff(i, j) for i in range(n_actions) for j in range(n_actions)]
    decoy = f"A{n_actions}" if f"A{n_actions}" not in labels else "Z"
    offered = (*labels, decoy)
    forgiving = forgiveness(log, cooperate)
    number = {"name": "answer", **PAYOFF_RANGE}
    qs = [
        Question("payoff_range", "allocation",
                 "What are the lowest and the highest number of points a player can get in "
                 "a single round?",
                 {"lowest": min(all_payoffs), "highest": max(all_payoffs)},
                 options={"keys": ["lowest", "highest"], **PAYOFF_RANGE}),
        Question("actions", "approvals",
                 f"Which of these are actions a player may choose in this game: "
                 f"{', '.join(offered)}? Mark each true or false.",
                 {lab: lab in labels for lab in offered}, labels=offered),
        Question("payoff", "number",
                 f"How many points do you get in a single round if you choose {labels[a1]} "
                 f"and your co-player chooses {labels[a2]}?",
                 payoff(a1, a2), options=dict(number)),
        Question("rounds", "number", "How many rounds did the match you just finished last?",
                 len(log), options={"name": "answer", "min": 0, "max": 1000}),
        Question("co_action", "approvals",
                 f"Which action did your co-player choose in round {r1} of the match you just "
                 "finished? Mark exactly one true.",
                 {lab: a == log[r1 - 1][1] for a, lab in enumerate(labels)}, labels=tuple(labels)),
        Question("co_points", "number",
                 f"How many points did your co-player get in round {r2} of that match?",
                 log[r2 - 1][3], options=dict(number)),
        Question("co_count", "number",
                 f"How many times did your co-player choose {labels[a1]} in that match?",
                 sum(1 for x in log if x[1] == a1), options={"name": "answer", "min": 0, "max": 1000}),
        Question("co_total", "number",
                 "What was your co-player's total score in that match?",
                 sum(x[3] for x in log), options={"name": "answer", "min": -100000, "max": 100000}),
        Question("tit_for_tat", "approvals",
                 f"Did your co-player mostly play tit-for-tat: {labels[cooperate]} in the first "
                 "round, then in each round the action you had chosen in the round before?",
                 {"tit_for_tat": tft_share(log, cooperate) > TFT_THRESHOLD},
                 labels=("tit_for_tat",)),
        Question("forgiving", "approvals",
                 f"Was your co-player forgiving (did it go back to {labels[cooperate]} right "
                 "after you had not played it)?",
                 None if forgiving is None else {"forgiving": forgiving > FORGIVING_THRESHOLD},
                 labels=("forgiving",)),
    ]
    return qs


def score_answer(q: Question, parsed: Any) -> bool | None:
    """Whether a parsed answer matches the truth; None when the question is not scored.
    An answer that could not be parsed counts as wrong (it is stored with its reason)."""
    if q.truth is None:
        return None
    if parsed is None:
        return False
    if q.kind == "number":
        return _num(parsed) == _num(q.truth)
    if q.kind == "allocation":
        return all(_num(parsed.get(k)) == _num(v) for k, v in q.truth.items())
    return all(bool(parsed.get(k)) == v for k, v in q.truth.items())


def _num(x: Any) -> float | None:
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    try:
        return float(x)
    except (TypeError, ValueError):
        return None
