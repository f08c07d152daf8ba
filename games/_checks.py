"""Checks for family parameters, so every factory rejects bad values the same way.

Sweep files give numbers as TOML/YAML scalars; these helpers accept what a person
would mean (3.0 for 3 players) and reject the rest with a message naming the field.
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def as_int(name: str, value: Any, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be at least {minimum}{upper}, got {value}")
    return value


def as_float(name: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be positive, got {value:g}")
    return value


def clean(value: float) -> int | float:
    """An int when the value is whole, so stored params and names read naturally."""
    return int(value) if float(value).is_integer() else float(value)
