"""Report section ``similarity_table``: the similarity signals paper's Table 2 — mean payoff per benchmark
(rows) and method of computing the scores (columns: exogenous, endogenous from both /
decisions / explanations) — and, per benchmark, cooperation over the figure each seat
was told, drawn as curves on the analysis screen.

A condition's benchmark and method come from its ``similarity_source`` or
``similarity_label`` ("exogenous:<bench>", "endogenous:<bench>:<view>"); abstract X
sweeps give curves only (their benchmark in the benchmark prompt modes, else "no
domain"). Computed in :mod:`coop_tui.analysis.similarity_play`.
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.similarity_play import one_shot_outcomes, similarity_table

COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red", "white")


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    conds = one_shot_outcomes(store, run_id)
    return similarity_table(conds) if conds else None


def _cell(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    text = f"{c['expected']:.3f}" if c["expected"] is not None else "-"
    if c.get("recovered_expected") is not None:
        text += f" ({100 * c['recovered_expected']:.0f}%)"
    if c["realised"] is not None:
        text += f"\nrealised {c['realised']:.3f}"
    return text


def tables(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for game, t in value.get("tables", {}).items():
        out.append(Text(f"{game}: mean payoff per player, expected (welfare recovered) and realised",
                        style="bold"))
        table = Table("benchmark \\ method", *t["methods"])
        for bench in t["benchmarks"]:
            table.add_row(bench, *(_cell(t["rows"][bench].get(m)) for m in t["methods"]))
        out.append(table)
    return out


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    out = tables(value)
    curves = value.get("curves") or {}
    if curves:
        table = Table("benchmark", "series", "cooperation at the figure told (n)", title_justify="left",
                      title="cooperation over the figure each seat was told")
        for bench, by_series in curves.items():
            for series, points in by_series.items():
                table.add_row(bench, series, "  ".join(
                    f"{p['told']:g}%: {p['coop_rate']:.2f} ({p['n']})" for p in points))
        out.append(table)
    return out


def widgets(value: dict[str, Any]) -> list[Any]:
    """The Table-2 tables, then one plot per benchmark: cooperation over the figure told."""
    from rich.console import Group
    from textual.widgets import Static
    from textual_plotext import PlotextPlot

    class CurvePlot(PlotextPlot):
        """Cooperation over the figure told, one line per series, drawn once mounted."""

        def __init__(self, bench: str, by_series: dict[str, list[dict[str, Any]]],
                     b_star: float | None, **kw: Any) -> None:
            super().__init__(**kw)
            self.bench, self.by_series, self.b_star = bench, by_series, b_star
            self.styles.height = 16

        def on_mount(self) -> None:
            plt = self.plt
            for i, (series, points) in enumerate(self.by_series.items()):
                xs = [p["told"] for p in points]
                ys = [p["coop_rate"] for p in points]
                plt.plot(xs, ys, label=series, color=COLOURS[i % len(COLOURS)], marker="braille")
            if self.b_star is not None:  # full cooperation is an equilibrium above b*
                plt.vline(100 * self.b_star, "red")
                plt.text(f" b*={self.b_star:g}", 100 * self.b_star + 1, 0.93, color="red")
            plt.title(f"cooperation over the similarity told: {self.bench}")
            plt.xlim(0, 100)
            plt.ylim(0, 1.05)
            plt.xlabel("similarity told (%)")
            plt.ylabel("cooperation")

    out: list[Any] = []
    parts = tables(value)
    if parts:
        out.append(Static(Group(*parts), classes="similarity-table"))
    for i, (bench, by_series) in enumerate((value.get("curves") or {}).items()):
        b_star = (value.get("b_star") or {}).get(bench)
        out.append(CurvePlot(bench, by_series, b_star, id=f"similarity-curve-{i}"))
    return out


SECTION = register(Section(
    key="similarity_table", title="Similarity: payoff per benchmark x method (similarity signals, Table 2)",
    build=build, render=render, widgets=widgets, order=62,
))
