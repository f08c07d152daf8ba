"""Games: one module per family, found by the registry.

A family module decorates a factory with ``@register_game("key")``. The factory takes
keyword parameters with defaults (its signature is the family's parameter list) and
returns a :class:`Game`; its docstring's first line is the one-line summary shown by
``coop-tui list games``. Dropping such a module in this folder is all it takes to add
a game. ``load_game`` also reads user game files (``.toml`` / ``.yaml``) and applies
the payoff transforms ``scale`` and ``bonus`` to any game.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coop_tui.games.base import Game, GameError
from coop_tui.games.kinds import ProtocolGame
from coop_tui.games.transforms import TRANSFORM_PARAMS, apply_transforms
from coop_tui.games.user import load_user_game
from coop_tui.plugins import import_plugins

USER_SUFFIXES = (".toml", ".yaml", ".yml")
_NOT_FAMILIES = {"base", "user", "transforms", "kinds"}


@dataclass(frozen=True)
class GameFamily:
    """A registered factory and what the registry learned from its signature."""

    key: str
    factory: Callable[..., Game]
    defaults: dict[str, Any]

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.factory) or ""
        return doc.splitlines()[0] if doc else ""


_REGISTRY: dict[str, GameFamily] = {}


def register_game(key: str) -> Callable[[Callable[..., Game]], Callable[..., Game]]:
    """Register a factory under ``key``; every parameter must have a default."""

    def decorate(factory: Callable[..., Game]) -> Callable[..., Game]:
        if key in _REGISTRY and _REGISTRY[key].factory is not factory:
            raise RuntimeError(f"game key {key!r} is registered twice")
        defaults: dict[str, Any] = {}
        for name, param in inspect.signature(factory).parameters.items():
            if param.kind not in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD):
                raise RuntimeError(f"game {key!r}: parameter {name!r} must be a named keyword")
            if param.default is param.empty:
                raise RuntimeError(f"game {key!r}: parameter {name!r} needs a default")
            if name in TRANSFORM_PARAMS:
                raise RuntimeError(f"game {key!r}: {name!r} is reserved for payoff transforms")
            defaults[name] = param.default
        _REGISTRY[key] = GameFamily(key, factory, defaults)
        return factory

    return decorate


def _load_all() -> None:
    import_plugins(__name__, __path__, _NOT_FAMILIES, group="coop_tui.games")


def game_keys() -> list[str]:
    """Every registered game key, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def game_family(key: str) -> GameFamily:
    """The registered family for ``key``; :class:`GameError` with a suggestion if unknown."""
    _load_all()
    try:
        return _REGISTRY[key]
    except KeyError:
        close = difflib.get_close_matches(key, _REGISTRY, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise GameError(
            f"unknown game {key!r}{hint} Known games: {', '.join(sorted(_REGISTRY))}. "
            f"A user game file must end in {', '.join(USER_SUFFIXES)}."
        ) from None


def game_parameters(key: str) -> dict[str, Any]:
    """The parameters ``load_game(key, ...)`` accepts, with their defaults."""
    params = dict(game_family(key).defaults)
    params.update({name: None for name in TRANSFORM_PARAMS})
    return params


def is_user_game_ref(ref: str | os.PathLike[str]) -> bool:
    return os.fspath(ref).lower().endswith(USER_SUFFIXES)


def load_game(ref: str | os.PathLike[str], **params: Any) -> Game:
    """Build a game from a registered key or a user file path, then apply transforms.

    Parameters set to ``None`` count as not given. The returned game's ``params`` hold
    the family parameters actually used (defaults included, normalised by the factory
    when it reports them) plus any transform given, so ``load_game(game.key,
    **game.params)`` rebuilds the same game for built-ins.
    """
    ref = os.fspath(ref)
    given = {k: v for k, v in params.items() if v is not None}
    transforms = {k: given.pop(k) for k in TRANSFORM_PARAMS if k in given}
    if is_user_game_ref(ref):
        if given:
            raise TypeError(
                f"a user game file takes no parameters other than "
                f"{' and '.join(TRANSFORM_PARAMS)}; got {', '.join(sorted(given))}"
            )
        game = load_user_game(ref, builtin_keys=frozenset(game_keys()))
        used: dict[str, Any] = {}
    else:
        family = game_family(ref)
        unknown = sorted(set(given) - set(family.defaults))
        if unknown:
            accepted = [*family.defaults, *TRANSFORM_PARAMS]
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, accepted, n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise TypeError(
                f"game {ref!r} has no parameter {', '.join(hints)}; "
                f"it accepts: {', '.join(accepted)}"
            )
        game = family.factory(**given)
        # a factory that normalises its parameters reports them all in game.params
        used = dict(game.params) if game.params else {**family.defaults, **given}
        game = dataclasses.replace(game, key=family.key)
    if transforms and _is_protocol(game):
        raise TypeError(
            f"{' and '.join(sorted(transforms))} (or a payoff-scaling condition) apply to matrix "
            f"games; {game.key} is played move by move and takes its stakes from its own "
            f"parameters ({', '.join(sorted(k for k in game.params if k != 'rounds')) or 'none'})"
        )
    game = apply_transforms(game, **transforms)
    return dataclasses.replace(game, params={**used, **transforms})


def _is_protocol(game: Game) -> bool:
    return isinstance(game, ProtocolGame)


def game_from_spec(spec: dict[str, Any]) -> Game:
    """The game a run stored (``sweep.game_spec``'s shape) rebuilt for analysis: a
    move-by-move game from the registry, otherwise the stored payoff table as it was."""
    if spec.get("protocol"):  # a move-by-move game (strategic personalities): rebuilt from the registry
        try:
            return load_game(spec["key"], **spec.get("params", {}))
        except Exception:  # noqa: BLE001 - an unknown or changed family: the stored shape
            pass
    return Game(
        key=spec["key"],
        title=spec.get("title", spec["key"]),
        description="",
        action_names=tuple(tuple(a) for a in spec["action_names"]),
        payoffs=spec["payoffs"],
        cooperative=tuple(frozenset(c) for c in spec["cooperative"]),
        defect=tuple(spec["defect"]),
        params=spec.get("params", {}),
    )


def get_game(key: str) -> Game:
    """A registered game with its default parameters."""
    return load_game(key)


__all__ = [
    "Game",
    "GameError",
    "GameFamily",
    "game_family",
    "game_from_spec",
    "game_keys",
    "game_parameters",
    "get_game",
    "is_user_game_ref",
    "load_game",
    "register_game",
]
