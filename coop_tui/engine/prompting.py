"""Builds what a seat is asked: its labels, the game prompt with a mechanism's twist, the
answer instructions of the study's protocol, and talk requests.

Every paper-specific question (the goal, the payoff rule, where the reasoning instruction
goes, the answer form, the templates of talk and re-asks) goes to the match's protocol
(``ctx.protocol``); this module only assembles the answers into requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from coop_tui.decisions import ASK_LEAVE, AnswerKind, DecisionRequest, Message, Move, SeatView
from coop_tui.engine.part import MatchPart
from coop_tui.games.base import Game
from coop_tui.hashing import derived_seed
from coop_tui.prompts import (
    Labelling,
    action_lines,
    payoff_description,
    trial_labelling,
    trial_letters,
)
from coop_tui.schemas import answer_schema, example_for
from coop_tui.talk import TALK_PHASE, transcript_rows, visible

if TYPE_CHECKING:
    from coop_tui.engine import MatchContext

Twist = str | Callable[[Labelling], str]
"""A mechanism's text inserted in the game prompt, or a function of the seat's labels."""


class PromptBuilder(MatchPart):
    """The requests of one match: labels, game prompts, answer instructions, talk."""

    def __init__(self, match: MatchContext) -> None:
        super().__init__(match)
        self.counts = match.game.action_counts
        """Actions per player position of the match's own game."""
        self.reads = [getattr(a, "reads_prompt", True) for a in match.agents]
        """Per seat: whether its agent reads a prompt (fixed strategies do not)."""
        self._instructions: dict[tuple[Any, ...], str] = {}
        """Rendered answer instructions per (kind, style, labels, leave, system style): the
        same every round."""

    # ------------------------------------------------------------ labels
    def labelling(
        self, seat: int, round_: int, phase: str = "play", *, n_actions: int | None = None,
        seed: int | None = None,
    ) -> Labelling:
        """Labels for one decision; ``n_actions`` when the game asked about is not the base
        game (a mechanism-modified game with an extra action, or a population seat);
        ``seed`` instead of the match's for a decision shared by several matches."""
        match = self.match
        n = self.counts[seat] if n_actions is None else n_actions
        if not match.policy.randomize_labels:
            return _neutral(n)
        if seed is not None:
            return Labelling.neutral(
                n, np.random.default_rng(derived_seed(seed, "labels", round_, seat, phase))
            )
        if match.policy.randomize_labels == "trial":
            letters = trial_letters(n, match.rng("trial-letters", n))
            if match.game.fixed_option_order and n == self.counts[seat % len(self.counts)]:
                return Labelling(letters, tuple(range(n)))  # the game's own moves, in order
            return trial_labelling(letters, match.rng("label-order", round_, seat, phase))
        return Labelling.neutral(n, match.rng("labels", round_, seat, phase))

    # ------------------------------------------------------------ play
    def play_request(
        self,
        seat: int,
        round_: int,
        *,
        twist: Twist = "",
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
        match = self.match
        record = None
        records = match.closer.records
        if game is None and position is None and history is None and records is not None:
            record = tuple(records[seat])
        game = game or match.game
        pos = seat if position is None else position
        counts = self.counts if game is match.game else game.action_counts
        own = self.labelling(seat, round_, phase, n_actions=counts[pos])
        view = SeatView(
            game=game,
            seat=pos,
            round=round_,
            history=tuple(history if history is not None else match.histories[seat]),
            total_rounds=total_rounds,
            extra=dict(extra or {}),
            cooperation_record=record,
        )
        kind = match.policy.answer
        leave_option = {ASK_LEAVE: True} if ask_leave else {}
        if not self.reads[seat]:
            return self._unprompted_play(view, own, seat, phase, leave_option)
        text = self._play_text(seat, round_, game, pos, own, twist, describe, goal, numbered,
                               leave_option)
        options = self._draw_options(round_, seat, phase, leave_option)
        options.update(self.answer_form(kind))
        return DecisionRequest(
            seat=seat, round=round_, phase=phase, kind=kind,  # type: ignore[arg-type]
            messages=self.prompt_messages(text, seat), view=view, labels=own.labels,
            label_to_action=own.label_to_action,
            schema=answer_schema(kind, own.labels, leave_option), options=options,
        )

    def _unprompted_play(
        self, view: SeatView, own: Labelling, seat: int, phase: str, leave_option: dict[str, Any],
    ) -> DecisionRequest:
        """A play request for a seat that reads no prompt (a strategy answers from the
        view): no messages, only the draw a choice answer picks its action with."""
        return DecisionRequest(
            seat=seat, round=view.round, phase=phase,
            kind=self.match.policy.answer,  # type: ignore[arg-type]
            messages=(), view=view, labels=own.labels, label_to_action=own.label_to_action,
            options=self._draw_options(view.round, seat, phase, leave_option),
        )

    def _draw_options(
        self, round_: int, seat: int, phase: str, leave_option: dict[str, Any],
    ) -> dict[str, Any]:
        """A play request's options: agents that must pick one action from a distribution
        (strategies) draw with ``draw``, so their pick follows the match seed like a
        sampled mixed answer; and the keep-playing choice when it is asked."""
        match = self.match
        options: dict[str, Any] = {}
        if match.policy.answer == "choice":
            options["draw"] = float(match.rng("draw", round_, seat, phase).random())
        options.update(leave_option)
        return options

    def _play_text(
        self, seat: int, round_: int, game: Game, pos: int, own: Labelling, twist: Twist,
        describe: Game | None, goal: str | None, numbered: bool, leave_option: dict[str, Any],
    ) -> str:
        """The prompt of a play request: its answer instructions inside the game text of
        ``game``, or of ``describe`` when the prompt spells out another game."""
        instructions = self._play_instructions(seat, own.labels, leave_option)
        if describe is not None:
            if callable(twist):  # the twist names the actions the description leaves out
                twist = twist(own)
            base = own.restricted(describe.action_counts[pos])
            return self._game_text(describe, pos, base, twist, instructions, goal, numbered,
                                   talk=self.talk_text(seat, round_))
        return self._game_text(game, pos, own, twist, instructions, goal, numbered,
                               talk=self.talk_text(seat, round_))

    def _play_instructions(
        self, seat: int, labels: tuple[str, ...], leave_option: dict[str, Any],
    ) -> str:
        """The answer instructions of a play request, rendered once per kind, style,
        labels and layout (the same every round)."""
        kind = self.match.policy.answer
        style = self._style(seat)
        ask_leave = bool(leave_option)
        key = (kind, style, labels, ask_leave, self._system_style(style, seat))
        instructions = self._instructions.get(key)
        if instructions is None:
            instructions = self.answer_instructions(
                kind, style, seat, labels=labels,
                example=example_for(kind, labels, leave_option), leave=ask_leave,
            )
            self._instructions[key] = instructions
        return instructions

    # ------------------------------------------------------------ other phases
    def phase_request(
        self,
        seat: int,
        round_: int,
        phase: str,
        kind: AnswerKind,
        *,
        twist: Twist,
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
        match = self.match
        game = game or match.game
        pos = seat if position is None else position
        seed = match.tournament.seed if shared and match.tournament is not None else None
        own = self.labelling(seat, round_, phase, n_actions=game.action_counts[pos], seed=seed)
        keyed_by_actions = labels is None
        answer_labels = own.labels if keyed_by_actions else tuple(labels or ())
        opts = dict(options or {})
        messages: tuple[Message, ...] = ()
        if self.reads[seat]:
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
                game=game, seat=pos, round=round_, history=tuple(match.histories[seat]),
                extra=dict(extra or {}),
            ),
            labels=answer_labels,
            label_to_action=own.label_to_action if keyed_by_actions else (),
            schema=answer_schema(kind, answer_labels, opts),
            options=opts,
        )

    # ------------------------------------------------------------ instructions and layout
    def _style(self, seat: int) -> str:
        return getattr(self.match.agents[seat], "style", "cot") or "cot"

    def answer_instructions(self, kind: str, style: str, seat: int | None = None,
                            **values: Any) -> str:
        """The answer instructions of ``kind`` for an agent of ``style``: the protocol's
        own template where it has one for the kind (it words each style itself); when the
        style's instruction is a system message, ``answer/<kind>_plain.j2`` (the format
        alone); else ``answer/<kind>_<style>.j2`` (a JSON object)."""
        match = self.match
        renderer = match.renderer
        own = match.protocol.answer_template(kind, renderer)
        if own is not None:
            return renderer.render(own, style=style, **values)
        if self._system_style(style, seat) and renderer.has(f"answer/{kind}_plain.j2"):
            return renderer.render(f"answer/{kind}_plain.j2", **values)
        return renderer.render(f"answer/{kind}_{style}.j2", **values)

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
        match = self.match
        if seat is not None and getattr(match.agents[seat], "kind", "") == "human":
            return None
        if not match.renderer.has(f"system/{style}.j2"):
            return None
        if match.protocol.reasoning_as_system(match.policy.style_message):
            return "system"
        if match.protocol.reasoning_at_end(match.policy.style_message):
            return "end"
        return None

    def end_reasoning(self, seat: int) -> str | None:
        """The reasoning instruction appended to the end of ``seat``'s user messages (the
        published CoopEval study's layout), or None when it goes elsewhere."""
        style = self._style(seat)
        if self._reasoning_place(style, seat) != "end":
            return None
        return self.match.renderer.render(f"system/{style}.j2")

    def answer_form(self, kind: str) -> dict[str, str]:
        """The protocol's answer-form options for ``kind`` (``{"form": "tag"}`` for
        ``<answer>`` tags, so a constrained agent's grammar writes the tag)."""
        match = self.match
        return match.protocol.answer_form(kind, match.renderer)

    def prompt_messages(self, text: str, seat: int | None = None) -> tuple[Message, ...]:
        """The messages a prompt is sent as (:meth:`PromptProtocol.messages`), with the
        system message of ``seat``'s style when it gets one."""
        protocol = self.match.protocol
        style = self._style(seat) if seat is not None else ""
        place = self._reasoning_place(style, seat) if style else None
        if place is None:
            return protocol.messages(text, None)
        reasoning = self.match.renderer.render(f"system/{style}.j2")
        if place == "end":
            return protocol.messages(at_end(text, reasoning), None)
        return protocol.messages(text, reasoning)

    def _game_text(
        self,
        game: Game,
        pos: int,
        own: Labelling,
        twist: Twist,
        instructions: str,
        goal: str | None = None,
        numbered: bool = True,
        *,
        talk: str = "",
    ) -> str:
        """``game.j2``: the game's rules as ``pos`` reads them, the twist, the goal and the
        answer instructions."""
        match = self.match
        protocol = match.protocol
        rules = own
        if match.policy.randomize_labels == "trial":
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
            goal = protocol.goal()
        return match.renderer.render(
            "game.j2",
            n_players=game.n_players,
            labels=own.labels,
            actions=action_lines(game, pos, own),
            payoff_description=_payoffs_text(game, pos, tuple(labellings),
                                             protocol.payoff_rule(game)),
            called=protocol.game_name("", game.called_by_code),
            seat_number=pos + 1 if numbered else None,
            twist=twist,
            instructions=instructions,
            answer_kind=match.policy.answer,
            condition_text=match.policy.condition_text,
            rules_end=protocol.rules_end(),
            goal=goal,
            talk=talk,
        )

    # ------------------------------------------------------------ talk
    def talk_text(self, seat: int, round_: int) -> str:
        """The transcript block of the messages ``seat`` may read from ``round_``'s talk
        phase, for its next prompt (the protocol's template); "" when there are none."""
        match = self.match
        if not match.talk_log:
            return ""
        shown = visible(match.talk_log, seat, round_)
        if not shown:
            return ""
        return match.renderer.render(
            match.protocol.talk_templates()[1],
            messages=transcript_rows(shown, seat, match.n_seats),
        )

    def talk_request(self, seat: int, round_: int, turn: int, *, twist: Twist = "") -> DecisionRequest:
        """One seat's request for a talk message (phase ``talk``, kind ``text``): the game
        prompt with the mechanism's twist, what the seat read so far this round, and the
        protocol's request for a message bounded by ``talk_chars``."""
        match = self.match
        p = match.policy
        options: dict[str, Any] = {"talk": p.talk, "chars": p.talk_chars}
        others = [s + 1 for s in range(match.n_seats) if s != seat]
        if p.talk == "private":
            options["to"] = others
        own = self.labelling(seat, round_, TALK_PHASE)
        instructions = match.renderer.render(
            match.protocol.talk_templates()[0], mode=p.talk, turn=turn, turns=p.talk_turns,
            chars=p.talk_chars, others=others, example=example_for("text", (), options),
        )
        text = self._game_text(match.game, seat, own, twist, instructions,
                               talk=self.talk_text(seat, round_))
        if turn > 1:  # one decision per turn: the round's phase is shared by every turn
            options["turn"] = turn
        return DecisionRequest(
            seat=seat, round=round_, phase=TALK_PHASE, kind="text",
            messages=self.prompt_messages(text, seat),
            view=SeatView(game=match.game, seat=seat, round=round_,
                          history=tuple(match.histories[seat])),
            schema=answer_schema("text", (), options), options=options,
        )


@lru_cache(maxsize=64)
def _neutral(n_actions: int) -> Labelling:
    return Labelling.neutral(n_actions)


@lru_cache(maxsize=512)
def _payoffs_text(game: Game, pos: int, labellings: tuple[Labelling, ...],
                  rule: str | None = None) -> str:
    """The payoff description only changes with the game, the seat, the labels and the
    rule the protocol states (None: the game's own)."""
    return payoff_description(game, pos, labellings, rule)


def at_end(text: str, reasoning: str) -> str:
    """``text`` with the reasoning instruction after it, a blank line between (how the
    published CoopEval study's prompts end)."""
    return text.rstrip("\n") + "\n\n" + reasoning
