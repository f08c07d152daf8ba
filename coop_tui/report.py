"""The analysis of a run, as text tables or JSON (``coop-tui report``).

All aggregation is SQL (GROUP BY over indexed columns) so a run with a million
decisions reports in seconds; Python only touches one row per agent x condition.
The same ``build_report`` feeds the analysis screen.
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui import read_cache, summaries
from coop_tui.analysis.actions import actions_report, condition_rows
from coop_tui.analysis.coopeval_tables import (
    devrank_mode,
    paper_tables,
    render_csv,
    render_latex,
    render_rich,
    run_devrank_mode,
)
from coop_tui.analysis.sections import build_sections, keys, rendered, unknown
from coop_tui.analysis.sections import sections as all_sections
from coop_tui.analysis.stats import wilson_interval
from coop_tui.analysis.theory import b_star
from coop_tui.analysis.tournament import tournament_metrics
from coop_tui.errors import fail
from coop_tui.games import game_from_spec
from coop_tui.slices import run_coverage
from coop_tui.store import Store


def _se(n: int, total: float, total_sq: float) -> float | None:
    if n < 2:
        return None
    mean = total / n
    var = max(total_sq / n - mean * mean, 0.0) * n / (n - 1)
    return math.sqrt(var / n)


def _wilson(successes: float, n: int) -> list[float] | None:
    if n == 0:
        return None
    lo, hi = wilson_interval(successes, n)
    return [lo, hi]


def _b_star(game_spec: str | None) -> float | None:
    if not game_spec:
        return None
    try:
        game = game_from_spec(json.loads(game_spec))
        if not game.has_cooperation or not game.symmetric:
            return None
        value = b_star(game)
        return None if value is None else round(float(value), 6)
    except Exception:  # theory is a bonus in the report, never a reason to fail it
        return None


def build_report(store: Store, run_id: str, sections: Collection[str] | None = None, *,
                 compute_stored: bool = True, devrank: str | None = None) -> dict[str, Any]:
    """The whole analysis of one run: the core (counts, experiments, mechanisms, CoopEval's
    tables) and the report sections ``sections`` names (every one when None). With
    ``compute_stored`` False, slow sections not stored yet are left out (the analysis
    screen builds them in a worker of their own). ``devrank`` picks how DevRank's ratings
    are obtained (:data:`coop_tui.analysis.coopeval_tables.DEVRANK_MODES`); None takes the
    run's study file's ``devrank``, else our solver-independent ratings."""
    db = store.db
    run = store.run(run_id)
    if run is None:
        raise KeyError(run_id)
    counts = _counts(db, run_id)
    experiments = _experiments(db, run_id)
    cond_specs, told_similarity = _condition_games(db, run_id)
    per_round = _per_round(db, run_id)
    out_exps = [
        _finish_experiment(store, run_id, e, cond_specs, told_similarity, per_round)
        for e in experiments.values()
    ]
    out = {
        "run": {
            "id": run["id"],
            "name": run["name"],
            "status": run["status"],
            "kind": run["kind"],
            "created_at": run["created_at"],
            **_run_sources(run),
        },
        "counts": counts,
        "coverage": run_coverage(db.conn, run),
        "failures": store.failure_groups(run_id),
        "experiments": out_exps,
        "mechanisms": actions_report(store, run_id),
    }
    out.update(_paper_tables(store, run_id, devrank))

    out.update(build_sections(store, run_id, out, sections, compute=compute_stored))
    read_cache.forget()  # shared within one report; a long-running TUI need not hold them
    return out


def _counts(db: Any, run_id: str) -> dict[str, Any]:
    """The run's matches by status and its decisions' totals (invalid, re-asks, retries,
    reuse, cost, tokens), from the per-match summaries."""
    counts = dict(
        zip(
            ["matches", "matches_done", "matches_failed", "matches_unfinished"],
            db.execute(
                """select count(*), coalesce(sum(status = 'done'), 0),
                          coalesce(sum(status = 'failed'), 0),
                          coalesce(sum(status not in ('done', 'failed')), 0)
                   from matches where run_id = ?""",
                [run_id],
            ).fetchone(),
            strict=True,
        )
    )
    drow = list(summaries.totals(db.conn, run_id).values())
    # a match that failed because a decision gave up keeps that decision's retries
    frow = db.execute(
        "select count(*), coalesce(sum(transport_retries), 0) from failures where run_id = ?",
        [run_id],
    ).fetchone()
    counts.update(
        decisions=drow[0], invalid=drow[1], retries=max(drow[2], 0),
        transport_retries=drow[3] + frow[1],
        reused=drow[4], cost_usd=round(drow[5], 6),
        # None when no decision of the run has token counts (a server that sends none)
        input_tokens=None if drow[0] and drow[8] == drow[0] else drow[6],
        output_tokens=None if drow[0] and drow[8] == drow[0] else drow[7],
        tokens_unknown=drow[8],  # decisions whose server sent no token counts (None = unknown)
        failures=frow[0],
    )
    return counts


def _experiments(db: Any, run_id: str) -> dict[int, dict[str, Any]]:
    """Each experiment with its conditions and, per condition, each agent's cooperation
    (play decisions with a distribution) and payoff; agents of games without a
    cooperative action get payoffs only."""
    coop_rows = _coop_rows(db, run_id)
    pay_rows = db.execute(
        """
        select m.experiment, m.condition_key, s.agent, count(*), sum(s.payoff),
               sum(s.payoff * s.payoff)
        from seats s indexed by idx_seats_payoff join matches m on m.id = s.match_id
        where m.run_id = ? and m.status = 'done' and s.payoff is not null
        group by m.experiment, m.condition_key, s.agent""",
        [run_id],
    ).fetchall()
    payoffs = {(e, c, a): (n, t, q) for e, c, a, n, t, q in pay_rows}
    experiments: dict[int, dict[str, Any]] = {}
    for exp, games, mech, gspec, matchup, n in _experiment_rows(db, run_id):
        experiments[exp] = {
            "experiment": exp,
            "game": ", ".join(sorted(set((games or "").split(",")))),
            "mechanism": ", ".join(sorted(set((mech or "").split(",")))),
            "matchup": matchup,
            "matches": n,
            "b_star": None,
            "game_spec": json.loads(gspec) if gspec else None,
            "conditions": {},
            "curve": {},
        }
    for exp, _game, _mech, ckey, cjson, agent, n, s, sq, k, nk in coop_rows:
        cond = experiments[exp]["conditions"].setdefault(
            ckey, {"condition": json.loads(cjson), "agents": {}})
        pn, pt, pq = payoffs.get((exp, ckey, agent), (0, 0.0, 0.0))
        cond["agents"][agent] = {
            "n": n,
            "coop_rate": s / n,
            "coop_se": _se(n, s, sq),
            "coop_wilson": _wilson(s, n),
            "sampled_coop_rate": (k / nk) if nk else None,
            "sampled_wilson": _wilson(k, nk) if nk else None,
            "mean_payoff": (pt / pn) if pn else None,
            "payoff_se": _se(pn, pt, pq),
        }
    _answer_rules(db, run_id, experiments)
    for (exp, ckey, agent), (pn, pt, pq) in payoffs.items():
        e = experiments.get(exp)
        if e is None:
            continue
        cond = e["conditions"].setdefault(ckey, {"condition": _condition(db, run_id, exp, ckey), "agents": {}})
        cond["agents"].setdefault(
            agent,
            {"n": pn, "coop_rate": None, "coop_se": None, "coop_wilson": None,
             "sampled_coop_rate": None, "sampled_wilson": None,
             "mean_payoff": pt / pn, "payoff_se": _se(pn, pt, pq)},
        )
    return experiments


def _condition_games(
    db: Any, run_id: str
) -> tuple[dict[tuple[int, str], str | None], set[tuple[int, str]]]:
    """Per (experiment, condition): its game spec, since b* depends on the exact game
    (scale, bonus, size); and the conditions whose agents are told a similarity, the only
    ones where b* (the similarity at which mutual cooperation becomes a b-similarity
    equilibrium) means something."""
    cond_specs = {
        (exp, ckey): gspec
        for exp, ckey, _g, _m, _c, _s, gspec, *_rest in condition_rows(db, run_id)
    }
    told_similarity = {
        (exp, ckey) for exp, ckey, _g, mech, _c, sim, *_rest in condition_rows(db, run_id)
        if sim is not None or "similarity" in (mech or "").split(",")
    }
    return cond_specs, told_similarity


def _finish_experiment(
    store: Store, run_id: str, e: dict[str, Any],
    cond_specs: dict[tuple[int, str], str | None], told_similarity: set[tuple[int, str]],
    per_round: dict[int, dict[tuple[str, str], list[dict[str, Any]]]],
) -> dict[str, Any]:
    """One experiment as the report shows it: conditions listed and labelled by what
    varies, b* per condition (and for the experiment when they agree), the curves over
    similarity and rounds, and the population metrics of a tournament."""
    exp = e["experiment"]
    e["conditions"] = [
        {"condition_key": k, **v} for k, v in e["conditions"].items()
    ]
    varying = _varying_keys([c["condition"] for c in e["conditions"]])
    series_keys = [k for k in varying if k != "similarity"]
    labels = {}
    for c in e["conditions"]:
        c["label"] = " ".join(f"{k}={_short(_shown(c['condition'], k))}" for k in varying) or "-"
        c["b_star"] = (_b_star(cond_specs.get((exp, c["condition_key"])))
                       if (exp, c["condition_key"]) in told_similarity else None)
        labels[c["condition_key"]] = " ".join(
            f"{k}={_short(_shown(c['condition'], k))}" for k in series_keys
        )
    stars = {c["b_star"] for c in e["conditions"]}
    e["b_star"] = stars.pop() if len(stars) == 1 else None
    e["game_specs"] = _distinct_game_specs(cond_specs, exp)
    e["curve"] = _curve(e["conditions"], labels)
    e["per_round"] = {
        _series(agent, labels.get(ckey, "")): points
        for (ckey, agent), points in per_round.get(exp, {}).items()
    }
    try:
        with np.errstate(all="ignore"):
            metrics = tournament_metrics(store, run_id, e["experiment"])
        if metrics:
            e.update(metrics)
    except ImportError:
        pass
    except (ValueError, ArithmeticError) as exc:  # e.g. payoffs too large for the LP
        e["notes"] = [f"population metrics could not be computed: {exc}"]
    return e


def _run_sources(run: dict[str, Any]) -> dict[str, Any]:
    """``{"sources": {...}}`` when the run's prompts were worded by a paper's own code
    (name, clone, commit and tested commit of each), else nothing (the report of every
    other run stays as it was)."""
    raw = run.get("sources")
    return {"sources": json.loads(raw)} if raw else {}


def _paper_tables(store: Store, run_id: str, devrank: str | None = None) -> dict[str, Any]:
    """CoopEval's tables (per-replicate metrics, mean ± SE) and the replicator trajectories.

    Present when the run has cross-play tournaments or Reputation populations; see
    :mod:`coop_tui.analysis.coopeval_tables`. ``devrank`` is the DevRank mode asked for
    (None: the study file's, else the default); the output names it.
    """
    mode = devrank_mode(devrank or run_devrank_mode(store, run_id))
    result = paper_tables(store, run_id, freeze=mode)
    if not result["tables"]:
        return {}
    out = {"tables": result["tables"], "evolution": result["evolution"],
           "per_replicate": result["per_replicate"], "devrank": mode}
    for key in ("devrank_solver", "devrank_solver_note"):  # CoopEval's LP: which solver ran
        found = sorted({r[key] for r in result["per_replicate"] if r.get(key)})
        if found:
            out[key] = "; ".join(found)
    return out


def _experiment_rows(db: Any, run_id: str) -> list[tuple[Any, ...]]:
    """Per experiment, in order: (experiment, its games and mechanisms as comma lists,
    min game spec, min matchup, matches), merged from the per-condition rows exactly as one
    GROUP BY experiment would give them (distinct values, minimums ignoring NULL, counts)."""
    merged: dict[Any, list[Any]] = {}
    for row in condition_rows(db, run_id):
        exp, games, mechs, gspec, matchup, n = row[0], row[7], row[8], row[6], row[9], row[10]
        acc = merged.setdefault(exp, [[], [], None, None, 0])
        for i, values in ((0, games), (1, mechs)):
            if values is not None:
                acc[i].extend(v for v in values.split(",") if v not in acc[i])
        acc[2] = _min(acc[2], gspec)
        acc[3] = _min(acc[3], matchup)
        acc[4] += n
    return [
        (exp, ",".join(g) if g else None, ",".join(m) if m else None, gspec, matchup, n)
        for exp, (g, m, gspec, matchup, n) in sorted(merged.items(), key=lambda kv: (kv[0] is not None, kv[0]))
    ]


def _min(a: Any, b: Any) -> Any:
    """SQL's ``min`` of two values: NULLs ignored."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _distinct_game_specs(cond_specs: dict[tuple[int, str], str | None], exp: int) -> list[dict[str, Any]]:
    """Every distinct game of one experiment (a multi-game grid has one per game), so
    the analysis screen can show each game's payoff table, not only the first one's."""
    seen = sorted({g for (x, _c), g in cond_specs.items() if x == exp and g})
    return [json.loads(g) for g in seen]


def _conditions(db: Any, run_id: str) -> dict[tuple[int, str], tuple[Any, ...]]:
    """(experiment, condition key) -> (game, mechanism, condition JSON, similarity)."""
    return {(r[0], r[1]): tuple(r[2:6]) for r in condition_rows(db, run_id)}


def _coop_rows(db: Any, run_id: str) -> list[tuple[Any, ...]]:
    """Cooperation per experiment x condition x agent over the done matches' play
    decisions, summed from the per-round summaries (see :mod:`coop_tui.summaries`)."""
    acc: dict[tuple[Any, ...], list[float]] = {}
    for (exp, ckey, agent, _rnd), values in summaries.read(db.conn, run_id, "coop_rounds").items():
        into = acc.setdefault((exp, ckey, agent), [0, 0.0, 0.0, 0, 0])
        for i, v in enumerate(values):
            into[i] += v
    conds = _conditions(db, run_id)
    rows = []
    for (exp, ckey, agent), (n, s, sq, k, nk) in acc.items():
        game, mech, cjson, sim = conds.get((exp, ckey), (None, None, "{}", None))
        rows.append((exp, game, mech, ckey, cjson, agent, n, s, sq, k if nk else None, nk, sim))
    # the order SQL gave: experiment, similarity (unknown first), condition, agent
    rows.sort(key=lambda r: (r[0], r[11] is not None, r[11] or 0, r[3], r[5]))
    return [r[:11] for r in rows]


def _per_round(db: Any, run_id: str) -> dict[int, dict[tuple[str, str], list[dict[str, Any]]]]:
    """Cooperation per round of repeated games: {experiment: {(condition, agent): points}}.

    Read from the per-round summaries kept as matches finish. Only experiments whose
    matches last more than one round get an entry: a one-shot game has no curve over
    rounds. ``coop_rate`` is the mean probability mass on the cooperative action,
    ``sampled_coop_rate`` the share of sampled cooperative actions.
    """
    rows = sorted(
        (*key, *values) for key, values in summaries.read(db.conn, run_id, "coop_rounds").items()
    )
    out: dict[int, dict[tuple[str, str], list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    last_round: dict[int, int] = defaultdict(int)
    for exp, ckey, agent, rnd, n, s, sq, k, nk in rows:
        last_round[exp] = max(last_round[exp], rnd)
        out[exp][(ckey, agent)].append(
            {
                "round": rnd,
                "coop_rate": s / n,
                "se": _se(n, s, sq),
                "sampled_coop_rate": (k / nk) if nk else None,
                "n": n,
            }
        )
    return {exp: dict(agents) for exp, agents in out.items() if last_round[exp] > 1}


def _series(agent: str, label: str) -> str:
    """A curve's name: the agent, plus the condition fields (other than similarity) that vary."""
    return f"{agent} / {label}" if label else agent


def _curve(conditions: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Cooperation over similarity, one series per agent and per other varying condition.
    The ``base`` control (no similarity sentence; the papers' "Base" row) is told no
    figure, so it is no point of the curve: its nominal ``similarity`` would put it at X."""
    curve: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in conditions:
        sim = c["condition"].get("similarity")
        if sim is None or c["condition"].get("prompt") == "base":
            continue
        for agent, a in c["agents"].items():
            if a["coop_rate"] is None:
                continue
            curve[_series(agent, labels[c["condition_key"]])].append({
                "similarity": sim, "framing": c["condition"].get("framing"),
                "prompt": c["condition"].get("prompt"), "coop_rate": a["coop_rate"],
                "se": a["coop_se"], "n": a["n"], "b_star": c["b_star"],
            })
    return {k: sorted(v, key=lambda p: p["similarity"]) for k, v in sorted(curve.items())}


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


ABSENT_MEANS = {"wording": "ours", "condition": "baseline"}
"""Condition keys a sweep stores only when they differ from their default (so old runs
keep their keys): where one is absent, its default is what the cell ran with, and that
is what a label shows (``wording=ours``, not ``wording=None``)."""


def _shown(condition: dict[str, Any], key: str) -> Any:
    return condition.get(key, ABSENT_MEANS.get(key))


def _varying_keys(conditions: list[dict[str, Any]]) -> list[str]:
    """The condition fields that differ inside an experiment: the only ones worth a column."""
    keys = sorted({k for c in conditions for k in c})
    return [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in conditions}) > 1]


def _condition(db: Any, run_id: str, exp: int, ckey: str) -> dict[str, Any]:
    row = db.execute(
        "select condition from matches where run_id = ? and experiment = ? and condition_key = ? limit 1",
        [run_id, exp, ckey],
    ).fetchone()
    return json.loads(row[0]) if row else {}


# ----------------------------------------------------------------- text output
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _answer_rules(db: Any, run_id: str, experiments: dict[int, dict[str, Any]]) -> None:
    """Which answer rule each experiment's matches used: "strict" (CoopEval's: no repairs,
    re-ask) or "lenient" (repairs made and recorded); runs from before the field existed
    were lenient."""
    rules: dict[Any, set[str]] = defaultdict(set)
    for row in condition_rows(db, run_id):  # the distinct rules of each condition, merged
        rules[row[0]].update((row[11] or "lenient").split(","))
    for exp, found in rules.items():
        if exp in experiments:
            experiments[exp]["answers"] = ",".join(sorted(found))


def coverage_line(cover: dict[str, Any]) -> str:
    """The report's word on a run that holds only some slices of its sweep: its counts
    are the slices', not the sweep's."""
    held = ", ".join(cover["held"]) or "none finished"
    line = f"slices of {cover['slices']}: this run holds {held}"
    if cover["missing"]:
        shown = ", ".join(cover["missing"][:8]) + (
            f" and {len(cover['missing']) - 8} more" if len(cover["missing"]) > 8 else "")
        line += f"; missing {shown} (play them, then coop-tui merge)"
    if cover["unfinished"]:
        line += f"; unfinished {', '.join(cover['unfinished'])}"
    return line


def render_text(report: dict[str, Any]) -> Any:
    """The report as Rich renderables, in reading order: the run's lines, failures, each
    experiment's tables, mechanisms, CoopEval's tables, then the report sections."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = _run_lines(report)
    failures = report.get("failures") or []
    if failures:
        parts.append(_failures_table(failures))
    for e in report["experiments"]:
        parts.extend(_experiment_parts(e, report))
    parts.extend(_mechanism_tables(report.get("mechanisms") or {}))
    if report.get("tables"):
        parts.extend(render_rich(report["tables"]))

    for section, value in rendered(report):
        parts.append(Text(section.title, style="bold"))
        parts.extend(section.render(value))
    return Group(*parts)


def _run_lines(report: dict[str, Any]) -> list[Any]:
    """The run's title, its counts, the slices it holds and where its wording came from."""
    from rich.text import Text

    parts: list[Any] = []
    run, c = report["run"], report["counts"]
    parts.append(Text.from_markup(f"run {run['id']}  {run['name']}  \\[{run['status']}]", style="bold"))
    parts.append(
        Text(
            f"matches {c['matches_done']}/{c['matches']} done, {c['matches_failed']} failed; "
            f"decisions {c['decisions']} ({c['reused']} reused), invalid {c['invalid']}, "
            f"re-asks {c['retries']}, transport retries {c['transport_retries']}, "
            f"cost ${c['cost_usd']:.4f}"
        )
    )
    cover = report.get("coverage")
    if cover:
        parts.append(Text(coverage_line(cover), style="yellow"))
    for name, src in sorted((run.get("sources") or {}).items()):
        tested = "" if src.get("commit") == src.get("tested_commit") else (
            f" (coop-tui was checked against {src.get('tested_commit')})")
        parts.append(Text(f"wording from the {name} source: {src.get('path')} at commit "
                          f"{src.get('commit')}{tested}"))
    return parts


def _failures_table(failures: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    ftable = Table(title="failed matches by reason", title_justify="left")
    ftable.add_column("reason", no_wrap=True)
    ftable.add_column("matches", justify="right")
    ftable.add_column("example")
    for f in failures:
        ftable.add_row(f["reason"], str(f["count"]), f["example"] or "")
    return ftable


def _experiment_parts(e: dict[str, Any], report: dict[str, Any]) -> list[Any]:
    """One experiment: its table, its curves, and its population metrics (per tournament
    when it has several, else pooled with a note on the replicates)."""
    parts: list[Any] = [_experiment_table(e)]
    if e["curve"]:
        parts.append(_curve_table(e))
    if e.get("per_round"):
        parts.append(_per_round_table(e))
    tournaments = e.get("tournaments") or {}
    if len(tournaments) > 1:
        labels = {c["condition_key"]: c.get("label", c["condition_key"]) for c in e["conditions"]}
        for key, t in tournaments.items():
            if t.get("population"):
                parts.append(_population_table(t, labels.get(key, key)))
    elif e.get("population"):
        reps = {r["replicate"] for r in report.get("per_replicate") or []
                if r.get("experiment") == e["experiment"]}
        note = (f"pooled over {len(reps)} replicates; the per-replicate mean ± SE is in "
                f"the tables below") if len(reps) > 1 else None
        parts.append(_population_table(e, note))
    return parts


def _experiment_table(e: dict[str, Any]) -> Any:
    """Cooperation and payoff per condition and agent (b* per condition when the
    experiment has no single one)."""
    from rich.table import Table

    title = f"experiment {e['experiment']}: {e['game']} / {e['mechanism']} ({e['matches']} matches)"
    if e.get("answers", "lenient") != "lenient":
        title += f"   answers: {e['answers']}"
    if e.get("b_star") is not None:
        title += f"   b* = {e['b_star']:g}"
    per_condition = e.get("b_star") is None and any(
        c.get("b_star") is not None for c in e["conditions"]
    )
    table = Table(title=title, title_justify="left")
    labels = [c.get("label", c["condition_key"]) for c in e["conditions"]]
    width = max([len(lab) for lab in labels] + [9])
    table.add_column("condition", no_wrap=True, min_width=min(width, 40))
    table.add_column("agent", no_wrap=True)
    for col in ("n", "coop", "± SE", "Wilson 95%", "sampled", "payoff", "± SE"):
        table.add_column(col, justify="right")
    if per_condition:
        table.add_column("b*", justify="right")
    table.caption = "coop: probability mass on the cooperative action; sampled: share of sampled actions"
    for cond in e["conditions"]:
        for agent, a in sorted(cond["agents"].items()):
            w = a["coop_wilson"]
            table.add_row(
                cond.get("label", cond["condition_key"]), agent, str(a["n"]), _pct(a["coop_rate"]),
                _pct(a["coop_se"]), "-" if not w else f"[{100*w[0]:.1f}, {100*w[1]:.1f}]",
                _pct(a["sampled_coop_rate"]), _num(a["mean_payoff"]), _num(a["payoff_se"], 2),
                *([_num(cond.get("b_star"))] if per_condition else []),
            )
    return table


def _mechanism_tables(mech: dict[str, Any]) -> list[Any]:
    """Ballots and action frequencies, for mechanisms that have them."""
    from rich.table import Table

    out: list[Any] = []
    votes = mech.get("votes") or []
    if votes:
        table = Table(title="proposals and votes", title_justify="left")
        cols = _columns(votes)
        for col in cols:
            table.add_column(col, justify="left" if col in ("agent", "game", "mechanism") else "right")
        for v in votes:
            table.add_row(*[_cell(v.get(c), pct="rate" in c) for c in cols])
        out.append(table)
    # One-shot cooperation is already in the experiment tables; frequencies earn a table
    # where play unfolds over rounds or phases.
    freqs = [f for f in mech.get("action_frequencies") or []
             if f.get("mechanism") not in ("none", "similarity")]
    if freqs:
        table = Table(title="action frequencies (play phase)", title_justify="left")
        cols = _columns(freqs)
        for col in cols:
            table.add_column(col)
        for f in freqs[:60]:
            table.add_row(*[_cell(f.get(c)) for c in cols])
        if len(freqs) > 60:
            table.caption = f"first 60 of {len(freqs)} rows; --json has them all"
        out.append(table)
    return out


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every field of any row, in first-seen order: rows of different mechanisms carry
    different fields (Contracting's ``sign_rate``, Mediation's ``delegate_rate``), so the
    first row alone does not name the columns of a run that has both."""
    seen = dict.fromkeys(k for row in rows for k in row)
    return [k for k in seen if k not in ("experiment", "condition")]


def _cell(value: Any, pct: bool = False) -> str:
    """One table cell; "-" where the row's mechanism has no such field."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return _pct(value) if pct else _num(value)
    return str(value)


def _curve_table(e: dict[str, Any]) -> Any:
    from rich.table import Table

    sims = sorted({p["similarity"] for pts in e["curve"].values() for p in pts})
    table = Table(title="cooperation over similarity (probability mass on the cooperative action)",
                  title_justify="left")
    table.add_column("agent")
    for s in sims:
        marker = "*" if e.get("b_star") is not None and s / 100 >= e["b_star"] else ""
        table.add_column(f"{s:g}{marker}", justify="right")
    for series, pts in e["curve"].items():
        row = {p["similarity"]: p["coop_rate"] for p in pts}
        table.add_row(series, *[_pct(row.get(s)) for s in sims])
    if e.get("b_star") is not None:
        table.caption = f"* similarity at or above b* = {e['b_star']:g}"
    return table


def _per_round_table(e: dict[str, Any]) -> Any:
    from rich.table import Table

    rounds = sorted({p["round"] for pts in e["per_round"].values() for p in pts})
    table = Table(title="cooperation per round (probability mass on the cooperative action)",
                  title_justify="left")
    table.add_column("agent")
    for r in rounds:
        table.add_column(str(r), justify="right")
    for agent, pts in sorted(e["per_round"].items()):
        by_round = {p["round"]: p["coop_rate"] for p in pts}
        table.add_row(agent, *[_pct(by_round.get(r)) for r in rounds])
    return table


def _population_table(e: dict[str, Any], label: str | None = None) -> Any:
    from rich.table import Table

    title = "population metrics" + (f" ({label})" if label else "")
    table = Table(title=title, title_justify="left")
    for col in ("agent", "mean payoff", "fitness", "deviation rating"):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for agent, m in e["population"].items():
        table.add_row(agent, _num(m.get("mean_payoff"), 4), _num(m.get("fitness"), 4),
                      _num(m.get("deviation_rating"), 4))
    return table


def strict_json(report: dict[str, Any]) -> str:
    """The report as standard JSON: NaN and infinities (which ``json`` would write as the
    invalid tokens ``NaN`` / ``Infinity``) become null, and ``notes`` lists where."""
    replaced: list[str] = []

    def clean(value: Any, path: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            replaced.append(path or "$")
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    data = clean(report, "")
    if replaced:
        shown = ", ".join(replaced[:10]) + (f" and {len(replaced) - 10} more" if len(replaced) > 10 else "")
        data.setdefault("notes", []).append(f"non-finite numbers written as null: {shown}")
    return json.dumps(data, indent=2, default=str, allow_nan=False)


def parse_sections(raw: str | None) -> list[str] | None:
    """``--sections a,b``: the keys given (an empty value: none), or None when absent."""
    if raw is None:
        return None
    return [k.strip() for k in raw.split(",") if k.strip()]


def report_command(
    db_path: Path, ref: str | None, *, as_json: bool = False, fmt: str | None = None,
    sections: str | None = None,
    devrank: str | None = None,
) -> int:
    from coop_tui.terminal import (  # loads Rich
        FILE_NAME_WIDTH,
        short_names,
        terminal_data,
        terminal_text,
    )

    wanted = parse_sections(sections)
    if wanted is not None:
        if fmt in ("latex", "csv"):
            return fail(f"--sections: --format {fmt} prints only the population tables; "
                        "drop --sections, or use --format text|json")

        missing = unknown(wanted)
        if missing:
            return fail(f"--sections: unknown section(s) {', '.join(map(repr, missing))}; "
                        f"known: {', '.join(keys())}")
    if not db_path.exists():
        return fail(f"no database at {db_path}; run a sweep first or pass --db")
    store = Store(db_path)
    run = store.resolve_run(ref)
    if run is None:
        return fail(f"no run {ref!r} in {db_path}" if ref else f"no runs in {db_path}")
    if fmt in ("latex", "csv"):
        out = _table_formats(store, run["id"], fmt, devrank)
        # data for a file, but it may be read on a terminal: control characters of imported
        # names shown as escapes (newlines kept), names kept whole
        print(terminal_text(out, markup=False, lines=True), end="")
        return 0
    report = build_report(store, run["id"], wanted, devrank=devrank)
    if as_json or fmt == "json":
        print(strict_json(report))
    else:
        # names and errors come from sweep files, imports and providers: shown, not obeyed;
        # a long name is cut to fit a terminal, and into a file or a pipe only past
        # FILE_NAME_WIDTH (the JSON keeps every name whole)
        limit = None if sys.stdout.isatty() else FILE_NAME_WIDTH
        print_in_full(render_text(terminal_data(report, short_names(report, limit))))
    return 0


def _table_formats(store: Store, run_id: str, fmt: str, devrank: str | None) -> str:
    """``--format latex|csv``: the population tables and the report sections that have a
    LaTeX or CSV form (no experiment rows, no other sections). When none of them has
    anything, a note says so (on stderr, and as a LaTeX comment or an empty CSV)."""
    tables = _paper_tables(store, run_id, devrank).get("tables") or []
    wanted = [s.key for s in all_sections() if getattr(s, fmt) is not None]
    extra = build_sections(store, run_id, {}, wanted) if wanted else {}
    read_cache.forget()
    if not tables and not extra:
        # nothing is wrong with the run: the tables have nothing to say, and say so
        note = (f"run {run_id} has no population tables (no cross-play tournament or "
                f"Reputation population) and no section with a {fmt} form; --format {fmt} "
                "prints only those")
        print(f"coop-tui: {note}", file=sys.stderr)
        return f"% {note}\n" if fmt == "latex" else render_csv([])
    shown = rendered(extra)
    if fmt == "latex":
        return "".join([render_latex(tables) if tables else "",
                        *(s.latex(v) for s, v in shown if s.latex is not None)])
    return render_csv(tables, [row for s, v in shown if s.csv is not None for row in s.csv(v)])


def print_in_full(renderable: Any) -> None:
    """Print the text report to stdout. On a terminal it fits the window; into a file or a
    pipe nothing is cut: the output is as wide as its widest table (title included) or
    line, so every cell is whole (at 80 columns, Rich shortened wide cells to "…")."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        measuring = Console(width=1_000_000, file=io.StringIO())
        parts = getattr(renderable, "renderables", [renderable])
        titles = [len(str(p.title)) for p in parts if isinstance(p, Table) and p.title]
        needed = max([measuring.measure(renderable).maximum, *titles])
        console = Console(width=max(needed, console.width))
    console.print(renderable)
