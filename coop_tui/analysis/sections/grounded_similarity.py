"""Grounded similarity (similarity signals, §4): the report's ``exogenous``, ``endogenous`` and
``baseline`` blocks, shown as heat tables on the analysis screen.

- ``exogenous``: per benchmark, the agent x agent matrix (percent) from the benchmark
  stage's answers, its metric, and runs per agent; the diagonal is 100 (the paper's),
  the agreement of an agent's separate runs is ``run_agreement``;
- ``endogenous``: per benchmark and view, the judge x target matrix (rows judge);
- ``baseline``: per benchmark, the random-policy similarity of the items asked under
  the metric (exact for agreement, Monte Carlo with 20,000 draws for QWK and JSD), beside the paper's reference value when the catalogue
  knows the benchmark.
"""

from __future__ import annotations

import json
from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.grounded.domains import load_benchmark


def _has(store: Any, run_id: str, mechanism: str) -> bool:
    row = store.db.conn.execute(
        "select 1 from matches where run_id = ? and mechanism = ? limit 1", [run_id, mechanism]
    ).fetchone()
    return row is not None


def build_exogenous(store: Any, run_id: str, report: dict[str, Any]) -> Any:
    if not _has(store, run_id, "benchmark"):
        return None
    from coop_tui.grounded.matrices import exogenous

    return exogenous(store, run_id) or None


def build_endogenous(store: Any, run_id: str, report: dict[str, Any]) -> Any:
    if not _has(store, run_id, "score"):
        return None
    from coop_tui.grounded.matrices import endogenous

    return endogenous(store, run_id) or None


def build_baseline(store: Any, run_id: str, report: dict[str, Any]) -> Any:
    if not _has(store, run_id, "benchmark"):
        return None

    from coop_tui.grounded.metrics import BASELINE_TRIALS, random_baseline
    from coop_tui.prompts import benchmark_catalogue

    refs: dict[str, dict[str, Any]] = {}
    for (condition,) in store.db.conn.execute(
        "select distinct condition from matches where run_id = ? and mechanism = 'benchmark'", [run_id]
    ):
        cond = json.loads(condition)
        refs.setdefault(cond["benchmark"], cond)
    catalogue = benchmark_catalogue()
    out: dict[str, Any] = {}
    for key, cond in sorted(refs.items()):
        ids = {
            item for (info,) in store.db.conn.execute(
                "select p.info from phases p join matches m on m.id = p.match_id where m.run_id = ?"
                " and m.mechanism = 'benchmark' and p.phase = 'item'"
                " and json_extract(m.condition, '$.benchmark') = ?", [run_id, key])
            for item in (json.loads(info or "{}").get("answers") or {})
        }
        try:
            bench = load_benchmark(cond.get("ref", key), length=int(cond.get("length") or 100))
        except Exception:  # noqa: BLE001 - the item file moved: say so, do not fail the report
            out[key] = {"metric": cond.get("metric"), "random_pct": None,
                        "note": "item file not found; baseline not computed"}
            continue
        items = [i for i in bench.items if i.id in ids] or list(bench.items)
        mean, se = random_baseline(items, bench.metric, trials=BASELINE_TRIALS, seed=0)
        paper = catalogue[key].random_baseline if key in catalogue else None
        exact = bench.metric == "agreement"
        out[key] = {"metric": bench.metric, "items": len(items), "random_pct": round(100 * mean, 2),
                    "se_pct": round(100 * se, 3), "method": "exact" if exact else "monte carlo",
                    "trials": 0 if exact else BASELINE_TRIALS, "paper_pct": paper}
    return out or None


def _heat(title: str, agents: list[str], matrix: dict[str, dict[str, Any]], corner: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column(corner, no_wrap=True)
    for agent in agents:
        table.add_column(agent, justify="right")
    for row in agents:
        cells = []
        for col in agents:
            value = matrix.get(row, {}).get(col)
            if value is None:
                cells.append("—")
            else:
                shade = "red" if value < 33 else "yellow" if value < 66 else "green"
                cells.append(f"[{shade}]{value:.1f}[/]")
        table.add_row(row, *cells)
    return table


def render_exogenous(value: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for bench, data in value.items():
        runs = data.get("diagonal") == "runs"
        out.append(_heat(f"{bench} · {data['metric']} (%, diagonal: "
                         f"{'run-to-run agreement' if runs else '100, the paper'})",
                         data["agents"], data["matrix"], "agent"))
        agreement = data.get("run_agreement") or {}
        if not runs and any(v is not None for v in agreement.values()):
            from rich.text import Text

            shown = ", ".join(f"{a} {'—' if v is None else f'{v:.1f}'}" for a, v in agreement.items())
            out.append(Text(f"  run-to-run agreement (source exogenous:{bench}:runs): {shown}"))
    return out


def render_endogenous(value: dict[str, Any]) -> list[Any]:
    return [
        _heat(f"{bench} · {view} (judge rows, target columns)", data["agents"], data["matrix"], "judge \\ target")
        for bench, views in value.items() for view, data in views.items()
    ]


def render_baseline(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table(title="random-policy similarity (agreement exact; QWK, JSD by Monte Carlo)",
                  title_justify="left")
    for column in ("benchmark", "metric", "items", "random %", "± SE", "how", "paper %"):
        table.add_column(column, justify="left" if column in ("benchmark", "metric") else "right")
    for key, row in value.items():
        table.add_row(
            key, str(row.get("metric")), str(row.get("items", "")),
            "—" if row.get("random_pct") is None else f"{row['random_pct']:.1f}",
            "" if row.get("se_pct") is None else f"{row['se_pct']:.2f}",
            str(row.get("method", "")) + (f" ({row['trials']:,} draws)" if row.get("trials") else ""),
            "—" if row.get("paper_pct") is None else f"{row['paper_pct']:.1f}",
        )
    return [table]


register(Section(key="exogenous", title="Exogenous similarity (benchmark answers)",
                 build=build_exogenous, render=render_exogenous, order=60))
register(Section(key="endogenous", title="Endogenous similarity (judges' scores)",
                 build=build_endogenous, render=render_endogenous, order=61))
register(Section(key="baseline", title="Random-policy baselines",
                 build=build_baseline, render=render_baseline, order=62))
