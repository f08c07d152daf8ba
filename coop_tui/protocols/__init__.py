"""The registry of prompt protocols: every module of this package that sets ``PROTOCOL``.

A study names its protocol with ``prompt_protocol`` (a protocol's ``name`` or one of its
``aliases``); everything stored carries the protocol's ``key`` instead
(:func:`storage_key`), so renaming a protocol never changes a match key, a condition or a
sweep's hash. Adding a protocol is one module here (plus its templates and its transcript
tests): the registry imports every module of the package and needs no list kept by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from coop_tui.protocols.base import PromptProtocol

DEFAULT_KEY = "coop_tui"
"""The key of coop-tui's own protocol: a condition or match key names a protocol only
when it is another one, so runs from before protocols existed keep their keys."""


@cache
def protocols() -> tuple[PromptProtocol, ...]:
    """Every protocol of the package, the default first, then by name."""
    found: list[PromptProtocol] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        protocol = getattr(module, "PROTOCOL", None)
        if isinstance(protocol, PromptProtocol):
            found.append(protocol)
    found.sort(key=lambda p: (p.key != DEFAULT_KEY, p.name))
    _check_unique(found)
    return tuple(found)


def _check_unique(found: list[PromptProtocol]) -> None:
    """Two protocols answering to one name or storing one key would mix their results."""
    seen: dict[str, str] = {}
    for p in found:
        for value in {p.name, p.key, *p.aliases}:
            if seen.setdefault(value, p.name) != p.name:
                raise RuntimeError(f"prompt protocols {seen[value]!r} and {p.name!r} both "
                                   f"answer to {value!r}")


def _by_value() -> dict[str, PromptProtocol]:
    return {v: p for p in protocols() for v in (p.name, p.key, *p.aliases)}


def names() -> list[str]:
    """The values a study file may give: names first, then the older aliases."""
    listed = [p.name for p in protocols()]
    return listed + [a for p in protocols() for a in p.aliases if a not in listed]


def get(value: str) -> PromptProtocol:
    """The protocol a study's ``prompt_protocol`` (name, alias or stored key) names;
    KeyError with the accepted values when none does."""
    try:
        return _by_value()[value]
    except KeyError:
        raise KeyError(f"unknown prompt_protocol {value!r}; use one of "
                       + ", ".join(repr(n) for n in names())) from None


def storage_key(value: str) -> str:
    """The stored key of the protocol ``value`` names."""
    return get(value).key


__all__ = ["DEFAULT_KEY", "PromptProtocol", "get", "names", "protocols", "storage_key"]
