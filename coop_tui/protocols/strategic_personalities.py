"""The strategic personalities paper's protocol, as its public code prompts a model.

What its code does, and so what this protocol answers:

- Message roles: the game's rules are the system message, the round (history, the
  question, the answer request) the user message. The templates mark the end of the rules
  with ``rules_end``; the reasoning style is worded inside the answer request, never a
  system message of its own.
- Answer format: in ``<answer>`` tags (``answer/<kind>_tag.j2``, for the kinds that have
  one): ``<answer>Option J</answer>`` for a labelled option, the word itself
  (``<answer>accept</answer>``) where the code asks for a word, a number as
  ``<answer>40</answer>`` with the code's example number where it shows one.
- Names and examples: every game is named as the code's rules name it (``called``, and
  ``called_by_code`` where our own prompt leaves the game unnamed: "the Nash Demand
  Game"), and a move shows the code's example answer (``<answer>50</answer>``,
  ``<answer>40, 30, 30</answer>`` for a split, numbers separated by commas as the code
  asks for them).
- Re-asks: an unreadable answer is asked again for the same ``<answer>`` tag form.
- Numbers: the code reads every numeric answer as a float, so a whole-number move takes
  decimals too, except where the number names a thing (a node, a message, a state).
- Goal: the baseline states none; the code's goal_* conditions bring their own sentence.

Its stored key stays "seed003" (the value studies used before the protocol had a name),
which old study files may still give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.prompts import RULES_END, PromptRenderer
from coop_tui.protocols.base import PromptProtocol

if TYPE_CHECKING:
    from coop_tui.games.base import Game


class StrategicPersonalitiesProtocol(PromptProtocol):
    name = "strategic_personalities"
    key = "seed003"
    aliases = ("seed003",)
    summary = ("the strategic personalities paper's code: the rules as a system message, the "
               "round as a user message, the answer in <answer> tags, decimals in numeric "
               "moves, no goal unless a condition states one")

    def rules_end(self) -> str:
        return RULES_END

    def reasoning_as_system(self, style_message: str) -> bool:
        return False  # the tag templates word each style in the user message

    def goal(self) -> str | None:
        return ""

    def game_name(self, called: str, called_by_code: str) -> str:
        return called or called_by_code

    def code_information(self) -> bool:
        return True

    def payoff_rule(self, game: Game) -> str | None:
        return game.payoff_rule or game.code_payoff_rule

    def answer_template(self, kind: str, renderer: PromptRenderer) -> str | None:
        name = f"answer/{kind}_tag.j2"
        return name if renderer.has(name) else None

    def answer_form(self, kind: str, renderer: PromptRenderer) -> dict[str, str]:
        return {"form": "tag"} if self.answer_template(kind, renderer) else {}

    def option_words(self) -> bool:
        return True

    def number_options(self, *, whole: bool, names_a_thing: bool,
                       example: float | None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if whole and not names_a_thing:
            options["decimals"] = True
        if example is not None:
            options["example"] = example
        return options

    def allocation_options(self, *, example: tuple[float, ...] | None) -> dict[str, Any]:
        return {} if example is None else {"example": list(example)}

    def retry_template(self, options: dict[str, Any]) -> str:
        return "retry_tag.j2" if options.get("form") == "tag" else "retry.j2"


PROTOCOL = StrategicPersonalitiesProtocol()
