"""docs/development.md's threat tables stay true: each surface's table has a row for every
class of input, and every test a row names exists (its file, and a function of that name
in it, found with ``ast``). A renamed or deleted test makes its row fail here instead of
leaving the table pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
CLASSES = ("malformed", "oversized", "unknown enum or status", "stale or reused identity",
           "concurrent writer", "wrong file type", "tampered", "hostile text")
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def threat_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("\n## Threat tables")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def surfaces() -> dict[str, list[list[str]]]:
    """Each ``### surface`` heading with its table's rows (cells stripped), header and
    separator left out."""
    out: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in threat_section().splitlines():
        if line.startswith("### "):
            current = out.setdefault(line[4:].strip(), [])
        elif current is not None and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("class", "") or set(cells[0]) <= set("-: "):
                continue
            current.append(cells)
    return out


@cache
def functions_in(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def test_the_section_has_the_surfaces_of_issue_41() -> None:
    names = " ".join(surfaces()).lower()
    for surface in ("batch api files", "merge sources", "command-line paths",
                    "study files and templates", ".env", "imports", "provider streams"):
        assert surface in names, f"no threat table for {surface}"


@pytest.mark.parametrize("surface", sorted(surfaces()))
def test_every_class_has_a_row_and_every_row_names_tests_that_exist(surface: str) -> None:
    rows = surfaces()[surface]
    classes = [cells[0] for cells in rows]
    assert sorted(classes) == sorted(CLASSES), f"{surface}: rows {classes}"
    for cells in rows:
        refs = TEST_REF.findall(cells[-1])
        assert refs, f"{surface} / {cells[0]}: names no test (`tests/file.py::test_name`)"
        for path, name in refs:
            assert (ROOT / path).is_file(), f"{surface} / {cells[0]}: no file {path}"
            assert name in functions_in(path), f"{surface} / {cells[0]}: no {name} in {path}"
