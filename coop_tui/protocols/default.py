"""coop-tui's own protocol, the default: one user message with the answer as a JSON object.

It already carries CoopEval's layout as its default: a ``cot`` or ``direct`` agent's
reasoning instruction goes into a system message of its own (``system/<style>.j2``) and
the user message asks for the format alone (``answer/<kind>_plain.j2``), unless the study
sets ``style_message = "user"``. ``style_message = "user_end"`` is the published CoopEval
study's layout: the same user message with the instruction appended at its end (and once
at the end of each re-ask). Numbers are answered on the move's grid, named options
by their labels, and a prompt states the personal goal "collect as many points as you
can" unless the mechanism gives its own.
"""

from __future__ import annotations

from typing import Any

from coop_tui.prompts import PromptRenderer
from coop_tui.protocols.base import PromptProtocol


class CoopTuiProtocol(PromptProtocol):
    name = "coop_tui"
    key = "coop_tui"
    summary = ("one user message, the answer as a JSON object, numbers on the move's grid; "
               'a cot / direct instruction as a system message unless style_message = "user" '
               '(among the answer instructions) or "user_end" (at the end of the user message)')

    def rules_end(self) -> str:
        return ""

    def reasoning_as_system(self, style_message: str) -> bool:
        return style_message == "system"

    def reasoning_at_end(self, style_message: str) -> bool:
        return style_message == "user_end"

    def goal(self) -> str | None:
        return None

    def answer_template(self, kind: str, renderer: PromptRenderer) -> str | None:
        return None

    def option_words(self) -> bool:
        return False

    def talk_allowed(self) -> bool:
        return True

    def number_options(self, *, whole: bool, names_a_thing: bool,
                       example: float | None) -> dict[str, Any]:
        return {}


PROTOCOL = CoopTuiProtocol()
