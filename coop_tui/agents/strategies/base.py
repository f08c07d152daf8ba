"""What a strategy is, how it is registered, and the cooperate/defect vocabulary.

A strategy is one small class (Axelrod-library style, our own code): a registry ``name``, a
docstring whose first line says what it does and whose body says where it comes from, a
``classifier`` (memory depth, stochastic or not) and one method, :meth:`Strategy.distribution`,
that maps what the seat knows (:class:`SeatView`) to a probability per *game* action.

Strategies are pure functions of the view: no hidden state, no random draws. A stochastic
strategy returns its mixture and the engine samples it with the match's seeded RNG, so a
resumed or replayed match makes exactly the same moves.

Cooperation on any game: "cooperate" is the seat's cooperative action (the lowest index in
``game.cooperative[seat]``, matching ``Game.all_cooperate_profile``) and "defect" is
``game.defect[seat]``. "The opponent cooperated" in an n-player game means *every* co-player
took a cooperative action that round; one defector among them counts as a defection.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from coop_tui.decisions import Move, SeatView

INF = math.inf

MECHANISM_ACTIONS = frozenset({"delegate"})
"""Action names a mechanism appends to a game (Mediation's "delegate"). Strategies never
choose them: they are outside the game the strategy was written for."""


class StrategyError(ValueError):
    """An unknown strategy, or a strategy asked to play a game it cannot play."""


class Strategy:
    """Base class: subclasses set ``name``, ``classifier`` and implement ``distribution``."""

    name: ClassVar[str] = ""
    classifier: ClassVar[dict[str, Any]] = {"memory_depth": INF, "stochastic": False}
    needs_cooperation: ClassVar[bool] = True
    """False for strategies defined on action indices alone (fixed actions, cycles, mixes),
    which therefore also play games without a cooperative/defect action."""
    aliases: ClassVar[dict[str, dict[str, Any]]] = {}
    """Other names this strategy answers to, each with the parameters it implies (seed
    003's ``noise_10`` is ``noisy_tit_for_tat`` with ``noise = 0.1``)."""

    def distribution(self, view: SeatView) -> list[float]:
        """Probability of each of the seat's actions in the game the strategy knows."""
        raise NotImplementedError

    # ------------------------------------------------------------------ description
    @property
    def params(self) -> dict[str, Any]:
        """The constructor parameters with their resolved values (stored in the agent spec)."""
        return {p: getattr(self, p) for p in parameter_defaults(type(self))}

    @classmethod
    def summary(cls) -> str:
        doc = inspect.getdoc(cls) or ""
        return doc.splitlines()[0] if doc else ""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"

    # ------------------------------------------------------------------ helpers
    def check(self, view: SeatView) -> None:
        """Raise a clear StrategyError when the game lacks what this strategy needs."""
        if self.needs_cooperation:
            require_cooperation(view, self.name)


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Strategy]] = {}
S = TypeVar("S", bound=type[Strategy])


def register(cls: S) -> S:
    """Class decorator: make a strategy findable by its ``name``."""
    if not cls.name or cls.name != cls.name.lower() or " " in cls.name:
        raise TypeError(f"{cls.__qualname__}: name must be a lower_snake_case registry key")
    if not inspect.getdoc(cls) or inspect.getdoc(cls) == inspect.getdoc(Strategy):
        raise TypeError(f"{cls.__qualname__}: a strategy needs its own docstring")
    if {"memory_depth", "stochastic"} - set(cls.classifier):
        raise TypeError(f"{cls.__qualname__}: classifier needs memory_depth and stochastic")
    known = _REGISTRY.get(cls.name)
    if known is not None and known is not cls:
        raise TypeError(f"strategy name {cls.name!r} is used by {known.__qualname__} already")
    if cls.name in _ALIASES:
        raise TypeError(f"strategy name {cls.name!r} is an alias of {_ALIASES[cls.name][0]!r}")
    for alias, preset in cls.aliases.items():
        taken = _ALIASES.get(alias)
        if alias in _REGISTRY or (taken is not None and taken[0] != cls.name):
            raise TypeError(f"{cls.__qualname__}: alias {alias!r} names another strategy")
        _ALIASES[alias] = (cls.name, dict(preset))
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Strategy]]:
    return _REGISTRY


def alias_table() -> dict[str, tuple[str, dict[str, Any]]]:
    """Alias -> (registered name, the parameters the alias implies)."""
    return _ALIASES


_ALIASES: dict[str, tuple[str, dict[str, Any]]] = {}


def parameter_defaults(cls: type[Strategy]) -> dict[str, Any]:
    """Keyword parameters of a strategy's constructor and their defaults."""
    if cls.__init__ is object.__init__:
        return {}
    sig = inspect.signature(cls.__init__)
    return {
        p.name: p.default
        for p in list(sig.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


# ---------------------------------------------------------------------- parameter checks
def number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} = {value} is not a finite number")
    return float(value)


def probability(name: str, value: Any) -> float:
    x = number(name, value)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} = {value:g} is outside [0, 1]; give a probability")
    return x


def whole(name: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} = {value} must be at least {minimum}")
    return value


# ---------------------------------------------------------------------- game vocabulary
def known_actions(view: SeatView, seat: int | None = None) -> int:
    """The seat's actions in the underlying game, leaving out mechanism-added ones at the end.

    Mediation says where its extra action starts (``view.extra["delegate_action"]``); a
    trailing action named in :data:`MECHANISM_ACTIONS` is left out as well.
    """
    seat = view.seat if seat is None else seat
    if not view.extra:  # the common case, asked every move: remember it per game and seat
        known = _KNOWN.get((id(view.game), seat))
        if known is not None and known[0] is view.game:
            return known[1]
    names = view.game.action_names[seat]
    n = len(names)
    marker = view.extra.get("delegate_action")
    if isinstance(marker, int) and not isinstance(marker, bool) and 0 < marker < n:
        n = marker
    while n > 1 and names[n - 1].strip().lower() in MECHANISM_ACTIONS:
        n -= 1
    if not view.extra:
        if len(_KNOWN) > 256:
            _KNOWN.clear()
        _KNOWN[(id(view.game), seat)] = (view.game, n)
    return n


_KNOWN: dict[tuple[int, int], tuple[Any, int]] = {}


def require_cooperation(view: SeatView, who: str = "this strategy") -> None:
    """Raise a StrategyError naming the fix when some seat has no cooperative/defect action."""
    game = view.game
    lacking = [
        j + 1
        for j in range(game.n_players)
        if not game.cooperative[j] or (j == view.seat and game.defect[j] is None)
    ]
    if lacking:
        name = who if who == "this strategy" else f"strategy {who!r}"
        raise StrategyError(
            f"{name} plays cooperate/defect, but game {game.key!r} names no cooperative "
            f"and defect action for player(s) {', '.join(map(str, lacking))}; "
            "use always_action, cycle, mirror or mixed for such games"
        )


def coop_action(view: SeatView) -> int:
    if not view.game.cooperative[view.seat]:
        require_cooperation(view)
    return min(view.game.cooperative[view.seat])


def defect_action(view: SeatView) -> int:
    d = view.game.defect[view.seat]
    if d is None:
        require_cooperation(view)
    assert d is not None
    return d


def pure(view: SeatView, action: int) -> list[float]:
    out = [0.0] * known_actions(view)
    out[action] = 1.0
    return out


def cooperate(view: SeatView) -> list[float]:
    return list(_pure_move(view, _COOPERATE, coop_action))


def defect(view: SeatView) -> list[float]:
    return list(_pure_move(view, _DEFECT, defect_action))


def _pure_move(
    view: SeatView, cache: dict[tuple[int, int], tuple[Any, tuple[float, ...]]],
    action_of: Callable[[SeatView], int],
) -> tuple[float, ...]:
    """``pure(view, action_of(view))`` as a tuple, remembered per game and seat when the
    view has no mechanism extras (cooperate and defect are asked every move of most
    strategies; the tuple is copied, so no caller can change the kept one)."""
    if not view.extra:
        known = cache.get((id(view.game), view.seat))
        if known is not None and known[0] is view.game:
            return known[1]
    move = tuple(pure(view, action_of(view)))
    if not view.extra:
        if len(cache) > 256:
            cache.clear()
        cache[(id(view.game), view.seat)] = (view.game, move)
    return move


_COOPERATE: dict[tuple[int, int], tuple[Any, tuple[float, ...]]] = {}
_DEFECT: dict[tuple[int, int], tuple[Any, tuple[float, ...]]] = {}
"""Each game and seat's pure cooperate / defect distribution (the game kept alive with
it, so its id cannot pass to another game)."""


def cooperate_with(view: SeatView, p: float) -> list[float]:
    """Cooperate with probability p, defect otherwise."""
    out = [0.0] * known_actions(view)
    out[coop_action(view)] += p
    out[defect_action(view)] += 1.0 - p
    return out


def co_players(view: SeatView) -> list[int]:
    return [j for j in range(view.game.n_players) if j != view.seat]


def others_cooperated(view: SeatView, move: Move) -> bool:
    """True when every co-player took a cooperative action in ``move``."""
    sets = _CO_SETS.get((id(view.game), view.seat))  # asked every move: kept per game and seat
    if sets is None or sets[0] is not view.game:
        game = view.game
        if not all(game.cooperative[j] for j in co_players(view)):
            require_cooperation(view)
        if len(_CO_SETS) > 256:
            _CO_SETS.clear()
        sets = _CO_SETS[(id(game), view.seat)] = (game, tuple(game.cooperative[j] for j in co_players(view)))
    co, others = sets[1], move.others
    if len(co) == 1 == len(others):  # one co-player, most games
        return others[0] in co[0]
    return all(a in c for c, a in zip(co, others, strict=False))


_CO_SETS: dict[tuple[int, int], tuple[Any, tuple[Any, ...]]] = {}
"""The co-players' cooperative action sets per (game, seat), once the game is checked."""


def own_cooperated(view: SeatView, move: Move) -> bool:
    if not view.game.cooperative[view.seat]:
        require_cooperation(view)
    return move.own in view.game.cooperative[view.seat]


def opponent_record(view: SeatView) -> Sequence[bool]:
    """Per past round, whether the co-player(s) cooperated (oldest first).

    The engine keeps this record as rounds are played and hands it over in the view, so a
    strategy's move costs no Python loop over the history; without it (a view built by
    hand, a re-matched population seat) it is derived from the history.
    """
    if view.cooperation_record is not None:
        return view.cooperation_record
    return [others_cooperated(view, m) for m in view.history]


def scripted_response(view: SeatView, script: Callable[[int], Sequence[bool]]) -> bool:
    """Whether to cooperate now, for rules that answer a defection with a fixed script.

    Walks the opponent record from round 1: while a script is running its moves are played
    (defections meanwhile are counted but start nothing new); otherwise a defection starts
    ``script(total opponent defections so far)`` (True = cooperate) and cooperation is
    answered with cooperation. Recomputing from the history keeps the rule stateless.
    """
    queue: list[bool] = []
    defections = 0
    move = True
    for cooperated in opponent_record(view):
        defections += not cooperated
        if not queue and not cooperated:
            queue = list(script(defections))
        move = queue.pop(0) if queue else True
    return move


def check_probs(name: str, probs: Sequence[Any]) -> list[float]:
    if isinstance(probs, str | bytes) or not isinstance(probs, Sequence) or not probs:
        raise TypeError(f"{name} must be a non-empty list of probabilities, got {probs!r}")
    values = [number(f"{name}[{i}]", p) for i, p in enumerate(probs)]
    negative = [i for i, p in enumerate(values) if p < 0]
    if negative:
        raise ValueError(f"{name}[{negative[0]}] = {values[negative[0]]:g} is negative")
    total = sum(values)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"{name} sums to {total:g}, not 1; give one probability per action")
    return values


# ---------------------------------------------------------------------- the strategic personalities paper's convention
# The strategic personalities paper's code treats every game's first option as "cooperate" and its second as
# "defect" (also in Battle of the Sexes, Matching Pennies and the focal-point game), and the
# copies of a strategy that fill the seats of a 4-player game all react to the model in
# seat 1 only. The strategies written to play as that code plays share these helpers.
def watched_seat(view: SeatView) -> int:
    """The co-player the strategic personalities paper's strategies react to: seat 1 (index 0), or seat 2 for seat 1."""
    return 0 if view.seat != 0 else 1


def first_option(view: SeatView, seat: int | None = None) -> int:
    """The seat's cooperative action when the game names one, else its first action."""
    seat = view.seat if seat is None else seat
    coop = view.game.cooperative[seat]
    return min(coop) if coop else 0


def second_option(view: SeatView, seat: int | None = None) -> int:
    """The seat's defect action when the game names one, else its second action."""
    seat = view.seat if seat is None else seat
    d = view.game.defect[seat]
    if d is not None:
        return d
    return 1 if known_actions(view, seat) > 1 else 0


def watched_action(move: Move) -> int:
    """What the watched co-player did in ``move`` (the first co-player in seat order)."""
    return move.others[0]


def watched_played_second(view: SeatView, move: Move) -> bool:
    """Whether the watched co-player took its second ("defect") option in ``move``."""
    return watched_action(move) == second_option(view, watched_seat(view))


def watched_played_first(view: SeatView, move: Move) -> bool:
    return watched_action(move) == first_option(view, watched_seat(view))


def copy_action(view: SeatView, action: int) -> list[float]:
    """Play the same action index as the co-player did (the code copies the option)."""
    if 0 <= action < known_actions(view):
        return pure(view, action)
    return pure(view, second_option(view))


def uniform(view: SeatView) -> list[float]:
    n = known_actions(view)
    return [1.0 / n] * n
