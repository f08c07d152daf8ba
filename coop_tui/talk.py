"""Talk phases: who said what before a round's move, and who may read it.

Kept apart from the engine so the rule of visibility (public: everyone; private: the
sender and the one recipient they named) has one home that the engine (which shows a
seat what it may read), the talk step of the mechanisms and the report share. A message
is a decision of phase ``talk`` (answer kind ``text`` with ``options["talk"]``); this
module holds only what the match remembers of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

TalkMode = Literal["none", "public", "private"]
TALK_MODES: tuple[str, ...] = ("none", "public", "private")
TALK_PHASE = "talk"
DEFAULT_TALK_CHARS = 280
"""A message's default bound in characters: a short paragraph, enough to propose and
promise, short enough that a small model's message cannot crowd out the game."""


@dataclass(frozen=True)
class TalkMessage:
    """One message said in a talk phase."""

    round: int
    turn: int
    sender: int
    """Seat (0-based) that wrote it."""
    to: int | None
    """Seat (0-based) it was addressed to; None: public, every seat reads it."""
    text: str

    def visible_to(self, seat: int) -> bool:
        return self.to is None or seat in (self.sender, self.to)


def heard(parsed: Any, *, round_: int, turn: int, sender: int) -> TalkMessage | None:
    """The message of a parsed talk answer (``{"message", "to"}``, ``to`` a 1-based
    player number), or None when the answer carried none (an invalid decision)."""
    if not isinstance(parsed, dict) or not parsed.get("message"):
        return None
    to = parsed.get("to")
    return TalkMessage(round_, turn, sender, None if to is None else int(to) - 1,
                       str(parsed["message"]))


def visible(log: Iterable[TalkMessage], seat: int, round_: int) -> list[TalkMessage]:
    """The messages of ``round_`` that ``seat`` may read, in the order they were said."""
    return [m for m in log if m.round == round_ and m.visible_to(seat)]


def transcript_rows(messages: Sequence[TalkMessage], seat: int, n_seats: int) -> list[dict[str, Any]]:
    """The rows a transcript template renders: who spoke (``you`` for the reader's own),
    to whom when private, and the text."""
    def who(s: int) -> str:
        if s == seat:
            return "You"
        return "The other player" if n_seats == 2 else f"Player {s + 1}"

    rows = []
    for m in messages:
        to = None
        if m.to is not None:
            to = "you" if m.to == seat else ("the other player" if n_seats == 2 else f"Player {m.to + 1}")
        rows.append({"who": who(m.sender), "to": to, "text": m.text, "turn": m.turn,
                     "own": m.sender == seat})
    return rows
