"""The setup form's values, read without an app: form text to a :class:`MatchSetup`.

The screen collects what each control holds (:class:`FormValues`); :func:`read_setup`
turns it into a setup, raising :class:`~coop_tui.errors.SpecError` named after the
field that cannot be read, as a sweep file's loader would.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass, field
from typing import Any

from coop_tui.errors import SpecError
from coop_tui.session import MatchSetup


@dataclass
class FormValues:
    """What the setup form's controls hold, as they show it."""

    seats: list[str]
    game: str
    mechanism: str
    chosen: dict[str, Any] = field(default_factory=dict)
    """Parameters set by a Select (None when left blank) or a Switch, as chosen."""
    typed: dict[str, str] = field(default_factory=dict)
    """Parameters typed into an Input, as typed."""
    samples: str = ""
    max_tokens: str = ""
    temperature: str = ""
    seed: str = ""
    name: str = "interactive"
    """The setup's name (the form has no field for it: the screen's setup keeps it)."""


def read_setup(values: FormValues) -> MatchSetup:
    """The form as a MatchSetup; SpecError names the field that cannot be read.

    A parameter the form does not show (absent, or hidden as meaningless under the other
    choices) is left out; one typed as text is read by its annotation (:func:`coerce_param`)."""
    from coop_tui.mechanisms import mechanism_class

    fields = mechanism_class(values.mechanism).Params.model_fields
    params: dict[str, Any] = {}
    for name, info in fields.items():
        if name in values.chosen:
            params[name] = values.chosen[name]
        elif name in values.typed:
            params[name] = coerce_param(info.annotation, values.typed[name])
    return MatchSetup(
        seats=values.seats,
        game=values.game,
        mechanism=values.mechanism,
        params=params,
        samples=int_field(values.samples, "samples", default=1, low=1),
        max_tokens=int_field(values.max_tokens, "max tokens", low=1),
        temperature=float_field(values.temperature, "temperature"),
        seed=int_field(values.seed, "seed", default=0, low=0) or 0,
        name=values.name,
    )


def _annotation_text(annotation: Any) -> str:
    return str(annotation).replace("typing.", "")


def literal_options(annotation: Any) -> list[Any] | None:
    """The choices of a Literal field (also inside Optional)."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
    return None


def coerce_param(annotation: Any, text: str) -> Any:
    """Form text to a parameter value: empty means default, strings stay strings."""
    raw = text.strip()
    if not raw:
        return None
    ann = _annotation_text(annotation)
    if "str" in ann and not any(t in ann for t in ("float", "int", "list", "dict")):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        if "list" in ann and "," in raw:
            parts = [p.strip() for p in raw.strip("[]").split(",") if p.strip()]
            out = []
            for p in parts:
                try:
                    out.append(json.loads(p))
                except json.JSONDecodeError:
                    out.append(p)
            return out
        return raw


def field_text(value: Any) -> str:
    """A value as a form field shows it (the inverse of :func:`coerce_param`)."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def int_field(text: str, name: str, *, default: int | None = None, low: int | None = None) -> int | None:
    raw = text.strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SpecError(name, f"must be a whole number (got {raw!r})") from None
    if low is not None and value < low:
        raise SpecError(name, f"must be at least {low} (got {value})")
    return value


def float_field(text: str, name: str) -> float | None:
    raw = text.strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise SpecError(name, f"must be a number (got {raw!r})") from None
