"""A fixed strategy in a seat: answers every request in the text an LLM would write.

The strategy's answer goes through the same parser as any model's, so a strategy, a human
and an LLM are interchangeable in any seat and every stored decision looks alike.

Play ("mixed") requests: the strategy gives a probability per *game* action of its seat;
it is rounded to integer percentages that sum to exactly 100 (largest remainder, ties to
the lower action index) and written under the shown labels (``label_to_action[i]`` is the
game action behind ``labels[i]``). Actions a mechanism adds to the game after the ones the
strategy knows (Mediation's "delegate") get 0: a strategy never delegates.

Play ("choice") requests: the strategy picks one action from the same distribution with
the number ``request.options["draw"]`` in [0, 1) that the engine derives from the match
seed (inverse CDF over game actions in index order), and answers ``{"choice": label}``; a
deterministic strategy's pick is its action, a stochastic one follows the match seed.

Documented defaults for the other phases (a strategy has no opinion there):

- approvals: approve every proposal in ``request.labels``;
- sign: always sign a contract;
- mediator proposal: play the seat's cooperative action for every number of delegators
  (games without one: the action the strategy itself would play now);
- contract proposal: no transfers (0 for every action);
- similarity score: 50 (clamped into ``options["min"]..options["max"]`` when given);
- free text (plans, critiques): one sentence naming the strategy and what it does;
- leaving a match (phase ``exit``, ``{"leave": ...}``, team tournaments): leave exactly when
  the strategy would not cooperate in the next round against this co-player (it walks away
  from a partner it would punish; ALLD leaves after every first round, ALLC never leaves,
  a stochastic strategy that may still cooperate stays). Asked with the move (a play
  request with the ``ask_leave`` option, the super-additive cooperation paper's default): the same rule on the move's
  own view, so it leaves exactly when it does not cooperate in this round, and the
  answer is the move's JSON with ``"leave"`` added;
- comprehension questions (phase ``meta``): 0 for every number (clamped into the range)
  and false for every yes/no entry - a strategy states no beliefs, so its accuracy is only
  what those constants happen to match.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from coop_tui.agents.strategies import Strategy, StrategyError
from coop_tui.agents.strategies.base import known_actions
from coop_tui.decisions import ASK_LEAVE, AgentReply, DecisionRequest, Message, SeatView
from coop_tui.parsing import MixedStrategy


def percentages(distribution: Sequence[float]) -> list[int]:
    """Integer percentages summing to exactly 100 (largest-remainder rounding)."""
    total = float(sum(distribution))
    if total <= 0 or not all(math.isfinite(p) and p >= 0 for p in distribution):
        raise ValueError(f"not a probability distribution: {list(distribution)}")
    raw = [100.0 * p / total for p in distribution]
    floors = [math.floor(x + 1e-9) for x in raw]
    missing = 100 - sum(floors)
    by_remainder = sorted(range(len(raw)), key=lambda i: (-(raw[i] - floors[i]), i))
    for i in by_remainder[:missing]:
        floors[i] += 1
    return floors


def game_distribution(strategy: Strategy, view: SeatView) -> list[float]:
    """The strategy's distribution over all of the seat's actions (mechanism extras at 0)."""
    strategy.check(view)
    probs = [float(p) for p in strategy.distribution(view)]
    n = view.game.action_counts[view.seat]
    if len(probs) > n:
        raise ValueError(
            f"strategy {strategy.name!r} returned {len(probs)} probabilities for "
            f"{n} actions"
        )
    return probs + [0.0] * (n - len(probs))


class StrategyAgent:
    """Fills a seat with a fixed strategy; costs nothing and answers instantly."""

    kind = "strategy"
    style = "direct"
    reads_prompt = False
    """Answers from the SeatView: the engine renders and stores no prompt for it."""

    def __init__(self, name: str, strategy: Strategy) -> None:
        self.name = name
        self.strategy = strategy
        self._checked: dict[tuple[int, int], Any] = {}
        """(id of game, seat) -> game, for the games and seats this strategy was checked
        against (one agent plays both seats of a self-play pairing, and several matches at
        once: a single last-checked pair would be checked again nearly every move)."""
        self._last_checked: tuple[Any, int] = (None, -1)
        """The game and seat of the last move, checked (most moves ask the same again)."""
        self._answers: dict[tuple[Any, ...], tuple[str, Any]] = {}
        """(labels, mapping, distribution) -> (answer text, parsed answer): a strategy
        gives the same few distributions over and over."""
        self.spec: dict[str, Any] = {"strategy": strategy.name, "params": strategy.params}

    async def reply(
        self, request: DecisionRequest, messages: list[Message], sink: Any
    ) -> AgentReply:
        started = time.perf_counter()
        text = self.answer(request)
        sink.text(text)
        return AgentReply(
            text=text,
            input_tokens=0,
            output_tokens=0,
            cost_usd=0.0,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    # ------------------------------------------------------------------ answers
    def answer(self, request: DecisionRequest) -> str:
        """The answer text for any request kind (see the module docstring)."""
        kind = request.kind
        if request.phase == "exit":
            return json.dumps({"leave": self._would_not_cooperate(request.view)})
        if request.phase == "meta":
            return self._meta(request)
        if kind == "mixed":
            return self._mixed(request)
        if kind == "choice":
            return self._choice(request)
        if kind == "approvals":
            return json.dumps({label: True for label in request.labels})
        if kind == "sign":
            return json.dumps({"sign": True})
        if kind == "score":
            return f"SIMILARITY SCORE: {self._score(request.options)}"
        if kind == "mediator":
            return self._mediator(request)
        if kind == "contract":
            return self._contract(request)
        if kind in ("number", "allocation"):
            return self._numeric(request)
        return self.describe()

    def _would_not_cooperate(self, view: SeatView) -> bool:
        probs = game_distribution(self.strategy, view)
        return sum(probs[a] for a in view.game.cooperative[view.seat] if a < len(probs)) <= 0

    @staticmethod
    def _meta(request: DecisionRequest) -> str:
        opts = request.options

        def zero() -> int:
            return int(min(max(0, opts.get("min", 0)), opts.get("max", 0)))

        if request.kind == "number":
            return json.dumps({str(opts.get("name", "value")): zero()})
        if request.kind == "allocation":
            return json.dumps({str(k): zero() for k in opts.get("keys") or ()})
        return json.dumps({label: False for label in request.labels})

    def describe(self) -> str:
        summary = self.strategy.summary().rstrip(".")
        summary = summary[:1].lower() + summary[1:]
        params = ", ".join(f"{k} = {v}" for k, v in self.strategy.params.items() if v is not None)
        named = f"{self.strategy.name} ({params})" if params else self.strategy.name
        return f"I play the fixed strategy {named}: it {summary}."

    def _mixed(self, request: DecisionRequest) -> str:
        return self.mixed_answer(request)[0]

    def mixed_answer(self, request: DecisionRequest) -> tuple[str, Any]:
        """The play answer as text and as the parser would read it back (same numbers)."""
        text, parsed = self.mixed_for(request.view, request.labels, request.label_to_action)
        if request.options.get(ASK_LEAVE):
            text = self._with_leave(text, request.view)
        return text, parsed

    def _with_leave(self, answer: str, view: SeatView) -> str:
        """The move's JSON answer with the keep-playing choice added (see the module
        docstring: leave exactly when not cooperating now)."""
        return json.dumps({**json.loads(answer), "leave": self._would_not_cooperate(view)})

    def mixed_for(
        self, view: SeatView, labels: tuple[str, ...], mapping: tuple[int, ...]
    ) -> tuple[str, Any]:
        """:meth:`mixed_answer` from the view and the shown labels alone (the engine's
        direct rounds build no request)."""
        game = view.game
        if game is not self._last_checked[0] or view.seat != self._last_checked[1]:
            if self._checked.get((id(game), view.seat)) is not game:
                self.strategy.check(view)
                if len(self._checked) > 64:
                    self._checked.clear()
                self._checked[(id(game), view.seat)] = game
            self._last_checked = (game, view.seat)
        probs = tuple(self.strategy.distribution(view))
        key = (labels, mapping, probs)
        found = self._answers.get(key)
        if found is not None:
            return found

        full = game_distribution(self.strategy, view)  # checks the size, pads mechanism extras
        pct = percentages(full)
        labels = labels or tuple(f"A{i}" for i in range(len(pct)))
        mapping = mapping or tuple(range(len(labels)))
        shown = [pct[a] for a in mapping]
        text = json.dumps(dict(zip(labels, shown, strict=True)))
        total = float(sum(shown))
        parsed = MixedStrategy(
            tuple(p / total for p in shown), tuple(float(p) for p in shown), None, text
        )
        if len(self._answers) > 256:
            self._answers.clear()
        self._answers[key] = (text, parsed)
        return text, parsed

    def _choice(self, request: DecisionRequest) -> str:
        probs = game_distribution(self.strategy, request.view)
        total = sum(probs)
        draw = float(request.options.get("draw", 0.0)) * total
        action = max(a for a, p in enumerate(probs) if p > 0)  # for rounding at the top
        acc = 0.0
        for a, p in enumerate(probs):
            acc += p
            if p > 0 and draw < acc:
                action = a
                break
        answer = json.dumps({"choice": self._label_of(request, action)})
        return self._with_leave(answer, request.view) if request.options.get(ASK_LEAVE) else answer

    @staticmethod
    def _score(options: dict[str, Any]) -> int:
        lo, hi = options.get("min", 0), options.get("max", 100)
        return int(min(max(50, lo), hi))

    def _label_of(self, request: DecisionRequest, action: int) -> str:
        for label, a in zip(request.labels, request.label_to_action, strict=False):
            if a == action:
                return label
        return f"A{action}"

    def _proposal_action(self, view: SeatView) -> int:
        if view.game.cooperative[view.seat]:
            return min(view.game.cooperative[view.seat])
        probs = game_distribution(self.strategy, view)
        return max(range(len(probs)), key=lambda a: (probs[a], -a))

    def _mediator(self, request: DecisionRequest) -> str:
        n = int(request.options.get("n_players", request.view.game.n_players))
        label = self._label_of(request, self._proposal_action(request.view))
        return json.dumps({str(k): label for k in range(1, n + 1)})

    def _numeric(self, request: DecisionRequest) -> str:
        """A number or allocation move of a protocol game (strategic personalities): strategies that play
        them implement ``numeric_answer(view, options)``; others cannot answer."""
        answer = getattr(self.strategy, "numeric_answer", None)
        if answer is None:
            raise StrategyError(
                f"strategy {self.strategy.name!r} cannot answer a {request.kind} move; use one "
                "of the numeric strategies (fixed_number, threshold_responder, truthful_bidder, "
                "random, mirror, anti_mirror, the strategic personalities paper's responders)"
            )
        value = answer(request.view, dict(request.options))
        if request.kind == "number":
            return json.dumps({str(request.options.get("name", "value")): value})
        return json.dumps(value)

    def _contract(self, request: DecisionRequest) -> str:
        labels = request.labels or tuple(f"A{i}" for i in range(known_actions(request.view)))
        return json.dumps({label: 0 for label in labels})
