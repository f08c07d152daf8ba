"""Seed 003's profile of a run's repeated two-player play, from stored rounds.

Reading is two small queries (seats, agents) and one row per finished match carrying
its rounds as one string (a correlated subquery over the rounds primary key: no
temporary B-tree to group a million rows); Python then counts per match seat — round
pairs after the co-player cooperated or defected, first / last / second-to-last round,
joint cooperation — in one pass, about a second per million stored rounds.

Who is profiled: every seat of a two-seat match whose rounds record cooperation, except
in ``matchup = "versus"`` (an agent against fixed strategies), where only the agent in
seat 0 is (the strategies are the yardstick, not the subject). Per-agent reciprocity and
endgame numbers pool all games and opponents, as the paper does; the endgame uses only
matches whose horizon the players were told (``horizon = "known"``) when there are any.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from coop_tui.analysis.intervals import cluster_ratio_interval, t_interval
from coop_tui.analysis.personality import archetype, endgame_type, provider_from_spec
from coop_tui.analysis.stats import cohens_h, wilson_interval

__all__ = ["METHODS", "SeatRun", "has_repeated_pairs", "load_seat_runs", "personality_profile"]

METHODS = {
    "rate_wilson": "Wilson 95% over pooled decisions (assumes rounds independent; the "
    "paper's binomial interval, for comparison)",
    "rate_trials": "t-interval over per-match cooperation rates (clustered by match; the "
    "paper's per-trial interval; both seats of a self-play match form one trial)",
    "conditional": "P(C|C), P(C|D): pooled round pairs with Wilson 95% (paper) and a "
    "cluster-robust CR1 interval clustered by match (ours)",
    "endgame": "rates at each match's last and second-to-last round, Wilson over sequences "
    "and a cluster-robust interval by match",
    "curve": "per-round rate aligned from round 1, Wilson 95% over the sequences reaching "
    "that round",
    "provider_tests": "Kruskal-Wallis and pairwise Mann-Whitney U over per-match "
    "cooperation rates (one value per match and agent), Cohen's h of pooled rates and "
    "Cohen's d of the per-match rates",
}

@dataclass(frozen=True)
class SeatRun:
    """One seat's sequence in one match, as counts."""

    match_id: str
    seat: int
    agent: str
    opponent: str
    provider: str
    game: str
    condition: str | None
    known_horizon: bool
    rounds: int
    coop: int
    first: int | None
    joint: int
    last: int | None
    before_last: int | None
    after_c: int
    coop_after_c: int
    after_d: int
    coop_after_d: int
    moves: tuple[tuple[int, int], ...] = ()
    """(round, cooperated) of this seat, in round order."""


def has_repeated_pairs(db: Any, run_id: str) -> bool:
    """Cheap test: does the run hold a finished match with a second round?"""
    row = db.execute(
        """select 1 from matches m join rounds r on r.match_id = m.id
           where m.run_id = ? and m.status = 'done' and r.round = 2
             and r.cooperated is not null limit 1""",
        [run_id],
    ).fetchone()
    return row is not None


def _condition(text: str | None) -> tuple[str | None, bool]:
    cond = json.loads(text) if text else {}
    return cond.get("condition"), cond.get("horizon") == "known"


def _seat_run(base: tuple[Any, ...], seat: int, mine: dict[int, int],
              theirs: dict[int, int]) -> SeatRun:
    """Counts for one seat from both seats' moves by round (rounds both recorded)."""
    mid, agent, opponent, provider, game, label, known = base
    rounds = sorted(t for t in mine if t in theirs)
    first, last = rounds[0], rounds[-1]
    ac = cac = ad = cad = 0
    for t in rounds:
        prev = theirs.get(t - 1)
        if prev is None or t - 1 not in mine:
            continue
        if prev:
            ac += 1
            cac += mine[t]
        else:
            ad += 1
            cad += mine[t]
    return SeatRun(
        mid, seat, agent, opponent, provider, game, label, known, len(rounds),
        sum(mine[t] for t in rounds), mine[first], sum(mine[t] * theirs[t] for t in rounds),
        mine[last], mine.get(last - 1) if last - 1 in theirs else None,
        ac, cac, ad, cad, tuple((t, mine[t]) for t in rounds),
    )


def load_seat_runs(db: Any, run_id: str) -> list[SeatRun]:
    """One :class:`SeatRun` per profiled (match, seat).

    Each finished match's rounds come back as one string (a correlated subquery on the
    rounds primary key, so SQLite needs no temporary B-tree to group a million rows);
    agents' specs are read once per agent and conditions parsed once per distinct text.
    """
    providers = {agent: provider_from_spec(kind, spec) for agent, kind, spec in db.execute(
        """select distinct s.agent, s.agent_kind, s.agent_spec from seats s
           join matches m on m.id = s.match_id where m.run_id = ?""", [run_id]).fetchall()}
    seats: dict[str, dict[int, str]] = defaultdict(dict)
    for mid, seat, agent in db.execute(
            """select s.match_id, s.seat, s.agent from matches m join seats s
               on s.match_id = m.id where m.run_id = ? and m.status = 'done'""", [run_id]):
        seats[mid][seat] = agent
    conditions: dict[str | None, tuple[str | None, bool]] = {}
    out: list[SeatRun] = []
    rows = db.execute(
        """select m.id, m.game, m.condition, m.matchup,
                  (select group_concat(r.round || ' ' || r.seat || ' ' || r.cooperated, ' ')
                   from rounds r where r.match_id = m.id and r.cooperated is not null)
           from matches m where m.run_id = ? and m.status = 'done'""", [run_id])
    for mid, game, cond, matchup, moves in rows:
        pair = seats.get(mid, {})
        if not moves or sorted(pair) != [0, 1]:
            continue
        values = list(map(int, moves.split(" ")))
        rounds, which, coop = values[0::3], values[1::3], values[2::3]
        by_seat: tuple[dict[int, int], dict[int, int]] = (
            {t: c for t, w, c in zip(rounds, which, coop, strict=True) if w == 0},
            {t: c for t, w, c in zip(rounds, which, coop, strict=True) if w == 1},
        )
        common = [t for t in by_seat[0] if t in by_seat[1]]
        if len(common) < 2:
            continue  # one round: nothing repeated to profile
        if cond not in conditions:
            conditions[cond] = _condition(cond)
        label, known = conditions[cond]
        for seat in (0, 1) if matchup != "versus" else (0,):
            agent, opponent = pair[seat], pair[1 - seat]
            base = (mid, agent, opponent, providers[agent], game, label, known)
            out.append(_seat_run(base, seat, by_seat[seat], by_seat[1 - seat]))
    return out


def _curve_counts(runs: list[SeatRun]) -> dict[int, list[int]]:
    counts: dict[int, list[int]] = {}
    for r in runs:
        for t, c in r.moves:
            acc = counts.setdefault(t, [0, 0])
            acc[0] += 1
            acc[1] += c
    return counts


def _wilson(successes: float, n: int) -> list[float] | None:
    return list(wilson_interval(successes, n)) if n else None


def _rate(successes: float, n: int) -> float | None:
    return successes / n if n else None


def _trial_rates(runs: list[SeatRun]) -> list[float]:
    """Per-match cooperation rates (both seats of a self-play match are one trial)."""
    by_match: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in runs:
        acc = by_match[r.match_id]
        acc[0] += r.coop
        acc[1] += r.rounds
    return [c / n for c, n in by_match.values() if n]


def _clustered(runs: list[SeatRun], successes: str, trials: str) -> dict[str, Any]:
    by_match: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in runs:
        acc = by_match[r.match_id]
        value = getattr(r, successes)
        count = getattr(r, trials)
        if value is None or count is None:
            continue
        acc[0] += value
        acc[1] += count
    return cluster_ratio_interval([tuple(v) for v in by_match.values()])


def _cooperation(runs: list[SeatRun]) -> dict[str, Any]:
    n = sum(r.rounds for r in runs)
    c = sum(r.coop for r in runs)
    trials = t_interval(_trial_rates(runs))
    firsts = [r.first for r in runs if r.first is not None]
    return {
        "rate": _rate(c, n), "decisions": n, "wilson": _wilson(c, n),
        "trials": trials["n"], "trial_mean": trials["mean"], "trial_sd": trials["sd"],
        "trial_interval": None if trials["lo"] is None
        else [max(0.0, trials["lo"]), min(1.0, trials["hi"])],
        "first_round": _rate(sum(firsts), len(firsts)), "first_round_n": len(firsts),
        "joint": _rate(sum(r.joint for r in runs), n),
    }


def _conditional(runs: list[SeatRun]) -> dict[str, Any]:
    ac = sum(r.after_c for r in runs)
    ad = sum(r.after_d for r in runs)
    p_cc = _rate(sum(r.coop_after_c for r in runs), ac)
    p_cd = _rate(sum(r.coop_after_d for r in runs), ad)
    cl_c = _clustered(runs, "coop_after_c", "after_c")
    cl_d = _clustered(runs, "coop_after_d", "after_d")
    return {
        "p_c_after_c": p_cc, "n_after_c": ac,
        "wilson_after_c": _wilson(p_cc * ac, ac) if ac else None,
        "cluster_after_c": None if cl_c["lo"] is None else [cl_c["lo"], cl_c["hi"]],
        "p_c_after_d": p_cd, "n_after_d": ad,
        "wilson_after_d": _wilson(p_cd * ad, ad) if ad else None,
        "cluster_after_d": None if cl_d["lo"] is None else [cl_d["lo"], cl_d["hi"]],
        "index": None if p_cc is None or p_cd is None else p_cc - p_cd,
        "archetype": archetype(p_cc, p_cd),
    }


def _curve(counts: dict[int, list[int]]) -> dict[str, list[Any]]:
    rounds = sorted(counts)
    return {
        "rounds": rounds,
        "rate": [counts[t][1] / counts[t][0] for t in rounds],
        "n": [counts[t][0] for t in rounds],
        "wilson": [_wilson(counts[t][1], counts[t][0]) for t in rounds],
    }


def _endgame(runs: list[SeatRun], curve: dict[str, list[Any]]) -> dict[str, Any] | None:
    known = [r for r in runs if r.known_horizon]
    used = known or runs
    pairs = [r for r in used if r.last is not None and r.before_last is not None]
    if not pairs:
        return None
    n = len(pairs)
    last = sum(r.last for r in pairs) / n
    before = sum(r.before_last for r in pairs) / n

    def ones(attr: str) -> list[tuple[float, float]]:
        by: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for r in pairs:
            by[r.match_id][0] += getattr(r, attr)
            by[r.match_id][1] += 1
        return [tuple(v) for v in by.values()]

    cl_last = cluster_ratio_interval(ones("last"))
    return {
        "horizon": "known" if known else "not told (continuation or unknown)",
        "sequences": n, "last": last, "before_last": before, "effect": last - before,
        "wilson_last": _wilson(last * n, n), "wilson_before_last": _wilson(before * n, n),
        "cluster_last": None if cl_last["lo"] is None else [cl_last["lo"], cl_last["hi"]],
        "type": endgame_type(last, before, curve["rate"]),
    }


def _provider_tests(per_agent: dict[str, list[SeatRun]],
                    providers: dict[str, str]) -> dict[str, Any] | None:
    """Between-provider tests over per-match rates (one value per match and agent)."""
    values: dict[str, list[float]] = defaultdict(list)
    pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for agent, runs in per_agent.items():
        prov = providers[agent]
        values[prov].extend(_trial_rates(runs))
        pooled[prov][0] += sum(r.coop for r in runs)
        pooled[prov][1] += sum(r.rounds for r in runs)
    groups = {p: v for p, v in values.items() if len(v) >= 2}
    if len(groups) < 2:
        return None
    from scipy.stats import kruskal, mannwhitneyu

    out: dict[str, Any] = {"groups": {
        p: {"trials": len(v), "rate": pooled[p][0] / pooled[p][1]} for p, v in groups.items()
    }}
    try:
        h, pval = kruskal(*groups.values())
        out["kruskal"] = {"H": float(h), "p": float(pval)}
    except ValueError:  # all values identical
        out["kruskal"] = None
    pairs = {}
    names = sorted(groups)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            u, pval = mannwhitneyu(groups[a], groups[b], alternative="two-sided")
            pairs[f"{a} vs {b}"] = {
                "U": float(u), "p": float(pval),
                "cohens_h": cohens_h(out["groups"][a]["rate"], out["groups"][b]["rate"]),
                "cohens_d": _cohens_d(groups[a], groups[b]),
            }
    out["pairwise"] = pairs
    return out


def _cohens_d(x: list[float], y: list[float]) -> float | None:
    """Mean difference over the pooled sd (the effect size seed 003's code reports)."""
    nx, ny = len(x), len(y)
    mx, my = sum(x) / nx, sum(y) / ny
    pooled = ((sum((v - mx) ** 2 for v in x) + sum((v - my) ** 2 for v in y))
              / (nx + ny - 2)) ** 0.5
    return (mx - my) / pooled if pooled > 0 else None


def personality_profile(db: Any, run_id: str) -> dict[str, Any] | None:
    """The whole seed-003 profile of a run, or None when it has no repeated 2-player play."""
    runs = load_seat_runs(db, run_id)
    if not runs:
        return None
    cells: dict[tuple[str, str, str, str | None], list[SeatRun]] = defaultdict(list)
    per_agent: dict[str, list[SeatRun]] = defaultdict(list)
    providers: dict[str, str] = {}
    for r in runs:
        cells[(r.agent, r.game, r.opponent, r.condition)].append(r)
        per_agent[r.agent].append(r)
        providers.setdefault(r.agent, r.provider)

    cell_rows = []
    for key in sorted(cells, key=lambda k: tuple(str(x) for x in k)):
        agent, game, opp, cond = key
        row = {"agent": agent, "game": game, "opponent": opp}
        if cond is not None:
            row["condition"] = cond
        row.update(_cooperation(cells[key]))
        curve = _curve(_curve_counts(cells[key]))
        row["curve"] = curve["rate"]
        row["curve_n"] = curve["n"]
        ac = sum(r.after_c for r in cells[key])
        ad = sum(r.after_d for r in cells[key])
        row.update(p_c_after_c=_rate(sum(r.coop_after_c for r in cells[key]), ac),
                   n_after_c=ac,
                   p_c_after_d=_rate(sum(r.coop_after_d for r in cells[key]), ad),
                   n_after_d=ad)
        cell_rows.append(row)

    agents: dict[str, Any] = {}
    for agent in sorted(per_agent):
        a_runs = per_agent[agent]
        known = [r for r in a_runs if r.known_horizon]
        curve = _curve(_curve_counts(known or a_runs))
        agents[agent] = {
            "provider": providers[agent],
            "cooperation": _cooperation(a_runs),
            "reciprocity": _conditional(a_runs),
            "curve": curve,
            "endgame": _endgame(a_runs, curve),
        }
    names = list(agents)
    rates = {a: agents[a]["cooperation"]["rate"] for a in names}
    matrix = [[cohens_h(rates[a], rates[b]) for b in names] for a in names]
    by_provider: dict[str, list[str]] = defaultdict(list)
    for a in names:
        by_provider[providers[a]].append(a)
    return {
        "methods": METHODS,
        "cells": cell_rows,
        "agents": agents,
        "cohens_h": {"agents": names, "matrix": matrix},
        "providers": {"members": dict(sorted(by_provider.items())),
                      "tests": _provider_tests(per_agent, providers)},
    }
