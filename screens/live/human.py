"""The input bar of play mode: the turn prompt and the line where a person answers.

Turns arrive as :class:`~coop_tui.session.HumanTurn` events and wait in order. The bar
says what to type (an action, a number, a talk message, a move plus leave or stay),
reads the line, and posts :class:`HumanTurnBar.Answered` with the parsed answer; the
screen hands it to the session. A line that cannot be read is said in the prompt and
the turn stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from coop_tui.decisions import ASK_LEAVE
from coop_tui.engine import example_for
from coop_tui.session import HumanTurn, human_answer
from coop_tui.terminal import widget_text

DEFAULT_PLACEHOLDER = "0 / 1 … for a pure action, or A0=70 A1=30; Enter confirms"


def turn_prompt(turn: HumanTurn) -> Text:
    """What the person is asked and how to type it, for the kind of answer the turn wants."""
    request = turn.request
    opts = request.options
    meanings = list(opts.get("meanings") or [])  # named options (strategic personalities)
    labels = ", ".join(
        f"{i} = {lab}" + (f" ({meanings[i]})" if i < len(meanings) else "")
        for i, lab in enumerate(request.labels)
    )
    prompt = Text()
    prompt.append(f"Your move as Player {turn.seat + 1}", style="bold")
    prompt.append(f" (round {request.round}, {request.phase}). ", style="dim")
    if opts.get("talk"):  # a talk phase: the person writes a message
        if opts["talk"] == "private":
            prompt.append("Type a player's number, a colon and your message for them only "
                          "(e.g. 2: let's both cooperate)")
        else:
            prompt.append("Type a message every other player reads")
        prompt.append(f" (at most {opts.get('chars')} characters), then Enter.")
    elif request.kind == "number":
        prompt.append(f"Type your {opts.get('name', 'number')} ", style="")
        prompt.append(f"({opts.get('min')} to {opts.get('max')})", style="bold")
        prompt.append(", then Enter.")
    elif opts.get(ASK_LEAVE):  # the super-additive cooperation paper: the move and leave or stay
        prompt.append(f"Actions: {labels}. Type your move, then ")
        prompt.append("leave", style="bold")
        prompt.append(" or ")
        prompt.append("stay", style="bold")
        prompt.append(" for after this round (e.g. ")
        prompt.append("0 stay", style="bold")
        prompt.append("), then Enter.")
    elif request.kind == "choice":
        prompt.append(f"Keys: {labels}; or type one action label, then Enter.")
    elif request.kind != "mixed":
        prompt.append("Type your answer as the prompt asks, e.g. ")
        prompt.append(example_for(request.kind, request.labels, dict(opts)), style="bold")
        prompt.append(", then Enter.")
    else:
        prompt.append(f"Keys: {labels}; or type percentages like ", style="")
        prompt.append(" ".join(f"{lab}={100 // max(1, len(request.labels))}"
                               for lab in request.labels), style="bold")
        prompt.append(", then Enter.")
    if request.kind in ("number", "choice", "mixed"):  # a shortcut, not the model's format
        prompt.append(" What you type is sent in the answer format the prompt asks of the "
                      "model.", style="dim")
    return prompt


def turn_placeholder(turn: HumanTurn) -> str:
    """The empty input line's hint for the turn's kind of answer."""
    request = turn.request
    if request.kind == "number":
        return f"a number from {request.options.get('min')} to {request.options.get('max')}"
    if request.kind == "allocation":
        return ", ".join(f"{k}=…" for k in request.options.get("keys") or ())
    if request.options.get(ASK_LEAVE):
        return "0 stay / 1 leave / A0=70 A1=30 stay; Enter confirms"
    if request.options.get("talk") == "private":
        return "2: your message; Enter sends"
    if request.options.get("talk"):
        return "your message; Enter sends"
    return DEFAULT_PLACEHOLDER


class HumanTurnBar(Vertical):
    """The turn prompt above the input line; the turns waiting, first one shown."""

    class Answered(Message):
        """The person typed a readable answer to ``turn``."""

        def __init__(self, turn: HumanTurn, answer: Any) -> None:
            super().__init__()
            self.turn = turn
            self.answer = answer

    def __init__(self, waiting: Callable[[int], bool], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.waiting = waiting
        """Whether the session still waits for a seat's answer."""
        self.turns: list[HumanTurn] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="human-prompt")
        yield Input(placeholder=DEFAULT_PLACEHOLDER, id="human-input", disabled=True)

    def add(self, turn: HumanTurn) -> HumanTurn | None:
        """Queue a turn; returns the turn shown (the first waiting)."""
        self.turns.append(turn)
        return self.show_turn()

    def show_turn(self) -> HumanTurn | None:
        """Ask for the first waiting turn, focused; returns it (None when none waits)."""
        if not self.turns:
            return None
        turn = self.turns[0]
        self.query_one("#human-prompt", Static).update(turn_prompt(turn))
        box = self.query_one("#human-input", Input)
        box.disabled = False
        box.value = ""
        box.placeholder = turn_placeholder(turn)
        box.focus()
        return turn

    def turn_over(self, over: Callable[[], bool]) -> HumanTurn | None:
        """Drop the turns no longer waited for; show the next one, or say why none is
        asked (``over`` tells a finished match from co-players still deciding). Returns
        the turn shown."""
        self.turns = [t for t in self.turns if self.waiting(t.seat)]
        if self.turns:
            return self.show_turn()
        box = self.query_one("#human-input", Input)
        box.value = ""
        box.disabled = True
        message = "the match is over — q leaves" if over() else "waiting for the other players…"
        self.query_one("#human-prompt", Static).update(Text(message, style="dim"))
        return None

    def answered(self, turn: HumanTurn) -> bool:
        """Take ``turn`` off the queue once its answer went to the session; False when it
        was no longer the one asked (its answer came twice)."""
        if not self.turns or self.turns[0] is not turn:
            return False
        self.turns.pop(0)
        return True

    @on(Input.Submitted, "#human-input")
    def _submit(self, event: Input.Submitted) -> None:
        if not self.turns:
            return
        turn = self.turns[0]
        try:
            answer = human_answer(event.value, turn.request.labels, turn.request.kind,
                                  ask_leave=bool(turn.request.options.get(ASK_LEAVE)),
                                  options=dict(turn.request.options))
        except ValueError as exc:
            self.query_one("#human-prompt", Static).update(widget_text(f"✗ {exc}", "bold red"))
            return
        self.post_message(self.Answered(turn, answer))
