"""Text from files and databases made safe for a terminal.

Names (a sweep's, an agent's, an experiment's) and other stored strings come from files
anyone can write. Printed raw, an escape sequence in one (``\\x1b]0;...\\x07``, ``\\x1b[2J``)
retitles or clears the reader's terminal, and Rich markup in one (``[red]``) restyles
the output around it. :func:`terminal_text` shows control characters as visible escapes
and Rich markup as literal brackets; :func:`terminal_data` does so inside nested data (a
report before it is rendered). :data:`CONTROL` is what a spec refuses in a name.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
"""Control characters (C0 except tab and newline, DEL, C1) and invisible direction marks."""
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: Any, *, markup: bool = True) -> Any:
    """``text`` with control characters as ``\\xNN`` and (``markup``) Rich markup escaped;
    non-strings unchanged."""
    if not isinstance(text, str):
        return text
    text = _ANY_CONTROL.sub(_visible, text)
    return escape(text) if markup and "[" in text else text


def terminal_data(value: Any) -> Any:
    """:func:`terminal_text` on every string (keys included) inside dicts and lists."""
    if isinstance(value, str):
        return terminal_text(value)
    if isinstance(value, dict):
        return {terminal_data(k): terminal_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(terminal_data(v) for v in value)
    return value


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a sweep, agent or experiment (None: it can)."""
    if CONTROL.search(name) or "\n" in name or "\t" in name:
        return ("holds a control character (an escape sequence, a newline, ...); "
                "use printable characters only")
    if len(name) > 200:
        return f"is {len(name):,} characters long; use at most 200"
    return None
