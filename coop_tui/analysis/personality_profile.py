"""Seed 003's profile of a run's repeated two-player play, from stored rounds.

SQL does the per-round work: one query returns one row per (match, seat) with the
seat's counts (rounds, cooperations, first/last/second-to-last round, joint cooperation,
cooperations after the co-player cooperated / defected); a second returns cooperation
counts per agent × game × opponent × round. Python then touches one row per match seat,
which keeps the analysis interactive at a million decisions.

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
    "cooperation rates (one value per match and agent), Cohen's h of pooled rates",
}

_BASE = """
    from matches m
    join rounds r on r.match_id = m.id
    join rounds o on o.match_id = m.id and o.round = r.round and o.seat != r.seat
    join seats s on s.match_id = m.id and s.seat = r.seat
    join seats so on so.match_id = m.id and so.seat = o.seat
    where m.run_id = ? and m.status = 'done'
      and r.cooperated is not null and o.cooperated is not null
      and (select count(*) from seats x where x.match_id = m.id) = 2
      and (m.matchup != 'versus' or r.seat = 0)
"""


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


def load_seat_runs(db: Any, run_id: str) -> list[SeatRun]:
    """One row per profiled (match, seat), aggregated in SQL."""
    sql = """
    select r.match_id, r.seat, s.agent, so.agent, s.agent_kind, s.agent_spec, m.game,
           m.condition, count(*), sum(r.cooperated),
           sum(case when r.round = lim.first then r.cooperated end),
           sum(r.cooperated * o.cooperated),
           sum(case when r.round = lim.last then r.cooperated end),
           sum(case when r.round = lim.last - 1 then r.cooperated end),
           coalesce(sum(p.cooperated = 1), 0),
           coalesce(sum(case when p.cooperated = 1 then r.cooperated else 0 end), 0),
           coalesce(sum(p.cooperated = 0), 0),
           coalesce(sum(case when p.cooperated = 0 then r.cooperated else 0 end), 0)
    from (select id, min_round as first, max_round as last from (
            select m2.id, (select min(round) from rounds where match_id = m2.id) as min_round,
                   (select max(round) from rounds where match_id = m2.id) as max_round
            from matches m2 where m2.run_id = ? and m2.status = 'done')) lim
    join matches m on m.id = lim.id
    join rounds r on r.match_id = m.id
    join rounds o on o.match_id = m.id and o.round = r.round and o.seat != r.seat
    left join rounds p on p.match_id = m.id and p.round = r.round - 1 and p.seat = o.seat
    join seats s on s.match_id = m.id and s.seat = r.seat
    join seats so on so.match_id = m.id and so.seat = o.seat
    where m.run_id = ? and r.cooperated is not null and o.cooperated is not null
      and (select count(*) from seats x where x.match_id = m.id) = 2
      and (m.matchup != 'versus' or r.seat = 0)
    group by r.match_id, r.seat
    having lim.last > lim.first
    """
    out = []
    for row in db.execute(sql, [run_id, run_id]).fetchall():
        (mid, seat, agent, opp, kind, spec, game, cond, n, c, first, joint, last, before,
         ac, cac, ad, cad) = row
        label, known = _condition(cond)
        out.append(SeatRun(mid, seat, agent, opp, provider_from_spec(kind, spec), game, label,
                           known, n, c, first, joint, last, before, ac, cac, ad, cad))
    return out


def load_round_counts(db: Any, run_id: str) -> list[tuple[Any, ...]]:
    """(agent, opponent, game, condition JSON, round, sequences, cooperations)."""
    return db.execute(
        f"""select s.agent, so.agent, m.game, m.condition, r.round, count(*), sum(r.cooperated)
            {_BASE}
            and exists (select 1 from rounds q where q.match_id = m.id and q.round = 2)
            group by s.agent, so.agent, m.game, m.condition, r.round""",
        [run_id],
    ).fetchall()


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
            }
    out["pairwise"] = pairs
    return out


def personality_profile(db: Any, run_id: str) -> dict[str, Any] | None:
    """The whole seed-003 profile of a run, or None when it has no repeated 2-player play."""
    runs = load_seat_runs(db, run_id)
    if not runs:
        return None
    round_rows = load_round_counts(db, run_id)
    cell_curves: dict[tuple[str, str, str, str | None], dict[int, list[int]]] = defaultdict(dict)
    agent_curves: dict[str, dict[int, list[int]]] = defaultdict(dict)
    known_agents = {r.agent for r in runs if r.known_horizon}
    for agent, opp, game, cond, rnd, n, c in round_rows:
        label, known = _condition(cond)
        acc = cell_curves[(agent, game, opp, label)].setdefault(rnd, [0, 0])
        acc[0] += n
        acc[1] += c
        if known or agent not in known_agents:
            acc = agent_curves[agent].setdefault(rnd, [0, 0])
            acc[0] += n
            acc[1] += c

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
        curve = _curve(cell_curves.get(key, {}))
        row["curve"] = curve["rate"]
        row["curve_n"] = curve["n"]
        row.update({k: v for k, v in _conditional(cells[key]).items()
                    if k in ("p_c_after_c", "n_after_c", "p_c_after_d", "n_after_d")})
        cell_rows.append(row)

    agents: dict[str, Any] = {}
    for agent in sorted(per_agent):
        a_runs = per_agent[agent]
        curve = _curve(agent_curves.get(agent, {}))
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
