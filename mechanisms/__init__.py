"""Mechanisms: one module per mechanism, found by the registry.

Drop a module in this folder that defines a ``Mechanism`` subclass decorated with
``@register_mechanism`` and it is available to sweeps, the TUI and reports.
"""

from __future__ import annotations

import difflib

from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.plugins import import_plugins

_REGISTRY: dict[str, type[Mechanism]] = {}


class MechanismError(ValueError):
    pass


def register_mechanism(cls: type[Mechanism]) -> type[Mechanism]:
    _REGISTRY[cls.key] = cls
    return cls


def _load_all() -> None:
    import_plugins(__name__, __path__, ("base",), group="coop_tui.mechanisms")


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
