"""Text from outside made safe for a terminal: the one path every such text takes.

Names (a sweep's, an agent's, a model's, an experiment's), model answers, imported tables
and error texts come from files, databases and providers anyone can write. Printed raw, an
escape sequence in one (``\\x1b]0;...\\x07`` retitles the window, ``\\x1b[2J`` clears the
screen), a C1 control (``\\x9b`` is a one-byte CSI) or a bidi override (U+202E shows text
reversed) drives the reader's terminal, and Rich or Textual markup in one (``[red]``,
``[$accent]``, ``[@click=...]``) restyles or acts on the output around it.

:func:`terminal_text` shows control characters as visible escapes (``\\x1b``, ``\\u202e``)
and, for strings Rich or Textual parse as markup, escapes the markup; :func:`widget_text` is the same text as
a ``rich.text.Text`` for Textual widgets (a ``str`` given to ``Static``, ``Label`` or a
``DataTable`` cell is parsed as Textual markup, which Rich's escaping does not cover);
:func:`terminal_data` applies it inside nested data (a report before it is rendered).
``limit`` cuts a name to a table's width with "…", and :func:`short_names` finds the long
names of a report to cut (the inspector and JSON keep them whole).
:data:`CONTROL` is what a spec refuses in a name.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape
from rich.text import Text

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
"""Control characters (C0 except tab and newline, DEL, C1) and invisible direction marks."""
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-zA-Z#/@$ ][^[]*?])")
"""What Rich or Textual may read as a tag: Rich's own pattern, widened to Textual's
(variables ``[$accent]``, capitals ``[B]``, a leading space ``[ red]``); both read a
backslash before it as a literal bracket."""
NAME_WIDTH = 40
"""Characters of a name shown in a table cell or a one-line summary (then "…")."""
FILE_NAME_WIDTH = 96
"""The same for text written to a file or a pipe, where a table is as wide as it needs:
real names stay whole, a hostile 10,000-character one does not fill a line."""


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shorten(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, the last one "…" (unchanged when it fits)."""
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def terminal_text(text: Any, *, markup: bool = True, lines: bool = False,
                  limit: int | None = None) -> Any:
    """``text`` with control characters and direction marks as ``\\xNN`` / ``\\uNNNN``;
    ``markup``: Rich and Textual markup escaped too (for a string parsed as markup);
    ``lines``: newlines and tabs kept, a CR LF pair read as a newline (a model's answer, a
    file's lines; a lone CR, which would overwrite the line, is shown); ``limit``: cut to
    that many characters first (see :func:`shorten`). Non-strings are returned unchanged."""
    if not isinstance(text, str):
        return text
    text = shorten(text, limit)
    if lines:
        text = CONTROL.sub(_visible, text.replace("\r\n", "\n"))
    else:
        text = _ANY_CONTROL.sub(_visible, text)
    return escape(text, _escape=_MARKUP_TAG.sub) if markup and "[" in text else text


def widget_text(text: Any, style: str = "", *, lines: bool = False,
                limit: int | None = None) -> Text:
    """:func:`terminal_text` as a ``Text`` for a Textual widget or a Rich table cell: shown
    as written, never parsed as markup (``None`` shows as an empty text)."""
    shown = "" if text is None else terminal_text(str(text), markup=False, lines=lines, limit=limit)
    return Text(shown, style=style)


NAME_KEYS = frozenset({
    "agent", "agents", "opponent", "model", "models", "player", "name", "run_name",
    "population", "matchup_matrix", "shares", "models_outside_paper", "superseded_by_model",
})
"""Keys under which a report holds names: a name, a list of names, or a dict keyed by them."""


def short_names(value: Any, limit: int | None = None) -> dict[str, str]:
    """Each name in ``value`` (a report: the strings under :data:`NAME_KEYS`, at any depth)
    longer than ``limit`` (default :data:`NAME_WIDTH`), mapped to its cut form; names
    sharing a cut form are cut longer until they differ, so rows keyed by them stay apart."""
    limit = limit or NAME_WIDTH
    found: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, item in v.items():
                if k in NAME_KEYS:
                    held = item if isinstance(item, list | tuple | dict) else [item]
                    found.update(x for x in held if isinstance(x, str) and len(x) > limit)
                walk(item)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item)

    walk(value)
    out: dict[str, str] = {}
    for name in sorted(found):
        width = limit
        while (cut := shorten(name, width)) in out.values() or any(
                other != name and shorten(other, width) == cut for other in found):
            width += 8
        out[name] = cut
    return out


def terminal_data(value: Any, names: dict[str, str] | None = None) -> Any:
    """:func:`terminal_text` on every string (keys included) inside dicts and lists, for a
    report rendered as Rich tables; a string that is one of ``names`` (see
    :func:`short_names`) is shown cut."""
    names = names or {}
    if isinstance(value, str):
        return terminal_text(names.get(value, value))
    if isinstance(value, dict):
        return {terminal_data(k, names): terminal_data(v, names) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(terminal_data(v, names) for v in value)
    return value


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a sweep, agent or experiment (None: it can)."""
    if CONTROL.search(name) or "\n" in name or "\t" in name:
        return ("holds a control character (an escape sequence, a newline, ...); "
                "use printable characters only")
    if len(name) > 200:
        return f"is {len(name):,} characters long; use at most 200"
    return None
