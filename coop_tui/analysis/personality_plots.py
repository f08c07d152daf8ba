"""Plots of the strategic-personality section: the archetype map and endgame curves.

Each widget receives the section's JSON value and draws itself when mounted, so the
analysis screen only has to mount what the section's ``widgets`` returns. They live beside
the section (which imports them only when a panel is drawn: textual-plotext is a UI
library) rather than in screens/, which sits above analysis.
"""

from __future__ import annotations

from typing import Any

from textual_plotext import PlotextPlot

COLOURS = ("cyan", "orange", "green", "magenta", "blue", "yellow", "red", "white")


class ArchetypeMap(PlotextPlot):
    """P(C|C) against P(C|D) per agent, with the archetype thresholds as guide lines."""

    DEFAULT_CSS = "ArchetypeMap { height: 18; width: 1fr; }"

    def __init__(self, value: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.points = [
            (name, 100 * a["reciprocity"]["p_c_after_d"], 100 * a["reciprocity"]["p_c_after_c"],
             a["reciprocity"]["archetype"])
            for name, a in value["agents"].items()
            if a["reciprocity"]["p_c_after_c"] is not None
            and a["reciprocity"]["p_c_after_d"] is not None
        ]

    def on_mount(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("archetype map")
        # names are written beside the points (a legend would cover the busy corner
        # where P(C|D) is near 0); agents on the same spot share one label
        spots: dict[tuple[float, float], list[str]] = {}
        for name, x, y, _kind in self.points:
            spots.setdefault((round(x, 1), round(y, 1)), []).append(name)
        for i, ((x, y), names) in enumerate(sorted(spots.items())):
            colour = COLOURS[i % len(COLOURS)]
            plt.scatter([x], [y], color=colour, marker="●")
            plt.text(" " + ", ".join(names), x, y, color=colour, alignment="left")
        plt.hline(60, "gray")  # strict / grudge reciprocators above
        plt.vline(10, "gray")  # strict reciprocators left of it
        plt.vline(3, "gray")   # grudge-holders left of it
        plt.xlim(0, 100)
        plt.ylim(0, 100)
        plt.xlabel("P(C | co-player defected) %")
        plt.ylabel("P(C | co-player cooperated) %")
        self.refresh()


class EndgameCurves(PlotextPlot):
    """Cooperation per round for each agent (known-horizon matches when there are any)."""

    DEFAULT_CSS = "EndgameCurves { height: 18; width: 1fr; }"

    def __init__(self, value: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.series = [
            (name, a["curve"]["rounds"], [100 * r for r in a["curve"]["rate"]])
            for name, a in value["agents"].items() if a["curve"]["rounds"]
        ]

    def on_mount(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("cooperation by round (endgame)")
        last = 1
        for i, (name, xs, ys) in enumerate(self.series):
            plt.plot(xs, ys, label=name, color=COLOURS[i % len(COLOURS)], marker="braille")
            last = max(last, max(xs))
        plt.xlim(1, max(last, 2))
        plt.ylim(0, 105)
        plt.xlabel("round")
        plt.ylabel("cooperation %")
        self.refresh()
