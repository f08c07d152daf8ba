"""The setup form's seats: one agent string per seat, with completion.

A seat takes the embedded model, ``human``, a strategy, an installed plugin's agent or a
litellm ``provider/model``; :class:`AgentSuggester` completes them (litellm's model list
is read off the UI thread once the form is up).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from textual.containers import Vertical
from textual.suggester import Suggester
from textual.widgets import Input, Label

from coop_tui.screens.setup.params import Row
from coop_tui.session import PRESET_AGENT

SEAT_PLACEHOLDER = "local/smollm2 · a strategy · human · provider/model"
SEAT_TOOLTIP = ("local/smollm2 (embedded, no key) · a strategy such as tit_for_tat · "
                "human (you answer) · provider/model via litellm (openai/gpt-4o-mini); "
                "→ accepts the suggestion")


class AgentSuggester(Suggester):
    """Completes agent strings: the embedded model, human, strategies, then litellm models."""

    def __init__(self, candidates: list[str]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.candidates = list(candidates)

    def extend(self, more: list[str]) -> None:
        known = set(self.candidates)
        self.candidates.extend(m for m in more if m not in known)

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        low = value.lower()
        for c in self.candidates:
            if c.lower().startswith(low) and len(c) > len(value):
                return value + c[len(value):]
        return None


def litellm_model_names() -> list[str]:
    """litellm's model list as ``provider/model`` strings, read from the JSON price map
    litellm ships (no litellm import: that takes seconds). Call it off the UI thread."""

    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return []
    path = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    names = []
    for key, info in data.items():
        if not isinstance(info, dict) or key == "sample_spec":
            continue
        if info.get("mode") not in (None, "chat", "responses", "completion"):
            continue
        provider = info.get("litellm_provider") or ""
        name = key if "/" in key or not provider else f"{provider}/{key}"
        names.append(name)
    return sorted(set(names))


class SeatsForm(Vertical):
    """One labelled agent field per seat (``#seat-0``, ``#seat-1``, …)."""

    def __init__(self, seats: list[str], suggester: AgentSuggester, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.initial = list(seats)
        """The seats shown before the form was first built."""
        self.suggester = suggester

    def values(self) -> list[str]:
        return [w.value for w in self.query("Input").results(Input)]

    async def build(self, n: int) -> None:
        """``n`` seats keeping what the first ones hold; a new seat repeats the last."""
        current = self.values() if self.children else list(self.initial)
        while len(current) < n:
            current.append(current[-1] if current else PRESET_AGENT)
        current = current[:n]
        await self.remove_children()
        rows = []
        for i, value in enumerate(current):
            field = Input(value, id=f"seat-{i}", suggester=self.suggester, compact=True,
                          placeholder=SEAT_PLACEHOLDER)
            field.tooltip = SEAT_TOOLTIP
            rows.append(Row(Label(f"seat {i + 1}"), field))
        await self.mount_all(rows)
