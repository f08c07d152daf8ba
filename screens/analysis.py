"""The analysis screen: a run's report as plots and tables, and its export.

Everything shown comes from :func:`coop_tui.report.build_report` (SQL aggregation, run
in a thread worker), one experiment at a time (``[`` / ``]`` switch): the cooperation
curve over similarity per agent and framing with ±SE error bars and the game's b*
as a vertical line; the per-round cooperation of repeated games; the game's payoff
table; for cross-play tournaments the matchup matrix as a heat table and Mean / Fitness /
deviation rating; per-condition cooperation and payoffs; counts. ``c`` / ``p`` export
the run's tables as CSV / Parquet into the directory shown at the bottom; ``v`` compares
the run with another (:mod:`coop_tui.screens.compare`). Slow report
sections not stored yet (the reasoning fingerprints) are built after the rest is shown,
in the same worker, each panel filled when its value arrives.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Footer, Input, Static
from textual.worker import get_current_worker
from textual_plotext import PlotextPlot

from coop_tui.analysis.sections import build_section, pending, sections
from coop_tui.export import ExportError, export_run
from coop_tui.screens.compare import CompareScreen
from coop_tui.screens.widgets import NavScreen, PayoffTable, plain
from coop_tui.terminal import (
    NAME_WIDTH,
    short_names,
    shorten,
    terminal_data,
    terminal_text,
    widget_text,
)

COLOURS = ("cyan", "orange", "green", "magenta", "blue", "yellow", "red", "white")
"""Plot line colours, one per agent / framing series (cycled)."""


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def curve_series(e: dict[str, Any]) -> list[tuple[str, list[float], list[float], list[float]]]:
    """(label, similarity, cooperation, SE) per series of the report's curve (an agent, plus
    the condition fields other than similarity that vary), sorted by similarity."""
    out = []
    for label, points in e.get("curve", {}).items():
        pts = sorted(points, key=lambda p: p["similarity"])
        out.append((label, [float(p["similarity"]) for p in pts],
                    [float(p["coop_rate"]) for p in pts], [float(p["se"] or 0.0) for p in pts]))
    return out


def round_series(e: dict[str, Any]) -> list[tuple[str, list[float], list[float], list[float]]]:
    """(agent, round, cooperation, SE) per agent of a repeated-game experiment."""
    out = []
    for agent, points in sorted(e.get("per_round", {}).items()):
        pts = sorted(points, key=lambda p: p["round"])
        out.append((agent, [float(p["round"]) for p in pts], [float(p["coop_rate"]) for p in pts],
                    [float(p.get("se") or 0.0) for p in pts]))
    return out


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


class AnalysisScreen(NavScreen):
    """One run's analysis: curves, payoff and matchup matrices, population metrics, export."""

    HELP_TITLE = "Analysis"
    CSS_PATH = "analysis.tcss"
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
        self.b_star_line: float | None = None
        """Where b* is drawn on the similarity axis (0..100), None when not drawn."""
        self.exported: list[Path] = []
        self.loaded = 0
        self.error: str | None = None

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"),
                                   f" run {self.run_id}  ", ("loading…", "dim")), id="an-title")
        yield Static("", id="an-counts")
        with VerticalScroll(id="an-body"):
            with Horizontal(id="an-plots"):
                curve = PlotextPlot(id="an-curve")
                curve.border_title = "Cooperation over similarity (±SE)"
                yield curve
                rounds = PlotextPlot(id="an-rounds")
                rounds.border_title = "Cooperation per round (±SE)"
                yield rounds
            with Horizontal(id="an-matrices"):
                payoff = PayoffTable(id="an-payoff")
                payoff.border_title = "Payoff table"
                yield payoff
                with Vertical(id="an-matchup-box") as box:
                    box.border_title = "Matchup matrix (row agent's mean payoff)"
                    yield DataTable(id="an-matchup", cursor_type="cell", show_cursor=False)
                    yield Static("", id="an-welfare")
            population = DataTable(id="an-population", cursor_type="row", show_cursor=False)
            population.border_title = "Population metrics"
            yield population
            conditions = DataTable(id="an-conditions", cursor_type="row", zebra_stripes=True)
            conditions.border_title = "Cooperation and payoff per condition"
            yield conditions
            ballots = DataTable(id="an-ballots", cursor_type="row", show_cursor=False)
            ballots.border_title = "Proposals and votes (Mediation / Contracting)"
            yield ballots
            evolution = PlotextPlot(id="an-evolution")
            evolution.border_title = "Evolution: population share per agent (replicator dynamics)"
            yield evolution
            tables = Static("", id="an-paper-tables")
            tables.border_title = "Paper tables: Mean / Fitness / DevRank, mean ± SE over replicates"
            yield tables
            yield Vertical(id="an-sections")
        with Horizontal(id="an-export"):
            yield Static("Export to", id="an-export-label")
            yield Input(str(self.export_dir), id="an-export-dir")
            yield Button("CSV", id="an-csv")
            yield Button("Parquet", id="an-parquet")
        yield Static("", id="an-export-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#an-population", DataTable).add_columns(
            "agent", "mean payoff", "fitness", "final share", "deviation rating")
        self.query_one("#an-conditions", DataTable).add_columns(
            "condition", "agent", "n", "coop", "± SE", "Wilson 95%", "sampled", "payoff", "± SE")
        self.query_one("#an-ballots", DataTable).add_columns(
            "agent", "condition", "proposals", "adopted", "approval share", "approves",
            "own approved", "stable designs", "signed / delegated")
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

    # ------------------------------------------------------------ loading
    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="report")
    def _load(self) -> None:
        """The report without the slow sections not stored yet (shown at once), then those
        sections one by one, each panel filled when its value is ready."""
        from coop_tui.report import build_report

        with self.store_open() as open_:
            if not open_:
                return
            try:
                report = build_report(self.store, self.run_id, compute_stored=False)
                waiting = pending(self.store, self.run_id)
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
        self.query_one("#an-title", Static).update(
            Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"), "  ",
                          (terminal_text(message, markup=False), "bold red")))
        self.loaded += 1

    def _show_report(self, report: dict[str, Any], waiting: list[str] | None = None) -> None:
        self.report = report
        self.names = short_names(report)
        self.pending_sections = set(waiting or [])
        self.index = min(self.index, max(len(report["experiments"]) - 1, 0))
        self._show_counts()
        self._show_experiment()
        self._show_paper_tables()
        self._show_sections()
        self.loaded += 1

    def _show_sections(self) -> None:
        """One bordered panel per report section the run has (see analysis.sections); a
        section still being built has its panel with a note until :meth:`_fill_section`."""
        box = self.query_one("#an-sections", Vertical)
        box.remove_children()
        report = self.report or {}
        for section in sections():
            waiting = section.key in self.pending_sections
            if not waiting and not report.get(section.key):
                continue
            panel = Vertical(classes="an-section", id=f"an-section-{section.key}")
            panel.border_title = section.title
            box.mount(panel)
            if waiting:
                panel.mount(Static(Text("computing… (stored for the next time once done)",
                                        style="dim italic")))
            else:
                self._mount_section(panel, section, report[section.key])

    def _mount_section(self, panel: Vertical, section: Any, value: Any) -> None:
        if section.widgets is not None:
            panel.mount(*section.widgets(terminal_data(value, self.names)))
        else:  # Rich tables of names from imports and sweeps: shown escaped, long ones cut
            panel.mount(Static(Group(*section.render(terminal_data(value, self.names)))))

    def _fill_section(self, key: str, value: Any) -> None:
        """A slow section's value is ready: its panel shows it, or goes when it is empty."""
        self.pending_sections.discard(key)
        found = self.query(f"#an-section-{key}")
        if self.report is not None and value:
            self.report[key] = value
        if found:
            panel = found.first(Vertical)
            if value:
                panel.remove_children()
                self._mount_section(panel, next(s for s in sections() if s.key == key), value)
            else:
                panel.remove()
        self.sections_filled += 1

    def _show_paper_tables(self) -> None:
        """CoopEval's tables for the whole run (every game and mechanism at once)."""
        assert self.report is not None
        widget = self.query_one("#an-paper-tables", Static)
        cells = self.report.get("tables") or []
        widget.display = bool(cells)
        if cells:
            from coop_tui.analysis.coopeval_tables import render_rich

            widget.update(Group(*render_rich(terminal_data(cells, self.names))))

    def evolution_series(self, e: dict[str, Any]) -> list[dict[str, Any]]:
        """The trajectories of the shown experiment, one per replicate."""
        return [v for v in (self.report or {}).get("evolution") or []
                if v["experiment"] == e["experiment"]]

    def _plot_evolution(self, e: dict[str, Any]) -> None:
        plot = self.query_one("#an-evolution", PlotextPlot)
        series = self.evolution_series(e)
        plot.display = bool(series)
        if not series:
            return
        first = series[self.evolution_index % len(series)]
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        for i, (agent, shares) in enumerate(sorted(first["shares"].items())):
            plt.plot(first["steps"], shares, label=_label(agent), color=COLOURS[i % len(COLOURS)],
                     marker="braille")
        plt.ylim(0, 1)
        plt.xlabel("step")
        plt.ylabel("share")
        plot.border_title = (f"Evolution: population share per agent, replicate "
                             f"{first['replicate'] + 1} of {len(series)} (e: next)")
        plot.refresh()

    def action_evolution(self) -> None:
        """Show the next replicate's trajectory."""
        e = self.experiment
        if e is None:
            return
        self.evolution_index += 1
        self._plot_evolution(e)

    @property
    def experiment(self) -> dict[str, Any] | None:
        if not self.report or not self.report["experiments"]:
            return None
        return self.report["experiments"][self.index]

    def _show_counts(self) -> None:
        assert self.report is not None
        c = self.report["counts"]
        out = Text()
        out.append(f"matches {c['matches_done']}/{c['matches']} done", style="bold")
        out.append(f" · {c['matches_failed']} failed · decisions {c['decisions']} "
                   f"({c['reused']} reused) · invalid {c['invalid']} · answer retries {c['retries']} · "
                   f"transport retries {c['transport_retries']} · failures {c['failures']} · "
                   f"tokens {_known(c['input_tokens'])}/{_known(c['output_tokens'])}"
                   f"{_unknown_note(c.get('tokens_unknown', 0))} · cost ${c['cost_usd']:.4f}",
                   style="dim")
        self.query_one("#an-counts", Static).update(out)

    def _show_experiment(self) -> None:
        assert self.report is not None
        run = self.report["run"]
        e = self.experiment
        title = Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"),
                              f" run {terminal_text(run['name'], markup=False, limit=NAME_WIDTH)} ",
                              (f"{run['id']} [{run['status']}]", "dim"))
        if e is None:
            title.append("   no finished matches yet", style="yellow")
            self.query_one("#an-title", Static).update(title)
            return
        n = len(self.report["experiments"])
        # the experiment's own number, as `coop-tui report` prints it; then where it is in the run
        where = f" ({self.index + 1} of {n})" if n > 1 else ""
        title.append(f"   experiment {e['experiment']}{where}: ", style="bold")
        title.append(terminal_text(f"{e['game']} / {e['mechanism']} ({e['matches']} matches, "
                                   f"{e['matchup']})", markup=False, limit=200))
        if e.get("b_star") is not None:
            title.append(f"   b* = {e['b_star']:g}", style="bold yellow")
        self.query_one("#an-title", Static).update(title)
        self._plot_curves(e)
        self._show_payoffs(e)
        self._show_tournament(e)
        self._show_conditions(e)
        self._show_ballots(e)
        self._plot_evolution(e)

    # ------------------------------------------------------------ plots
    def _plot_curves(self, e: dict[str, Any]) -> None:
        curve = self.query_one("#an-curve", PlotextPlot)
        rounds = self.query_one("#an-rounds", PlotextPlot)
        series = curve_series(e)
        per_round = round_series(e)
        curve.display = bool(series)
        rounds.display = bool(per_round)
        self.query_one("#an-plots").display = bool(series or per_round)
        self.b_star_line = None
        if series:
            plt = curve.plt
            plt.clear_data()
            plt.clear_figure()
            for i, (label, xs, ys, ses) in enumerate(series):
                colour = COLOURS[i % len(COLOURS)]
                plt.plot(xs, ys, label=_label(label), color=colour, marker="braille")
                plt.error(xs, ys, yerr=ses, color=colour)
            if e.get("b_star") is not None:
                self.b_star_line = 100 * float(e["b_star"])
                plt.vline(self.b_star_line, "red")
                plt.text(f" b*={e['b_star']:g}", self.b_star_line + 1, 0.93, color="red")
            plt.xlim(0, 100)
            plt.ylim(0, 1.05)
            plt.xlabel("similarity (%)")
            plt.ylabel("cooperation")
            curve.refresh()
        if per_round:
            plt = rounds.plt
            plt.clear_data()
            plt.clear_figure()
            for i, (agent, xs, ys, ses) in enumerate(per_round):
                colour = COLOURS[i % len(COLOURS)]
                plt.plot(xs, ys, label=_label(agent), color=colour, marker="braille")
                plt.error(xs, ys, yerr=ses, color=colour)
            last = int(max(max(xs) for _, xs, _, _ in per_round))
            step = max(1, (last + 9) // 10)
            plt.xticks(list(range(1, last + 1, step)))
            plt.xlim(1, max(last, 2))
            plt.ylim(0, 1.05)
            plt.xlabel("round")
            plt.ylabel("cooperation")
            rounds.refresh()

    # ------------------------------------------------------------ tables
    def _show_payoffs(self, e: dict[str, Any]) -> None:
        """The payoff table of every game the experiment plays (one per game spec)."""
        widget = self.query_one("#an-payoff", PayoffTable)
        specs = e.get("game_specs") or ([e["game_spec"]] if e.get("game_spec") else [])
        widget.border_title = "Payoff table" if len(specs) <= 1 else f"Payoff tables ({len(specs)} games)"
        if not specs:
            widget.show(None, "the game of this experiment was not stored")
            return
        from coop_tui.games import game_from_spec

        games, problems = [], []
        for spec in specs:
            try:
                games.append(game_from_spec(spec))
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(f"cannot rebuild the game: {exc}")
        widget.show_games(games, "; ".join(problems))

    def _show_tournament(self, e: dict[str, Any]) -> None:
        views = tournament_views(e)
        box = self.query_one("#an-matchup-box")
        population = self.query_one("#an-population", DataTable)
        if not views:
            box.display = False
            population.display = False
            return
        self.tournament_index %= len(views)
        label, t = views[self.tournament_index]
        suffix = f" · {label}" if label and label != "-" else ""
        if len(views) > 1:
            suffix += f" ({self.tournament_index + 1}/{len(views)}, t: next)"
        matrix = t.get("matchup_matrix")
        table = self.query_one("#an-matchup", DataTable)
        table.clear(columns=True)
        box.display = True
        box.border_title = plain("Matchup matrix (row agent's mean payoff)" + shorten(suffix, 100))
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
        welfare = Text()
        if t.get("normalised_welfare") is not None:
            welfare.append(f"normalised welfare {t['normalised_welfare']:.3f} (uniform population)"
                           f" · {t.get('normalised_welfare_final', 0) or 0:.3f} (after dynamics)",
                           style="dim")
        if t.get("note"):
            welfare.append(f"  {terminal_text(t['note'], markup=False)}", style="yellow")
        self.query_one("#an-welfare", Static).update(welfare)
        population.clear()
        pop = t.get("population")
        population.display = bool(pop)
        population.border_title = plain("Population metrics" + shorten(suffix, 100))
        for agent, m in (pop or {}).items():
            population.add_row(
                widget_text(agent, "bold", limit=NAME_WIDTH),
                Text(_num(m.get("mean_payoff"), 4), justify="right"),
                Text(_num(m.get("fitness"), 4), justify="right"),
                Text(_num(m.get("final_share"), 3), justify="right"),
                Text(_num(m.get("deviation_rating"), 4), justify="right"), key=agent,
            )

    def _show_conditions(self, e: dict[str, Any]) -> None:
        table = self.query_one("#an-conditions", DataTable)
        table.clear()
        for cond in e["conditions"]:
            label = cond.get("label", cond["condition_key"])
            for agent, a in sorted(cond["agents"].items()):
                w = a.get("coop_wilson")
                table.add_row(
                    widget_text(label, limit=NAME_WIDTH), widget_text(agent, limit=NAME_WIDTH),
                    Text(str(a["n"]), justify="right"),
                    Text(_pct(a["coop_rate"]), justify="right"),
                    Text(_pct(a["coop_se"]), justify="right"),
                    Text("-" if not w else f"[{100 * w[0]:.1f}, {100 * w[1]:.1f}]", justify="right"),
                    Text(_pct(a["sampled_coop_rate"]), justify="right"),
                    Text(_num(a["mean_payoff"]), justify="right"),
                    Text(_num(a["payoff_se"]), justify="right"),
                )

    def _show_ballots(self, e: dict[str, Any]) -> None:
        """Vote and adoption rates, and how often an agent's designs sustain cooperation."""
        assert self.report is not None
        mech = self.report.get("mechanisms") or {}
        votes = [v for v in mech.get("votes", []) if v["experiment"] == e["experiment"]]
        stable = {
            (d["agent"], d["condition"]): d["stable_rate"]
            for d in mech.get("design_stability", []) if d["experiment"] == e["experiment"]
        }
        table = self.query_one("#an-ballots", DataTable)
        table.clear()
        table.display = bool(votes)
        for v in votes:
            last = v.get("sign_rate", v.get("delegate_rate"))
            table.add_row(
                widget_text(v["agent"], limit=NAME_WIDTH), widget_text(v["condition"], limit=NAME_WIDTH),
                *(Text(x, justify="right") for x in (
                    str(v["proposals"]), str(v["adopted"]), _pct(v["approval_share"]),
                    _pct(v["approve_rate"]), _pct(v["own_approved_rate"]),
                    _pct(stable.get((v["agent"], v["condition"]))), _pct(last),
                )),
            )

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

    def action_compare(self) -> None:
        """This run against another (of this database or another file), per condition."""
        self.app.push_screen(CompareScreen(self.store, self.run_id))

    def action_export(self, fmt: str) -> None:
        raw = self.query_one("#an-export-dir", Input).value.strip()
        if not raw:
            self.notify("type a directory to export to", severity="warning", timeout=3)
            return
        self.export_dir = Path(raw).expanduser()
        self._export_status(Text(f"exporting {fmt} to {self.export_dir}…", style="yellow"))
        self._export(fmt, self.export_dir)

    @on(Button.Pressed, "#an-csv")
    def _csv(self) -> None:
        self.action_export("csv")

    @on(Button.Pressed, "#an-parquet")
    def _parquet(self) -> None:
        self.action_export("parquet")

    @work(thread=True, exclusive=True, group="export")
    def _export(self, fmt: str, out: Path) -> None:
        try:
            paths = export_run(self.store.path, self.run_id, out, fmt)
        except Exception as exc:  # a missing engine, a read-only folder: say so on screen
            if isinstance(exc, ExportError):
                reason = str(exc)
            elif isinstance(exc, OSError):
                reason = f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
            else:
                reason = f"{type(exc).__name__}: {exc}"
            self.from_worker(
                self._export_status, widget_text(f"✗ export failed: {reason}", "bold red"))
            return
        self.from_worker(self._exported, paths)

    def _exported(self, paths: list[Path]) -> None:
        self.exported = list(paths)
        names = ", ".join(p.name for p in paths)
        self._export_status(Text(f"✓ wrote {names} to {paths[0].parent if paths else self.export_dir}",
                                 style="green"))

    def _export_status(self, text: Text) -> None:
        self.query_one("#an-export-status", Static).update(text)


def _label(name: str) -> str:
    """A plot legend's name: plotext draws it as given."""
    return terminal_text(name, markup=False, limit=NAME_WIDTH)


def _known(value: Any) -> str:
    """A token total, or "unknown" when no server sent one (never a silent 0)."""
    return "unknown" if value is None else str(value)


def _unknown_note(n: int) -> str:
    return f" (unknown for {n} decisions)" if n else ""
