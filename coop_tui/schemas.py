"""JSON schemas of valid answers, one per answer kind.

They serve grammar-constrained decoding (llama.cpp turns a schema into a grammar), so
they stay inside the subset it handles well: objects with ``properties``, ``required``
and ``additionalProperties: false``, integers with bounds, booleans and string enums.
A schema describes exactly what :mod:`coop_tui.parsing` accepts without any repair,
except what a schema cannot say (a mixed strategy's percentages adding up to 100).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["answer_schema"]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _integer(lo: int | None, hi: int | None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    return schema


def answer_schema(
    kind: str, labels: Sequence[str] = (), options: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The schema of a valid answer of ``kind``; None for free text (no constraint).

    A play answer asked with the ``ask_leave`` option (seed 004's move and keep-playing
    choice in one answer) has a boolean ``leave`` after the move's own keys."""
    opts: Mapping[str, Any] = options or {}
    if opts.get("ask_leave") and kind in ("mixed", "choice"):
        plain = answer_schema(kind, labels, {k: v for k, v in opts.items() if k != "ask_leave"})
        assert plain is not None
        plain["properties"]["leave"] = {"type": "boolean"}
        plain["required"] = list(plain["properties"])
        return plain
    if kind == "mixed":
        return _object({label: _integer(0, 100) for label in labels})
    if kind == "choice":
        return _object({"choice": {"type": "string", "enum": list(labels)}})
    if kind == "approvals":
        return _object({label: {"type": "boolean"} for label in labels})
    if kind == "sign":
        return _object({"sign": {"type": "boolean"}})
    if kind == "score":
        return _object({"score": _integer(int(opts.get("min", 0)), int(opts.get("max", 100)))})
    if kind == "text":
        return None
    if kind == "mediator":
        if "n_players" not in opts:
            raise ValueError("a mediator schema needs options['n_players']")
        action = {"type": "string", "enum": list(labels)}
        return _object({str(k): dict(action) for k in range(1, int(opts["n_players"]) + 1)})
    if kind == "contract":
        bound = opts.get("max_abs")
        limit = None if bound is None else int(bound)
        return _object(
            {label: _integer(None if limit is None else -limit, limit) for label in labels}
        )
    if kind == "number":
        return _object({str(opts.get("name", "value")): _grid(opts)})
    if kind == "allocation":
        return _object({str(key): _grid(opts) for key in opts.get("keys") or ()})
    if kind == "judgement" and opts.get("shape") == "types":  # CoopEval's judge protocol
        names = opts.get("names") or {}
        return _object({
            "reasoning": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "types": {"type": "array", "items": {"type": "string", "enum": [
                names.get(label, label) for label in labels]}},
        })
    if kind == "judgement":  # a reasoning judge: a confidence per rubric category
        return _object({label: {"type": "number", "minimum": 0, "maximum": 1} for label in labels})
    raise ValueError(f"unknown answer kind {kind!r}")


def _grid(opts: Mapping[str, Any]) -> dict[str, Any]:
    """One numeric value of a number/allocation answer: an integer range when the grid
    is whole numbers from a whole minimum, else the explicit list of allowed values."""
    lo, hi, step = opts.get("min"), opts.get("max"), float(opts.get("step", 1) or 1)
    whole = step == 1 and (lo is None or float(lo).is_integer())
    if whole or lo is None or hi is None:
        return _integer(None if lo is None else int(lo), None if hi is None else int(hi))
    count = int(round((float(hi) - float(lo)) / step)) + 1
    values = [float(lo) + i * step for i in range(count)]
    return {"enum": [int(v) if v.is_integer() else round(v, 10) for v in values]}
