"""Report section ``generational_drift``: cooperation along the paper's model generations.

OpenAI GPT-4o Mini → GPT-4.1 Mini → GPT-4.1 Nano → GPT-5 Mini → GPT-5 Nano (paper: 50.3 →
1.5, h 1.32) and Google Gemini 2.0 Flash → 2.5 Flash → 2.5 Flash Thinking → 3 Flash (8.3 →
56.8, h 1.13), each with the change, fold and Cohen's h from oldest to newest; Anthropic's
budget (Haiku) to frontier gap. Models of a chain that the run lacks are skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis import paper_tables
from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.sections.fold_difference import folds_text

if TYPE_CHECKING:
    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.relevant(store, run_id, report):
        return None
    try:  # the last section reading paper_tables.inputs
        return paper_tables.generational_drift(
            paper_tables.inputs(store, run_id)["cooperation"]) or None
    finally:
        paper_tables.forget()


def render(value: dict[str, Any]) -> list[str]:
    lines = []
    for prov, v in value.items():
        if prov.endswith("_tiers"):
            lines.append(f"{prov.removesuffix('_tiers')}: frontier minus budget "
                         f"{v['gap_pp']:+.1f} points (frontier range {v['frontier_range_pp']:.1f})")
            continue
        chain = " → ".join(f"{c['model']} {c['rate']:.1f}" for c in v["chain"])
        fold = "" if v["fold"] is None else f", {folds_text(v)}"
        lines.append(f"{prov}: {chain} ({v['change_pp']:+.1f} points{fold}, "
                     f"h = {v['cohens_h']:+.2f}{'' if v['monotonic'] else ', not monotonic'})")
    return lines


SECTION = register(Section(key="generational_drift",
                           title="Generational drift in cooperation (strategic personalities)",
                           build=build, render=render, order=59))
