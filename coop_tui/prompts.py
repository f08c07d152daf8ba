"""Prompt rendering from the Jinja2 templates in ``data/prompts``.

Templates live in files so researchers can copy and edit them; a sweep's
``templates`` folder is searched first, so overriding one file is enough.
Action labels are neutral (A0, A1, ...) and may be shuffled per decision: the
mapping from shown label to game action travels with the request and is stored.
"""

from __future__ import annotations

import itertools
import stat
import tomllib
import traceback
from collections.abc import Callable, Sequence
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


class UnsafeTemplate(SpecError):
    """A template reached for what the sandbox keeps from templates (Python internals,
    functions that change data): the sweep stops before anything more is rendered."""


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
            self._made = jinja2.sandbox.ImmutableSandboxedEnvironment(
                loader=jinja2.FileSystemLoader(self._search),
                undefined=jinja2.StrictUndefined,
                keep_trailing_newline=False,
                autoescape=False,
            )
            self._made.filters["points"] = points  # "1 point", "3 points"
        return self._made

    def render(self, name: str, **context: Any) -> str:
        """The rendered template; :class:`UnsafeTemplate` (a :class:`SpecError`, exit 2)
        naming the file and line when it reaches outside the sandbox."""
        return self._render(self._env.get_template(name), name, context)

    def bound(self, name: str) -> Callable[..., str]:
        """``render`` of one template found once: for a template rendered thousands of
        times in a row (a repeated game's history lines), where looking it up again
        (a file check each time) costs as much as rendering it."""
        template = self._env.get_template(name)
        return lambda **context: self._render(template, name, context)

    def _render(self, template: Any, name: str, context: dict[str, Any]) -> str:
        """Render a Jinja2 template (found by name) in the sandbox."""
        try:
            return template.render(**context).strip()
        except _jinja2().exceptions.SecurityError as exc:
            where = template.filename or name
            line = _template_line(exc, template.filename)
            at = f"{where}:{line}" if line else where
            raise UnsafeTemplate(
                "templates", f"{at}: the template reaches outside what a prompt template may "
                f"use ({exc}); remove that expression (templates read their values, nothing more)",
            ) from None

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
