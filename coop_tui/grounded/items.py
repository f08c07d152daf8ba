"""Benchmark items: the JSONL format users bring their benchmarks in, and its loader.

One JSON object per line. Every item has an ``id`` (unique in the file), a ``prompt``
and a ``kind``; ``category`` is optional (kept for analysis). Kinds:

- ``options``: ``"options": ["Cooperate", "Defect", ...]`` (2 to 26), answered by letter;
- ``likert``: ``"scale": [1, 5]`` (whole numbers, low < high), optional ``"anchors":
  {"1": "Dislike", "5": "Like very much"}``;
- ``number``: a free numeric answer, optional ``min`` / ``max`` / ``step``;
- ``text``: a free short answer, compared after normalising case, spaces and punctuation;
- ``mixed``: ``"actions": ["A", "B", ...]``, answered with a percentage per action.

A mistake is reported as one :class:`~coop_tui.spec.SpecError` naming the file, the
line and the field (the CLI exits 2 before anything is written).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coop_tui.errors import SpecError
from coop_tui.inputs import InputTooLarge, read_regular

ITEM_KINDS = ("options", "likert", "number", "text", "mixed")
_KNOWN = {
    "options": {"options"},
    "likert": {"scale", "anchors"},
    "number": {"min", "max", "step"},
    "text": set(),
    "mixed": {"actions"},
}
_COMMON = {"id", "prompt", "kind", "category"}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# Bounds on what an item file can name, checked before anything is allocated from it: a
# Likert scale is listed point by point in the prompt and its kappa matrix is points x
# points; a number's range and step size the answer check; a file is read whole.
MAX_SCALE_POINTS = 101
MAX_ABS_NUMBER = 1e12
"""The same bound game files put on payoffs: beyond it, float arithmetic loses units."""
MIN_STEP = 1e-6
MAX_STEPS = 10**9
"""(max - min) / step at most: an answer is checked against this grid."""
MAX_ITEM_FILE_BYTES = 16 * 1024 * 1024
MAX_ITEMS = 20_000


@dataclass(frozen=True)
class Item:
    """One benchmark question and how its answer is read."""

    id: str
    prompt: str
    kind: str
    options: tuple[str, ...] = ()
    scale: tuple[int, int] | None = None
    anchors: dict[str, str] = field(default_factory=dict)
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    actions: tuple[str, ...] = ()
    category: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Built-in domains only: what the item needs besides its text (similarity X, ...)."""

    @property
    def labels(self) -> tuple[str, ...]:
        """Answer labels: option letters, or the actions of a mixed item."""
        if self.kind == "options":
            return tuple(LETTERS[: len(self.options)])
        if self.kind == "mixed":
            return self.actions
        return ()

    def in_order(self, order: Sequence[int] | None) -> Item:
        """The item with its options shown in ``order`` (shown position -> the file's
        option index); itself when ``order`` is None."""
        if order is None:
            return self
        return replace(self, options=tuple(self.options[i] for i in order))

    def shown(self) -> str:
        """The question as an agent (or a judge) reads it: prompt plus its choices."""
        lines = [self.prompt]
        if self.kind == "options":
            lines += [f"{label}) {text}" for label, text in zip(self.labels, self.options, strict=True)]
        elif self.kind == "likert" and self.scale is not None:
            lo, hi = self.scale
            scale = ", ".join(
                f"{v} = {self.anchors[str(v)]}" if str(v) in self.anchors else str(v)
                for v in range(lo, hi + 1)
            )
            lines.append(f"Scale: {scale}")
        elif self.kind == "mixed":
            lines.append("Actions: " + ", ".join(self.actions))
        return "\n".join(lines)

    def describe_answer(self, value: Any) -> str:
        """An answer in words, for a judge's dossier."""
        if value is None:
            return "(no valid answer)"
        if self.kind == "options":
            index = int(value)
            return f"{self.labels[index]}) {self.options[index]}"
        if self.kind == "mixed" and isinstance(value, Sequence):
            return ", ".join(f"{a}: {round(100 * p)}%" for a, p in zip(self.actions, value, strict=True))
        if self.kind == "likert" and str(value) in self.anchors:
            return f"{value} ({self.anchors[str(value)]})"
        return str(value)


def _err(where: str, message: str) -> Exception:
    return SpecError(where, message)


def _number(where: str, value: Any) -> float:
    """A finite number within ±MAX_ABS_NUMBER (NaN, Infinity and 10^400 are refused
    here, not by an OverflowError in the middle of a run)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _err(where, f"must be a number, not {json.dumps(value)[:40]}")
    if isinstance(value, int):
        if abs(value) > MAX_ABS_NUMBER:
            raise _err(where, f"must be between -{MAX_ABS_NUMBER:g} and {MAX_ABS_NUMBER:g}")
        return float(value)
    if not math.isfinite(value) or abs(value) > MAX_ABS_NUMBER:
        raise _err(where, f"must be a finite number between -{MAX_ABS_NUMBER:g} and "
                          f"{MAX_ABS_NUMBER:g}, not {value!r}")
    return value


def parse_item(obj: Any, where: str) -> Item:
    """One item from its JSON object; ``where`` names the file and line in errors."""
    if not isinstance(obj, dict):
        raise _err(where, "each line must be one JSON object (an item)")
    for name in ("id", "prompt", "kind"):
        if name not in obj:
            raise _err(f"{where}.{name}", "is missing; every item needs id, prompt and kind")
    item_id, prompt, kind = obj["id"], obj["prompt"], obj["kind"]
    if not isinstance(item_id, str | int) or isinstance(item_id, bool) or str(item_id) == "":
        raise _err(f"{where}.id", "must be a non-empty string or integer")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _err(f"{where}.prompt", "must be a non-empty string (the question)")
    if kind not in ITEM_KINDS:
        raise _err(f"{where}.kind", f"{json.dumps(kind)} is not an item kind; use one of {', '.join(ITEM_KINDS)}")
    for key in obj:
        if key not in _COMMON and key not in _KNOWN[kind]:
            allowed = ", ".join(sorted(_COMMON | _KNOWN[kind]))
            raise _err(f"{where}.{key}", f"is not a field of a {kind} item (its fields: {allowed})")
    category = obj.get("category")
    if category is not None and not isinstance(category, str):
        raise _err(f"{where}.category", "must be a string")
    base = {"id": str(item_id), "prompt": prompt, "kind": kind, "category": category}
    if kind == "options":
        options = obj.get("options")
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS) or not all(
            isinstance(o, str) and o.strip() for o in options
        ):
            raise _err(f"{where}.options", "must list 2 to 26 non-empty option texts")
        return Item(**base, options=tuple(options))
    if kind == "likert":
        scale = obj.get("scale")
        if (
            not isinstance(scale, list) or len(scale) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
            or scale[0] >= scale[1]
        ):
            raise _err(f"{where}.scale", "must be [low, high], two whole numbers with low < high (e.g. [1, 5])")
        if scale[1] - scale[0] + 1 > MAX_SCALE_POINTS:
            raise _err(f"{where}.scale", f"has {scale[1] - scale[0] + 1:,} points; a Likert scale "
                       f"lists every point in the prompt, so use at most {MAX_SCALE_POINTS} (e.g. [1, 7])")
        anchors = obj.get("anchors") or {}
        if not isinstance(anchors, dict) or not all(isinstance(v, str) for v in anchors.values()):
            raise _err(f"{where}.anchors", 'must map scale points to words, e.g. {"1": "Dislike"}')
        for point in anchors:
            if not (str(point).lstrip("-").isdigit() and scale[0] <= int(point) <= scale[1]):
                raise _err(f"{where}.anchors", f"{point!r} is not a point of the scale {scale[0]}..{scale[1]}")
        return Item(**base, scale=(scale[0], scale[1]), anchors={str(k): v for k, v in anchors.items()})
    if kind == "number":
        lo = _number(f"{where}.min", obj["min"]) if "min" in obj else None
        hi = _number(f"{where}.max", obj["max"]) if "max" in obj else None
        step = _number(f"{where}.step", obj["step"]) if "step" in obj else None
        if lo is not None and hi is not None and lo >= hi:
            raise _err(f"{where}.max", "must be larger than min")
        if step is not None and step < MIN_STEP:
            raise _err(f"{where}.step", f"must be at least {MIN_STEP:g}")
        if step is not None and lo is not None and hi is not None and (hi - lo) / step > MAX_STEPS:
            raise _err(f"{where}.step", f"makes {(hi - lo) / step:,.0f} steps from min to max; use a "
                       f"larger step (at most {MAX_STEPS:,} steps)")
        return Item(**base, minimum=lo, maximum=hi, step=step)
    if kind == "mixed":
        actions = obj.get("actions")
        if not isinstance(actions, list) or len(actions) < 2 or not all(
            isinstance(a, str) and re.fullmatch(r"[A-Za-z0-9_]+", a) for a in actions
        ) or len(set(actions)) != len(actions):
            raise _err(f"{where}.actions", "must list at least two distinct action names (letters, digits, _)")
        return Item(**base, actions=tuple(actions))
    return Item(**base)


def load_items(path: Path | str) -> list[Item]:
    """Every item of a JSONL file, checked; empty lines and ``#`` comment lines skipped."""
    path = Path(path)
    try:
        raw = read_regular(path, limit=MAX_ITEM_FILE_BYTES)
    except InputTooLarge:
        size = path.stat().st_size
        raise _err("benchmark", f"{path} is {size / 2**20:.1f} MiB; an item file may hold at most "
                   f"{MAX_ITEM_FILE_BYTES // 2**20} MiB ({MAX_ITEMS:,} items): split it") from None
    except OSError as exc:
        raise _err("benchmark", f"cannot read {path} ({exc.strerror}); give a JSONL item file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _err(f"{path.name}:{line}", f"is not UTF-8 (byte {exc.start:,} of {path}); save the "
                   "file as UTF-8") from None
    return check_items(_lines(text, path.name), path.name)


def _lines(text: str, name: str) -> Iterable[tuple[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{name}:{number}"
        try:
            yield where, json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _err(where, f"is not valid JSON ({exc.msg} at column {exc.colno})") from None


def check_items(rows: Iterable[tuple[str, Any]], name: str) -> list[Item]:
    items: list[Item] = []
    seen: dict[str, str] = {}
    for where, obj in rows:
        if len(items) >= MAX_ITEMS:
            raise _err("benchmark", f"{name} has more than {MAX_ITEMS:,} items; split it")
        item = parse_item(obj, where)
        if item.id in seen:
            raise _err(f"{where}.id", f"{item.id!r} is already used at {seen[item.id]}; ids must be unique")
        seen[item.id] = where
        items.append(item)
    if not items:
        raise _err("benchmark", f"{name} has no items")
    metric_of(items, name)  # one comparable metric for the whole benchmark
    return items


def metric_of(items: Sequence[Item], name: str = "benchmark") -> str:
    """Which exogenous metric compares two agents' answers on these items: ``qwk``
    (all Likert on one scale), ``jsd`` (all mixed) or ``agreement`` (the rest)."""
    kinds = {i.kind for i in items}
    if kinds == {"likert"}:
        scales = {i.scale for i in items}
        if len(scales) > 1:
            raise _err("benchmark", f"{name}: Likert items use several scales {sorted(scales)}; "
                       "quadratic weighted kappa needs one scale per benchmark")
        return "qwk"
    if "mixed" in kinds:
        if kinds != {"mixed"}:
            raise _err("benchmark", f"{name}: mixed-strategy items cannot share a benchmark with "
                       f"{', '.join(sorted(kinds - {'mixed'}))} items; put them in their own file")
        return "jsd"
    if "likert" in kinds:
        raise _err("benchmark", f"{name}: Likert items cannot share a benchmark with "
                   f"{', '.join(sorted(kinds - {'likert'}))} items; put them in their own file")
    return "agreement"


def normalise_text(value: str) -> str:
    """Free-text answers are equal when they match ignoring case, spaces and punctuation."""
    return re.sub(r"[\W_]+", " ", value.casefold()).strip()
