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


@cache
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


def shown_value(key: str, value: object) -> object:
    """A condition value as a person reads it: a protocol by its name, never by the key it
    is stored under ("seed003" stays stored, so that runs made before the protocol had a
    name keep their match keys; "strategic_personalities" is what a screen shows). Every
    other key and value is returned as given."""
    if key != "prompt_protocol" or not isinstance(value, str):
        return value
    found = _by_value().get(value)
    return found.name if found is not None else value


def shown_key(condition_key: str) -> str:
    """A stored condition key (``k=v k=v``, as the store writes it) as a person reads it:
    its ``prompt_protocol=`` word by the protocol's name (:func:`shown_value`)."""
    words = condition_key.split(" ")
    for i, word in enumerate(words):
        if word.startswith("prompt_protocol="):
            words[i] = f"prompt_protocol={shown_value('prompt_protocol', word.split('=', 1)[1])}"
    return " ".join(words)


__all__ = ["DEFAULT_KEY", "PromptProtocol", "get", "names", "protocols", "shown_key",
           "shown_value", "storage_key"]
