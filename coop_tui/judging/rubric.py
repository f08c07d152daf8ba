"""Rubrics: the categories a judge sorts reasoning texts into, read from data files.

A rubric is a TOML (or YAML) file: a name, a version, the judge's instructions, a
presence threshold and a list of categories (id, display name, definition). The
built-in ones live in ``data/rubrics/`` (``justifications``: seed 002's 15 categories;
``similarity-reasoning``: seed 000's reasoning types); a user passes a path to their own.
Every rubric is answered the same way, one JSON object giving each category id a
confidence in [0, 1], so one parser, one grammar and one analysis serve them all.

Validation names the field and the fix (:class:`coop_tui.spec.SpecError`, exit 2) before
anything is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

OUTPUT_FORMAT = "confidence-per-category"
_ID = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_CATEGORIES = 60

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
        return {
            "name": self.name, "version": self.version, "title": self.title,
            "instructions": self.instructions, "threshold": self.threshold,
            "categories": [c.__dict__ for c in self.categories], "template": self.template,
        }

    def prompt(self, text: str, context: str) -> str:
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
    from coop_tui.spec import SpecError, read_sweep_file

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
    from coop_tui.spec import SpecError

    known = {"name", "version", "title", "instructions", "threshold", "categories", "output",
             "template"}
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
        categories=tuple(categories), template=template, source=source,
    )


def _text(data: dict[str, Any], key: str, *, required: bool = False, where: str = "") -> str:
    from coop_tui.spec import SpecError

    field = f"{where}.{key}" if where else key
    value = data.get(key)
    if value is None:
        if required:
            raise SpecError(field, "is required; add it")
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise SpecError(field, f"must be a non-empty string (got {value!r})")
    return value.strip()


def judgement_gbnf(ids: tuple[str, ...]) -> str:
    """Grammar of a judgement for the embedded model: every category id once, in order,
    each with a confidence written 0, 1, 0.x or 0.xx (so it always lies in [0, 1])."""
    if not ids:
        raise ValueError("a judgement needs at least one category")
    parts = " \",\" space ".join(f'"\\"{cid}\\"" space ":" space conf' for cid in ids)
    return (
        f'root ::= "{{" space {parts} "}}" space\n'
        'conf ::= ("0" ("." [0-9] [0-9]?)? | "1" (".0")?) space\n'
        'space ::= " "?\n'
    )


__all__ = [
    "OUTPUT_FORMAT",
    "Category",
    "Rubric",
    "builtin_rubrics",
    "judgement_gbnf",
    "load_rubric",
    "rubric_from_data",
    "rubrics_dir",
]
