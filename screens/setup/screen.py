"""The setup screen: agents per seat, game, mechanism and its parameters, prompt preview.

The form (:class:`SeatsForm`, the game and mechanism rows, :class:`ParamsForm`) is turned
into a :class:`~coop_tui.session.MatchSetup` by :func:`read_setup`, validated by the same
sweep loader the headless runner uses (so an error names the field exactly as a sweep
file would), and previewed (:class:`PreviewPane`) by letting the mechanism build its real
first request for every seat. Start plays it live; the same choices can be saved as a
sweep file or run headless in a subprocess.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, Select, Static, Switch

from coop_tui.errors import database_message
from coop_tui.screens.setup.choices import (
    Registries,
    game_and_mechanism,
    plugin_agents_note,
    read_registries,
)
from coop_tui.screens.setup.headless import headless_command, sweep_file
from coop_tui.screens.setup.params import ParamsForm
from coop_tui.screens.setup.preview import PreviewPane
from coop_tui.screens.setup.seats import AgentSuggester, SeatsForm, litellm_model_names
from coop_tui.screens.setup.values import FormValues, field_text, read_setup
from coop_tui.screens.widgets import NavScreen, PayoffTable, optional_screen
from coop_tui.session import (
    HUMAN,
    PRESET_AGENT,
    MatchSetup,
    build_setup_sweep,
    setup_to_sweep,
    sweep_toml,
)
from coop_tui.terminal import widget_text


class SetupScreen(NavScreen):
    """Pick who plays what under which mechanism, see the prompt, then start."""

    HELP_TITLE = "Setup"
    CSS_PATH = "../setup.tcss"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save sweep"),
        Binding("ctrl+b", "headless", "Run headless"),
        Binding("ctrl+r", "runs", "Runs"),
        Binding("f1", "help", "Help"),
        Binding("escape", "back", "Quit"),
        Binding("ctrl+g", "start", "Start", show=False),
    ]

    def __init__(self, setup: MatchSetup | None = None) -> None:
        super().__init__()
        self.setup = setup or MatchSetup.preset()
        self.suggester = AgentSuggester([PRESET_AGENT, HUMAN])
        self.ready = asyncio.Event()
        """Set once the registries (games, mechanisms, strategies) are loaded."""
        self._start_when_ready = False
        self.last_saved: Path | None = None
        self.headless_proc: Any = None
        self.plugin_agents: list[str] = []
        """Agents installed plugins registered, listed under the seats when there are any."""
        self.param_memory: dict[str, dict[str, Any]] = {
            "similarity": dict(MatchSetup.preset().params), self.setup.mechanism: dict(self.setup.params)}
        """Per mechanism, the parameter values its form last held (see ParamsForm)."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        # Only the preset's own choices are known at first paint; the registries (numpy,
        # pydantic, Jinja2 behind them) load in a thread right after it.
        s = self.setup
        title = Text()
        title.append(" coop-tui ", style="bold reverse")
        title.append(" setup ", style="bold")
        title.append(f"  database {self.app_db()}", style="dim")
        yield Static(title, id="setup-title")
        with Horizontal(id="setup-body"):
            with VerticalScroll(id="form"):
                yield Static("Agents", classes="section")
                yield SeatsForm(s.seats, self.suggester, id="seats")
                with Horizontal(id="agent-opts"):
                    yield Label("max tokens")
                    yield Input(field_text(s.max_tokens), id="max-tokens", placeholder="default",
                                compact=True, type="integer")
                    yield Label("temperature")
                    yield Input(field_text(s.temperature), id="temperature", placeholder="default",
                                compact=True)
                with Vertical(id="rest"):
                    yield Static(Text(f"{s.game} · {s.mechanism} · loading the game and "
                                      "mechanism registries…", style="dim"))
            yield PreviewPane(self, id="preview-box")
        yield Static("", id="setup-message")
        with Horizontal(id="buttons"):
            yield Button("▶ Start", id="start", variant="primary")
            yield Button("Save sweep", id="save")
            yield Button("Run headless", id="headless")
        yield Footer()

    def app_db(self) -> str:
        db = getattr(self.app, "db", None)
        return str(db) if db is not None else "?"

    async def on_mount(self) -> None:
        await self.query_one(SeatsForm).build(len(self.setup.seats))
        self.query_one("#start", Button).focus()
        # after the first paint: a thread importing modules would compete for the GIL
        self.call_after_refresh(self.load_registries)

    @work(thread=True, exclusive=True, group="registries")
    def load_registries(self) -> None:
        """Import the registries off the UI thread, then fill the form on it."""
        registries = read_registries()
        self.plugin_agents = registries.plugin_agents
        self.from_worker(self._fill_form, registries)

    async def _fill_form(self, registries: Registries) -> None:
        self.suggester.extend([*registries.strategies, *self.plugin_agents])
        rest = self.query_one("#rest", Vertical)
        await rest.remove_children()
        if self.plugin_agents:  # installed plugins' agents: typed in a seat like a strategy
            await rest.mount(plugin_agents_note(self.plugin_agents))
        await rest.mount_all(game_and_mechanism(self.setup, registries, self.param_memory))
        await self.query_one(ParamsForm).build(str(self.query_one("#mechanism", Select).value))
        self._show_game()
        self.ready.set()
        warm_up = getattr(self.app, "warm_up", None)
        if warm_up is not None:
            warm_up()
        self.load_models()
        await self.refresh_preview()
        if self._start_when_ready:
            self.action_start()

    async def wait_ready(self) -> None:
        """Until the form is complete and its preview rendered (tests)."""
        await self.ready.wait()
        while self.query_one(PreviewPane).scheduled or self.workers_busy() or self._params_building():
            await asyncio.sleep(0.02)

    def workers_busy(self) -> bool:
        return self.query_one(PreviewPane).busy()

    def _params_building(self) -> bool:
        forms = self.query(ParamsForm)
        return bool(forms and forms.first().building)

    @property
    def _built_mechanism(self) -> str:
        """The mechanism whose parameters the form holds ("" before the form is built)."""
        forms = self.query(ParamsForm)
        return forms.first().built_mechanism if forms else ""

    @property
    def preview(self) -> dict[int, list[dict[str, str]]]:
        """Per seat, the messages of its first request, as previewed."""
        return self.query_one(PreviewPane).prompts

    @property
    def error(self) -> ValueError | None:
        """Why the form did not validate at the last preview (None when it did)."""
        return self.query_one(PreviewPane).error

    def _show_game(self) -> None:
        from coop_tui.games import load_game

        table = self.query_one("#payoffs", PayoffTable)
        try:
            table.show(load_game(str(self.query_one("#game", Select).value)))
        except Exception as exc:
            table.show(None, str(exc))

    # ------------------------------------------------------------ reading the form
    def seat_values(self) -> list[str]:
        return self.query_one(SeatsForm).values()

    def form_values(self) -> FormValues:
        """What the form's controls hold now."""
        chosen, typed = self.query_one(ParamsForm).shown_values()
        return FormValues(
            seats=self.seat_values(),
            game=str(self.query_one("#game", Select).value),
            mechanism=str(self.query_one("#mechanism", Select).value),
            chosen=chosen, typed=typed,
            samples=self.query_one("#samples", Input).value,
            max_tokens=self.query_one("#max-tokens", Input).value,
            temperature=self.query_one("#temperature", Input).value,
            seed=self.query_one("#seed", Input).value,
            name=self.setup.name,
        )

    def read_setup(self) -> MatchSetup:
        """The form as a MatchSetup; SpecError names the field that cannot be read."""
        return read_setup(self.form_values())

    def validated(self) -> tuple[MatchSetup, Any]:
        setup = self.read_setup()
        return setup, build_setup_sweep(setup)

    def show_message(self, message: str | Text, *, error: bool = False) -> None:
        widget = self.query_one("#setup-message", Static)
        if isinstance(message, str):  # may quote a file or a server: shown, not obeyed
            message = widget_text(message, "bold red" if error else "", lines=True)
        widget.update(message)
        widget.set_class(error, "-error")

    # ------------------------------------------------------------ preview
    def _schedule_preview(self) -> None:
        if self.ready.is_set():
            self.query_one(PreviewPane).schedule()

    def on_screen_suspend(self) -> None:
        """Another screen on top, or this one leaving: drop a preview still rendering
        (see :meth:`PreviewPane.drop`); it is made again when the screen comes back."""
        for pane in self.query(PreviewPane):
            pane.drop()

    def on_screen_resume(self) -> None:
        if any(pane.take_dropped() for pane in self.query(PreviewPane)):
            self._schedule_preview()

    async def refresh_preview(self) -> None:
        await self.query_one(PreviewPane).rebuild()

    @on(Input.Changed)
    @on(Switch.Changed)
    def _changed(self, event: Any) -> None:
        self._schedule_preview()

    @on(Select.Changed)
    async def _select_changed(self, event: Select.Changed) -> None:
        if not self.ready.is_set():
            return
        if event.select.id == "game":
            self._show_game()
            from coop_tui.games import load_game

            try:
                n = load_game(str(event.value)).n_players
            except Exception:
                n = len(self.seat_values())
            if n != len(self.seat_values()):
                await self.query_one(SeatsForm).build(n)
        elif event.select.id == "mechanism" and str(event.value) != self._built_mechanism:
            await self.query_one(ParamsForm).build(str(event.value))
        elif str(event.select.id).startswith("param-"):
            self.query_one(ParamsForm).show_relevant()
        self._schedule_preview()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.action_start()

    # ------------------------------------------------------------ litellm models
    @work(thread=True, exclusive=True, group="models")
    def load_models(self) -> None:
        try:
            names = litellm_model_names()
        except Exception:
            names = []
        if names:
            self.from_worker(self.suggester.extend, names)

    # ------------------------------------------------------------ actions
    @on(Button.Pressed, "#start")
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#headless")
    def _headless_pressed(self) -> None:
        self.action_headless()

    def action_start(self) -> None:
        if not self.ready.is_set():
            self._start_when_ready = True
            self.show_message(Text("loading… the match starts in a moment", style="dim"))
            return
        try:
            _, sweep = self.validated()
        except ValueError as exc:  # SpecError, or a form field
            self.show_message(f"✗ {exc}", error=True)
            return
        self.app.start_match(sweep)  # type: ignore[attr-defined]

    def save(self) -> Path | None:
        try:
            setup, _ = self.validated()
        except ValueError as exc:  # SpecError, or a form field
            self.show_message(f"✗ {exc}", error=True)
            return None
        setup.name = f"tui-{setup.game}-{setup.mechanism}"
        path = sweep_file(Path(getattr(self.app, "sweep_dir", None) or Path.cwd()), setup)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sweep_toml(setup_to_sweep(setup)), encoding="utf-8")
        self.last_saved = path
        return path

    def action_save(self) -> None:
        path = self.save()
        if path is not None:
            self.show_message(Text(f"saved {path}  ·  run it with: coop-tui --batch {path}", style="green"))

    def action_headless(self) -> None:
        try:
            setup = self.read_setup()
        except ValueError as exc:  # SpecError, or a form field
            self.show_message(f"✗ {exc}", error=True)
            return
        if any(s.strip().lower() == HUMAN for s in setup.seats):
            self.show_message("✗ seats: a human seat cannot run headless; use Start", error=True)
            return
        path = self.save()
        if path is None:
            return
        self.run_headless(path)

    @work(exclusive=True, group="headless")
    async def run_headless(self, path: Path) -> int:
        cmd = headless_command(path, self.app_db())
        log = path.with_suffix(".log")
        shown = " ".join(cmd)
        self.show_message(Text(f"running: {shown}  ·  output: {log}", style="cyan"))
        with log.open("wb") as out:
            # its own session: a headless sweep keeps running when the TUI is closed
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=out, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
            )
            self.headless_proc = proc
            code = await proc.wait()
        style = "green" if code == 0 else "bold red"
        self.show_message(Text(f"headless run exited with {code}  ·  output: {log}  ·  {shown}", style=style))
        self.notify(f"headless run finished (exit {code}); output in {log}",
                    severity="information" if code == 0 else "error", markup=False)
        return code

    def action_runs(self) -> None:
        screen = optional_screen("runs", "RunsScreen")
        if screen is None:
            self.notify("the runs screen is not installed", severity="warning")
            return
        try:
            store = self.app.store  # type: ignore[attr-defined]
        except (sqlite3.Error, OSError) as exc:  # a damaged or unreadable database file

            self.notify(database_message(exc, self.app.db), severity="error", timeout=8, markup=False)  # type: ignore[attr-defined]
            return
        self.app.push_screen(screen(store))

