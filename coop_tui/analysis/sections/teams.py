"""Team tournaments (seed 004): cooperation, one-shot cooperation, intra/inter-team
cooperation, scores and meta-prompt accuracy, with 95% t-intervals over replications.

One stored match of mechanism ``teams`` is one tournament; its replications are the
run's matches of the same condition (``replicates`` or ``samples``). Per tournament:

- ``mu_c``: the share of play decisions that cooperated (every round of every player
  counted once; the paper's p_c averaged over players), then mean and t-interval over
  tournaments. ``mu_c_running`` is the public code's figure: after each round, a player's
  running cooperation share *within the current match*; all those values (players x
  rounds x replications) are averaged and the t-interval is taken over all of them.
- ``per_round``: the paper's p_c curve - after a player's r-th round of the tournament,
  its cooperation share so far - averaged over players and tournaments.
- ``one_shot_per_round``: the paper's p_osc curve - after a player's r-th round of the
  tournament, the share of its match-opening moves so far that cooperated - averaged over
  players and tournaments.
- ``one_shot``: cooperation in the first round of every match (co-player unknown),
  overall and split ``intra`` / ``inter`` (same group or not); ``intra`` / ``inter``:
  cooperation over all rounds of intra- / inter-group matches.
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

from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store


def t_interval(values: Sequence[float]) -> dict[str, Any]:
    """Mean with a 95% Student-t interval (None with fewer than two values)."""
    from coop_tui.analysis.intervals import t_interval as interval

    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"mean": None, "ci": None, "n": 0}
    t = interval(vals)
    return {"mean": t["mean"], "ci": None if t["lo"] is None else [t["lo"], t["hi"]],
            "n": t["n"]}


def _share(xs: list[int]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def tournament_metrics(store: Store, match_id: str) -> dict[str, Any]:
    """Everything one tournament contributes (before averaging over replications)."""
    rows = store.db.execute(
        "select round, seat, cooperated, json_extract(info, '$.pairing'),"
        " json_extract(info, '$.first'), json_extract(info, '$.intra')"
        " from rounds where match_id = ? order by round, seat", [match_id],
    ).fetchall()
    coop: list[int] = []
    first: dict[str, list[int]] = {"all": [], "intra": [], "inter": []}
    side: dict[str, list[int]] = {"intra": [], "inter": []}
    running: list[float] = []
    per_match: dict[tuple[int, int], list[int]] = defaultdict(list)
    per_player: dict[int, list[int]] = defaultdict(list)
    curve: dict[int, list[float]] = defaultdict(list)
    openings: dict[int, list[int]] = defaultdict(list)  # each player's match-opening moves
    one_shot_curve: dict[int, list[float]] = defaultdict(list)
    for _t, seat, c, pairing, is_first, intra in rows:
        c = int(c or 0)
        coop.append(c)
        where = "intra" if intra else "inter"
        side[where].append(c)
        if is_first:
            first["all"].append(c)
            first[where].append(c)
        hist = per_match[(pairing, seat)]
        hist.append(c)
        running.append(sum(hist) / len(hist))
        own = per_player[seat]
        own.append(c)
        curve[len(own)].append(sum(own) / len(own))
        if is_first:
            openings[seat].append(c)
        opened = openings[seat]
        if opened:
            one_shot_curve[len(own)].append(sum(opened) / len(opened))
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
        "one_shot": {k: _share(v) for k, v in first.items()},
        "intra": _share(side["intra"]),
        "inter": _share(side["inter"]),
        "running": running,
        "curve": {r: sum(v) / len(v) for r, v in curve.items()},
        "one_shot_curve": {r: sum(v) / len(v) for r, v in one_shot_curve.items()},
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
        rounds_max = max((max(p["curve"], default=0) for p in per), default=0)
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
            "mu_c": t_interval([p["coop"] for p in per]),
            "mu_c_running": t_interval([v for p in per for v in p["running"]]),
            "per_round": [
                sum(p["curve"][r] for p in per if r in p["curve"])
                / sum(1 for p in per if r in p["curve"])
                for r in range(1, rounds_max + 1)
            ],
            "one_shot": {k: t_interval([p["one_shot"][k] for p in per]) for k in ("all", "intra", "inter")},
            "one_shot_per_round": [
                sum(p["one_shot_curve"][r] for p in per if r in p["one_shot_curve"])
                / sum(1 for p in per if r in p["one_shot_curve"])
                for r in range(1, rounds_max + 1)
                if any(r in p["one_shot_curve"] for p in per)
            ],
            "intra": t_interval([p["intra"] for p in per]),
            "inter": t_interval([p["inter"] for p in per]),
            "meta_accuracy": {
                "all": t_interval([p["meta"] for p in per]),
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
            "exits": {"left": t_interval([p["left"] for p in per]),
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

    table = Table(title="Team tournaments (seed 004): means and 95% t-intervals over tournaments")
    for col in ("structure", "agents", "n", "mu_c", "mu_c (code)", "OSC", "OSC intra", "OSC inter",
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
    return [table, scores]


SECTION = register(Section(key="teams", title="Team tournaments (seed 004)", build=build,
                           render=render, order=60))
