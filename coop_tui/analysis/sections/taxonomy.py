"""Report section ``taxonomy``: the reasoning taxonomy's pooled frequency tables (CoopEval
paper, its justification judge): for each judge pass, the share of validly judged
decisions showing each category, pooled per mechanism, per model × mechanism and per
game × mechanism.

The ``judgements`` section keeps the finest split (judge × agent × mechanism × game);
CoopEval's paper reads its taxonomy pooled, so this section sums those cells back up,
weighting each by its decisions (a share of a pool is its decisions showing the category
over all its judged decisions, never a mean of shares).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.sections import judgements as fine

if TYPE_CHECKING:
    from coop_tui.store import Store

POOLS = {
    "by_mechanism": ("mechanism",),
    "by_model_mechanism": ("agent", "mechanism"),
    "by_game_mechanism": ("game", "mechanism"),
}
"""Each table's key and the fields its rows are pooled by."""


def pooled(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The judgements section's frequency rows of one judge pass pooled by ``fields``."""
    counts: dict[tuple[Any, ...], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sizes: dict[tuple[Any, ...], int] = defaultdict(int)
    order: dict[str, None] = {}
    for r in rows:
        key = tuple(r[f] for f in fields)
        sizes[key] += r["n"]
        for cat, share in r["categories"].items():
            order.setdefault(cat)
            counts[key][cat] += share * r["n"]
    return [{**dict(zip(fields, key, strict=True)), "n": sizes[key],
             "categories": {cat: counts[key][cat] / sizes[key] for cat in order}}
            for key in sorted(sizes, key=lambda k: tuple(str(x) for x in k))]


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    value = report.get("judgements") or fine.build(store, run_id, report)
    if not value or not value.get("frequencies"):
        return None
    passes = []
    for judge in value["judges"]:
        rows = [r for r in value["frequencies"] if r["judge_run"] == judge["judge_run"]]
        if not rows:
            continue
        passes.append({"judge": judge["judge"], "rubric": judge["rubric"],
                       "judge_run": judge["judge_run"],
                       **{key: pooled(rows, fields) for key, fields in POOLS.items()}})
    return {"definition": "share of validly judged decisions showing each category, pooled "
                          "over the cells of the judgements section (weighted by decisions)",
            "passes": passes} if passes else None


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for p in value["passes"]:
        for key, fields in POOLS.items():
            rows = p[key]
            what = " × ".join("model" if f == "agent" else f for f in fields)
            table = Table(title=f"{p['rubric']} by {p['judge']}, per {what}",
                          caption="share of judged decisions showing each category",
                          title_justify="left")
            table.add_column("category")
            for r in rows:
                table.add_column(Text(" · ".join(str(r[f]) for f in fields) + f"\nn={r['n']}"),
                                 justify="right")
            for cat in (rows[0]["categories"] if rows else {}):
                table.add_row(cat, *(f"{100 * r['categories'][cat]:.0f}%" for r in rows))
            out.append(table)
    return out


SECTION = register(Section(
    key="taxonomy", title="Reasoning taxonomy, pooled (CoopEval's justification judge)",
    build=build, render=render, order=81,
))
