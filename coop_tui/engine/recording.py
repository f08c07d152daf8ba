"""Asks seats and records their decisions: reuse of stored answers, the attempt loop with
re-asks, parsing, sampling an action, and the events every decision sends.

A decision is found again by its cache key (this match) or content key (any earlier run
asking the same thing), so a resumed sweep never pays twice; a fresh one is asked until
it parses or the policy's attempts run out, each refusal sent back with its reason.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from coop_tui.decisions import (
    ASK_LEAVE,
    ASKING,
    AgentReply,
    Attempt,
    Decision,
    DecisionRequest,
    Message,
)
from coop_tui.engine.loop import let_loop_run
from coop_tui.engine.part import MatchPart
from coop_tui.engine.policy import (
    ITEM_PHASE,
    NOT_IN_CONTENT_KEY,
    PLAY_KINDS,
    RECENT_DECISIONS,
    Agent,
    DecisionLookup,
    MatchAborted,
    MatchStopped,
    source_failed,
)
from coop_tui.engine.prompting import at_end
from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    EventBus,
    ReasoningDelta,
    StreamRestarted,
    TextDelta,
)
from coop_tui.games.base import Game
from coop_tui.hashing import derived_seed, stable_hash
from coop_tui.parsing import ParseError, parse_answer, parse_leave
from coop_tui.redact import LiveScrubber, scrub
from coop_tui.schemas import example_answer, example_for

if TYPE_CHECKING:
    from coop_tui.engine import MatchContext

ParsedAnswer = tuple[Any, str | None, str | None]
"""(parsed answer, the parser's note, the text that was read); all None when nothing parsed."""
NOTHING_PARSED: ParsedAnswer = (None, None, None)


class DecisionRecorder(MatchPart):
    """Asks for one match's decisions and records them (stored, announced, kept)."""

    def __init__(self, match: MatchContext) -> None:
        super().__init__(match)
        self.decisions: deque[Decision] = deque(maxlen=RECENT_DECISIONS)
        """The match's latest decisions (the store holds them all): one match can be a
        tournament of hundreds of thousands of decisions."""

    # ------------------------------------------------------------ asking
    async def ask_all(self, requests: Sequence[DecisionRequest]) -> list[Decision]:
        """Ask several seats at once (simultaneous moves).

        When one seat fails, the others still finish (and are stored): their answers are
        paid for, and a resume will reuse them instead of asking again.
        """
        direct = self.match.direct
        if all(direct.answers_directly(r) for r in requests):
            # Nothing to wait for: no tasks, no event-loop round trips.
            return [await self.ask(r) for r in requests]
        results = await asyncio.gather(*(self.ask(r) for r in requests), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return list(results)  # type: ignore[arg-type]

    async def ask_design(self, request: DecisionRequest) -> tuple[Decision, bool, str | None]:
        """Ask for a design once per agent x seat x tournament; (decision, asked here,
        design key: the same for every match that shares the design).

        Without a tournament (design_scope = "match", an interactive match) this is a
        plain ``ask``. Otherwise the run's design book hands every match of the
        tournament the same decision: the first match to need it asks (and records it),
        the others wait for it and reference it.
        """
        match = self.match
        t = match.tournament
        if t is None:
            return await self.ask(request), True, None
        key = stable_hash([t.key, match.agents[request.seat].name, request.seat, request.phase])[:24]
        # the match itself, not this part: the design book's task may outlive the call
        decision, asked_here = await t.book.get(key, lambda: match.ask(request, shared=(key, t.seed)))
        return decision, asked_here, key

    async def ask(
        self, request: DecisionRequest, *, shared: tuple[str, int] | None = None
    ) -> Decision:
        """One decision: a strategy's answer at once, else a stored one when found, else
        asked of the agent (:meth:`_ask_fresh`); recorded either way."""
        match = self.match
        if match.stopped:
            raise MatchStopped()
        if match.pause is not None:
            await match.pause.wait()
        agent = match.agents[request.seat]
        direct = match.direct
        if direct.answers_directly(request):
            await let_loop_run()
            if match.stopped:
                raise MatchStopped()
            return self.record(direct.strategy_decision(agent, request))
        request = self.worded(request)
        cache_key, content_key = decision_keys(match, request, shared)
        asked_again = False
        if agent.kind not in ("human",) and match.lookup is not None:
            found, asked_again = self._stored(match.lookup, cache_key, content_key)
            if found is not None:
                found.reused = True
                self._emit_reused(found)
                return self.record(found)
        decision = await self._ask_fresh(agent, request, cache_key, content_key)
        decision.asked_again = asked_again
        return self.record(decision)

    def _stored(
        self, lookup: DecisionLookup, cache_key: str, content_key: str
    ) -> tuple[Decision | None, bool]:
        """(the stored decision to reuse, or None; whether an unusable one was found, so the
        decision is asked again). An earlier run's answer to the same question counts when
        the policy reuses those."""
        match = self.match
        found = lookup.find_decision(cache_key)
        asked_again = found is not None and not found.valid
        if asked_again:
            # No usable answer last time: the model, prompt or server may have been
            # fixed since, so a resume asks again instead of failing the same way.
            found = None
        if found is None and match.policy.reuse_across_runs:
            earlier = lookup.find_content(content_key)
            if earlier is not None:
                found = _rebind(earlier, match.match_id, cache_key)
        return found, asked_again

    def worded(self, request: DecisionRequest) -> DecisionRequest:
        """``request`` with the messages the paper's code builds for it when the study
        reads a source (``wording = "source"``), else as it is. Every request a seat
        reads passes here before its keys are computed, so the content key, the stored
        prompt and what is sent are all the source's; a seat that reads no prompt (a
        strategy) has no messages and none are asked for."""
        match = self.match
        source = match.policy.source
        if source is None or not request.messages:
            return request
        try:
            messages = tuple(source.messages(match, request))
        except Exception as exc:  # the user's code: any failure is theirs to see, named
            raise source_failed(source, request, exc) from exc
        return replace(request, messages=messages)

    # ------------------------------------------------------------ a fresh answer
    async def _ask_fresh(
        self, agent: Agent, request: DecisionRequest, cache_key: str, content_key: str
    ) -> Decision:
        """Ask the agent until its answer parses or the policy's attempts run out (each
        refusal re-asked with its reason), or a prompt is over ``max_prompt_tokens``."""
        match = self.match
        messages: list[Message] = [dict(m) for m in request.messages]
        failed: list[Attempt] = []
        sink = _Sink(match.bus, match.match_id, request.seat)
        totals = ReplyTotals()
        last_reply: AgentReply | None = None
        answer = NOTHING_PARSED
        error: str | None = None
        for attempt in range(1, match.policy.max_attempts + 1):
            if match.stopped:
                raise MatchStopped()
            oversize = oversize_reason(messages, match.policy.max_prompt_tokens)
            if oversize is not None:
                error = oversize
                break
            reply = await self._send(agent, request, messages, sink, attempt, content_key,
                                     totals.transport_retries)
            last_reply = reply
            totals.add(reply)
            answer, error, messages = self._judge(request, reply, attempt, messages, failed)
            if error is None:
                break
        if last_reply is None:  # nothing was sent: the first prompt is over the limit
            last_reply = AgentReply(text="", latency_ms=0.0)
            totals.nothing_sent()
        return self._fresh_decision(agent, request, (cache_key, content_key), messages, failed,
                                    last_reply, totals, answer, error)

    async def _send(
        self, agent: Agent, request: DecisionRequest, messages: list[Message], sink: _Sink,
        attempt: int, content_key: str, retries_so_far: int,
    ) -> AgentReply:
        """One attempt: announce it, ask the agent (with the attempt's sampling seed unless
        the request has its own), then hand on what the stream held back."""
        match = self.match
        match.bus.emit(
            DecisionStarted(
                match.match_id, request.seat, request.round, request.phase, attempt,
                tuple(messages), agent.name,
            )
        )
        asked = request if request.seed is not None else replace(
            request, seed=derived_seed("sampling", content_key, attempt)
        )
        asking = ASKING.set((content_key, attempt))
        try:
            return await agent.reply(asked, [dict(m) for m in messages], sink)
        except Exception as exc:
            # the decision gives up: its earlier attempts' transport retries count too
            if isinstance(getattr(exc, "retries", None), int):
                exc.retries += retries_so_far  # type: ignore[attr-defined]
            raise
        finally:
            ASKING.reset(asking)
            sink.flush()

    def _judge(
        self, request: DecisionRequest, reply: AgentReply, attempt: int,
        messages: list[Message], failed: list[Attempt],
    ) -> tuple[ParsedAnswer, str | None, list[Message]]:
        """Parse and validate one reply: (the answer, None, the messages) when it reads;
        else the refused attempt is kept in ``failed`` and announced, and (nothing, the
        reason, the next attempt's messages)."""
        try:
            return self.parse_reply(request, reply.parse_text), None, messages
        except ParseError as exc:
            failed.append(_refused_attempt(messages, reply, exc.reason))
            match = self.match
            match.bus.emit(
                AnswerRejected(
                    match.match_id, request.seat, request.round, request.phase, attempt, exc.reason
                )
            )
            again = self.reask_messages(request, messages, scrub(reply.parse_text), exc.reason)
            return NOTHING_PARSED, exc.reason, again

    def _fresh_decision(
        self, agent: Agent, request: DecisionRequest, keys: tuple[str, str],
        messages: list[Message], failed: list[Attempt], last_reply: AgentReply,
        totals: ReplyTotals, answer: ParsedAnswer, error: str | None,
    ) -> Decision:
        """The decision the attempts of :meth:`_ask_fresh` end in, sampled when it plays."""
        parsed, note, read_text = answer
        valid = error is None
        decision = Decision(
            match_id=self.match.match_id,
            round=request.round,
            phase=request.phase,
            seat=request.seat,
            kind=request.kind,
            agent=agent.name,
            prompt=[dict(m) for m in request.messages] if valid and not failed else messages,
            response=scrub(last_reply.text),  # a provider may echo the Authorization header
            reasoning=scrub(last_reply.reasoning),
            parsed=None,
            valid=valid,
            attempts=len(failed) + (1 if valid else 0),
            error=error,
            cache_key=keys[0],
            content_key=keys[1],
            labels=request.labels,
            label_to_action=request.label_to_action,
            normalisation=note,
            answer=scrub(last_reply.answer),
            constrained=last_reply.constrained,
            latency_ms=totals.latency_ms(),
            input_tokens=totals.input_tokens if totals.inputs_known else None,
            output_tokens=totals.output_tokens if totals.outputs_known else None,
            cost_usd=totals.cost_usd if totals.cost_known else None,
            transport_retries=totals.transport_retries,
            queue_ms=totals.queue_ms,
            retries=failed,
            created_at=time.time(),
            options=dict(request.options)
            if request.kind in ("number", "allocation") or "meanings" in request.options
            or "talk" in request.options else {},
        )
        self.settle(decision, request, parsed)
        if request.options.get(ASK_LEAVE):
            read_leave(decision, request, read_text or last_reply.parse_text)
        if not valid and request.kind not in PLAY_KINDS:
            decision.error = error
        return decision

    def parse_reply(self, request: DecisionRequest, text: str) -> tuple[Any, str | None, str]:
        """Parse a reply: ``(parsed, note, the text that was read)``, or raise ParseError.

        Under a source that reads its own answers (the paper's parser, asked for in the
        paper's format), that reader goes first, so a model that follows the paper's
        instructions is not re-asked for ours; where it reads nothing (the paper's code
        would play at random) coop-tui's parser reads the reply as sent, and a failure
        there is re-asked as usual. The note says which reader read it."""
        match = self.match
        source = match.policy.source
        tried = ""
        if source is not None and getattr(source, "reads_answers", False):
            try:
                read = source.read_answer(match, request, text)
            except Exception as exc:  # the user's code, as in worded()
                raise source_failed(source, request, exc) from exc
            if read is not None:
                try:
                    parsed, note = self._parse_ours(request, read)
                except ParseError:
                    pass  # an adapter's rewrite ours cannot read: read the reply itself
                else:
                    return parsed, _joined(f"read by sources.{source.name}'s own reader", note), read
            tried = f"sources.{source.name}'s own reader read nothing; read by coop-tui's parser"
        parsed, note = self._parse_ours(request, text)
        return parsed, _joined(tried, note) if tried else note, text

    def _parse_ours(self, request: DecisionRequest, text: str) -> tuple[Any, str | None]:
        return parse_answer(request.kind, text, labels=request.labels, options=request.options,
                            strict=self.match.policy.strict)

    def reask_messages(
        self, request: DecisionRequest, sent: list[Message], answer: str, reason: str,
    ) -> list[Message]:
        """The whole message list of the next attempt after ``answer`` (sent as ``sent``)
        was refused for ``reason``: the source's re-ask when the study reads one, else
        ours (the answer as the assistant's turn, then ``retry.j2`` or the protocol's own,
        with the reasoning instruction once at its end under ``style_message =
        "user_end"``)."""
        match = self.match
        source = match.policy.source
        if source is not None:
            try:
                again = source.retry_messages(match, request, tuple(sent), answer, reason)
            except Exception as exc:  # the user's code, as in worded()
                raise source_failed(source, request, exc) from exc
            return [dict(m) for m in again]
        text = match.renderer.render(
            match.protocol.retry_template(request.options),
            reason=reason,
            example=_retry_example(request),
            kind=request.kind,
            labels=request.labels,
            options=request.options,
        )
        reasoning = match.prompts.end_reasoning(request.seat)
        if reasoning is not None:
            text = at_end(text, reasoning)
        return [*sent, {"role": "assistant", "content": answer}, {"role": "user", "content": text}]

    # ------------------------------------------------------------ outcomes
    def settle(self, decision: Decision, request: DecisionRequest, parsed: Any) -> None:
        """Put a parsed answer on its decision: a play answer sampled into an action (no
        answer to a benchmark item is played), anything else stored as parsed."""
        if request.kind in PLAY_KINDS and request.phase != ITEM_PHASE:
            # the view's seat is the player position in the game (== seat unless re-matched)
            self.sample(decision, request.view.game, request.view.seat, request.labels,
                        request.label_to_action, parsed)
        else:
            decision.parsed = plain_answer(parsed, request.labels)

    def sample(
        self, decision: Decision, game: Game, pos: int, labels: Sequence[str],
        label_to_action: Sequence[int], parsed: Any,
    ) -> None:
        """Map a parsed mixed answer to game actions, draw the action, note cooperation."""
        n_actions = game.action_counts[pos]
        if parsed is not None and decision.kind == "choice":
            probs = [0.0] * n_actions
            probs[label_to_action[list(labels).index(parsed)]] = 1.0
            decision.parsed = parsed
        elif parsed is not None:
            probs = [0.0] * n_actions
            for i, p in enumerate(parsed.probabilities):
                probs[label_to_action[i]] = float(p)
            decision.parsed = dict(zip(labels, parsed.probabilities, strict=True))
        elif self.match.policy.on_invalid == "uniform":
            probs = [1.0 / n_actions] * n_actions
            decision.normalisation = "fallback: no valid answer, played uniformly at random"
        else:
            return
        decision.distribution = tuple(probs)
        support = [a for a, p in enumerate(probs) if p > 0]
        if len(support) == 1:  # what the seeded draw below returns, without its cost
            decision.action = support[0]
        else:
            rng = self.match.rng("sample", decision.round, decision.seat, decision.phase)
            decision.action = int(rng.choice(n_actions, p=np.asarray(probs) / sum(probs)))
        # A fallback is no stated intention: it has no cooperation mass, only the action
        # that was really played.
        decision.coop_prob = game.cooperation_mass(pos, probs) if parsed is not None else None
        decision.cooperated = game.is_cooperative(pos, decision.action)

    def require(self, decision: Decision) -> Decision:
        """Stop the match when a decision has no usable outcome under the policy."""
        if decision.kind in PLAY_KINDS and decision.action is None:
            raise MatchAborted(
                f"seat {decision.seat + 1} ({decision.agent}) gave no valid answer in "
                f"{decision.attempts} attempts: {decision.error}"
            )
        if (decision.kind not in PLAY_KINDS and not decision.valid
                and self.match.policy.on_invalid == "abort"):
            raise MatchAborted(
                f"seat {decision.seat + 1} ({decision.agent}) gave no valid {decision.kind} "
                f"answer: {decision.error}"
            )
        return decision

    # ------------------------------------------------------------ events
    def record(self, decision: Decision) -> Decision:
        """Keep and announce a decision (the store writes it from the event)."""
        # Reused decisions are announced too: the store ignores a cache key it holds,
        # and live panes still want to see the answer land.
        match = self.match
        direct = match.direct
        if direct.held:  # keep the order of events if a mechanism mixes paths
            direct.send_held()
        self.decisions.append(decision)
        match.bus.emit(DecisionDone(decision))
        return decision

    def _emit_reused(self, decision: Decision) -> None:
        # Replay the stored text so live panes show reused answers too.
        match = self.match
        match.bus.emit(
            DecisionStarted(
                match.match_id, decision.seat, decision.round, decision.phase, decision.attempts,
                tuple(decision.prompt), match.agents[decision.seat].name,
            )
        )
        if decision.reasoning:
            match.bus.emit(ReasoningDelta(match.match_id, decision.seat, decision.reasoning))
        if decision.response:
            match.bus.emit(TextDelta(match.match_id, decision.seat, decision.response))


@dataclass
class ReplyTotals:
    """What the attempts of one decision add up to: tokens, cost, transport retries and
    latency. Token counts and the cost are known only if every attempt reported them (a
    partial sum would look exact); latency is the provider's time, queueing for a slot
    kept apart, or the wall time when no provider reported any."""

    input_tokens: int = 0
    output_tokens: int = 0
    inputs_known: bool = True
    outputs_known: bool = True
    cost_usd: float = 0.0
    cost_known: bool = True
    transport_retries: int = 0
    provider_ms: float = 0.0
    queue_ms: float | None = None
    started: float = field(default_factory=time.perf_counter)

    def add(self, reply: AgentReply) -> None:
        """Count one attempt's reply."""
        self.provider_ms += reply.latency_ms
        if reply.queue_ms is not None:
            self.queue_ms = (self.queue_ms or 0.0) + reply.queue_ms
        if reply.input_tokens is not None:
            self.input_tokens += reply.input_tokens
        else:
            self.inputs_known = False
        if reply.output_tokens is not None:
            self.output_tokens += reply.output_tokens
        else:
            self.outputs_known = False
        if reply.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += reply.cost_usd
        self.transport_retries += reply.transport_retries

    def nothing_sent(self) -> None:
        """No attempt was sent: no count is known."""
        self.inputs_known = self.outputs_known = self.cost_known = False

    def latency_ms(self) -> float:
        return (self.provider_ms if self.provider_ms > 0
                else (time.perf_counter() - self.started) * 1000.0)


class _Sink:
    """Turns an agent's stream into events tagged with match and seat, scrubbed of
    secrets: each stream holds back a secret's length of text until it knows the text
    does not start one cut across pieces (:class:`~coop_tui.redact.LiveScrubber`)."""

    def __init__(self, bus: EventBus, match_id: str, seat: int) -> None:
        self.bus, self.match_id, self.seat = bus, match_id, seat
        self._text, self._reasoning = LiveScrubber(), LiveScrubber()

    def text(self, delta: str) -> None:
        if delta and (shown := self._text.feed(delta)):
            self.bus.emit(TextDelta(self.match_id, self.seat, shown))

    def reasoning(self, delta: str) -> None:
        if delta and (shown := self._reasoning.feed(delta)):
            self.bus.emit(ReasoningDelta(self.match_id, self.seat, shown))

    def flush(self) -> None:
        """Hand on what was held back: the reply (or the attempt) has ended."""
        if reasoning := self._reasoning.flush():
            self.bus.emit(ReasoningDelta(self.match_id, self.seat, reasoning))
        if text := self._text.flush():
            self.bus.emit(TextDelta(self.match_id, self.seat, text))

    def restart(self, reason: str) -> None:
        self.flush()
        self.bus.emit(StreamRestarted(self.match_id, self.seat, reason))


def decision_keys(
    match: MatchContext, request: DecisionRequest, shared: tuple[str, int] | None = None
) -> tuple[str, str]:
    """(cache key, content key) of ``request`` in ``match``. A ``shared`` decision (design
    key, tournament seed) belongs to the tournament, not to the match that happens to ask
    it first, so a resumed run finds it whichever match asks."""
    agent = match.agents[request.seat]
    payload = {
        "agent": {k: v for k, v in agent.spec.items() if k not in NOT_IN_CONTENT_KEY},
        "messages": list(request.messages),
        "kind": request.kind,
        "phase": request.phase,
        "round": request.round,
        "seat": request.seat,
        "sample": match.sample,
        "seed": match.seed,
        "labels": list(request.label_to_action),
    }
    if shared is not None:
        payload.update(sample=0, seed=shared[1], shared=shared[0])
        content = stable_hash(payload)
        return stable_hash([match.run_id, "shared", shared[0], content]), content
    content = stable_hash(payload)
    return stable_hash([match.run_id, match.match_id, content]), content


def oversize_reason(messages: Sequence[Message], limit: int | None) -> str | None:
    """Why these messages must not be sent (over ``max_prompt_tokens``), or None."""
    if limit is None:
        return None
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    if chars <= limit * 4:  # the cheap common case, before any division
        return None
    tokens = -(-chars // 4)
    return (f"prompt not sent: about {tokens:,} tokens (characters / 4), more than "
            f"max_prompt_tokens = {limit:,}; use a shorter history or fewer players, or "
            "raise max_prompt_tokens")


def _refused_attempt(messages: list[Message], reply: AgentReply, reason: str) -> Attempt:
    """A refused attempt as the decision keeps it (its row's ``retries``)."""
    return Attempt(
        messages=[dict(m) for m in messages],
        response=scrub(
            reply.parse_text if reply.answer is None
            else reply.text + "\n[answer] " + reply.answer
        ),
        reasoning=scrub(reply.reasoning),
        error=reason,
        latency_ms=reply.latency_ms,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cost_usd=reply.cost_usd,
    )


def read_leave(decision: Decision, request: DecisionRequest, text: str) -> None:
    """A combined move-and-leave answer's ``leave``, kept on the decision (and its
    ``ask_leave`` option, so the stored row says what was asked)."""
    decision.options = {**decision.options, ASK_LEAVE: True}
    if not decision.valid:
        return
    try:
        decision.leave = parse_leave(request.kind, text, request.labels)[0]
    except ParseError as exc:  # a strategy's answer without it: its own defect
        decision.valid, decision.error = False, exc.reason


def plain_answer(parsed: Any, labels: Sequence[str]) -> Any:
    """A parsed answer as stored when nothing is played: a mixed strategy becomes its
    percentages per label (fractions), everything else stays as parsed."""
    probabilities = getattr(parsed, "probabilities", None)
    if probabilities is not None:
        return dict(zip(labels, (float(p) for p in probabilities), strict=True))
    return parsed


def _retry_example(request: DecisionRequest) -> str:
    if request.kind in ("mixed", "choice") and request.options.get(ASK_LEAVE):
        return example_for(request.kind, request.labels, request.options)
    if request.kind == "mixed":
        return example_answer(request.labels)
    if request.kind == "choice":
        return example_for("choice", request.labels, request.options)
    if request.kind == "score":
        return "SIMILARITY SCORE: <0-100>"
    if request.kind == "sign":
        return '{"sign": true}'
    if request.kind == "approvals":
        return json.dumps({label: True for label in request.labels})
    if request.kind in ("mediator", "contract", "number", "allocation") or (
        request.kind == "text" and request.options.get("talk")
    ):
        return example_for(request.kind, request.labels, request.options)
    return "the format asked for above"


def _joined(first: str, note: str | None) -> str:
    """A reader's note before the parser's own (``normalisation``), either may be empty."""
    return "; ".join(n for n in (first, note) if n)


def _rebind(decision: Decision, match_id: str, cache_key: str) -> Decision:
    """A decision from an earlier run, re-owned by this match (no new request is sent)."""
    # The earlier run paid for it: this run records no cost and no transport retries.
    return replace(
        decision, match_id=match_id, cache_key=cache_key, retries=list(decision.retries),
        cost_usd=0.0 if decision.cost_usd is not None else None, transport_retries=0,
    )
