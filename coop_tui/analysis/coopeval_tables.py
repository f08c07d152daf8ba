"""The paper's tables (CoopEval, CoopEval: Tables 2-7) from a stored study.

Every metric is computed per replicate (CoopEval's three runs, or a sweep's
``replicates``) and reported as mean ± standard error over replicates, which is how the
paper's per-game tables are made; pooling the replicates into one matchup tensor would
change Fitness by up to 1.3 on CoopEval's own data.

* **Mean** — payoff against the uniform population (for Reputation, where there is no
  matchup to rebuild: the mean over an agent's seats of its δ-weighted payoff).
* **Fitness** — payoff against the population after 1000 steps of replicator dynamics;
  its "LLM average" weights agents by their final population share.
* **DevRank** — rank by deviation rating, ties sharing the mean rank (so the average
  is always (n + 1) / 2). Our ratings are the solver-independent ones of
  :mod:`coop_tui.analysis.population`; the paper's come from the vertex Gurobi returned.
* **The aggregate table** ("all") covers the four social dilemmas: each game's cell
  value is normalised so 0 = everyone defects and 1 = everyone plays the most
  cooperative action, then the value is the mean over the games and ± the standard
  error across games (a single game keeps its replicate ± on the normalised scale).
  DevRank is averaged without normalising.

One row per cell: ``{"table", "mechanism", "order", "metric", "agent", "value", "se",
"n"}``; ``agent`` is ``"average"`` for the LLM-average column. Each cell also names its
``experiment`` and ``condition`` (a sweep can hold several tournaments of one game and
mechanism); aggregate cells list the ``games`` they average.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from coop_tui.analysis.coopeval_devrating import coopeval_ratings
from coop_tui.analysis.population import (
    deviation_ranks,
    deviation_ratings,
    mean_payoffs,
    replicator_dynamics,
)
from coop_tui.analysis.ratings_cache import deviation_ratings as stored_ratings
from coop_tui.analysis.tournament import cross_play_tensor, run_spec, tournament_metrics
from coop_tui.games import game_from_spec
from coop_tui.store import GAME_SPEC_MIN, GAME_SPEC_OF_GROUP

DILEMMAS = ("prisoners", "public_good", "travelers", "trust")
"""The games of the aggregate table (Stag Hunt and Matching Pennies are not dilemmas)."""
DILEMMA_NAMES = {"prisoners": "Prisoner's Dilemma", "public_good": "Public Goods",
                 "travelers": "Traveler's Dilemma", "trust": "Trust"}
MECHANISM_ORDER = ("none", "repetition", "reputation", "mediation", "contracting")
METRICS = ("mean", "fitness", "deviation_rank")
METRIC_NAMES = {"mean": "Mean", "fitness": "Fitness", "deviation_rank": "DevRank"}
PAPER_NAMES = {
    # the paper's column names for its six agents; display only, cells keep full labels
    "anthropic/claude-sonnet-4.5(CoT)": "Claude",
    "google/gemini-3-flash-preview(CoT)": "Gemini-R",
    "google/gemini-3-flash-preview(IO)": "Gemini-B",
    "openai/gpt-5.2(CoT)": "GPT-5.2",
    "openai/gpt-4o-2024-05-13(CoT)": "GPT-4o",
    "qwen/qwen3-30b-a3b-instruct-2507(CoT)": "Qwen-30b",
}


STEPS = 1000
LEARNING_RATE = 0.1
EVOLUTION_POINTS = 101
"""Trajectory points kept per replicate in the report (every 10th of 1000 steps)."""
MECHANISM_LABELS = {
    ("none", None): "NoMechanism",
    ("repetition", None): "Repetition",
    ("reputation", "first"): "Reputation-",
    ("reputation", "higher"): "Reputation+",
    ("reputation", None): "Reputation",
    ("mediation", None): "Mediation",
    ("contracting", None): "Contracting",
}


def mean_se(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and standard error (sample standard deviation / sqrt n). One value has no
    standard error: None, printed as the value alone (never "± 0.000")."""
    n = len(values)
    mean = float(sum(values) / n)
    if n < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def mechanism_label(mechanism: str, order: str | None) -> str:
    return MECHANISM_LABELS.get((mechanism, order), mechanism)


# ----------------------------------------------------------------------------- SQL


def _groups(db: Any, run_id: str) -> list[dict[str, Any]]:
    """One group per experiment x game x condition that has population metrics."""
    rows = db.execute(
        f"""select experiment, game, mechanism, condition_key, cond, matchup,
                  {GAME_SPEC_OF_GROUP}, reps from (
           select experiment, game, mechanism, condition_key, min(condition) as cond,
                  min(matchup) as matchup, {GAME_SPEC_MIN},
                  group_concat(distinct replicate) as reps
           from matches
           where run_id = ? and status = 'done'
                 and ((matchup = 'cross' and mechanism not in ('benchmark', 'score'))
                      or (matchup in ('reputation', 'population') and mechanism = 'reputation'))
           group by experiment, game, condition_key, matchup)
           order by experiment, game, condition_key""",
        [run_id],
    ).fetchall()
    out = []
    for exp, game, mech, ckey, cond, matchup, gspec, reps in rows:
        condition = json.loads(cond) if cond else {}
        order = condition.get("order") if mech == "reputation" else None
        out.append({
            "experiment": exp, "game": game, "mechanism": mech, "condition_key": ckey,
            # a Reputation population played by coop-tui is labelled "population"
            "order": order, "matchup": "reputation" if matchup == "population" else matchup,
            "game_spec": json.loads(gspec) if gspec else None,
            "replicates": sorted(int(r) for r in str(reps).split(",")),
        })
    return out


def _tensor(db: Any, run_id: str, g: dict[str, Any], replicate: int):
    """Per-seating payoff sums of one replicate.

    A group played as one replicate has no other matches, so its replicate's sums are the
    pooled sums the tournament metrics read too (the same rows in the same order): asking
    the pooled question lets both share one read.
    """
    only = g["replicates"] == [replicate]
    return cross_play_tensor(
        db, run_id, g["experiment"], g["game"], g["condition_key"], None if only else replicate
    )


def _reputation_means(db: Any, run_id: str, g: dict[str, Any], replicate: int) -> dict[str, float]:
    rows = db.execute(
        """select s.agent, avg(s.payoff) from seats s join matches m on m.id = s.match_id
           where m.run_id = ? and m.experiment = ? and m.replicate = ? and m.game = ?
                 and m.condition_key = ? and m.matchup in ('reputation', 'population')
                 and m.status = 'done'
                 and s.payoff is not null
           group by s.agent""",
        [run_id, g["experiment"], replicate, g["game"], g["condition_key"]],
    ).fetchall()
    return {agent: float(v) for agent, v in rows}


# ----------------------------------------------------------------------------- per replicate


def _roster_permutation(agents: Sequence[str], roster: Sequence[str] | None) -> list[int]:
    """Indices of ``agents`` in ``roster`` order (agents the roster does not name follow
    by name); the identity without a roster."""
    listed = [agents.index(a) for a in dict.fromkeys(roster or ()) if a in agents]
    return listed + [i for i in range(len(agents)) if i not in listed]


def _permuted(payoffs: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """The payoff tensor with its agents (every axis) taken in ``order``."""
    for axis in range(payoffs.ndim):
        payoffs = np.take(payoffs, list(order), axis=axis)
    return payoffs


def replicate_metrics(
    tensor, *, freeze: str = "every_optimum", db: Any = None,
    ratings: Sequence[float] | None = None, roster: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Mean, Fitness, final shares, deviation ratings and ranks, and the trajectory.

    ``freeze="vertex"`` rates agents by CoopEval's rule (whatever is tight at the LP vertex
    the solver returns) on our LP; ``freeze="coopeval"`` builds CoopEval's own LP (ordered
    seatings, seat and rated equalities, its tolerance: see
    :mod:`coop_tui.analysis.coopeval_devrating`) and solves it with Gurobi, CoopEval's
    solver, when gurobipy is installed, else with HiGHS (``devrank_solver`` in the result
    says which ran, ``devrank_solver_note`` why HiGHS stood in); the default is our
    solver-independent rating. With ``db`` the other rules' ratings are read from, or stored in, its rating
    results (no LP when solved before). ``ratings`` given (a source's published ones, in
    ``tensor.agents`` order) are ranked as they are, with no LP. ``roster``: the agents in
    the order CoopEval's own LP takes them (:func:`_rosters`); by name without one.
    """
    mean = mean_payoffs(tensor.payoffs)
    dyn = replicator_dynamics(tensor.payoffs, steps=STEPS, lr=LEARNING_RATE, record=True)
    solver: dict[str, str] = {}
    if ratings is not None:
        ratings = list(ratings)
    elif freeze == "coopeval":
        # CoopEval's LP lists the agents in its own order (the tournament's roster): a
        # degenerate LP's vertex depends on it
        seating = _roster_permutation(tensor.agents, roster)
        solved = coopeval_ratings(_permuted(tensor.payoffs, seating))
        ratings = [0.0] * len(seating)
        for position, agent in enumerate(seating):
            ratings[agent] = float(solved.ratings[position])
        solver = {"devrank_solver": solved.solver}
        if solved.note:
            solver["devrank_solver_note"] = solved.note
    elif db is not None:
        ratings = stored_ratings(db, tensor.payoffs, method="highs-ds", freeze=freeze)
    else:
        ratings = deviation_ratings(tensor.payoffs, freeze=freeze)  # type: ignore[arg-type]
    ranks = deviation_ranks(ratings)
    agents = list(tensor.agents)
    return {
        "agents": agents,
        "mean": dict(zip(agents, map(float, mean), strict=True)),
        "fitness": dict(zip(agents, map(float, dyn.fitness), strict=True)),
        "share": dict(zip(agents, map(float, dyn.population), strict=True)),
        "deviation_rating": dict(zip(agents, map(float, ratings), strict=True)),
        "deviation_rank": dict(zip(agents, ranks, strict=True)),
        "trajectory": dyn.trajectory,
        **solver,
    }


def _average(metric: str, rep: dict[str, Any]) -> float:
    values = rep[metric]
    if metric == "fitness":  # weighted by the final population, as in the paper
        return float(sum(rep["share"][a] * values[a] for a in values))
    return float(sum(values.values()) / len(values))


def _subsample(trajectory: np.ndarray, points: int = EVOLUTION_POINTS) -> tuple[list[int], np.ndarray]:
    last = len(trajectory) - 1
    stride = max(1, math.ceil(last / max(points - 1, 1)))
    steps = list(range(0, last + 1, stride))
    if steps[-1] != last:
        steps.append(last)
    return steps, trajectory[steps]


# ----------------------------------------------------------------------------- tables


DEVRANK_MODES = ("every_optimum", "vertex", "coopeval", "published")
"""How DevRank's ratings are obtained (``report --devrank``, a study's ``devrank``):

* ``every_optimum`` — our solver-independent ratings (a constraint is frozen only when
  it is tight in every optimum); the default;
* ``vertex`` — CoopEval's freezing rule on our LP (whatever is tight at the vertex
  HiGHS's dual simplex returns);
* ``coopeval`` — CoopEval's own LP, solved by Gurobi (CoopEval's solver) when gurobipy
  is installed, else by HiGHS's interior point + crossover (an emulation); each row and
  cell names the solver (``devrank_solver``);
* ``published`` — an imported replicate's own ``deviation_ratings.json`` (the ratings
  of the optimum Gurobi returned to CoopEval), ranked as ours are; a replicate without
  that file falls back to ``coopeval``, and each cell says which source it used.
"""
DEVRANK_FALLBACK = "coopeval"


def devrank_mode(mode: str | None) -> str:
    """A valid DevRank mode (None: the default); a ValueError names the choices."""
    if mode is None:
        return "every_optimum"
    if mode not in DEVRANK_MODES:
        raise ValueError(f"devrank {mode!r} is not one of {', '.join(DEVRANK_MODES)}")
    return mode


def run_devrank_mode(store: Any, run_id: str) -> str | None:
    """The ``devrank`` a run's study file asked for (None when it set none)."""
    mode = run_spec(store, run_id).get("devrank")
    return mode if mode in DEVRANK_MODES else None


def _published_ratings(published: dict[str, Any] | None, agents: Sequence[str]) -> list[float] | None:
    """The replicate's published deviation ratings in ``agents`` order, if it has all."""
    if not published:
        return None
    out = []
    for agent in agents:
        value = (published.get(agent) or {}).get("deviation_rating")
        if not isinstance(value, int | float):
            return None
        out.append(float(value))
    return out


def paper_tables(store: Any, run_id: str, *, freeze: str = "every_optimum") -> dict[str, Any]:
    """``{"tables": [cell rows], "evolution": [trajectories], "per_replicate": [...]}``.

    ``freeze`` is the DevRank mode (:data:`DEVRANK_MODES`): how deviation ratings settle
    ties, or ``published`` to rank by an import's own ratings. Every DevRank cell and
    per-replicate row names the ``devrank_source`` it used.
    """
    freeze = devrank_mode(freeze)
    db = store.db
    cells: list[dict[str, Any]] = []
    evolution: list[dict[str, Any]] = []
    per_replicate: list[dict[str, Any]] = []
    game_specs: dict[str, Any] = {}
    published = _published(store, run_id)
    rosters = _rosters(store, run_id)
    for g in _groups(db, run_id):
        key = {"table": g["game"], "mechanism": g["mechanism"], "order": g["order"],
               "experiment": g["experiment"], "condition": g["condition_key"]}
        game_specs.setdefault(g["game"], g["game_spec"])
        reps: list[dict[str, Any]] = []
        for r in g["replicates"]:
            if g["matchup"] == "reputation":
                means = _reputation_means(db, run_id, g, r)
                if means:
                    reps.append({"replicate": r, "agents": sorted(means), "mean": means})
                continue
            tensor = _tensor(db, run_id, g, r)
            if not tensor.complete:
                continue  # a replicate with unplayed matchups has no population metrics
            shown = published.get((g["experiment"], r))
            given = _published_ratings(shown, tensor.agents) if freeze == "published" else None
            source = "published" if given is not None else (
                DEVRANK_FALLBACK if freeze == "published" else freeze)
            try:
                rep = replicate_metrics(tensor, freeze=source, db=db, ratings=given,
                                        roster=rosters.get((g["experiment"], r)))
            except (ValueError, RuntimeError):
                continue  # an LP that fails must not take the whole report down
            rep["devrank_source"] = source
            steps, shares = _subsample(rep.pop("trajectory"))
            evolution.append({
                **key, "replicate": r, "steps": steps,
                "shares": {a: [float(x) for x in shares[:, i]] for i, a in enumerate(rep["agents"])},
            })
            reps.append({"replicate": r, **rep})
        for rep in reps:
            row = {**key, **{k: v for k, v in rep.items() if k != "agents"}}
            shown = published.get((g["experiment"], rep["replicate"]))
            if shown:
                row["published"] = shown  # the source's own numbers, beside ours, never ours
            per_replicate.append(row)
        if not reps:
            continue
        metrics = ("mean",) if g["matchup"] == "reputation" else METRICS
        agents = sorted({a for rep in reps for a in rep["agents"]})
        for metric in metrics:
            for agent in ["average", *agents]:
                values = [
                    _average(metric, rep) if agent == "average" else rep[metric][agent]
                    for rep in reps
                    if agent == "average" or agent in rep[metric]
                ]
                value, se = mean_se(values)
                cell = {**key, "metric": metric, "agent": agent, "value": value, "se": se,
                        "n": len(values)}
                if metric == "deviation_rank":
                    cell["devrank_source"] = _sources(reps)
                    if any("devrank_solver" in rep for rep in reps):
                        cell["devrank_solver"] = _solvers(reps)
                    notes = sorted({rep["devrank_solver_note"] for rep in reps
                                    if rep.get("devrank_solver_note")})
                    if notes:
                        cell["devrank_solver_note"] = "; ".join(notes)
                cells.append(cell)
    cells.extend(aggregate_cells(cells, game_specs))
    return {"tables": cells, "evolution": evolution, "per_replicate": per_replicate}


def _sources(reps: list[dict[str, Any]]) -> str:
    """Which ratings a DevRank cell's replicates used: one mode, or each with its count."""
    counts: dict[str, int] = defaultdict(int)
    for rep in reps:
        counts[rep.get("devrank_source", "every_optimum")] += 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} ({v} of {len(reps)})" for k, v in sorted(counts.items()))


def _solvers(reps: list[dict[str, Any]]) -> str:
    """Which solver rated a DevRank cell's replicates (those CoopEval's LP rated), as
    :func:`_sources` counts sources."""
    counts: dict[str, int] = defaultdict(int)
    solved = [rep for rep in reps if "devrank_solver" in rep]
    for rep in solved:
        counts[rep["devrank_solver"]] += 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} ({v} of {len(solved)})" for k, v in sorted(counts.items()))


def _rosters(store: Any, run_id: str) -> dict[tuple[int, int], list[str]]:
    """Each tournament's agents in the order CoopEval's LP takes them, per (experiment,
    replicate): an imported tournament's ``roster`` (its evaluation files' order, else
    config.json's: coop_tui.importers.coopeval_records._roster), a sweep's experiment's
    ``agents`` (every replicate alike). Missing for studies imported before rosters were
    kept: those rate by name."""
    spec = run_spec(store, run_id)
    if isinstance(spec.get("roster"), list):  # one tournament imported on its own
        return {(0, 0): [str(a) for a in spec["roster"]]}
    out: dict[tuple[int, int], list[str]] = {}
    for t in spec.get("tournaments") or []:
        if isinstance(t, dict) and isinstance(t.get("roster"), list):
            out[(t.get("experiment"), t.get("replicate"))] = [str(a) for a in t["roster"]]
    experiments = spec.get("experiments")
    if not out and isinstance(experiments, list):
        for index, exp in enumerate(experiments):
            agents = exp.get("agents") if isinstance(exp, dict) else None
            if isinstance(agents, list) and all(isinstance(a, str) for a in agents):
                replicates = int(spec.get("replicates") or exp.get("replicates") or 1)
                out.update({(index, r): list(agents) for r in range(replicates)})
    return out


def _published(store: Any, run_id: str) -> dict[tuple[int, int], Any]:
    """An imported study's published metric files, per (experiment, replicate)."""
    spec = run_spec(store, run_id)
    if not spec:
        return {}
    if isinstance(spec.get("published"), dict) and spec["published"]:
        return {(0, 0): spec["published"]}  # one tournament imported on its own
    return {
        (t["experiment"], t["replicate"]): t["published"]
        for t in spec.get("tournaments") or []
        if isinstance(t, dict) and t.get("published")
    }


def _scale(spec: dict[str, Any] | None) -> tuple[float, float] | None:
    """Per-player payoff when everyone defects and when everyone cooperates."""
    if not spec:
        return None
    try:
        game = game_from_spec(spec)
    except (KeyError, TypeError, ValueError):
        return None
    if not game.has_cooperation:
        return None
    low = float(np.mean(game.payoff(game.all_defect_profile())))
    high = float(np.mean(game.payoff(game.all_cooperate_profile())))
    return None if math.isclose(low, high) else (low, high)


def across_games(condition: str | None) -> str:
    """A cell's condition without its game: the key that pools one setting over games.

    Our own sweeps put ``game=...`` in every match's condition (an experiment may list
    several games, which must never be pooled *within* a game's table), so Table 2 has to
    drop it to bring the four dilemmas of one mechanism setting together; an import has
    no game in its conditions and is unchanged.
    """
    parts = [p for p in str(condition or "-").split(" ") if not p.startswith("game=")]
    return " ".join(p for p in parts if p and p != "-") or "-"


def aggregate_cells(cells: list[dict[str, Any]], game_specs: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 2: the four dilemmas' cells normalised and averaged across games.

    Cells of one mechanism setting are pooled over games by :func:`across_games`; a game
    appearing twice in one pool (two experiments with the same setting) keeps both, each
    counted as a game, and the cell's ``games`` lists them.
    """
    scales = {g: _scale(game_specs.get(g)) for g in DILEMMAS if g in game_specs}
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        if c["table"] in scales and scales[c["table"]] is not None:
            key = (c["mechanism"], c["order"], across_games(c["condition"]), c["metric"],
                   c["agent"])
            by_key[key].append(c)
    out = []
    for (mech, order, condition, metric, agent), group in by_key.items():
        if metric == "deviation_rank":
            values = [c["value"] for c in group]
            value, se = mean_se(values) if len(group) > 1 else (group[0]["value"], group[0]["se"])
        else:
            normed = []
            for c in group:
                low, high = scales[c["table"]]
                se = None if c["se"] is None else c["se"] / abs(high - low)
                normed.append(((c["value"] - low) / (high - low), se))
            if len(normed) == 1:
                value, se = normed[0]
            else:
                value, se = mean_se([v for v, _ in normed])
        if metric == "deviation_rank":
            extra = {"devrank_source": "; ".join(sorted({str(c.get("devrank_source"))
                                                         for c in group}))}
            for key in ("devrank_solver", "devrank_solver_note"):
                found = sorted({c[key] for c in group if c.get(key)})
                if found:
                    extra[key] = "; ".join(found)
        else:
            extra = {}
        experiments = {c.get("experiment") for c in group}
        out.append({"table": "all", "mechanism": mech, "order": order, "metric": metric,
                    "agent": agent, "value": value, "se": se, "n": len(group),
                    # one experiment listing every game (our sweeps) keeps its number
                    "experiment": experiments.pop() if len(experiments) == 1 else None,
                    "condition": condition,
                    "games": sorted(c["table"] for c in group), **extra})
    return out


# ----------------------------------------------------------------------------- output


def pooled_games(cells: Sequence[dict[str, Any]]) -> list[str]:
    """The dilemmas the aggregate cells among ``cells`` pool, in the paper's order."""
    found = {g for c in cells if c.get("table") == "all" for g in c.get("games") or ()}
    return [g for g in DILEMMAS if g in found] + sorted(found - set(DILEMMAS))


def aggregate_title(games: Sequence[str]) -> str:
    """What the aggregate table covers, named from the games it actually pools: the paper's
    "all four dilemmas" only when all four are there."""
    if set(DILEMMAS) <= set(games):
        return "all four dilemmas"
    names = [DILEMMA_NAMES.get(g, g) for g in games]
    if not names:
        return "no dilemma"
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{listed} only"


def aggregate_footnote(cells: Sequence[dict[str, Any]]) -> str:
    """What the aggregate's ± is: across the games a cell pools, or, for a cell of one
    game, that game's replicate ± on the normalised scale."""
    sizes = {len(c.get("games") or ()) for c in cells if c.get("table") == "all"}
    scale = "0 = everyone defects, 1 = everyone cooperates"
    if sizes == {1}:
        return f"one game per cell: value ± SE over replicates, normalised ({scale})"
    if 1 in sizes:
        return (f"normalised ({scale}); ± SE across the games a cell pools, over replicates "
                "where it has one game")
    return f"normalised ({scale}), averaged over the games; ± SE across games"


def _sort_key(c: dict[str, Any]) -> tuple[Any, ...]:
    mech = MECHANISM_ORDER.index(c["mechanism"]) if c["mechanism"] in MECHANISM_ORDER else 99
    return (mech, {"first": 0, "higher": 1}.get(c["order"], -1), str(c.get("condition")),
            METRICS.index(c["metric"]))


def table_layout(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells arranged as the paper prints them: per table, rows and columns."""
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        tables[c["table"]].append(c)
    order = [t for t in ("all", *DILEMMAS, "stag_hunt") if t in tables]
    order += sorted(t for t in tables if t not in order)
    names = condition_names(cells)
    out = []
    for t in order:
        known = list(PAPER_NAMES)  # the paper's column order first, then by label
        agents = sorted({c["agent"] for c in tables[t] if c["agent"] != "average"},
                        key=lambda a: (known.index(a) if a in known else len(known), a))
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        for c in sorted(tables[t], key=_sort_key):
            label = mechanism_label(c["mechanism"], c["order"])
            named = names.get((c["mechanism"], c["order"]), {}).get(across_games(c.get("condition")))
            if named:
                label += f" [{named}]"
            rk = (c["mechanism"], c["order"], c.get("experiment"), c.get("condition"), c["metric"])
            rows.setdefault(rk, {"mechanism": label, "metric": c["metric"], "cells": {}})[
                "cells"][c["agent"]] = c
        out.append({"table": t, "columns": ["average", *agents], "rows": list(rows.values())})
    return out


CONDITION_FIELD = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")
"""One ``name=value`` of a stored condition key; a value may hold spaces (a dict)."""
SHORT_VALUE = 24
"""Longer values (score tables, long names) do not name a row: it is numbered instead."""


def condition_fields(condition: Any) -> dict[str, str]:
    """A stored condition key (``framing=similar similarity=50.0``) as fields, numbers
    written short (``50``)."""
    out = {}
    for name, value in CONDITION_FIELD.findall(str(condition or "")):
        try:
            out[name] = f"{float(value):g}"
        except ValueError:
            out[name] = value
    return out


def condition_names(cells: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, str]]:
    """Per (mechanism, order), a short name for each of its conditions in the whole run
    (``similarity=50 bonus=3``): the fields that differ between them, games left out.

    A run with several settings of one mechanism (the similarity sweeps, the bonus
    variants) would otherwise print rows that read the same ("similarity · Mean" twelve
    times) in different tables; naming the condition across the run, not per table, says
    which setting each row is even where a table holds just one. A mechanism played in one
    setting needs no name; settings no short field tells apart are numbered.
    """
    by_mech: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for c in cells:
        key, cond = (c["mechanism"], c["order"]), across_games(c.get("condition"))
        if cond not in by_mech[key]:
            by_mech[key].append(cond)
    out: dict[tuple[Any, ...], dict[str, str]] = {}
    for key, conds in by_mech.items():
        if len(conds) < 2:
            continue
        fields = [condition_fields(c) for c in conds]
        names = sorted({f for fs in fields for f in fs})
        varying = [f for f in names if len({fs.get(f) for fs in fields}) > 1
                   and all(len(fs.get(f) or "") <= SHORT_VALUE for fs in fields)]
        if len({tuple(fs.get(f) for f in varying) for fs in fields}) < len(conds):
            out[key] = {c: f"setting {i + 1}" for i, c in enumerate(conds)}
            continue
        out[key] = {c: " ".join(f"{f}={fs[f]}" for f in varying if f in fs) or "default"
                    for c, fs in zip(conds, fields, strict=True)}
    return out


def column_name(agent: str) -> str:
    """A column header short enough for a terminal (the provider prefix dropped)."""
    if agent == "average":
        return "LLM average"
    return PAPER_NAMES.get(agent, agent.split("/")[-1])


def cell_text(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    digits = 1 if c["metric"] == "deviation_rank" and c["agent"] != "average" else 3
    if c["se"] is None:  # one replicate (or one game): no standard error exists
        return f"{c['value']:.{digits}f}"
    return f"{c['value']:.{digits}f} ± {c['se']:.{digits}f}"


def render_latex(cells: list[dict[str, Any]]) -> str:
    parts = []
    for t in table_layout(cells):
        cols = t["columns"]
        parts.append(f"% table: {t['table']}" + (
            f" ({aggregate_title(pooled_games(cells))}; {aggregate_footnote(cells)})"
            if t["table"] == "all" else ""))
        note = devrank_note([c for r in t["rows"] for c in r["cells"].values()])
        if note:
            parts.append(f"% {note}")
        parts.append("\\begin{tabular}{ll" + "r" * len(cols) + "}")
        head = ["Mechanism", "Metric", *(column_name(c) for c in cols)]
        parts.append(" & ".join(_tex(h) for h in head) + " \\\\ \\hline")
        for row in t["rows"]:
            values = [cell_text(row["cells"].get(c)).replace("±", "$\\pm$") for c in cols]
            parts.append(" & ".join([_tex(row["mechanism"]), METRIC_NAMES[row["metric"]], *values])
                         + " \\\\")
        parts.append("\\end{tabular}\n")
    return "\n".join(parts)


def _tex(text: str) -> str:
    return text.replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")


def render_csv(cells: list[dict[str, Any]], extra: Sequence[dict[str, Any]] = ()) -> str:
    """The tables' cells as CSV rows, then ``extra`` rows (report sections'); the header
    gains the columns the extra rows bring, in the order they first appear."""
    buf = io.StringIO()
    fields = ["table", "mechanism", "order", "metric", "agent", "value", "se", "n", "condition"]
    for row in extra:
        fields += [k for k in row if k not in fields]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for c in [*cells, *extra]:
        writer.writerow({k: c.get(k) for k in fields})
    return buf.getvalue()


DEVRANK_SOURCE_TEXT = {
    "every_optimum": "ours (solver-independent)",
    "vertex": "CoopEval's freezing rule on our LP (HiGHS dual simplex vertex)",
    "coopeval": "CoopEval's LP",
    "published": "CoopEval's own deviation_ratings.json",
}
DEVRANK_SOLVER_TEXT = {
    "gurobi": "Gurobi barrier + crossover, CoopEval's solver",
    "highs-ipm": "HiGHS interior point + crossover, an emulation of CoopEval's Gurobi",
}


def devrank_note(cells: Sequence[dict[str, Any]]) -> str | None:
    """One line saying where the DevRank cells among ``cells`` got their ratings: the
    source, and for CoopEval's LP the solver that ran (and why HiGHS stood in, if it did)."""
    sources = sorted({c["devrank_source"] for c in cells if c.get("devrank_source")})
    if not sources:
        return None
    text = "DevRank ratings: " + "; ".join(DEVRANK_SOURCE_TEXT.get(x, x) for x in sources)
    solvers = sorted({c["devrank_solver"] for c in cells if c.get("devrank_solver")})
    if solvers:
        text += "; solver: " + "; ".join(DEVRANK_SOLVER_TEXT.get(x, x) for x in solvers)
    notes = sorted({c["devrank_solver_note"] for c in cells if c.get("devrank_solver_note")})
    if notes:
        text += " (" + "; ".join(notes) + ")"
    return text


def render_rich(cells: list[dict[str, Any]]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    out = []
    for t in table_layout(cells):
        title = (f"CoopEval table: {aggregate_title(pooled_games(cells))} (normalised)"
                 if t["table"] == "all" else f"CoopEval table: {t['table']}")
        table = Table(title=title, title_justify="left")
        table.add_column("mechanism", no_wrap=True)  # the condition reads whole
        table.add_column("metric")
        for c in t["columns"]:
            table.add_column(column_name(c), justify="right")
        for row in t["rows"]:
            # Text, not a markup string: "[similarity=50]" would be read as a style tag and
            # vanish, leaving rows that read the same
            table.add_row(Text(row["mechanism"]), METRIC_NAMES[row["metric"]],
                          *(cell_text(row["cells"].get(c)) for c in t["columns"]))
        table.caption = (aggregate_footnote(cells) if t["table"] == "all"
                         else "value ± SE over replicates")
        note = devrank_note([c for r in t["rows"] for c in r["cells"].values()])
        if note:
            table.caption += "\n" + note
        out.append(table)
    return out


def rate_run(store: Any, run_id: str) -> int:
    """Solve and store (:mod:`coop_tui.analysis.ratings_cache`) every deviation rating a report of ``run_id`` asks for (each
    cross-play tournament, pooled and per replicate); the batch command calls this when a
    run finishes, so ``report`` and the analysis screen read them. Returns how many
    experiments were rated; a tournament whose LP fails is left to the report to explain."""
    experiments = [r[0] for r in store.db.execute(
        "select distinct experiment from matches where run_id = ? and matchup = 'cross'"
        " and status = 'done'", [run_id])]
    if not experiments:
        return 0
    failures = (ValueError, ArithmeticError, RuntimeError)
    with np.errstate(all="ignore"):
        for experiment in experiments:
            with contextlib.suppress(*failures):
                tournament_metrics(store, run_id, experiment)
        with contextlib.suppress(*failures):
            paper_tables(store, run_id)
    return len(experiments)
