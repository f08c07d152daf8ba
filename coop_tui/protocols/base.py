"""The questions a prompt protocol answers, so the engine never needs to know a paper.

A *prompt protocol* is the way one paper's code talks to a model: which text goes into a
system message and which into the user message, how the answer is asked for (a JSON
object, ``<answer>`` tags), whether a personal goal is stated when the study names none,
whether named options are answered by their word ("accept") or by a label, and what a
numeric move accepts and shows as its example. The engine, the move-by-move games and
the sweep ask the study's protocol (``ctx.protocol``) each of these questions; each
protocol is one module of this package, found by :mod:`coop_tui.protocols`.

Two names per protocol: ``name`` is what a study file says (``prompt_protocol =
"strategic_personalities"``); ``key`` is what goes into a cell's condition, its match
keys and the sweep's hash. The key of a shipped protocol never changes, so a database
written before a protocol was renamed still resumes and still finds its decisions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from coop_tui.prompts import RULES_END

if TYPE_CHECKING:
    from coop_tui.decisions import Message
    from coop_tui.games.base import Game
    from coop_tui.prompts import PromptRenderer


class PromptProtocol(ABC):
    """One paper's way of prompting. Subclass it in a module of this package and set
    ``PROTOCOL = YourProtocol()`` there; the registry finds it by that name."""

    name: ClassVar[str]
    """What a study file's ``prompt_protocol`` says (snake case, the paper's name)."""
    key: ClassVar[str]
    """Stored in conditions, match keys and sweep hashes; never changed once shipped."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other values a study file may give for this protocol (older names)."""
    summary: ClassVar[str]
    """One sentence for the spec's field description and ``docs/``."""

    # ------------------------------------------------------------ message roles
    @abstractmethod
    def rules_end(self) -> str:
        """What the prompt templates render after a game's rules (``rules_end``):
        :data:`~coop_tui.prompts.RULES_END` when the rules are a system message of their
        own and the rest the user message, else the empty string."""

    @abstractmethod
    def reasoning_as_system(self, style_message: str) -> bool:
        """Whether a ``cot`` / ``direct`` agent's reasoning instruction may be sent as a
        system message of its own (``system/<style>.j2``) under the study's
        ``style_message`` setting. The engine still keeps a person's prompt in one
        message and needs the style's template to exist."""

    def reasoning_at_end(self, style_message: str) -> bool:
        """Whether a ``cot`` / ``direct`` agent's reasoning instruction may be appended to
        the end of the user message (and of each re-ask) under the study's
        ``style_message``, apart from the answer instructions. No by default."""
        return False

    def messages(self, text: str, reasoning: str | None) -> tuple[Message, ...]:
        """The messages one rendered prompt is sent as. Text holding the rules mark is
        split there (the rules as the system message, the rest as the user message);
        otherwise one user message, after ``reasoning`` (the style's system message)
        when there is one."""
        rules, mark, rest = text.partition(RULES_END)
        if mark:
            return ({"role": "system", "content": rules.strip()},
                    {"role": "user", "content": rest.strip()})
        user: Message = {"role": "user", "content": text}
        if reasoning is not None:
            return ({"role": "system", "content": reasoning}, user)
        return (user,)

    # ------------------------------------------------------------ what is stated
    @abstractmethod
    def goal(self) -> str | None:
        """The goal sentence a prompt states when the mechanism gives none: None for the
        templates' own ("collect as many points as you can"), "" to state no goal."""

    def game_name(self, called: str, called_by_code: str) -> str:
        """The name a move-by-move game's prompt gives the game: ``called`` (the name
        every protocol states) by default; a protocol that states its paper's names may
        give ``called_by_code`` where ``called`` is empty. "" says "a game"."""
        return called

    def payoff_rule(self, game: Game) -> str | None:
        """The rule a matrix game's prompt states instead of listing every outcome:
        the game's own ``payoff_rule`` by default (None: the list). A protocol that
        states its paper's rules may give ``game.code_payoff_rule``."""
        return game.payoff_rule

    def code_information(self) -> bool:
        """Whether a move-by-move game tells what its paper's code tells (its
        ``code_rules`` and the questions it words after the code's information) rather
        than coop-tui's own account; a game's ``told`` parameter overrides this."""
        return False

    # ------------------------------------------------------------ answer format
    @abstractmethod
    def answer_template(self, kind: str, renderer: PromptRenderer) -> str | None:
        """The template that asks for an answer of ``kind`` in this protocol's own form
        (it words every reasoning style itself), or None for the house's
        ``answer/<kind>_<style>.j2`` / ``answer/<kind>_plain.j2``."""

    def answer_form(self, kind: str, renderer: PromptRenderer) -> dict[str, str]:
        """Options a request of ``kind`` carries so the parser and a constrained
        agent's grammar expect the protocol's form (``{"form": "tag"}``); none by
        default."""
        return {}

    @abstractmethod
    def option_words(self) -> bool:
        """Whether a move between named options with answer words ("accept" /
        "reject") is answered by the word instead of a label."""

    @abstractmethod
    def number_options(self, *, whole: bool, names_a_thing: bool,
                       example: float | None) -> dict[str, Any]:
        """Extra options of a numeric move: ``{"decimals": True}`` to accept any value
        within the bounds of a whole-number grid, ``{"example": x}`` to show the
        example answer. ``whole``: the grid's step is 1; ``names_a_thing``: the number
        names a node, a message or a state (never a decimal); ``example``: the move's
        example answer from the game, if it has one."""

    def allocation_options(self, *, example: tuple[float, ...] | None) -> dict[str, Any]:
        """Extra options of a split (Blotto's soldiers, demands on two issues):
        ``{"example": [...]}`` to show the game's example split; none by default."""
        return {}

    def retry_template(self, options: dict[str, Any]) -> str:
        """The template that asks again after an unreadable answer, given the request's
        options (their ``form`` says how the answer was asked for): ``retry.j2`` (a JSON
        object) by default."""
        return "retry.j2"

    # ------------------------------------------------------------ talk phases
    def talk_allowed(self) -> bool:
        """Whether agents may talk before they move (a study's ``talk``). None of the
        papers' protocols had a free-text phase, so a paper's protocol refuses it unless
        it says here how messages are asked for and shown; the spec checks this."""
        return False

    def talk_templates(self) -> tuple[str, str]:
        """(the template asking for a message, the transcript block shown to its
        recipients in their next prompt), both rendered inside ``game.j2``'s slots."""
        return "talk/ask.j2", "talk/transcript.j2"

    def describe(self) -> dict[str, Any]:
        """Name, key, aliases and summary: for listings and docs."""
        return {"name": self.name, "key": self.key, "aliases": list(self.aliases),
                "summary": self.summary}
