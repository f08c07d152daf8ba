"""The Textual app: the only core module that imports Textual.

It owns the store and the screen stack. Screens never run the engine: the app wraps a
setup in a :class:`~coop_tui.session.MatchSession` (or a stored match in a
:class:`~coop_tui.session.ReplaySession`) and hands it to the live screen, which
listens to the session's event bus. litellm is never imported here; the setup screen
reads its model list in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App
from textual.binding import Binding

from coop_tui.errors import SpecError
from coop_tui.session import MatchSession, MatchSetup, ReplaySession, build_setup_sweep, play_setup
from coop_tui.store import Store

if TYPE_CHECKING:
    from coop_tui.spec import Sweep
    from coop_tui.store import Store

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

READY_FILE_ENV = "COOP_TUI_READY_FILE"
"""When set, the app writes its first screen's name to this file once it has painted."""


class CoopApp(App[int]):
    """coop-tui: setup -> live match (or play mode) -> runs / inspector / analysis."""

    TITLE = "coop-tui"
    BINDINGS = [
        Binding("f1", "help", "Help", show=False),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        db: Path | str,
        *,
        setup: MatchSetup | None = None,
        play: MatchSetup | Sweep | None = None,
        replay_speed: float = 1.0,
        sweep_dir: Path | None = None,
        run_id: str | None = None,
        watch: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.watch_run = watch
        """``coop-tui watch``: the run to attach to (its row), shown as the first screen."""
        self.db = Path(db)
        self.setup = setup
        self.play = play
        self.replay_speed = replay_speed
        self.sweep_dir = sweep_dir
        self.fixed_run_id = run_id
        """Tests and snapshots pin the run id so the screen is reproducible."""
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._readers = threading.Condition()
        """Thread workers inside a read of the store (see reading_store); closing waits."""
        self._reading = 0
        self._closing = False
        self.session: Any = None
        self.sessions: list[Any] = []
        self._signals_heard: list[tuple[Any, int]] = []
        """Every session opened, so no screen deletes a run one of them still writes."""

    @property
    def store(self) -> Store:
        """The database, opened on first use (importing sqlite-utils costs ~1 s)."""
        with self._store_lock:
            if self._store is None:
                self._store = Store(self.db)
            return self._store

    @work(thread=True, exit_on_error=False, group="warm-up")
    def warm_up(self) -> None:
        """After the first paint: open the store and load the engine's modules."""
        _ = self.store
        import coop_tui.sweep  # noqa: F401

    def on_mount(self) -> None:
        self._listen_for_signals()
        if self.watch_run is not None:
            self.open_watch(self.watch_run, root=True)
        elif self.play is not None:
            session = MatchSession(self.store, self.play, run_kind="play", run_id=self.fixed_run_id)
            self._push_live(session, root=True)
        else:
            from coop_tui.screens.setup import SetupScreen

            self.push_screen(SetupScreen(self.setup))
        if os.environ.get(READY_FILE_ENV):
            self.call_after_refresh(self._announce_ready)

    def _announce_ready(self) -> None:
        """Tell whoever waits (``coop-tui serve``'s test, a script) that the first screen
        has been painted: its class name is written to ``$COOP_TUI_READY_FILE``. Written
        from a thread, as the file may be a pipe whose reader is not there yet."""
        path, name = os.environ[READY_FILE_ENV], type(self.screen).__name__

        def write() -> None:
            with open(path, "w") as marker:
                marker.write(name + "\n")

        threading.Thread(target=write, daemon=True, name="ready-marker").start()

    def _listen_for_signals(self) -> None:
        """SIGINT and SIGTERM close the app like Quit (live matches recorded as stopped,
        the terminal restored) and make it exit 130 / 143. In the terminal Ctrl-C is a
        key (the terminal is in raw mode); these come from ``kill`` or a supervisor."""

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, self._stop_by_signal, signum)
            except (NotImplementedError, RuntimeError, ValueError):  # Windows, not main thread
                return
            self._signals_heard.append((loop, signum))

    def _forget_signals(self) -> None:
        """Give the signals back (the loop may outlive the app: tests, embedding)."""
        for loop, signum in self._signals_heard:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
        self._signals_heard.clear()

    def _stop_by_signal(self, signum: int) -> None:
        self.stopped_by_signal = int(signum)
        self.exit(return_code=128 + int(signum))

    stopped_by_signal: int | None = None
    """The signal that closed the app, if one did."""

    def interrupted_runs(self) -> list[str]:
        """Runs of this app's sessions that a signal left unfinished."""
        return [s.run_id for s in self.sessions
                if getattr(s, "run_id", None) and getattr(s, "kind", "") != "replay"
                and getattr(s, "status", "") not in ("done", "failed")]

    def _push_live(self, session: Any, *, root: bool = False) -> Any:
        from coop_tui.screens.live import LiveScreen

        self.session = session
        self.sessions.append(session)
        screen = LiveScreen(session, root=root)
        self.push_screen(screen)
        return screen

    def start_match(self, setup: MatchSetup | Sweep) -> Any:
        """Play a setup (or an already validated sweep) live; returns the live screen."""
        session = MatchSession(self.store, setup, run_id=self.fixed_run_id)
        return self._push_live(session)

    def open_replay(self, match_id: str, speed: float | None = None) -> Any:
        """Watch a stored match again, streamed as it was (the runs screen calls this)."""
        session = ReplaySession(self.store, match_id, self.replay_speed if speed is None else speed)
        return self._push_live(session)

    def open_watch(self, run: dict[str, Any], *, root: bool = False) -> Any:
        """Attach to a running sweep (``coop-tui watch``; the runs screen on a running run)."""
        from coop_tui.screens.watch import WatchScreen

        screen = WatchScreen(self.store, run, root=root)
        self.push_screen(screen)
        return screen

    def action_help(self) -> None:
        from coop_tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    @property
    def closing(self) -> bool:
        """True once the app unmounts: thread workers stop reading the store."""
        return self._closing

    @contextlib.contextmanager
    def reader(self) -> Iterator[bool]:
        """Around a thread worker's reads of the store: False once the app is closing;
        while True, the connection is not closed (closing it under a query of another
        thread crashes SQLite): closing interrupts running reads and waits for them."""
        with self._readers:
            open_ = not self._closing
            if open_:
                self._reading += 1
        try:
            yield open_
        finally:
            if open_:
                with self._readers:
                    self._reading -= 1
                    self._readers.notify_all()

    @contextlib.contextmanager
    def reading_store(self) -> Iterator[Store | None]:
        """The store for a thread worker's read (see :meth:`reader`), or None once the app
        is closing."""
        with self.reader() as open_:
            yield self.store if open_ else None

    def on_unmount(self) -> None:
        self._forget_signals()
        with self._readers:
            self._closing = True
            if self._store is not None:
                self._store.db.conn.interrupt()  # a running read stops at once
            self._readers.wait_for(lambda: self._reading == 0, timeout=30)
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def run_app(db: Path) -> int:
    """``coop-tui``: the setup screen on the ready preset."""
    app = CoopApp(db)
    app.run()
    return _after_app(app)


def _after_app(app: CoopApp) -> int:
    """The exit code; after a signal, what was stopped and how to continue it."""
    if app.stopped_by_signal is not None:

        from coop_tui.runner import stop_embedded_generation, stop_words

        stop_embedded_generation()
        runs = app.interrupted_runs()
        what = f"run {', '.join(runs)} stopped" if runs else "nothing was running"
        print(f"{stop_words(app.return_code or 0)}: {what}; every finished decision is "
              "stored: Start the same setup (same seed) again to reuse them and play the rest",
              file=sys.stderr)
    return app.return_code or 0


def run_watch(db: Path, ref: str | None, *, plain: bool = False) -> int:
    """``coop-tui watch``: the dashboard of a running sweep; ``plain`` (or no terminal):
    one line per event on stdout. A missing run exits 2 before the UI opens."""
    from coop_tui.watch import watch_plain, watched_run  # brings Rich (its text escaping)

    if not Path(db).exists():
        raise SpecError("--db", f"{db} does not exist; give the database the sweep writes "
                                "(the --db of its `coop-tui --batch`)")
    if plain or not sys.stdout.isatty():
        return asyncio.run(watch_plain(Path(db), ref, sys.stdout))
    store = Store(db)
    try:
        run = watched_run(store, ref)
    finally:
        store.close()
    app = CoopApp(db, watch=run)
    app.run()
    return _after_app(app)


def run_play(db: Path, game: str, opponent: str, rounds: int, mechanism: str | None,
             talk: str = "none") -> int:
    """``coop-tui play``: you in seat 1 against ``opponent``; bad input exits 2 before the UI."""
    if rounds < 1:
        raise SpecError("--rounds", f"must be at least 1 (got {rounds})")
    setup = play_setup(game, opponent, rounds, mechanism, talk)
    try:
        sweep = build_setup_sweep(setup)
    except SpecError as exc:
        where, message = exc.field, exc.message
        if where.startswith("seat") and where != "seat 1 agent":
            where = "--opponent"
        elif where.startswith("game"):
            where = "--game"
        elif where == "rounds":
            where = "--rounds"
        elif where == "mechanism":
            where = "--mechanism"
        else:
            # a mechanism parameter: play mode sets only rounds for repetition
            where = "--mechanism"
            field = "" if exc.field == "experiment" else f"{exc.field} "
            message = (f"{setup.mechanism}: {field}{message}; play mode sets no other "
                       f"mechanism parameters: open coop-tui and put human in a seat instead")
        raise SpecError(where, message) from None
    app = CoopApp(db, play=sweep)
    app.run()
    return _after_app(app)
