"""Rubrics: the categories a judge sorts reasoning texts into, read from data files.

A rubric is a TOML (or YAML) file: a name, a version, the judge's instructions, a
presence threshold, a protocol and a list of categories (id, display name, definition).
The built-in ones live in ``data/rubrics/`` (``justifications``: CoopEval's 16
categories, judged by its protocol; ``similarity-reasoning``: the similarity paper's
reasoning types); a user passes a path to their own. A rubric is answered in one of two
shapes (:data:`PROTOCOLS`): one confidence in [0, 1] per category id, or CoopEval's one
overall confidence and a list of the types present; both become the same present flags,
so one analysis serves them all.

Validation names the field and the fix (:class:`coop_tui.spec.SpecError`, exit 2) before
anything is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from coop_tui.errors import SpecError
from coop_tui.schemas import judgement_gbnf, judgement_types_gbnf  # kept importable from here
from coop_tui.spec import read_sweep_file

OUTPUT_FORMAT = "confidence-per-category"
_ID = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_CATEGORIES = 60

PROTOCOLS = ("per-category", "coopeval")
SELECTIONS = ("logged", "all")
"""Which decisions a judge pass reads (:attr:`Rubric.selection`)."""
"""How a judge is asked and what it answers:

* ``per-category`` — one confidence from 0 to 1 per category (present at the rubric's
  threshold); every decision with text in the phase is judged, at the judge's own
  temperature;
* ``coopeval`` — CoopEval's justification judge (``scripts/llm_judge`` of its code): one
  overall confidence and a list of the types present (a type is present when listed),
  temperature 0, and only play answers of chain-of-thought agents at least
  :data:`COOPEVAL_MIN_CHARS` characters long (after trimming) are judged; the judge reads
  the game and the answer text.
"""
COOPEVAL_MIN_CHARS = 80
COOPEVAL_STYLE = "cot"
COOPEVAL_TEMPERATURE = 0.0
COOPEVAL_MAX_TOKENS = 500
"""CoopEval's judge call: temperature 0 and at most 500 answer tokens."""

COOPEVAL_GAME_NAMES = {
    "prisoners": "PrisonersDilemma", "trust": "TrustGame", "stag_hunt": "StagHunt",
    "matching_pennies": "MatchingPennies", "public_good": "PublicGoods",
    "travelers": "TravellersDilemma",
}
"""Our game key -> the name CoopEval's judge is told (its game's type in its configs, the
reverse of ``coop_tui.importers.coopeval_records.GAMES``, which a test holds it to)."""


def coopeval_game_name(key: str, title: str) -> str:
    """The game as CoopEval's judge names it; a game CoopEval does not have keeps ``title``."""
    return COOPEVAL_GAME_NAMES.get(key, title)


COOPEVAL_MECHANISM_NAMES = {
    ("none", None): "NoMechanism", ("repetition", None): "Repetition",
    ("reputation", "higher"): "Reputation", ("reputation", "first"): "ReputationFirstOrder",
    ("mediation", None): "Mediation", ("contracting", None): "Contracting",
}
"""Our mechanism (and Reputation's order) -> CoopEval's mechanism type in its configs."""


def _snake(name: str) -> str:
    """``PrisonersDilemma`` as ``prisoners_dilemma`` (CoopEval's tournament folder names)."""
    return "".join(f"_{ch.lower()}" if ch.isupper() and i else ch.lower()
                   for i, ch in enumerate(name)).replace(" ", "_")


def coopeval_input_lines(game: str, mechanism: str, order: str | None, player: str) -> str:
    """The head of the text CoopEval's judge reads, laid out as the CoopEval paper prints
    its example: the game, the mechanism, the run (the tournament's folder name, its
    mechanism and game) and the player, one per line."""
    mech = COOPEVAL_MECHANISM_NAMES.get((mechanism, order if mechanism == "reputation" else None),
                                        mechanism)
    return "\n".join((f"Game: {game}", f"Mechanism: {mech}",
                      f"Run: {_snake(mech)}_{_snake(game)}", f"Player: {player}"))


COOPEVAL_TEMPLATE = """{instructions}

Justification types (name: meaning):
{categories}

{game}
The response to classify, between the BEGIN and END lines:
=== BEGIN TEXT ===
{text}
=== END TEXT ===

Answer with one JSON object and nothing outside it, shaped like this:
{{"Reasoning_behind_classification": "why these types apply", "Confidence": 0.85, \
"justification_type": "<name>, <name>"}}
- "Reasoning_behind_classification": a short explanation of your classification.
- "Confidence": your confidence in the classification as a whole, a number from 0 to 1 \
(not a string).
- "justification_type": the names of all the justification types the response shows, \
written exactly as listed above and separated by commas in one string: one, several or \
none.{none}
"""
"""The judge's request under the ``coopeval`` protocol (our words, CoopEval's content)."""

PROMPT_TEMPLATE = """{instructions}

Categories (id: meaning):
{categories}

Context: {context}

The text to classify, between the BEGIN and END lines:
=== BEGIN TEXT ===
{text}
=== END TEXT ===

Answer with one JSON object and nothing after it. Give every category id above as a key, \
and as its value your confidence that the category is present in the text: a number from \
0 (certainly absent) to 1 (certainly present). Example of the shape:
{example}
"""
"""The judge's request; ``template`` in a rubric file replaces it (same placeholders)."""

_PLACEHOLDERS = ("{instructions}", "{categories}", "{context}", "{text}", "{example}")


@dataclass(frozen=True)
class Category:
    id: str
    name: str
    definition: str


@dataclass(frozen=True)
class Rubric:
    """A validated rubric. ``digest`` changes with any edit, even without a new version."""

    name: str
    version: str
    title: str
    instructions: str
    threshold: float
    categories: tuple[Category, ...]
    template: str
    source: str
    protocol: str = "per-category"
    """One of :data:`PROTOCOLS`; ``coop-tui judge --protocol`` overrides the file's."""
    phase: str = "play"
    """The decisions the rubric reads unless ``coop-tui judge --phase`` says otherwise
    (``promises`` reads the messages of talk phases)."""
    selection: str | None = None
    """``logged``: only decisions whose prompt is stored (CoopEval's script reads answers
    from its game logs, so tournaments imported without one are skipped there); ``all``:
    every decision with text, ours. None: the protocol's own (``logged`` under
    ``coopeval``). Which decisions are judged, not how: not part of the digest."""

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.categories)

    @property
    def names(self) -> dict[str, str]:
        return {c.id: c.name for c in self.categories}

    @property
    def digest(self) -> str:
        payload = json.dumps(self.public(), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def public(self) -> dict[str, Any]:
        """Everything that defines the rubric (stored with the judge run)."""
        out = {
            "name": self.name, "version": self.version, "title": self.title,
            "instructions": self.instructions, "threshold": self.threshold,
            "categories": [c.__dict__ for c in self.categories], "template": self.template,
        }
        if self.protocol != "per-category":  # per-category digests stay as they were
            out["protocol"] = self.protocol
        return out

    @property
    def coopeval(self) -> bool:
        return self.protocol == "coopeval"

    def with_protocol(self, protocol: str | None) -> Rubric:
        """This rubric under another protocol (None: unchanged)."""


        if protocol is None or protocol == self.protocol:
            return self
        if protocol not in PROTOCOLS:
            raise SpecError("--protocol", f"{protocol!r} is not one of {', '.join(PROTOCOLS)}")
        return replace(self, protocol=protocol)

    @property
    def logged_only(self) -> bool:
        return self.selection == "logged" or (self.selection is None and self.coopeval)

    def with_selection(self, selection: str | None) -> Rubric:
        """This rubric choosing its decisions another way (None: the protocol's)."""
        if selection is None:
            return self
        if selection not in SELECTIONS:
            raise SpecError("--selection", f"{selection!r} is not one of {', '.join(SELECTIONS)}")
        return replace(self, selection=selection)

    def answer_options(self) -> dict[str, Any]:
        """The judgement's parsing options: CoopEval's answer shape needs the names."""
        return {"shape": "types", "names": self.names} if self.coopeval else {}

    def present(self, parsed: dict[str, Any]) -> dict[str, tuple[float, bool]]:
        """Per category: (confidence, present) of one valid answer. Under ``coopeval`` a
        listed type is present with the answer's overall confidence, the others absent."""
        if self.coopeval:
            listed = set(parsed.get("types") or ())
            overall = float(parsed.get("confidence") or 0.0)
            return {cid: (overall if cid in listed else 0.0, cid in listed) for cid in self.ids}
        return {cid: (float(parsed[cid]), float(parsed[cid]) >= self.threshold)
                for cid in self.ids if cid in parsed}

    def prompt(self, text: str, context: str) -> str:
        """The judge's request. ``context``: one line about the decision (per-category) or
        the input lines of :func:`coopeval_input_lines` (coopeval)."""
        if self.coopeval:
            categories = "\n".join(f"- {c.name}: {c.definition}" for c in self.categories)
            others = next((c.name for c in self.categories if c.id == "others"), None)
            none = (f" When none of the other types applies, give \"{others}\"."
                    if others else "")
            return COOPEVAL_TEMPLATE.format(
                instructions=self.instructions.strip(), categories=categories, game=context,
                text=text.strip(), none=none,
            )
        categories = "\n".join(f"- {c.id}: {c.definition}" for c in self.categories)
        example = json.dumps({c.id: 0.0 for c in self.categories[:3]})[:-1] + ", ...}"
        return self.template.format(
            instructions=self.instructions.strip(), categories=categories,
            context=context, text=text.strip(), example=example,
        )


def rubrics_dir() -> Path:
    return Path(str(resources.files("coop_tui.data"))) / "rubrics"


def builtin_rubrics() -> list[str]:
    return sorted(p.stem for p in rubrics_dir().glob("*.toml"))


def load_rubric(ref: str) -> Rubric:
    """A built-in rubric by name, or a rubric file by path."""
    builtin = rubrics_dir() / f"{ref}.toml"
    path = builtin if "/" not in ref and builtin.is_file() else Path(ref).expanduser()
    if not path.exists():
        raise SpecError(
            "--rubric",
            f"{ref!r} is neither a built-in rubric ({', '.join(builtin_rubrics())}) nor an "
            "existing file; give one of those names or the path of a rubric .toml file",
        )
    try:
        data = read_sweep_file(path)
    except SpecError as exc:  # the reader speaks of sweep files; this one is a rubric
        raise SpecError(exc.field or str(path), str(exc.message).replace("sweep", "rubric")) from None
    try:
        return rubric_from_data(data, str(path))
    except SpecError as exc:  # say which file: the field alone could be any rubric's
        raise SpecError(f"rubric {path}: {exc.field}", exc.message) from None


def rubric_from_data(data: dict[str, Any], source: str = "<rubric>") -> Rubric:
    """Validate a rubric's table; every problem names its field and how to fix it."""
    known = {"name", "version", "title", "instructions", "threshold", "categories", "output",
             "template", "protocol", "phase"}
    for key in data:
        if key not in known:
            raise SpecError(str(key), "is not a known rubric field; remove it or check its spelling "
                            f"(known: {', '.join(sorted(known))})")
    name = _text(data, "name", required=True)
    version = data.get("version", "1")
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        raise SpecError("version", f"must be a string such as \"2\" (got {version!r})")
    output = data.get("output", {})
    if not isinstance(output, dict):
        raise SpecError("output", "must be a table, e.g. [output] format = \"confidence-per-category\"")
    fmt = output.get("format", OUTPUT_FORMAT)
    if fmt != OUTPUT_FORMAT or set(output) - {"format"}:
        raise SpecError("output.format", f"must be \"{OUTPUT_FORMAT}\" (the only answer format)")
    protocol = data.get("protocol", "per-category")
    if protocol not in PROTOCOLS:
        raise SpecError("protocol", f"must be one of {', '.join(PROTOCOLS)} (got {protocol!r})")
    threshold = data.get("threshold", 0.5)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise SpecError("threshold", f"must be a number above 0 and at most 1 (got {threshold!r})")
    template = data.get("template", PROMPT_TEMPLATE)
    if not isinstance(template, str) or "{text}" not in template or "{categories}" not in template:
        raise SpecError("template", "must be a string containing {text} and {categories}")
    try:
        template.format(**{p.strip("{}"): "" for p in _PLACEHOLDERS})
    except (KeyError, IndexError, ValueError) as exc:
        raise SpecError("template", f"has a placeholder it cannot fill ({exc}); use only "
                        f"{', '.join(_PLACEHOLDERS)} and write other braces doubled ({{{{ }}}})") from None
    raw = data.get("categories")
    if not isinstance(raw, list) or not raw:
        raise SpecError("categories", "is required: a list of [[categories]] tables with id, name "
                        "and definition")
    if len(raw) > MAX_CATEGORIES:
        raise SpecError("categories", f"has {len(raw)} entries; at most {MAX_CATEGORIES}")
    categories: list[Category] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        where = f"categories[{i}]"
        if not isinstance(entry, dict):
            raise SpecError(where, "must be a table with id, name and definition")
        extra = set(entry) - {"id", "name", "definition"}
        if extra:
            raise SpecError(f"{where}.{sorted(extra)[0]}", "is not a known category field; use id, "
                            "name and definition")
        cid = _text(entry, "id", required=True, where=where)
        if not _ID.fullmatch(cid):
            raise SpecError(f"{where}.id", f"{cid!r} must be lower-case letters, digits and _ "
                            "(starting with a letter, at most 40 characters), e.g. risk_aversion")
        if cid in seen:
            raise SpecError(f"{where}.id", f"{cid!r} is used twice; give each category its own id")
        seen.add(cid)
        categories.append(Category(
            cid, _text(entry, "name", where=where) or cid,
            _text(entry, "definition", required=True, where=where),
        ))
    return Rubric(
        name=name, version=str(version), title=_text(data, "title") or name,
        instructions=_text(data, "instructions", required=True), threshold=float(threshold),
        categories=tuple(categories), template=template, source=source, protocol=protocol,
        phase=_text(data, "phase") or "play",
    )


def _text(data: dict[str, Any], key: str, *, required: bool = False, where: str = "") -> str:
    field = f"{where}.{key}" if where else key
    value = data.get(key)
    if value is None:
        if required:
            raise SpecError(field, "is required; add it")
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise SpecError(field, f"must be a non-empty string (got {value!r})")
    return value.strip()


__all__ = [
    "COOPEVAL_MAX_TOKENS",
    "COOPEVAL_MIN_CHARS",
    "COOPEVAL_TEMPERATURE",
    "OUTPUT_FORMAT",
    "PROTOCOLS",
    "judgement_types_gbnf",
    "Category",
    "Rubric",
    "builtin_rubrics",
    "judgement_gbnf",
    "load_rubric",
    "rubric_from_data",
    "rubrics_dir",
]
