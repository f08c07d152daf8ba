"""JSON schemas of valid answers, one per answer kind.

They serve grammar-constrained decoding (llama.cpp turns a schema into a grammar), so
they stay inside the subset it handles well: objects with ``properties``, ``required``
and ``additionalProperties: false``, integers with bounds, booleans and string enums.
A schema describes exactly what :mod:`coop_tui.parsing` accepts without any repair,
except what a schema cannot say (a mixed strategy's percentages adding up to 100).

The llama.cpp grammars for the same shapes live here too (one place: the embedded model,
remote constrained answers and the judge all use them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "FINAL_ANSWER_PROMPT",
    "FINAL_TAG_PROMPT",
    "MAX_ALLOCATION_ALTERNATIVES",
    "MAX_ENUMERATED_RANGE",
    "allocation_gbnf",
    "answer_budget",
    "answer_grammar",
    "answer_schema",
    "choice_gbnf",
    "example_answer",
    "example_for",
    "grammar_schema",
    "judgement_gbnf",
    "judgement_types_gbnf",
    "mixed_gbnf",
    "tag_gbnf",
]


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

    A play answer asked with the ``ask_leave`` option (the super-additive cooperation paper's move and keep-playing
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
        return _talk_schema(opts) if opts.get("talk") else None
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
        one = "|".join(re.escape(names.get(label, label)) for label in labels)
        return _object({  # CoopEval's keys; the types as one string, names and commas
            "Reasoning_behind_classification": {"type": "string"},
            "Confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "justification_type": {"type": "string",
                                   "pattern": f"^(?:(?:{one})(?:, (?:{one}))*)?$"},
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


# --------------------------------------------------------------------------- examples
# The example answer a phase's instructions show (placeholders, never advice).


def example_answer(labels: Sequence[str]) -> str:
    return json.dumps({label: "<INT>" for label in labels}).replace('"<INT>"', "<INT>")


def example_for(kind: str, labels: Sequence[str], options: dict[str, Any]) -> str:
    """The example answer shown in a phase's instructions (placeholders, not advice)."""
    if kind == "mediator":
        n = int(options.get("n_players", 2))
        return json.dumps({str(k): "<ACTION>" for k in range(1, n + 1)})
    if kind == "approvals":
        return json.dumps({label: "<true/false>" for label in labels}).replace('"<true/false>"', "<true/false>")
    if kind == "sign":
        return '{"sign": <true/false>}'
    if kind == "mixed" and options.get("ask_leave"):
        return _with_leave(example_answer(labels))
    if kind in ("contract", "mixed"):
        return example_answer(labels)
    if kind == "number":
        return json.dumps({str(options.get("name", "value")): "<NUMBER>"}).replace('"<NUMBER>"', "<number>")
    if kind == "allocation":
        keys = options.get("keys") or ()
        return json.dumps({str(k): "<NUMBER>" for k in keys}).replace('"<NUMBER>"', "<number>")
    if kind == "choice":
        shown = json.dumps({"choice": "<" + " or ".join(labels) + ">"})
        return _with_leave(shown) if options.get("ask_leave") else shown
    if kind == "text" and options.get("talk") == "private":
        return '{"to": <player number>, "message": "<your message>"}'
    if kind == "text" and options.get("talk"):
        return '{"message": "<your message>"}'
    return ""


def _with_leave(example: str) -> str:
    """An example answer object with the super-additive cooperation paper's ``leave`` after the move's keys."""
    return example[:-1] + ', "leave": <true/false>}'


# --------------------------------------------------------------------------- grammars
# llama.cpp grammars (GBNF) for the same answer shapes: the embedded model decodes under them,
# a remote llama.cpp server receives them, and the judge's answers use the judgement ones.

FINAL_ANSWER_PROMPT = "Now give only your final answer, as a JSON object, with no explanation."
"""The answer step's request; the grammar, not this wording, guarantees the shape."""
FINAL_TAG_PROMPT = "Now give only your final answer, in <answer> tags, with no explanation."
"""The answer step's request when the answer was asked for in ``<answer>`` tags."""


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


def mixed_gbnf(labels: tuple[str, ...], *, leave: bool = False) -> str:
    """Grammar of a mixed answer: every label once, in order, an integer 0..100 each, and
    at least one of them positive (then ``"leave": true|false`` when ``leave``: seed
    004's move and keep-playing choice in one answer).

    All zeros is the one integer answer the parser must reject (nothing to normalise), so
    the grammar rules it out: rule ``z<i>`` is "no positive value yet", ``a<i>`` "one
    seen"; the last label is forced positive only on the ``z`` path. Sums other than 100
    stay possible on purpose: the parser normalises them and records it.
    """
    n = len(labels)
    if n == 0:
        raise ValueError("a mixed answer needs at least one label")
    lines = ['root ::= "{" space z0 ' + ("leave " if leave else "") + '"}" space']
    if leave:
        lines.append(_LEAVE_RULE)
    for i, label in enumerate(labels):
        key = f'{_gbnf_literal(json.dumps(label))} space ":" space'
        if i == n - 1:
            lines.append(f"z{i} ::= {key} pos")
            lines.append(f"a{i} ::= {key} pct")
        else:
            sep = '"," space'
            lines.append(f"z{i} ::= {key} zero {sep} z{i + 1} | {key} pos {sep} a{i + 1}")
            if i > 0:  # a<i> is reached from label i-1 on, never for the first label
                lines.append(f"a{i} ::= {key} pct {sep} a{i + 1}")
    lines += [
        'zero ::= "0" space',
        'pos ::= ([1-9] [0-9]? | "100") space',
        'pct ::= ("0" | [1-9] [0-9]? | "100") space',
        'space ::= " "?',
    ]
    return "\n".join(lines) + "\n"


_LEAVE_RULE = 'leave ::= "," space ' + '"\\"leave\\"" space ":" space ("true" | "false") space'
"""The ``, "leave": true|false`` tail of a combined move-and-leave answer."""


def choice_gbnf(labels: tuple[str, ...], *, leave: bool = False) -> str:
    """Grammar of a choice answer: ``{"choice": "<label>"}`` with one of the labels
    (and ``"leave": true|false`` after it when ``leave``)."""
    if not labels:
        raise ValueError("a choice answer needs at least one label")
    options = " | ".join(_gbnf_literal(json.dumps(label)) for label in labels)
    key = _gbnf_literal(json.dumps("choice"))
    tail = " leave" if leave else ""
    return (
        f'root ::= "{{" space {key} space ":" space ( {options} ) space{tail} "}}" space\n'
        + (_LEAVE_RULE + "\n" if leave else "")
        + 'space ::= " "?\n'
    )


def tag_gbnf(kind: str, labels: tuple[str, ...], options: dict[str, Any]) -> str | None:
    """Grammar of an answer in ``<answer>`` tags (a protocol's ``{"form": "tag"}``): a choice as
    ``<answer>Option J</answer>`` (``<answer>accept</answer>`` when ``options["words"]``), a whole-number move as ``<answer>40</answer>`` within its
    range, a whole-number split as ``<answer>40, 30, 30</answer>``; None for the other
    kinds and grids (they keep the JSON grammar, which the parser reads as well)."""
    if kind == "choice" and labels:
        alternatives = " | ".join(_gbnf_literal(label) for label in labels)
        lead = "" if options.get("words") else "Option "  # a word answer: <answer>accept</answer>
        return f'root ::= "<answer>{lead}" ( {alternatives} ) "</answer>"\n'
    if kind == "allocation":
        return _allocation_tag_gbnf(options)
    if kind != "number":
        return None
    lo, hi, step = options.get("min"), options.get("max"), float(options.get("step", 1) or 1)
    if lo is None or hi is None or step != 1 or not float(lo).is_integer():
        return None
    low, high = int(lo), int(float(hi))
    if not 0 <= high - low <= MAX_ENUMERATED_RANGE:
        return None
    values = " | ".join(f'"{v}"' for v in range(low, high + 1))
    return f'root ::= "<answer>" ( {values} ) "</answer>"\n'


def _allocation_tag_gbnf(options: dict[str, Any]) -> str | None:
    """A whole-number split in ``<answer>`` tags, the values in key order separated by
    commas: adding up to the total when there is one (Blotto), else each value free
    within the range (demands on two issues). None off a whole-number grid."""
    keys = tuple(options.get("keys") or ())
    lo, hi = options.get("min"), options.get("max")
    if not keys or lo is None or hi is None or float(options.get("step", 1) or 1) != 1:
        return None
    if not (float(lo).is_integer() and float(hi).is_integer()):
        return None
    low, high = int(lo), int(hi)
    if options.get("total") is not None:
        return allocation_gbnf(keys, int(options["total"]), low, high, tag=True)
    if not 0 <= high - low <= MAX_ENUMERATED_RANGE:
        return None
    values = " | ".join(f'"{v}"' for v in range(low, high + 1))
    entries = ' ", " '.join(["value"] * len(keys))
    return f'root ::= "<answer>" {entries} "</answer>"\nvalue ::= {values}\n'


MAX_ALLOCATION_ALTERNATIVES = 20000
"""An allocation grammar spells out every split; above this many it falls back to the schema."""


def allocation_gbnf(keys: tuple[str, ...], total: int, lo: int, hi: int, *,
                    tag: bool = False) -> str | None:
    """Grammar of an allocation whose whole-number entries add up to exactly ``total``:
    a JSON object, or with ``tag`` the values alone in key order, separated by commas,
    in ``<answer>`` tags (``<answer>40, 30, 30</answer>``, the strategic personalities
    protocol's form).

    Rule ``f<i>-<r>`` is "entries i.. still to write, r still to give": each entry offers
    only the values that leave a feasible rest, and the last entry is forced to the rest
    (GBNF rule names take letters, digits and hyphens only). None when no split reaches
    the total or there are too many splits to spell out; the parser checks the sum anyway.
    """
    k = len(keys)
    if k == 0 or total < k * lo or total > k * hi:
        return None
    if (total + 1) ** max(1, k - 1) > MAX_ALLOCATION_ALTERNATIVES:
        return None
    lines = [f'root ::= "<answer>" f0-{total} "</answer>"' if tag
             else f'root ::= "{{" space f0-{total} "}}" space']
    todo, seen = [(0, total)], set()
    while todo:
        i, r = todo.pop()
        if (i, r) in seen:
            continue
        seen.add((i, r))
        key = "" if tag else f'{_gbnf_literal(json.dumps(keys[i]))} space ":" space'
        left = k - 1 - i
        if left == 0:
            lines.append(f'f{i}-{r} ::= {key} "{r}"' + ("" if tag else " space"))
            continue
        alts = []
        for v in range(lo, min(hi, r) + 1):
            rest = r - v
            if left * lo <= rest <= left * hi:
                sep = '", "' if tag else 'space "," space'
                alts.append(f'"{v}" {sep} f{i + 1}-{rest}')
                todo.append((i + 1, rest))
        lines.append(f"f{i}-{r} ::= {key} ({' | '.join(alts)})")
    lines.append('space ::= " "?')
    return "\n".join(lines) + "\n"


def _talk_schema(opts: Mapping[str, Any]) -> dict[str, Any]:
    """A talk message (``options["talk"]``): the text, bounded by ``talk_chars`` (the
    grammar's cap for a constrained model), and for a private message the recipient."""
    message: dict[str, Any] = {"type": "string", "minLength": 1}
    if opts.get("chars") is not None:
        message["maxLength"] = int(opts["chars"])
    props: dict[str, Any] = {}
    if opts.get("talk") == "private":
        props["to"] = {"enum": [int(x) for x in opts.get("to") or ()]}
    props["message"] = message
    return _object(props)


def answer_grammar(
    kind: str, labels: tuple[str, ...], schema: dict[str, Any],
    options: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """Which grammar constrains an answer: the dedicated mixed grammar when the schema is
    the standard percentages-per-label one, an exact-sum grammar for an allocation with a
    total (Blotto), else the (range-aware) JSON schema."""
    opts = options or {}
    if opts.get("form") == "tag" and (tagged := tag_gbnf(kind, labels, opts)) is not None:
        return "gbnf", tagged
    if kind == "allocation" and opts.get("total") is not None and float(opts.get("step", 1)) == 1:
        gbnf = allocation_gbnf(tuple(opts.get("keys") or ()), int(opts["total"]),
                               int(opts.get("min", 0)), int(opts.get("max", opts["total"])))
        if gbnf is not None:
            return "gbnf", gbnf

    leave = bool(opts.get("ask_leave"))
    plain = {"ask_leave": True} if leave else {}
    if kind == "mixed" and labels and schema == answer_schema("mixed", labels, plain):
        return "gbnf", mixed_gbnf(labels, leave=leave)
    if kind == "choice" and labels and schema == answer_schema("choice", labels, plain):
        return "gbnf", choice_gbnf(labels, leave=leave)
    if kind == "judgement" and labels and opts.get("shape") == "types":
        names = opts.get("names") or {}
        return "gbnf", judgement_types_gbnf(tuple(names.get(x, x) for x in labels))
    if kind == "judgement" and labels:  # number ranges are beyond the schema converter
        return "gbnf", judgement_gbnf(labels)
    return "schema", json.dumps(grammar_schema(schema))  # key order kept: label order


MAX_ENUMERATED_RANGE = 1000
"""Bounded integer ranges up to this size become an explicit list of allowed values."""


def grammar_schema(schema: Any) -> Any:
    """The schema as llama.cpp's converter should see it.

    llama-cpp-python's JSON-schema-to-grammar port ignores ``minimum`` / ``maximum``, so a
    constrained percentage could still come out as 250 or -3. A bounded integer is
    rewritten as an ``enum`` of its values, which the converter does turn into a grammar.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if (
        schema.get("type") == "integer"
        and isinstance(lo, int)
        and isinstance(hi, int)
        and 0 <= hi - lo <= MAX_ENUMERATED_RANGE
    ):
        return {"enum": list(range(lo, hi + 1))}
    return {key: grammar_schema(value) for key, value in schema.items()}


def answer_budget(schema: dict[str, Any]) -> int:
    """Tokens for the constrained answer: room for every property, keys and whitespace."""
    props = schema.get("properties") or {}
    # a bounded string (a talk message) needs room for its text: a token is 2+ characters
    text = sum(int(p.get("maxLength", 0)) // 2 for p in props.values() if isinstance(p, dict))
    return min(64 + 16 * (len(props) or 1) + text, 1024)


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


def judgement_types_gbnf(names: tuple[str, ...]) -> str:
    """Grammar of a ``coopeval`` judgement for the embedded model, in CoopEval's keys: a
    short reasoning, one confidence (0, 1, 0.x or 0.xx) and the type names as one string
    separated by commas, at most as many as there are categories (a small model would
    otherwise repeat names until it runs out of tokens)."""
    if not names:
        raise ValueError("a judgement needs at least one category")
    alts = " | ".join(json.dumps(json.dumps(n)[1:-1]) for n in names)
    more = len(names) - 1
    return (
        'root ::= "{" space "\\"Reasoning_behind_classification\\"" space ":" space text "," space '
        '"\\"Confidence\\"" space ":" space conf "," space '
        '"\\"justification_type\\"" space ":" space "\\"" (type (", " type){0,' + str(more) + '})? '
        '"\\"" space "}" space\n'
        'text ::= "\\"" [^"\\\\\\n]{0,160} "\\"" space\n'
        f"type ::= ({alts})\n"
        'conf ::= ("0" ("." [0-9] [0-9]?)? | "1" (".0")?) space\n'
        'space ::= " "?\n'
    )
