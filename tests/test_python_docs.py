"""docs/python.md runs: its ```python blocks are executed in order in a temporary folder.

A line ``# VALUE`` right after a top-level expression is that expression's expected
``repr``, so the outputs printed on the page are checked too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def _with_checks(block: str) -> str:
    """The block with each ``expr`` + ``# expected`` pair turned into an assertion."""
    lines = block.split("\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        is_expression = False
        if line and not line[0].isspace() and not line.startswith("#"):
            try:
                is_expression = isinstance(ast.parse(line).body[0], ast.Expr)
            except (SyntaxError, IndexError):
                is_expression = False
        if is_expression and following.startswith("# "):
            out.append(f"__check({line.split('  #')[0].strip()}, {following[2:]!r})")
        else:
            out.append(line)
    return "\n".join(out)


def test_python_page_runs_and_prints_what_it_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COOP_TUI_DB", str(tmp_path / "default.db"))
    checked: list[str] = []

    def check(value: object, expected: str) -> None:
        assert repr(value) == expected
        checked.append(expected)

    namespace: dict[str, object] = {"__check": check, "__name__": "__doc__"}
    blocks = _blocks()
    assert len(blocks) >= 5
    for number, block in enumerate(blocks, 1):
        code = compile(_with_checks(block), f"{DOC.name} block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - the documentation's own code
    assert len(checked) >= 4  # the printed outputs were compared, not skipped
    assert (tmp_path / "notebook.db").exists()
