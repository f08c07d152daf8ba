"""What an endogenous judge reads: a target agent's benchmark record, in one of three
views (similarity signals, App. I.8): ``decision`` (final answers only), ``explanation`` (the
reasoning with every trace of the final answer redacted) or ``both``.

The judge's own answers are never part of it: a dossier is built from one agent's
decisions only, and when an agent judges itself the record comes from a *different*
run than the one that counts as its own (see :mod:`coop_tui.grounded.stages`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from coop_tui.grounded.items import Item

VIEWS = ("decision", "explanation", "both")
REDACTED = "[answer removed]"
_JSON = re.compile(r"```(?:json)?\s*\{.*?\}\s*```|\{[^{}]*\}", re.DOTALL)
_ANSWER_LINE = re.compile(r"\b(?:final\s+)?(?:answer|choice|rating|value)\b\s*[:=].*$",
                          re.IGNORECASE | re.MULTILINE)


def redact(explanation: str, item: Item, value: Any) -> str:
    """The reasoning with the final answer taken out: answer objects and lines, the
    chosen option's letter and text, the rating or number given."""
    text = _JSON.sub(REDACTED, explanation or "")
    text = _ANSWER_LINE.sub(REDACTED, text)
    if value is None:
        return text.strip()
    needles: list[str] = []
    if item.kind == "options":
        index = int(value)
        letter, option = item.labels[index], item.options[index]
        needles.append(re.escape(option))
        text = re.sub(rf"(?<![A-Za-z]){letter}(?=[).:\]]|\s*\)|\b)", REDACTED, text)
    elif item.kind in ("likert", "number"):
        number = float(value)
        shown = str(int(number)) if number.is_integer() else str(number)
        needles.append(rf"(?<![\d.]){re.escape(shown)}(?:\.0+)?(?![\d])")
        anchor = item.anchors.get(shown) if item.kind == "likert" else None
        if anchor:
            needles.append(re.escape(anchor))
    elif item.kind == "text" and str(value).strip():
        words = str(value).split()
        needles.append(r"[\W_]+".join(re.escape(w) for w in words))
    for needle in needles:
        text = re.sub(needle, REDACTED, text, flags=re.IGNORECASE)
    return text.strip()


def build_dossier(records: Sequence[tuple[Item, Any, str]], view: str) -> str:
    """The text a judge reads: per item, the question and the target's answer and/or
    redacted reasoning. ``records``: (item, comparable value, explanation text)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    parts = []
    for n, (item, value, explanation) in enumerate(records, start=1):
        lines = [f"Question {n}: {item.shown()}"]
        if view in ("explanation", "both"):
            reasoning = explanation if view == "both" else redact(explanation, item, value)
            lines.append(f"Their reasoning: {reasoning.strip() or '(none given)'}")
        if view in ("decision", "both"):
            lines.append(f"Their answer: {item.describe_answer(value)}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
