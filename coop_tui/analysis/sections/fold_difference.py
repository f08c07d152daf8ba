"""Report section ``fold_difference``: the most cooperative model's Table 2 rate over the
least cooperative's (the paper's 48-fold, 71.5% vs 1.5%), with the gap in points and h."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis import paper_tables
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.relevant(store, run_id, report):
        return None
    return paper_tables.fold_difference(paper_tables.inputs(store, run_id)["cooperation"])


def render(value: dict[str, Any]) -> list[Any]:
    fold = "no fold (the lowest rate is 0)" if value["fold"] is None else f"{value['fold']:.1f}-fold"
    return [f"{value['most']} {value['most_rate']:.1f}% vs {value['least']} "
            f"{value['least_rate']:.1f}%: {fold}, {value['difference_pp']:.1f} points, "
            f"h = {value['cohens_h']:.2f}"]


SECTION = register(Section(key="fold_difference", title="Fold difference in cooperation (strategic personalities)",
                           build=build, render=render, order=58))
