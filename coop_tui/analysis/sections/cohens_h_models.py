"""Report section ``cohens_h_models``: Cohen's h between the models' Table 2 cooperation
rates, and the pairs the paper names (most vs least cooperative, 1.77; OpenAI's oldest vs
newest small model, 1.32; Google's Gemini 2.0 Flash vs Gemini 3 Flash, 1.13)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis import paper_tables
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from textual.widget import Widget

    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.relevant(store, run_id, report):
        return None
    coop = paper_tables.inputs(store, run_id)["cooperation"]
    return paper_tables.cohens_h_models(coop) if len(coop) >= 2 else None


def pair_lines(value: dict[str, Any]) -> list[str]:
    out = []
    for p in value["pairs"]:
        paper = "" if p["paper"] is None else f" (paper {p['paper']:.2f})"
        out.append(f"{p['name']}: {p['models'][0]} {p['rates'][0]:.1f}% vs {p['models'][1]} "
                   f"{p['rates'][1]:.1f}%: h = {p['h']:.2f}{paper}")
    return out


def matrix_table(value: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table("h (row − column)", *value["models"],
                  title="Cohen's h between models (Table 2 rates)")
    for name, row in zip(value["models"], value["matrix"], strict=True):
        table.add_row(name, *(f"{h:+.2f}" for h in row))
    return table


def render(value: dict[str, Any]) -> list[Any]:
    return [*pair_lines(value), matrix_table(value)]


def widgets(value: dict[str, Any]) -> list[Widget]:
    from textual.widgets import DataTable, Static

    table = DataTable(id="sp-models-h", cursor_type="cell", show_cursor=False)
    table.add_columns("h (row − col)", *value["models"])
    for name, row in zip(value["models"], value["matrix"], strict=True):
        table.add_row(name, *(f"{h:+.2f}" for h in row))
    table.styles.height = "auto"
    return [Static("\n".join(pair_lines(value)), id="sp-models-h-pairs"), table]


SECTION = register(Section(key="cohens_h_models",
                           title="Cohen's h between models (strategic personalities)",
                           build=build, render=render, widgets=widgets, order=57))
