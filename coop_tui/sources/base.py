"""Reading a paper's wording from the user's own clone of its public code.

coop-tui's templates are written in our own words. A researcher who wants the exact
messages a paper's code sends names their clone of that code in the sweep file
(``[sources]``) and sets ``wording = "source"`` on an experiment; coop-tui then asks that
code, at run time, for the messages of every decision it would otherwise render from its
own templates. Nothing of the source is copied into this repository and only the messages
actually sent are stored.

One :class:`SourceWording` per paper, one module per paper in this package, found by the
registry in :mod:`coop_tui.sources`. The engine knows none of them: it is handed a
:class:`LoadedSource` (through the match's policy) and asks it for messages.

The source is code the user chose to run, so it is treated that way: it runs only when an
experiment asks for it, its files and functions are checked before any model call (a
missing path, module, function or changed signature is a :class:`SourceError`, exit 2),
and the commit it was read at is recorded on the run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from coop_tui.errors import SpecError

if TYPE_CHECKING:
    from coop_tui.decisions import DecisionRequest, Message


class SourceError(SpecError):
    """A source that cannot be used: names the file (or path) and the fix."""


@dataclass(frozen=True)
class Required:
    """One thing a paper's code must have for its wording to be read: ``attr`` (a dotted
    name such as ``"GameEngine.build_prompt"``) in the file ``path`` (relative to the
    clone), taking the parameters ``params`` in that order (``self`` left out)."""

    path: str
    attr: str
    params: tuple[str, ...] = ()


@dataclass
class LoadedSource:
    """A checked clone of one paper's code, ready to build messages.

    ``wording`` is the adapter, ``root`` the clone, ``commit`` the git commit it was read
    at (or ``"files:<sha256>"`` of the files used when it is not a git checkout), and
    ``state`` whatever the adapter keeps between calls (loaded modules, templates)."""

    wording: SourceWording
    root: Path
    commit: str
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The source's name (``sources.<name>`` in errors)."""
        return self.wording.name

    def messages(self, ctx: Any, request: DecisionRequest) -> tuple[Message, ...]:
        return self.wording.messages(self, ctx, request)

    def retry_messages(
        self, ctx: Any, request: DecisionRequest, sent: tuple[Message, ...],
        answer: str, reason: str,
    ) -> tuple[Message, ...]:
        return self.wording.retry_messages(self, ctx, request, sent, answer, reason)

    @property
    def reads_answers(self) -> bool:
        """Whether the paper's code reads its answers itself (the adapter overrides
        :meth:`SourceWording.read_answer`); the engine then notes which reader read each."""
        return type(self.wording).read_answer is not SourceWording.read_answer

    def read_answer(self, ctx: Any, request: DecisionRequest, text: str) -> str | None:
        return self.wording.read_answer(self, ctx, request, text)


class SourceWording(ABC):
    """One paper's public code as a source of messages."""

    name: ClassVar[str]
    """The key under ``[sources]`` (``coopeval``, ``strategic_personalities``,
    ``superadditive``) and in ``--source NAME=PATH``."""
    paper: ClassVar[str]
    """The paper's title, for messages and docs."""
    repository: ClassVar[str]
    """The public repository (``owner/name``) a user clones."""
    tested_commit: ClassVar[str]
    """The commit of that repository the adapter was checked against; another commit
    gives a warning naming both."""
    required: ClassVar[tuple[Required, ...]] = ()
    """Files, functions and signatures checked before any model call."""

    @abstractmethod
    def serves(self, *, mechanism: str, prompt_protocol: str, game: str) -> bool:
        """Whether an experiment cell with this mechanism, protocol key and game is one of
        this paper's (so ``wording = "source"`` there reads this source)."""

    @abstractmethod
    def load(self, root: Path) -> LoadedSource:
        """Check the clone at ``root`` (each of :attr:`required`) and import what building
        messages needs, without the paper's heavy dependencies. Raises
        :class:`SourceError` naming the file and the fix."""

    @abstractmethod
    def messages(
        self, source: LoadedSource, ctx: Any, request: DecisionRequest
    ) -> tuple[Message, ...]:
        """The exact messages the paper's code sends for ``request`` in the match ``ctx``
        (a :class:`coop_tui.engine.MatchContext`: game, seats, histories, policy)."""

    @abstractmethod
    def retry_messages(
        self, source: LoadedSource, ctx: Any, request: DecisionRequest,
        sent: tuple[Message, ...], answer: str, reason: str,
    ) -> tuple[Message, ...]:
        """The whole message list of the next attempt after ``answer`` (the raw text of
        the rejected attempt, sent as ``sent``) was refused for ``reason``, as the paper's
        code re-asks."""

    def read_answer(
        self, source: LoadedSource, ctx: Any, request: DecisionRequest, text: str
    ) -> str | None:
        """A reply read the paper's way, rewritten in coop-tui's answer shape for
        ``request`` (the text coop-tui's parser then reads), or None where the paper's code
        could not read it. Optional: a paper whose prompts ask for our answer form needs no
        reader of its own, so by default coop-tui's parser reads every reply (None). One
        that states its own format (super-additive's JSON moves) overrides this, or a model
        that follows the paper's instructions would be re-asked for coop-tui's form."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "paper": self.paper, "repository": self.repository,
                "tested_commit": self.tested_commit}
