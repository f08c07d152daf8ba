"""The strategic personalities paper's profile of a run's repeated two-player play, from stored rounds.

Reading is one small query (agents) and one row per finished match carrying both
seats' moves as one 0/1 string, stored when the match was folded (``match_moves``, see
:func:`coop_tui.summaries.fold_moves`) or, for a match not folded yet, read live from its
rounds by the same expressions. Counts per match seat come from bit arithmetic on those
strings, computed once per distinct match pattern; every statistic of a group (cell or
agent) is then derived from one pass that sums its seat runs per match, which is also
the clustering unit. ``cooperation_by_model`` shares the same read within one report.
On the 2-core development machine, 50,048 ten-round matches (a million stored
decisions) take about 0.7 s to read and 0.6 s to summarise; 2,560 matches of 200 rounds
0.03 s in all.

Who is profiled depends on the sample (:data:`SAMPLES`). By default the paper's: the
trials of its Supplementary Table 2 (the four prisoner's dilemmas, no condition or
``baseline``, the agent in seat 0), on which its Tables 3 and 4 (endgame, reciprocity)
are computed. ``pooled`` takes every seat of a two-seat match whose rounds record
cooperation, except in ``matchup = "versus"`` (an agent against fixed strategies), where
only the agent in seat 0 is (the strategies are the yardstick, not the subject).
Per-agent reciprocity and endgame numbers pool the sample's games and opponents, as the
paper does; the endgame uses only matches whose horizon the players were told
(``horizon = "known"``) when there are any.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from operator import itemgetter
from typing import Any, NamedTuple

from coop_tui.analysis.intervals import cluster_ratio_interval, t_interval
from coop_tui.analysis.personality import archetype, endgame_type, provider_from_spec
from coop_tui.analysis.stats import cohens_h, wilson_interval
from coop_tui.summaries import MOVES_SHAPE, MOVES_STRING

__all__ = ["METHODS", "SAMPLES", "TABLE2_GAMES", "SeatRun", "has_repeated_pairs",
           "load_seat_runs", "personality_profile", "table2_sample"]

TABLE2_GAMES = ("pd_canonical", "pd_harsh", "pd_medium", "pd_mild")
"""The prisoner's dilemmas of the strategic personalities paper's Supplementary Table 2."""
SAMPLES = {
    "table2": "the paper's sample (Supplementary Tables 2-4): the Table 2 prisoner's "
              "dilemma trials (pd_canonical, pd_harsh, pd_medium, pd_mild; no condition or "
              "baseline), the agent in seat 0 only; N after C + N after D = (T - 1) x trials",
    "pooled": "every repeated two-player game and opponent, both seats of self-play and "
              "cross-play (the agent in seat 0 against strategies)",
}
"""The samples a profile can be computed on; ``table2`` is the paper's and the default."""

METHODS = {
    "rate_wilson": "Wilson 95% over pooled decisions (assumes rounds independent; the "
    "paper's binomial interval, for comparison)",
    "rate_trials": "t-interval over per-match cooperation rates (clustered by match; the "
    "paper's per-trial interval; both seats of a self-play match form one trial)",
    "conditional": "P(C|C), P(C|D): pooled round pairs with Wilson 95% (paper) and a "
    "cluster-robust CR1 interval clustered by match (ours)",
    "endgame": "rates at each match's last and second-to-last round, Wilson over sequences "
    "and a cluster-robust interval by match; the effect's interval is a t-interval over "
    "per-match differences (last minus the round before)",
    "curve": "per-round rate aligned from round 1, Wilson 95% over the sequences reaching "
    "that round",
    "provider_tests": "Kruskal-Wallis and pairwise Mann-Whitney U over per-match "
    "cooperation rates (one value per match and agent), Cohen's h of pooled rates and "
    "Cohen's d of the per-match rates",
}

class SeatRun(NamedTuple):
    """One seat's sequence in one match, as counts (a named tuple: a run of short
    matches makes a hundred thousand of them, and a tuple is built in a fraction of a
    frozen dataclass's time)."""

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
    start: int = 1
    """The match's first round."""
    pattern: str = ""
    """This seat's moves from ``start`` on, one character per round: 1 cooperated, 0 not,
    ``.`` not recorded (for either seat)."""


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


def _counts(mine: str, theirs: str) -> tuple[int, ...]:
    """(coop, first, joint, last, before_last, after_c, coop_after_c, after_d,
    coop_after_d) from two equally long 0/1 strings, by bit arithmetic."""
    m, t = int(mine, 2), int(theirs, 2)
    prev = int(theirs[:-1], 2)  # the co-player's move one round earlier, aligned with...
    nxt = int(mine[1:], 2)      # ...this seat's move in rounds 2..T
    after_c = prev.bit_count()
    coop_after_c = (prev & nxt).bit_count()
    return (m.bit_count(), int(mine[0]), (m & t).bit_count(), int(mine[-1]), int(mine[-2]),
            after_c, coop_after_c, len(mine) - 1 - after_c, nxt.bit_count() - coop_after_c)


def _counts_with_gaps(mine: str, theirs: str) -> tuple[Any, ...]:
    """:func:`_counts` for strings with ``.`` where a seat's move is not recorded: only
    rounds both seats recorded count, and a round pair only when both of its rounds do.
    Also returns the number of rounds used."""
    both = [i for i in range(len(mine)) if mine[i] != "." and theirs[i] != "."]
    used = set(both)
    coop = sum(mine[i] == "1" for i in both)
    joint = sum(mine[i] == "1" and theirs[i] == "1" for i in both)
    ac = cac = ad = cad = 0
    for i in both:
        if i - 1 in used:
            if theirs[i - 1] == "1":
                ac += 1
                cac += mine[i] == "1"
            else:
                ad += 1
                cad += mine[i] == "1"
    last = both[-1]
    before = int(mine[last - 1]) if last - 1 in used else None
    return (coop, int(mine[both[0]]), joint, int(mine[last]), before, ac, cac, ad, cad,
            len(both))


def _with_gaps(db: Any, mid: str) -> tuple[int, str, str] | None:
    """A match whose rounds have gaps or unrecorded cooperation, read round by round:
    (first round, seat 0 moves, seat 1 moves) with ``.`` for every missing move."""
    rows = db.execute("select round, seat, cooperated from rounds where match_id = ?"
                      " and cooperated is not null and seat in (0, 1)", [mid]).fetchall()
    if not rows:
        return None
    first = min(t for t, _, _ in rows)
    span = max(t for t, _, _ in rows) - first + 1
    moves = [["."] * span, ["."] * span]
    for t, seat, c in rows:
        moves[seat][t - first] = str(c)
    return first, "".join(moves[0]), "".join(moves[1])


MATCH_MOVES_SQL = f"""
    select m.id, m.game, m.condition, m.matchup,
           case when v.match_id is null then {MOVES_SHAPE.format(m="m.id")} else v.shape end,
           case when v.match_id is null then {MOVES_STRING.format(m="m.id")} else v.moves end,
           s0.agent, s1.agent, (select count(*) from seats indexed by idx_seats_payoff
                                where match_id = m.id)
    from matches m left join match_moves v on v.match_id = m.id
    left join seats s0 indexed by idx_seats_payoff on s0.match_id = m.id and s0.seat = 0
    left join seats s1 indexed by idx_seats_payoff on s1.match_id = m.id and s1.seat = 1
    where m.run_id = ? and m.status = 'done'"""
"""Each finished match's moves, stored when it was folded (``match_moves``) or read live
from its rounds (a match done but not folded yet), and the agents in seats 0 and 1 with
the number of seats (the profile takes matches of exactly those two). The seats are read
from the covering index of store migration m090, never from their rows."""

_LOADED: dict[str, Any] = {}


def load_seat_runs(db: Any, run_id: str) -> list[SeatRun]:
    """:func:`read_seat_runs`, kept for the last run and database state asked: the
    profile and ``cooperation_by_model`` of one report read the run once."""
    conn = getattr(db, "conn", db)
    version = conn.execute("pragma data_version").fetchone()[0]
    # the connection itself is held (not its id, which a later connection may reuse);
    # data_version moves when another connection commits, total_changes on this one's writes
    key = (run_id, version, conn.total_changes)
    if _LOADED.get("conn") is not conn or _LOADED.get("key") != key:
        _LOADED.update(conn=conn, key=key, value=read_seat_runs(db, run_id))
    return _LOADED["value"]


def forget_seat_runs() -> None:
    """Drop the kept read (the report's last section using it is done: a long-running
    TUI need not hold a hundred thousand seat runs)."""
    _LOADED.clear()


def read_seat_runs(db: Any, run_id: str) -> list[SeatRun]:
    """One :class:`SeatRun` per profiled (match, seat), in match order.

    Each finished match comes back as one row (:data:`MATCH_MOVES_SQL`) holding both
    seats' moves as one 0/1 string in (round, seat) order and its seat-0 and seat-1
    agents. Everything but the match id is derived once per distinct (game, condition,
    matchup, agents, moves): strategies repeat themselves. Agents' specs are read once per
    agent, conditions parsed once per distinct text.
    """
    providers = {agent: provider_from_spec(kind, spec) for agent, kind, spec in db.execute(
        """select distinct s.agent, s.agent_kind, s.agent_spec from seats s
           join matches m on m.id = s.match_id where m.run_id = ?""", [run_id]).fetchall()}
    conditions: dict[str | None, tuple[str | None, bool]] = {}
    cache: dict[tuple[str, str], tuple[int, ...]] = {}
    # everything but the match id, per distinct (game, condition, matchup, seats, moves):
    # a strategy tournament repeats a few hundred of them over thousands of matches
    derived: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    out: list[SeatRun] = []
    new = tuple.__new__
    rows = db.execute(MATCH_MOVES_SQL, [run_id])
    for mid, game, cond, matchup, shape, both, agent0, agent1, n_seats in rows:
        if not both or n_seats != 2 or agent0 is None or agent1 is None:
            continue
        key = (game, cond, matchup, shape, both, agent0, agent1)
        parts = derived.get(key)
        if parts is None:
            first, last, n = map(int, shape.split(" "))
            if n == 2 * (last - first + 1) == len(both) and "." not in both:
                parts = derived[key] = _seat_parts(
                    game, cond, matchup, first, both[0::2], both[1::2], (agent0, agent1),
                    providers, conditions, cache)
            else:  # gaps, unrecorded cooperation: read this match round by round
                fixed = _with_gaps(db, mid)
                if fixed is None:
                    continue
                first, s0, s1 = fixed
                parts = _seat_parts(game, cond, matchup, first, s0, s1, (agent0, agent1),
                                    providers, conditions, cache)
        for part in parts:
            out.append(new(SeatRun, (mid, *part)))
    return out


def _seat_parts(game: str, cond: str | None, matchup: str, first: int, s0: str, s1: str,
                pair: tuple[str, str], providers: dict[str, str],
                conditions: dict[str | None, tuple[str | None, bool]],
                cache: dict[tuple[str, str], tuple[int, ...]]) -> list[tuple[Any, ...]]:
    """The :class:`SeatRun` fields after the match id of each profiled seat of a match
    with these moves (seat 0's and seat 1's, ``.`` where not recorded)."""
    if len(s0) < 2:
        return []  # one round: nothing repeated to profile
    gaps = "." in s0 or "." in s1
    if cond not in conditions:
        conditions[cond] = _condition(cond)
    label, known = conditions[cond]
    patterns = (s0, s1)
    parts = []
    for seat in (0, 1) if matchup != "versus" else (0,):
        mine, theirs = patterns[seat], patterns[1 - seat]
        counts = cache.get((mine, theirs))
        if counts is None:
            counts = cache[(mine, theirs)] = (
                _counts_with_gaps(mine, theirs) if gaps
                else (*_counts(mine, theirs), len(mine)))
        coop, first_c, joint, last_c, before, ac, cac, ad, cad, n = counts
        if n < 2:
            continue
        if gaps:  # the curve counts only rounds both seats recorded
            mine = "".join(c if o != "." else "." for c, o in zip(mine, theirs, strict=True))
        agent, opponent = pair[seat], pair[1 - seat]
        parts.append((seat, agent, opponent, providers[agent], game, label, known, n, coop,
                      first_c, joint, last_c, before, ac, cac, ad, cad, first, mine))
    return parts


def _curve_counts(runs: list[SeatRun]) -> dict[int, list[int]]:
    """Sequences and cooperations per round, counted once per distinct pattern."""

    counts: dict[int, list[int]] = {}
    for (start, pattern), k in Counter((r.start, r.pattern) for r in runs).items():
        for offset, ch in enumerate(pattern):
            if ch == ".":
                continue
            acc = counts.setdefault(start + offset, [0, 0])
            acc[0] += k
            acc[1] += k * (ch == "1")
    return counts


def _wilson(successes: float, n: int) -> list[float] | None:
    return list(wilson_interval(successes, n)) if n else None


def _rate(successes: float, n: int) -> float | None:
    return successes / n if n else None


# per-match sums of a group's seat runs (both seats of a self-play match add up)
_COOP, _ROUNDS, _AC, _CAC, _AD, _CAD, _JOINT, _FIRST, _SEQ, _LAST, _BEFORE, _ENDSEQ = range(12)


def _by_match(runs: list[SeatRun]) -> list[list[float]]:
    """One pass over a group: per match, the sums every statistic below needs (fields
    read by position: this runs once per seat run and group)."""
    acc: dict[str, list[float]] = {}
    for r in runs:
        # coop, rounds, after_c, coop_after_c, after_d, coop_after_d, joint, first
        before = r[13]
        if before is not None:  # last, before_last and one end sequence
            row = [r[9], r[8], r[14], r[15], r[16], r[17], r[11], r[10], 1, r[12], before, 1]
        else:
            row = [r[9], r[8], r[14], r[15], r[16], r[17], r[11], r[10], 1, 0, 0, 0]
        a = acc.get(r[0])
        if a is None:
            acc[r[0]] = row
        else:
            for i, v in enumerate(row):
                a[i] += v
    return list(acc.values())


def _total(matches: list[list[float]], i: int) -> float:
    return sum(map(itemgetter(i), matches))


def _trial_rates(matches: list[list[float]]) -> list[float]:
    """Per-match cooperation rates (both seats of a self-play match are one trial)."""
    return [m[_COOP] / m[_ROUNDS] for m in matches if m[_ROUNDS]]


def _clustered(matches: list[list[float]], successes: int, trials: int) -> list[float] | None:
    ci = cluster_ratio_interval([(m[successes], m[trials]) for m in matches])
    return None if ci["lo"] is None else [ci["lo"], ci["hi"]]


def _cooperation(matches: list[list[float]]) -> dict[str, Any]:
    n, c = _total(matches, _ROUNDS), _total(matches, _COOP)
    trials = t_interval(_trial_rates(matches))
    seq = _total(matches, _SEQ)
    return {
        "rate": _rate(c, n), "decisions": n, "wilson": _wilson(c, n),
        "trials": trials["n"], "trial_mean": trials["mean"], "trial_sd": trials["sd"],
        "trial_interval": None if trials["lo"] is None
        else [max(0.0, trials["lo"]), min(1.0, trials["hi"])],
        "first_round": _rate(_total(matches, _FIRST), seq), "first_round_n": seq,
        "joint": _rate(_total(matches, _JOINT), n),
    }


def _conditional(matches: list[list[float]]) -> dict[str, Any]:
    ac, ad = _total(matches, _AC), _total(matches, _AD)
    cac, cad = _total(matches, _CAC), _total(matches, _CAD)
    p_cc, p_cd = _rate(cac, ac), _rate(cad, ad)
    return {
        "p_c_after_c": p_cc, "n_after_c": ac, "wilson_after_c": _wilson(cac, ac),
        "cluster_after_c": _clustered(matches, _CAC, _AC),
        "p_c_after_d": p_cd, "n_after_d": ad, "wilson_after_d": _wilson(cad, ad),
        "cluster_after_d": _clustered(matches, _CAD, _AD),
        "index": None if p_cc is None or p_cd is None else p_cc - p_cd,
        "archetype": archetype(p_cc, p_cd),
    }


def _curve(counts: dict[int, list[int]], intervals: bool = True) -> dict[str, list[Any]]:
    """The per-round curve; its Wilson intervals only when shown (agents, not cells),
    each distinct (successes, n) solved once."""
    rounds = sorted(counts)
    out: dict[str, list[Any]] = {
        "rounds": rounds,
        "rate": [counts[t][1] / counts[t][0] for t in rounds],
        "n": [counts[t][0] for t in rounds],
    }
    if intervals:
        solved: dict[tuple[int, int], list[float] | None] = {}
        for t in rounds:
            n, c = counts[t]
            if (c, n) not in solved:
                solved[(c, n)] = _wilson(c, n)
        out["wilson"] = [None if (w := solved[(counts[t][1], counts[t][0])]) is None
                         else list(w) for t in rounds]
    return out


def _endgame(matches: list[list[float]], known_horizon: bool,
             curve: dict[str, list[Any]]) -> dict[str, Any] | None:
    n = _total(matches, _ENDSEQ)
    if not n:
        return None
    last = _total(matches, _LAST) / n
    before = _total(matches, _BEFORE) / n
    ends = [m for m in matches if m[_ENDSEQ]]
    # the effect per match (both seats of a self-play match together)
    effect = t_interval([(m[_LAST] - m[_BEFORE]) / m[_ENDSEQ] for m in ends])
    return {
        "horizon": "known" if known_horizon else "not told (continuation or unknown)",
        "sequences": n, "last": last, "before_last": before, "effect": last - before,
        "effect_interval": None if effect["lo"] is None else [effect["lo"], effect["hi"]],
        "wilson_last": _wilson(last * n, n), "wilson_before_last": _wilson(before * n, n),
        "cluster_last": _clustered(ends, _LAST, _ENDSEQ),
        "type": endgame_type(last, before, curve["rate"]),
    }


def _provider_tests(per_agent: dict[str, list[list[float]]],
                    providers: dict[str, str]) -> dict[str, Any] | None:
    """Between-provider tests over per-match rates (one value per match and agent)."""
    values: dict[str, list[float]] = defaultdict(list)
    pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for agent, matches in per_agent.items():
        prov = providers[agent]
        values[prov].extend(_trial_rates(matches))
        pooled[prov][0] += _total(matches, _COOP)
        pooled[prov][1] += _total(matches, _ROUNDS)
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
    """Mean difference over the pooled sd (the effect size the strategic personalities paper's code reports)."""
    nx, ny = len(x), len(y)
    mx, my = sum(x) / nx, sum(y) / ny
    pooled = ((sum((v - mx) ** 2 for v in x) + sum((v - my) ** 2 for v in y))
              / (nx + ny - 2)) ** 0.5
    return (mx - my) / pooled if pooled > 0 else None


def table2_sample(runs: list[SeatRun]) -> list[SeatRun]:
    """The seat runs of the paper's sample (:data:`SAMPLES` ``table2``)."""
    return [r for r in runs if r.seat == 0 and r.game in TABLE2_GAMES
            and r.condition in (None, "baseline")]


def personality_profile(db: Any, run_id: str, sample: str = "table2") -> dict[str, Any] | None:
    """The strategic personalities profile of a run on ``sample`` (a key of :data:`SAMPLES`), or None when
    the sample holds no repeated 2-player play."""
    if sample not in SAMPLES:
        raise ValueError(f"sample must be one of {', '.join(SAMPLES)}, not {sample!r}")
    runs = load_seat_runs(db, run_id)
    if sample == "table2":
        runs = table2_sample(runs)
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
        matches = _by_match(cells[key])
        row.update(_cooperation(matches))
        curve = _curve(_curve_counts(cells[key]), intervals=False)
        row["curve"] = curve["rate"]
        row["curve_n"] = curve["n"]
        ac, ad = _total(matches, _AC), _total(matches, _AD)
        row.update(p_c_after_c=_rate(_total(matches, _CAC), ac), n_after_c=ac,
                   p_c_after_d=_rate(_total(matches, _CAD), ad), n_after_d=ad)
        cell_rows.append(row)

    agents: dict[str, Any] = {}
    agent_matches: dict[str, list[list[float]]] = {}
    for agent in sorted(per_agent):
        a_runs = per_agent[agent]
        known = [r for r in a_runs if r.known_horizon]
        ends = known or a_runs  # the endgame needs a horizon the players were told
        curve = _curve(_curve_counts(ends))
        matches = agent_matches[agent] = _by_match(a_runs)
        agents[agent] = {
            "provider": providers[agent],
            "cooperation": _cooperation(matches),
            "reciprocity": _conditional(matches),
            "curve": curve,
            "endgame": _endgame(_by_match(ends) if known else matches, bool(known), curve),
        }
    names = list(agents)
    rates = {a: agents[a]["cooperation"]["rate"] for a in names}
    matrix = [[cohens_h(rates[a], rates[b]) for b in names] for a in names]
    by_provider: dict[str, list[str]] = defaultdict(list)
    for a in names:
        by_provider[providers[a]].append(a)
    return {
        "sample": {"name": sample, "description": SAMPLES[sample],
                   "matches": len({r.match_id for r in runs}), "seat_runs": len(runs)},
        "methods": METHODS,
        "cells": cell_rows,
        "agents": agents,
        "cohens_h": {"agents": names, "matrix": matrix},
        "providers": {"members": dict(sorted(by_provider.items())),
                      "tests": _provider_tests(agent_matches, providers)},
    }
