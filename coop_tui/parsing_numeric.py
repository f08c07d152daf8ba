"""Parsing of the numeric answer kinds: ``number`` (one value) and ``allocation`` (a vector).

The strategic personalities paper's games ask for an offer, a bid, a guess or a split of soldiers. Real model output
carries the value in many shapes: a JSON object, an ``<answer>`` tag, "OFFER: 40", a code
fence, or prose ("I'll offer $40."). The parser looks for the explicit shapes first and
only then for a lone number in the last sentence, so a reasoning text full of numbers is
rejected with a reason (and re-asked) instead of guessed. Every accepted value is checked
against the range, the step and (allocations) the required sum; the reason names what to fix.

Options (``DecisionRequest.options``):

- number: ``name`` (the JSON key, e.g. "offer"), ``min``, ``max``, ``step`` (default 1).
- allocation: ``keys`` (one per entry, e.g. ["B1", "B2", "B3"]), ``min``, ``max``, ``step``,
  ``total`` (the sum the entries must have; absent: no sum constraint).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+"
_NUMBER_RE = re.compile(rf"(?<![\w.])\$?\s?({NUMBER})(?!\w)")
_TAG_RE = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
_FENCE_RE = re.compile(r"```(?:json|text)?\s*(.*?)```", re.DOTALL)
_OBJECT_RE = re.compile(r"\{[^{}]*\}", re.DOTALL)


class NumericParseError(ValueError):
    """The answer has no usable value; ``reason`` says what to fix (shown on the re-ask)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _to_float(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw) if math.isfinite(float(raw)) else None
    if isinstance(raw, str):
        m = re.fullmatch(rf"\s*\$?\s*({NUMBER})\s*%?\s*(?:points?|tokens?|soldiers?)?\s*\.?\s*", raw)
        if m:
            return float(m.group(1).replace(",", ""))
    return None


def _objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in the text, last first (fenced ones and bare ones)."""
    found = []
    for chunk in [*_FENCE_RE.findall(text), text]:
        for raw in _OBJECT_RE.findall(chunk):
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError:
                try:
                    obj = json.loads(raw.replace("'", '"'))
                except json.JSONDecodeError:
                    continue
            if isinstance(obj, dict):
                found.append(obj)
    return found[::-1]


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER_RE.findall(text)]


def _last_sentence(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    parts = [p for p in re.split(r"(?<=[.!?])\s+(?=[A-Z*])", lines[-1]) if p.strip()]
    return parts[-1] if parts else lines[-1]


def _fmt(x: float) -> str:
    return f"{x:g}"


def check_value(value: float, options: Mapping[str, Any], what: str) -> int | float:
    """The value on the option's grid, or NumericParseError naming the bound or the step."""
    lo, hi = options.get("min"), options.get("max")
    step = float(options.get("step", 1) or 1)
    if lo is not None and value < float(lo) - 1e-9:
        raise NumericParseError(f"{what} {_fmt(value)} is below the minimum {_fmt(float(lo))}")
    if hi is not None and value > float(hi) + 1e-9:
        raise NumericParseError(f"{what} {_fmt(value)} is above the maximum {_fmt(float(hi))}")
    if options.get("decimals"):  # the strategic personalities paper's protocol: any value within the bounds
        return int(value) if float(value).is_integer() else float(value)
    base = float(lo) if lo is not None else 0.0
    steps = (value - base) / step
    if abs(steps - round(steps)) > 1e-6:
        raise NumericParseError(
            f"{what} {_fmt(value)} is not allowed: values go in steps of {_fmt(step)}"
            f" from {_fmt(base)}"
        )
    snapped = base + round(steps) * step
    return int(round(snapped)) if float(step).is_integer() and float(base).is_integer() else snapped


def parse_number(text: str, options: Mapping[str, Any]) -> tuple[int | float, str | None]:
    """One value in ``[min, max]`` on the step grid; returns (value, note on the form used)."""
    name = str(options.get("name", "value"))
    keys = {name.lower(), "value", "answer", "amount", "number"}
    candidates: list[tuple[float, str]] = []
    for tag in _TAG_RE.findall(text)[::-1]:
        v = _to_float(tag)
        if v is not None:
            candidates.append((v, "from the <answer> tag"))
            break
    if not candidates:
        for obj in _objects(text):
            hits = [(k, v) for k, v in obj.items() if str(k).lower() in keys]
            if len(obj) == 1 and not hits:
                hits = list(obj.items())
            for _, raw in hits:
                v = _to_float(raw)
                if v is not None:
                    candidates.append((v, None))
                    break
            if candidates:
                break
    if not candidates:
        label = re.compile(
            rf"(?:{re.escape(name)}|answer|final answer)\s*[:=]\s*\**\s*\$?({NUMBER})", re.IGNORECASE
        )
        found = label.findall(text)
        if found:
            candidates.append((float(found[-1].replace(",", "")), "from a labelled line"))
    if not candidates:
        stripped = text.strip().strip("`*").strip()
        v = _to_float(stripped)
        if v is not None:
            candidates.append((v, None))
    if not candidates:
        last = _numbers(_last_sentence(text))
        if len(set(last)) == 1:
            candidates.append((last[0], "read from the last sentence"))
        elif last:
            raise NumericParseError(
                f"the last sentence names several numbers ({', '.join(_fmt(x) for x in last)}); "
                + _how_to_end(name, options)
            )
    if not candidates:
        raise NumericParseError(f"no {name} found; " + _how_to_end(name, options))
    value, note = candidates[0]
    return check_value(value, options, name), note


def _how_to_end(name: str, options: Mapping[str, Any]) -> str:
    """How a reply should end: in the form the answer was asked for (``<answer>`` tags
    under a protocol that asks for them, else a JSON object)."""
    if options.get("form") == "tag":
        return "end with the number in <answer> tags"
    return f'end with one JSON object such as {{"{name}": <number>}}'


def parse_allocation(text: str, options: Mapping[str, Any]) -> tuple[dict[str, int | float], str | None]:
    """A value per key, each in range and on the grid, summing to ``total`` when given."""
    keys: Sequence[str] = list(options.get("keys") or [])
    if not keys:
        raise ValueError("an allocation answer needs options['keys']")
    values: list[float] | None = None
    note = None
    lowered = {k.lower(): k for k in keys}
    for obj in _objects(text):
        got = {lowered.get(str(k).strip().lower()): v for k, v in obj.items()}
        if None in got or set(got) != set(keys):
            missing = [k for k in keys if k not in got]
            extra = [k for k, v in obj.items() if str(k).strip().lower() not in lowered]
            if len(obj) >= len(keys) // 2 + 1 and (missing or extra):
                raise NumericParseError(
                    f"use exactly the keys {', '.join(keys)}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; unknown {', '.join(map(str, extra))}" if extra else "")
                )
            continue
        parsed = [_to_float(got[k]) for k in keys]
        if any(v is None for v in parsed):
            bad = [k for k, v in zip(keys, parsed, strict=True) if v is None]
            raise NumericParseError(f"{', '.join(bad)} must be numbers")
        values = [float(v) for v in parsed]  # type: ignore[arg-type]
        break
    if values is None:
        source = None
        tags = _TAG_RE.findall(text)
        if tags:
            source, note = tags[-1], "from the <answer> tag"
        else:
            last = _last_sentence(text)
            if len(_numbers(last)) == len(keys):
                source, note = last, "read from the last sentence"
        if source is not None:
            nums = _numbers(source)
            if len(nums) != len(keys):
                raise NumericParseError(f"give exactly {len(keys)} numbers ({', '.join(keys)}), got {len(nums)}")
            values = nums
    if values is None:
        if options.get("form") == "tag":
            raise NumericParseError(f"no allocation found; end with the numbers for "
                                    f"{', '.join(keys)} in <answer> tags, separated by commas")
        example = json.dumps({k: "<n>" for k in keys}).replace('"<n>"', "<number>")
        raise NumericParseError(f"no allocation found; end with one JSON object such as {example}")
    checked = {k: check_value(v, options, k) for k, v in zip(keys, values, strict=True)}
    total = options.get("total")
    if total is not None and abs(sum(checked.values()) - float(total)) > 1e-6:
        raise NumericParseError(
            f"the entries add up to {_fmt(sum(checked.values()))}, they must add up to exactly "
            f"{_fmt(float(total))}"
        )
    return checked, note


__all__ = ["NumericParseError", "check_value", "parse_allocation", "parse_number"]
