"""The compare screen: is run B really different from run A, condition by condition?

Opened from the analysis screen (``v``) with that screen's run as A. Run B is picked from
the list of runs (Enter), or typed (an id, an id prefix or a name); it may live in another
database file, named in the second field (the list then shows that file's runs). The
numbers are :func:`coop_tui.analysis.compare.compare_runs`, the function behind
``coop-tui compare``, shown with the same tables the command prints: per shared condition
and agent each run's cooperation rate and mean payoff, the difference B − A with its 95%
interval, the p-value and the Holm-adjusted one, then the conditions found in one run
only.

The comparison reads in a thread worker on connections of its own, so a large database
never freezes the keyboard, and leaving the screen cancels the worker and aborts its SQL
at once (the app's shared connection is not touched: other screens read through it).
"""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from coop_tui.errors import database_message
from coop_tui.screens.widgets import NavScreen, plain
from coop_tui.store import Store
from coop_tui.terminal import NAME_WIDTH, terminal_data, terminal_text


class _Unavailable(Exception):
    """Run B (or its database) cannot be read: the message says what to type instead."""


class CompareScreen(NavScreen):
    """Run A (the analysis screen's run) against a run B of this or another database."""

    HELP_TITLE = "Compare runs"
    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen #cmp-title { height: 1; background: $boost; }
    CompareScreen #cmp-form { height: 3; }
    CompareScreen #cmp-run { width: 2fr; }
    CompareScreen #cmp-db { width: 3fr; }
    CompareScreen #cmp-go { min-width: 11; margin: 0 0 0 1; }
    CompareScreen #cmp-runs { height: auto; max-height: 9; border: round $panel-lighten-2; }
    CompareScreen #cmp-runs:focus { border: round $accent; }
    CompareScreen #cmp-body { height: 1fr; border: round $panel-lighten-2; padding: 0 1; }
    CompareScreen #cmp-status { height: 1; padding: 0 1; }
    """
    BINDINGS = [
        Binding("f5", "list_runs", "Reload runs", show=False),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, store: Any, run_id: str) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.result: dict[str, Any] | None = None
        """The last comparison shown (``compare_runs``' dict), for tests and a re-draw."""
        self.compared = 0
        """How many comparisons (or failures) have been shown (tests wait on it)."""
        self.listed = 0
        """How many run lists have been shown."""
        self.error: str | None = None
        self.reads_started = 0
        self.reads_ended = 0
        """How many connections the workers have opened and closed (tests wait on them)."""
        self.listed_db: Path | None = None
        """The database whose runs the list shows (None: run A's)."""
        self.comparing: Any = None
        """The worker of the last comparison asked for."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(Text.assemble((" coop-tui ", "bold reverse"), (" compare ", "bold"),
                                   (f"  A: run {self.run_id}  ", "dim"), "against run B"), id="cmp-title")
        with Horizontal(id="cmp-form"):
            yield Input(placeholder="run B: id, id prefix or name (enter compares)", id="cmp-run")
            yield Input(placeholder=f"database of run B (empty: {self.store.path})", id="cmp-db")
            yield Button("Compare", id="cmp-go", variant="primary")
        runs = DataTable(id="cmp-runs", cursor_type="row", zebra_stripes=True)
        runs.border_title = "Runs (enter: compare A with it)"
        yield runs
        with VerticalScroll(id="cmp-body"):
            yield Static(Text("pick run B above: enter on a run, or type its id and press enter",
                              style="dim"), id="cmp-result")
        yield Static("", id="cmp-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#cmp-runs", DataTable).add_columns("id", "name", "kind", "status", "date")
        self.query_one("#cmp-runs", DataTable).focus()
        self.action_list_runs()

    def on_unmount(self) -> None:
        """Leaving stops a comparison still reading: its worker is cancelled, and the
        worker's connections abort their next step of SQL (see :class:`_Reader`)."""
        self.workers.cancel_node(self)

    # ------------------------------------------------------------ the runs to pick from
    def db_b(self) -> Path | None:
        """The database typed for run B (None: run A's own)."""
        raw = self.query_one("#cmp-db", Input).value.strip()
        return Path(raw).expanduser() if raw else None

    def action_list_runs(self) -> None:
        self.listed_db = self.db_b()
        self._list_runs(self.listed_db)

    @work(thread=True, exclusive=True, group="runs")
    def _list_runs(self, path: Path | None) -> None:
        try:
            with self._private(path or self.store.path) as store:
                rows = store.runs()
        except _Unavailable as exc:
            if not get_current_worker().is_cancelled:
                self.from_worker(self._runs_failed, str(exc))
            return
        if not get_current_worker().is_cancelled:
            self.from_worker(self._show_runs, rows)

    def _show_runs(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#cmp-runs", DataTable)
        table.clear()
        same = self.db_b() is None
        for r in rows:
            if same and r["id"] == self.run_id:
                continue  # A against itself says nothing
            table.add_row(Text(r["id"]), Text(terminal_text(r["name"] or "", markup=False, limit=NAME_WIDTH)),
                          Text(r["kind"] or ""), Text(r["status"] or ""),
                          Text(_date(r.get("created_at"))), key=r["id"])
        where = "this database" if same else str(self.db_b())
        table.border_title = plain(f"Runs of {where} ({table.row_count}) · enter: compare A with it")
        self.listed += 1

    def _runs_failed(self, message: str) -> None:
        self.query_one("#cmp-runs", DataTable).clear()
        self._status(Text(message, style="bold red"))
        self.listed += 1

    # ------------------------------------------------------------ comparing
    @on(DataTable.RowSelected, "#cmp-runs")
    def _picked(self, event: DataTable.RowSelected) -> None:
        self.query_one("#cmp-run", Input).value = str(event.row_key.value)
        self.action_compare()

    @on(Input.Submitted, "#cmp-run")
    def _typed_run(self) -> None:
        self.action_compare()

    @on(Input.Submitted, "#cmp-db")
    def _typed_db(self) -> None:
        """A database typed: list its runs, and compare at once when a run is named."""
        self.action_list_runs()
        if self.query_one("#cmp-run", Input).value.strip():
            self.action_compare()
        else:
            self.query_one("#cmp-runs", DataTable).focus()

    @on(Button.Pressed, "#cmp-go")
    def _go(self) -> None:
        self.action_compare()

    def action_compare(self) -> None:
        ref = self.query_one("#cmp-run", Input).value.strip()
        if not ref:
            self._status(Text("type run B's id, prefix or name, or pick it in the list", style="yellow"))
            return
        self._status(Text(f"comparing run {self.run_id} with {ref}…", style="yellow"))
        if self.db_b() != self.listed_db:  # another file typed: the list shows its runs
            self.action_list_runs()
        self.comparing = self._compare(ref, self.db_b())

    @work(thread=True, exclusive=True, group="compare")
    def _compare(self, ref_b: str, db_b: Path | None) -> None:
        """``compare_runs`` on connections of the worker's own (see :meth:`on_unmount`)."""
        from coop_tui.analysis.compare import compare_runs  # numpy and scipy: loaded on use

        worker = get_current_worker()
        try:
            with self._private(self.store.path) as store_a:
                if db_b is None or _same_file(db_b, self.store.path):
                    result = compare_runs(store_a, self.run_id, store_a, _resolve(store_a, ref_b))
                else:
                    with self._private(db_b) as store_b:
                        result = compare_runs(store_a, self.run_id, store_b, _resolve(store_b, ref_b))
        except _Unavailable as exc:
            if not worker.is_cancelled:
                self.from_worker(self._failed, str(exc))
            return
        if not worker.is_cancelled:
            self.from_worker(self._show, result)

    def _private(self, path: Path) -> _Reader:
        worker = get_current_worker()
        self.reads_started += 1  # a counter only: safe from the worker's thread
        return _Reader(path, lambda: worker.is_cancelled, self._read_ended)

    def _read_ended(self) -> None:
        self.reads_ended += 1

    def _show(self, result: dict[str, Any]) -> None:
        from coop_tui.analysis.compare import render_text

        self.result = result
        self.error = None
        shown = terminal_data(result)
        different = sum(1 for r in result["shared"] if r["different"])
        a, b = shown["runs"]["a"], shown["runs"]["b"]
        self.query_one("#cmp-title", Static).update(Text.assemble(
            (" coop-tui ", "bold reverse"), (" compare ", "bold"),
            f"  A: {_run_label(a)}   B: {_run_label(b)}"))
        self.query_one("#cmp-result", Static).update(render_text(shown))
        summary = Text(f"{len(result['shared'])} shared rows, {result['tests']} tests: ", style="bold")
        summary.append(f"{different} rows different after Holm's correction",
                       style="bold red" if different else "bold green")
        summary.append(f" · only in A {len(result['only_a'])} · only in B {len(result['only_b'])}",
                       style="dim")
        self._status(summary)
        self.compared += 1

    def _failed(self, message: str) -> None:
        self.error = message
        self.result = None
        self.query_one("#cmp-result", Static).update(Text(message, style="bold red"))
        self._status(Text(message, style="bold red"))
        self.compared += 1

    def _status(self, text: Text) -> None:
        self.query_one("#cmp-status", Static).update(text)


class _Reader:
    """A connection of a worker's own to one database, open while it reads. Once the
    worker is cancelled (the screen left) SQLite's progress handler aborts whatever
    statement runs, so a long comparison stops within milliseconds, not when it is done.
    Every failure to open or read becomes one :class:`_Unavailable` sentence naming the
    file."""

    CHECK_EVERY = 10_000
    """SQLite virtual-machine steps between two looks at the cancel flag."""

    def __init__(self, path: Path, cancelled: Callable[[], bool], ended: Callable[[], None]) -> None:
        self.path, self.cancelled, self.ended = path, cancelled, ended
        self.store: Store | None = None

    def __enter__(self) -> Store:
        try:
            self.store = Store(self.path, create=False)
        except FileNotFoundError:
            raise _Unavailable(f"no database at {self.path}; type the path of a coop-tui database "
                               "(empty: this one)") from None
        except (sqlite3.Error, OSError) as exc:
            raise _Unavailable(database_message(exc, self.path)) from None
        self.store.db.conn.set_progress_handler(lambda: int(self.cancelled()), self.CHECK_EVERY)
        return self.store

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        assert self.store is not None
        self.store.close()
        self.ended()  # a counter only: safe from the worker's thread
        if isinstance(exc, sqlite3.OperationalError) and self.cancelled():
            raise _Unavailable("the comparison was stopped") from None
        if isinstance(exc, sqlite3.Error):
            raise _Unavailable(database_message(exc, self.path)) from None
        return False


def _resolve(store: Store, ref: str) -> str:
    """Run B's id from what was typed (an id, an id prefix or a name), as the CLI resolves it."""
    run = store.resolve_run(ref)
    if run is None:
        raise _Unavailable(f"no run {ref!r} in {store.path}; pick one in the list or type its id")
    return str(run["id"])


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == Path(b).resolve()
    except OSError:
        return False


def _run_label(run: dict[str, Any]) -> str:
    name = terminal_text(run.get("name") or "", markup=False, limit=NAME_WIDTH)
    return f"run {run['id']} {name}".rstrip()


def _date(created: float | None) -> str:
    """A run's local start time, to the minute."""
    if created is None:
        return ""
    return datetime.datetime.fromtimestamp(created).strftime("%Y-%m-%d %H:%M")
