"""Turn a model's free-form reply into a typed answer, or say exactly why we cannot.

Real replies wrap the answer in prose, code fences, LaTeX and restated examples, and
they bend the format (floats, fractions, sums of 99, a forgotten key). The parser is
tolerant of all of that but never guesses silently: every accepted answer carries a
note listing each repair it needed, and everything else raises :class:`ParseError`
whose ``reason`` is a short sentence the engine sends back to the model in a re-ask.

How the answer is found: every balanced ``{...}`` span in the text (string-aware, so
braces inside JSON strings do not count) is read with :mod:`json`; a span that fails is
retried with a few lexical relaxations (single quotes, trailing commas, bare keys,
Python literals, ``%`` after numbers), each recorded in the note, and if it still fails
its inner spans are tried. Of all objects found (nested ones included) the last one that
carries answer keys is used, so a final answer wins over examples and drafts earlier in
the reasoning.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coop_tui.parsing_numeric import NumericParseError, parse_allocation, parse_number

__all__ = [
    "CHOICE_KEY",
    "MixedStrategy",
    "ParseError",
    "parse_answer",
    "parse_leave",
    "parse_mixed_strategy",
]

_EPS = 1e-6
_FRACTION_TOLERANCE = 0.02


class ParseError(ValueError):
    """A reply that cannot be used; ``reason`` is sent back to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class MixedStrategy:
    """A parsed mixed strategy over the action labels, in the order they were asked."""

    probabilities: tuple[float, ...]
    """One probability per label, summing to 1."""
    percentages: tuple[float, ...]
    """The values as given, on the percentage scale (fractions times 100), before any
    normalisation; a missing key counts as 0."""
    note: str | None
    """Every repair applied, ``"; "``-separated; None when the answer was clean."""
    source: str
    """The JSON snippet the answer was read from."""


# --------------------------------------------------------------------------- scanning


class _Obj(dict):  # type: ignore[type-arg]
    """A decoded JSON object that remembers keys written more than once."""

    duplicates: tuple[str, ...] = ()


def _object_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    dups: list[str] = []
    for key, value in pairs:
        if key in obj:
            dups.append(key)
        obj[key] = value
    obj.duplicates = tuple(dups)
    return obj


def _string_can_start(text: str, i: int, lo: int) -> bool:
    """A single quote opens a string only where a JSON value or key could start."""
    j = i - 1
    while j >= lo and text[j] in " \t\r\n":
        j -= 1
    return j >= lo and text[j] in "{[,:"


def _match_brace(text: str, open_at: int, end: int, memo: dict[int, int | None]) -> int | None:
    """Index of the brace closing the one at ``open_at``, skipping quoted strings.

    Every inner brace met on the way is recorded in ``memo`` (its closing index, or None
    if it never closes before ``end``): a scan started at that inner brace would see the
    same characters in the same state, so the caller need not repeat it. This keeps a
    reply full of stray ``{`` linear instead of quadratic.
    """
    stack: list[int] = []
    quote: str | None = None
    escaped = False
    for j in range(open_at, end):
        ch = text[j]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch == '"' or (ch == "'" and _string_can_start(text, j, open_at)):
            quote = ch
        elif ch == "{":
            stack.append(j)
        elif ch == "}":
            memo[stack.pop()] = j
            if not stack:
                return j
    for j in stack:
        memo[j] = None
    return None


def _balanced_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Outermost balanced ``{...}`` spans in ``text[start:end]``, in order.

    An opening brace that never closes (a stray one in prose) is skipped, so it cannot
    swallow a real answer that follows it.
    """
    spans: list[tuple[int, int]] = []
    memo: dict[int, int | None] = {}
    i = start
    while True:
        i = text.find("{", i, end)
        if i < 0:
            return spans
        close = memo[i] if i in memo else _match_brace(text, i, end, memo)
        if close is None:
            i += 1
            continue
        spans.append((i, close + 1))
        i = close + 1


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_PCT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*%")
_NUMERIC_KEY = re.compile(r"(\d+)[ \t]*:")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _relax(snippet: str) -> tuple[str, list[str]]:
    """Rewrite common non-JSON spellings outside strings; return the text and what changed."""
    out: list[str] = []
    changes: list[str] = []

    def note(what: str) -> None:
        if what not in changes:
            changes.append(what)

    def prev_significant() -> str:
        for piece in reversed(out):
            stripped = piece.rstrip()
            if stripped:
                return stripped[-1]
        return ""

    i, n = 0, len(snippet)
    while i < n:
        ch = snippet[i]
        if ch == '"':
            j, escaped = i + 1, False
            while j < n:
                if escaped:
                    escaped = False
                elif snippet[j] == "\\":
                    escaped = True
                elif snippet[j] == '"':
                    break
                j += 1
            out.append(snippet[i : j + 1])
            i = j + 1
        elif ch == "'" and prev_significant() in ("{", "[", ",", ":"):
            j, buf = i + 1, []
            while j < n and snippet[j] != "'":
                if snippet[j] == "\\" and j + 1 < n:
                    buf.append(snippet[j + 1])
                    j += 2
                    continue
                buf.append(snippet[j])
                j += 1
            out.append(json.dumps("".join(buf)))
            note("single quotes read as double quotes")
            i = j + 1
        elif ch == ",":
            k = i + 1
            while k < n and snippet[k] in " \t\r\n":
                k += 1
            if k < n and snippet[k] in "}]":
                note("trailing comma ignored")
            else:
                out.append(ch)
            i += 1
        elif (m := _NUMERIC_KEY.match(snippet, i)) and prev_significant() in ("{", ","):
            out.append(json.dumps(m.group(1)) + snippet[m.end(1) : m.end()])
            note("unquoted keys read as strings")
            i = m.end()
        elif (m := _NUMBER_PCT.match(snippet, i)) and prev_significant() in (":", "[", ","):
            out.append(m.group(0).rstrip("%").rstrip())
            note("percent signs ignored")
            i = m.end()
        elif m := _IDENT.match(snippet, i):
            word = m.group(0)
            k = m.end()
            while k < n and snippet[k] in " \t":
                k += 1
            if k < n and snippet[k] == ":" and prev_significant() in ("{", ","):
                out.append(json.dumps(word))
                note("unquoted keys read as strings")
            elif word in _PY_LITERALS:
                out.append(_PY_LITERALS[word])
                note("Python literals read as JSON")
            else:
                out.append(word)
            i = m.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out), changes


def _loads(snippet: str) -> tuple[Any, list[str]] | None:
    """Decode a span as JSON, strictly first and relaxed second; None if neither works."""
    try:
        return json.loads(snippet, object_pairs_hook=_object_hook), []
    except ValueError:
        pass
    relaxed, changes = _relax(snippet)
    if not changes:
        return None
    try:
        return json.loads(relaxed, object_pairs_hook=_object_hook), changes
    except ValueError:
        return None


@dataclass(frozen=True)
class _Found:
    """One JSON object found in the reply."""

    obj: _Obj
    source: str
    start: int
    repairs: tuple[str, ...]
    nested_under: str | None


def _walk(
    value: Any,
    source: str,
    start: int,
    repairs: tuple[str, ...],
    path: str | None,
    into: list[_Found],
) -> None:
    if isinstance(value, _Obj):
        into.append(_Found(value, source, start, repairs, path))
        for key, inner in value.items():
            _walk(inner, source, start, repairs, key if path is None else f"{path}.{key}", into)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, source, start, repairs, path, into)


def _objects(text: str, start: int = 0, end: int | None = None) -> list[_Found]:
    """Every JSON object in the text, in reading order (outer objects before inner)."""
    end = len(text) if end is None else end
    found: list[_Found] = []
    for lo, hi in _balanced_spans(text, start, end):
        snippet = text[lo:hi]
        decoded = _loads(snippet)
        if decoded is None:
            found.extend(_objects(text, lo + 1, hi - 1))
        else:
            _walk(decoded[0], snippet, lo, tuple(decoded[1]), None, found)
    return found


def _pick(
    text: str, has_answer_keys: Callable[[_Obj], bool], wanted: str
) -> tuple[_Found, list[str]]:
    """The last object carrying answer keys, with notes on how it was found."""
    if not text or not text.strip():
        raise ParseError("the reply is empty")
    candidates = [f for f in _objects(text) if has_answer_keys(f.obj)]
    if not candidates:
        raise ParseError(f"no JSON object with {wanted} was found")
    chosen = candidates[-1]
    notes: list[str] = []
    if len(candidates) > 1:
        notes.append(f"{len(candidates)} answer objects found, the last one used")
    if chosen.nested_under is not None:
        notes.append(f"answer object found inside key {chosen.nested_under!r}")
    notes.extend(chosen.repairs)
    if chosen.obj.duplicates:
        raise ParseError(f"the key {chosen.obj.duplicates[0]} appears more than once")
    return chosen, notes


# --------------------------------------------------------------------------- values


def _fmt(x: float) -> str:
    """Numbers as a person would write them in a sentence (90, 99.5, 0.97)."""
    if math.isfinite(x) and float(x).is_integer():
        return str(int(x))
    return f"{x:.6g}"


def _norm(key: str) -> str:
    return key.strip().casefold()


def _match_keys(obj: Mapping[str, Any], labels: Sequence[str], notes: list[str]) -> dict[str, Any]:
    """Map the object's keys onto labels, ignoring case and surrounding spaces."""
    by_norm = {_norm(label): label for label in labels}
    matched: dict[str, Any] = {}
    unknown: list[str] = []
    loose: list[str] = []
    for key, value in obj.items():
        label = by_norm.get(_norm(key))
        if label is None:
            unknown.append(key)
            continue
        if label in matched:
            raise ParseError(f"the key {label} appears more than once")
        if key != label:
            loose.append(f"{key!r} as {label}")
        matched[label] = value
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        plural = "keys" if len(unknown) > 1 else "key"
        raise ParseError(f"unknown {plural} {names}; use exactly {', '.join(labels)}")
    if loose:
        notes.append("keys matched ignoring case/spaces: " + ", ".join(loose))
    return matched


_NUMERIC_STRING = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*%?\s*")


def _number(label: str, value: Any, notes: list[str]) -> float:
    """A finite JSON number (numeric strings accepted with a note)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise ParseError(f"the value for {label} is not a number ({json.dumps(value)})")
    if isinstance(value, str):
        m = _NUMERIC_STRING.fullmatch(value)
        if m is None:
            raise ParseError(f"the value for {label} is not a number ({json.dumps(value)})")
        if "numbers given as strings" not in notes:
            notes.append("numbers given as strings")
        return float(m.group(1))
    number = float(value)
    if not math.isfinite(number):
        raise ParseError(f"the value for {label} is not a finite number")
    return number


_BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def _boolean(label: str, value: Any, notes: list[str]) -> bool:
    """A JSON boolean; the strings true/false/yes/no (any case) with a note."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in _BOOL_WORDS:
        if "yes/no strings read as booleans" not in notes:
            notes.append("yes/no strings read as booleans")
        return _BOOL_WORDS[value.strip().casefold()]
    raise ParseError(f"the value for {label} must be true or false, not {json.dumps(value)}")


def _note(notes: list[str]) -> str | None:
    return "; ".join(notes) if notes else None


# --------------------------------------------------------------------------- mixed


def _strict_mixed(found: _Found, labels: tuple[str, ...], notes: list[str]) -> MixedStrategy:
    """CoopEval's rule: valid JSON, exactly the action keys, integers 0..100 summing to
    exactly 100. Anything else is a re-ask, never a repair."""
    if found.repairs:
        raise ParseError(f"the answer is not valid JSON ({'; '.join(found.repairs)})")
    if found.nested_under is not None:
        raise ParseError("the answer object must stand on its own, not inside another object")
    keys = list(found.obj)
    if set(keys) != set(labels):
        raise ParseError(
            f"the keys must be exactly {', '.join(labels)} (got {', '.join(map(str, keys)) or 'none'})"
        )
    values: dict[str, int] = {}
    for label in labels:
        v = found.obj[label]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParseError(f"the value for {label} must be a whole number, not {json.dumps(v)}")
        if not 0 <= v <= 100:
            raise ParseError(f"the value for {label} must lie between 0 and 100, not {v}")
        values[label] = v
    total = sum(values.values())
    if total != 100:
        raise ParseError(f"the values add up to {total}; they must add up to exactly 100")
    percentages = tuple(float(values[label]) for label in labels)
    return MixedStrategy(
        tuple(p / 100 for p in percentages), percentages, _note(notes), found.source
    )


def parse_mixed_strategy(
    text: str, actions: Sequence[str], *, strict: bool = False, with_leave: bool = False
) -> MixedStrategy:
    """Read percentages per action label from a reply; see the module docstring.

    ``strict`` applies CoopEval's answer rule instead of recorded repairs. ``with_leave``:
    the answer object also carries ``leave`` (read by :func:`parse_leave`), so that key is
    no unknown action here.
    """
    labels = tuple(actions)
    if not labels:
        raise ValueError("parse_mixed_strategy needs at least one action label")
    wanted = {_norm(label) for label in labels}
    found, notes = _pick(
        text,
        lambda obj: any(_norm(k) in wanted for k in obj),
        f"the keys {', '.join(labels)}",
    )
    if with_leave:
        found = _without_leave(found)
    if strict:
        kept = [n for n in notes if n.endswith("the last one used")]
        return _strict_mixed(found, labels, kept)
    given = _match_keys(found.obj, labels, notes)
    values = {label: _number(label, v, notes) for label, v in given.items()}
    for label, v in values.items():
        if v < 0:
            raise ParseError(f"the value for {label} is negative ({_fmt(v)})")
    total = sum(values.values())
    written_as_fractions = any(
        isinstance(given[label], float) or not v.is_integer() for label, v in values.items()
    )
    if (
        written_as_fractions
        and all(v <= 1 for v in values.values())
        and abs(total - 1) <= _FRACTION_TOLERANCE
    ):
        values = {label: v * 100 for label, v in values.items()}
        total *= 100
        notes.append("values read as probabilities (they add up to about 1), scaled to percentages")
    elif any(not v.is_integer() for v in values.values()):
        notes.append("non-integer percentages used as given")
    missing = [label for label in labels if label not in values]
    if missing:
        names = ", ".join(missing)
        if abs(total - 100) > _EPS:
            verb = "are" if len(missing) > 1 else "is"
            raise ParseError(
                f"{names} {verb} missing and the other values add up to {_fmt(total)}, not 100"
            )
        notes.append(f"missing keys {names} taken as 0")
    if total <= 0:
        raise ParseError("the percentages add up to 0; at least one action needs a positive value")
    if abs(total - 100) > _EPS:
        notes.append(f"sum {_fmt(total)} normalised to 100")
    percentages = tuple(values.get(label, 0.0) for label in labels)
    probabilities = tuple(p / total for p in percentages)
    return MixedStrategy(probabilities, percentages, _note(notes), found.source)


# --------------------------------------------------------------------------- move + leave

LEAVE_KEY = "leave"


def _without_leave(found: _Found) -> _Found:
    """The answer object minus its ``leave`` key (the move's parser checks the rest)."""
    kept = _Obj({k: v for k, v in found.obj.items() if _norm(k) != LEAVE_KEY})
    kept.duplicates = found.obj.duplicates
    return replace(found, obj=kept)


def parse_leave(kind: str, text: str, labels: Sequence[str]) -> tuple[bool, str | None]:
    """The ``leave`` choice of a combined move-and-leave answer (the super-additive cooperation paper: the move and
    the keep-playing decision in one reply), read from the same object as the move: the
    last one carrying the move's keys (action labels for ``mixed``, ``choice`` for
    ``choice``). A missing or non-boolean ``leave`` raises :class:`ParseError`, so the
    answer is asked again with the reason like any malformed one."""
    wanted = {_norm(label) for label in labels} if kind == "mixed" else {CHOICE_KEY}
    found, notes = _pick(text, lambda obj: any(_norm(k) in wanted for k in obj),
                         f"the keys {', '.join(labels)}" if kind == "mixed" else f'the key "{CHOICE_KEY}"')
    value = [v for k, v in found.obj.items() if _norm(k) == LEAVE_KEY]
    if not value:
        raise ParseError(
            f'the answer needs the key "{LEAVE_KEY}" beside the move: true to leave the match '
            "after this round, false to keep playing"
        )
    return _boolean(LEAVE_KEY, value[0], notes), _note(
        [n for n in notes if n.startswith("yes/no")]
    )


# --------------------------------------------------------------------------- other kinds


def _keyed_answer(
    text: str, labels: Sequence[str], missing_reason: str
) -> tuple[dict[str, Any], list[str]]:
    """The last JSON object keyed by ``labels``, with every label present."""
    wanted = {_norm(label) for label in labels}
    found, notes = _pick(
        text, lambda obj: any(_norm(k) in wanted for k in obj), f"the keys {', '.join(labels)}"
    )
    given = _match_keys(found.obj, labels, notes)
    missing = [label for label in labels if label not in given]
    if missing:
        raise ParseError(f"{missing_reason}; missing: {', '.join(missing)}")
    return given, notes


def _parse_approvals(text: str, labels: Sequence[str]) -> tuple[dict[str, bool], str | None]:
    if not labels:
        raise ValueError("approvals need the proposal ids as labels")
    given, notes = _keyed_answer(text, labels, "every proposal needs true or false")
    return {label: _boolean(label, given[label], notes) for label in labels}, _note(notes)


def _parse_sign(text: str) -> tuple[bool, str | None]:
    found, notes = _pick(text, lambda obj: any(_norm(k) == "sign" for k in obj), 'the key "sign"')
    given = _match_keys(found.obj, ("sign",), notes)
    return _boolean("sign", given["sign"], notes), _note(notes)


_SCORE_LINE = re.compile(
    r"similarity[\s*_]+score[\s*_]*[:=]?[\s*_]*(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+))?",
    re.IGNORECASE,
)


def _parse_score(text: str, options: Mapping[str, Any]) -> tuple[int, str | None]:
    lo = int(options.get("min", 0))
    hi = int(options.get("max", 100))
    if not text or not text.strip():
        raise ParseError("the reply is empty")
    notes: list[str] = []
    hits: list[tuple[int, float | None, int | None, _Found | None]] = []
    for m in _SCORE_LINE.finditer(text):
        out_of = int(m.group(2)) if m.group(2) is not None else None
        hits.append((m.start(), float(m.group(1)), out_of, None))
    for found in _objects(text):
        if any(_norm(k) == "score" for k in found.obj):
            hits.append((found.start, None, None, found))
    if not hits:
        raise ParseError('no "SIMILARITY SCORE: <number>" line was found')
    hits.sort(key=lambda h: h[0])
    _, value, out_of, found = hits[-1]
    if found is not None:
        if found.obj.duplicates:
            raise ParseError(f"the key {found.obj.duplicates[0]} appears more than once")
        notes.extend(found.repairs)
        given = _match_keys(found.obj, ("score",), notes)
        value = _number("score", given["score"], notes)
    if value is None:  # pragma: no cover - every hit carries a value or an object
        raise ParseError('no "SIMILARITY SCORE: <number>" line was found')
    if out_of is not None and out_of != hi:
        raise ParseError(f"give the score on the scale {lo} to {hi}, not out of {out_of}")
    if len(hits) > 1:
        notes.insert(0, f"{len(hits)} scores given, the last one used")
    if options.get("decimals"):  # the similarity signals paper's judges may answer 72.5
        if not lo <= value <= hi:
            raise ParseError(f"the score {_fmt(value)} is outside the range {lo} to {hi}")
        return (int(value) if value.is_integer() else value), _note(notes)  # type: ignore[return-value]
    if not value.is_integer():
        raise ParseError(f"the score must be a whole number from {lo} to {hi}, not {_fmt(value)}")
    score = int(value)
    if not lo <= score <= hi:
        raise ParseError(f"the score {score} is outside the range {lo} to {hi}")
    return score, _note(notes)


def _parse_text(text: str) -> tuple[str, None]:
    stripped = (text or "").strip()
    if not stripped:
        raise ParseError("the reply is empty")
    return stripped, None


TALK_PRIVATE = "private"
"""A talk request whose sender names the recipient (``options["talk"]``)."""


def _parse_talk(text: str, opts: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A talk message (``options["talk"]``): ``{"message": ...}``, with ``"to"`` (a seat
    number of ``options["to"]``) when private. A public reply without the object is taken
    whole, since free text is what was asked for; a private one must name its recipient,
    so it is asked again. A message over ``options["chars"]`` is cut there and the cut is
    the decision's note: the bound holds and the record says it was reached."""
    private = opts.get("talk") == TALK_PRIVATE
    notes: list[str] = []
    try:
        found, notes = _pick(text, lambda obj: "message" in obj, 'a "message" key')
        obj: Mapping[str, Any] = found.obj
    except ParseError:
        if private:
            raise
        obj = {"message": (text or "").strip()}
        notes = []
    message = obj.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ParseError('"message" must be a non-empty string')
    message = message.strip()
    to: int | None = None
    if private:
        allowed = [int(x) for x in opts.get("to") or ()]
        raw = obj.get("to")
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw.strip())
        if isinstance(raw, bool) or not isinstance(raw, int) or raw not in allowed:
            raise ParseError(
                f'"to" must be the number of another player: one of {", ".join(map(str, allowed))}'
            )
        to = raw
    limit = opts.get("chars")
    if limit is not None and len(message) > int(limit):
        notes.append(f"message cut to talk_chars = {int(limit)} characters (it had {len(message)})")
        message = message[: int(limit)]
    return {"message": message, "to": to}, "; ".join(notes) or None


def _parse_mediator(
    text: str, labels: Sequence[str], options: Mapping[str, Any]
) -> tuple[dict[int, str], str | None]:
    if "n_players" not in options:
        raise ValueError("mediator answers need options['n_players']")
    if not labels:
        raise ValueError("mediator answers need the action labels")
    n = int(options["n_players"])
    keys = tuple(str(k) for k in range(1, n + 1))
    found, notes = _pick(
        text,
        lambda obj: any(k.strip().isdigit() for k in obj),
        f"the keys {', '.join(keys)} (number of delegating players)",
    )
    given = _match_keys(found.obj, keys, notes)
    missing = [k for k in keys if k not in given]
    if missing:
        raise ParseError(
            f"an action is needed for every number of delegators; missing: {', '.join(missing)}"
        )
    by_norm = {_norm(label): label for label in labels}
    plan: dict[int, str] = {}
    loose: list[str] = []
    for key in keys:
        value = given[key]
        label = by_norm.get(_norm(value)) if isinstance(value, str) else None
        if label is None:
            raise ParseError(
                f"the action for {key} delegator(s) must be one of {', '.join(labels)}, "
                f"not {json.dumps(value)}"
            )
        if value != label:
            loose.append(f"{value!r} as {label}")
        plan[int(key)] = label
    if loose:
        notes.append("actions matched ignoring case/spaces: " + ", ".join(loose))
    return plan, _note(notes)


def _parse_contract(
    text: str, labels: Sequence[str], options: Mapping[str, Any]
) -> tuple[dict[str, int], str | None]:
    if not labels:
        raise ValueError("contract answers need the action labels")
    given, notes = _keyed_answer(text, labels, "every action needs a payment")
    bound = options.get("max_abs")
    payments: dict[str, int] = {}
    for label in labels:
        value = _number(label, given[label], notes)
        if not value.is_integer():
            raise ParseError(f"the payment for {label} must be a whole number, not {_fmt(value)}")
        if bound is not None and abs(value) > bound:
            raise ParseError(
                f"the payment for {label} is {_fmt(value)}; payments must lie between "
                f"-{_fmt(bound)} and {_fmt(bound)}"
            )
        payments[label] = int(value)
    return payments, _note(notes)


# --------------------------------------------------------------------------- choice

CHOICE_KEY = "choice"
"""The one key of a ``choice`` answer: ``{"choice": "<label>"}``."""

_BARE_LABEL = re.compile(r"[\s*`\"'(\[]*([A-Za-z0-9_]+)[\s*`\"'.)\]]*")
_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
_TAGGED_LABEL = re.compile(r"[\s*`\"'(\[]*(?:option\s+)?([A-Za-z0-9_]+)[\s*`\"'.)\]]*",
                           re.IGNORECASE)


def _tagged_choice(text: str, by_norm: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(label, tag content) from the last ``<answer>`` tag (the strategic personalities paper's form,
    ``<answer>Option J</answer>``); label None when the tag names no action, both None
    without a tag."""
    tags = _ANSWER_TAG.findall(text or "")
    if not tags:
        return None, None
    content = tags[-1]
    found = _TAGGED_LABEL.fullmatch(content)
    if found is not None and _norm(found.group(1)) in by_norm:
        return by_norm[_norm(found.group(1))], content
    return None, content


def _parse_choice(
    text: str, labels: Sequence[str], with_leave: bool = False
) -> tuple[str, str | None]:
    """Exactly one action label, from ``{"choice": "<label>"}`` (the last such object) or
    from the last ``<answer>`` tag (``<answer>Option J</answer>``, the strategic personalities paper's form).

    A reply that is nothing but one label (``A1``, ``"A1".``) is accepted with a note,
    since it cannot mean anything else; everything else is re-asked with the reason.
    """
    if not labels:
        raise ValueError("choice answers need the action labels")
    by_norm = {_norm(label): label for label in labels}
    tagged, tag = _tagged_choice(text, by_norm)
    if tagged is not None:
        return tagged, "from the <answer> tag"
    if tag is not None:
        try:
            return _parse_choice_object(text, labels, by_norm, with_leave)
        except ParseError:
            raise ParseError(
                f"the <answer> tag must hold exactly one option ({_tag_options(labels)}), "
                f"not {json.dumps(tag[:80])}"
            ) from None
    return _parse_choice_object(text, labels, by_norm, with_leave)


_TAGGED_NUMBER = re.compile(r"[\s*`\"'(\[]*(-?\d+(?:\.\d+)?)[\s*`\"'.)\]]*")


def _tagged_counter(text: str, labels: Sequence[str],
                    opts: Mapping[str, Any]) -> tuple[str, str] | None:
    """(label, note) when the request takes a number in place of an option
    (``number_is``: the label a number stands for, such as the responder's counter-demand
    in the strategic personalities paper's alternating offers, which its code asks for as
    "accept" or a number) and the last ``<answer>`` tag holds one number; else None."""
    label = opts.get("number_is")
    if label not in labels:
        return None
    tags = _ANSWER_TAG.findall(text or "")
    found = _TAGGED_NUMBER.fullmatch(tags[-1]) if tags else None
    if found is None:
        return None
    return label, f"the number {found.group(1)} in the <answer> tag, read as {label}"


def _tag_options(labels: Sequence[str]) -> str:
    """The options as a tag names them: letters as "Option J", answer words ("accept")
    alone."""
    return " or ".join(label if label.islower() else f"Option {label}" for label in labels)


def _parse_choice_object(
    text: str, labels: Sequence[str], by_norm: Mapping[str, str], with_leave: bool = False
) -> tuple[str, str | None]:
    stripped = (text or "").strip()
    bare = _BARE_LABEL.fullmatch(stripped) if stripped else None
    if bare is not None and _norm(bare.group(1)) in by_norm:
        label = by_norm[_norm(bare.group(1))]
        return label, "a bare action label, read as the choice"
    found, notes = _pick(
        text, lambda obj: any(_norm(k) == CHOICE_KEY for k in obj), f'the key "{CHOICE_KEY}"'
    )
    if with_leave:
        found = _without_leave(found)
    extra = [k for k in found.obj if _norm(k) != CHOICE_KEY]
    contradicting = [k for k in extra if _norm(k) in by_norm]
    if contradicting:
        names = ", ".join(repr(k) for k in contradicting)
        raise ParseError(
            f'give only the key "{CHOICE_KEY}" with one action as its value, '
            f"not also keys named after actions ({names})"
        )
    if extra:
        notes.append("other keys ignored: " + ", ".join(repr(k) for k in extra))
    given = _match_keys({k: v for k, v in found.obj.items() if k not in extra},
                        (CHOICE_KEY,), notes)
    value = given[CHOICE_KEY]
    if isinstance(value, list):
        raise ParseError(
            f"choose exactly one action ({', '.join(labels)}), not a list {json.dumps(value)}"
        )
    label = by_norm.get(_norm(value)) if isinstance(value, str) else None
    if label is None:
        raise ParseError(
            f"the choice must be one of {', '.join(labels)}, not {json.dumps(value)}"
        )
    if value != label:
        notes.append(f"choice {value!r} matched as {label} ignoring case/spaces")
    return label, _note(notes)


def parse_answer(
    kind: str,
    text: str,
    *,
    labels: Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> tuple[Any, str | None]:
    """Parse a reply of the given answer kind; return (parsed, note) or raise ParseError.

    ``mixed`` returns a :class:`MixedStrategy` (its note is returned too); the other kinds
    return plain values: approvals ``dict[str, bool]``, sign ``bool``, score ``int``,
    text ``str``, mediator ``dict[int, str]``, contract ``dict[str, int]``, choice ``str``
    (the chosen label).
    """
    opts: Mapping[str, Any] = options or {}
    with_leave = bool(opts.get("ask_leave")) and kind in ("mixed", "choice")
    if with_leave:  # a missing or bad "leave" is re-asked like a bad move
        leave_note = parse_leave(kind, text, labels)[1]
        if kind == "mixed":
            strategy = parse_mixed_strategy(text, labels, strict=strict, with_leave=True)
            note = "; ".join(n for n in (strategy.note, leave_note) if n) or None
            return replace(strategy, note=note), note
        parsed, note = _parse_choice(text, labels, with_leave=True)
        note = "; ".join(n for n in (note, leave_note) if n) or None
    elif kind == "mixed":
        strategy = parse_mixed_strategy(text, labels, strict=strict)
        return strategy, strategy.note
    else:
        parsed, note = _parse_other(kind, text, labels, opts)
    if strict and note:
        # Strict answers take no repair: only picking the last of several answer
        # objects is allowed (CoopEval reads the last JSON object too).
        repairs = [n for n in note.split("; ") if not n.endswith("the last one used")]
        if repairs:
            raise ParseError(f"the answer is not in the exact format asked for ({'; '.join(repairs)})")
    return parsed, note


def _parse_other(
    kind: str, text: str, labels: Sequence[str], opts: Mapping[str, Any]
) -> tuple[Any, str | None]:
    if kind == "choice":
        counter = _tagged_counter(text, labels, opts)
        if counter is not None:
            return counter
        try:
            return _parse_choice(text, labels)
        except ParseError:
            if opts.get("form") == "tag" and not _ANSWER_TAG.search(text or ""):
                # asked for in tags: the reason names the tag, not a JSON object
                raise ParseError(f"no <answer> tag with one option ({_tag_options(labels)}) "
                                 "was found") from None
            raise
    if kind == "approvals":
        return _parse_approvals(text, labels)
    if kind == "sign":
        return _parse_sign(text)
    if kind == "score":
        return _parse_score(text, opts)
    if kind == "text":
        if opts.get("talk"):
            return _parse_talk(text, opts)
        return _parse_text(text)
    if kind == "mediator":
        return _parse_mediator(text, labels, opts)
    if kind == "contract":
        return _parse_contract(text, labels, opts)
    if kind in ("number", "allocation"):
        return _parse_numeric(kind, text, opts)
    if kind == "judgement":
        if opts.get("shape") == "types":
            return _parse_judgement_types(text, labels, opts)
        return _parse_judgement(text, labels)
    raise ValueError(f"unknown answer kind {kind!r}")


def _parse_judgement(text: str, labels: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """A judge's answer (see :mod:`coop_tui.judging`): every category id of the rubric
    (``labels``) with a confidence in [0, 1]. Percentages are refused, not rescaled: 1
    could mean 1% or certainty, and guessing would change the labels."""
    if not labels:
        raise ValueError("a judgement needs the rubric's category ids as labels")
    given, notes = _keyed_answer(text, labels, "every category needs a confidence from 0 to 1")
    out: dict[str, float] = {}
    for label in labels:
        value = _number(label, given[label], notes)
        if not 0.0 <= value <= 1.0:
            raise ParseError(
                f"the confidence for {label} is {_fmt(value)}; write a number from 0 to 1 "
                "(for example 0.8, not 80)"
            )
        out[label] = value
    return out, _note(notes)


JUDGEMENT_TYPES_KEYS = ("reasoning", "confidence", "types")
"""A CoopEval-protocol judgement: why, one overall confidence, the justification types."""
COOPEVAL_JUDGEMENT_KEYS = {
    "reasoning_behind_classification": "reasoning",
    "confidence": "confidence",
    "justification_type": "types",
}
"""The keys CoopEval's judge answers with (the ``coopeval`` judge asks for them), read as
ours whatever their case: they are the form asked for, not a repair to note."""


def _coopeval_keys(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with CoopEval's judgement keys renamed to ours (other keys as given)."""
    return {COOPEVAL_JUDGEMENT_KEYS.get(_norm(k), k): v for k, v in obj.items()}


def _parse_judgement_types(
    text: str, labels: Sequence[str], opts: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """A judge's answer under CoopEval's protocol, in its keys: ``{"Reasoning_behind_
    classification": ..., "Confidence": 0.8, "justification_type": "Reciprocity, ..."}``
    (our earlier ``reasoning`` / ``confidence`` / ``types`` are read too). Types are
    matched to the rubric's categories by name or id, ignoring case (``opts["names"]``:
    id -> name); the string is split at commas as CoopEval splits it, a list is read as
    given; nothing listed means none applies. Returns the category ids in rubric order."""
    if not labels:
        raise ValueError("a judgement needs the rubric's category ids as labels")
    names: Mapping[str, str] = opts.get("names") or {}
    wanted = ("types", "confidence", *COOPEVAL_JUDGEMENT_KEYS)
    found, notes = _pick(text, lambda obj: any(_norm(k) in wanted for k in obj),
                         'the keys "Confidence" and "justification_type"')
    given = _match_keys(_coopeval_keys(found.obj), JUDGEMENT_TYPES_KEYS, notes)
    for key in ("confidence", "types"):
        if key not in given:
            shown = "justification_type" if key == "types" else "Confidence"
            raise ParseError(f'the answer needs "{shown}"; give "Confidence" (0 to 1) and '
                             '"justification_type" (category names separated by commas)')
    confidence = _number("confidence", given["confidence"], notes)
    if not 0.0 <= confidence <= 1.0:
        raise ParseError(f"the confidence is {_fmt(confidence)}; write a number from 0 to 1 "
                         "(for example 0.8, not 80)")
    raw = given["types"]
    if isinstance(raw, str):  # the form asked for: names separated by commas
        items = [part for part in raw.split(",") if part.strip()]
    elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        items = list(raw)
    else:
        raise ParseError('"justification_type" must be category names separated by commas, '
                         'e.g. "Reciprocity, Fairness"')
    by_norm = {_norm(label): label for label in labels}
    by_norm.update({_norm(name): label for label, name in names.items()})
    chosen: set[str] = set()
    for item in items:
        label = by_norm.get(_norm(item))
        if label is None:
            raise ParseError(f"{item.strip()!r} is not one of the categories; use their names "
                             f"exactly ({', '.join(names.get(x, x) for x in labels)})")
        chosen.add(label)
    reasoning = given.get("reasoning")
    return {
        "reasoning": reasoning if isinstance(reasoning, str) else "",
        "confidence": confidence,
        "types": [label for label in labels if label in chosen],
    }, _note(notes)


def _parse_numeric(kind: str, text: str, opts: Mapping[str, Any]) -> tuple[Any, str | None]:
    """number: one value in a range (the strategic personalities paper's offers, bids, guesses); allocation: a
    value per key with a required sum (Blotto). See :mod:`coop_tui.parsing_numeric`."""
    try:
        return parse_number(text, opts) if kind == "number" else parse_allocation(text, opts)
    except NumericParseError as exc:
        raise ParseError(exc.reason) from None
