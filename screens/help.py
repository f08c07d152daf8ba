"""The help screen: every key of every screen, read from the screens' own bindings.

Reading ``BINDINGS`` (instead of a hand-kept list) keeps the help honest when keys
change; screens written by others (runs, inspector, analysis) are listed when present.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from coop_tui.screens.live import LiveScreen
from coop_tui.screens.setup import SetupScreen
from coop_tui.screens.widgets import optional_screen

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
    "Everywhere": [
        ("f1", "this help (? on screens without text fields)"),
        ("ctrl+q", "quit coop-tui"),
        ("ctrl+p", "command palette"),
    ],
}


def _key_name(key: str) -> str:
    names = {"question_mark": "?", "escape": "esc", "left": "←", "right": "→", "up": "↑",
             "down": "↓", "slash": "/", "left_square_bracket": "[", "right_square_bracket": "]",
             "delete": "del", "space": "space", "enter": "enter", "plus": "+", "minus": "-"}
    return ", ".join(names.get(k.strip(), k.strip()) for k in key.split(","))


def bindings_of(cls: Any) -> list[tuple[str, str]]:
    """(key, description) for every binding a screen class declares."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for b in getattr(cls, "BINDINGS", []):
        if isinstance(b, Binding):
            key, desc = b.key, b.description
        elif isinstance(b, tuple) and len(b) >= 3:
            key, desc = b[0], b[2]
        elif isinstance(b, tuple) and len(b) == 2:
            key, desc = b[0], b[1]
        else:
            continue
        if not desc:
            continue
        name = _key_name(key)
        if (name, desc) in seen:
            continue
        seen.add((name, desc))  # type: ignore[arg-type]
        out.append((name, desc))
    return out


def key_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    sections: list[tuple[str, list[tuple[str, str]]]] = [
        ("Setup", bindings_of(SetupScreen) + EXTRA_KEYS["Setup"]),
        ("Live match", bindings_of(LiveScreen) + EXTRA_KEYS["Live match"]),
        ("Play (your seat)", EXTRA_KEYS["Play (your seat)"]),
    ]
    for module, name, title in (
        ("runs", "RunsScreen", "Runs"),
        ("inspector", "InspectorScreen", "Decision inspector"),
        ("analysis", "AnalysisScreen", "Analysis"),
    ):
        try:
            cls = optional_screen(module, name)
        except Exception:  # a sibling screen with a bug must not break help
            cls = None
        if cls is not None:
            keys = bindings_of(cls)
            if keys:
                sections.append((title, keys))
    sections.append(("Everywhere", EXTRA_KEYS["Everywhere"]))
    return sections


def section_table(title: str, keys: list[tuple[str, str]]) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", box=None,
                  show_header=False, padding=(0, 1), expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True, min_width=6)
    table.add_column("what", ratio=1)
    for key, desc in keys:
        table.add_row(key, desc)
    return table


class HelpScreen(ModalScreen[None]):
    """Every key, grouped by screen; any key in the list closes it with esc/q/?."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96%; max-width: 150; height: 92%; border: round $accent; background: $surface;
        padding: 0 1;
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
        # two balanced columns when wide (one column when narrow, in this order)
        total = sum(len(keys) + 2 for _, keys in sections)
        left, used = [], 0
        for title, keys in sections:
            if used < total / 2:
                left.append((title, keys))
                used += len(keys) + 2
        right = sections[len(left):]
        with VerticalScroll():
            yield Static("coop-tui keys  ·  esc closes", id="help-title")
            with Horizontal(id="help-cols"):
                for column in (left, right):
                    with Vertical(classes="help-col"):
                        for title, keys in column:
                            yield Static(section_table(title, keys))

    def on_mount(self) -> None:
        self._fit(self.app.size.width)

    def on_resize(self, event: Any) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        self.set_class(width >= 130, "-wide")

    def action_close(self) -> None:
        self.dismiss(None)
