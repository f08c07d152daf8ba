"""Fixed strategies for repeated games, found by name.

Each family lives in its own module of this package and registers its classes with
``@register``; every module here is imported on first use, so adding a strategy is one
class in one file. ``get_strategy("tit_for_tat")`` builds one, ``strategy_names()`` lists
them (``coop-tui list strategies`` shows each class's first docstring line).

How a strategy sits in a seat (and what it answers outside the play phase) is described in
:mod:`coop_tui.agents.strategy_agent`.
"""

from __future__ import annotations

import difflib
from typing import Any

from coop_tui.agents.strategies.base import (
    Strategy,
    StrategyError,
    alias_table,
    parameter_defaults,
    register,
    registry,
)
from coop_tui.plugins import import_plugins

__all__ = [
    "Strategy",
    "StrategyError",
    "get_strategy",
    "register",
    "resolve_name",
    "strategy_aliases",
    "strategy_class",
    "strategy_names",
]



def _load() -> None:
    import_plugins(__name__, __path__, ("base",), group="coop_tui.strategies")


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def strategy_names() -> list[str]:
    """Every registered strategy name, sorted."""
    _load()
    return sorted(registry())


def strategy_aliases() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every alias (the strategic personalities paper's names among them) -> (strategy name, implied parameters)."""
    _load()
    return dict(sorted(alias_table().items()))


def resolve_name(name: str) -> tuple[str, dict[str, Any]]:
    """The registered name behind ``name`` (itself, or what its alias stands for) and the
    parameters an alias implies."""
    _load()
    key = _key(name)
    if key in alias_table():
        target, preset = alias_table()[key]
        return target, dict(preset)
    return key, {}


def strategy_class(name: str) -> type[Strategy]:
    """The class registered under ``name`` or one of its aliases (case, hyphens and spaces
    are forgiven)."""
    key, _ = resolve_name(name)
    cls = registry().get(key)
    if cls is None:
        names = sorted(registry())
        close = difflib.get_close_matches(key, names + sorted(alias_table()), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise StrategyError(f"unknown strategy {name!r}; {hint}known: {', '.join(names)}")
    return cls


def get_strategy(name: str, **params: Any) -> Strategy:
    """Build the named strategy; unknown names raise StrategyError, bad params TypeError/ValueError.

    An alias supplies its implied parameters; parameters given here override them."""
    cls = strategy_class(name)
    params = {**resolve_name(name)[1], **params}
    accepted = parameter_defaults(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = (
            ", ".join(f"{k} (default {v!r})" for k, v in accepted.items())
            if accepted
            else "no parameters"
        )
        raise TypeError(
            f"strategy {cls.name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"it takes {takes}"
        )
    return cls(**params)
