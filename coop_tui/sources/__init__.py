"""The registry of paper sources: every module of this package that sets ``SOURCE``.

See :mod:`coop_tui.sources.base`. Adding a paper is one module here (plus its stand-in
tree under ``tests/data/sources/`` and its tests); nothing keeps a list by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from pathlib import Path

from coop_tui.sources.base import LoadedSource, Required, SourceError, SourceWording
from coop_tui.sources.loading import source_root

_registered: dict[str, SourceWording] = {}
"""Sources added at run time (:func:`register`): a test's stand-in, a plugin's paper."""


def sources() -> dict[str, SourceWording]:
    """Every paper source, by name: the package's modules and any registered one."""
    return dict(sorted({**_package_sources(), **_registered}.items()))


def register(source: SourceWording) -> Callable[[], None]:
    """Add ``source`` under its name (it wins over a package module of the same name) and
    return the function that removes it again. Tests register a stand-in adapter this way
    so the wiring is checked without any paper's adapter."""
    _registered[source.name] = source

    def unregister() -> None:
        if _registered.get(source.name) is source:
            del _registered[source.name]

    return unregister


@cache
def _package_sources() -> dict[str, SourceWording]:
    found: dict[str, SourceWording] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in ("base", "loading"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        source = getattr(module, "SOURCE", None)
        if isinstance(source, SourceWording):
            found[source.name] = source
    return found


def get(name: str) -> SourceWording:
    """The source called ``name``; KeyError naming the known ones."""
    try:
        return sources()[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; use one of "
                       + ", ".join(repr(n) for n in sources())) from None



def open_source(name: str, path: str | Path) -> LoadedSource:
    """The clone at ``path`` checked and loaded by the source ``name``: a missing path, file,
    function or changed signature is a :class:`SourceError` naming the file and the fix."""
    root = source_root(path, name)
    loaded = get(name).load(root)
    if not isinstance(loaded, LoadedSource):  # an adapter's bug, said plainly
        raise SourceError(f"sources.{name}", f"the {name} adapter's load() returned "
                          f"{type(loaded).__name__}, not a LoadedSource")
    return loaded


def commit_warning(loaded: LoadedSource) -> str | None:
    """The warning for a clone at another commit than the adapter was checked against
    (None when it is that commit): the messages may differ from what was verified."""
    wording = loaded.wording
    tested = wording.tested_commit
    if not tested or loaded.commit == tested:
        return None
    return (f"sources.{wording.name}: {loaded.root} is at commit {loaded.commit}, but coop-tui "
            f"was checked against {tested} of {wording.repository}; its messages may differ "
            f"from the paper's (check out {tested} to be sure, see docs/wording.md)")


def record(loaded: LoadedSource) -> dict[str, str]:
    """What a run stores about a source it read (name, clone, commit, tested commit)."""
    return {"name": loaded.wording.name, "path": str(loaded.root), "commit": loaded.commit,
            "tested_commit": loaded.wording.tested_commit}


__all__ = ["LoadedSource", "Required", "SourceError", "SourceWording", "commit_warning", "get",
           "open_source", "record", "register", "sources"]
