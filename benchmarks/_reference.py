"""Import coop-tui from another source tree (a checkout of an earlier commit), so a benchmark
can measure old and new code in one run.

Putting the tree first on ``sys.path`` is not enough: the editable install maps
``coop_tui.games``, ``coop_tui.mechanisms``, ``coop_tui.screens`` and ``coop_tui.data`` to
this checkout's top-level folders through a finder that runs before the path, so the old
``coop_tui`` would import the new games. The finder here runs first and maps every
``coop_tui`` package to the tree given, with the same layout as ``pyproject.toml``'s
``package-dir``.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOP_LEVEL = {"coop_tui.games": "games", "coop_tui.mechanisms": "mechanisms",
             "coop_tui.screens": "screens", "coop_tui.data": "data"}
"""Packages that live outside ``coop_tui/`` in a checkout (``package-dir``)."""


class SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``coop_tui`` and its subpackages in one source tree, before any other finder."""

    def __init__(self, root: Path) -> None:
        self.packages = {"coop_tui": root / "coop_tui",
                         **{name: root / folder for name, folder in TOP_LEVEL.items()}}

    def find_spec(self, fullname: str, path: object = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        folder = self.packages.get(fullname)
        if folder is not None:
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
            )
        parent = fullname.rpartition(".")[0]
        if parent and fullname.startswith("coop_tui.") and parent in sys.modules:
            return importlib.machinery.PathFinder.find_spec(fullname, sys.modules[parent].__path__)
        return None


def check_reference_arg(parser: argparse.ArgumentParser, path: str | None) -> None:
    """Refuse ``--reference-src PATH`` at once (exit 2) when PATH is not a checkout."""
    if path and not (Path(path) / "coop_tui").is_dir():
        parser.error(f"--reference-src {path}: no coop_tui package there; "
                     "give the root of a coop-tui checkout")


def use_source_tree(root: str | Path) -> Path:
    """Make ``import coop_tui`` (and its top-level packages) load from ``root``; returns the
    resolved root. Call before anything imports ``coop_tui``."""
    resolved = Path(root).resolve()
    if not (resolved / "coop_tui" / "__init__.py").is_file():
        raise SystemExit(f"{root}: no coop_tui package there; give the root of a checkout")
    if any(name == "coop_tui" or name.startswith("coop_tui.") for name in sys.modules):
        raise SystemExit("coop_tui was imported before the source tree was chosen")
    sys.meta_path.insert(0, SourceTreeFinder(resolved))
    return resolved


def check_loaded_from(root: Path) -> None:
    """Refuse a measurement in which any loaded ``coop_tui`` module came from elsewhere."""
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        ours = name == "coop_tui" or name.startswith("coop_tui.")
        if ours and where and not Path(where).resolve().is_relative_to(root):
            raise SystemExit(f"{name} was imported from {where}, not from {root}")
