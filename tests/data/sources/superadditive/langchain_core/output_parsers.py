"""An answer parser that only describes the answer's keys (coop-tui's tests only)."""

from __future__ import annotations

from typing import Any


class PydanticOutputParser:
    def __init__(self, pydantic_object: Any) -> None:
        self.pydantic_object = pydantic_object

    def get_format_instructions(self) -> str:
        return "Answer in JSON with the keys " + ", ".join(self.pydantic_object.model_fields) + "."
