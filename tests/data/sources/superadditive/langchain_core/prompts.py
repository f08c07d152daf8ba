"""A template that fills its slots and marks who speaks, like the library it stands in for."""

from __future__ import annotations

from typing import Any


class ChatPromptTemplate:
    def __init__(self, template: str) -> None:
        self.template = template

    @classmethod
    def from_template(cls, template: str) -> ChatPromptTemplate:
        return cls(template)

    def format(self, **values: Any) -> str:
        return "Person: " + self.template.format(**values)


class PromptTemplate(ChatPromptTemplate):
    pass
