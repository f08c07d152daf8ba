"""The analysis screen: a run's report as plots and tables, and its export.

Everything shown comes from :func:`coop_tui.report.build_report` (SQL aggregation, run
in a thread worker through :func:`~coop_tui.screens.analysis.loader.load_report`), one
experiment at a time (``[`` / ``]`` switch): the cooperation curve over similarity per
agent and framing with ±SE error bars and the game's b* as a vertical line; the
per-round cooperation of repeated games; the game's payoff table; for cross-play
tournaments the matchup matrix as a heat table and Mean / Fitness / deviation rating;
per-condition cooperation and payoffs; counts. Each panel shows the experiment it is
given (``show``); the screen picks the experiment. ``c`` / ``p`` export the run's tables
as CSV / Parquet into the directory shown at the bottom (:class:`ExportBar`); ``v``
compares the run with another (:mod:`coop_tui.screens.compare`). Slow report sections
not stored yet (the reasoning fingerprints) are built after the rest is shown, in the
same worker, each panel filled when its value arrives.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from coop_tui.analysis.sections import build_section
from coop_tui.screens.analysis.export_bar import ExportBar
from coop_tui.screens.analysis.header import (
    counts_text,
    experiment_title,
    failed_title,
    loading_title,
)
from coop_tui.screens.analysis.loader import load_report
from coop_tui.screens.analysis.matchups import PopulationTable, TournamentPanel, tournament_at
from coop_tui.screens.analysis.plots import CurvesPanel, EvolutionPlot
from coop_tui.screens.analysis.sections import PaperTables, SectionsPanel
from coop_tui.screens.analysis.tables import BallotsTable, ConditionsPanel, PayoffsPanel
from coop_tui.screens.compare import CompareScreen
from coop_tui.screens.widgets import NavScreen
from coop_tui.terminal import short_names


class AnalysisScreen(NavScreen):
    """One run's analysis: curves, payoff and matchup matrices, population metrics, export."""

    HELP_TITLE = "Analysis"
    CSS_PATH = "../analysis.tcss"
    BINDINGS = [
        Binding("left_square_bracket", "experiment(-1)", "Prev experiment"),
        Binding("right_square_bracket", "experiment(1)", "Next experiment"),
        Binding("t", "tournament", "Next tournament", show=False),
        Binding("e", "evolution", "Next replicate", show=False),
        Binding("c", "export('csv')", "Export CSV"),
        Binding("p", "export('parquet')", "Export Parquet"),
        Binding("v", "compare", "Compare with run B"),
        Binding("f5", "reload", "Reload", show=False),
        Binding("question_mark", "help", "Help", show=False),
        Binding("escape,q", "back", "Back"),
    ]

    def __init__(self, store: Any, run_id: str, *, export_dir: Path | str | None = None) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.export_dir = Path(export_dir) if export_dir else Path.cwd() / "exports" / run_id
        """Where the export bar starts (what it holds once edited is the bar's)."""
        self.report: dict[str, Any] | None = None
        self.names: dict[str, str] = {}
        """The report's long names and how the tables cut them."""
        self.index = 0
        self.tournament_index = 0
        self.evolution_index = 0
        """Which replicate's trajectory the evolution plot shows."""
        self.pending_sections: set[str] = set()
        """Slow report sections (see analysis.sections) being built after the rest is shown."""
        self.sections_filled = 0
        """How many of those have arrived (tests wait on it)."""
        self.exported: list[Path] = []
        self.loaded = 0
        self.error: str | None = None

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(loading_title(self.run_id), id="an-title")
        yield Static("", id="an-counts")
        with VerticalScroll(id="an-body"):
            yield CurvesPanel(id="an-plots")
            with Horizontal(id="an-matrices"):
                yield PayoffsPanel(id="an-payoff")
                yield TournamentPanel(id="an-matchup-box")
            yield PopulationTable(id="an-population")
            yield ConditionsPanel(id="an-conditions")
            yield BallotsTable(id="an-ballots")
            yield EvolutionPlot(id="an-evolution")
            yield PaperTables(id="an-paper-tables")
            yield SectionsPanel(id="an-sections")
        yield ExportBar(self.store, self.run_id, self.export_dir, id="an-export")
        yield Static("", id="an-export-status")
        yield Footer()

    def on_mount(self) -> None:
        for widget in ("#an-plots", "#an-matchup-box", "#an-population", "#an-ballots",
                       "#an-evolution", "#an-paper-tables"):
            self.query_one(widget).display = False
        self._fit(self.app.size.width)
        self.action_reload()

    def on_resize(self, event: Any) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        """Side by side payoff and matchup tables only when both fit."""
        self.set_class(width < 175, "-narrow")

    @property
    def b_star_line(self) -> float | None:
        """Where b* is drawn on the similarity axis (0..100), None when not drawn."""
        return self.query_one(CurvesPanel).b_star_line

    # ------------------------------------------------------------ loading
    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="report")
    def _load(self) -> None:
        """The report without the slow sections not stored yet (shown at once), then those
        sections one by one, each panel filled when its value is ready."""
        with self.store_open() as open_:
            if not open_:
                return
            try:
                report, waiting = load_report(self.store, self.run_id)
            except KeyError:
                self.from_worker(self._fail, f"no run {self.run_id} in {self.store.path}")
                return
            except sqlite3.OperationalError:
                if self.closing():  # interrupted: the app is closing
                    return
                raise
        self.from_worker(self._show_report, report, [s.key for s in waiting])
        worker = get_current_worker()
        for section in waiting:
            with self.app.reading_store() as store:  # type: ignore[attr-defined]
                if store is None:  # the app is closing
                    return
                try:
                    value = build_section(section, store, self.run_id, report)
                except sqlite3.OperationalError:
                    if worker.is_cancelled or self.closing():
                        return  # interrupted: the app is closing

                    raise
            if worker.is_cancelled:  # a reload started over: its own worker fills the panels
                return
            self.from_worker(self._fill_section, section.key, value)

    def _fail(self, message: str) -> None:
        self.error = message
        self.query_one("#an-title", Static).update(failed_title(message))
        self.loaded += 1

    def _show_report(self, report: dict[str, Any], waiting: list[str] | None = None) -> None:
        self.report = report
        self.names = short_names(report)
        self.pending_sections = set(waiting or [])
        self.index = min(self.index, max(len(report["experiments"]) - 1, 0))
        self.query_one("#an-counts", Static).update(counts_text(report["counts"]))
        self._show_experiment()
        self.query_one(PaperTables).show(report, self.names)
        self.query_one(SectionsPanel).show(report, self.pending_sections, self.names)
        self.loaded += 1

    def _fill_section(self, key: str, value: Any) -> None:
        """A slow section's value is ready: its panel shows it, or goes when it is empty."""
        self.pending_sections.discard(key)
        if self.report is not None and value:
            self.report[key] = value
        self.query_one(SectionsPanel).fill(key, value, self.names)
        self.sections_filled += 1

    # ------------------------------------------------------------ the experiment shown
    @property
    def experiment(self) -> dict[str, Any] | None:
        if not self.report or not self.report["experiments"]:
            return None
        return self.report["experiments"][self.index]

    def evolution_series(self, e: dict[str, Any]) -> list[dict[str, Any]]:
        """The trajectories of the shown experiment, one per replicate."""
        return [v for v in (self.report or {}).get("evolution") or []
                if v["experiment"] == e["experiment"]]

    def _show_experiment(self) -> None:
        assert self.report is not None
        self.query_one("#an-title", Static).update(experiment_title(self.report, self.index))
        e = self.experiment
        if e is None:
            return
        self.query_one(CurvesPanel).show(e)
        self.query_one(PayoffsPanel).show_experiment(e)
        self._show_tournament(e)
        self.query_one(ConditionsPanel).show(e)
        self.query_one(BallotsTable).show(e, self.report.get("mechanisms") or {})
        self.query_one(EvolutionPlot).show(self.evolution_series(e), self.evolution_index)

    def _show_tournament(self, e: dict[str, Any]) -> None:
        """The matchup matrix and population metrics of the experiment's tournament
        ``tournament_index``; both hidden when it has none."""
        matchups, population = self.query_one(TournamentPanel), self.query_one(PopulationTable)
        shown = tournament_at(e, self.tournament_index)
        if shown is None:
            matchups.display = False
            population.display = False
            return
        self.tournament_index, t, suffix = shown
        matchups.show(t, suffix)
        population.show(t, suffix)

    # ------------------------------------------------------------ actions
    def action_experiment(self, step: int) -> None:
        if not self.report or not self.report["experiments"]:
            return
        self.index = (self.index + step) % len(self.report["experiments"])
        self.tournament_index = 0
        self._show_experiment()

    def action_tournament(self) -> None:
        e = self.experiment
        if e is None:
            return
        self.tournament_index += 1
        self._show_tournament(e)

    def action_evolution(self) -> None:
        """Show the next replicate's trajectory."""
        e = self.experiment
        if e is None:
            return
        self.evolution_index += 1
        self.query_one(EvolutionPlot).show(self.evolution_series(e), self.evolution_index)

    def action_compare(self) -> None:
        """This run against another (of this database or another file), per condition."""
        self.app.push_screen(CompareScreen(self.store, self.run_id))

    def action_export(self, fmt: str) -> None:
        self.query_one(ExportBar).export(fmt)

    @on(ExportBar.Status)
    def _export_status(self, event: ExportBar.Status) -> None:
        self.query_one("#an-export-status", Static).update(event.text)

    @on(ExportBar.Exported)
    def _exported(self, event: ExportBar.Exported) -> None:
        self.exported = event.paths
