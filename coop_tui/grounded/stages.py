"""Stages of a sweep: experiments that feed other experiments (the similarity signals paper's pipeline).

An experiment's role follows from what it is:

- *administration*: ``mechanism = "benchmark"`` (agents answer benchmark items);
- *judgement*: ``mechanism = "score"`` (judges rate targets from their answers); it
  depends on the administration of its ``benchmark``;
- *play under computed scores*: any experiment with ``similarity_source =
  "exogenous:<benchmark>"`` (depends on that benchmark's administration) or
  ``"endogenous:<benchmark>:<view>"`` (depends on the judgements of that benchmark and
  view).

A dependency is met inside the same sweep (the earlier experiment runs first) or by a
stored run named with ``source_run`` on the dependent experiment. The stage of an
experiment is one more than the deepest stage it depends on; the runner plays stage
0, waits for every match of it, then stage 1, and so on, so a resumed run (``--resume``)
picks up in whichever stage it stopped: earlier stages' matches are done and skipped,
their decisions are in the database, and the inputs of later stages are rebuilt from
them identically. Everything is checked when the sweep loads (SpecError, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coop_tui.errors import SpecError
from coop_tui.grounded.domains import benchmark_key, load_benchmark
from coop_tui.grounded.dossier import build_dossier
from coop_tui.grounded.matrices import matrix_for
from coop_tui.prompts import CHARS_PER_TOKEN

VIEWS = ("decision", "explanation", "both")


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _extra(exp: Any, key: str, default: Any = None) -> Any:
    return (exp.model_extra or {}).get(key, default)


def parse_source(source: Any, where: str) -> tuple[str, str, str | None]:
    """("exogenous" | "endogenous", benchmark key, view or None). The exogenous view is
    None (diagonal 100, the paper's) or "runs" (diagonal: run-to-run agreement)."""
    parts = source.split(":") if isinstance(source, str) else []
    if parts and parts[0] == "exogenous" and len(parts) == 2 and parts[1]:
        return "exogenous", benchmark_key(parts[1]), None
    if parts and parts[0] == "exogenous" and len(parts) == 3 and parts[1] and parts[2] == "runs":
        return "exogenous", benchmark_key(parts[1]), "runs"
    if parts and parts[0] == "endogenous" and len(parts) == 3 and parts[1] and parts[2] in VIEWS:
        return "endogenous", benchmark_key(parts[1]), parts[2]
    raise SpecError(
        where,
        f"{source!r} is not a similarity source; write \"exogenous:<benchmark>\" (or "
        f"\"exogenous:<benchmark>:runs\" for run-to-run agreement on the diagonal) or "
        f"\"endogenous:<benchmark>:<view>\" with view one of {', '.join(VIEWS)}",
    )


ADMINISTERED: dict[str, tuple[str, Any]] = {}
"""Benchmark key -> (item file or name, items asked) of the administrations of the
sweeps checked in this process: what a --dry-run judge's stand-in record is sized by."""


def check_sweep(spec: Any, base: Path | None) -> list[int]:
    """Validate every stage link of the sweep; return each experiment's stage.

    Relative benchmark file paths are made absolute here (the sweep file's folder), so
    the runner and the estimates find them wherever the process runs.
    """
    administered: dict[str, list[int]] = {}
    judged: dict[tuple[str, str], list[int]] = {}
    for i, exp in enumerate(spec.experiments):
        mechs = _values(exp.mechanism)
        where = f"experiments[{i}]"
        if "benchmark" in mechs or "score" in mechs:
            if len(mechs) > 1:
                raise SpecError(f"{where}.mechanism", "a benchmark or score stage takes one mechanism, not a list")
            refs = _values(_extra(exp, "benchmark"))
            if refs == [None]:
                raise SpecError(f"{where}.benchmark", "is missing; name the benchmark (a built-in domain, "
                                "a demo set such as demo_choices, or a .jsonl item file)")
            resolved = []
            for ref in refs:
                if not isinstance(ref, str):
                    raise SpecError(f"{where}.benchmark", f"must be a name or a path, not {ref!r}")
                if mechs[0] == "benchmark":
                    try:
                        load_benchmark(ref, base=base)
                    except SpecError as exc:
                        raise SpecError(f"{where}.{exc.field}" if exc.field == "benchmark"
                                        else f"{where}.benchmark ({exc.field})", exc.message) from None
                    resolved.append(_absolute(ref, base))
                    administered.setdefault(benchmark_key(ref), []).append(i)
                    ADMINISTERED[benchmark_key(ref)] = (_absolute(ref, base), _extra(exp, "items"))
                else:
                    resolved.append(ref)
                    for view in _values(_extra(exp, "view", "both")):
                        judged.setdefault((benchmark_key(ref), view), []).append(i)
            exp.model_extra["benchmark"] = resolved if isinstance(_extra(exp, "benchmark"), list) else resolved[0]
            if mechs[0] == "benchmark" and exp.matchup != "self":
                raise SpecError(f"{where}.matchup", 'a benchmark stage is answered by each agent alone; use matchup = "self"')
            if mechs[0] == "score" and exp.matchup not in ("cross",) and not isinstance(exp.matchup, list):
                raise SpecError(f"{where}.matchup", 'judgements pair every judge with every target: use matchup = "cross" '
                                "(or explicit [judge, target] pairs)")
        if exp.similarity_source is not None and "similarity" not in mechs:
            raise SpecError(f"{where}.similarity_source", "feeds the similarity mechanism; set mechanism = \"similarity\"")
    stages: list[int | None] = [None] * len(spec.experiments)

    def stage(i: int, trail: tuple[int, ...] = ()) -> int:
        if stages[i] is not None:
            return stages[i]  # type: ignore[return-value]
        exp = spec.experiments[i]
        where = f"experiments[{i}]"
        needs: list[int] = []
        if exp.source_run is None:
            if _values(exp.mechanism) == ["score"]:
                for ref in _values(_extra(exp, "benchmark")):
                    found = administered.get(benchmark_key(ref))
                    if not found:
                        raise SpecError(f"{where}.benchmark", f"no experiment of this sweep administers {ref!r}; "
                                        "add one with mechanism = \"benchmark\", or read a stored run with source_run")
                    needs += found
            for source in _values(exp.similarity_source) if exp.similarity_source is not None else []:
                kind, bench, view = parse_source(source, f"{where}.similarity_source")
                found = administered.get(bench) if kind == "exogenous" else judged.get((bench, view or ""))
                if not found:
                    what = (f"administers benchmark {bench!r}" if kind == "exogenous"
                            else f"judges benchmark {bench!r} with view {view!r}")
                    raise SpecError(f"{where}.similarity_source", f"no experiment of this sweep {what}; add that "
                                    "stage, or read a stored run with source_run")
                needs += found
        elif exp.similarity_source is not None:
            for source in _values(exp.similarity_source):
                parse_source(source, f"{where}.similarity_source")
        if i in trail:
            raise SpecError(where, "depends on itself through its sources")
        stages[i] = 1 + max((stage(j, (*trail, i)) for j in needs), default=-1)
        return stages[i]  # type: ignore[return-value]

    return [stage(i) for i in range(len(spec.experiments))]


def _absolute(ref: str, base: Path | None) -> str:
    if not ref.endswith(".jsonl"):
        return ref
    path = Path(ref).expanduser()
    if not path.is_absolute() and base is not None and (base / path).exists():
        return str((base / path).resolve())
    return ref


def experiment_stages(sweep: Any) -> list[int]:
    return check_sweep(sweep.spec, sweep.source.parent if sweep.source else None)


# ----------------------------------------------------------------- inputs at play time
def needs_inputs(cell: Any) -> bool:
    return cell.mechanism == "score" or getattr(cell, "source", None) is not None


def planning_params(cell: Any) -> dict[str, Any]:
    """Parameters good enough to count a match's decisions before its inputs exist."""
    params = dict(cell.mechanism_params)
    if getattr(cell, "source", None) is not None and params.get("similarity") is None:
        params["similarity"] = 50.0
    return params


def resolve_params(cell: Any, store: Any, run_id: str) -> dict[str, Any]:
    """The mechanism parameters of a dependent match with its inputs filled in: a
    judge's dossier, or the per-pair scores a similarity match is told. Without a store
    (prompt-size probes) placeholders stand in. Raises ValueError naming what is missing."""
    params = dict(cell.mechanism_params)
    source_run = getattr(cell, "source_run", None) or run_id
    if cell.mechanism == "score":
        if store is not None:
            params["dossier"] = dossier_for(store, source_run, params, cell.seats[0], cell.seats[1])
        else:  # a prompt-size probe (--dry-run): a record the size of the real one
            params["dossier"] = sized_dossier(params)
        return params
    if store is None:
        matrix = {a: {b: 50.0 for b in cell.seats} for a in cell.seats}  # probe: size only
    else:
        try:
            full = matrix_for(store, source_run, cell.source)
        except KeyError as exc:
            raise ValueError(str(exc).strip("'\"")) from None
        matrix = {}
        pairs = {(a, b) for i, a in enumerate(cell.seats) for j, b in enumerate(cell.seats) if i != j}
        for a, b in sorted(pairs):  # what each seat is told about each co-player
            value = full.get(a, {}).get(b)
            if value is None:
                raise ValueError(f"{cell.source} has no score of {a} for {b} in run {source_run} "
                                 "(a diagonal needs two or more runs of the agent)")
            matrix.setdefault(a, {})[b] = round(float(value), 1)
    params["similarity_scores"] = matrix
    return params


EXPLANATION_TOKENS = 150
"""The reasoning per item a --dry-run assumes a target wrote (before its answers exist):
a short chain of thought. Decision-only views do not include it."""


def sized_dossier(params: dict[str, Any]) -> str:
    """A stand-in record for cost estimates: every item the judge will read, with an
    answer and EXPLANATION_TOKENS of reasoning (the real text comes from the benchmark
    stage), so --dry-run counts a judge's prompt at its real length, not a placeholder's."""
    ref, asked = ADMINISTERED.get(benchmark_key(params["benchmark"]), (params["benchmark"], None))
    try:
        benchmark = load_benchmark(ref)
    except Exception:  # noqa: BLE001 - an item file not in place yet: the check names it elsewhere
        return ""
    items = list(benchmark.items)
    for limit in (asked if isinstance(asked, int) else None, params.get("items")):
        if limit:
            items = items[: int(limit)]
    words = ("reasoning " * (EXPLANATION_TOKENS * CHARS_PER_TOKEN // len("reasoning "))).strip()
    return build_dossier([(item, _typical_answer(item), words) for item in items],
                         params.get("view", "both"))


def _typical_answer(item: Any) -> Any:
    if item.kind == "options":
        return 0
    if item.kind == "likert" and item.scale is not None:
        return item.scale[0]
    if item.kind == "mixed":
        return tuple(1 / len(item.actions) for _ in item.actions)
    if item.kind == "control":
        return item.extra["values"][0]
    return 0


def dossier_for(store: Any, run_id: str, params: dict[str, Any], judge: str, target: str) -> str:
    """The target's record for this judge: its first run, or - when the judge judges
    itself - its second run, so no judge ever reads the answers it gave itself."""
    bench = benchmark_key(params["benchmark"])
    sheets = store.benchmark_matches(run_id, target, bench)
    position = 1 if judge == target else 0
    if len(sheets) <= position:
        need = "two runs (samples = 2 or more) to judge itself" if judge == target else "a finished run"
        raise ValueError(f"{target} has no answers to {bench!r} in run {run_id}: the judgement needs {need}")
    match_id = sheets[position]
    benchmark = load_benchmark(params["benchmark"])
    items = {item.id: item for item in benchmark.items}
    answers: dict[str, Any] = {}
    orders: dict[str, list[int]] = {}
    for data in store.phase_infos(match_id, "item"):
        answers.update(data.get("answers") or {})
        if data.get("order") is not None:
            orders[data["item"]] = data["order"]
    texts = {
        d.round: d.response for d in store.decisions(match_id) if d.phase == "item"
    }
    records = []
    for n, (item_id, value) in enumerate(answers.items(), start=1):
        item = items.get(item_id)
        if item is None:
            continue
        explanation = texts.get(n, "") if benchmark.domain != "control" else ""
        order = orders.get(item_id)
        if order is not None:  # the options as the target saw them, its answer among them
            item, value = item.in_order(order), (None if value is None else order.index(value))
        records.append((item, value, explanation))
    if params.get("items"):
        records = records[: int(params["items"])]
    return build_dossier(records, params.get("view", "both"))
