"""Prompt rendering from the Jinja2 templates in ``data/prompts``.

Templates live in files so researchers can copy and edit them; a sweep's
``templates`` folder is searched first, so overriding one file is enough.
Action labels are neutral (A0, A1, ...) and may be shuffled per decision: the
mapping from shown label to game action travels with the request and is stored.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import stat
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui.errors import SpecError
from coop_tui.games.base import Game, points
from coop_tui.inputs import open_regular
from coop_tui.shipped import data_dir

CHARS_PER_TOKEN = 4
"""Characters per token: the estimate every prompt-size and cost check uses."""

RULES_END = "\x1e"
"""Rendered after a prompt's rules (``rules_end`` in game.j2 and protocol_game.j2) under a
protocol that sends the rules as a system message (:mod:`coop_tui.protocols`): where the
system message ends and the user message begins."""


def default_template_dir() -> Path:
    return data_dir() / "prompts"


RENDER_STEPS = 1_000_000
"""Steps of ``range`` loops one render may take in all: nested loops multiply (two of the
sandbox's largest ranges are 10^10 steps, hours of rendering)."""
RENDER_SECONDS = 10.0
"""Seconds one render may take (the shipped templates take well under a millisecond)."""
RENDER_CHARS = 4_000_000
"""Characters one render may produce, and one ``*`` or ``**`` of a template may make: a
prompt past it would be refused by every provider anyway."""


class TemplateFailed(SpecError):
    """A template that cannot render: every match renders it, so the sweep stops (exit 2)
    at the first failure, in a dry run as in a real one, naming the file and line."""


class UnsafeTemplate(TemplateFailed):
    """A template reached for what the sandbox keeps from templates (Python internals,
    functions that change data): the sweep stops before anything more is rendered."""


class BrokenTemplate(TemplateFailed):
    """A template whose rendering fails (an undefined variable, a wrong type) or passes the
    bounds (:data:`RENDER_STEPS`, :data:`RENDER_SECONDS`, :data:`RENDER_CHARS`)."""


class _TooMuch(Exception):
    """A render passed one of its bounds (turned into :class:`BrokenTemplate`)."""


class _Budget:
    """What one render may still spend: loop steps, and time up to a deadline."""

    def __init__(self) -> None:
        self.steps = RENDER_STEPS
        self.deadline = time.monotonic() + RENDER_SECONDS

    def spend(self, steps: int = 1) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise _TooMuch(f"its loops took more than {RENDER_STEPS:,} steps")
        if self.steps % 1024 == 0 and time.monotonic() > self.deadline:
            raise _TooMuch(f"it rendered for more than {RENDER_SECONDS:g} s")


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("render_budget",
                                                                         default=None)


class _CountedRange:
    """The sandbox's ``range`` (at most 100,000 items) whose iteration pays each step from
    the render's budget, so nested loops end instead of running for hours. Otherwise a
    range: its length, items and membership are free."""

    def __init__(self, *args: int) -> None:
        self.steps = _jinja2().sandbox.safe_range(*args)

    def __iter__(self) -> Iterator[int]:
        budget = _BUDGET.get()
        for value in self.steps:
            if budget is not None:
                budget.spend()
            yield value

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: Any) -> Any:
        return self.steps[index]

    def __contains__(self, value: object) -> bool:
        return value in self.steps


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple) else 0


def _bounded_binop(env: Any, context: Any, operator: str, left: Any, right: Any) -> Any:
    """``*`` and ``**`` of a template, refused before they make something past
    :data:`RENDER_CHARS` (``'x' * 10**12`` would allocate a terabyte; ``10 ** 10 ** 10``
    would compute for hours)."""
    if operator == "**" and isinstance(left, int | float) and isinstance(right, int | float):
        magnitude = abs(float(right)) * math.log10(max(abs(float(left)), 2.0))
        if magnitude > 10_000:
            raise _TooMuch(f"a power in it has about {magnitude:,.0f} digits")
    if operator == "*":
        sized, count = (left, right) if _size(left) else (right, left)
        if isinstance(count, int) and _size(sized) * max(count, 0) > RENDER_CHARS:
            raise _TooMuch(f"an expression in it would make {_size(sized) * count:,} items")
    return env.binop_table[operator](left, right)


def _template_line(exc: BaseException, filename: str | None) -> int | None:
    """The line of ``filename`` being rendered when ``exc`` was raised (Jinja2 puts the
    template's own lines into the traceback)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return frames[-1].lineno if frames else None


class PromptRenderer:
    """Renders prompt templates in Jinja2's immutable sandbox: a template copied from a
    colleague can read the values it is given but not reach Python's internals (no
    ``cycler.__init__.__globals__.os``) nor change them. Rendering costs the same as
    without the sandbox (measured on the shipped templates)."""

    def __init__(self, template_dir: Path | str | None = None) -> None:
        self._search = [str(default_template_dir())]
        if template_dir is not None:
            self._search.insert(0, str(template_dir))
        self.template_dir = Path(template_dir) if template_dir else None
        self._made: Any = None
        self._overlays: dict[str, PromptRenderer] = {}

    def overlaid(self, folder: Path | str) -> PromptRenderer:
        """This renderer with ``folder`` searched first: an experiment's own wording
        (``wording = "PATH"``) over the sweep's ``templates`` over the shipped ones, in the
        same sandbox. One renderer per folder (its compiled templates are kept), checked
        once (:func:`check_wording_folder`)."""
        key = str(folder)
        found = self._overlays.get(key)
        if found is None:
            check_wording_folder(Path(folder))
            found = PromptRenderer()
            found._search = [key, *self._search]
            found.template_dir = Path(folder)
            self._overlays[key] = found
        return found

    @property
    def _env(self) -> Any:
        """The sandboxed environment, made when a prompt is first wanted: a sweep of
        strategies renders none, and importing Jinja2 would be a tenth of its start-up."""
        if self._made is None:
            jinja2 = _jinja2()
            self._made = _BoundedSandbox(
                loader=jinja2.FileSystemLoader(self._search),
                undefined=jinja2.StrictUndefined,
                keep_trailing_newline=False,
                autoescape=False,
            )
            self._made.filters["points"] = points  # "1 point", "3 points"
            self._made.globals["range"] = _CountedRange
        return self._made

    def render(self, name: str, **context: Any) -> str:
        """The rendered template; :class:`UnsafeTemplate` or :class:`BrokenTemplate` (a
        :class:`SpecError`, exit 2) naming the file and line when it reaches outside the
        sandbox, fails, or passes its bounds."""
        return self._render(self._template(name), name, context)

    def bound(self, name: str) -> Callable[..., str]:
        """``render`` of one template found once: for a template rendered thousands of
        times in a row (a repeated game's history lines), where looking it up again
        (a file check each time) costs as much as rendering it."""
        template = self._template(name)
        return lambda **context: self._render(template, name, context)

    def _template(self, name: str) -> Any:
        try:
            return self._env.get_template(name)
        except _jinja2().TemplateSyntaxError as exc:
            raise BrokenTemplate("templates", f"{exc.filename or name}:{exc.lineno}: the "
                                 f"template does not parse ({exc.message}); fix it") from None

    def _render(self, template: Any, name: str, context: dict[str, Any]) -> str:
        """Render a Jinja2 template (found by name) in the sandbox, within its bounds."""
        token = _BUDGET.set(budget := _Budget())
        try:
            out: list[str] = []
            size = 0
            for chunk in template.generate(**context):
                out.append(chunk)
                size += len(chunk)
                if size > RENDER_CHARS:
                    raise _TooMuch(f"it rendered more than {RENDER_CHARS:,} characters")
                budget.spend(0)
            return "".join(out).strip()
        except _jinja2().exceptions.SecurityError as exc:
            raise UnsafeTemplate(
                "templates", f"{_at(exc, template, name)}: the template reaches outside what a "
                f"prompt template may use ({exc}); remove that expression (templates read "
                "their values, nothing more)",
            ) from None
        except _TooMuch as exc:
            raise BrokenTemplate("templates", f"{_at(exc, template, name)}: the template was "
                                 f"stopped: {exc}; simplify it") from None
        except (_jinja2().TemplateError, ArithmeticError, MemoryError, TypeError, ValueError,
                LookupError, AttributeError, RecursionError) as exc:
            said = str(exc) or type(exc).__name__
            raise BrokenTemplate("templates", f"{_at(exc, template, name)}: the template "
                                 f"failed to render ({said}); fix it") from None
        finally:
            _BUDGET.reset(token)

    def has(self, name: str) -> bool:
        """Whether a template of this name exists (a custom folder or the shipped one)."""
        try:
            self._env.get_template(name)
        except _jinja2().TemplateNotFound:
            return False
        return True

    def source(self, name: str) -> str:
        """The template text, for the inspector's editor."""
        loader = self._env.loader
        assert loader is not None
        src, _, _ = loader.get_source(self._env, name)
        return src


WORDING_VALUES = ("ours", "source")
"""The values of an experiment's ``wording`` that name no folder: our templates, or the
paper's own code (:mod:`coop_tui.sources`). Any other value is a folder of templates."""


def wording_path(wording: str | None, base: Path | None = None) -> Path | None:
    """The folder an experiment's ``wording`` names (``~`` expanded, relative to the sweep
    file's folder ``base``), or None for our own words and the paper's source."""
    if wording is None or wording in WORDING_VALUES:
        return None
    path = Path(wording).expanduser()
    return base / path if base is not None and not path.is_absolute() else path


def template_slots() -> list[str]:
    """Every template a folder of one's own wording may replace: the shipped templates'
    paths under ``data/prompts`` (``twist/similarity_percentage_updated.j2``, ...)."""
    root = default_template_dir()
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.j2"))


def check_wording_folder(folder: Path) -> list[str]:
    """The slots a wording folder fills; :class:`SpecError` on the field ``wording``
    naming the file and the fix for a folder that is missing or fills none, a template
    named after no slot (a typo would silently leave ours in place) or one that is not a
    regular file (a FIFO would hang the first render)."""
    if not folder.is_dir():
        raise SpecError("wording", f"{folder} is not a folder; give a folder of templates "
                        "named after the slots (see docs/reproducing-similarity.md)")
    slots = set(template_slots())
    found = []
    for path in sorted(itertools.islice(folder.rglob("*.j2"), 10 * len(slots))):
        name = path.relative_to(folder).as_posix()
        if name not in slots:
            same = sorted(s for s in slots if s.rsplit("/", 1)[-1] == path.name)
            hint = (f"did you mean {' or '.join(same)}?" if same else
                    "for example game.j2 or twist/similarity_percentage_updated.j2")
            raise SpecError("wording", f"{path}: names no template slot; name it after the "
                            f"template it replaces, as a path under data/prompts ({hint})")
        if not stat.S_ISREG(path.stat().st_mode):
            raise SpecError("wording", f"{path}: is not a regular file; a template must be one")
        found.append(name)
    if not found:
        raise SpecError("wording", f"{folder} holds no template (.j2 file); put your wording in "
                        "files named after the slots (see docs/reproducing-similarity.md)")
    return found
def _at(exc: BaseException, template: Any, name: str) -> str:
    """``file:line`` of the template line being rendered when ``exc`` was raised."""
    where = template.filename or name
    line = _template_line(exc, template.filename)
    return f"{where}:{line}" if line else where


def _bounded_sandbox_class() -> Any:
    """The immutable sandbox with ``*`` and ``**`` bounded (made on first use, like the
    import of Jinja2 itself)."""
    sandbox = _jinja2().sandbox

    class Bounded(sandbox.ImmutableSandboxedEnvironment):  # type: ignore[misc, name-defined]
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            return _bounded_binop(self, context, operator, left, right)

    return Bounded


def _BoundedSandbox(**options: Any) -> Any:  # noqa: N802 - stands for the class
    return _bounded_sandbox_class()(**options)


def _jinja2() -> Any:
    """Jinja2 with its sandbox, imported on first use (see :attr:`PromptRenderer._env`)."""
    import jinja2  # heavy: only a sweep that renders a prompt needs it
    import jinja2.sandbox

    return jinja2


@dataclass(frozen=True)
class Labelling:
    """Which neutral label stands for which game action, for one seat in one decision."""

    labels: tuple[str, ...]
    label_to_action: tuple[int, ...]

    def label_of(self, action: int) -> str:
        return self.labels[self.label_to_action.index(action)]

    def restricted(self, n_actions: int) -> Labelling:
        """The labels of game actions ``0 .. n_actions - 1`` only, in label order: how a
        prompt names the base game's actions when the game played has more (Mediation's
        "delegate" is left to the twist)."""
        kept = [(lab, a) for lab, a in zip(self.labels, self.label_to_action, strict=True) if a < n_actions]
        return Labelling(tuple(lab for lab, _ in kept), tuple(a for _, a in kept))

    @classmethod
    def neutral(cls, n_actions: int, rng: np.random.Generator | None = None) -> Labelling:
        order = list(range(n_actions))
        if rng is not None:
            order = [int(x) for x in rng.permutation(n_actions)]
        return cls(tuple(f"A{i}" for i in range(n_actions)), tuple(order))


LETTER_PAIRS = (("J", "F"), ("Q", "X"), ("R", "H"), ("Y", "W"), ("T", "N"), ("P", "M"))
"""The strategic personalities paper's label pairs for two options (Akata et al.'s, chosen to carry no meaning)."""
LETTERS = "ABCDEFGHJKLMNPQRSTWXYZ"
"""The strategic personalities paper's letters for games with more than two options."""


def trial_letters(n_actions: int, rng: np.random.Generator) -> tuple[str, ...]:
    """One letter per game action for a whole match, drawn as the strategic personalities paper's code does: a
    random pair (in random order) for two actions, distinct random letters otherwise."""
    if n_actions == 2:
        pair = LETTER_PAIRS[int(rng.integers(len(LETTER_PAIRS)))]
        return pair if rng.random() < 0.5 else (pair[1], pair[0])
    if n_actions > len(LETTERS):
        raise ValueError(f"the strategic personalities paper's letters cover at most {len(LETTERS)} actions, not {n_actions}")
    order = rng.permutation(len(LETTERS))[:n_actions]
    return tuple(LETTERS[int(i)] for i in order)


def trial_labelling(letters: Sequence[str], order_rng: np.random.Generator) -> Labelling:
    """The match's letters, listed in an order shuffled for this decision."""
    order = [int(x) for x in order_rng.permutation(len(letters))]
    return Labelling(tuple(letters[a] for a in order), tuple(order))


def payoff_description(game: Game, seat: int, labellings: Sequence[Labelling],
                       rule: str | None = None) -> str:
    """Describe every outcome from ``seat``'s point of view, in its labels.

    ``labellings[i]`` is the labelling used to name seat i's actions; a seat's own
    labelling is what it sees, and co-players are named with theirs, so a shuffled
    label set stays consistent inside one prompt. ``rule`` (a protocol's choice, see
    :meth:`PromptProtocol.payoff_rule`) replaces the game's own ``payoff_rule``.
    """
    n = game.n_players
    others = [j for j in range(n) if j != seat]
    own = labellings[seat]
    rule = rule if rule is not None else game.payoff_rule
    if rule is not None:
        names = {f"a{a}": lab for lab, a in zip(own.labels, own.label_to_action, strict=True)}
        return rule.format(**names)
    lines = []
    other_orders = [range(len(labellings[j].labels)) for j in others]
    for own_idx in range(len(own.labels)):
        for combo in itertools.product(*other_orders):
            profile = [0] * n
            profile[seat] = own.label_to_action[own_idx]
            parts = [f"you choose {own.labels[own_idx]}"]
            for j, lab_idx in zip(others, combo, strict=True):
                profile[j] = labellings[j].label_to_action[lab_idx]
                who = "the other player" if n == 2 else f"Player {j + 1}"
                parts.append(f"{who} chooses {labellings[j].labels[lab_idx]}")
            pay = game.payoff(profile)
            gets = [f"you get {points(pay[seat])}"]
            for j in others:
                who = "the other player" if n == 2 else f"Player {j + 1}"
                gets.append(f"{who} gets {points(pay[j])}")
            cond = " and ".join(parts) if n == 2 else ", ".join(parts)
            lines.append(f"- If {cond}: {', '.join(gets)}.")
    return "\n".join(lines)


def action_lines(game: Game, seat: int, own: Labelling) -> list[str]:
    """The "actions you can choose from" lines: each label, with its meaning when the
    game gives one (Travelers: the claim value)."""
    notes = game.action_notes[seat] if game.action_notes is not None else None
    out = []
    for label, action in zip(own.labels, own.label_to_action, strict=True):
        note = notes[action] if notes is not None and action < len(notes) else None
        out.append(f"{label}: {note}" if note else label)
    return out


@dataclass(frozen=True)
class Benchmark:
    key: str
    full_name: str
    description: str
    format: str
    sample: str
    random_baseline: float


@cache
def _load_catalogue(path: str) -> dict[str, Benchmark]:
    """Raises ValueError naming the problem, so a sweep reports it as a field error."""
    try:
        with open_regular(path) as fh:
            raw = tomllib.load(fh)
    except OSError as exc:
        raise ValueError(f"cannot read the benchmark catalogue {path} ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"benchmark catalogue {path} is not valid TOML: {exc}") from None
    fields_needed = {"full_name", "description", "format", "sample", "random_baseline"}
    out = {}
    for key, fields in raw.items():
        if not isinstance(fields, dict) or set(fields) != fields_needed:
            raise ValueError(
                f"benchmark {key!r} in {path} must have exactly the fields "
                f"{', '.join(sorted(fields_needed))}"
            )
        out[key] = Benchmark(key=key, **fields)
    return out


def benchmark_catalogue(path: Path | str | None = None) -> dict[str, Benchmark]:
    return _load_catalogue(str(path or data_dir() / "benchmarks.toml"))
