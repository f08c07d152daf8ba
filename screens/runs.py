"""The runs screen: every stored run and its matches, searchable; open, inspect, analyse.

The top table lists runs (newest first), the bottom one the highlighted run's matches.
The search box narrows both: plain words match any field of a run; ``game:``,
``mech:``, ``agent:``, ``date:``, ``kind:``, ``status:`` narrow a word to one field (the
field-qualified game / mechanism / agent / condition words also narrow the match list).
Every read is a :class:`~coop_tui.store.Store` method run in a thread worker, so a large
database never freezes the keyboard; the screen itself holds no SQL.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from coop_tui.errors import database_message
from coop_tui.protocols import shown_value
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.widgets import NavScreen, plain
from coop_tui.session import ReplaySession
from coop_tui.terminal import NAME_WIDTH, terminal_text, widget_text


def shown(name: str | None, limit: int | None = NAME_WIDTH) -> str:
    """A stored name for a table cell: control characters shown as escapes, never sent
    to the terminal (names come from sweep files and imports), cut to a cell's width."""
    return terminal_text(name or "", markup=False, limit=limit)

STATUS_STYLE = {
    "done": "green",
    "running": "yellow",
    "failed": "bold red",
    "stopped": "magenta",
}
ETA_TICK = 1.0
"""How often the status line of a run this app plays is redrawn (its time left moves)."""
MATCH_FIELDS = ("game:", "mech:", "mechanism:", "agent:", "model:", "strategy:", "cond:", "condition:")
"""Search words that also narrow the match list (run-level words would empty it)."""


def _status(value: str | None) -> Text:
    return Text(value or "-", style=STATUS_STYLE.get(value or "", ""))


def _payoffs(raw: str | None) -> str:
    if not raw:
        return "-"
    try:
        return " / ".join(f"{p:.3g}" for p in json.loads(raw))
    except (TypeError, ValueError):
        return raw


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def condition_labels(rows: list[dict[str, Any]]) -> tuple[list[str], str]:
    """Per match, the condition fields that differ between the listed matches; and the
    fields they all share (shown once, in the table title, instead of on every row)."""
    conditions = []
    for m in rows:
        try:
            conditions.append(json.loads(m.get("condition") or "{}"))
        except (TypeError, ValueError):
            conditions.append({})
    keys = sorted({k for c in conditions for k in c})
    varying = [k for k in keys
               if len({json.dumps(c.get(k), sort_keys=True) for c in conditions}) > 1]
    shared = [k for k in keys if k not in varying and conditions and conditions[0].get(k) is not None]
    labels = [" ".join(f"{k}={_value(shown_value(k, c.get(k)))}" for k in varying
                       if c.get(k) is not None) or "-"
              for c in conditions]
    common = (" ".join(f"{k}={_value(shown_value(k, conditions[0][k]))}" for k in shared)
              if conditions else "")
    return labels, common


def match_query(query: str) -> str:
    """The words of a search that apply to matches too."""
    return " ".join(w for w in query.split() if w.lower().startswith(MATCH_FIELDS))


def selected_key(table: DataTable) -> str | None:
    """The row key under a table's cursor (None for an empty table)."""
    if table.row_count == 0:
        return None
    row = min(max(table.cursor_row, 0), table.row_count - 1)
    key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
    return None if key is None else str(key)


class ConfirmScreen(ModalScreen[bool]):
    """A yes / no question; ``y`` or Enter on "Yes" confirms, ``n`` or Esc declines."""

    HELP_TITLE = "Delete a run"

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 70; max-width: 95%; height: auto; border: thick $error; background: $surface;
        padding: 1 2;
    }
    ConfirmScreen #confirm-text { height: auto; margin: 0 0 1 0; }
    ConfirmScreen Horizontal { height: auto; align: right middle; }
    ConfirmScreen Button { margin: 0 0 0 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel", show=False),
    ]

    def __init__(self, message: Text | str) -> None:
        super().__init__()
        self.message = message if isinstance(message, Text) else Text(message)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.message, id="confirm-text")
            with Horizontal():
                yield Button("No", id="no")
                yield Button("Yes, delete", id="yes", variant="error")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class RunsScreen(NavScreen):
    """Browse stored runs and matches; replay, inspect, analyse or delete them."""

    HELP_TITLE = "Runs"
    CSS_PATH = "runs.tcss"
    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("r", "open", "Replay match"),
        Binding("w", "watch", "Watch live"),
        Binding("d", "decisions", "Decisions"),
        Binding("a", "analysis", "Analysis"),
        Binding("x,delete", "delete", "Delete run"),
        Binding("f5", "reload", "Reload", show=False),  # in the help; the footer keeps esc Back
        Binding("tab", "switch", "Runs/matches", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("escape,q", "back", "Back"),
    ]

    def __init__(self, store: Any) -> None:
        super().__init__()
        self.store = store
        self.query_text = ""
        self.run_rows: dict[str, dict[str, Any]] = {}
        self.match_rows: dict[str, dict[str, Any]] = {}
        self.shown_run: str | None = None
        self.live: set[str] = set()
        """Runs a live process is playing and publishing (``watch`` opens them)."""
        self.loaded = 0
        """How many run lists have been shown (tests wait on it)."""
        self.matches_loaded = 0
        self._filter_timer: Any = None

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        title = Text.assemble((" coop-tui ", "bold reverse"), (" runs ", "bold"),
                              (f"  {self.store.path}", "dim"))
        yield Static(title, id="runs-title")
        yield Input(
            placeholder="search: words, or game: mech: agent: date: kind: status: (e.g. agent:tft date:2025-06)",
            id="runs-filter",
        )
        runs = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        runs.border_title = "Runs"
        yield runs
        matches = DataTable(id="matches-table", cursor_type="row", zebra_stripes=True)
        matches.border_title = "Matches"
        yield matches
        yield Static("", id="runs-status")
        yield Footer()

    def on_mount(self) -> None:
        runs = self.query_one("#runs-table", DataTable)
        runs.add_columns("id", "name", "kind", "status", "date", "matches", "decisions", "cost")
        matches = self.query_one("#matches-table", DataTable)
        matches.add_columns("#", "seats", "payoffs", "status", "game", "mechanism", "condition",
                            "decisions")
        runs.focus()
        self.action_reload()
        self.set_interval(ETA_TICK, self._tick)

    def _tick(self) -> None:
        """A run this app plays: its status line's time left counts down between events."""
        if self.playing(self.shown_run) is not None:
            self._describe_run(self.run_rows.get(self.shown_run or "", {"id": self.shown_run}))

    # ------------------------------------------------------------ loading
    def action_reload(self) -> None:
        self._load_runs(self.query_text)

    @work(thread=True, exclusive=True, group="runs")
    def _load_runs(self, query: str) -> None:
        with self.store_open() as open_:
            if not open_:
                return
            try:
                rows = self.store.run_summaries(query)
                live = self.store.live_runs()
            except (sqlite3.Error, OSError) as exc:  # damaged, truncated, locked, vanished file
                self.from_worker(self._database_failed, exc)  # not once the app closes
                return
        if not get_current_worker().is_cancelled:
            self.from_worker(self._show_runs, query, rows, live)

    def _show_runs(self, query: str, rows: list[dict[str, Any]], live: set[str] | None = None) -> None:
        table = self.query_one("#runs-table", DataTable)
        keep = selected_key(table)
        table.clear()
        self.run_rows = {r["id"]: r for r in rows}
        self.live = live or set()
        for r in rows:
            status = _status(r["status"])
            if r["id"] in self.live and r["status"] == "running":
                status = Text("● live", style="bold yellow")  # w (or Enter) watches it
            table.add_row(
                Text(r["id"]), Text(shown(r["name"])), Text(r["kind"] or ""), status,
                Text(r["date"] or ""), Text(str(r["matches"]), justify="right"),
                Text(str(r["decisions"]), justify="right"),
                Text(f"${r['cost_usd']:.4f}", justify="right"),
                key=r["id"],
            )
        table.border_title = plain(f"Runs ({len(rows)})" + (f" matching {query!r}" if query else ""))
        if keep in self.run_rows:
            table.move_cursor(row=table.get_row_index(keep))
        self.loaded += 1
        self._run_highlighted()

    def _run_highlighted(self) -> None:
        run_id = selected_key(self.query_one("#runs-table", DataTable))
        if run_id is None:
            self.shown_run = None
            self.match_rows = {}
            matches = self.query_one("#matches-table", DataTable)
            matches.clear()
            matches.border_title = "Matches"
            self._status(Text("no stored run" + (" matches the search" if self.query_text else "")
                              , style="dim"))
            self.matches_loaded += 1
            return
        self._load_matches(run_id, match_query(self.query_text))

    @work(thread=True, exclusive=True, group="matches")
    def _load_matches(self, run_id: str, query: str) -> None:
        with self.store_open() as open_:
            if not open_:
                return
            try:
                rows = self.store.match_summaries(run_id, query)
            except (sqlite3.Error, OSError) as exc:
                self.from_worker(self._database_failed, exc)  # not once the app closes
                return
        if not get_current_worker().is_cancelled:
            self.from_worker(self._show_matches, run_id, query, rows)

    def _show_matches(self, run_id: str, query: str, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#matches-table", DataTable)
        keep = selected_key(table) if run_id == self.shown_run else None
        table.clear()
        self.shown_run = run_id
        self.match_rows = {r["id"]: r for r in rows}
        labels, common = condition_labels(rows)
        for i, (m, label) in enumerate(zip(rows, labels, strict=True), start=1):
            table.add_row(
                Text(str(i), justify="right"), Text(shown(m["agents"], limit=2 * NAME_WIDTH) or "-"), Text(_payoffs(m["payoffs"])),
                _status(m["status"]), Text(m["game"] or ""), Text(m["mechanism"] or ""),
                Text(label), Text(str(m["decisions"]), justify="right"),
                key=m["id"],
            )
        if keep in self.match_rows:
            table.move_cursor(row=table.get_row_index(keep))
        run = self.run_rows.get(run_id, {})
        table.border_title = plain(f"Matches of {shown(run.get('name', run_id))} ({len(rows)})" + (
            f" matching {query!r}" if query else "") + (f" · {common}" if common else ""))
        self._describe_run(run)
        self.matches_loaded += 1

    def _describe_run(self, run: dict[str, Any]) -> None:
        out = Text()
        out.append(f"run {run.get('id', '?')}", style="bold")
        session = self.playing(run.get("id"))
        progress = getattr(session, "progress", None)
        if progress is not None:  # played by this app: its time left and model calls
            out.append(f"  {progress()}", style="cyan")
        keys = "  enter or r: replay match · d: decisions · a: analysis · x: delete run"
        if run.get("id") in self.live:
            keys = "  w or enter: watch it live ·" + keys[1:]
        out.append(keys, style="dim")
        if run.get("error"):
            out.append(f"  {shown(run['error'], limit=500)}", style="red")
        self._status(out)

    def _status(self, text: Text) -> None:
        self.query_one("#runs-status", Static).update(text)

    # ------------------------------------------------------------ events
    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value.strip()
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(0.15, self.action_reload)

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.action_reload()
        self.query_one("#runs-table", DataTable).focus()

    @on(DataTable.RowHighlighted, "#runs-table")
    def _runs_cursor(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and key != self.shown_run:
            self._load_matches(str(key), match_query(self.query_text))

    @on(DataTable.RowSelected, "#runs-table")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value in self.live:  # a sweep playing now: watch it
            self.action_watch()
            return
        if event.row_key.value != self.shown_run:
            self._load_matches(str(event.row_key.value), match_query(self.query_text))
        self.query_one("#matches-table", DataTable).focus()

    @on(DataTable.RowSelected, "#matches-table")
    def _match_selected(self, event: DataTable.RowSelected) -> None:
        self.replay(str(event.row_key.value))

    # ------------------------------------------------------------ actions
    def selected_run(self) -> str | None:
        return selected_key(self.query_one("#runs-table", DataTable))

    def selected_match(self) -> str | None:
        return selected_key(self.query_one("#matches-table", DataTable))

    def replay(self, match_id: str) -> None:
        """Watch a stored match again in the live screen, streamed as it was."""
        opener = getattr(self.app, "open_replay", None)
        if callable(opener):
            opener(match_id)
            return
        from coop_tui.screens.live import LiveScreen

        self.app.push_screen(LiveScreen(ReplaySession(self.store, match_id)))

    def action_watch(self) -> None:
        """Open the selected run in the watch view, as ``coop-tui watch RUN`` does."""
        run_id = self.selected_run()
        if run_id is None or run_id not in self.live:
            self.notify("no sweep is playing this run now: watch follows a running "
                        "`coop-tui --batch`", timeout=3)
            return
        run = self.run_rows.get(run_id) or {}
        full = self.store.run(run_id) or run
        opener = getattr(self.app, "open_watch", None)
        if callable(opener):
            opener(full)

    def action_search(self) -> None:
        self.query_one("#runs-filter", Input).focus()

    def action_switch(self) -> None:
        runs = self.query_one("#runs-table", DataTable)
        target = "#matches-table" if runs.has_focus else "#runs-table"
        self.query_one(target, DataTable).focus()

    def action_open(self) -> None:
        match_id = self.selected_match()
        if match_id is not None:
            self.replay(match_id)

    def action_decisions(self) -> None:
        match_id = self.selected_match()
        if match_id is None:
            self.notify("select a match first", timeout=2)
            return
        self.app.push_screen(DecisionsScreen(self.store, match_id, self.match_rows.get(match_id)))

    def playing(self, run_id: str | None) -> Any:
        """The session of this app still playing ``run_id`` (None: none is)."""
        for session in getattr(self.app, "sessions", []):
            if run_id is not None and getattr(session, "run_id", None) == run_id and not session.finished:
                return session
        return None

    def action_analysis(self) -> None:
        run_id = self.selected_run()
        if run_id is None:
            self.notify("no run selected", timeout=2)
            return
        from coop_tui.screens.analysis import AnalysisScreen

        self.app.push_screen(AnalysisScreen(self.store, run_id))

    def action_delete(self) -> None:
        run_id = self.selected_run()
        if run_id is None:
            return
        if self.playing(run_id) is not None:
            self.notify("this run is still playing; stop it before deleting", severity="warning")
            return
        run = self.run_rows.get(run_id, {})
        message = Text.assemble(
            ("Delete run ", ""), (run_id, "bold"), (f" ({shown(run.get('name', ''))})", ""), "?\n",
            (f"{run.get('matches', 0)} matches and {run.get('decisions', 0)} decisions are "
             "removed from the database. This cannot be undone.", "dim"),
        )

        def done(confirmed: bool | None) -> None:
            if confirmed:
                self._delete(run_id)

        self.app.push_screen(ConfirmScreen(message), done)

    @work(thread=True, exclusive=True, group="delete")
    def _delete(self, run_id: str) -> None:
        with self.store_open() as open_:
            if not open_:
                return
            try:
                self.store.delete_run(run_id)
            except (sqlite3.Error, OSError) as exc:  # read-only or full database
                self.from_worker(self._database_failed, exc)  # not once the app closes
                return
        self.from_worker(self._deleted, run_id)

    def _database_failed(self, exc: BaseException) -> None:
        """One clear line instead of a crash: the runs list stays as it was."""
        message = database_message(exc, getattr(self.store, "path", "the database"))
        self._status(Text(message, style="bold red"))
        self.notify(message, severity="error", timeout=8, markup=False)
        self.loaded += 1
        self.matches_loaded += 1

    def _deleted(self, run_id: str) -> None:
        self.notify(f"run {run_id} deleted", timeout=3, markup=False)
        if self.shown_run == run_id:
            self.shown_run = None
        self.action_reload()



class DecisionsScreen(NavScreen):
    """Every decision of one match; Enter opens the decision inspector."""

    HELP_TITLE = "Decisions of a match"
    CSS_PATH = "runs.tcss"
    BINDINGS = [
        Binding("enter", "inspect", "Inspect", show=False),
        Binding("i", "inspect", "Inspect"),
        Binding("question_mark", "help", "Help"),
        Binding("escape,q", "back", "Back"),
    ]

    def __init__(self, store: Any, match_id: str, match: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.store = store
        self.match_id = match_id
        self.match = match or {}
        self.loaded = 0

    def compose(self) -> ComposeResult:
        m = self.match
        title = Text.assemble((" coop-tui ", "bold reverse"), (" decisions ", "bold"),
                              f" match {self.match_id}  ",
                              (shown(f"{m.get('game', '')} · {m.get('mechanism', '')} · "
                                     f"{m.get('agents', '')}", limit=200), "dim"))
        yield Static(title, id="runs-title")
        table = DataTable(id="decisions-table", cursor_type="row", zebra_stripes=True)
        table.border_title = "Decisions"
        yield table
        yield Static(Text("enter: open in the inspector (exact messages, raw answer, parse, "
                          "re-ask)", style="dim"), id="runs-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "round", "phase", "seat", "agent", "kind", "answer", "action",
                          "attempts", "latency")
        table.focus()
        self._load()

    @work(thread=True, exclusive=True)
    def _load(self) -> None:
        with self.store_open() as open_:
            if not open_:
                return
            try:
                rows = self.store.decision_list(self.match_id)
            except sqlite3.OperationalError:
                if self.closing():  # interrupted: the app is closing
                    return
                raise
        self.from_worker(self._show, rows)

    def _show(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for r in rows:
            answer = _short_answer(r)
            attempts = Text(str(r["attempts"]), justify="right")
            if not r["valid"]:
                attempts = Text(f"{r['attempts']} ✗", style="bold red", justify="right")
            elif r["attempts"] > 1:
                attempts.stylize("yellow")
            table.add_row(
                Text(str(r["id"]), justify="right"), Text(str(r["round"]), justify="right"),
                Text(r["phase"] or ""), Text(str(r["seat"] + 1), justify="right"),
                Text(shown(r["agent"])), Text(r["kind"] or ""), answer,
                Text("-" if r["action"] is None else f"A{r['action']}"), attempts,
                Text(f"{r['latency_ms'] or 0:.0f} ms", justify="right"),
                key=str(r["id"]),
            )
        table.border_title = f"Decisions ({len(rows)})"
        self.loaded += 1

    def action_inspect(self) -> None:
        key = selected_key(self.query_one(DataTable))
        if key is None:
            return

        self.app.push_screen(InspectorScreen(self.store, int(key)))

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_inspect()


def _short_answer(row: dict[str, Any], limit: int = 36) -> Text:
    if not row["valid"]:
        return widget_text(row["error"] or "invalid", "red", limit=limit)
    raw = row["parsed"]
    if row["kind"] == "mixed" and raw:
        try:
            parsed = json.loads(raw)
            return Text(" ".join(f"{k} {round(100 * float(v))}%" for k, v in parsed.items())[:limit])
        except (TypeError, ValueError, AttributeError):
            pass
    text = raw or ""
    return widget_text(text, limit=limit)
