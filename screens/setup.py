"""The setup screen: agents per seat, game, mechanism and its parameters, prompt preview.

The form is turned into a :class:`~coop_tui.session.MatchSetup`, validated by the same
sweep loader the headless runner uses (so an error names the field exactly as a sweep
file would), and previewed by letting the mechanism build its real first request for
every seat. Start plays it live; the same choices can be saved as a sweep file or run
headless in a subprocess.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import sqlite3
import sys
import typing
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.suggester import Suggester
from textual.widgets import Button, Footer, Input, Label, Select, Static, Switch

from coop_tui.agents.custom import agent_names
from coop_tui.agents.strategies import strategy_names
from coop_tui.errors import SpecError, database_message
from coop_tui.screens.widgets import NavScreen, PayoffTable, optional_screen
from coop_tui.session import (
    HUMAN,
    PRESET_AGENT,
    MatchSetup,
    build_setup_sweep,
    preview_prompts,
    prompt_text,
    setup_to_sweep,
    sweep_toml,
)
from coop_tui.terminal import NAME_WIDTH, terminal_text, widget_text

PREVIEW_DELAY = 0.25


NO_CHOICE = getattr(Select, "NULL", Select.BLANK)
"""What an empty Select holds: ``Select.NULL`` since Textual 1.0 (``Select.BLANK`` became
the ``allow_blank`` default, ``False``), ``Select.BLANK`` before."""


class AgentSuggester(Suggester):
    """Completes agent strings: the embedded model, human, strategies, then litellm models."""

    def __init__(self, candidates: list[str]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.candidates = list(candidates)

    def extend(self, more: list[str]) -> None:
        known = set(self.candidates)
        self.candidates.extend(m for m in more if m not in known)

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        low = value.lower()
        for c in self.candidates:
            if c.lower().startswith(low) and len(c) > len(value):
                return value + c[len(value):]
        return None


def litellm_model_names() -> list[str]:
    """litellm's model list as ``provider/model`` strings, read from the JSON price map
    litellm ships (no litellm import: that takes seconds). Call it off the UI thread."""

    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return []
    path = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    names = []
    for key, info in data.items():
        if not isinstance(info, dict) or key == "sample_spec":
            continue
        if info.get("mode") not in (None, "chat", "responses", "completion"):
            continue
        provider = info.get("litellm_provider") or ""
        name = key if "/" in key or not provider else f"{provider}/{key}"
        names.append(name)
    return sorted(set(names))


def _annotation_text(annotation: Any) -> str:
    return str(annotation).replace("typing.", "")


def _literal_options(annotation: Any) -> list[Any] | None:
    """The choices of a Literal field (also inside Optional)."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
    return None


def coerce_param(annotation: Any, text: str) -> Any:
    """Form text to a parameter value: empty means default, strings stay strings."""
    raw = text.strip()
    if not raw:
        return None
    ann = _annotation_text(annotation)
    if "str" in ann and not any(t in ann for t in ("float", "int", "list", "dict")):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        if "list" in ann and "," in raw:
            parts = [p.strip() for p in raw.strip("[]").split(",") if p.strip()]
            out = []
            for p in parts:
                try:
                    out.append(json.loads(p))
                except json.JSONDecodeError:
                    out.append(p)
            return out
        return raw


def _field_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Row(Horizontal):
    """A label and one control."""

    shown_when: dict[str, list[Any]] = {}
    """Shown only while each named parameter has one of the listed values."""

    DEFAULT_CSS = """
    Row { height: auto; }
    Row > Label { width: 16; padding: 0 1 0 0; color: $text-muted; }
    Row > Input, Row > Select { width: 1fr; }
    """


class SetupScreen(NavScreen):
    """Pick who plays what under which mechanism, see the prompt, then start."""

    HELP_TITLE = "Setup"
    CSS_PATH = "setup.tcss"
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
        self._preview_timer: Any = None
        self._preview_dropped = False
        self._building = False
        self.preview: dict[int, list[dict[str, str]]] = {}
        self.error: ValueError | None = None
        self.last_saved: Path | None = None
        self.headless_proc: Any = None
        self.plugin_agents: list[str] = []
        """Agents installed plugins registered, listed under the seats when there are any."""
        self._built_mechanism = ""
        self.param_memory: dict[str, dict[str, Any]] = {
            "similarity": dict(MatchSetup.preset().params), self.setup.mechanism: dict(self.setup.params)}
        """Per mechanism, the parameter values its form last held: switching to another
        mechanism and back brings them back instead of the bare defaults (Similarity's
        ``similarity`` has none, and the form then said it was missing)."""
        self._params_building = 0
        """Parameter forms being (re)built: until they are mounted their Selects are empty."""

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
                yield Vertical(id="seats")
                with Horizontal(id="agent-opts"):
                    yield Label("max tokens")
                    yield Input(_field_text(s.max_tokens), id="max-tokens", placeholder="default",
                                compact=True, type="integer")
                    yield Label("temperature")
                    yield Input(_field_text(s.temperature), id="temperature", placeholder="default",
                                compact=True)
                with Vertical(id="rest"):
                    yield Static(Text(f"{s.game} · {s.mechanism} · loading the game and "
                                      "mechanism registries…", style="dim"))
            with Vertical(id="preview-box"):
                yield Static("Prompt preview", classes="section", id="preview-title")
                with VerticalScroll(id="preview"):
                    yield Static(Text("rendering the prompt…", style="dim"), id="preview-text")
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
        await self._build_seats(len(self.setup.seats))
        self.query_one("#start", Button).focus()
        # after the first paint: a thread importing modules would compete for the GIL
        self.call_after_refresh(self.load_registries)

    @work(thread=True, exclusive=True, group="registries")
    def load_registries(self) -> None:
        """Import the registries off the UI thread, then fill the form on it."""
        from coop_tui.games import game_keys
        from coop_tui.mechanisms import mechanism_keys

        games, mechanisms, strategies = game_keys(), mechanism_keys(), strategy_names()
        self.plugin_agents = agent_names()
        from coop_tui.mechanisms import mechanism_class

        # pipeline stages (benchmark answers, similarity judgements) run from sweep files
        mechanisms = [k for k in mechanisms if not getattr(mechanism_class(k), "stage", False)]
        import coop_tui.spec  # noqa: F401  (validation and preview need these warm)
        import coop_tui.sweep  # noqa: F401

        self.from_worker(self._fill_form, games, mechanisms, strategies)

    async def _fill_form(self, games: list[str], mechanisms: list[str], strategies: list[str]) -> None:
        s = self.setup
        self.suggester.extend([*strategies, *self.plugin_agents])
        rest = self.query_one("#rest", Vertical)
        await rest.remove_children()
        if self.plugin_agents:  # installed plugins' agents: typed in a seat like a strategy
            names = ", ".join(terminal_text(n, markup=False) for n in self.plugin_agents)
            await rest.mount(Static(Text(f"plugin agents: {names}", style="dim"),
                                    id="plugin-agents"))
        await rest.mount_all([
            Static("Game", classes="section"),
            Row(Label("game"), Select([(k, k) for k in games], value=s.game if s.game in games else games[0],
                                      allow_blank=False, id="game", compact=True)),
            PayoffTable(id="payoffs"),
            Static("Mechanism", classes="section"),
            Row(Label("mechanism"), Select(
                [(k, k) for k in mechanisms], value=s.mechanism if s.mechanism in mechanisms else mechanisms[0],
                allow_blank=False, id="mechanism", compact=True)),
            Vertical(id="params"),
            Row(Label("samples"), Input(str(s.samples), id="samples", compact=True, type="integer")),
            Row(Label("seed"), _seed_input(s.seed)),
        ])
        await self._build_params(str(self.query_one("#mechanism", Select).value))
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
        while self._preview_timer is not None or self.workers_busy() or self._params_building:
            await asyncio.sleep(0.02)

    def workers_busy(self) -> bool:
        return any(w.group == "preview" and not w.is_finished for w in self.workers)

    # ------------------------------------------------------------ dynamic parts
    async def _build_seats(self, n: int) -> None:
        box = self.query_one("#seats", Vertical)
        current = self.seat_values() if box.children else list(self.setup.seats)
        while len(current) < n:
            current.append(current[-1] if current else PRESET_AGENT)
        current = current[:n]
        await box.remove_children()
        rows = []
        for i, value in enumerate(current):
            field = Input(value, id=f"seat-{i}", suggester=self.suggester, compact=True,
                          placeholder="local/smollm2 · a strategy · human · provider/model")
            field.tooltip = ("local/smollm2 (embedded, no key) · a strategy such as tit_for_tat · "
                           "human (you answer) · provider/model via litellm (openai/gpt-4o-mini); "
                           "→ accepts the suggestion")
            row = Row(Label(f"seat {i + 1}"), field)
            rows.append(row)
        await box.mount_all(rows)

    def seat_values(self) -> list[str]:
        return [w.value for w in self.query("#seats Input").results(Input)]

    async def _build_params(self, mechanism: str) -> None:
        """The parameter form of ``mechanism``, filled with what it held last time (the
        form of the mechanism it replaces is remembered first)."""
        box = self.query_one("#params", Vertical)
        if self._built_mechanism:
            self.param_memory[self._built_mechanism] = self.param_form_values()
        self._built_mechanism = mechanism
        self._params_building += 1
        try:
            await self._mount_params(box, mechanism, self.param_memory.get(mechanism))
        finally:
            self._params_building -= 1

    def param_form_values(self) -> dict[str, Any]:
        """What each parameter control of the form holds now, as the form shows it (an
        Input's text, a Select's choice, a Switch's state)."""
        values: dict[str, Any] = {}
        for widget in self.query("#params Input, #params Select, #params Switch"):
            if not str(widget.id).startswith("param-"):
                continue  # a part of another control, not a parameter
            name = str(widget.id).removeprefix("param-")
            if isinstance(widget, Select):
                values[name] = None if widget.value is NO_CHOICE else widget.value
            elif isinstance(widget, Input | Switch):
                values[name] = widget.value
        return values

    async def _mount_params(self, box: Vertical, mechanism: str, values: dict[str, Any] | None) -> None:
        from coop_tui.mechanisms import mechanism_class

        await box.remove_children()
        try:
            fields = mechanism_class(mechanism).Params.model_fields
        except Exception as exc:  # a broken mechanism module must not break the form
            await box.mount(Static(widget_text(str(exc), "red", lines=True)))
            return
        values = values or {}
        rows = []
        for name, info in fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if extra.get("form") is False:  # sweep-file only (e.g. scores keyed by agent name)
                continue
            value = values.get(name, info.default if not info.is_required() else None)
            options = _literal_options(info.annotation)
            wid = f"param-{name}"
            if options is not None:
                allow_blank = type(None) in typing.get_args(info.annotation)
                control: Any = Select(
                    [(str(o), o) for o in options],
                    value=value if value in options else (NO_CHOICE if allow_blank else options[0]),
                    allow_blank=allow_blank, id=wid, compact=True,
                )
            elif info.annotation is bool:
                control = Switch(value=bool(value), id=wid)
            else:
                control = Input(_field_text(value), id=wid, compact=True,
                                placeholder=(info.description or "default")[:60])
            control.tooltip = info.description
            row = Row(Label(name), control)
            row.shown_when = extra.get("shown_when") or {}
            rows.append(row)
        await box.mount_all(rows)
        self._show_relevant_params()

    def _show_relevant_params(self) -> None:
        """Hide the parameters that mean nothing under the other choices made (a field's
        ``shown_when``: Similarity's benchmark fields only with a benchmark prompt)."""
        rows = list(self.query("#params Row").results(Row))
        chosen = {}
        for row in rows:
            for control in row.query(Select).results(Select):
                chosen[str(control.id).removeprefix("param-")] = control.value
        for row in rows:
            row.display = all(chosen.get(field) in values
                              for field, values in row.shown_when.items())

    def _show_game(self) -> None:
        from coop_tui.games import load_game

        table = self.query_one("#payoffs", PayoffTable)
        try:
            table.show(load_game(str(self.query_one("#game", Select).value)))
        except Exception as exc:
            table.show(None, str(exc))

    # ------------------------------------------------------------ reading the form
    def read_setup(self) -> MatchSetup:
        """The form as a MatchSetup; SpecError names the field that cannot be read."""
        from coop_tui.mechanisms import mechanism_class

        game = str(self.query_one("#game", Select).value)
        mechanism = str(self.query_one("#mechanism", Select).value)
        fields = mechanism_class(mechanism).Params.model_fields
        params: dict[str, Any] = {}
        for name, info in fields.items():
            widgets = list(self.query(f"#param-{name}"))
            if not widgets or not widgets[0].parent.display:
                continue  # absent, or hidden as meaningless under the other choices
            w = widgets[0]
            if isinstance(w, Select):
                params[name] = None if w.value is NO_CHOICE else w.value
            elif isinstance(w, Switch):
                params[name] = w.value
            elif isinstance(w, Input):
                params[name] = coerce_param(info.annotation, w.value)
        return MatchSetup(
            seats=self.seat_values(),
            game=game,
            mechanism=mechanism,
            params=params,
            samples=_int_field(self.query_one("#samples", Input).value, "samples", default=1, low=1),
            max_tokens=_int_field(self.query_one("#max-tokens", Input).value, "max tokens", low=1),
            temperature=_float_field(self.query_one("#temperature", Input).value, "temperature"),
            seed=_int_field(self.query_one("#seed", Input).value, "seed", default=0, low=0) or 0,
            name=self.setup.name,
        )

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
        if not self.ready.is_set():
            return
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DELAY, self._preview_now)

    def _preview_now(self) -> None:
        self._preview_timer = None
        self.run_worker(self.refresh_preview, group="preview", exclusive=True)

    def on_screen_suspend(self) -> None:
        """Another screen on top, or this one leaving: drop a preview still rendering.

        Textual cancels a screen's workers only after it has removed the screen's
        widgets, so a preview finishing in between would write to widgets that are
        gone; cancelled here, before the removal starts, it writes nothing. It is made
        again when the screen comes back."""
        pending = self._preview_timer is not None or self.workers_busy()
        if self._preview_timer is not None:
            self._preview_timer.stop()
            self._preview_timer = None
        self.workers.cancel_group(self, "preview")
        self._preview_dropped = self._preview_dropped or pending

    def on_screen_resume(self) -> None:
        if self._preview_dropped:
            self._preview_dropped = False
            self._schedule_preview()

    async def refresh_preview(self) -> None:
        try:
            await self._refresh_preview()
        except NoMatches:
            if not self.leaving():
                raise  # a widget missing from a screen still shown is a real defect

    async def _refresh_preview(self) -> None:
        try:
            setup, sweep = self.validated()
        except ValueError as exc:  # SpecError, or a form field
            self.error = exc
            self.show_message(f"✗ {exc}", error=True)
            self.query_one("#preview-text", Static).set_class(True, "-stale")
            return
        self.error = None
        try:
            prompts = await preview_prompts(sweep)
        except Exception as exc:  # preview is best effort; the match itself will report
            if self.is_attached:
                self.show_message(f"preview failed: {type(exc).__name__}: {exc}", error=True)
            return
        if not self.is_attached:
            return  # the screen went away while the prompts rendered: nothing left to write to
        self.preview = prompts
        first = next(iter(sweep.cells), None)
        seat_agents = dict(enumerate(first.seats)) if first else {}
        out = Text()
        for seat, messages in prompts.items():
            if out:
                out.append("\n\n")
            agent = setup.seats[seat] if seat < len(setup.seats) else seat_agents.get(seat, "?")
            out.append(f"── Seat {seat + 1} · {terminal_text(str(agent), markup=False, limit=NAME_WIDTH)} ",
                       style="bold reverse")
            out.append("\n")
            out.append(terminal_text(prompt_text(messages), markup=False, lines=True))
        if not prompts:
            out.append("(no prompt: the mechanism asked nothing)", style="dim")
        text = self.query_one("#preview-text", Static)
        text.update(out)
        text.set_class(False, "-stale")
        n = sum(1 for _ in sweep.matches())
        self.show_message(Text(f"ready: {n} match(es) · Enter on Start plays it live", style="green"))

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
                await self._build_seats(n)
        elif event.select.id == "mechanism" and str(event.value) != self._built_mechanism:
            await self._build_params(str(event.value))
        elif str(event.select.id).startswith("param-"):
            self._show_relevant_params()
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

    def _sweep_file(self, setup: MatchSetup) -> Path:
        folder = Path(getattr(self.app, "sweep_dir", None) or Path.cwd())
        return folder / f"coop-tui-{setup.game}-{setup.mechanism}.toml"

    def save(self) -> Path | None:
        try:
            setup, _ = self.validated()
        except ValueError as exc:  # SpecError, or a form field
            self.show_message(f"✗ {exc}", error=True)
            return None
        setup.name = f"tui-{setup.game}-{setup.mechanism}"
        path = self._sweep_file(setup)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sweep_toml(setup_to_sweep(setup)), encoding="utf-8")
        self.last_saved = path
        return path

    def action_save(self) -> None:
        path = self.save()
        if path is not None:
            self.show_message(Text(f"saved {path}  ·  run it with: coop-tui --batch {path}", style="green"))

    def headless_command(self, path: Path) -> list[str]:
        exe = Path(sys.executable).parent / "coop-tui"
        base = [str(exe)] if exe.exists() else (
            [shutil.which("coop-tui")] if shutil.which("coop-tui") else [sys.executable, "-m", "coop_tui.cli"]
        )
        return [*base, "--batch", str(path), "--db", self.app_db(), "--yes"]

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
        cmd = self.headless_command(path)
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


def _seed_input(seed: int) -> Input:
    field = Input(str(seed), id="seed", compact=True, type="integer")
    field.tooltip = ("the sweep seed: the same seed gives the same sampled actions and the "
                     "same embedded-model answers (stored answers are reused); another seed "
                     "asks every agent again")
    return field


def _int_field(text: str, name: str, *, default: int | None = None, low: int | None = None) -> int | None:
    raw = text.strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SpecError(name, f"must be a whole number (got {raw!r})") from None
    if low is not None and value < low:
        raise SpecError(name, f"must be at least {low} (got {value})")
    return value


def _float_field(text: str, name: str) -> float | None:
    raw = text.strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise SpecError(name, f"must be a number (got {raw!r})") from None
