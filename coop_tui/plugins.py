"""Finding plugins: games, mechanisms and strategies are one module each in their folder.

Each folder's registry imports all of its modules once, on first lookup, so a module
registers itself by being there. Modules named ``_x`` and the folder's own helpers are
not plugins.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Collection, Iterable

_imported: set[str] = set()


def import_plugins(package: str, path: Iterable[str], skip: Collection[str] = ()) -> None:
    """Import every plugin module of ``package`` (once per process)."""
    if package in _imported:
        return
    _imported.add(package)
    for info in pkgutil.iter_modules(path):
        if info.name not in skip and not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
