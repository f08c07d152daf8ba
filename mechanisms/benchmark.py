"""Benchmark administration (similarity signals, §4): one agent answers a benchmark's items.

A match is one *run* of one agent through one benchmark (``samples`` = the k runs, the
paper's 3); every item is one decision in phase ``item``, parsed per item kind, re-asked
when unusable and reused on resume like any decision. The value each answer is compared
by (an option index, a rating, a number, a normalised text, a distribution) is recorded
per item as the phase's info ``{"answers": {item_id: value}}``; the explanation is the
decision's text. Multiple-choice options are shown in a seeded random order per
agent, run and item (the paper shuffles them; ``shuffle_options = false`` keeps the
file's order); the order is stored as the phase's ``order`` (shown position -> option
index of the file) and the recorded answer is the file's option index, so answers are
compared under that mapping. The noise controls ask the agent once, record its reply, and assign it
the outcomes an external seeded process drew (its own answer is ignored).

The match has no payoff: it measures, it does not play.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import Field

from coop_tui.decisions import DecisionRequest, SeatView
from coop_tui.engine import (
    ITEM_PHASE,
    MatchAborted,
    MatchContext,
    MatchOutcome,
    derived_seed,
    example_for,
)
from coop_tui.games.base import Game
from coop_tui.grounded.domains import ALIASES, CONTROLS, benchmark_key, load_benchmark
from coop_tui.grounded.items import normalise_text
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.mechanisms.similarity import SimilarityParams, similarity_twist
from coop_tui.schemas import answer_schema


class BenchmarkParams(MechanismParams):
    benchmark: str = Field(description="built-in domain (similarity_game, die, coin), demo set or .jsonl file")
    items: int | None = Field(default=None, ge=1, le=100_000,
                              description="ask a seeded subsample of this many items (paper: 150)")
    item_seed: int = Field(default=0, ge=0, description="which subsample: the same for every agent and run")
    length: int = Field(default=100, ge=1, le=10_000, description="controls: outcomes per sequence")
    shuffle_options: bool = Field(
        default=True, description="show multiple-choice options in a seeded random order (the paper)"
    )


def selected_items(params: BenchmarkParams, game: Game | None = None, base: Any = None) -> tuple[Any, ...]:
    """The items every agent and run of this benchmark is asked, in file order.

    ``items`` subsamples an item file and the similarity game's announced levels alike (a
    quick look at a few levels); a noise control is one request whatever its length, so
    its ``length`` sizes it instead."""
    actions = tuple(f"A{i}" for i in range(game.action_counts[0])) if game is not None else ("A0", "A1")
    bench = load_benchmark(params.benchmark, base=base, length=params.length, actions=actions)
    items = bench.items
    if params.items is not None and params.items < len(items) and bench.domain != "control":
        rng = np.random.default_rng(derived_seed("items", benchmark_key(params.benchmark), params.item_seed))
        keep = sorted(rng.choice(len(items), size=params.items, replace=False).tolist())
        items = tuple(items[i] for i in keep)
    return items


_ANSWER_LINE = re.compile(r"^\s*\**\s*answer\s*\**\s*[:=]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def text_answer(reply: str) -> str:
    """A free-text item's answer: the last ``ANSWER:`` line, else the last non-empty line."""
    found = _ANSWER_LINE.findall(reply or "")
    if found:
        return normalise_text(found[-1])
    lines = [line for line in (reply or "").splitlines() if line.strip()]
    return normalise_text(lines[-1]) if lines else ""


@register_mechanism
class BenchmarkAdministration(Mechanism):
    key = "benchmark"
    title = "Benchmark administration (grounded similarity, stage 1)"
    Params = BenchmarkParams
    phases = (ITEM_PHASE,)
    stage = True
    """A pipeline stage run from sweep files, not a game to play in the setup screen."""

    def seat_count(self, game: Game, roster: int | None = None) -> int:
        return 1

    def check_game(self, game: Game, n_seats: int) -> None:
        if n_seats != 1:
            raise ValueError('a benchmark is answered by one agent at a time; use matchup = "self"')
        assert isinstance(self.params, BenchmarkParams)
        selected_items(self.params, game)  # SpecError when the benchmark cannot load

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        assert isinstance(self.params, BenchmarkParams)

        if ALIASES.get(self.params.benchmark, self.params.benchmark) in CONTROLS:
            return 1
        return len(selected_items(self.params, game))

    def condition(self) -> dict[str, Any]:
        assert isinstance(self.params, BenchmarkParams)
        bench = load_benchmark(self.params.benchmark, length=self.params.length)
        return {"benchmark": benchmark_key(self.params.benchmark), "items": self.params.items,
                "metric": bench.metric, "scale": list(bench.scale) if bench.scale else None,
                "ref": self.params.benchmark, "length": self.params.length,
                "shuffle_options": self.params.shuffle_options}

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        assert isinstance(self.params, BenchmarkParams)
        items = selected_items(self.params, ctx.game, getattr(ctx, "base", None))
        kind = items[0].kind
        if kind == "control":
            return await self._control(ctx, items)
        orders: list[list[int] | None] = [None] * len(items)
        if items[0].extra.get("similarity") is not None:
            requests = [self._game_request(ctx, n, item) for n, item in enumerate(items, start=1)]
        else:
            orders = [self._order(ctx, n, item) for n, item in enumerate(items, start=1)]
            requests = [self._item_request(ctx, n, item.in_order(order))
                        for n, (item, order) in enumerate(zip(items, orders, strict=True), start=1)]
        decisions = await ctx.ask_all(requests)
        for n, (item, decision, request, order) in enumerate(
            zip(items, decisions, requests, orders, strict=True), start=1
        ):
            value = _value(item.in_order(order), decision, request) if decision.valid else None
            info: dict[str, Any] = {"item": item.id}
            if order is not None:
                value = None if value is None else order[value]  # back to the file's option
                info["order"] = order
            ctx.phase_done(n, ITEM_PHASE, {"answers": {item.id: value}, **info})
        failed = [d for d in decisions if not d.valid]
        if failed and ctx.policy.on_invalid == "abort":
            raise MatchAborted(f"{len(failed)} item(s) got no valid answer: {failed[0].error}")
        return MatchOutcome((), {"items": len(items), "invalid": len(failed)})

    # ------------------------------------------------------------ requests
    def _order(self, ctx: MatchContext, n: int, item: Any) -> list[int] | None:
        """Shown position -> the file's option index, seeded by agent, run and item."""
        assert isinstance(self.params, BenchmarkParams)
        if item.kind != "options" or not self.params.shuffle_options:
            return None
        return [int(i) for i in ctx.rng("option-order", n, item.id).permutation(len(item.options))]

    def _game_request(self, ctx: MatchContext, n: int, item: Any) -> DecisionRequest:
        """The similarity game: the experiment's game, told the co-player is X% similar."""
        twist = similarity_twist(ctx.renderer, SimilarityParams(similarity=item.extra["similarity"]),
                                 ctx.game.n_players, 0)
        return ctx.play_request(0, n, twist=twist, phase=ITEM_PHASE)

    def _item_request(self, ctx: MatchContext, n: int, item: Any) -> DecisionRequest:
        kind, options, labels = _answer_kind(item)
        messages: tuple[dict[str, str], ...] = ()
        if ctx.reads_prompt(0):
            text = ctx.renderer.render(
                "item.j2", question=item.shown(), kind=item.kind, labels=labels,
                low=item.scale[0] if item.scale else item.minimum,
                high=item.scale[1] if item.scale else item.maximum,
                style=getattr(ctx.agents[0], "style", "cot") or "cot",
                example=example_for("mixed", labels, {}), count=0,
            )
            messages = ({"role": "user", "content": text},)
        return DecisionRequest(
            seat=0, round=n, phase=ITEM_PHASE, kind=kind, messages=messages,  # type: ignore[arg-type]
            view=SeatView(game=ctx.game, seat=0, round=n, extra={"item": item.id}),
            labels=labels, label_to_action=tuple(range(len(labels))) if kind == "mixed" else (),
            schema=answer_schema(kind, labels, options), options=options,
        )

    async def _control(self, ctx: MatchContext, items: tuple[Any, ...]) -> MatchOutcome:
        """Ask once (recorded, ignored); the external process's outcomes are the answers."""
        values = items[0].extra["values"]
        what = "die" if values[0] == 1 else "coin"
        messages: tuple[dict[str, str], ...] = ()
        if ctx.reads_prompt(0):
            question = (f"Please {'roll a fair six-sided die' if what == 'die' else 'toss a fair coin'} "
                        f"{len(items)} times and report each result.")
            text = ctx.renderer.render("item.j2", question=question, kind="control", labels=(),
                                       style=getattr(ctx.agents[0], "style", "cot") or "cot",
                                       count=len(items), low=None, high=None, example="")
            messages = ({"role": "user", "content": text},)
        request = DecisionRequest(
            seat=0, round=1, phase=ITEM_PHASE, kind="text", messages=messages,
            view=SeatView(game=ctx.game, seat=0, round=1, extra={"item": "sequence"}),
        )
        await ctx.ask(request)  # stored like any answer, then disregarded
        rng = ctx.rng("external", what)  # the match seed: one draw per agent and run
        drawn = rng.integers(len(values), size=len(items))
        answers = {item.id: values[int(k)] for item, k in zip(items, drawn, strict=True)}
        ctx.phase_done(1, ITEM_PHASE, {"answers": answers, "external": True})
        return MatchOutcome((), {"items": len(items), "external": True})


def _answer_kind(item: Any) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    if item.kind == "options":
        return "choice", {}, item.labels
    if item.kind == "likert":
        lo, hi = item.scale
        return "number", {"name": "rating", "min": lo, "max": hi, "step": 1}, ()
    if item.kind == "number":
        opts: dict[str, Any] = {"name": "value"}
        for key, value in (("min", item.minimum), ("max", item.maximum), ("step", item.step)):
            if value is not None:
                opts[key] = int(value) if float(value).is_integer() else value
        return "number", opts, ()
    if item.kind == "mixed":
        return "mixed", {}, item.labels
    return "text", {}, ()


def _value(item: Any, decision: Any, request: DecisionRequest) -> Any:
    """The comparable value of a valid answer (see the module docstring)."""
    parsed = decision.parsed
    if item.kind == "options":
        return list(item.labels).index(parsed)
    if item.kind == "likert":
        return int(parsed)
    if item.kind == "number":
        return float(parsed)
    if item.kind == "text":
        return text_answer(decision.response)
    # mixed: fractions in action order (the game's for the similarity game)
    probs = [0.0] * len(request.label_to_action)
    if isinstance(parsed, str):  # a choice answer (answer = "choice"): all mass on it
        parsed = {label: float(label == parsed) for label in request.labels}
    for label, action in zip(request.labels, request.label_to_action, strict=True):
        probs[action] = float(parsed[label])
    total = sum(probs) or 1.0
    return [p / total for p in probs]
