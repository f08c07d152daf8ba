"""The help screen: every key of every screen, read from the screens' own bindings.

Every module of ``coop_tui.screens`` is looked at and every screen class in it is listed
with the bindings it declares (its own and those of our screen classes it inherits), so a
key added to a screen shows up here without anyone editing this file. Keys that are not
bindings (Enter on a table row, typing in a field) are described in ``EXTRA_KEYS``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

import coop_tui.screens

OWN_PREFIX = "coop_tui."
"""Bindings declared by classes of these modules are ours to list; Textual's own (tab and
shift+tab between widgets) are described once, under "Everywhere"."""

ORDER = ("Setup", "Live match", "Play (your seat)", "Runs", "Decisions of a match",
         "Delete a run", "Decision inspector", "Analysis", "Compare runs", "This help", "Everywhere")
"""Sections in this order; a screen not named here comes after the named ones."""

EXTRA_KEYS: dict[str, list[tuple[str, str]]] = {
    "Setup": [
        ("enter", "on Start (focused at launch) or in any field: start the live match"),
        ("tab / shift+tab", "move between fields"),
        ("→ (right)", "in an agent field: accept the suggested completion"),
    ],
    "Live match": [
        ("tab", "move focus between seat panes and your input"),
        ("click a pane", "select that seat (i inspects its last decision)"),
    ],
    "Play (your seat)": [
        ("0, 1, …", "type an action number: A0, A1, … (a pure action)"),
        ("A0=70 A1=30", "or type a mixed strategy (JSON works too)"),
        ("enter", "confirm your move"),
    ],
    "Runs": [
        ("enter", "on a run: its matches; on a match: replay it"),
        ("↑ / ↓", "move between runs (their matches follow)"),
    ],
    "Compare runs": [
        ("enter", "on a run: compare run A with it; in a field: compare (or list that database's runs)"),
    ],
    "Everywhere": [
        ("f1, ?", "this help (? on screens without text fields)"),
        ("ctrl+q", "quit coop-tui"),
        ("ctrl+p", "command palette"),
        ("tab / shift+tab", "next / previous widget"),
    ],
}

SHARED_ACTIONS = ("help",)
"""Actions every screen binds the same way: listed once, under "Everywhere"."""

KEY_NAMES = {"question_mark": "?", "escape": "esc", "left": "←", "right": "→", "up": "↑",
             "down": "↓", "slash": "/", "left_square_bracket": "[", "right_square_bracket": "]",
             "delete": "del", "plus": "+", "minus": "-"}


def key_name(key: str) -> str:
    """A binding's key(s) as a person types them: ``escape,q`` is ``esc, q``."""
    return ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def _declared(cls: type) -> list[Any]:
    """The bindings of ``cls`` and of our classes it inherits from, nearest first."""
    out: list[Any] = []
    for klass in cls.__mro__:
        if klass.__module__.startswith(OWN_PREFIX):
            out.extend(klass.__dict__.get("BINDINGS", []))
    return out


def bindings_of(cls: Any) -> list[tuple[str, str]]:
    """(keys, description) for every described binding a screen class declares, except
    the help key every screen has; keys doing the same thing share one row (``q, esc
    Back``)."""
    rows: dict[str, list[str]] = {}
    for b in _declared(cls):
        if isinstance(b, Binding):
            key, action, desc = b.key, b.action, b.description
        elif isinstance(b, tuple) and len(b) >= 3:
            key, action, desc = b[0], b[1], b[2]
        else:
            continue
        if not desc or action in SHARED_ACTIONS:
            continue
        keys = rows.setdefault(desc, [])
        for name in key_name(key).split(", "):
            if name not in keys:
                keys.append(name)
    return [(", ".join(keys), desc) for desc, keys in rows.items()]


def screen_classes() -> list[type[Screen]]:
    """Every screen class defined in a module of ``coop_tui.screens`` (all imported), or
    in a screen's own package (``screens/live/`` exports the ``LiveScreen`` of its
    ``screen.py``)."""
    found: list[type[Screen]] = []
    package = coop_tui.screens
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Screen)
                    and _defined_in(value, module.__name__) and value not in found):
                found.append(value)
    return found


def _defined_in(cls: type, module: str) -> bool:
    return cls.__module__ == module or cls.__module__.startswith(f"{module}.")


def help_title(cls: type) -> str:
    """The section a screen's keys are listed under (its ``HELP_TITLE``, or its name)."""
    return str(cls.__dict__.get("HELP_TITLE") or cls.__name__.removesuffix("Screen"))


def key_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, rows) for every screen with keys, the extra keys merged into their screen."""
    sections: dict[str, list[tuple[str, str]]] = {}
    for cls in screen_classes():
        keys = bindings_of(cls)
        if keys:
            sections.setdefault(help_title(cls), []).extend(keys)
    for title, keys in EXTRA_KEYS.items():
        sections.setdefault(title, []).extend(keys)
    rank = {title: i for i, title in enumerate(ORDER)}
    # the named sections in ORDER, any other screen after them, "Everywhere" last
    return sorted(sections.items(),
                  key=lambda item: (item[0] == "Everywhere", rank.get(item[0], len(ORDER))))


def section_table(title: str, keys: list[tuple[str, str]]) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", box=None,
                  show_header=False, padding=(0, 1), expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True, min_width=6)
    table.add_column("what", ratio=1)
    for key, desc in keys:
        table.add_row(key, desc)
    return table


class HelpScreen(ModalScreen[None]):
    """Every key, grouped by screen; esc, q, ? or f1 closes it.

    The list is longer than a small terminal: it scrolls (arrows, PgUp / PgDn, Home /
    End, the wheel), shows its scrollbar, and its bottom border says when more is below."""

    HELP_TITLE = "This help"
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96%; max-width: 150; height: 100%; max-height: 46; border: round $accent;
        background: $surface; padding: 0 1; scrollbar-size-vertical: 1;
        border-subtitle-color: $warning; border-subtitle-style: bold;
    }
    HelpScreen #help-title { height: 1; text-style: bold; margin: 0 0 1 0; }
    HelpScreen #help-cols { layout: vertical; height: auto; }
    HelpScreen.-wide #help-cols { layout: horizontal; }
    HelpScreen .help-col { width: 100%; height: auto; }
    HelpScreen.-wide .help-col { width: 1fr; margin: 0 1 0 0; }
    HelpScreen .help-col > Static { height: auto; margin: 0 0 1 0; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
        Binding("f1", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        sections = key_sections()
        # two columns when wide (one when narrow, in this order), split where the taller
        # of the two is shortest: a section takes its rows plus its title and a gap
        heights = [len(keys) + 2 for _, keys in sections]
        split = min(range(1, len(sections) + 1),
                    key=lambda k: max(sum(heights[:k]), sum(heights[k:])))
        left, right = sections[:split], sections[split:]
        with VerticalScroll(id="help-scroll"):
            yield Static("coop-tui keys  ·  esc closes  ·  ↑ ↓ PgUp PgDn scroll", id="help-title")
            with Horizontal(id="help-cols"):
                for column in (left, right):
                    with Vertical(classes="help-col"):
                        for title, keys in column:
                            yield Static(section_table(title, keys))

    def on_mount(self) -> None:
        self._fit(self.app.size.width)
        scroll = self.query_one("#help-scroll", VerticalScroll)
        scroll.focus()  # the arrows and PgDn scroll it at once
        self.watch(scroll, "scroll_y", self._show_more, init=False)
        self.watch(scroll, "virtual_size", self._show_more, init=False)
        self.call_after_refresh(self._show_more)

    def on_resize(self, event: Any) -> None:
        self._fit(event.size.width)
        self.call_after_refresh(self._show_more)

    def _fit(self, width: int) -> None:
        self.set_class(width >= 130, "-wide")

    def _show_more(self, *_: Any) -> None:
        """Say in the bottom border whether more keys are below (or above) the fold."""
        scroll = self.query_one("#help-scroll", VerticalScroll)
        below = scroll.scroll_y < scroll.max_scroll_y
        above = scroll.scroll_y > 0
        scroll.border_subtitle = ("↓ more below" if below else "↑ more above" if above else "")

    def action_close(self) -> None:
        self.dismiss(None)
