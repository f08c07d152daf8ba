"""The registry of paper sources: every module of this package that sets ``SOURCE``.

See :mod:`coop_tui.sources.base`. Adding a paper is one module here (plus its stand-in
tree under ``tests/data/sources/`` and its tests); nothing keeps a list by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from coop_tui.sources.base import LoadedSource, Required, SourceError, SourceWording


@cache
def sources() -> dict[str, SourceWording]:
    """Every paper source of the package, by name."""
    found: dict[str, SourceWording] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in ("base", "loading"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        source = getattr(module, "SOURCE", None)
        if isinstance(source, SourceWording):
            found[source.name] = source
    return dict(sorted(found.items()))


def get(name: str) -> SourceWording:
    """The source called ``name``; KeyError naming the known ones."""
    try:
        return sources()[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; use one of "
                       + ", ".join(repr(n) for n in sources())) from None


__all__ = ["LoadedSource", "Required", "SourceError", "SourceWording", "get", "sources"]
