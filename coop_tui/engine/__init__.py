"""Plays one match: asks agents for decisions, lets the mechanism score, emits events.

The engine owns the parts every mechanism shares: building the standard game prompt,
asking an agent (streaming deltas out as events), parsing the reply, re-asking with
the reason when it is unusable, sampling an action with a per-decision seeded RNG, and
reusing finished decisions from the store so a resumed sweep never pays twice.
Mechanisms only say *what* to ask and how answers become payoffs.

A mechanism sees one :class:`MatchContext`; behind it each job has its own module:

- :mod:`~coop_tui.engine.prompting`: :class:`PromptBuilder`, labels and requests;
- :mod:`~coop_tui.engine.recording`: :class:`DecisionRecorder`, asking, re-asking,
  reuse, sampling and the decision events;
- :mod:`~coop_tui.engine.direct`: :class:`DirectRounds`, the strategy-only path;
- :mod:`~coop_tui.engine.rounds`: :class:`RoundCloser`, histories and round events;
- :mod:`~coop_tui.engine.policy`: the policy, the seat and source protocols, the
  exceptions; :mod:`~coop_tui.engine.loop`: when the event loop gets a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coop_tui.decisions import AnswerKind as AnswerKind
from coop_tui.decisions import Decision, DecisionRequest, Message, Move
from coop_tui.decisions import MatchOutcome as MatchOutcome  # games use it too
from coop_tui.engine.direct import DirectRounds, Outcome
from coop_tui.engine.loop import let_loop_run as let_loop_run
from coop_tui.engine.policy import ITEM_PHASE as ITEM_PHASE
from coop_tui.engine.policy import NOT_IN_CONTENT_KEY as NOT_IN_CONTENT_KEY
from coop_tui.engine.policy import PHASES as PHASES
from coop_tui.engine.policy import PLAY_KINDS as PLAY_KINDS
from coop_tui.engine.policy import RECENT_DECISIONS as RECENT_DECISIONS
from coop_tui.engine.policy import Agent as Agent
from coop_tui.engine.policy import DecisionLookup as DecisionLookup
from coop_tui.engine.policy import DecisionPolicy as DecisionPolicy
from coop_tui.engine.policy import MatchAborted as MatchAborted
from coop_tui.engine.policy import MatchStopped as MatchStopped
from coop_tui.engine.policy import MessageSource as MessageSource
from coop_tui.engine.policy import SourceFailed as SourceFailed
from coop_tui.engine.prompting import PromptBuilder, Twist
from coop_tui.engine.prompting import _neutral as _neutral
from coop_tui.engine.recording import DecisionRecorder, decision_keys
from coop_tui.engine.rounds import RoundCloser
from coop_tui.events import EventBus
from coop_tui.games.base import Game
from coop_tui.hashing import derived_seed as derived_seed  # the same: importable from here
from coop_tui.hashing import stable_hash as stable_hash
from coop_tui.prompts import Labelling, PromptRenderer
from coop_tui.protocols import PromptProtocol
from coop_tui.protocols import get as get_protocol
from coop_tui.schemas import example_for as example_for
from coop_tui.talk import TalkMessage, heard


class MatchContext:
    """What a mechanism sees of the world: the game, the seats and ``ask``.

    A façade, as Inspect's ``Model`` is over its ``ModelAPI``: it holds the fields
    mechanisms, sources and the sweep read and set (``game``, ``agents``, ``policy``,
    ``protocol``, ``histories``, ``stopped``...), and every method is one line handing
    the call to the part that does the job: :attr:`prompts`, :attr:`recorder`,
    :attr:`direct` or :attr:`closer`. The parts read the match's state through it.
    """

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
        self.talk_log: list[TalkMessage] = []
        """Every message said in the match's talk phases (each seat reads what is
        :meth:`TalkMessage.visible_to` it in its next prompt of the same round)."""
        self.announce_strategies = True
        """Emit DecisionStarted / TextDelta for strategy answers too (live panes show them);
        a headless sweep turns it off: nobody watches, and they cost more than the answer."""
        self.prompts = PromptBuilder(self)
        """Labels, game prompts, answer instructions and talk requests."""
        self.closer = RoundCloser(self)
        """Played rounds and finished phases: histories, cooperation records, events."""
        self.recorder = DecisionRecorder(self)
        """Asking, re-asking, reuse of stored answers, sampling, decision events."""
        self.direct = DirectRounds(self)
        """Strategy answers without prompts, and whole rounds of strategies."""
        self.histories: list[list[Move]] = self.closer.histories
        """Per seat, its moves as it saw them (the round closer extends them)."""
        self.decisions = self.recorder.decisions
        """The match's latest decisions (the store holds them all): one match can be a
        tournament of hundreds of thousands of decisions."""

    @property
    def n_seats(self) -> int:
        return len(self.agents)

    def rng(self, *parts: Any) -> np.random.Generator:
        """A generator seeded from the match's seed and ``parts`` (the same on a replay)."""
        return np.random.default_rng(derived_seed(self.seed, *parts))

    @property
    def _records(self) -> list[list[bool]] | None:
        """Per seat, whether all co-players cooperated each round (the round closer's)."""
        return self.closer.records

    # ------------------------------------------------------------ prompts
    def labelling(self, seat: int, round_: int, phase: str = "play", **options: Any) -> Labelling:
        """Labels for one decision (:meth:`PromptBuilder.labelling`)."""
        return self.prompts.labelling(seat, round_, phase, **options)

    def play_request(self, seat: int, round_: int, **options: Any) -> DecisionRequest:
        """The standard game prompt for one seat (:meth:`PromptBuilder.play_request`)."""
        return self.prompts.play_request(seat, round_, **options)

    def phase_request(self, seat: int, round_: int, phase: str, kind: AnswerKind,
                      **options: Any) -> DecisionRequest:
        """A non-play decision framed by the game prompt (:meth:`PromptBuilder.phase_request`)."""
        return self.prompts.phase_request(seat, round_, phase, kind, **options)

    def reads_prompt(self, seat: int) -> bool:
        """False for agents that answer from the SeatView alone (fixed strategies)."""
        return self.prompts.reads[seat]

    @property
    def rules_end(self) -> str:
        """What a prompt template renders after the rules (the protocol's mark where the
        system message ends, or nothing)."""
        return self.protocol.rules_end()

    def answer_instructions(self, kind: str, style: str, seat: int | None = None,
                            **values: Any) -> str:
        """The answer instructions of ``kind`` (:meth:`PromptBuilder.answer_instructions`)."""
        return self.prompts.answer_instructions(kind, style, seat, **values)

    def answer_form(self, kind: str) -> dict[str, str]:
        """The protocol's answer-form options for ``kind``."""
        return self.prompts.answer_form(kind)

    def prompt_messages(self, text: str, seat: int | None = None) -> tuple[Message, ...]:
        """The messages a prompt is sent as (:meth:`PromptBuilder.prompt_messages`)."""
        return self.prompts.prompt_messages(text, seat)

    # ------------------------------------------------------------ talk
    def talk_text(self, seat: int, round_: int) -> str:
        """The talk transcript ``seat`` may read in its next prompt of ``round_``."""
        return self.prompts.talk_text(seat, round_)

    def talk_request(self, seat: int, round_: int, turn: int, *, twist: Twist = "") -> DecisionRequest:
        """One seat's request for a talk message (:meth:`PromptBuilder.talk_request`)."""
        return self.prompts.talk_request(seat, round_, turn, twist=twist)

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
        """(cache key, content key) of a request (:func:`recording.decision_keys`)."""
        return decision_keys(self, request, shared)

    async def ask_all(self, requests: Sequence[DecisionRequest]) -> list[Decision]:
        """Ask several seats at once (:meth:`DecisionRecorder.ask_all`)."""
        return await self.recorder.ask_all(requests)

    async def ask_design(self, request: DecisionRequest) -> tuple[Decision, bool, str | None]:
        """Ask for a design once per tournament (:meth:`DecisionRecorder.ask_design`)."""
        return await self.recorder.ask_design(request)

    async def ask(
        self, request: DecisionRequest, *, shared: tuple[str, int] | None = None
    ) -> Decision:
        """One decision, asked, reused or answered by a strategy, and recorded."""
        return await self.recorder.ask(request, shared=shared)

    def worded(self, request: DecisionRequest) -> DecisionRequest:
        """``request`` in the words of the study's source (:meth:`DecisionRecorder.worded`)."""
        return self.recorder.worded(request)

    def require(self, decision: Decision) -> Decision:
        """Stop the match when a decision has no usable outcome under the policy."""
        return self.recorder.require(decision)

    # ------------------------------------------------------------ strategy rounds
    def plays_directly(self) -> bool:
        """True when a mechanism may play its rounds with :meth:`direct_round`
        (:meth:`DirectRounds.plays_directly`)."""
        return self.direct.plays_directly()

    async def direct_round(self, round_: int, *, total_rounds: int | None = None) -> list[int]:
        """Every seat's play decision of one plain round of strategies; the actions."""
        return await self.direct.direct_round(round_, total_rounds=total_rounds)

    async def direct_rounds(self, total_rounds: int, outcome: Outcome) -> list[tuple[float, ...]]:
        """Rounds 1 to ``total_rounds`` between strategies, played and recorded in one
        loop (:meth:`DirectRounds.direct_rounds`); each round's payoffs."""
        return await self.direct.direct_rounds(total_rounds, outcome)

    def send_held(self) -> None:
        """Send the rounds a strategy-only match held back (the match runner calls this
        when the mechanism returns or raises)."""
        self.direct.send_held()

    # ------------------------------------------------------------ rounds
    def finish_round(
        self, round_: int, actions: Sequence[int], payoffs: Sequence[float], **options: Any,
    ) -> None:
        """Record a played round and extend each seat's own-perspective history
        (:meth:`RoundCloser.finish_round`: ``seats``, ``info``)."""
        self.closer.finish_round(round_, actions, payoffs, **options)

    def phase_done(self, round_: int, phase: str, info: dict[str, Any]) -> None:
        """Announce a finished phase."""
        self.closer.phase_done(round_, phase, info)


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
