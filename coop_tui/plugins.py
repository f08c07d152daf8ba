"""Finding plugins: the shipped modules of each registry, then installed packages.

Games, mechanisms, strategies and report sections are one module each in their folder.
Each folder's registry imports all of its modules once, on first lookup, so a module
registers itself by being there. Modules named ``_x`` and the folder's own helpers are
not plugins.

After its folder, the same call loads the entry points of the registry's group
(``coop_tui.games``, ``coop_tui.strategies``, ``coop_tui.mechanisms``, ``coop_tui.agents``,
``coop_tui.report_sections``): an installed package names a module whose import runs the
shipped decorators, so shipped and installed parts are found by one door (simonw/llm
loads its default plugins through the same manager as installed ones for that reason).

A plugin is code the user installed, so it runs with the user's rights like any import;
what this module guards against is a *broken* plugin, not a hostile one: each load is
wrapped, a failure is named in one warning and recorded for ``coop-tui list plugins``,
and the rest of coop-tui goes on. ``COOP_TUI_LOAD_PLUGINS=a,b`` loads only the named
distributions or entry points (empty: none); under the test suite, entry points load only
when that variable asks for them, so no test depends on what happens to be installed.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import threading
import warnings
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

GROUPS = ("coop_tui.games", "coop_tui.strategies", "coop_tui.mechanisms", "coop_tui.agents",
          "coop_tui.report_sections")
"""The entry-point groups coop-tui reads, one per registry."""

LOAD_ENV = "COOP_TUI_LOAD_PLUGINS"
"""Comma-separated distribution or entry-point names: load only these (empty: none)."""

TEST_FLAG = "_coop_tui_called_from_test"
"""Set on ``sys`` by the test suite's conftest: entry points then load only when
:data:`LOAD_ENV` names them (llm and Datasette guard their suites the same way)."""

NOT_ASKED = f"not loaded: {LOAD_ENV} does not name it"

_lock = threading.RLock()
"""Held while a registry loads: a second thread asking the same registry meanwhile (the
setup screen fills its form in a worker while the screen checks a seat) waits for the
whole registry instead of seeing it half filled. Re-entrant: a plugin's import may ask
another registry."""
_imported: set[str] = set()
_loaded_groups: set[str] = set()
_records: dict[tuple[str, str, str], PluginRecord] = {}


@dataclass(frozen=True)
class PluginRecord:
    """One entry point as ``coop-tui list plugins`` shows it."""

    group: str
    name: str
    dist: str
    version: str
    value: str
    error: str | None = None
    """None when it loaded; else why not (the exception, or that it was not asked for)."""

    def row(self) -> dict[str, Any]:
        return asdict(self)


class PluginWarning(UserWarning):
    """An installed plugin failed to load (the rest of coop-tui is unaffected)."""


_format_warning = warnings.formatwarning


def _format(message: Warning | str, category: type[Warning], filename: str, lineno: int,
            line: str | None = None) -> str:
    """A plugin's failure reads as one line naming it, not as a warning from our source
    line (the user did not write that line and cannot act on it)."""
    if issubclass(category, PluginWarning):
        return f"coop-tui: warning: {message}\n"
    return _format_warning(message, category, filename, lineno, line)


warnings.formatwarning = _format


def import_plugins(package: str, path: Iterable[str], skip: Collection[str] = (),
                   group: str | None = None) -> None:
    """Import every plugin module of ``package`` (once per process), then the entry
    points of ``group`` when given."""
    with _lock:
        if package in _imported:
            return
        _imported.add(package)
        for info in pkgutil.iter_modules(path):
            if info.name not in skip and not info.name.startswith("_"):
                importlib.import_module(f"{package}.{info.name}")
        if group is not None:
            load_entry_points(group)


def _wanted() -> set[str] | None:
    """The names :data:`LOAD_ENV` allows (None: every one)."""
    raw = os.environ.get(LOAD_ENV)
    if raw is None:
        return set() if getattr(sys, TEST_FLAG, False) else None
    return {part.strip().lower() for part in raw.split(",") if part.strip()}


def _dist_of(ep: EntryPoint) -> tuple[str, str]:
    dist = ep.dist
    if dist is None:
        return "?", "?"
    return str(dist.metadata["Name"] or dist.name), str(dist.version)


def group_entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of one group, in a stable order (by name)."""
    return sorted(entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def load_entry_points(group: str) -> list[Any]:
    """Load each entry point of ``group`` once per process; returns what loaded.

    An entry point that fails to import is named in one :class:`PluginWarning` (its
    package and error) and recorded; the others still load."""
    with _lock:
        if group in _loaded_groups:
            return []
        _loaded_groups.add(group)
        return _load_group(group)


def _load_group(group: str) -> list[Any]:
    wanted = _wanted()
    loaded: list[Any] = []
    for ep in group_entry_points(group):
        dist, version = _dist_of(ep)
        key = (group, ep.name, ep.value)
        if wanted is not None and not {dist.lower(), ep.name.lower()} & wanted:
            _records[key] = PluginRecord(group, ep.name, dist, version, ep.value, NOT_ASKED)
            continue
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure of someone else's code
            error = f"{type(exc).__name__}: {exc}"
            _records[key] = PluginRecord(group, ep.name, dist, version, ep.value, error)
            # someone else's names and messages: shown, never obeyed by the terminal
            # (imported here: it brings rich, which a registry's importers need not load)
            from coop_tui.terminal import terminal_text

            text = terminal_text(f"plugin {dist} ({group} entry point {ep.name!r} = "
                                 f"{ep.value}) failed to load and is left out: {error}",
                                 markup=False)
            warnings.warn(text, PluginWarning, stacklevel=2)
            continue
        _records[key] = PluginRecord(group, ep.name, dist, version, ep.value)
        loaded.append((ep, obj))
    return loaded


def plugin_records() -> list[PluginRecord]:
    """Every entry point seen so far (call the registries first to see them all)."""
    return sorted(_records.values(), key=lambda r: (r.group, r.name, r.dist))
