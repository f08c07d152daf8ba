"""The analysis screen's cross-play panels: the matchup matrix as a heat table, welfare,
and the population metrics (mean payoff, fitness, final share, deviation rating).

An experiment may hold several tournaments (one per game x condition); ``t`` steps
through them and both panels show the same one.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from coop_tui.screens.widgets import plain
from coop_tui.terminal import NAME_WIDTH, shorten, terminal_text, widget_text


def num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def heat_cell(value: float | None, lo: float, hi: float) -> Text:
    """A matrix value on a red (low) → yellow → green (high) background."""
    if value is None:
        return Text("-", justify="center", style="dim")
    t = 0.5 if hi <= lo else (value - lo) / (hi - lo)
    if t < 0.5:
        r, g = 200, int(60 + 2 * t * 140)
    else:
        r, g = int(200 - 2 * (t - 0.5) * 170), 200
    return Text(f" {value:.3f} ", justify="center",
                style=Style(color="black", bgcolor=f"rgb({r},{g},60)", bold=True))


def tournament_views(e: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, metrics) of each tournament in an experiment (one per game x condition)."""
    tours = e.get("tournaments") or {}
    if tours:
        return [(key, t) for key, t in tours.items()]
    if e.get("matchup_matrix") or e.get("population"):
        return [("", e)]
    return []


def tournament_at(e: dict[str, Any], index: int) -> tuple[int, dict[str, Any], str] | None:
    """The experiment's tournament ``index`` (cycled): its index, metrics and the suffix
    its panels' titles take (its label, and which of how many it is); None without one."""
    views = tournament_views(e)
    if not views:
        return None
    index %= len(views)
    label, t = views[index]
    suffix = f" · {label}" if label and label != "-" else ""
    if len(views) > 1:
        suffix += f" ({index + 1}/{len(views)}, t: next)"
    return index, t, suffix


class TournamentPanel(Vertical):
    """The matchup matrix (row agent's mean payoff against each column agent), numbered
    columns since model names are long, and the welfare line under it."""

    TITLE = "Matchup matrix (row agent's mean payoff)"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = self.TITLE

    def compose(self) -> ComposeResult:
        yield DataTable(id="an-matchup", cursor_type="cell", show_cursor=False)
        yield Static("", id="an-welfare")

    def show(self, t: dict[str, Any], suffix: str) -> None:
        matrix = t.get("matchup_matrix")
        table = self.query_one("#an-matchup", DataTable)
        table.clear(columns=True)
        self.display = True
        self.border_title = plain(self.TITLE + shorten(suffix, 100))
        if matrix:
            agents = list(matrix)
            values = [v for row in matrix.values() for v in row.values() if v is not None]
            lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
            # columns are numbered (model names are long); row i is column i's agent
            table.add_column(Text("row \\ column", style="bold"), key="agent")
            for i, a in enumerate(agents, start=1):
                table.add_column(Text(f"{i}", style="bold", justify="center"), key=a)
            for i, a in enumerate(agents, start=1):
                table.add_row(widget_text(f"{i} {a}", "bold", limit=NAME_WIDTH),
                              *[heat_cell(matrix[a].get(b), lo, hi) for b in agents], key=a)
        else:
            table.add_column("matchup matrix")
            table.add_row(Text("only for two-player games", style="dim"))
        self.query_one("#an-welfare", Static).update(welfare_text(t))


def welfare_text(t: dict[str, Any]) -> Text:
    """Normalised welfare before and after the dynamics, and the tournament's note."""
    welfare = Text()
    if t.get("normalised_welfare") is not None:
        welfare.append(f"normalised welfare {t['normalised_welfare']:.3f} (uniform population)"
                       f" · {t.get('normalised_welfare_final', 0) or 0:.3f} (after dynamics)",
                       style="dim")
    if t.get("note"):
        welfare.append(f"  {terminal_text(t['note'], markup=False)}", style="yellow")
    return welfare


class PopulationTable(DataTable):
    """Per agent of the tournament: mean payoff, fitness, final share, deviation rating."""

    TITLE = "Population metrics"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", show_cursor=False, **kwargs)
        self.border_title = self.TITLE

    def on_mount(self) -> None:
        self.add_columns("agent", "mean payoff", "fitness", "final share", "deviation rating")

    def show(self, t: dict[str, Any], suffix: str) -> None:
        self.clear()
        pop = t.get("population")
        self.display = bool(pop)
        self.border_title = plain(self.TITLE + shorten(suffix, 100))
        for agent, m in (pop or {}).items():
            self.add_row(
                widget_text(agent, "bold", limit=NAME_WIDTH),
                Text(num(m.get("mean_payoff"), 4), justify="right"),
                Text(num(m.get("fitness"), 4), justify="right"),
                Text(num(m.get("final_share"), 3), justify="right"),
                Text(num(m.get("deviation_rating"), 4), justify="right"), key=agent,
            )
