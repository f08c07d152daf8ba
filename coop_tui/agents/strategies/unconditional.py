"""Strategies that ignore what the co-players did: fixed moves, cycles and fixed mixtures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coop_tui.agents.strategies.base import (
    INF,
    Strategy,
    StrategyError,
    check_probs,
    cooperate,
    cooperate_with,
    defect,
    known_actions,
    probability,
    pure,
    register,
    require_cooperation,
    whole,
)
from coop_tui.decisions import SeatView


def _action_in_game(view: SeatView, action: int, who: str) -> int:
    n = known_actions(view)
    if action >= n:
        raise StrategyError(
            f"strategy {who!r} wants action {action}, but player {view.seat + 1} of game "
            f"{view.game.key!r} only has actions 0..{n - 1}"
        )
    return action


@register
class AlwaysCooperate(Strategy):
    """Cooperates every round, whatever happens.

    The unconditional cooperator (ALLC) of Axelrod's tournaments; the strategic personalities paper uses it as the
    most exploitable reference opponent.
    """

    name = "always_cooperate"
    classifier = {"memory_depth": 0, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return cooperate(view)


@register
class AlwaysDefect(Strategy):
    """Defects every round, whatever happens.

    The unconditional defector (ALLD): the one-shot dominant strategy of a social dilemma,
    a reference opponent in the strategic personalities paper and the super-additive cooperation paper.
    """

    name = "always_defect"
    classifier = {"memory_depth": 0, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return defect(view)


@register
class Alternator(Strategy):
    """Cooperates on odd rounds and defects on even rounds (C, D, C, D, ...).

    Axelrod library's Alternator: a simple periodic opponent that probes how a strategy
    reacts to regular defection.
    """

    name = "alternator"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        return cooperate(view) if view.round % 2 == 1 else defect(view)


@register
class Random(Strategy):
    """Cooperates with probability p (default 0.5) and defects otherwise, every round.

    The "random" entrant of Axelrod's first tournament and the strategic personalities paper's ``random``
    (``random_strategy`` in its code). The mixture is returned as is; the engine draws the
    move with the match's seeded RNG. Where the seat has no cooperative action (Battle of
    the Sexes, the focal-point game, accept/reject moves) it plays every action equally
    likely, as the strategic personalities paper's does; p must then stay 0.5. In the move-by-move games it answers
    a number drawn from the match seed, uniformly from the range the strategic personalities paper's code draws
    from (see ``numeric.CODE_RANGES``), brought into the move's range.
    """

    name = "random"
    aliases = {"random_strategy": {}}
    classifier = {"memory_depth": 0, "stochastic": True}
    needs_cooperation = False

    def __init__(self, p: float = 0.5) -> None:
        self.p = probability("p", p)

    def distribution(self, view: SeatView) -> list[float]:
        if not view.game.cooperative[view.seat]:
            if self.p != 0.5:
                require_cooperation(view, self.name)
            n = known_actions(view)
            return [1.0 / n] * n
        return cooperate_with(view, self.p)

    def numeric_answer(self, view: SeatView, options: dict[str, Any]) -> Any:
        from coop_tui.agents.strategies.numeric import random_number

        return random_number(view, options)


@register
class Mixed(Strategy):
    """Plays a fixed mixture over the game's actions (probs: one probability per action).

    A stationary mixed strategy (e.g. a Nash equilibrium mixture). probs must be
    nonnegative, sum to 1 and have one entry per action of the seat; without probs every
    action is equally likely.
    """

    name = "mixed"
    classifier = {"memory_depth": 0, "stochastic": True}
    needs_cooperation = False

    def __init__(self, probs: Sequence[float] | None = None) -> None:
        self.probs: list[float] | None = None if probs is None else check_probs("probs", probs)

    def distribution(self, view: SeatView) -> list[float]:
        n = known_actions(view)
        if self.probs is None:
            return [1.0 / n] * n
        if len(self.probs) != n:
            raise StrategyError(
                f"strategy 'mixed': probs has {len(self.probs)} entries but player "
                f"{view.seat + 1} of game {view.game.key!r} has {n} actions "
                f"({', '.join(view.game.action_names[view.seat][:n])})"
            )
        return list(self.probs)


@register
class AlwaysAction(Strategy):
    """Plays the same game action every round (action = 0 by default).

    The strategic personalities paper's "always option A / always option B" opponents for coordination games,
    generalised to any action index; needs no notion of cooperation.
    """

    name = "always_action"
    classifier = {"memory_depth": 0, "stochastic": False}
    needs_cooperation = False

    def __init__(self, action: int = 0) -> None:
        self.action = whole("action", action)

    def distribution(self, view: SeatView) -> list[float]:
        return pure(view, _action_in_game(view, self.action, self.name))


@register
class Cycle(Strategy):
    """Plays the listed game actions in turn, one per round (default 0, 1, 0, 1, ...).

    The strategic personalities paper's "alternate between A and B" coordination opponent; with actions [0, 0, 1]
    it is Axelrod's Cycler CCD on a prisoner's dilemma whose action 0 is cooperate.
    """

    name = "cycle"
    classifier = {"memory_depth": INF, "stochastic": False}
    needs_cooperation = False

    def __init__(self, actions: Sequence[int] = (0, 1)) -> None:
        if isinstance(actions, str | bytes) or not isinstance(actions, Sequence) or not actions:
            raise TypeError(f"actions must be a non-empty list of action indices, got {actions!r}")
        self.actions: list[int] = [whole(f"actions[{i}]", a) for i, a in enumerate(actions)]

    @property
    def params(self) -> dict[str, Any]:
        return {"actions": list(self.actions)}

    def distribution(self, view: SeatView) -> list[float]:
        action = self.actions[(view.round - 1) % len(self.actions)]
        return pure(view, _action_in_game(view, action, self.name))
