"""What agents did under the mechanisms: action frequencies, reciprocity, votes, designs.

- :func:`action_frequencies` — per agent and condition, the mean probability put on
  each action and how often it was sampled (Mediation's "delegate" is an action of its
  own here), from the decisions' stored distributions, summed per match as it finishes
  (:mod:`coop_tui.summaries`).
- :func:`conditional_frequencies` — how often an agent played each action given what
  its co-player had played in the previous round (CoopEval's appendix figures). The
  co-player is the one met *this* round; in Reputation that is a different agent than
  last round, and its previous action is the one its record showed. Works for any
  match with several rounds, from the rounds table alone.
- :func:`vote_statistics` — for Mediation and Contracting: how often an agent's proposal
  was adopted, how many approvals proposals received, how often the agent approved,
  signed, delegated, and how often the contract became binding.
- :func:`design_stability` — whether a proposed mediator or contract makes mutual
  cooperation stable: for a contract, all-cooperate is a Nash equilibrium of the game
  with the transfers; for a mediator, it plays a cooperative action when everyone
  delegates and all-delegate is a Nash equilibrium of the game with "delegate" added
  (CoopEval's design-quality figure).

Every function takes a :class:`~coop_tui.store.Store` (or its sqlite-utils database)
and a run id and returns plain rows (dicts), ready for the report and the TUI.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from coop_tui import read_cache, summaries
from coop_tui.analysis.theory import is_nash
from coop_tui.games import game_from_spec
from coop_tui.games.base import Game
from coop_tui.store import GAME_SPEC_MIN, GAME_SPEC_OF_GROUP, game_spec_sql

__all__ = [
    "action_frequencies",
    "actions_report",
    "conditional_frequencies",
    "contract_sustains_cooperation",
    "design_stability",
    "mediator_sustains_cooperation",
    "vote_statistics",
]


def _db(source: Any) -> Any:
    return getattr(source, "db", source)


def _names(spec: Mapping[str, Any]) -> list[list[str]]:
    return [list(a) for a in spec.get("action_names", [])]


def action_name(spec: Mapping[str, Any], action: int) -> str:
    """A readable name for a game action index, shared by all seats when they agree.

    The index one past the base game's actions is Mediation's "delegate".
    """
    names = _names(spec)
    if not names:
        return f"A{action}"
    counts = {len(n) for n in names}
    if len(counts) == 1 and action == counts.pop():
        return "Delegate"
    at = {n[action] for n in names if action < len(n)}
    if len(at) == 1:
        return at.pop()
    return "/".join(n[action] for n in names if action < len(n)) or f"A{action}"


def _condition_meta(db: Any, run_id: str) -> dict[tuple[int, str], tuple[str, str]]:
    """(experiment, condition key) -> (game, mechanism), one row per condition."""
    return {
        (e, c): (g, m)
        for e, c, g, m, *_rest in condition_rows(db, run_id)
    }


CONDITIONS_SQL = (
    "select experiment, condition_key, g, mech, cond, sim, " + GAME_SPEC_OF_GROUP + ", games,"
    " mechs, matchup, n, answers from ("
    "select experiment, condition_key, min(game) as g, min(mechanism) as mech,"
    " min(condition) as cond, min(similarity) as sim, " + GAME_SPEC_MIN + ","
    " group_concat(distinct game) as games, group_concat(distinct mechanism) as mechs,"
    " min(matchup) as matchup, count(*) as n,"
    " group_concat(distinct coalesce(json_extract(info, '$.answers'), 'lenient')) as answers"
    " from matches where run_id = ? group by experiment, condition_key)"
)
"""Everything the report and this module ask per (experiment, condition) of a run's
matches: one scan of the wide match rows instead of one per question (each column is its
own aggregate, so each answer is what its own query gave)."""


def condition_rows(db: Any, run_id: str) -> list[tuple[Any, ...]]:
    """The rows of :data:`CONDITIONS_SQL` for one run (read once while nothing is written)."""
    return read_cache.rows(db.conn, CONDITIONS_SQL, [run_id])


def _specs(db: Any, run_id: str) -> dict[tuple[int, str], dict[str, Any]]:
    """The game spec per (experiment, condition): an experiment may list several games,
    and each names its actions its own way (the condition includes the game)."""
    rows = condition_rows(db, run_id)
    return {(r[0], r[1]): json.loads(r[6]) if r[6] else {} for r in rows}


# ----------------------------------------------------------------- frequencies
def action_frequencies(source: Any, run_id: str, *, phase: str = "play") -> list[dict[str, Any]]:
    """Mean probability and sampled share of every action, per agent and condition."""
    db = _db(source)
    meta = _condition_meta(db, run_id)
    rows = [
        (exp, *meta.get((exp, cond), (None, None)), cond, agent, act, n, total, sampled)
        for (exp, cond, ph, agent, act), (n, total, sampled)
        in summaries.read(db.conn, run_id, "action_counts").items()
        if ph == phase
    ]
    rows.sort(key=lambda r: (r[0], r[3], r[4], r[5]))
    specs = _specs(db, run_id)
    return [
        {
            "experiment": exp, "game": game, "mechanism": mech, "condition": cond,
            "agent": agent, "action": act, "name": action_name(specs.get((exp, cond), {}), act),
            "decisions": n, "mean_prob": total / n, "sampled": sampled / n,
        }
        for exp, game, mech, cond, agent, act, n, total, sampled in rows
    ]


def conditional_frequencies(source: Any, run_id: str) -> list[dict[str, Any]]:
    """Share of each action given the current co-player's action in the previous round.

    One observation per (round, seat, co-player); rounds without a previous round for
    that co-player are left out. ``rate`` is the share among observations with the
    same agent, condition and co-player previous action.
    """
    db = _db(source)
    meta = _condition_meta(db, run_id)
    rows = [
        (exp, *meta.get((exp, cond), (None, None)), cond, agent, prev, act, n)
        for (exp, cond, agent, prev, act), (n,)
        in summaries.read(db.conn, run_id, "conditional_counts").items()
    ]
    rows.sort(key=lambda r: (r[0], r[3], r[4], r[5], r[6]))
    specs = _specs(db, run_id)
    totals: dict[tuple[Any, ...], int] = defaultdict(int)
    for exp, _g, _m, cond, agent, prev, _a, n in rows:
        totals[(exp, cond, agent, prev)] += n
    out = []
    for exp, game, mech, cond, agent, prev, act, n in rows:
        spec = specs.get((exp, cond), {})
        out.append({
            "experiment": exp, "game": game, "mechanism": mech, "condition": cond,
            "agent": agent,
            "co_previous": prev, "co_previous_name": action_name(spec, prev),
            "action": act, "name": action_name(spec, act),
            "count": n, "rate": n / totals[(exp, cond, agent, prev)],
        })
    return out


# ----------------------------------------------------------------- votes and adoption
def _phase_infos(db: Any, run_id: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for match_id, phase, info in read_cache.rows(
        db.conn,
        """select p.match_id, p.phase, p.info from phases p join matches m on m.id = p.match_id
           where m.run_id = ? and m.status = 'done'""",
        [run_id],
    ):
        out[match_id][phase] = json.loads(info) if info else {}
    return out


def _match_rows(db: Any, run_id: str, mechanisms: tuple[str, ...]) -> list[tuple[Any, ...]]:
    marks = ",".join("?" * len(mechanisms))
    return db.execute(
        f"""select id, experiment, game, mechanism, condition_key, {game_spec_sql()} from matches
            where run_id = ? and status = 'done' and mechanism in ({marks})
            order by rowid""",
        [run_id, *mechanisms],
    ).fetchall()


def _seat_agents(db: Any, run_id: str, mechanisms: tuple[str, ...]) -> dict[str, list[str]]:
    """The agents of every done match of these mechanisms, in seat order: one read for
    the run (a query per match cost seconds at tens of thousands of matches)."""
    marks = ",".join("?" * len(mechanisms))
    out: dict[str, list[str]] = defaultdict(list)
    for match_id, agent in read_cache.rows(
        db.conn,
        f"""select s.match_id, s.agent from seats s join matches m on m.id = s.match_id
            where m.run_id = ? and m.status = 'done' and m.mechanism in ({marks})
            order by s.match_id, s.seat""",
        [run_id, *mechanisms],
    ):
        out[match_id].append(agent)
    return out


def vote_statistics(source: Any, run_id: str) -> list[dict[str, Any]]:
    """Per agent and condition of Mediation / Contracting: proposals, votes, adoption.

    - ``adoption_rate``: share of the agent's proposals that won the vote;
    - ``approval_share``: mean share of voters that approved the agent's proposals;
    - ``approve_rate``: share of proposals on the table the agent approved;
    - ``own_approved_rate``: share of votes in which the agent approved its own proposal;
    - ``sign_rate`` / ``active_rate`` (Contracting): signatures given; matches in which
      the contract became binding;
    - ``delegate_rate`` (Mediation): share of the agent's plays that delegated.
    """
    db = _db(source)
    infos = _phase_infos(db, run_id)
    rounds = _round_infos(db, run_id)
    acc: dict[tuple[Any, ...], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    mechanisms = ("mediation", "contracting")
    seats = _seat_agents(db, run_id, mechanisms)
    for match_id, exp, game, mech, cond, _spec in _match_rows(db, run_id, mechanisms):
        agents = seats[match_id]
        phases = infos.get(match_id, {})
        proposals = phases.get("propose", {}).get("proposals", {})
        vote = phases.get("vote", {})
        sign = phases.get("sign", {})
        n_voters = len(agents)
        for seat, agent in enumerate(agents):
            a = acc[(exp, game, mech, cond, agent)]
            a["matches"] += 1
            own = [pid for pid, p in proposals.items() if p.get("seat") == seat]
            a["proposals"] += len(own)
            for pid in own:
                a["adopted"] += vote.get("winner") == pid
                a["approval_share"] += vote.get("approvals", {}).get(pid, 0) / max(n_voters, 1)
            ballot = vote.get("ballots", {}).get(str(seat + 1))
            if ballot is not None:
                a["ballot_entries"] += len(proposals)
                a["approvals_given"] += len(ballot)
                if own:
                    a["own_votes"] += 1
                    a["own_approved"] += own[0] in ballot
            signatures = sign.get("signed", [])
            if seat < len(signatures):
                a["sign_decisions"] += 1
                a["signed"] += bool(signatures[seat])
                a["active"] += bool(sign.get("active"))
            delegated = rounds.get(match_id, {}).get("delegated")
            if mech == "mediation" and delegated is not None:
                a["plays"] += 1
                a["delegated"] += bool(delegated[seat])
    out = []
    for (exp, game, mech, cond, agent), a in sorted(acc.items(), key=lambda kv: tuple(map(str, kv[0]))):
        row: dict[str, Any] = {
            "experiment": exp, "game": game, "mechanism": mech, "condition": cond,
            "agent": agent, "matches": int(a["matches"]), "proposals": int(a["proposals"]),
            "adopted": int(a["adopted"]),
            "adoption_rate": _ratio(a["adopted"], a["proposals"]),
            "approval_share": _ratio(a["approval_share"], a["proposals"]),
            "approve_rate": _ratio(a["approvals_given"], a["ballot_entries"]),
            "own_approved_rate": _ratio(a["own_approved"], a["own_votes"]),
        }
        if mech == "contracting":
            row["sign_rate"] = _ratio(a["signed"], a["sign_decisions"])
            row["active_rate"] = _ratio(a["active"], a["matches"])
        if mech == "mediation":
            row["delegate_rate"] = _ratio(a["delegated"], a["plays"])
        out.append(row)
    return out


def _round_infos(db: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """The round-1 info of every Mediation / Contracting match (shared by its seats)."""
    rows = db.execute(
        """select r.match_id, min(r.info) from rounds r join matches m on m.id = r.match_id
           where m.run_id = ? and m.status = 'done' and r.round = 1
                 and m.mechanism in ('mediation', 'contracting')
           group by r.match_id""",
        [run_id],
    ).fetchall()
    return {match_id: json.loads(info) if info else {} for match_id, info in rows}


def _ratio(num: float, den: float) -> float | None:
    return None if not den else num / den


# ----------------------------------------------------------------- design quality
def mediator_sustains_cooperation(game: Game, plan: Mapping[int, int]) -> bool:
    """The mediator plays a cooperative action for all n delegators, and nobody gains
    by acting alone when everyone else delegates (all-delegate is a Nash equilibrium)."""
    from coop_tui.mechanisms.mediation import mediated_game

    n = game.n_players
    if not game.has_cooperation or not all(int(plan[n]) in c for c in game.cooperative):
        return False
    mgame = mediated_game(game, plan)
    return is_nash(mgame, [game.action_counts[i] for i in range(n)])


def contract_sustains_cooperation(game: Game, terms: Mapping[int, int]) -> bool:
    """All-cooperate is a Nash equilibrium of the game with the contract's transfers."""
    from coop_tui.mechanisms.contracting import contract_game

    if not game.has_cooperation:
        return False
    return is_nash(contract_game(game, terms), list(game.all_cooperate_profile()))


def design_stability(source: Any, run_id: str) -> list[dict[str, Any]]:
    """One row per stored proposal: does it make mutual cooperation stable, did it win."""
    db = _db(source)
    infos = _phase_infos(db, run_id)
    mechanisms = ("mediation", "contracting")
    seats = _seat_agents(db, run_id, mechanisms)
    games: dict[str, Game] = {}
    # a design's verdict depends only on the game and the design; agents propose the same
    # designs match after match, so each distinct one is solved once
    verdicts: dict[tuple[str, str, tuple[tuple[int, int], ...]], bool] = {}
    out = []
    for match_id, exp, game_key, mech, cond, spec in _match_rows(db, run_id, mechanisms):
        if not spec:
            continue
        if spec not in games:
            games[spec] = game_from_spec(json.loads(spec))
        game = games[spec]
        agents = seats[match_id]
        phases = infos.get(match_id, {})
        winner = phases.get("vote", {}).get("winner")
        for pid, p in phases.get("propose", {}).get("proposals", {}).items():
            if mech == "mediation":
                design = {int(k): int(a) for k, a in p["plan"].items()}
            else:
                design = {int(k): int(v) for k, v in p["terms"].items()}
            key = (spec, mech, tuple(sorted(design.items())))
            if key not in verdicts:
                verdicts[key] = (mediator_sustains_cooperation(game, design) if mech == "mediation"
                                 else contract_sustains_cooperation(game, design))
            stable = verdicts[key]
            out.append({
                "match_id": match_id, "experiment": exp, "game": game_key, "mechanism": mech,
                "condition": cond, "proposal": pid, "seat": p["seat"], "agent": agents[p["seat"]],
                "design": {str(k): v for k, v in design.items()},
                "stable": stable, "won": pid == winner,
            })
    return out


def actions_report(source: Any, run_id: str) -> dict[str, Any]:
    """Everything above, plus per-agent shares of stable designs, for the JSON report."""
    designs = design_stability(source, run_id)
    summary: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for d in designs:
        s = summary[(d["experiment"], d["game"], d["mechanism"], d["condition"], d["agent"])]
        s[0] += 1
        s[1] += d["stable"]
        s[2] += d["won"]
        s[3] += d["won"] and d["stable"]
    stability = [
        {
            "experiment": e, "game": g, "mechanism": m, "condition": c, "agent": a,
            "proposals": n, "stable_rate": st / n, "adopted": w,
            "adopted_stable_rate": _ratio(ws, w),
        }
        for (e, g, m, c, a), (n, st, w, ws) in sorted(summary.items(), key=lambda kv: tuple(map(str, kv[0])))
    ]
    return {
        "action_frequencies": action_frequencies(source, run_id),
        "conditional_frequencies": conditional_frequencies(source, run_id),
        "votes": vote_statistics(source, run_id),
        "design_stability": stability,
    }
