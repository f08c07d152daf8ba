"""Widgets shared by the setup, live and replay screens: payoff table, seat pane, timeline.

A seat pane is a scrolling log of decision blocks. Each block streams one attempt's text
into a ``Markdown`` widget through ``Markdown.get_stream`` (Textual merges fast appends),
keeps provider reasoning in a dimmed block of its own, and ends with the parsed answer
and the sampled action. Widgets only render; they never talk to the engine.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Markdown, Static

from coop_tui.terminal import NAME_WIDTH, shorten, terminal_text, widget_text

MAX_BLOCKS = 40
"""Older decision blocks are dropped from a pane (the store keeps everything)."""


def plain(text: str) -> Content:
    """A title built from stored names or typed text, shown as written: Textual reads a
    plain string as markup, where a name like ``[/]`` is an error and ``[red]`` a style."""
    return Content(terminal_text(text, markup=False))


def _fmt(x: float) -> str:
    return f"{x:g}"


def payoff_table(game: Any, *, labels: bool = True) -> Table | Text:
    """The game's payoff table: a bimatrix for two players, one row per profile otherwise.

    A game played move by move (the strategic personalities paper's numeric and sequential games) has no table:
    its rules and each seat's moves are shown instead."""
    from coop_tui.games.kinds import ProtocolGame

    if isinstance(game, ProtocolGame):
        out = Text(game.rules + "\n")
        for seat, (role, moves) in enumerate(zip(game.roles, game.action_names, strict=False)):
            out.append(f"\nP{seat + 1} {role}: ", style="bold")
            out.append(moves[0])
        out.append(f"\n{game.rounds} round(s)", style="dim")
        return out
    names = game.action_names
    if game.n_players == 2:
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1), expand=False)
        table.add_column("P1 \\ P2", style="bold")
        for j, name in enumerate(names[1]):
            table.add_column(widget_text(f"A{j} {name}" if labels else name, limit=NAME_WIDTH),
                             justify="center")
        for i, name in enumerate(names[0]):
            cells = [
                f"{_fmt(game.payoffs[i, j, 0])}, {_fmt(game.payoffs[i, j, 1])}"
                for j in range(len(names[1]))
            ]
            table.add_row(widget_text(f"A{i} {name}" if labels else name, limit=NAME_WIDTH), *cells)
        return table
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1), expand=False)
    for seat in range(game.n_players):
        table.add_column(f"P{seat + 1}", justify="center")
    table.add_column("payoffs", justify="left")
    rows = game.describe_payoffs()
    shown = rows[:24]
    for profile, pay in shown:
        table.add_row(*(f"A{a}" for a in profile), ", ".join(_fmt(p) for p in pay))
    if len(rows) > len(shown):
        table.add_row(*(["…"] * game.n_players), f"{len(rows) - len(shown)} more profiles")
    return table


DEFAULT_SCREEN_ID = "_default"
"""The id of the blank screen Textual's ``App`` starts with (``App.get_default_screen``)."""


class NavScreen(Screen):
    """Help and back behave the same on every screen: back pops, or quits at the root."""

    async def action_help(self) -> None:
        # help is the app's action (the help screen lists every screen's keys, so it sits
        # above them all); a screen only forwards the key
        await self.app.run_action("app.help")

    @contextlib.contextmanager
    def store_open(self) -> Iterator[bool]:
        """Around a thread worker's reads of the store: False once the app is closing (the
        worker then returns without reading); while it is True the app keeps the
        connection open, since closing it under another thread's query crashes SQLite."""
        reader = getattr(self.app, "reader", None)
        if reader is None:  # an app without a store of its own
            yield True
            return
        with reader() as open_:
            yield open_

    def from_worker(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` on the app's thread, for a thread worker that has read
        what the screen shows. By then the screen may be going away (closed, or the app
        shutting down): the callback is then skipped, or its missing widget ignored. A
        widget missing from a screen still shown stays an error."""

        async def guarded() -> None:
            if self.leaving():
                return
            try:
                result = callback(*args)
                if inspect.isawaitable(result):
                    await result
            except NoMatches:
                if not self.leaving():
                    raise

        self.app.call_from_thread(guarded)

    def leaving(self) -> bool:
        """True once this screen's widgets may be going away: the screen was removed, its
        message loop stopped, or the app is shutting down. Work that finishes after that
        (a worker, a callback from a thread) has nothing left to write to."""
        return not (self.app.is_running and self.is_attached and self.is_running) or self.closing()

    def closing(self) -> bool:
        """True once the app is shutting down: a read that failed then was interrupted."""
        return bool(getattr(self.app, "closing", False))

    def action_back(self) -> None:
        stack = self.app.screen_stack
        # Textual keeps its empty default screen under the first pushed one: popping down
        # to it left a blank terminal and a running process (Esc on the setup screen).
        if len(stack) > 1 and stack[-2].id != DEFAULT_SCREEN_ID:
            self.app.pop_screen()
        else:
            self.app.exit(0)


class PayoffTable(Static):
    """A ``Static`` showing :func:`payoff_table` for a game (or a message when none)."""

    def show(self, game: Any | None, message: str = "") -> None:
        if game is None:
            self.update(Text(message or "no game", style="dim"))
            return
        title = Text.assemble((terminal_text(game.title, markup=False), "bold"), "  ",
                              (_game_summary(game), "dim"))
        self.update(Group(title, payoff_table(game)))

    def show_games(self, games: list[Any], message: str = "") -> None:
        """Each game's title and table, one under the other (a multi-game experiment)."""
        if len(games) <= 1:
            self.show(games[0] if games else None, message)
            return
        parts: list[Any] = []
        for i, game in enumerate(games):
            if i:
                parts.append(Text(""))
            parts.append(Text.assemble((terminal_text(game.title, markup=False), "bold"), "  ",
                                       (_game_summary(game), "dim")))
            parts.append(payoff_table(game))
        if message:
            parts.append(Text(message, style="dim yellow"))
        self.update(Group(*parts))


def _game_summary(game: Any) -> str:
    parts = [f"{game.n_players} players"]
    coop = [sorted(c) for c in game.cooperative]
    if coop and coop[0]:
        parts.append("cooperate = " + "/".join(f"A{a}" for a in coop[0]))
    if game.defect and game.defect[0] is not None:
        parts.append(f"defect = A{game.defect[0]}")
    return ", ".join(parts)


def distribution_text(decision: Any, game: Any | None = None) -> Text:
    """One line: the parsed distribution and the sampled action (or why there is none)."""
    out = Text()
    if decision.kind in ("mixed", "choice") and decision.distribution is not None:
        for a, p in enumerate(decision.distribution):
            style = "bold" if a == decision.action else ""
            out.append(f"A{a} {round(100 * p):d}%", style=style)
            out.append("  ")
        if decision.action is not None:
            name = ""
            if (game is not None and decision.seat < len(game.action_names)
                    and not getattr(game, "protocol", None)):  # option moves: labels say it
                names = game.action_names[decision.seat]
                if decision.action < len(names):
                    name = f" ({terminal_text(names[decision.action], markup=False)})"
            style = "bold green" if decision.cooperated else "bold red" if decision.cooperated is False else "bold"
            out.append("→ ", style="dim")
            out.append(f"A{decision.action}{name}", style=style)
    elif decision.valid:
        out.append(f"{decision.kind}: ", style="dim")
        out.append(terminal_text(_short(decision.parsed), markup=False))
    if not decision.valid:
        out.append(terminal_text(f"✗ no valid answer after {decision.attempts} attempt(s): "
                                 f"{decision.error}", markup=False), style="bold red")
    elif decision.normalisation:
        out.append(terminal_text(f"  ({decision.normalisation})", markup=False), style="dim yellow")
    if decision.reused:
        out.append("  reused", style="dim cyan")
    return out


def _short(value: Any, limit: int = 80) -> str:

    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DecisionBlock(Vertical):
    """One attempt of one decision: header, reasoning, streamed text, outcome notes."""

    DEFAULT_CSS = """
    DecisionBlock { height: auto; margin: 0 0 1 0; }
    DecisionBlock > .block-header { color: $text-muted; text-style: bold; height: 1; }
    DecisionBlock > .block-prompt { color: $text-muted; height: auto; border-left: thick $secondary; padding: 0 1; }
    DecisionBlock > .block-reasoning { color: $text-muted; text-style: italic; height: auto; border-left: thick $panel-lighten-2; padding: 0 1; }
    DecisionBlock > Markdown { height: auto; margin: 0; padding: 0; }
    DecisionBlock > .block-notes { height: auto; }
    """

    def __init__(self, header: str, prompt: str | None = None) -> None:
        super().__init__()
        self._header = header
        self._prompt = prompt
        self.reasoning_text = ""
        self.text = ""
        self.notes = Text()
        self._stream: Any = None
        # children are built here so streaming never has to query for them
        self.markdown = Markdown("")
        self._reasoning = Static("", classes="block-reasoning")
        self._reasoning.display = False
        self._notes = Static("", classes="block-notes")
        self._notes.display = False

    def compose(self) -> ComposeResult:
        yield Static(widget_text(self._header), classes="block-header")
        if self._prompt:
            yield Static(widget_text(self._prompt, lines=True), classes="block-prompt")
        yield self._reasoning
        yield self.markdown
        yield self._notes

    async def add_text(self, text: str) -> None:
        """A model's streamed text, as Markdown with its control characters shown."""
        if not text:
            return
        text = terminal_text(text, markup=False, lines=True)
        self.text += text
        if self._stream is None:
            self._stream = Markdown.get_stream(self.markdown)
        await self._stream.write(text)

    def add_reasoning(self, text: str) -> None:
        if not text:
            return
        self.reasoning_text += text
        self._reasoning.display = True
        self._reasoning.update(widget_text(self.reasoning_text, lines=True))

    async def clear_text(self, note: str) -> None:
        """A broken stream is being retried: its partial text is void."""
        await self.finish()
        self.text = ""
        await self.markdown.update("")
        self.add_note(widget_text(f"↻ {note}", "yellow"))

    def add_note(self, line: Text) -> None:
        if self.notes.plain:
            self.notes.append("\n")
        self.notes.append_text(line)
        self._notes.display = True
        self._notes.update(self.notes)

    async def finish(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()


class SeatPane(Vertical, can_focus=True):
    """Everything one seat's agent said during a match, newest at the bottom."""

    DEFAULT_CSS = """
    SeatPane { border: round $panel-lighten-2; height: 1fr; width: 1fr; padding: 0 0; }
    SeatPane:focus, SeatPane.-selected { border: round $accent; }
    SeatPane > .seat-status { height: 1; padding: 0 1; background: $boost; }
    SeatPane > VerticalScroll { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    """

    def __init__(self, seat: int, agent: str, kind: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.seat = seat
        self.agent = agent
        self.agent_kind = kind
        self.blocks: list[DecisionBlock] = []
        self.last_decision: Any = None
        self.total = 0.0
        self.status = Text("waiting", style="dim")

    def compose(self) -> ComposeResult:
        yield Static(self.status, classes="seat-status")
        yield VerticalScroll()

    def on_mount(self) -> None:
        self.border_title = plain(f"Seat {self.seat + 1} · {shorten(self.agent, NAME_WIDTH)}")

    def follow(self) -> None:
        """Keep the newest text in view once the log overflows.

        Textual's anchor keeps a log at its end until the user scrolls up (and again once
        they scroll back down); anchoring a log that does not overflow yet would push its
        few lines to the bottom, so it is anchored only from the first overflow on.
        """
        log = self.log
        if not log.is_anchored and log.virtual_size.height > log.scrollable_content_region.height:
            log.anchor()

    @property
    def log(self) -> VerticalScroll:
        return self.query_one(VerticalScroll)

    @property
    def current(self) -> DecisionBlock | None:
        return self.blocks[-1] if self.blocks else None

    def set_status(self, text: Text | str) -> None:
        self.status = text if isinstance(text, Text) else widget_text(text)
        self.query_one(".seat-status", Static).update(self.status)

    async def new_block(self, header: str, prompt: str | None = None) -> DecisionBlock:
        if self.current is not None:
            await self.current.finish()
        block = DecisionBlock(header, prompt)
        self.blocks.append(block)
        await self.log.mount(block)
        while len(self.blocks) > MAX_BLOCKS:
            old = self.blocks.pop(0)
            await old.finish()
            await old.remove()
        return block

    async def reset(self) -> None:
        for block in self.blocks:
            await block.finish()
        self.blocks.clear()
        await self.log.remove_children()
        self.log.anchor(False)
        self.last_decision = None
        self.total = 0.0
        self.set_status(Text("waiting", style="dim"))


class Timeline(Static):
    """Round / phase timeline with the last actions, payoffs and running totals."""

    def __init__(self, phases: Sequence[str], n_seats: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.phases = tuple(phases)
        self.n_seats = n_seats
        self.round = 0
        self.total_rounds: int | None = None
        self.phase = ""
        self.done_phases: set[str] = set()
        self.rounds: list[tuple[int, tuple[int, ...], tuple[float, ...], tuple[int, ...]]] = []
        self.totals = [0.0] * n_seats
        self.final: tuple[float, ...] | None = None
        self.status = "running"
        self.move_labels: dict[int, str] = {}
        """Per round, the moves of a move-by-move game (strategic personalities) shown instead of actions."""

    def on_mount(self) -> None:
        self.refresh_view()

    def reset(self, n_seats: int | None = None) -> None:
        if n_seats is not None:
            self.n_seats = n_seats
        self.round, self.phase = 0, ""
        self.done_phases.clear()
        self.rounds.clear()
        self.totals = [0.0] * self.n_seats
        self.final = None
        self.refresh_view()

    def started(self, round_: int, phase: str) -> None:
        if round_ != self.round:
            self.done_phases.clear()
        self.round, self.phase = round_, phase
        self.refresh_view()

    def phase_done(self, round_: int, phase: str) -> None:
        self.done_phases.add(phase)
        self.refresh_view()

    def round_done(self, round_: int, actions: Sequence[int], payoffs: Sequence[float],
                   seats: Sequence[int], moves: str | None = None) -> None:
        if moves:
            self.move_labels[round_] = moves
        seats = tuple(seats) or tuple(range(len(actions)))
        self.rounds.append((round_, tuple(actions), tuple(payoffs), seats))
        for seat, p in zip(seats, payoffs, strict=False):
            if seat < len(self.totals):
                self.totals[seat] += p
        self.done_phases.add("play")
        self.refresh_view()

    def match_done(self, payoffs: Sequence[float], status: str) -> None:
        self.final = tuple(payoffs) if payoffs else None
        self.status = status
        self.refresh_view()

    def render_text(self) -> Text:
        out = Text()
        rnd = f"Round {self.round}" + (f"/{self.total_rounds}" if self.total_rounds else "")
        out.append(rnd if self.round else "Round –", style="bold")
        if len(self.phases) > 1:
            out.append("  ")
            for i, ph in enumerate(self.phases):
                if i:
                    out.append(" → ", style="dim")
                style = "bold reverse" if ph == self.phase else "green" if ph in self.done_phases else "dim"
                out.append(ph, style=style)
        out.append("   totals ", style="dim")
        out.append("  ".join(f"P{s + 1} {_fmt(round(t, 3))}" for s, t in enumerate(self.totals)), style="bold")
        if self.final is not None:
            out.append("   match payoff ", style="dim")
            out.append("  ".join(f"P{s + 1} {_fmt(round(p, 3))}" for s, p in enumerate(self.final)), style="bold green")
        if self.rounds:
            out.append("\n")
            # the newest rounds, on one line even at 100 columns
            shown = self.rounds[-6:]
            if len(self.rounds) > len(shown):
                out.append("… ", style="dim")
            n_seats = len(self.totals)
            for r, actions, payoffs, seats in shown:
                seats = list(seats) if seats else list(range(len(actions)))
                order = sorted(range(len(actions)), key=lambda k: seats[k])
                out.append(f"R{r} ", style="dim")
                if len(seats) < n_seats:  # one pairing of a population (Reputation)
                    out.append("-".join(f"P{seats[k] + 1}" for k in order) + " ", style="dim")
                label = self.move_labels.get(r)
                out.append(label if label else "/".join(f"A{actions[k]}" for k in order))
                out.append(" ")
                out.append("(" + ",".join(_fmt(payoffs[k]) for k in order) + ")", style="dim")
                out.append("  ")
        return out

    def refresh_view(self) -> None:
        self.update(self.render_text())


def optional_screen(module: str, name: str) -> Any:
    """A screen class from a sibling module that may not be installed yet (None then)."""

    full = f"coop_tui.screens.{module}"
    try:
        mod = importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name == full:
            return None
        raise
    return getattr(mod, name, None)
