"""What each event of a match does to the live screen: the seat panes, the timeline, the
tournament table, the title and the play-mode bar.

A frame's events arrive as one batch (the screen drains its queue on a timer). Streamed
text is merged per seat into one write; every other event is applied in order, after
the text before it, by its ``_on_<Event>`` handler (an event without one changes
nothing on screen), as the store's writer handles the same events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text

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
from coop_tui.screens.live.title import LiveTitle
from coop_tui.screens.tournament import TournamentView
from coop_tui.screens.widgets import SeatPane, Timeline, distribution_text
from coop_tui.session import HumanTurn, prompt_text
from coop_tui.terminal import terminal_text, widget_text

if TYPE_CHECKING:
    from coop_tui.screens.live.screen import LiveScreen

Handler = Callable[[Any], Awaitable[None]]


class LiveFeed:
    """Applies a session's events to the live screen's widgets, one frame's batch at a time.

    In play mode (a person at a seat, not a replay) moves are simultaneous: the
    co-players' answers stay hidden until the person has moved (``hide_others``)."""

    def __init__(self, screen: LiveScreen) -> None:
        self.screen = screen
        self.session = screen.session
        self.match_index = 0
        self.decisions = 0
        self.hide_others = "human" in self.session.seat_kinds and self.session.kind != "replay"
        """Play mode: co-players' answers stay hidden until the person has moved."""
        self._hidden: list[tuple[SeatPane, Any, Text | None]] = []
        self._handlers: dict[type, Handler | None] = {}

    # ------------------------------------------------------------ a frame's batch
    async def apply_batch(self, events: list[Event]) -> None:
        """Streamed text merged into one write per seat and kind; any other event applied
        after the text of its seat (all seats' for an event without one) that came before."""
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
            await self.apply(event)
        await flush()

    async def _write(self, seat: int, text: str, *, reasoning: bool) -> None:
        if seat >= len(self.session.seat_names):
            return
        pane = self.screen.pane(seat)
        block = pane.current
        if block is None:
            block = await pane.new_block("…")
        if reasoning:
            block.add_reasoning(text)
        else:
            await block.add_text(text)

    async def apply(self, event: Event) -> None:
        handler = self._handler(type(event))
        if handler is not None:
            await handler(event)

    def _handler(self, kind: type) -> Handler | None:
        """The ``_on_<Event>`` method of the event's class or nearest base, looked up once."""
        try:
            return self._handlers[kind]
        except KeyError:
            found = next((h for h in (getattr(self, f"_on_{k.__name__}", None) for k in kind.__mro__)
                          if h is not None), None)
            self._handlers[kind] = found
            return found

    @property
    def timeline(self) -> Timeline:
        return self.screen.query_one(Timeline)

    def _tournament(self, event: RoundDone | PhaseDone) -> None:
        """A team tournament's table counts rounds and phases too."""
        if getattr(self.session, "mechanism", "") == "teams":
            self.screen.query_one("#tournament", TournamentView).apply(event)

    def reveal(self) -> None:
        """Show the co-players' answers held back while a person was deciding."""
        for pane, block, status in self._hidden:
            block.display = True
            if status is not None and pane.current is block:
                pane.set_status(status)
        self._hidden.clear()

    # ------------------------------------------------------------ the events
    async def _on_MatchStarted(self, event: MatchStarted) -> None:  # noqa: N802
        self.match_index += 1
        self.screen.query_one("#live-title", LiveTitle).redraw()
        if self.match_index > 1:
            for pane in self.screen.panes:
                await pane.reset()
            self.timeline.reset()

    async def _on_DecisionStarted(self, event: DecisionStarted) -> None:  # noqa: N802
        pane = self.screen.pane(event.seat)
        header = f"Round {event.round} · {event.phase}"
        if event.attempt > 1:
            header += f" · attempt {event.attempt}"
        prompt = None
        if pane.agent_kind == "human":
            prompt = prompt_text(event.messages[-1:] if event.attempt > 1 else event.messages)
        block = await pane.new_block(header, prompt)
        pane.set_status(Text(f"thinking · round {event.round} {event.phase}", style="yellow"))
        self.timeline.started(event.round, event.phase)
        if self.hide_others and pane.agent_kind != "human":
            # moves are simultaneous: a person must not read the co-player's answer first
            block.display = False
            self._hidden.append((pane, block, None))

    async def _on_StreamRestarted(self, event: StreamRestarted) -> None:  # noqa: N802
        block = self.screen.pane(event.seat).current
        if block is not None:
            await block.clear_text(f"stream restarted: {event.reason}")

    async def _on_AnswerRejected(self, event: AnswerRejected) -> None:  # noqa: N802
        pane = self.screen.pane(event.seat)
        if pane.current is not None:
            await pane.current.finish()
            pane.current.add_note(
                widget_text(f"✗ attempt {event.attempt} rejected: {event.reason} — asking again",
                            "bold yellow")
            )
        pane.set_status(Text(f"answer rejected (attempt {event.attempt})", style="yellow"))

    async def _on_DecisionDone(self, event: DecisionDone) -> None:  # noqa: N802
        d = event.decision
        if d.seat >= len(self.session.seat_names):
            return
        self.decisions += 1
        pane = self.screen.pane(d.seat)
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
        if pane.agent_kind == "human" and not self.screen.session_waiting_any():
            self.reveal()

    async def _on_RoundDone(self, event: RoundDone) -> None:  # noqa: N802
        self._tournament(event)
        self.reveal()
        moves = event.info.get("moves") if isinstance(event.info, dict) else None
        if moves:  # a move-by-move game (strategic personalities): its moves, not placeholder actions
            moves = moves_text(moves)
        self.timeline.round_done(event.round, event.actions, event.payoffs, event.seats, moves)
        seats = event.seats or tuple(range(len(event.payoffs)))
        for pos, seat in enumerate(seats):
            if seat < len(self.session.seat_names):
                pane = self.screen.pane(seat)
                pane.total += event.payoffs[pos]
                if pane.current is not None:
                    pane.current.add_note(
                        widget_text(f"round {event.round}: "
                                    + (f"{moves}; got " if moves else f"played A{event.actions[pos]}, got ")
                                    + f"{event.payoffs[pos]:g} (total {pane.total:g})", "cyan")
                    )

    async def _on_PhaseDone(self, event: PhaseDone) -> None:  # noqa: N802
        self._tournament(event)
        self.reveal()
        self.timeline.phase_done(event.round, event.phase)

    async def _on_MatchDone(self, event: MatchDone) -> None:  # noqa: N802
        self.reveal()
        self.timeline.match_done(event.payoffs, event.status)
        for pane in self.screen.panes:
            if pane.current is not None:
                await pane.current.finish()
            seat = pane.seat
            if event.payoffs and seat < len(event.payoffs):
                pane.set_status(Text(f"match payoff {round(event.payoffs[seat], 3):g}", style="bold green"))
            elif event.status != "done":
                pane.set_status(Text(event.status, style="bold red"))
        if event.error:
            self.screen.notify(terminal_text(event.error, markup=False, limit=500),
                               title=f"match {event.status}", markup=False,
                               severity="error" if event.status == "failed" else "warning")
        self.screen.turn_over()
        if self.session.kind == "replay":
            self.session.status = "done" if event.status == "done" else event.status

    async def _on_RunDone(self, event: RunDone) -> None:  # noqa: N802
        if event.status == "failed" and event.error:
            self.session.error = event.error

    async def _on_HumanTurn(self, event: HumanTurn) -> None:  # noqa: N802
        self.screen.add_turn(event)
