"""Team tournaments (super-additive cooperation): cooperation, one-shot cooperation, intra/inter-group
cooperation, scores and meta-prompt accuracy, with 95% Student-t intervals under the
paper's definitions (those of its public code's tables and figures).

One stored match of mechanism ``teams`` is one tournament; its replications are the
run's matches of the same condition (``replicates`` or ``samples``).

- ``mu_c_running``: the paper's mu_c (Tables 3-5): after each round, a player's running
  cooperation share *within the current match*; all those values (players x rounds x
  replications) averaged, the interval over all of them. ``mu_c``: the plain share of
  cooperative moves per tournament, interval over tournaments (ours, for comparison).
- ``one_shot``: the paper's mu_osc (Tables 6-8): every first-round move (co-player
  unknown) of every match of every replication is one 0/1 value; their mean and the
  interval over them; split ``intra`` / ``inter`` by whether the two share a group.
- ``intra`` / ``inter`` (Figure 4): each match's cooperation rate (both players' moves),
  then the mean and interval over the matches of every replication.
- ``per_round`` (Figure 2): at a player's r-th round of the tournament, its running
  cooperation share within the match it is playing; averaged over the players that
  reached r in each tournament, then mean and interval over tournaments.
  ``per_round_cumulative``: the same with the share over the player's whole tournament.
- ``osc_curve`` (Figure 3): after the k-th played match of a tournament, the share of
  cooperative first moves among the first moves so far; a tournament that played fewer
  matches keeps its last share at every later k (the public code pads its trends so);
  mean and interval over tournaments per k.

Intervals of shares (every value above but scores, points and match lengths) are clipped
to [0, 1], as the paper's figures show them.
- scores: points per player and per group, and ``final`` with the winner bonus when the
  tournament set one; exits: share of matches ended by a player leaving, mean length.
- ``meta_accuracy``: share of scored comprehension answers that were right, overall and
  per question.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.intervals import t_interval as interval
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store


def t_interval(values: Sequence[float]) -> dict[str, Any]:
    """Mean with a 95% Student-t interval (None with fewer than two values)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"mean": None, "ci": None, "n": 0}
    t = interval(vals)
    return {"mean": t["mean"], "ci": None if t["lo"] is None else [t["lo"], t["hi"]],
            "n": t["n"]}


def share_interval(values: Sequence[float]) -> dict[str, Any]:
    """:func:`t_interval` of shares, its interval clipped to [0, 1]: the paper's figures
    draw shares on a 0-1 axis (0-100%), so a bound past it is never shown."""
    out = t_interval(values)
    if out["ci"] is not None:
        out["ci"] = [min(max(bound, 0.0), 1.0) for bound in out["ci"]]
    return out


def padded(curves: list[list[float]]) -> list[list[float]]:
    """Curves made as long as the longest, each continued with its last value.

    Figure 3 of the public code does this for its one-shot cooperation trends before
    averaging over replications, so a tournament that played fewer matches still counts
    at every later point with the share it ended on (an empty curve stays empty).
    """
    longest = max((len(c) for c in curves), default=0)
    return [c + [c[-1]] * (longest - len(c)) if c else [] for c in curves]


def _share(xs: list[int]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def tournament_metrics(store: Store, match_id: str) -> dict[str, Any]:
    """Everything one tournament contributes (before pooling or averaging replications)."""
    rows = store.db.execute(
        "select round, seat, cooperated, json_extract(info, '$.pairing'),"
        " json_extract(info, '$.first'), json_extract(info, '$.intra')"
        " from rounds where match_id = ? order by round, seat", [match_id],
    ).fetchall()
    coop: list[int] = []
    first: dict[str, list[int]] = {"all": [], "intra": [], "inter": []}
    running: list[float] = []
    per_match: dict[tuple[int, int], list[int]] = defaultdict(list)
    per_player: dict[int, list[int]] = defaultdict(list)
    match_moves: dict[int, list[int]] = defaultdict(list)
    match_side: dict[int, str] = {}
    curve: dict[int, list[float]] = defaultdict(list)
    cumulative: dict[int, list[float]] = defaultdict(list)
    osc_by_match: dict[int, list[int]] = {}
    for _t, seat, c, pairing, is_first, intra in rows:
        c = int(c or 0)
        coop.append(c)
        where = "intra" if intra else "inter"
        match_moves[pairing].append(c)
        match_side[pairing] = where
        if is_first:
            first["all"].append(c)
            first[where].append(c)
            osc_by_match.setdefault(pairing, []).append(c)
        hist = per_match[(pairing, seat)]
        hist.append(c)
        within = sum(hist) / len(hist)
        running.append(within)
        own = per_player[seat]
        own.append(c)
        curve[len(own)].append(within)
        cumulative[len(own)].append(sum(own) / len(own))
    osc_curve: list[float] = []
    seen: list[int] = []
    for moves in osc_by_match.values():  # insertion order = the order matches were played
        seen.extend(moves)
        osc_curve.append(sum(seen) / len(seen))
    phases = dict(store.db.execute(
        "select phase, info from phases where match_id = ? and round = 0", [match_id]).fetchall())
    summary = json.loads(phases.get("tournament") or "{}")
    meta: list[float] = []
    by_q: dict[str, list[int]] = defaultdict(list)
    for (info,) in store.db.execute(
        "select info from phases where match_id = ? and phase = 'meta'", [match_id]
    ).fetchall():
        for entry in json.loads(info).values():
            for q in entry["questions"]:
                if q["correct"] is not None:
                    meta.append(int(q["correct"]))
                    by_q[q["key"]].append(int(q["correct"]))
    matches = summary.get("matches", [])
    played = [m for m in matches if m["rounds"] > 0]
    return {
        "coop": _share(coop),
        "first": first,
        "match_rates": {
            side: [sum(v) / len(v) for k, v in match_moves.items() if match_side[k] == side]
            for side in ("intra", "inter")
        },
        "running": running,
        "curve": {r: sum(v) / len(v) for r, v in curve.items()},
        "cumulative": {r: sum(v) / len(v) for r, v in cumulative.items()},
        "osc_curve": osc_curve,
        "meta": _share(meta),
        "meta_by_question": {k: _share(v) for k, v in by_q.items()},
        "points": summary.get("points", []),
        "final": summary.get("final", []),
        "team_points": summary.get("team_points", []),
        "teams": summary.get("teams", []),
        "winners": summary.get("winners", []),
        "left": _share([int(m["ended"] == "left") for m in played]),
        "length": (sum(m["rounds"] for m in played) / len(played)) if played else None,
    }


def _by_index(series: list[dict[int, float]] | list[list[float]]) -> list[dict[str, Any]]:
    """Point k of a share curve: mean and t-interval (clipped to [0, 1]) over the
    tournaments that have a point k."""
    points: dict[int, list[float]] = defaultdict(list)
    for one in series:
        items = one.items() if isinstance(one, dict) else enumerate(one, start=1)
        for k, v in items:
            points[int(k)].append(v)
    return [{"x": k, **share_interval(points[k])} for k in sorted(points)]


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    # one seek in matches_run_mechanism first: the query below may be planned as
    # a walk over every match of the run in id order
    if store.db.execute("select 1 from matches where run_id = ? and mechanism = 'teams'"
                        " limit 1", [run_id]).fetchone() is None:
        return None
    found = store.db.execute(
        "select id, condition_key, condition from matches"
        " where run_id = ? and mechanism = 'teams' and status = 'done' order by id", [run_id],
    ).fetchall()
    if not found:
        return None
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for match_id, key, condition in found:
        # one condition per parameter set *and* seating: a study's self-play of three
        # models is three conditions, its replications pool within each
        seats = tuple(r[0] for r in store.db.execute(
            "select agent from seats where match_id = ? order by seat", [match_id]).fetchall())
        groups[(key or "", seats)].append((match_id, json.loads(condition or "{}")))
    out = []
    for _key, members in groups.items():
        condition = members[0][1]
        per = [tournament_metrics(store, mid) for mid, _ in members]
        agents = list(_key[1])
        players = []
        for seat, agent in enumerate(agents):
            players.append({
                "player": seat + 1, "agent": agent,
                "team": next((g + 1 for g, ms in enumerate(per[0]["teams"]) if seat in ms), None),
                "points": t_interval([p["points"][seat] for p in per if len(p["points"]) > seat]),
                "final": t_interval([p["final"][seat] for p in per if len(p["final"]) > seat]),
            })
        n_teams = len(per[0]["team_points"])
        out.append({
            "structure": condition.get("structure"),
            "condition": condition,
            "agents": sorted(set(agents)),
            "tournaments": len(per),
            "mu_c": share_interval([p["coop"] for p in per]),
            "mu_c_running": share_interval([v for p in per for v in p["running"]]),
            "per_round": _by_index([p["curve"] for p in per]),
            "per_round_cumulative": _by_index([p["cumulative"] for p in per]),
            "osc_curve": _by_index(padded([p["osc_curve"] for p in per])),
            "one_shot": {k: share_interval([v for p in per for v in p["first"][k]])
                         for k in ("all", "intra", "inter")},
            "intra": share_interval([v for p in per for v in p["match_rates"]["intra"]]),
            "inter": share_interval([v for p in per for v in p["match_rates"]["inter"]]),
            "meta_accuracy": {
                "all": share_interval([p["meta"] for p in per]),
                "by_question": {
                    k: t_interval([p["meta_by_question"].get(k) for p in per])["mean"]
                    for k in sorted({k for p in per for k in p["meta_by_question"]})
                },
            },
            "teams": [
                {"team": g + 1,
                 "points": t_interval([p["team_points"][g] for p in per]),
                 "wins": sum(g in p["winners"] for p in per)}
                for g in range(n_teams)
            ],
            "players": players,
            "exits": {"left": share_interval([p["left"] for p in per]),
                      "match_length": t_interval([p["length"] for p in per])},
        })
    return {"conditions": out}


def _fmt(stat: dict[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    if stat.get("ci") is None:
        return f"{stat['mean']:.2f}"
    lo, hi = stat["ci"]
    return f"{stat['mean']:.2f} [{lo:.2f}, {hi:.2f}]"


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table(title="Team tournaments (super-additive cooperation): means and 95% t-intervals (mu_c, OSC, intra/inter as the paper defines them)")
    for col in ("structure", "agents", "n", "mu_c (plain)", "mu_c", "OSC", "OSC intra", "OSC inter",
                "intra", "inter", "left", "meta acc."):
        table.add_column(col)
    for c in value["conditions"]:
        table.add_row(
            str(c["structure"]), ", ".join(c["agents"]), str(c["tournaments"]), _fmt(c["mu_c"]),
            _fmt(c["mu_c_running"]), _fmt(c["one_shot"]["all"]), _fmt(c["one_shot"]["intra"]),
            _fmt(c["one_shot"]["inter"]), _fmt(c["intra"]), _fmt(c["inter"]),
            _fmt(c["exits"]["left"]), _fmt(c["meta_accuracy"]["all"]),
        )
    scores = Table(title="Team tournament scores (mean over tournaments; final includes any winner bonus)")
    for col in ("structure", "player", "agent", "group", "points", "final"):
        scores.add_column(col)
    for c in value["conditions"]:
        for p in c["players"]:
            scores.add_row(str(c["structure"]), str(p["player"]), p["agent"], str(p["team"]),
                           _fmt(p["points"]), _fmt(p["final"]))
    curves = [
        _curve_table(value, "per_round", "Figure 2: p_c by a player's round (share within its match)"),
        _curve_table(value, "osc_curve", "Figure 3: one-shot cooperation by matches played"),
    ]
    return [table, scores, *[c for c in curves if c is not None]]


CURVE_POINTS = 20
"""Most columns of a curve table (the public code plots at most 20 points per curve)."""


def _curve_table(value: dict[str, Any], key: str, title: str) -> Any:
    """One row per condition, the curve's mean at up to CURVE_POINTS evenly spaced x."""
    from rich.table import Table

    xs = sorted({pt["x"] for c in value["conditions"] for pt in c.get(key, [])})
    if not xs:
        return None
    step = max(1, -(-len(xs) // CURVE_POINTS))
    shown = xs[::step]
    if shown[-1] != xs[-1]:
        shown.append(xs[-1])
    table = Table(title=f"{title}, mean over tournaments")
    table.add_column("structure")
    table.add_column("agents")
    for x in shown:
        table.add_column(str(x), justify="right")
    for c in value["conditions"]:
        at = {pt["x"]: pt["mean"] for pt in c.get(key, [])}
        table.add_row(str(c["structure"]), ", ".join(c["agents"]),
                      *("-" if at.get(x) is None else f"{at[x]:.2f}" for x in shown))
    return table


SECTION = register(Section(key="teams", title="Team tournaments (super-additive cooperation)", build=build,
                           render=render, order=60))
