"""The size rule of docs/development.md#size-exceptions, kept by a test.

A class over ~400 lines or a function over ~80 holds more than one job more often than
not. Rather than a threshold nobody reads, every such piece of code is either split or
listed, with a reason, in the "Size exceptions" table of docs/development.md; this test
fails on a new one (a decision to make, not a drift) and on a listed one that has since
shrunk (so the list stays true).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("coop_tui", "games", "mechanisms", "screens")
CLASS_LINES, FUNCTION_LINES = 400, 80
"""The limits; a docstring counts, as a reader reads it too."""


def oversize() -> dict[str, int]:
    """{"path:Qualified.name": lines} for every class and function over its limit."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                limit = CLASS_LINES if isinstance(child, ast.ClassDef) else FUNCTION_LINES
                if lines > limit:
                    found[f"{path}:{name}"] = lines
                visit(child, path, f"{name}.")

    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            path = file.relative_to(ROOT).as_posix()
            visit(ast.parse(file.read_text(encoding="utf-8")), path, "")
    return found


def listed() -> dict[str, str]:
    """{"path:Qualified.name": reason} from the table under "## Size exceptions"."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text.split("## Size exceptions", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([^`]+:[^`]+)`\s*\|[^|]*\|\s*(.*?)\s*\|\s*$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def test_every_oversize_class_and_function_is_listed_with_a_reason() -> None:
    found, exceptions = oversize(), listed()
    new = {name: lines for name, lines in found.items() if name not in exceptions}
    assert not new, (
        f"over {CLASS_LINES} lines (a class) or {FUNCTION_LINES} (a function): {new}; split it "
        "along its seams, or list it with a reason in docs/development.md#size-exceptions"
    )
    assert all(reason.strip() for reason in exceptions.values()), "every exception needs a reason"


def test_the_exception_list_has_no_stale_entries() -> None:
    stale = sorted(set(listed()) - set(oversize()))
    assert not stale, f"listed in docs/development.md#size-exceptions but no longer oversize: {stale}"
