"""The strategy-only path: decisions of seats that answer from their view alone, without a
prompt, and whole rounds of them played in one loop.

A strategy's answer is free, instant and the same on every replay, so it is neither
looked up, hashed nor re-asked; pure answers are sampled once and their decisions reused.
When every seat is such a strategy, rounds skip the request objects and coroutine hops,
and their events are held back and sent as one :class:`coop_tui.events.DirectRounds`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from coop_tui import events
from coop_tui.decisions import ASK_LEAVE, Decision, DecisionRequest, Move, SeatView
from coop_tui.engine.loop import let_loop_run, loop_turn_due
from coop_tui.engine.part import MatchPart
from coop_tui.engine.policy import MatchStopped
from coop_tui.engine.prompting import _neutral
from coop_tui.engine.recording import read_leave
from coop_tui.events import (
    DIRECT_ROUNDS_CHUNK,
    DecisionStarted,
    DirectDecisions,
    RoundDone,
    TextDelta,
)
from coop_tui.games.base import Game
from coop_tui.parsing import ParseError, parse_answer

if TYPE_CHECKING:
    from coop_tui.engine import MatchContext

Outcome = Callable[[tuple[int, ...]], tuple[Sequence[float], Sequence[bool | None] | None]]
"""A profile's payoffs and whether each seat's action was cooperative."""


class DirectRounds(MatchPart):
    """Strategy decisions without prompts, and plain rounds played by strategies alone
    (Axelrod's ``Match`` with its cache: the events and rows are those of asking)."""

    def __init__(self, match: MatchContext) -> None:
        super().__init__(match)
        self.direct = [
            not reads and hasattr(agent, "answer")
            for reads, agent in zip(match.prompts.reads, match.agents, strict=True)
        ]
        """Per seat: a strategy that answers without a prompt."""
        self._samples: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        """(parsed, seat, label mapping) -> the sampled fields of a pure answer (the
        per-seat path of :meth:`direct_round`)."""
        self._answers: list[dict[int, tuple[Any, ...]]] = [{} for _ in match.agents]
        """Per seat, id of a strategy's parsed answer -> (parsed, label mapping, the row
        fields it fixes) for pure answers already sampled in a direct round."""
        self.held: list[DirectDecisions | RoundDone] | None = None
        """A strategy-only match's per-round events held back for one
        :class:`~coop_tui.events.DirectRounds` (when every listener reads it: see
        :meth:`send_held`); None when not holding."""

    # ------------------------------------------------------------ one decision
    def answers_directly(self, request: DecisionRequest) -> bool:
        """A strategy asked without a prompt: its answer is free, instant and the same on
        every replay, so it is neither looked up, hashed nor re-asked."""
        return self.direct[request.seat] and not request.messages

    def strategy_decision(self, agent: Any, request: DecisionRequest) -> Decision:
        """The fast path of ``ask`` for strategies: the same parse and sampling, no
        prompt, no cache keys (a replay recomputes the identical answer)."""
        match = self.match
        if match.announce_strategies:
            match.bus.emit(
                DecisionStarted(match.match_id, request.seat, request.round, request.phase, 1, (), agent.name)
            )
        started = time.perf_counter()
        error = note = parsed = None
        mixed = getattr(agent, "mixed_answer", None) if request.kind == "mixed" else None
        if mixed is not None:
            # The strategy wrote this text from these exact percentages: reading them
            # back through the text parser would only repeat the same numbers.
            text, parsed = mixed(request)
        else:
            text = agent.answer(request)
            try:
                parsed, note = parse_answer(
                    request.kind, text, labels=request.labels, options=request.options
                )
            except ParseError as exc:
                error = exc.reason
        if text and match.announce_strategies:
            match.bus.emit(TextDelta(match.match_id, request.seat, text))
        decision = Decision(
            match_id=match.match_id, round=request.round, phase=request.phase, seat=request.seat,
            kind=request.kind, agent=agent.name, prompt=[], response=text, reasoning="",
            parsed=None, valid=error is None, attempts=1, error=error, cache_key=None,  # type: ignore[arg-type]
            content_key=None, labels=request.labels,  # type: ignore[arg-type]
            label_to_action=request.label_to_action, normalisation=note,
            latency_ms=(time.perf_counter() - started) * 1000.0, input_tokens=0,
            output_tokens=0, cost_usd=0.0, created_at=time.time(),
        )
        match.recorder.settle(decision, request, parsed)
        if request.options.get(ASK_LEAVE):
            read_leave(decision, request, text)
        return decision

    # ------------------------------------------------------------ whole rounds
    def plays_directly(self) -> bool:
        """True when every seat is a strategy that answers plain play requests of this
        match's game without a prompt and nobody watches answers stream: a mechanism may
        then play its rounds with :meth:`direct_round`."""
        match = self.match
        return (
            all(self.direct)
            and match.policy.answer == "mixed"  # direct rounds write mixed answers only
            and not match.announce_strategies
            and match.closer.records is not None
            and all(hasattr(a, "mixed_for") for a in match.agents)
        )

    async def direct_round(self, round_: int, *, total_rounds: int | None = None) -> list[int]:
        """Every seat's play decision of one plain simultaneous round, for strategies.

        The decisions, their events and the sampled actions are exactly what asking each
        seat ``play_request`` through ``ask_all`` gives (without a twist: a strategy reads
        none); only the request objects and coroutine hops are skipped, which at 200
        rounds of eight strategies were most of the engine's time.
        Returns the actions; the caller scores them and calls ``finish_round``.
        """
        match = self.match
        await let_loop_run()
        if match.stopped:
            raise MatchStopped()
        if match.pause is not None:
            await match.pause.wait()
        game, records, actions = match.game, match.closer.records, []
        assert records is not None
        now = time.time()
        if match.bus.direct_batches:
            return self._round_batched(match, round_, total_rounds, now)
        recorder = match.recorder
        for seat, agent in enumerate(match.agents):
            own = match.prompts.labelling(seat, round_, "play")
            view = SeatView(game, seat, round_, tuple(match.histories[seat]), total_rounds, {},
                            tuple(records[seat]))
            started = time.perf_counter()
            text, parsed = agent.mixed_for(view, own.labels, own.label_to_action)
            decision = Decision(
                match_id=match.match_id, round=round_, phase="play", seat=seat, kind="mixed",
                agent=agent.name, prompt=[], response=text, reasoning="", parsed=None,
                valid=True, attempts=1, error=None, cache_key=None,  # type: ignore[arg-type]
                content_key=None, labels=own.labels,  # type: ignore[arg-type]
                label_to_action=own.label_to_action,
                latency_ms=(time.perf_counter() - started) * 1000.0, input_tokens=0,
                output_tokens=0, cost_usd=0.0, created_at=now,
            )
            key = (parsed, seat, own.label_to_action)
            known = self._samples.get(key)
            if known is None:
                recorder.sample(decision, game, seat, own.labels, own.label_to_action, parsed)
                if decision.distribution is not None and sum(
                    p > 0 for p in decision.distribution
                ) == 1:  # a pure answer: the same sample every time
                    self._samples[key] = (decision.parsed, decision.distribution, decision.action,
                                          decision.coop_prob, decision.cooperated)
            else:
                decision.parsed = dict(known[0])
                (decision.distribution, decision.action, decision.coop_prob,
                 decision.cooperated) = known[1:]
            recorder.record(decision)
            actions.append(decision.action)
        return actions

    async def direct_rounds(self, total_rounds: int, outcome: Outcome) -> list[tuple[float, ...]]:
        """Rounds 1 to ``total_rounds`` of a plain simultaneous repeated game between
        strategies (:meth:`plays_directly`): each round as :meth:`direct_round` and
        ``finish_round`` play and record it, in one loop. ``outcome(actions)`` gives a
        profile's payoffs and whether each seat's action was cooperative (the round's
        ``cooperated`` info); it is asked once per distinct profile. Returns each round's
        payoffs, for the mechanism to total as it weighs them.

        A tournament is tens of thousands of such rounds: a coroutine and two calls per
        round were a fifth of the engine's time there."""
        match = self.match
        finish_round = match.closer.finish_round
        scored: dict[tuple[int, ...], tuple[tuple[float, ...], Sequence[bool | None] | None]] = {}
        per_round: list[tuple[float, ...]] = []
        batched = match.bus.direct_batches
        for t in range(1, total_rounds + 1):
            if not batched:
                actions = await self.direct_round(t, total_rounds=total_rounds)
            else:  # direct_round's own steps, without a coroutine per round
                if loop_turn_due():
                    await asyncio.sleep(0)
                if match.stopped:
                    raise MatchStopped()
                if match.pause is not None:
                    await match.pause.wait()
                actions = self._round_batched(match, t, total_rounds, time.time())
            profile = tuple(actions)
            known = scored.get(profile)
            if known is None:
                payoffs, cooperated = outcome(profile)
                known = scored[profile] = (tuple(map(float, payoffs)), cooperated)
            payoffs, cooperated = known
            info = {} if cooperated is None else {"cooperated": list(cooperated)}
            finish_round(t, profile, payoffs, info=info)
            per_round.append(payoffs)
        return per_round

    def _round_batched(
        self, match: MatchContext, round_: int, total_rounds: int | None, now: float,
    ) -> list[int]:
        """:meth:`direct_round` when every listener reads :class:`DirectDecisions`: the
        same decisions, field for field, as one row per seat in one event, without a
        :class:`Decision` object and an event per seat (most of a strategy round's cost).
        ``match`` is :attr:`match`, handed in by the caller (this runs every round)."""
        game, records = match.game, match.closer.records
        assert records is not None
        rows: list[tuple[Any, ...]] = []
        actions: list[int] = []
        clock = time.perf_counter
        histories, counts = match.histories, match.prompts.counts
        neutral = not match.policy.randomize_labels  # then labelling() is _neutral(n)
        for seat, agent in enumerate(match.agents):
            own = _neutral(counts[seat]) if neutral else match.prompts.labelling(seat, round_, "play")
            labels, mapping = own.labels, own.label_to_action
            view = _seat_view(game, seat, round_, tuple(histories[seat]), total_rounds,
                              tuple(records[seat]))
            started = clock()
            text, parsed = agent.mixed_for(view, labels, mapping)
            latency_ms = (clock() - started) * 1000.0
            # keyed by the parsed object's identity (hashing it costs more than the rest);
            # the entry keeps it and the labels alive, so no identity can pass to another
            samples = self._answers[seat]
            known = samples.get(id(parsed))
            answer = known[2] if known is not None and known[0] is parsed and known[1] == mapping else None
            if answer is None:
                decision = Decision(
                    match_id=match.match_id, round=round_, phase="play", seat=seat, kind="mixed",
                    agent=agent.name, prompt=[], response=text, reasoning="", parsed=None,
                    valid=True, attempts=1, error=None, cache_key=None,  # type: ignore[arg-type]
                    content_key=None, labels=labels,  # type: ignore[arg-type]
                    label_to_action=mapping, latency_ms=latency_ms, input_tokens=0,
                    output_tokens=0, cost_usd=0.0, created_at=now,
                )
                match.recorder.sample(decision, game, seat, labels, mapping, parsed)
                answer = (text, decision.parsed, labels, mapping, decision.distribution,
                          decision.action, decision.coop_prob, decision.cooperated,
                          decision.normalisation)
                if decision.distribution is not None and sum(
                    p > 0 for p in decision.distribution
                ) == 1:  # a pure answer: the same decision every time
                    samples[id(parsed)] = (parsed, mapping, answer)
            rows.append((seat, agent.name, latency_ms, answer))
            actions.append(answer[5])
        event = _new(DirectDecisions)  # as _seat_view builds views: one per strategy round
        event.__dict__.update(match_id=match.match_id, round=round_, created_at=now, rows=tuple(rows))
        held = self.held
        if held is None and match.bus.direct_rounds:
            held = self.held = []
        if held is None:
            match.bus.emit(event)
        else:
            held.append(event)
        return actions

    # ------------------------------------------------------------ held events
    def hold(self, event: RoundDone) -> bool:
        """Hold a round back with the direct decisions before it (True), or leave it to
        be sent now (False: nothing is being held)."""
        held = self.held
        if held is None:
            return False
        held.append(event)
        if len(held) >= 2 * DIRECT_ROUNDS_CHUNK:
            self.send_held()
        return True

    def send_held(self) -> None:
        """Send the events held back for a strategy-only match as one
        :class:`~coop_tui.events.DirectRounds` (the match runner calls this when the
        mechanism returns or raises, before the match's end is announced, so the store
        writes its rows in the same order)."""
        held, self.held = self.held, None
        if held:
            self.match.bus.emit(events.DirectRounds(self.match.match_id, tuple(held)))


def _seat_view(
    game: Game, seat: int, round_: int, history: tuple[Move, ...], total_rounds: int | None,
    record: tuple[bool, ...],
) -> SeatView:
    """``SeatView(game, seat, round_, history, total_rounds, {}, record)`` without the
    frozen dataclass's field-by-field ``__init__``: one is built per strategy move."""
    view = _new(SeatView)
    view.__dict__.update(game=game, seat=seat, round=round_, history=history,
                         total_rounds=total_rounds, extra={}, cooperation_record=record)
    return view


_new = object.__new__
