"""What a match is handed and what it may raise: the decision policy, the parts that fill
seats and find earlier answers, a paper's message source, and the match's exceptions.

Every collaborator of :class:`coop_tui.engine.MatchContext` reads these, so they sit
below all of them; ``coop_tui.engine`` re-exports the names other modules import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from coop_tui.decisions import AgentReply, Decision, DecisionRequest, Message
from coop_tui.errors import SpecError
from coop_tui.protocols import DEFAULT_KEY
from coop_tui.talk import DEFAULT_TALK_CHARS

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


def source_failed(source: MessageSource, request: DecisionRequest, exc: Exception) -> SourceFailed:
    """The error for ``source`` failing on ``request``, naming the request and the fix."""
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
