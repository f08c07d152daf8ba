"""The watch screen: a headless sweep's dashboard, live, and the panes of its matches.

The numbers are a :class:`~coop_tui.watch.WatchState`: loaded from the database when
the screen opens, then kept up by the events the sweep publishes
(:func:`coop_tui.watch.follow`). Per experiment: matches done / running / failed of the
total, decisions and model calls, invalid-answer and retry rates, spend; above them the
spend against the budget, calls per minute and the ETA; beside them the cooperation so
far per condition, as a table and a curve that grows as matches finish.

Enter on a running match opens it in the live screen's own panes (a
:class:`~coop_tui.session.WatchSession` fed with that match's events); ``f`` follows:
it opens a running match and, when that one ends, the next. The screen never talks to a
provider and never writes the database.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot

from coop_tui.events import Event, MatchDone, MatchStarted
from coop_tui.screens.live import LiveScreen
from coop_tui.screens.widgets import NavScreen
from coop_tui.session import WatchSession
from coop_tui.terminal import NAME_WIDTH, terminal_text
from coop_tui.watch import WatchState, end_state, follow

REFRESH = 0.25
"""Seconds between repaints of the dashboard while events arrive."""


def _cell(text: Any, limit: int | None = NAME_WIDTH) -> str:
    return terminal_text(str(text), markup=False, limit=limit)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


class WatchScreen(NavScreen):
    """Attach to a running sweep (``coop-tui watch``, or Enter on a running run)."""

    HELP_TITLE = "Watch a sweep"
    DEFAULT_CSS = """
    WatchScreen #watch-title { height: 1; }
    WatchScreen #watch-head { height: 1; }
    WatchScreen #watch-experiments { height: auto; max-height: 12; }
    WatchScreen #watch-middle { height: 1fr; }
    WatchScreen #watch-conditions { width: 1fr; }
    WatchScreen #watch-curve { width: 1fr; }
    WatchScreen #watch-matches { height: 1fr; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open match"),
        Binding("f", "follow", "Follow"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "back", "Back"),
        Binding("escape", "back", "Back", show=False),
    ]

    def __init__(self, store: Any, run: dict[str, Any], *, root: bool = False) -> None:
        super().__init__()
        self.store = store
        self.run = run
        self.root = root
        self.state = WatchState(run, store.lease(run["id"]))
        self.following = False
        self.ended: set[str] = set()
        """Matches whose end an opened view has seen."""
        self.session: WatchSession | None = None
        self.live: LiveScreen | None = None
        self._dirty = True
        self.events = 0
        """Published events applied so far (tests wait on it)."""
        self.attached = asyncio.Event()
        """Set once the state is loaded and the stream followed (or found ended)."""
        self.finished = asyncio.Event()
        """Set once the sweep has ended or its process is gone."""

    def compose(self) -> ComposeResult:
        title = Text(" coop-tui ", style="bold reverse")
        title.append(" watch ", style="bold")
        title.append(f"run {_cell(self.run['id'])}  {_cell(self.run.get('name') or '', 80)}")
        yield Static(title, id="watch-title")
        yield Static("", id="watch-head")
        yield DataTable(id="watch-experiments", cursor_type="none", zebra_stripes=True)
        with Horizontal(id="watch-middle"):
            yield DataTable(id="watch-conditions", cursor_type="none")
            yield PlotextPlot(id="watch-curve")
        with Vertical(id="watch-matches"):
            yield DataTable(id="watch-running", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#watch-experiments", DataTable).add_columns(
            "experiment", "done", "running", "failed", "total", "decisions", "model calls",
            "invalid", "retries", "spend")
        self.query_one("#watch-conditions", DataTable).add_columns("condition", "cooperation", "moves")
        self.query_one("#watch-running", DataTable).add_columns("running match", "id")
        for table in ("#watch-experiments", "#watch-conditions"):
            self.query_one(table, DataTable).can_focus = False  # Enter belongs to the matches
        self.query_one("#watch-running", DataTable).focus()
        self.set_interval(REFRESH, self._repaint)
        self.run_worker(self._watch(), name="watch", exit_on_error=False)

    # ------------------------------------------------------------ the stream
    async def _watch(self) -> None:
        await asyncio.to_thread(self._load)
        self._dirty = True
        self._repaint()
        self.attached.set()
        async for item in follow(self.store, self.state):
            self.events += 1
            self._dirty = True
            if isinstance(item, Event):
                self._route(item)
        self._dirty = True
        self._repaint()
        if self.state.status == "gone":
            self.notify(f"sweep process is gone: {end_state(self.store, self.state.run_id)[1]}",
                        severity="error", timeout=10)
        self.finished.set()

    def _load(self) -> None:
        with self.store_open() as open_:
            if open_:
                self.state.load(self.store)

    def _route(self, event: Event) -> None:
        """Hand the open match its events; in follow mode, move on when it ends."""
        mid = getattr(event, "match_id", None)
        if mid is None and hasattr(event, "decision"):
            mid = event.decision.match_id  # type: ignore[attr-defined]
        if self.session is not None and mid == self.session.match_id:
            self.session.feed(event)  # its end reaches _session_event
        elif isinstance(event, MatchStarted) and self.following and self.session is None:
            self.call_later(self._follow_next)

    # ------------------------------------------------------------ showing it
    def _repaint(self) -> None:
        if not self._dirty or not self.is_attached:
            return
        self._dirty = False
        state, now = self.state, time.monotonic()
        head = Text(state.headline(now), style={"running": "bold", "ended": "bold cyan",
                                                "gone": "bold red"}.get(state.status, "yellow"))
        self.query_one("#watch-head", Static).update(head)
        exps = self.query_one("#watch-experiments", DataTable)
        exps.clear()
        for _index, exp in sorted(state.experiments.items()):
            invalid, retries = state.rates(exp)
            exps.add_row(_cell(exp.name, 40), str(exp.done), str(exp.running), str(exp.failed),
                         str(exp.total or "?"), str(exp.decisions), str(exp.calls),
                         _pct(invalid), _pct(retries), f"${exp.cost:.4f}")
        conds = self.query_one("#watch-conditions", DataTable)
        conds.clear()
        labels = state.labels()  # what tells the conditions apart comes first: cut last
        for key, c in sorted(state.conditions.items()):
            conds.add_row(_cell(labels[key], 48), _pct(c.rate), str(c.counted))
        self._plot(labels)
        running = self.query_one("#watch-running", DataTable)
        keys = [str(k.value) for k in running.rows]
        if keys != list(state.running):
            running.clear()
            for mid, info in state.running.items():
                running.add_row(_cell(state.match_label(info, labels), 110), mid[:12], key=mid)

    def _plot(self, labels: dict[tuple[int, str], str]) -> None:
        plot = self.query_one("#watch-curve", PlotextPlot).plt
        plot.clear_data()
        plot.title("cooperation so far, per finished match")
        plot.ylim(-0.05, 1.4)  # a rate of 0 or 1 clear of the frame; the legend above 1
        for key, c in sorted(self.state.conditions.items()):
            if c.curve:
                plot.plot(list(range(1, len(c.curve) + 1)), c.curve, label=_cell(labels[key], 30))
        self.query_one("#watch-curve", PlotextPlot).refresh()

    # ------------------------------------------------------------ match panes
    def open_match(self, match_id: str) -> LiveScreen:
        """Show one running match in the live screen's panes."""
        self.session = WatchSession(self.store, match_id)
        self.session.bus.subscribe(self._session_event)
        self.live = LiveScreen(self.session)
        self.app.push_screen(self.live)
        return self.live

    def _session_event(self, event: Event) -> None:
        """The open match's end, streamed or (when it ended before it was opened) read
        from the database: in follow mode, move on."""
        if isinstance(event, MatchDone):
            self.ended.add(event.match_id)
            if self.following:
                self.call_later(self._follow_next)

    def _next_running(self) -> str | None:
        """The first running match not seen to end (the dashboard may still list one
        whose end it has not read: following must not reopen it)."""
        return next((mid for mid in self.state.running if mid not in self.ended), None)

    def _follow_next(self) -> None:
        if self.live is not None and self.app.screen is self.live:
            self.app.pop_screen()
        self.session = self.live = None
        following = self._next_running() if self.following else None
        if following is not None:
            self.open_match(following)

    def on_screen_resume(self) -> None:
        """Back from a match's panes: that match is no longer fed."""
        if self.live is not None and self.app.screen is self:
            self.session = self.live = None
            self.following = False

    @on(DataTable.RowSelected, "#watch-running")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.open_match(str(event.row_key.value))

    def action_open(self) -> None:
        table = self.query_one("#watch-running", DataTable)
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
            self.open_match(str(key.value))

    def action_follow(self) -> None:
        self.following = True
        following = self._next_running()
        if following is None:
            self.notify("following: the next match to start opens", timeout=3)
            return
        self.open_match(following)

    def action_back(self) -> None:
        if self.root:
            self.app.exit(0)
        else:
            self.app.pop_screen()
