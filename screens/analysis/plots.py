"""The analysis screen's plots: cooperation over similarity and per round, and evolution.

Each series comes from the report as plain numbers (:func:`curve_series`,
:func:`round_series`); the plots draw them with ±SE error bars, b* as a vertical line
on the similarity axis.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual_plotext import PlotextPlot

from coop_tui.terminal import NAME_WIDTH, terminal_text

COLOURS = ("cyan", "orange", "green", "magenta", "blue", "yellow", "red", "white")
"""Plot line colours, one per agent / framing series (cycled)."""

Series = list[tuple[str, list[float], list[float], list[float]]]


def curve_series(e: dict[str, Any]) -> Series:
    """(label, similarity, cooperation, SE) per series of the report's curve (an agent, plus
    the condition fields other than similarity that vary), sorted by similarity."""
    out = []
    for label, points in e.get("curve", {}).items():
        pts = sorted(points, key=lambda p: p["similarity"])
        out.append((label, [float(p["similarity"]) for p in pts],
                    [float(p["coop_rate"]) for p in pts], [float(p["se"] or 0.0) for p in pts]))
    return out


def round_series(e: dict[str, Any]) -> Series:
    """(agent, round, cooperation, SE) per agent of a repeated-game experiment."""
    out = []
    for agent, points in sorted(e.get("per_round", {}).items()):
        pts = sorted(points, key=lambda p: p["round"])
        out.append((agent, [float(p["round"]) for p in pts], [float(p["coop_rate"]) for p in pts],
                    [float(p.get("se") or 0.0) for p in pts]))
    return out


def plot_label(name: str) -> str:
    """A plot legend's name: plotext draws it as given."""
    return terminal_text(name, markup=False, limit=NAME_WIDTH)


class CurvesPanel(Horizontal):
    """Cooperation over similarity and cooperation per round, side by side; each shown
    only when the experiment has its series, the panel only when it has one of them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.b_star_line: float | None = None
        """Where b* is drawn on the similarity axis (0..100), None when not drawn."""

    def compose(self) -> ComposeResult:
        curve = PlotextPlot(id="an-curve")
        curve.border_title = "Cooperation over similarity (±SE)"
        yield curve
        rounds = PlotextPlot(id="an-rounds")
        rounds.border_title = "Cooperation per round (±SE)"
        yield rounds

    def show(self, e: dict[str, Any]) -> None:
        curve = self.query_one("#an-curve", PlotextPlot)
        rounds = self.query_one("#an-rounds", PlotextPlot)
        series = curve_series(e)
        per_round = round_series(e)
        curve.display = bool(series)
        rounds.display = bool(per_round)
        self.display = bool(series or per_round)
        self.b_star_line = None
        if series:
            self._plot_curve(curve, series, e.get("b_star"))
        if per_round:
            self._plot_rounds(rounds, per_round)

    def _plot_curve(self, curve: PlotextPlot, series: Series, b_star: Any) -> None:
        plt = _fresh_series_plot(curve, series)
        if b_star is not None:
            self.b_star_line = 100 * float(b_star)
            plt.vline(self.b_star_line, "red")
            plt.text(f" b*={b_star:g}", self.b_star_line + 1, 0.93, color="red")
        plt.xlim(0, 100)
        plt.ylim(0, 1.05)
        plt.xlabel("similarity (%)")
        plt.ylabel("cooperation")
        curve.refresh()

    @staticmethod
    def _plot_rounds(rounds: PlotextPlot, per_round: Series) -> None:
        plt = _fresh_series_plot(rounds, per_round)
        last = int(max(max(xs) for _, xs, _, _ in per_round))
        step = max(1, (last + 9) // 10)
        plt.xticks(list(range(1, last + 1, step)))
        plt.xlim(1, max(last, 2))
        plt.ylim(0, 1.05)
        plt.xlabel("round")
        plt.ylabel("cooperation")
        rounds.refresh()


class EvolutionPlot(PlotextPlot):
    """The population share per agent over the replicator dynamics' steps, one replicate
    at a time (``e`` steps to the next)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "Evolution: population share per agent (replicator dynamics)"

    def show(self, series: list[dict[str, Any]], index: int) -> None:
        """Replicate ``index`` (cycled) of the shown experiment's trajectories; hidden
        when it has none."""
        self.display = bool(series)
        if not series:
            return
        first = series[index % len(series)]
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        for i, (agent, shares) in enumerate(sorted(first["shares"].items())):
            plt.plot(first["steps"], shares, label=plot_label(agent), color=COLOURS[i % len(COLOURS)],
                     marker="braille")
        plt.ylim(0, 1)
        plt.xlabel("step")
        plt.ylabel("share")
        self.border_title = (f"Evolution: population share per agent, replicate "
                             f"{first['replicate'] + 1} of {len(series)} (e: next)")
        self.refresh()


def _fresh_series_plot(plot: PlotextPlot, series: Series) -> Any:
    """The plot cleared, then each (label, xs, ys, standard errors) drawn in its colour
    with its error bars; returns plotext's handle for the axes each caller sets."""
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    for i, (label, xs, ys, ses) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        plt.plot(xs, ys, label=plot_label(label), color=colour, marker="braille")
        plt.error(xs, ys, yerr=ses, color=colour)
    return plt
