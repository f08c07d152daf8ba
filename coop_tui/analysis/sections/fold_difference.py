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


def folds_text(value: dict[str, Any]) -> str:
    """Both folds, each said for what it is: the exact rates' and the printed rates' (the
    paper divides the rates it prints, so its folds are the second)."""
    if value["fold"] is None:
        return "no fold (the lower rate is 0)"
    printed = value.get("fold_of_printed_rates")
    paper = ("" if printed is None
             else f", {printed:.1f}-fold from the rates rounded as printed (the paper's way)")
    return f"{value['fold']:.1f}-fold from the exact rates{paper}"


def render(value: dict[str, Any]) -> list[Any]:
    return [f"{value['most']} {value['most_rate']:.1f}% vs {value['least']} "
            f"{value['least_rate']:.1f}%: {folds_text(value)}, "
            f"{value['difference_pp']:.1f} points, h = {value['cohens_h']:.2f}"]


SECTION = register(Section(key="fold_difference", title="Fold difference in cooperation (strategic personalities)",
                           build=build, render=render, order=58))
