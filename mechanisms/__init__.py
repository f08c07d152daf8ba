"""Mechanisms: one module per mechanism, found by the registry.

Drop a module in this folder that defines a ``Mechanism`` subclass decorated with
``@register_mechanism`` and it is available to sweeps, the TUI and reports.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil

from coop_tui.mechanisms.base import Mechanism, MechanismParams

_REGISTRY: dict[str, type[Mechanism]] = {}
_loaded = False


class MechanismError(ValueError):
    pass


def register_mechanism(cls: type[Mechanism]) -> type[Mechanism]:
    _REGISTRY[cls.key] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("base",):
            importlib.import_module(f"{__name__}.{info.name}")


def mechanism_keys() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def mechanism_class(key: str) -> type[Mechanism]:
    _load_all()
    try:
        return _REGISTRY[key]
    except KeyError:
        close = difflib.get_close_matches(key, _REGISTRY, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise MechanismError(
            f"unknown mechanism {key!r}{hint} Known mechanisms: {', '.join(sorted(_REGISTRY))}"
        ) from None


__all__ = [
    "Mechanism",
    "MechanismError",
    "MechanismParams",
    "mechanism_class",
    "mechanism_keys",
    "register_mechanism",
]
