"""The live screen's title line: what is played, under which condition.

A condition can have twenty fields (a Team tournament); the title shows it whole when it
fits in its two lines, else only the fields set away from their default.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from coop_tui.mechanisms import MechanismError, mechanism_class
from coop_tui.protocols import shown_value
from coop_tui.session import Session
from coop_tui.terminal import terminal_text

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
    return " ".join(f"{k}={_short(shown_value(k, v))}" for k, v in condition.items())


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def title_text(session: Session, width: int | None) -> Text:
    """Live or replay, the session's title and as much of its condition as fits two lines
    of a terminal ``width`` wide (None before the screen is on one: the full width)."""
    out = Text()
    out.append(" coop-tui ", style="bold reverse")
    out.append(" replay " if session.kind == "replay" else " live ", style="bold")
    out.append(terminal_text(session.title, markup=False, limit=200))
    # the whole condition when it is short and fits in the title's two lines, else what
    # was changed (a team tournament's twenty parameters would fill the lines)
    room = TITLE_CONDITION_WIDTH
    if width is not None:
        room = min(room, TITLE_LINES * width - out.cell_len - 3)
    cond = condition_text(condition_shown(getattr(session, "mechanism", ""), session.condition, room))
    if cond:
        out.append(f"   {terminal_text(cond, markup=False)}", style="dim")
    return out


class LiveTitle(Static):
    """The title line; redrawn when the terminal's width changes and on each new match."""

    def __init__(self, session: Session, width: int | None, **kwargs: Any) -> None:
        self.session = session
        super().__init__(title_text(session, width), **kwargs)

    def redraw(self) -> None:
        self.update(title_text(self.session, self.app.size.width if self.is_attached else None))
