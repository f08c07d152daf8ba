"""The decision: the atom of everything coop-tui asks, stores and analyses.

A mechanism builds a :class:`DecisionRequest`; any agent (LLM, embedded model,
strategy, human, replay) answers it with an :class:`AgentReply`; the engine parses
the reply, re-asks on invalid answers, samples an action and produces a
:class:`Decision` record that every listener (store, TUI, progress) receives.
Keeping one request type is what lets a human, a strategy and an LLM sit in any seat.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from coop_tui.games.base import Game

AnswerKind = Literal[
    "mixed", "choice", "approvals", "sign", "score", "text", "mediator", "contract", "number",
    "allocation", "judgement",
]
"""mixed: percentages per action label; choice: exactly one action ``{"choice": "A1"}``;
approvals: {"M1": true, ...}; sign: {"sign": bool}; number/allocation: one value in a range,
a value per key (the strategic personalities paper's offers, bids, splits);
score: ``SIMILARITY SCORE: n``; text: free text (plans, critiques); mediator/contract: proposals."""

Message = dict[str, str]

ASKING: ContextVar[tuple[str, int] | None] = ContextVar("asking", default=None)
"""(content key, attempt) of the decision the current task is asking, set by the engine
around each ``reply``: a batch request's id is derived from it, so a resumed run asks
with the same id (see :mod:`coop_tui.agents.batch`)."""

ASK_LEAVE = "ask_leave"
"""A play request's option: the answer also carries ``"leave": true|false`` (the super-additive cooperation paper's
keep-playing choice made with the move, one answer per player and round). The parser
requires the key beside the move, the schema adds it, and the result is
:attr:`Decision.leave`."""


@dataclass(frozen=True)
class Move:
    """One past round from one seat's point of view."""

    round: int
    own: int
    """The action index this seat played (game action space, not labels)."""
    others: tuple[int, ...]
    """Co-players' actions, in seat order with this seat left out."""
    payoff: float
    others_payoffs: tuple[float, ...] = ()


@dataclass(frozen=True)
class SeatView:
    """What a non-LLM agent may know when deciding: the game, its seat, its history."""

    game: Game
    seat: int
    round: int
    """1-based round number of the decision being asked."""
    history: tuple[Move, ...] = ()
    total_rounds: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Mechanism-specific facts (similarity level, proposals on the table, ...)."""
    cooperation_record: tuple[bool, ...] | None = None
    """Per past round (oldest first), whether every co-player cooperated, when the engine
    kept it alongside ``history`` (None: derive it from ``history``). Strategies read it
    instead of re-scanning the history every move."""

    @property
    def own_actions(self) -> list[int]:
        return [m.own for m in self.history]

    @property
    def opponent_actions(self) -> list[int]:
        """The (first) co-player's past actions; for 2-player games, *the* opponent."""
        return [m.others[0] for m in self.history if m.others]


@dataclass(frozen=True)
class DecisionRequest:
    """Everything needed to ask one agent for one answer."""

    seat: int
    round: int
    phase: str
    """play / propose / vote / sign / score / plan / critique ..."""
    kind: AnswerKind
    messages: tuple[Message, ...]
    """The exact chat messages of the first attempt."""
    view: SeatView
    labels: tuple[str, ...] = ()
    """Mixed: the action labels shown, in the order shown. Approvals: proposal ids."""
    label_to_action: tuple[int, ...] = ()
    """Mixed: ``label_to_action[i]`` is the game action behind ``labels[i]``."""
    schema: dict[str, Any] | None = None
    """JSON schema of a valid answer, for grammar-constrained decoding."""
    options: dict[str, Any] = field(default_factory=dict)
    """Kind-specific parsing options (score range, number of delegator counts, ...)."""
    seed: int | None = None
    """Sampling seed for agents that sample in process (the embedded model): set by the
    engine per attempt from the decision's content key, which holds the sweep's seed, so
    the same sweep file and seed give the same answers and another seed asks anew."""


DEFAULT_MAX_ANSWER_CHARS = 1_000_000
"""Characters of one answer (text and reasoning) an LLM agent accepts unless its
``max_answer_chars`` says otherwise: a server that streams without end is cut off before
the answer fills memory or the database."""


@dataclass
class AgentReply:
    """One raw answer from an agent, before parsing."""

    text: str
    """Visible streamed text (for two-step local answers: the free reasoning part)."""
    reasoning: str = ""
    """Provider reasoning text, kept apart from the visible text."""
    answer: str | None = None
    """A separately produced answer (grammar-constrained step); parsed instead of text."""
    constrained: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float = 0.0
    """The provider's time: request sent to stream done, summed over HTTP attempts."""
    transport_retries: int = 0
    """Rate-limit / 5xx / timeout / dropped-stream retries spent on this reply."""
    queue_ms: float | None = None
    """Time spent waiting for a concurrency slot before sending (None: no queue)."""
    model: str | None = None

    @property
    def parse_text(self) -> str:
        return self.answer if self.answer is not None else self.text


class StreamSink(Protocol):
    """Where an agent pushes text while it streams; the engine turns it into events."""

    def text(self, delta: str) -> None: ...

    def reasoning(self, delta: str) -> None: ...


class NullSink:
    def text(self, delta: str) -> None:  # noqa: D102 - protocol method
        pass

    def reasoning(self, delta: str) -> None:  # noqa: D102 - protocol method
        pass


@dataclass
class Attempt:
    """One try at a decision that did not produce a usable answer (kept for the record)."""

    messages: list[Message]
    response: str
    reasoning: str
    error: str
    latency_ms: float
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


@dataclass
class Decision:
    """The stored outcome of one request: prompt, raw answer, parse, sample, cost."""

    match_id: str
    round: int
    phase: str
    seat: int
    kind: AnswerKind
    agent: str
    prompt: list[Message]
    response: str
    reasoning: str
    parsed: Any
    valid: bool
    attempts: int
    error: str | None
    cache_key: str
    content_key: str
    labels: tuple[str, ...] = ()
    label_to_action: tuple[int, ...] = ()
    distribution: tuple[float, ...] | None = None
    """Mixed: probability per *game action* (labels already mapped back)."""
    action: int | None = None
    """Mixed: the sampled game action."""
    normalisation: str | None = None
    answer: str | None = None
    constrained: bool = False
    latency_ms: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    transport_retries: int = 0
    queue_ms: float | None = None
    """Waiting for a concurrency slot, kept apart from ``latency_ms`` (provider time)."""
    retries: list[Attempt] = field(default_factory=list)
    reused: bool = False
    """True when the answer came from the store (resume / cache), not a new request."""
    asked_again: bool = False
    """True when the store held this decision as invalid (no usable answer) and a resume
    asked it again: an unusable answer can change once the model or prompt is fixed. The
    new answer replaces the stored one under the same cache key."""
    coop_prob: float | None = None
    cooperated: bool | None = None
    created_at: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)
    """The request's kind-specific options the answer was checked against (a number's
    range and step, an allocation's keys and total), so a re-ask checks the same ones."""
    leave: bool | None = None
    """A combined move-and-leave answer's choice (requests with the ``ask_leave``
    option); None for every other decision and for a combined answer that could not be
    parsed. Stored inside the ``options`` column (key ``leave``) beside ``ask_leave``."""


@dataclass
class MatchOutcome:
    """What a match produced: one payoff per seat, and what the mechanism wants kept."""

    payoffs: tuple[float, ...]
    info: dict[str, Any] = field(default_factory=dict)
