"""Agent x agent similarity matrices of a stored run (percent, 0-100).

Exogenous (per benchmark): every pair of runs of two agents is compared with the
benchmark's metric and the comparisons are averaged. The diagonal is 100: an agent is
identical to itself, as in the paper (its Figure 4 caption); the agreement between an
agent's *separate* runs (None with a single run) is kept beside it as
``run_agreement`` and is the diagonal of the ``runs`` variant (source
``exogenous:<benchmark>:runs``). Endogenous (per benchmark and
view): the judge's scores of the target, averaged over repeats; rows are judges, columns
targets, and the matrix stays asymmetric.

Reads are SQL over the run's matches (indexed by run), grouped here per benchmark: the
answers of one benchmark are a few hundred values per agent and run.
"""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import combinations, product
from typing import TYPE_CHECKING, Any

from coop_tui.grounded.domains import benchmark_key
from coop_tui.grounded.metrics import similarity

if TYPE_CHECKING:
    from coop_tui.store import Store

Answers = dict[str, dict[str, dict[int, dict[str, Any]]]]
"""benchmark -> agent -> run (sample) -> {item id: value}"""


def item_answers(store: Store, run_id: str) -> tuple[Answers, dict[str, dict[str, Any]]]:
    """Every benchmark answer of the run, and per benchmark its metric and scale."""
    rows = store.benchmark_answer_rows(run_id)
    answers: Answers = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    meta: dict[str, dict[str, Any]] = {}
    for condition, sample, replicate, agent, info in rows:
        cond = json.loads(condition)
        bench = cond["benchmark"]
        meta.setdefault(bench, {"metric": cond.get("metric", "agreement"), "scale": cond.get("scale")})
        run = int(sample) + 1000 * int(replicate or 0)
        for item, value in (json.loads(info or "{}").get("answers") or {}).items():
            answers[bench][agent][run][item] = tuple(value) if isinstance(value, list) else value
    return answers, meta


def _pair(metric: str, scale: Any, runs_a: dict[int, dict[str, Any]],
          runs_b: dict[int, dict[str, Any]], same: bool) -> float | None:
    pairs = combinations(sorted(runs_a), 2) if same else product(sorted(runs_a), sorted(runs_b))
    values = [
        v for ra, rb in pairs
        if (v := similarity(metric, runs_a[ra], runs_b[rb], tuple(scale) if scale else None)) is not None
    ]
    return round(100.0 * sum(values) / len(values), 2) if values else None


SELF_SIMILARITY = 100.0
"""The exogenous diagonal: the paper's, an agent compared with itself."""


def exogenous(store: Store, run_id: str, diagonal: str = "identical") -> dict[str, dict[str, Any]]:
    """{benchmark: {"metric", "agents", "runs", "matrix": {a: {b: pct}}, "run_agreement":
    {a: pct}}} for the run. ``diagonal = "identical"``: 100 (the paper); ``"runs"``: the
    agreement between the agent's separate runs."""
    answers, meta = item_answers(store, run_id)
    out: dict[str, dict[str, Any]] = {}
    for bench in sorted(answers):
        by_agent = answers[bench]
        agents = sorted(by_agent)
        metric, scale = meta[bench]["metric"], meta[bench]["scale"]
        agreement = {a: _pair(metric, scale, by_agent[a], by_agent[a], True) for a in agents}
        matrix = {
            a: {b: (agreement[a] if diagonal == "runs" else SELF_SIMILARITY) if a == b
                else _pair(metric, scale, by_agent[a], by_agent[b], False) for b in agents}
            for a in agents
        }
        runs = {a: len(by_agent[a]) for a in agents}
        out[bench] = {"metric": metric, "agents": agents, "runs": runs, "matrix": matrix,
                      "diagonal": diagonal, "run_agreement": agreement}
    return out


def endogenous(store: Store, run_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """{benchmark: {view: {"agents", "matrix": {judge: {target: mean score}}}}}."""
    rows = store.score_rows(run_id)
    sums: dict[tuple[str, str], dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for condition, judge, target, parsed in rows:
        cond = json.loads(condition)
        sums[(cond["benchmark"], cond["view"])][(judge, target)].append(float(json.loads(parsed)))
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (bench, view), cells in sorted(sums.items()):
        agents = sorted({a for pair in cells for a in pair})
        matrix = {
            j: {t: (round(sum(cells[(j, t)]) / len(cells[(j, t)]), 2) if cells.get((j, t)) else None)
                for t in agents}
            for j in agents
        }
        out[bench][view] = {"agents": agents, "matrix": matrix}
    return dict(out)


def matrix_for(store: Store, run_id: str, source: str) -> dict[str, dict[str, float | None]]:
    """The matrix a ``similarity_source`` names: ``exogenous:<benchmark>`` (diagonal
    100), ``exogenous:<benchmark>:runs`` (diagonal: run-to-run agreement) or
    ``endogenous:<benchmark>:<view>`` (KeyError naming what is missing)."""
    parts = source.split(":")
    parts[1] = benchmark_key(parts[1])  # an alias ("die") names the key answers are stored under
    if parts[0] == "exogenous":
        diagonal = "runs" if len(parts) > 2 and parts[2] == "runs" else "identical"
        found = exogenous(store, run_id, diagonal).get(parts[1])
        if found is None:
            raise KeyError(f"run {run_id} has no answers to benchmark {parts[1]!r}")
        return found["matrix"]
    found_view = endogenous(store, run_id).get(parts[1], {}).get(parts[2])
    if found_view is None:
        raise KeyError(f"run {run_id} has no {parts[2]!r} similarity judgements on benchmark {parts[1]!r}")
    return found_view["matrix"]
