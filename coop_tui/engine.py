"""Plays one match: asks agents for decisions, lets the mechanism score, emits events.

The engine owns the parts every mechanism shares: building the standard game prompt,
asking an agent (streaming deltas out as events), parsing the reply, re-asking with
the reason when it is unusable, sampling an action with a per-decision seeded RNG, and
reusing finished decisions from the store so a resumed sweep never pays twice.
Mechanisms only say *what* to ask and how answers become payoffs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from coop_tui.decisions import (
    ASK_LEAVE,
    ASKING,
    AgentReply,
    AnswerKind,
    Attempt,
    Decision,
    DecisionRequest,
    MatchOutcome,  # defined below the engine (games use it too); importable from here
    Message,
    Move,
    SeatView,
)
from coop_tui.errors import SpecError
from coop_tui.events import (
    DIRECT_ROUNDS_CHUNK,
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    DirectDecisions,
    DirectRounds,
    EventBus,
    PhaseDone,
    ReasoningDelta,
    RoundDone,
    StreamRestarted,
    TextDelta,
)
from coop_tui.games.base import Game
from coop_tui.hashing import derived_seed, stable_hash  # the same: importable from here
from coop_tui.parsing import ParseError, parse_answer, parse_leave
from coop_tui.prompts import (
    Labelling,
    PromptRenderer,
    action_lines,
    payoff_description,
    trial_labelling,
    trial_letters,
)
from coop_tui.protocols import DEFAULT_KEY, PromptProtocol
from coop_tui.protocols import get as get_protocol
from coop_tui.redact import LiveScrubber, scrub
from coop_tui.schemas import answer_schema, example_answer, example_for
from coop_tui.talk import (
    DEFAULT_TALK_CHARS,
    TALK_PHASE,
    TalkMessage,
    heard,
    transcript_rows,
    visible,
)

RECENT_DECISIONS = 1000
"""Decisions a match context keeps in memory (MatchContext.decisions)."""
PHASES = ("play", "propose", "vote", "sign", "score", "plan", "critique", "meta", "item", "talk")
ITEM_PHASE = "item"
"""A benchmark answer (the similarity signals paper's grounded similarity): a choice or mixed answer in this
phase is an answer to a question, never a move, so nothing is sampled or played."""
PLAY_KINDS = ("mixed", "choice")
"""Answer kinds a play decision can take; both end in a distribution and a sampled action
(a choice is a one-hot distribution)."""


NOT_IN_CONTENT_KEY = frozenset({"max_concurrency", "timeout", "deadline", "max_answer_chars",
                                "batch", "batch_poll",
                                "api_key_env", "threads", "prefix_cache"})
"""Agent settings that cannot change an answer: changing them must not re-ask anything
(``prefix_cache``: a reused prompt start gives the same bits as evaluating it afresh)."""


class Agent(Protocol):
    """Anything that can fill a seat."""

    name: str
    kind: str
    """llm / local / strategy / human / replay"""
    style: str
    """cot or direct: which answer instructions its prompts carry."""
    spec: dict[str, Any]
    """Public description (never a secret): part of every decision's content key."""
    # Optional: ``reads_prompt = False`` (fixed strategies) means the agent answers from
    # the SeatView alone, so no prompt is rendered, hashed or stored for it.

    async def reply(
        self, request: DecisionRequest, messages: list[Message], sink: Any
    ) -> AgentReply: ...


class DecisionLookup(Protocol):
    """Where finished decisions are found again (the store)."""

    def find_decision(self, cache_key: str) -> Decision | None: ...

    def find_content(self, content_key: str) -> Decision | None: ...


class MessageSource(Protocol):
    """A paper's own code building the messages of a request, in place of our templates
    (``wording = "source"``): a :class:`coop_tui.sources.LoadedSource`, handed to the
    match on its policy so the engine never imports a paper's adapter."""

    @property
    def name(self) -> str: ...

    def messages(self, ctx: Any, request: DecisionRequest) -> tuple[Message, ...]: ...

    def retry_messages(
        self, ctx: Any, request: DecisionRequest, sent: tuple[Message, ...],
        answer: str, reason: str,
    ) -> tuple[Message, ...]: ...

    @property
    def reads_answers(self) -> bool: ...

    def read_answer(self, ctx: Any, request: DecisionRequest, text: str) -> str | None: ...


class SourceFailed(SpecError):
    """The paper's code failed to build a request's messages. Every match of the cell
    would fail the same way, so the sweep stops (exit 2), as for an unsafe template; the
    dry run's probes meet it before any model is asked."""


def _source_failed(source: MessageSource, request: DecisionRequest, exc: Exception) -> SourceFailed:
    what = "" if isinstance(exc, SpecError) else f"{type(exc).__name__}: "
    return SourceFailed(
        f"sources.{source.name}",
        f"the paper's code failed to word the {request.phase} request of round "
        f"{request.round}, seat {request.seat + 1}: {what}{exc}; check the clone (the tested "
        f'commit is in docs/wording.md) or use wording = "ours" for this experiment',
    )


class MatchAborted(Exception):
    """A decision could not be completed and the run's policy says stop the match."""


class MatchStopped(Exception):
    """The user stopped the match."""


@dataclass
class DecisionPolicy:
    max_attempts: int = 3
    on_invalid: str = "abort"
    """abort: the match fails; uniform: play uniformly, recorded as invalid with the reason."""
    randomize_labels: bool | str = False
    """False: A0, A1, ... in action order. True or "decision": the A-labels shuffled per
    decision. "trial" (strategic personalities): letters drawn once per match (a pair such as J/F for two
    actions) and listed in an order shuffled per round; payoffs are described in action
    order, as the strategic personalities paper's code does."""
    reuse_across_runs: bool = True
    strict: bool = False
    """CoopEval's answer rule: no repairs (integers summing to exactly 100), re-ask instead."""
    condition_text: str = ""
    """A named condition's sentences (the strategic personalities paper's framing), shown before the game's rules."""
    condition: str | None = None
    """The cell's named condition (``baseline``, ``cover_business``, ``payoff_10x``...), so
    a source that frames prompts by condition reads it directly; None: not told (a match
    built outside a sweep), the source infers it from ``condition_text``."""
    payoff_scale: float | None = None
    """The factor the cell's condition multiplies every payoff by (1 for most), for a
    source whose code scales payoffs itself; None: not told, the source infers it."""
    answer: str = "mixed"
    """How play decisions are answered: "mixed" (percentages per action, sampled by the
    engine) or "choice" (exactly one action, ``{"choice": "<label>"}``)."""
    prompt_protocol: str = DEFAULT_KEY
    """How a prompt reaches the seat and how it asks for the answer: the name or stored
    key of a protocol of :mod:`coop_tui.protocols` (the match asks it as ``ctx.protocol``)."""
    style_message: str = "system"
    """Where the reasoning instruction of a ``cot`` or ``direct`` agent goes, when the
    protocol lets it be a system message (:meth:`PromptProtocol.reasoning_as_system`).
    "system" (CoopEval's code): a system message of its own (``system/<style>.j2``) and
    the user message asks for the answer as ``answer/<kind>_plain.j2`` does, the same
    for both styles. "user": one user message whose answer instructions carry the
    reasoning instruction (``answer/<kind>_<style>.j2``)."""
    talk: str = "none"
    """Talk phases (:mod:`coop_tui.talk`): "public" or "private" messages before each
    round's move, asked by a mechanism's talk step; "none" (the default) asks none."""
    talk_turns: int = 1
    """Messages each seat sends before each round's move."""
    talk_chars: int = DEFAULT_TALK_CHARS
    """A message's bound in characters (the answer's cap; a longer one is cut, noted)."""
    max_prompt_tokens: int | None = None
    """Every prompt (first attempt and re-asks) is measured before it is sent (characters
    / 4, as the sweep's estimate): one over this limit is not sent; the decision fails
    with the reason recorded. Prompts grow with history, so the dry run's check of the
    first prompt cannot cover them all."""
    source: MessageSource | None = None
    """``wording = "source"``: the paper's code that words every prompt a seat reads (its
    first attempt and its re-asks) from the request our templates built; None: our words."""
    wording_folder: Path | None = None
    """``wording = "<folder>"``: the user's own templates the prompts are worded from (a
    template overlay reads it); None: our words or a source's."""


YIELD_EVERY_S = 0.02
"""Longest stretch the engine computes without letting the event loop run."""


class _LoopTurn:
    """When the engine last let the event loop run (one clock for the whole process)."""

    last = time.perf_counter()


async def let_loop_run() -> None:
    """Give the event loop a turn when the engine has held it for ``YIELD_EVERY_S``.

    Strategy decisions and direct rounds never wait on anything, so a coroutine playing
    them never suspends: without this, a strategy-only sweep ran to its end in one step
    of the loop, and SIGINT / SIGTERM (whose handlers run on the loop) or the TUI's Stop
    were heard only when it had finished. Checking the clock costs far less than
    suspending on every decision.
    """
    now = time.perf_counter()
    if now - _LoopTurn.last >= YIELD_EVERY_S:
        _LoopTurn.last = now
        await asyncio.sleep(0)


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


class MatchContext:
    """What a mechanism sees of the world: the game, the seats and ``ask``."""

    def __init__(
        self,
        *,
        run_id: str,
        match_id: str,
        game: Game,
        agents: Sequence[Agent],
        bus: EventBus,
        seed: int,
        sample: int = 0,
        renderer: PromptRenderer | None = None,
        policy: DecisionPolicy | None = None,
        lookup: DecisionLookup | None = None,
        pause: asyncio.Event | None = None,
        tournament: Any = None,
    ) -> None:
        self.run_id = run_id
        self.match_id = match_id
        self.game = game
        self.agents = list(agents)
        self.bus = bus
        self.seed = seed
        self.sample = sample
        self.renderer = renderer or PromptRenderer()
        self.policy = policy or DecisionPolicy()
        self.protocol: PromptProtocol = get_protocol(self.policy.prompt_protocol)
        """The study's prompt protocol: every paper-specific question is asked of it."""
        self.lookup = lookup
        self.pause = pause
        self.tournament = tournament
        """A :class:`coop_tui.designs.Tournament` when designs are shared across the
        tournament's matches; None: every match asks its own."""
        self.stopped = False
        self.histories: list[list[Move]] = [[] for _ in agents]
        self.talk_log: list[TalkMessage] = []
        """Every message said in the match's talk phases (each seat reads what is
        :meth:`TalkMessage.visible_to` it in its next prompt of the same round)."""
        self._records: list[list[bool]] | None = (
            [[] for _ in agents] if game.has_cooperation and len(agents) == game.n_players else None
        )
        """Per seat, whether all co-players cooperated each round (None once a round was
        played on other positions or games): handed to strategies with the history."""
        self._instructions: dict[tuple[str, str, tuple[str, ...]], str] = {}
        """Rendered answer instructions per (kind, style, labels): the same every round."""
        self.decisions: deque[Decision] = deque(maxlen=RECENT_DECISIONS)
        """The match's latest decisions (the store holds them all): one match can be a
        tournament of hundreds of thousands of decisions."""
        self._counts = game.action_counts
        self._reads = [getattr(a, "reads_prompt", True) for a in self.agents]
        self._direct = [not r and hasattr(a, "answer") for r, a in zip(self._reads, self.agents, strict=True)]
        self._samples: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._direct_answers: list[dict[int, tuple[Any, ...]]] = [{} for _ in self.agents]
        """Per seat, id of a strategy's parsed answer -> (parsed, label mapping, the row
        fields it fixes) for pure answers already sampled in a direct round."""
        self._held: list[DirectDecisions | RoundDone] | None = None
        """A strategy-only match's per-round events held back for one :class:`DirectRounds`
        (when every listener reads it: see :meth:`send_held`); None when not holding."""
        self._every_seat = tuple(range(len(self.agents)))
        self.announce_strategies = True
        """Emit DecisionStarted / TextDelta for strategy answers too (live panes show them);
        a headless sweep turns it off: nobody watches, and they cost more than the answer."""

    @property
    def n_seats(self) -> int:
        return len(self.agents)

    # ------------------------------------------------------------ prompts
    def rng(self, *parts: Any) -> np.random.Generator:
        return np.random.default_rng(derived_seed(self.seed, *parts))

    def labelling(
        self, seat: int, round_: int, phase: str = "play", *, n_actions: int | None = None,
        seed: int | None = None,
    ) -> Labelling:
        """Labels for one decision; ``n_actions`` when the game asked about is not the base
        game (a mechanism-modified game with an extra action, or a population seat);
        ``seed`` instead of the match's for a decision shared by several matches."""
        n = self._counts[seat] if n_actions is None else n_actions
        if not self.policy.randomize_labels:
            return _neutral(n)
        if seed is not None:
            return Labelling.neutral(
                n, np.random.default_rng(derived_seed(seed, "labels", round_, seat, phase))
            )
        if self.policy.randomize_labels == "trial":
            letters = trial_letters(n, self.rng("trial-letters", n))
            if self.game.fixed_option_order and n == self._counts[seat % len(self._counts)]:
                return Labelling(letters, tuple(range(n)))  # the game's own moves, in order
            return trial_labelling(letters, self.rng("label-order", round_, seat, phase))
        return Labelling.neutral(n, self.rng("labels", round_, seat, phase))

    def play_request(
        self,
        seat: int,
        round_: int,
        *,
        twist: str | Callable[[Labelling], str] = "",
        phase: str = "play",
        total_rounds: int | None = None,
        history: Sequence[Move] | None = None,
        extra: dict[str, Any] | None = None,
        game: Game | None = None,
        position: int | None = None,
        describe: Game | None = None,
        goal: str | None = None,
        ask_leave: bool = False,
        numbered: bool = True,
    ) -> DecisionRequest:
        """The standard game prompt for one seat, with a mechanism's twist inserted.

        ``numbered = False`` leaves out the wrapper's "you are Player k" line, for a
        mechanism whose twist names the seat in its own numbering (the super-additive
        cooperation paper's tournament: "Agent #4 in Group 2"), so a prompt never gives
        the reader two different numbers.

        ``ask_leave``: the answer also carries ``"leave": true|false`` (the super-additive cooperation paper's move
        and keep-playing choice in one answer; option ``ask_leave``, result
        :attr:`Decision.leave`).

        ``goal`` replaces the wrapper's personal goal ("collect as many points as you
        can"); an empty string states none, for a mechanism whose twist gives the goal
        (the super-additive cooperation paper's group competition, whose players pursue only the group's score).
        Without one, the protocol's default (:meth:`PromptProtocol.goal`) applies.

        ``describe`` is the game whose actions and payoffs the prompt spells out when it
        is not the game played: Mediation plays the game with "delegate" added but, as
        CoopEval does, shows the base game and leaves the extra action to the twist.

        ``seat`` is the match seat (which agent answers); ``position`` is the player
        position in ``game`` it plays this time (default: the same number). They differ
        when a mechanism re-matches a population of seats into smaller games
        (Reputation); the view's ``seat`` is the position, so strategies read the game
        from the right side.
        """
        record = None
        if game is None and position is None and history is None and self._records is not None:
            record = tuple(self._records[seat])
        game = game or self.game
        pos = seat if position is None else position
        counts = self._counts if game is self.game else game.action_counts
        own = self.labelling(seat, round_, phase, n_actions=counts[pos])
        labels = own.labels
        view = SeatView(
            game=game,
            seat=pos,
            round=round_,
            history=tuple(history if history is not None else self.histories[seat]),
            total_rounds=total_rounds,
            extra=dict(extra or {}),
            cooperation_record=record,
        )
        kind = self.policy.answer
        leave_option = {ASK_LEAVE: True} if ask_leave else {}
        if not self.reads_prompt(seat):
            options = (
                {"draw": float(self.rng("draw", round_, seat, phase).random())}
                if kind == "choice" else {}
            )
            options.update(leave_option)
            return DecisionRequest(
                seat=seat, round=round_, phase=phase, kind=kind,  # type: ignore[arg-type]
                messages=(), view=view, labels=labels, label_to_action=own.label_to_action,
                options=options,
            )
        style = self._style(seat)
        key = (kind, style, labels, ask_leave, self._system_style(style, seat))
        instructions = self._instructions.get(key)
        if instructions is None:
            instructions = self.answer_instructions(
                kind, self._style(seat), seat, labels=labels,
                example=example_for(kind, labels, leave_option), leave=ask_leave,
            )
            self._instructions[key] = instructions
        if describe is not None:
            if callable(twist):  # the twist names the actions the description leaves out
                twist = twist(own)
            base = own.restricted(describe.action_counts[pos])
            text = self._game_text(describe, pos, base, twist, instructions, goal, numbered,
                                   talk=self.talk_text(seat, round_))
        else:
            text = self._game_text(game, pos, own, twist, instructions, goal, numbered,
                                   talk=self.talk_text(seat, round_))

        options: dict[str, Any] = {}
        if kind == "choice":
            # Agents that must pick one action from a distribution (strategies) draw with
            # this number, so their pick follows the match seed like a sampled mixed answer.
            options["draw"] = float(self.rng("draw", round_, seat, phase).random())
        options.update(leave_option)
        options.update(self.answer_form(kind))
        return DecisionRequest(
            seat=seat,
            round=round_,
            phase=phase,
            kind=kind,  # type: ignore[arg-type]
            messages=self.prompt_messages(text, seat),
            view=view,
            labels=labels,
            label_to_action=own.label_to_action,
            schema=answer_schema(kind, labels, leave_option),
            options=options,
        )

    def phase_request(
        self,
        seat: int,
        round_: int,
        phase: str,
        kind: AnswerKind,
        *,
        twist: str | Callable[[Labelling], str],
        labels: Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
        game: Game | None = None,
        position: int | None = None,
        extra: dict[str, Any] | None = None,
        shared: bool = False,
    ) -> DecisionRequest:
        """A non-play decision (propose, vote, sign, ...) framed by the game prompt.

        ``shared``: the request is asked once for the whole tournament (a design), so
        its labels come from the tournament's seed and every match builds the same one.

        The agent sees the same game description as when playing, the mechanism's
        twist (which explains the task) and the answer instructions of
        ``answer/<kind>_<style>.j2``. Without ``labels`` the answer is keyed by the
        seat's action labels (mediator, contract) and the label mapping is kept;
        with ``labels`` (proposal ids for approvals) those are the answer's keys.
        """
        game = game or self.game
        pos = seat if position is None else position
        seed = self.tournament.seed if shared and self.tournament is not None else None
        own = self.labelling(seat, round_, phase, n_actions=game.action_counts[pos], seed=seed)
        keyed_by_actions = labels is None
        answer_labels = own.labels if keyed_by_actions else tuple(labels or ())
        opts = dict(options or {})
        messages: tuple[Message, ...] = ()
        if self.reads_prompt(seat):
            instructions = self.answer_instructions(
                kind, self._style(seat), seat,
                labels=answer_labels,
                action_labels=own.labels,
                options=opts,
                example=example_for(kind, answer_labels, opts),
            )
            text = self._game_text(game, pos, own, twist, instructions)
            messages = self.prompt_messages(text, seat)

        return DecisionRequest(
            seat=seat,
            round=round_,
            phase=phase,
            kind=kind,
            messages=messages,
            view=SeatView(
                game=game, seat=pos, round=round_, history=tuple(self.histories[seat]),
                extra=dict(extra or {}),
            ),
            labels=answer_labels,
            label_to_action=own.label_to_action if keyed_by_actions else (),
            schema=answer_schema(kind, answer_labels, opts),
            options=opts,
        )

    def reads_prompt(self, seat: int) -> bool:
        """False for agents that answer from the SeatView alone (fixed strategies)."""
        return self._reads[seat]

    def _style(self, seat: int) -> str:
        return getattr(self.agents[seat], "style", "cot") or "cot"

    @property
    def rules_end(self) -> str:
        """What a prompt template renders after the rules (the protocol's mark where the
        system message ends, or nothing)."""
        return self.protocol.rules_end()

    def answer_instructions(self, kind: str, style: str, seat: int | None = None,
                            **values: Any) -> str:
        """The answer instructions of ``kind`` for an agent of ``style``: the protocol's
        own template where it has one for the kind (it words each style itself); when the
        style's instruction is a system message, ``answer/<kind>_plain.j2`` (the format
        alone); else ``answer/<kind>_<style>.j2`` (a JSON object)."""
        own = self.protocol.answer_template(kind, self.renderer)
        if own is not None:
            return self.renderer.render(own, style=style, **values)
        if self._system_style(style, seat) and self.renderer.has(f"answer/{kind}_plain.j2"):
            return self.renderer.render(f"answer/{kind}_plain.j2", **values)
        return self.renderer.render(f"answer/{kind}_{style}.j2", **values)

    def _system_style(self, style: str, seat: int | None) -> bool:
        """Whether an agent of ``style`` in ``seat`` gets its reasoning instruction apart
        from the answer instructions (CoopEval's layouts: a system message, or the end of
        the user message), so the answer is asked for in the format alone."""
        return self._reasoning_place(style, seat) is not None

    def _reasoning_place(self, style: str, seat: int | None) -> str | None:
        """Where the reasoning instruction (``system/<style>.j2``) of an agent of ``style``
        in ``seat`` goes: "system" (a system message of its own, CoopEval's current code),
        "end" (appended to the user message, the published CoopEval study) or None (among
        the answer instructions). Apart only when the protocol allows it under the study's
        style_message, the style has the template and a model is in the seat (a person
        reads one prompt, as before)."""
        if seat is not None and getattr(self.agents[seat], "kind", "") == "human":
            return None
        if not self.renderer.has(f"system/{style}.j2"):
            return None
        if self.protocol.reasoning_as_system(self.policy.style_message):
            return "system"
        if self.protocol.reasoning_at_end(self.policy.style_message):
            return "end"
        return None

    def _end_reasoning(self, seat: int) -> str | None:
        """The reasoning instruction appended to the end of ``seat``'s user messages (the
        published CoopEval study's layout), or None when it goes elsewhere."""
        style = self._style(seat)
        if self._reasoning_place(style, seat) != "end":
            return None
        return self.renderer.render(f"system/{style}.j2")

    def answer_form(self, kind: str) -> dict[str, str]:
        """The protocol's answer-form options for ``kind`` (``{"form": "tag"}`` for
        ``<answer>`` tags, so a constrained agent's grammar writes the tag)."""
        return self.protocol.answer_form(kind, self.renderer)

    def prompt_messages(self, text: str, seat: int | None = None) -> tuple[Message, ...]:
        """The messages a prompt is sent as (:meth:`PromptProtocol.messages`), with the
        system message of ``seat``'s style when it gets one."""
        style = self._style(seat) if seat is not None else ""
        place = self._reasoning_place(style, seat) if style else None
        if place is None:
            return self.protocol.messages(text, None)
        reasoning = self.renderer.render(f"system/{style}.j2")
        if place == "end":
            return self.protocol.messages(_at_end(text, reasoning), None)
        return self.protocol.messages(text, reasoning)

    def _game_text(
        self,
        game: Game,
        pos: int,
        own: Labelling,
        twist: str | Callable[[Labelling], str],
        instructions: str,
        goal: str | None = None,
        numbered: bool = True,
        *,
        talk: str = "",
    ) -> str:
        rules = own
        if self.policy.randomize_labels == "trial":
            # the option list is shuffled per round; the payoff rules keep action order
            rules = Labelling(tuple(own.label_of(a) for a in range(len(own.labels))),
                              tuple(range(len(own.labels))))
        labellings = [
            rules if game.action_counts[j] == game.action_counts[pos] else Labelling.neutral(c)
            for j, c in enumerate(game.action_counts)
        ]
        if callable(twist):
            twist = twist(own)
        if goal is None:
            goal = self.protocol.goal()
        return self.renderer.render(
            "game.j2",
            n_players=game.n_players,
            labels=own.labels,
            actions=action_lines(game, pos, own),
            payoff_description=_payoffs_text(game, pos, tuple(labellings),
                                             self.protocol.payoff_rule(game)),
            called=self.protocol.game_name("", game.called_by_code),
            seat_number=pos + 1 if numbered else None,
            twist=twist,
            instructions=instructions,
            answer_kind=self.policy.answer,
            condition_text=self.policy.condition_text,
            rules_end=self.rules_end,
            goal=goal,
            talk=talk,
        )

    # ------------------------------------------------------------ talk
    def talk_text(self, seat: int, round_: int) -> str:
        """The transcript block of the messages ``seat`` may read from ``round_``'s talk
        phase, for its next prompt (the protocol's template); "" when there are none."""
        if not self.talk_log:
            return ""
        shown = visible(self.talk_log, seat, round_)
        if not shown:
            return ""
        return self.renderer.render(
            self.protocol.talk_templates()[1],
            messages=transcript_rows(shown, seat, self.n_seats),
        )

    def talk_request(
        self, seat: int, round_: int, turn: int, *,
        twist: str | Callable[[Labelling], str] = "",
    ) -> DecisionRequest:
        """One seat's request for a talk message (phase ``talk``, kind ``text``): the game
        prompt with the mechanism's twist, what the seat read so far this round, and the
        protocol's request for a message bounded by ``talk_chars``."""
        p = self.policy
        options: dict[str, Any] = {"talk": p.talk, "chars": p.talk_chars}
        others = [s + 1 for s in range(self.n_seats) if s != seat]
        if p.talk == "private":
            options["to"] = others
        own = self.labelling(seat, round_, TALK_PHASE)
        instructions = self.renderer.render(
            self.protocol.talk_templates()[0], mode=p.talk, turn=turn, turns=p.talk_turns,
            chars=p.talk_chars, others=others, example=example_for("text", (), options),
        )
        text = self._game_text(self.game, seat, own, twist, instructions,
                               talk=self.talk_text(seat, round_))
        if turn > 1:  # one decision per turn: the round's phase is shared by every turn
            options["turn"] = turn
        return DecisionRequest(
            seat=seat, round=round_, phase=TALK_PHASE, kind="text",
            messages=self.prompt_messages(text, seat),
            view=SeatView(game=self.game, seat=seat, round=round_,
                          history=tuple(self.histories[seat])),
            schema=answer_schema("text", (), options), options=options,
        )

    def hear(self, decision: Decision, turn: int) -> TalkMessage | None:
        """Remember a talk decision's message for its recipients' next prompts."""
        message = heard(decision.parsed, round_=decision.round, turn=turn, sender=decision.seat)
        if message is not None:
            self.talk_log.append(message)
        return message

    # ------------------------------------------------------------ asking
    def _keys(
        self, request: DecisionRequest, shared: tuple[str, int] | None = None
    ) -> tuple[str, str]:
        """(cache key, content key). A ``shared`` decision (design key, tournament seed)
        belongs to the tournament, not to the match that happens to ask it first, so a
        resumed run finds it whichever match asks."""
        agent = self.agents[request.seat]
        payload = {
            "agent": {k: v for k, v in agent.spec.items() if k not in NOT_IN_CONTENT_KEY},
            "messages": list(request.messages),
            "kind": request.kind,
            "phase": request.phase,
            "round": request.round,
            "seat": request.seat,
            "sample": self.sample,
            "seed": self.seed,
            "labels": list(request.label_to_action),
        }
        if shared is not None:
            payload.update(sample=0, seed=shared[1], shared=shared[0])
            content = stable_hash(payload)
            return stable_hash([self.run_id, "shared", shared[0], content]), content
        content = stable_hash(payload)
        return stable_hash([self.run_id, self.match_id, content]), content

    async def ask_all(self, requests: Sequence[DecisionRequest]) -> list[Decision]:
        """Ask several seats at once (simultaneous moves).

        When one seat fails, the others still finish (and are stored): their answers are
        paid for, and a resume will reuse them instead of asking again.
        """
        if all(self._answers_directly(r) for r in requests):
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
        t = self.tournament
        if t is None:
            return await self.ask(request), True, None
        key = stable_hash([t.key, self.agents[request.seat].name, request.seat, request.phase])[:24]
        decision, asked_here = await t.book.get(key, lambda: self.ask(request, shared=(key, t.seed)))
        return decision, asked_here, key

    async def ask(
        self, request: DecisionRequest, *, shared: tuple[str, int] | None = None
    ) -> Decision:
        if self.stopped:
            raise MatchStopped()
        if self.pause is not None:
            await self.pause.wait()
        agent = self.agents[request.seat]
        if self._answers_directly(request):
            await let_loop_run()
            if self.stopped:
                raise MatchStopped()
            return self._record(self._strategy_decision(agent, request))
        request = self.worded(request)
        cache_key, content_key = self._keys(request, shared)
        reusable = agent.kind not in ("human",)
        asked_again = False
        if reusable and self.lookup is not None:
            found = self.lookup.find_decision(cache_key)
            if found is not None and not found.valid:
                # No usable answer last time: the model, prompt or server may have been
                # fixed since, so a resume asks again instead of failing the same way.
                found, asked_again = None, True
            if found is None and self.policy.reuse_across_runs:
                earlier = self.lookup.find_content(content_key)
                if earlier is not None:
                    found = _rebind(earlier, self.match_id, cache_key)
                    found.reused = True
                    self._emit_reused(found)
                    return self._record(found)
            if found is not None:
                found.reused = True
                self._emit_reused(found)
                return self._record(found)
        decision = await self._ask_fresh(agent, request, cache_key, content_key)
        decision.asked_again = asked_again
        return self._record(decision)

    def worded(self, request: DecisionRequest) -> DecisionRequest:
        """``request`` with the messages the paper's code builds for it when the study
        reads a source (``wording = "source"``), else as it is. Every request a seat
        reads passes here before its keys are computed, so the content key, the stored
        prompt and what is sent are all the source's; a seat that reads no prompt (a
        strategy) has no messages and none are asked for."""
        source = self.policy.source
        if source is None or not request.messages:
            return request
        try:
            messages = tuple(source.messages(self, request))
        except Exception as exc:  # the user's code: any failure is theirs to see, named
            raise _source_failed(source, request, exc) from exc
        return replace(request, messages=messages)

    def _answers_directly(self, request: DecisionRequest) -> bool:
        """A strategy asked without a prompt: its answer is free, instant and the same on
        every replay, so it is neither looked up, hashed nor re-asked."""
        return self._direct[request.seat] and not request.messages

    def _strategy_decision(self, agent: Any, request: DecisionRequest) -> Decision:
        """The fast path of :meth:`ask` for strategies: the same parse and sampling, no
        prompt, no cache keys (a replay recomputes the identical answer)."""
        if self.announce_strategies:
            self.bus.emit(
                DecisionStarted(self.match_id, request.seat, request.round, request.phase, 1, (), agent.name)
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
        if text and self.announce_strategies:
            self.bus.emit(TextDelta(self.match_id, request.seat, text))
        decision = Decision(
            match_id=self.match_id, round=request.round, phase=request.phase, seat=request.seat,
            kind=request.kind, agent=agent.name, prompt=[], response=text, reasoning="",
            parsed=None, valid=error is None, attempts=1, error=error, cache_key=None,  # type: ignore[arg-type]
            content_key=None, labels=request.labels,  # type: ignore[arg-type]
            label_to_action=request.label_to_action, normalisation=note,
            latency_ms=(time.perf_counter() - started) * 1000.0, input_tokens=0,
            output_tokens=0, cost_usd=0.0, created_at=time.time(),
        )
        if request.kind in PLAY_KINDS and request.phase != ITEM_PHASE:
            self._finish_mixed(decision, request, parsed)
        else:
            decision.parsed = _plain(parsed, request.labels)
        if request.options.get(ASK_LEAVE):
            self._read_leave(decision, request, text)
        return decision

    def _read_leave(self, decision: Decision, request: DecisionRequest, text: str) -> None:
        """A combined move-and-leave answer's ``leave``, kept on the decision (and its
        ``ask_leave`` option, so the stored row says what was asked)."""
        decision.options = {**decision.options, ASK_LEAVE: True}
        if not decision.valid:
            return
        try:
            decision.leave = parse_leave(request.kind, text, request.labels)[0]
        except ParseError as exc:  # a strategy's answer without it: its own defect
            decision.valid, decision.error = False, exc.reason

    def plays_directly(self) -> bool:
        """True when every seat is a strategy that answers plain play requests of this
        match's game without a prompt and nobody watches answers stream: a mechanism may
        then play its rounds with :meth:`direct_round`."""
        return (
            all(self._direct)
            and self.policy.answer == "mixed"  # direct rounds write mixed answers only
            and not self.announce_strategies
            and self._records is not None
            and all(hasattr(a, "mixed_for") for a in self.agents)
        )

    async def direct_round(self, round_: int, *, total_rounds: int | None = None) -> list[int]:
        """Every seat's play decision of one plain simultaneous round, for strategies.

        The decisions, their events and the sampled actions are exactly what asking each
        seat :meth:`play_request` through :meth:`ask_all` gives (without a twist: a
        strategy reads none); only the request objects and coroutine hops are skipped,
        which at 200 rounds of eight strategies were most of the engine's time.
        Returns the actions; the caller scores them and calls :meth:`finish_round`.
        """
        await let_loop_run()
        if self.stopped:
            raise MatchStopped()
        if self.pause is not None:
            await self.pause.wait()
        game, records, actions = self.game, self._records, []
        assert records is not None
        now = time.time()
        if self.bus.direct_batches:
            return self._direct_round_batched(round_, total_rounds, now)
        for seat, agent in enumerate(self.agents):
            own = self.labelling(seat, round_, "play")
            view = SeatView(game, seat, round_, tuple(self.histories[seat]), total_rounds, {},
                            tuple(records[seat]))
            started = time.perf_counter()
            text, parsed = agent.mixed_for(view, own.labels, own.label_to_action)
            decision = Decision(
                match_id=self.match_id, round=round_, phase="play", seat=seat, kind="mixed",
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
                self._sample(decision, game, seat, own.labels, own.label_to_action, parsed)
                if decision.distribution is not None and sum(
                    p > 0 for p in decision.distribution
                ) == 1:  # a pure answer: the same sample every time
                    self._samples[key] = (decision.parsed, decision.distribution, decision.action,
                                          decision.coop_prob, decision.cooperated)
            else:
                decision.parsed = dict(known[0])
                (decision.distribution, decision.action, decision.coop_prob,
                 decision.cooperated) = known[1:]
            self._record(decision)
            actions.append(decision.action)
        return actions

    async def direct_rounds(
        self, total_rounds: int,
        outcome: Callable[[tuple[int, ...]], tuple[Sequence[float], Sequence[bool | None] | None]],
    ) -> list[tuple[float, ...]]:
        """Rounds 1 to ``total_rounds`` of a plain simultaneous repeated game between
        strategies (:meth:`plays_directly`): each round as :meth:`direct_round` and
        :meth:`finish_round` play and record it, in one loop. ``outcome(actions)`` gives a
        profile's payoffs and whether each seat's action was cooperative (the round's
        ``cooperated`` info); it is asked once per distinct profile. Returns each round's
        payoffs, for the mechanism to total as it weighs them.

        A tournament is tens of thousands of such rounds: a coroutine and two calls per
        round were a fifth of the engine's time there."""
        scored: dict[tuple[int, ...], tuple[tuple[float, ...], Sequence[bool | None] | None]] = {}
        per_round: list[tuple[float, ...]] = []
        batched = self.bus.direct_batches
        clock = time.perf_counter
        for t in range(1, total_rounds + 1):
            if not batched:
                actions = await self.direct_round(t, total_rounds=total_rounds)
            else:  # direct_round's own steps, without a coroutine per round
                now = clock()
                if now - _LoopTurn.last >= YIELD_EVERY_S:
                    _LoopTurn.last = now
                    await asyncio.sleep(0)
                if self.stopped:
                    raise MatchStopped()
                if self.pause is not None:
                    await self.pause.wait()
                actions = self._direct_round_batched(t, total_rounds, time.time())
            profile = tuple(actions)
            known = scored.get(profile)
            if known is None:
                payoffs, cooperated = outcome(profile)
                known = scored[profile] = (tuple(map(float, payoffs)), cooperated)
            payoffs, cooperated = known
            info = {} if cooperated is None else {"cooperated": list(cooperated)}
            self.finish_round(t, profile, payoffs, info=info)
            per_round.append(payoffs)
        return per_round

    def _direct_round_batched(self, round_: int, total_rounds: int | None, now: float) -> list[int]:
        """:meth:`direct_round` when every listener reads :class:`DirectDecisions`: the
        same decisions, field for field, as one row per seat in one event, without a
        :class:`Decision` object and an event per seat (most of a strategy round's cost)."""
        game, records = self.game, self._records
        assert records is not None
        rows: list[tuple[Any, ...]] = []
        actions: list[int] = []
        clock = time.perf_counter
        histories, counts = self.histories, self._counts
        neutral = not self.policy.randomize_labels  # then labelling() is _neutral(n)
        for seat, agent in enumerate(self.agents):
            own = _neutral(counts[seat]) if neutral else self.labelling(seat, round_, "play")
            labels, mapping = own.labels, own.label_to_action
            view = _seat_view(game, seat, round_, tuple(histories[seat]), total_rounds,
                              tuple(records[seat]))
            started = clock()
            text, parsed = agent.mixed_for(view, labels, mapping)
            latency_ms = (clock() - started) * 1000.0
            # keyed by the parsed object's identity (hashing it costs more than the rest);
            # the entry keeps it and the labels alive, so no identity can pass to another
            samples = self._direct_answers[seat]
            known = samples.get(id(parsed))
            answer = known[2] if known is not None and known[0] is parsed and known[1] == mapping else None
            if answer is None:
                decision = Decision(
                    match_id=self.match_id, round=round_, phase="play", seat=seat, kind="mixed",
                    agent=agent.name, prompt=[], response=text, reasoning="", parsed=None,
                    valid=True, attempts=1, error=None, cache_key=None,  # type: ignore[arg-type]
                    content_key=None, labels=labels,  # type: ignore[arg-type]
                    label_to_action=mapping, latency_ms=latency_ms, input_tokens=0,
                    output_tokens=0, cost_usd=0.0, created_at=now,
                )
                self._sample(decision, game, seat, labels, mapping, parsed)
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
        event.__dict__.update(match_id=self.match_id, round=round_, created_at=now, rows=tuple(rows))
        held = self._held
        if held is None and self.bus.direct_rounds:
            held = self._held = []
        if held is None:
            self.bus.emit(event)
        else:
            held.append(event)
        return actions

    def _round_done(self, event: RoundDone) -> None:
        """Emit a round, or hold it back with the direct decisions before it."""
        held = self._held
        if held is None:
            self.bus.emit(event)
            return
        held.append(event)
        if len(held) >= 2 * DIRECT_ROUNDS_CHUNK:
            self.send_held()

    def send_held(self) -> None:
        """Send the events held back for a strategy-only match as one :class:`DirectRounds`
        (the match runner calls this when the mechanism returns or raises, before the
        match's end is announced, so the store writes its rows in the same order)."""
        held, self._held = self._held, None
        if held:
            self.bus.emit(DirectRounds(self.match_id, tuple(held)))

    def _emit_reused(self, decision: Decision) -> None:
        # Replay the stored text so live panes show reused answers too.
        self.bus.emit(
            DecisionStarted(
                self.match_id, decision.seat, decision.round, decision.phase, decision.attempts,
                tuple(decision.prompt), self.agents[decision.seat].name,
            )
        )
        if decision.reasoning:
            self.bus.emit(ReasoningDelta(self.match_id, decision.seat, decision.reasoning))
        if decision.response:
            self.bus.emit(TextDelta(self.match_id, decision.seat, decision.response))

    def _record(self, decision: Decision) -> Decision:
        # Reused decisions are announced too: the store ignores a cache key it holds,
        # and live panes still want to see the answer land.
        if self._held:  # keep the order of events if a mechanism mixes paths
            self.send_held()
        self.decisions.append(decision)
        self.bus.emit(DecisionDone(decision))
        return decision

    async def _ask_fresh(
        self, agent: Agent, request: DecisionRequest, cache_key: str, content_key: str
    ) -> Decision:
        messages: list[Message] = [dict(m) for m in request.messages]
        failed: list[Attempt] = []
        sink = _Sink(self.bus, self.match_id, request.seat)
        started = time.perf_counter()
        totals = {"in": 0, "out": 0, "cost": 0.0, "retries": 0}
        # Token counts are known only if every attempt reported them: a partial sum would
        # look exact. Latency is the provider's time, queueing for a slot kept apart.
        all_tokens = {"in": True, "out": True}
        provider_ms = 0.0
        queue_ms: float | None = None
        cost_known = True
        last_reply: AgentReply | None = None
        parsed: Any = None
        note: str | None = None
        error: str | None = None
        read_text: str | None = None
        for attempt in range(1, self.policy.max_attempts + 1):
            if self.stopped:
                raise MatchStopped()
            oversize = self._oversize(messages)
            if oversize is not None:
                error = oversize
                break
            self.bus.emit(
                DecisionStarted(
                    self.match_id, request.seat, request.round, request.phase, attempt,
                    tuple(messages), agent.name,
                )
            )
            asked = request if request.seed is not None else replace(
                request, seed=derived_seed("sampling", content_key, attempt)
            )
            asking = ASKING.set((content_key, attempt))
            try:
                reply = await agent.reply(asked, [dict(m) for m in messages], sink)
            except Exception as exc:
                # the decision gives up: its earlier attempts' transport retries count too
                if isinstance(getattr(exc, "retries", None), int):
                    exc.retries += totals["retries"]  # type: ignore[attr-defined]
                raise
            finally:
                ASKING.reset(asking)
                sink.flush()
            last_reply = reply
            provider_ms += reply.latency_ms
            if reply.queue_ms is not None:
                queue_ms = (queue_ms or 0.0) + reply.queue_ms
            if reply.input_tokens is not None:
                totals["in"] += reply.input_tokens
            else:
                all_tokens["in"] = False
            if reply.output_tokens is not None:
                totals["out"] += reply.output_tokens
            else:
                all_tokens["out"] = False
            if reply.cost_usd is None:
                cost_known = False
            else:
                totals["cost"] += reply.cost_usd
            totals["retries"] += reply.transport_retries
            try:
                parsed, note, read_text = self._parse_reply(request, reply.parse_text)
                error = None
                break
            except ParseError as exc:
                error = exc.reason
                failed.append(
                    Attempt(
                        messages=[dict(m) for m in messages],
                        response=scrub(
                            reply.parse_text if reply.answer is None
                            else reply.text + "\n[answer] " + reply.answer
                        ),
                        reasoning=scrub(reply.reasoning),
                        error=exc.reason,
                        latency_ms=reply.latency_ms,
                        input_tokens=reply.input_tokens,
                        output_tokens=reply.output_tokens,
                        cost_usd=reply.cost_usd,
                    )
                )
                self.bus.emit(
                    AnswerRejected(
                        self.match_id, request.seat, request.round, request.phase, attempt, exc.reason
                    )
                )
                messages = self._reask_messages(request, messages, scrub(reply.parse_text),
                                                exc.reason)
        if last_reply is None:  # nothing was sent: the first prompt is over the limit
            last_reply = AgentReply(text="", latency_ms=0.0)
            all_tokens = {"in": False, "out": False}
            cost_known = False
        valid = error is None
        decision = Decision(
            match_id=self.match_id,
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
            cache_key=cache_key,
            content_key=content_key,
            labels=request.labels,
            label_to_action=request.label_to_action,
            normalisation=note,
            answer=scrub(last_reply.answer),
            constrained=last_reply.constrained,
            latency_ms=provider_ms if provider_ms > 0 else (time.perf_counter() - started) * 1000.0,
            input_tokens=totals["in"] if all_tokens["in"] else None,
            output_tokens=totals["out"] if all_tokens["out"] else None,
            cost_usd=totals["cost"] if cost_known else None,
            transport_retries=totals["retries"],
            queue_ms=queue_ms,
            retries=failed,
            created_at=time.time(),
            options=dict(request.options)
            if request.kind in ("number", "allocation") or "meanings" in request.options
            or "talk" in request.options else {},
        )
        if request.kind in PLAY_KINDS and request.phase != ITEM_PHASE:
            self._finish_mixed(decision, request, parsed)
        else:
            decision.parsed = _plain(parsed, request.labels)
        if request.options.get(ASK_LEAVE):
            self._read_leave(decision, request, read_text or last_reply.parse_text)
        if not valid and request.kind not in PLAY_KINDS:
            decision.error = error
        return decision

    def _parse_reply(self, request: DecisionRequest, text: str) -> tuple[Any, str | None, str]:
        """Parse a reply: ``(parsed, note, the text that was read)``, or raise ParseError.

        Under a source that reads its own answers (the paper's parser, asked for in the
        paper's format), that reader goes first, so a model that follows the paper's
        instructions is not re-asked for ours; where it reads nothing (the paper's code
        would play at random) coop-tui's parser reads the reply as sent, and a failure
        there is re-asked as usual. The note says which reader read it."""
        source = self.policy.source
        tried = ""
        if source is not None and getattr(source, "reads_answers", False):
            try:
                read = source.read_answer(self, request, text)
            except Exception as exc:  # the user's code, as in worded()
                raise _source_failed(source, request, exc) from exc
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
                            strict=self.policy.strict)

    def _reask_messages(
        self, request: DecisionRequest, sent: list[Message], answer: str, reason: str,
    ) -> list[Message]:
        """The whole message list of the next attempt after ``answer`` (sent as ``sent``)
        was refused for ``reason``: the source's re-ask when the study reads one, else
        ours (the answer as the assistant's turn, then ``retry.j2`` or the protocol's own,
        with the reasoning instruction once at its end under ``style_message =
        "user_end"``)."""
        source = self.policy.source
        if source is not None:
            try:
                again = source.retry_messages(self, request, tuple(sent), answer, reason)
            except Exception as exc:  # the user's code, as in worded()
                raise _source_failed(source, request, exc) from exc
            return [dict(m) for m in again]
        text = self.renderer.render(
            self.protocol.retry_template(request.options),
            reason=reason,
            example=_retry_example(request),
            kind=request.kind,
            labels=request.labels,
            options=request.options,
        )
        reasoning = self._end_reasoning(request.seat)
        if reasoning is not None:
            text = _at_end(text, reasoning)
        return [*sent, {"role": "assistant", "content": answer}, {"role": "user", "content": text}]

    def _oversize(self, messages: Sequence[Message]) -> str | None:
        """Why these messages must not be sent (over ``max_prompt_tokens``), or None."""
        limit = self.policy.max_prompt_tokens
        if limit is None:
            return None
        chars = sum(len(str(m.get("content") or "")) for m in messages)
        if chars <= limit * 4:  # the cheap common case, before any division
            return None
        tokens = -(-chars // 4)
        return (f"prompt not sent: about {tokens:,} tokens (characters / 4), more than "
                f"max_prompt_tokens = {limit:,}; use a shorter history or fewer players, or "
                "raise max_prompt_tokens")

    def _finish_mixed(self, decision: Decision, request: DecisionRequest, parsed: Any) -> None:
        # the view's seat is the player position in the game (== seat unless re-matched)
        self._sample(decision, request.view.game, request.view.seat, request.labels,
                     request.label_to_action, parsed)

    def _sample(
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
        elif self.policy.on_invalid == "uniform":
            probs = [1.0 / n_actions] * n_actions
            decision.normalisation = "fallback: no valid answer, played uniformly at random"
        else:
            return
        decision.distribution = tuple(probs)
        support = [a for a, p in enumerate(probs) if p > 0]
        if len(support) == 1:  # what the seeded draw below returns, without its cost
            decision.action = support[0]
        else:
            rng = self.rng("sample", decision.round, decision.seat, decision.phase)
            decision.action = int(rng.choice(n_actions, p=np.asarray(probs) / sum(probs)))
        # A fallback is no stated intention: it has no cooperation mass, only the action
        # that was really played.
        decision.coop_prob = game.cooperation_mass(pos, probs) if parsed is not None else None
        decision.cooperated = game.is_cooperative(pos, decision.action)

    # ------------------------------------------------------------ rounds
    def require(self, decision: Decision) -> Decision:
        """Stop the match when a decision has no usable outcome under the policy."""
        if decision.kind in PLAY_KINDS and decision.action is None:
            raise MatchAborted(
                f"seat {decision.seat + 1} ({decision.agent}) gave no valid answer in "
                f"{decision.attempts} attempts: {decision.error}"
            )
        if decision.kind not in PLAY_KINDS and not decision.valid and self.policy.on_invalid == "abort":
            raise MatchAborted(
                f"seat {decision.seat + 1} ({decision.agent}) gave no valid {decision.kind} "
                f"answer: {decision.error}"
            )
        return decision

    def finish_round(
        self,
        round_: int,
        actions: Sequence[int],
        payoffs: Sequence[float],
        *,
        seats: Sequence[int] | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Record a played round and extend each seat's own-perspective history."""
        every = self._every_seat
        if seats is None and len(every) == 2 == len(actions) and self._records is not None:
            self._finish_pair_round(round_, actions, payoffs, info)
            return
        seats = every if seats is None and len(actions) == len(every) else tuple(
            seats if seats is not None else range(len(actions)))
        if self._records is not None:
            if seats != every:
                self._records = None
            else:
                coop = [a in c for a, c in zip(actions, self.game.cooperative, strict=False)]
                defectors = coop.count(False)
                for pos in seats:
                    # all co-players cooperated: all cooperated, or only this seat did not
                    self._records[pos].append(not defectors or (not coop[pos] and defectors == 1))
        acts = tuple(map(int, actions))
        pays = tuple(map(float, payoffs))
        histories = self.histories
        for pos, seat in enumerate(seats):
            histories[seat].append(
                _move(round_, acts[pos], acts[:pos] + acts[pos + 1:], pays[pos], pays[:pos] + pays[pos + 1:])
            )
        self._round_done(RoundDone(self.match_id, round_, acts, pays, seats, dict(info or {})))

    def _finish_pair_round(
        self, round_: int, actions: Sequence[int], payoffs: Sequence[float],
        info: dict[str, Any] | None,
    ) -> None:
        """:meth:`finish_round` of a two-seat match keeping its cooperation records, written
        out (it runs every round of every strategy pairing): the same records, moves and
        event. With one co-player, "all co-players cooperated" is whether the other did."""
        records = self._records
        assert records is not None
        a0, a1 = int(actions[0]), int(actions[1])
        p0, p1 = float(payoffs[0]), float(payoffs[1])
        cooperative = self.game.cooperative
        records[0].append(actions[1] in cooperative[1])
        records[1].append(actions[0] in cooperative[0])
        self.histories[0].append(_move(round_, a0, (a1,), p0, (p1,)))
        self.histories[1].append(_move(round_, a1, (a0,), p1, (p0,)))
        event = _new(RoundDone)  # as _seat_view builds views: one per round of every pairing
        event.__dict__.update(match_id=self.match_id, round=round_, actions=(a0, a1),
                              payoffs=(p0, p1), seats=self._every_seat, info=dict(info or {}))
        self._round_done(event)

    def phase_done(self, round_: int, phase: str, info: dict[str, Any]) -> None:
        if self._held:  # keep the order of events if a mechanism mixes paths
            self.send_held()
        self.bus.emit(PhaseDone(self.match_id, round_, phase, info))


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


def _move(round_: int, own: int, others: tuple[int, ...], payoff: float,
          others_payoffs: tuple[float, ...]) -> Move:
    """``Move(...)`` built as :func:`_seat_view` builds views (one per seat and round)."""
    move = _new(Move)
    move.__dict__.update(round=round_, own=own, others=others, payoff=payoff,
                         others_payoffs=others_payoffs)
    return move


_new = object.__new__


@lru_cache(maxsize=64)
def _neutral(n_actions: int) -> Labelling:
    return Labelling.neutral(n_actions)


@lru_cache(maxsize=512)
def _payoffs_text(game: Game, pos: int, labellings: tuple[Labelling, ...],
                  rule: str | None = None) -> str:
    """The payoff description only changes with the game, the seat, the labels and the
    rule the protocol states (None: the game's own)."""
    return payoff_description(game, pos, labellings, rule)


def _at_end(text: str, reasoning: str) -> str:
    """``text`` with the reasoning instruction after it, a blank line between (how the
    published CoopEval study's prompts end)."""
    return text.rstrip("\n") + "\n\n" + reasoning


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


def _plain(parsed: Any, labels: Sequence[str]) -> Any:
    """A parsed answer as stored when nothing is played: a mixed strategy becomes its
    percentages per label (fractions), everything else stays as parsed."""
    probabilities = getattr(parsed, "probabilities", None)
    if probabilities is not None:
        return dict(zip(labels, (float(p) for p in probabilities), strict=True))
    return parsed


def _rebind(decision: Decision, match_id: str, cache_key: str) -> Decision:
    """A decision from an earlier run, re-owned by this match (no new request is sent)."""
    # The earlier run paid for it: this run records no cost and no transport retries.
    return replace(
        decision, match_id=match_id, cache_key=cache_key, retries=list(decision.retries),
        cost_usd=0.0 if decision.cost_usd is not None else None, transport_retries=0,
    )


PlayFn = Callable[[MatchContext], Any]


def one_shot_payoffs(ctx: MatchContext, decisions: Sequence[Decision], round_: int = 1) -> tuple[float, ...]:
    """Play one simultaneous round from sampled actions and record it."""
    actions = [ctx.require(d).action for d in decisions]
    payoffs = ctx.game.payoff(actions)  # type: ignore[arg-type]
    ctx.finish_round(round_, actions, payoffs)  # type: ignore[arg-type]
    return payoffs


__all__ = [
    "Agent",
    "AnswerKind",
    "DecisionPolicy",
    "MatchAborted",
    "MatchContext",
    "MatchOutcome",
    "MatchStopped",
    "one_shot_payoffs",
    "derived_seed",
    "stable_hash",
]
