"""The live match screen: one pane per seat, streaming, with timeline, payoffs and keys.

The screen subscribes to a session's event bus. The listener only appends events to a
queue (it may be called from an agent's worker thread); a frame timer drains the queue
and hands the batch to the :class:`~coop_tui.screens.live.feed.LiveFeed`, which merges
each seat's text deltas into one write per frame and applies structural events in
order. So a burst of thousands of tokens costs a few widget updates per frame and the
keyboard stays responsive. The status line (:class:`RunStatus`) shows the session's
progress. The same screen shows a replay (a :class:`ReplaySession`) and play mode (a
human seat answers through the :class:`HumanTurnBar`).
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.widget import MountError
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from coop_tui.events import Event
from coop_tui.screens.live.feed import LiveFeed
from coop_tui.screens.live.human import HumanTurnBar
from coop_tui.screens.live.status import RunStatus
from coop_tui.screens.live.title import LiveTitle
from coop_tui.screens.tournament import TournamentView
from coop_tui.screens.widgets import NavScreen, SeatPane, Timeline, optional_screen
from coop_tui.session import HumanTurn, Session
from coop_tui.terminal import terminal_text

FRAME = 1 / 30
HEAL = 0.2
"""How often a full repaint is considered after events were applied (see ``_heal``)."""


class LiveScreen(NavScreen):
    """Watch (or play) one match as it happens."""

    HELP_TITLE = "Live match"
    CSS_PATH = "../live.tcss"
    BINDINGS = [
        Binding("p", "pause", "Pause/resume"),
        Binding("s", "stop", "Stop"),
        Binding("i", "inspect", "Inspect"),
        Binding("r", "runs", "Runs"),
        Binding("a", "analysis", "Analysis"),
        Binding("left", "select(-1)", "Prev seat", show=False),
        Binding("right", "select(1)", "Next seat", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "back", "Back"),
        Binding("escape", "back", "Back", show=False),
    ]

    def __init__(self, session: Session, *, root: bool = False, autostart: bool = True) -> None:
        super().__init__()
        self.session = session
        self.root = root
        self.autostart = autostart
        self.queue: collections.deque[Event] = collections.deque()
        self.selected = 0
        self.feed = LiveFeed(self)
        self._unsubscribe: Any = None
        self._draining = False
        self._unpainted = False
        self._worker: Any = None
        self.processed = 0
        """Events applied so far (the benchmark waits on it)."""

    @property
    def decisions(self) -> int:
        """Decisions finished so far (the feed counts them)."""
        return self.feed.decisions

    @property
    def match_index(self) -> int:
        """Which of the session's matches is shown (1 for the first; 0 before it starts)."""
        return self.feed.match_index

    @property
    def turns(self) -> list[HumanTurn]:
        """The person's turns waiting for an answer, the one asked first."""
        return self.query_one(HumanTurnBar).turns

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        width = self.app.size.width if self.is_attached else None
        yield LiveTitle(self.session, width, id="live-title")
        yield Timeline(self.session.phases, len(self.session.seat_names), id="timeline")
        if getattr(self.session, "mechanism", "") == "teams":
            yield TournamentView(dict(self.session.condition), self.session.seat_names, id="tournament")
        with Grid(id="panes"):
            for seat, agent in enumerate(self.session.seat_names):
                kind = self.session.seat_kinds[seat] if seat < len(self.session.seat_kinds) else ""
                yield SeatPane(seat, agent, kind, id=f"seat-{seat}")
        yield HumanTurnBar(self.session_waiting, id="human-bar")
        yield RunStatus(self.session, self.feed, id="live-status")
        yield Footer()

    def on_mount(self) -> None:
        n = len(self.session.seat_names)
        grid = self.query_one("#panes", Grid)
        cols = n if n <= 3 else 2 if n == 4 else 3
        grid.styles.grid_size_columns = cols
        grid.styles.grid_size_rows = (n + cols - 1) // cols
        has_human = "human" in self.session.seat_kinds and self.session.kind != "replay"
        self.query_one("#human-bar").display = has_human
        rounds = self.session.condition.get("rounds")
        if getattr(self.session, "mechanism", "") == "teams":
            rounds = None  # per match; the timeline counts the tournament's rounds
        self.query_one(Timeline).total_rounds = rounds if isinstance(rounds, int) else None
        self._select(0)
        self._unsubscribe = self.session.bus.subscribe(self.queue.append)
        self.set_interval(FRAME, self._drain)
        self.set_interval(HEAL, self._heal)
        self._update_status()
        if self.autostart:
            self._worker = self.run_worker(self.session.run(), name="session", exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A session that crashed (not a failed match: those are events) is shown, not lost."""
        if event.worker.name == "session" and event.state == WorkerState.ERROR:
            error = event.worker.error
            self.session.status = "failed"
            self.session.error = f"{type(error).__name__}: {error}"
            self.notify(terminal_text(self.session.error, markup=False, limit=500),
                        title="the match could not run", severity="error", markup=False)
            self._update_status()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if not self.session.finished:
            self.session.stop()

    def on_resize(self) -> None:
        """A wider or narrower terminal may show more or fewer condition fields."""
        self.query_one("#live-title", LiveTitle).redraw()

    def pane(self, seat: int) -> SeatPane:
        return self.query_one(f"#seat-{seat}", SeatPane)

    @property
    def panes(self) -> list[SeatPane]:
        return list(self.query(SeatPane))

    def _update_status(self) -> None:
        self.query_one("#live-status", RunStatus).show()

    # ------------------------------------------------------------ event application
    async def _drain(self) -> None:
        if self._draining or not self.queue:
            return
        self._draining = True
        try:
            await self._apply_batch()
        except MountError:
            # the app is closing (Quit, a signal) and took the panes down under a batch that
            # was still writing into them: nothing is left to show it in
            if not getattr(self.app, "_exit", False) and self.is_attached:
                raise
        finally:
            self._draining = False

    async def _apply_batch(self) -> None:
        events: list[Event] = []
        while self.queue:
            events.append(self.queue.popleft())
        await self.feed.apply_batch(events)
        self.processed += len(events)
        self._unpainted = True
        self._update_status()

    def _heal(self) -> None:
        """Repaint the whole screen once no batch update is open.

        ``Markdown.append`` keeps an app-wide batch update open across awaits; a frame
        Textual composes during that window is dropped by the driver, so an update made
        meanwhile (a status line, the timeline) may never reach a real terminal. One full
        repaint after each burst of events, outside any batch, makes the screen whole.
        """
        for pane in self.panes:
            pane.follow()
        if self._unpainted and not getattr(self.app, "_batch_count", 0):
            self._unpainted = False
            self.refresh()

    # ------------------------------------------------------------ the human seat
    def add_turn(self, turn: HumanTurn) -> None:
        """A person's turn came: asked in the bar (when it is the first waiting)."""
        self._your_move(self.query_one(HumanTurnBar).add(turn))

    def turn_over(self) -> None:
        """A turn was answered or the match ended: the next turn, or why none is asked."""
        self._your_move(self.query_one(HumanTurnBar).turn_over(self._match_over))

    def _your_move(self, turn: HumanTurn | None) -> None:
        if turn is not None:
            self.pane(turn.seat).set_status(
                Text("your move — the prompt is in this pane", style="bold yellow"))

    def _match_over(self) -> bool:
        return self.session.finished or self.query_one(Timeline).final is not None

    def session_waiting_any(self) -> bool:
        return bool(getattr(self.session, "waiting_for", []))

    def session_waiting(self, seat: int) -> bool:
        check = getattr(self.session, "human_request_pending", None)
        return bool(check and check(seat))

    @on(HumanTurnBar.Answered)
    def _answered(self, event: HumanTurnBar.Answered) -> None:
        if not self.query_one(HumanTurnBar).answered(event.turn):
            return
        if self.session_waiting(event.turn.seat):
            self.session.answer(event.turn.seat, event.answer)  # type: ignore[attr-defined]
        self.turn_over()

    # ------------------------------------------------------------ actions
    def _select(self, seat: int) -> None:
        panes = self.panes
        if not panes:
            return
        self.selected = seat % len(panes)
        for pane in panes:
            pane.set_class(pane.seat == self.selected, "-selected")

    def action_select(self, step: int) -> None:
        self._select(self.selected + step)

    def on_descendant_focus(self, event: Any) -> None:
        widget = getattr(event, "widget", None)
        if isinstance(widget, SeatPane):
            self._select(widget.seat)

    def action_pause(self) -> None:
        if self.session.finished:
            return
        paused = self.session.toggle_pause()
        self.notify("paused: the next decision waits" if paused else "resumed", timeout=2)
        self._update_status()

    def action_stop(self) -> None:
        if self.session.finished:
            self.notify("the match is over", timeout=2)
            return
        self.session.stop()
        self.notify("stopping: no new decision will start", timeout=2)
        self._update_status()

    def action_inspect(self) -> None:
        pane = self.pane(self.selected)
        decision = pane.last_decision
        if decision is None:
            self.notify(f"seat {self.selected + 1} has no finished decision yet", timeout=3)
            return
        screen = optional_screen("inspector", "InspectorScreen")
        if screen is None:
            self.notify("the decision inspector is not installed", severity="warning")
            return
        decision_id = self.session.decision_id(decision.cache_key, decision)
        if decision_id is None:
            self.notify("this decision is not in the database", severity="warning")
            return
        self.app.push_screen(screen(self.session.store, decision_id))

    def action_runs(self) -> None:
        screen = optional_screen("runs", "RunsScreen")
        if screen is None:
            self.notify("the runs screen is not installed", severity="warning")
            return
        self.app.push_screen(screen(self.session.store))

    def action_analysis(self) -> None:
        screen = optional_screen("analysis", "AnalysisScreen")
        if screen is None:
            self.notify("the analysis screen is not installed", severity="warning")
            return
        if not self.session.run_id:
            self.notify("no run yet", timeout=2)
            return
        self.app.push_screen(screen(self.session.store, self.session.run_id))

    async def action_back(self) -> None:
        if not self.session.finished:
            self.session.stop()
        if self.root:
            self.app.exit(0)
        else:
            self.app.pop_screen()

    async def wait_finished(self) -> None:
        """Until the session is over and every event is on screen (tests, benchmarks)."""
        while not self.session.finished or self.queue or self._draining:
            await asyncio.sleep(FRAME / 2)
        settled = asyncio.get_running_loop().create_future()
        self.call_after_refresh(settled.set_result, None)
        await settled
        self._heal()
