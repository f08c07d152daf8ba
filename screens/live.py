"""The live match screen: one pane per seat, streaming, with timeline, payoffs and keys.

The screen subscribes to a session's event bus. The listener only appends events to a
queue (it may be called from an agent's worker thread); a frame timer drains the queue,
merges each seat's text deltas into one write per frame and applies structural events
in order. So a burst of thousands of tokens costs a few widget updates per frame and the
keyboard stays responsive. The status line shows the session's progress: the time left
from model calls and their measured pace, the calls answered of those estimated, and
how many are in flight (:mod:`coop_tui.eta`, as the batch progress line). The same
screen shows a replay (a :class:`ReplaySession`) and play mode (a human seat answers
through the input bar).
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.widget import MountError
from textual.widgets import Footer, Input, Static
from textual.worker import Worker, WorkerState

from coop_tui.decisions import ASK_LEAVE
from coop_tui.engine import example_for
from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    Event,
    MatchDone,
    MatchStarted,
    PhaseDone,
    ReasoningDelta,
    RoundDone,
    RunDone,
    StreamRestarted,
    TextDelta,
)
from coop_tui.games.kinds import moves_text
from coop_tui.mechanisms import MechanismError, mechanism_class
from coop_tui.screens.tournament import TournamentView
from coop_tui.screens.widgets import (
    NavScreen,
    SeatPane,
    Timeline,
    distribution_text,
    optional_screen,
)
from coop_tui.session import HumanTurn, Session, human_answer, prompt_text
from coop_tui.terminal import terminal_text, widget_text

FRAME = 1 / 30
HEAL = 0.2
"""How often a full repaint is considered after events were applied (see ``_heal``)."""
ETA_TICK = 1.0
"""How often the status line's time left is redrawn while the session runs."""


TITLE_CONDITION_WIDTH = 72
"""A condition longer than this is never shown whole: only its changed fields."""
TITLE_LINES = 2
"""The title wraps to this many lines at most (live.tcss)."""


def condition_shown(mechanism: str, condition: dict[str, Any],
                    width: int = TITLE_CONDITION_WIDTH) -> dict[str, Any]:
    """The condition fields worth a title: every field set when they fit in ``width``
    characters (``similarity=80 framing=similar prompt=percentage_updated``: the reader
    sees the whole condition, defaults included), else only those set away from their
    default (a Team tournament has some twenty parameters; the title then shows what it
    changed)."""
    given = {k: v for k, v in condition.items() if v is not None}
    if len(condition_text(given)) <= width:
        return given
    try:
        fields = mechanism_class(mechanism).Params.model_fields if mechanism else {}
    except MechanismError:
        fields = {}
    return {k: v for k, v in given.items()
            if not (k in fields and not fields[k].is_required() and fields[k].default == v)}


def condition_text(condition: dict[str, Any]) -> str:
    return " ".join(f"{k}={_short(v)}" for k, v in condition.items())


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class LiveScreen(NavScreen):
    """Watch (or play) one match as it happens."""

    HELP_TITLE = "Live match"
    CSS_PATH = "live.tcss"
    _default_placeholder = "0 / 1 … for a pure action, or A0=70 A1=30; Enter confirms"
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
        self.decisions = 0
        self.turns: list[HumanTurn] = []
        self._unsubscribe: Any = None
        self._draining = False
        self._unpainted = False
        self._worker: Any = None
        self.hide_others = "human" in session.seat_kinds and session.kind != "replay"
        """Play mode: co-players' answers stay hidden until the person has moved."""
        self._hidden: list[tuple[SeatPane, Any, Text | None]] = []
        self.match_index = 0
        self.processed = 0
        """Events applied so far (the benchmark waits on it)."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="live-title")
        yield Timeline(self.session.phases, len(self.session.seat_names), id="timeline")
        if getattr(self.session, "mechanism", "") == "teams":
            yield TournamentView(dict(self.session.condition), self.session.seat_names, id="tournament")
        with Grid(id="panes"):
            for seat, agent in enumerate(self.session.seat_names):
                kind = self.session.seat_kinds[seat] if seat < len(self.session.seat_kinds) else ""
                yield SeatPane(seat, agent, kind, id=f"seat-{seat}")
        with Vertical(id="human-bar"):
            yield Static("", id="human-prompt")
            yield Input(placeholder=self._default_placeholder, id="human-input", disabled=True)
        yield Static("", id="live-status")
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
        self.set_interval(ETA_TICK, self._tick)
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

    def _title_text(self) -> Text:
        s = self.session
        out = Text()
        out.append(" coop-tui ", style="bold reverse")
        out.append(" replay " if s.kind == "replay" else " live ", style="bold")
        out.append(terminal_text(s.title, markup=False, limit=200))
        # the whole condition when it is short and fits in the title's two lines, else what
        # was changed (a team tournament's twenty parameters would fill the lines)
        room = TITLE_CONDITION_WIDTH
        if self.is_attached:
            room = min(room, TITLE_LINES * self.app.size.width - out.cell_len - 3)
        cond = condition_text(condition_shown(getattr(s, "mechanism", ""), s.condition, room))
        if cond:
            out.append(f"   {terminal_text(cond, markup=False)}", style="dim")
        return out

    def on_resize(self) -> None:
        """A wider or narrower terminal may show more or fewer condition fields."""
        self.query_one("#live-title", Static).update(self._title_text())

    def pane(self, seat: int) -> SeatPane:
        return self.query_one(f"#seat-{seat}", SeatPane)

    @property
    def panes(self) -> list[SeatPane]:
        return list(self.query(SeatPane))

    def _tick(self) -> None:
        """The ETA counts down between events (a long answer leaves no event for seconds)."""
        if not self.session.finished:
            self._update_status()

    def _update_status(self) -> None:
        s = self.session
        style = {"running": "bold green", "paused": "bold yellow", "done": "bold cyan",
                 "failed": "bold red", "stopped": "bold magenta"}.get(s.status, "bold")
        out = Text()
        out.append(f" {s.status} ", style=f"{style} reverse")
        progress = getattr(s, "progress", None)  # a replay has none: nothing is called
        if progress is not None:  # first: a narrow terminal cuts the line's end
            out.append(f"  {progress()}", style="cyan")
        if s.run_id:
            out.append(f"  run {s.run_id}", style="dim")
        total = getattr(s, "matches_total", 1)
        if total and total > 1:
            out.append(f"  match {max(self.match_index, 1)}/{total}", style="dim")
        out.append(f"  decisions {self.decisions}", style="dim")
        if s.status == "paused":
            out.append("  the next decision waits — p resumes", style="yellow")
        if s.error and s.status in ("failed", "stopped"):
            out.append(f"  {terminal_text(s.error, markup=False, limit=500)}", style="red")
        self.query_one("#live-status", Static).update(out)

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
        pending: dict[tuple[int, bool], list[str]] = {}

        async def flush(seat: int | None = None) -> None:
            for key in list(pending):
                if seat is not None and key[0] != seat:
                    continue
                chunks = pending.pop(key)
                await self._write(key[0], "".join(chunks), reasoning=key[1])

        for event in events:
            mid = getattr(event, "match_id", None)
            if isinstance(event, TextDelta | ReasoningDelta):
                if mid == self.session.match_id or self.session.match_id is None:
                    pending.setdefault((event.seat, isinstance(event, ReasoningDelta)), []).append(event.text)
                continue
            seat = getattr(event, "seat", None)
            if isinstance(event, DecisionDone):
                seat = event.decision.seat
            await flush(seat)
            await self._apply(event)
        await flush()
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

    async def _write(self, seat: int, text: str, *, reasoning: bool) -> None:
        if seat >= len(self.session.seat_names):
            return
        pane = self.pane(seat)
        block = pane.current
        if block is None:
            block = await pane.new_block("…")
        if reasoning:
            block.add_reasoning(text)
        else:
            await block.add_text(text)

    async def _apply(self, event: Event) -> None:
        timeline = self.query_one(Timeline)
        if isinstance(event, RoundDone | PhaseDone) and getattr(self.session, "mechanism", "") == "teams":
            self.query_one("#tournament", TournamentView).apply(event)
        if isinstance(event, MatchStarted):
            self.match_index += 1
            self.query_one("#live-title", Static).update(self._title_text())
            if self.match_index > 1:
                for pane in self.panes:
                    await pane.reset()
                timeline.reset()
            return
        if isinstance(event, DecisionStarted):
            pane = self.pane(event.seat)
            header = f"Round {event.round} · {event.phase}"
            if event.attempt > 1:
                header += f" · attempt {event.attempt}"
            prompt = None
            if pane.agent_kind == "human":
                prompt = prompt_text(event.messages[-1:] if event.attempt > 1 else event.messages)
            block = await pane.new_block(header, prompt)
            pane.set_status(Text(f"thinking · round {event.round} {event.phase}", style="yellow"))
            timeline.started(event.round, event.phase)
            if self.hide_others and pane.agent_kind != "human":
                # moves are simultaneous: a person must not read the co-player's answer first
                block.display = False
                self._hidden.append((pane, block, None))
        elif isinstance(event, StreamRestarted):
            block = self.pane(event.seat).current
            if block is not None:
                await block.clear_text(f"stream restarted: {event.reason}")
        elif isinstance(event, AnswerRejected):
            pane = self.pane(event.seat)
            if pane.current is not None:
                await pane.current.finish()
                pane.current.add_note(
                    widget_text(f"✗ attempt {event.attempt} rejected: {event.reason} — asking again",
                                "bold yellow")
                )
            pane.set_status(Text(f"answer rejected (attempt {event.attempt})", style="yellow"))
        elif isinstance(event, DecisionDone):
            d = event.decision
            if d.seat >= len(self.session.seat_names):
                return
            self.decisions += 1
            pane = self.pane(d.seat)
            if pane.current is None:
                await pane.new_block(f"Round {d.round} · {d.phase}")
            block = pane.current
            assert block is not None
            await block.finish()
            if not block.text and d.response and d.reused:
                await block.add_text(d.response)
                await block.finish()
            line = distribution_text(d, self.session.game)
            block.add_note(line)
            status = Text(f"R{d.round} {d.phase}: ", style="dim")
            status.append_text(line)
            hidden = [i for i, (_, b, _) in enumerate(self._hidden) if b is block]
            if hidden:
                self._hidden[hidden[0]] = (pane, block, status)
                pane.set_status(Text(f"R{d.round} {d.phase}: answered — shown once you have moved",
                                     style="dim"))
            else:
                pane.set_status(status)
            # set last, after the awaits above: whoever sees it sees the pane's block and
            # status for this decision too
            pane.last_decision = d
            if pane.agent_kind == "human" and not self.session_waiting_any():
                self._reveal()
        elif isinstance(event, RoundDone):
            self._reveal()
            moves = event.info.get("moves") if isinstance(event.info, dict) else None
            if moves:  # a move-by-move game (strategic personalities): its moves, not placeholder actions

                moves = moves_text(moves)
            timeline.round_done(event.round, event.actions, event.payoffs, event.seats, moves)
            seats = event.seats or tuple(range(len(event.payoffs)))
            for pos, seat in enumerate(seats):
                if seat < len(self.session.seat_names):
                    pane = self.pane(seat)
                    pane.total += event.payoffs[pos]
                    if pane.current is not None:
                        pane.current.add_note(
                            widget_text(f"round {event.round}: "
                                        + (f"{moves}; got " if moves else f"played A{event.actions[pos]}, got ")
                                        + f"{event.payoffs[pos]:g} (total {pane.total:g})", "cyan")
                        )
        elif isinstance(event, PhaseDone):
            self._reveal()
            timeline.phase_done(event.round, event.phase)
        elif isinstance(event, MatchDone):
            self._reveal()
            timeline.match_done(event.payoffs, event.status)
            for pane in self.panes:
                if pane.current is not None:
                    await pane.current.finish()
                seat = pane.seat
                if event.payoffs and seat < len(event.payoffs):
                    pane.set_status(Text(f"match payoff {round(event.payoffs[seat], 3):g}", style="bold green"))
                elif event.status != "done":
                    pane.set_status(Text(event.status, style="bold red"))
            if event.error:
                self.notify(terminal_text(event.error, markup=False, limit=500), title=f"match {event.status}",
                            severity="error" if event.status == "failed" else "warning", markup=False)
            self._turn_over()
            if self.session.kind == "replay":
                self.session.status = "done" if event.status == "done" else event.status
        elif isinstance(event, RunDone):
            if event.status == "failed" and event.error:
                self.session.error = event.error
        elif isinstance(event, HumanTurn):
            self.turns.append(event)
            self._show_turn()

    # ------------------------------------------------------------ the human seat
    def _show_turn(self) -> None:
        if not self.turns:
            return
        turn = self.turns[0]
        meanings = list(turn.request.options.get("meanings") or [])  # named options (strategic personalities)
        labels = ", ".join(
            f"{i} = {lab}" + (f" ({meanings[i]})" if i < len(meanings) else "")
            for i, lab in enumerate(turn.request.labels)
        )
        prompt = Text()
        prompt.append(f"Your move as Player {turn.seat + 1}", style="bold")
        prompt.append(f" (round {turn.request.round}, {turn.request.phase}). ", style="dim")
        if turn.request.options.get("talk"):  # a talk phase: the person writes a message
            opts = turn.request.options
            if opts["talk"] == "private":
                prompt.append("Type a player's number, a colon and your message for them only "
                              "(e.g. 2: let's both cooperate)")
            else:
                prompt.append("Type a message every other player reads")
            prompt.append(f" (at most {opts.get('chars')} characters), then Enter.")
        elif turn.request.kind == "number":
            opts = turn.request.options
            prompt.append(f"Type your {opts.get('name', 'number')} ", style="")
            prompt.append(f"({opts.get('min')} to {opts.get('max')})", style="bold")
            prompt.append(", then Enter.")
        elif turn.request.options.get(ASK_LEAVE):  # the super-additive cooperation paper: the move and leave or stay
            prompt.append(f"Actions: {labels}. Type your move, then ")
            prompt.append("leave", style="bold")
            prompt.append(" or ")
            prompt.append("stay", style="bold")
            prompt.append(" for after this round (e.g. ")
            prompt.append("0 stay", style="bold")
            prompt.append("), then Enter.")
        elif turn.request.kind == "choice":
            prompt.append(f"Keys: {labels}; or type one action label, then Enter.")
        elif turn.request.kind != "mixed":
            prompt.append("Type your answer as the prompt asks, e.g. ")
            prompt.append(example_for(turn.request.kind, turn.request.labels,
                                      dict(turn.request.options)), style="bold")
            prompt.append(", then Enter.")
        else:
            prompt.append(f"Keys: {labels}; or type percentages like ", style="")
            prompt.append(" ".join(f"{lab}={100 // max(1, len(turn.request.labels))}"
                                   for lab in turn.request.labels), style="bold")
            prompt.append(", then Enter.")
        if turn.request.kind in ("number", "choice", "mixed"):  # a shortcut, not the model's format
            prompt.append(" What you type is sent in the answer format the prompt asks of the "
                          "model.", style="dim")
        self.query_one("#human-prompt", Static).update(prompt)
        box = self.query_one("#human-input", Input)
        box.disabled = False
        box.value = ""
        if turn.request.kind == "number":
            box.placeholder = f"a number from {turn.request.options.get('min')} to {turn.request.options.get('max')}"
        elif turn.request.kind == "allocation":
            box.placeholder = ", ".join(f"{k}=…" for k in turn.request.options.get("keys") or ())
        elif turn.request.options.get(ASK_LEAVE):
            box.placeholder = "0 stay / 1 leave / A0=70 A1=30 stay; Enter confirms"
        elif turn.request.options.get("talk") == "private":
            box.placeholder = "2: your message; Enter sends"
        elif turn.request.options.get("talk"):
            box.placeholder = "your message; Enter sends"
        else:
            box.placeholder = self._default_placeholder
        box.focus()
        self.pane(turn.seat).set_status(Text("your move — the prompt is in this pane", style="bold yellow"))

    def _turn_over(self) -> None:
        self.turns = [t for t in self.turns if self.session_waiting(t.seat)]
        if self.turns:
            self._show_turn()
            return
        box = self.query_one("#human-input", Input)
        box.value = ""
        box.disabled = True
        over = self.session.finished or self.query_one(Timeline).final is not None
        message = "the match is over — q leaves" if over else "waiting for the other players…"
        self.query_one("#human-prompt", Static).update(Text(message, style="dim"))

    def _reveal(self) -> None:
        """Show the co-players' answers held back while a person was deciding."""
        for pane, block, status in self._hidden:
            block.display = True
            if status is not None and pane.current is block:
                pane.set_status(status)
        self._hidden.clear()

    def session_waiting_any(self) -> bool:
        return bool(getattr(self.session, "waiting_for", []))

    def session_waiting(self, seat: int) -> bool:
        check = getattr(self.session, "human_request_pending", None)
        return bool(check and check(seat))

    @on(Input.Submitted, "#human-input")
    def _submit_human(self, event: Input.Submitted) -> None:
        if not self.turns:
            return
        turn = self.turns[0]
        try:
            answer = human_answer(event.value, turn.request.labels, turn.request.kind,
                                  ask_leave=bool(turn.request.options.get(ASK_LEAVE)),
                                  options=dict(turn.request.options))
        except ValueError as exc:
            self.query_one("#human-prompt", Static).update(widget_text(f"✗ {exc}", "bold red"))
            return
        if self.session_waiting(turn.seat):
            self.session.answer(turn.seat, answer)  # type: ignore[attr-defined]
        self.turns.pop(0)
        self._turn_over()

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
