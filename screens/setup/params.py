"""The setup form's mechanism parameters, built from the mechanism's ``Params`` model.

A Literal field is a Select, a bool a Switch, anything else an Input read by its
annotation (:func:`~coop_tui.screens.setup.values.coerce_param`). A field may be
shown only under other choices (``shown_when`` in its schema extra) or kept out of the
form (``form = False``: sweep files only). Switching to another mechanism and back
brings the values the form last held for it.
"""

from __future__ import annotations

import typing
from typing import Any

from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Select, Static, Switch

from coop_tui.screens.setup.values import field_text, literal_options
from coop_tui.terminal import widget_text

NO_CHOICE = getattr(Select, "NULL", Select.BLANK)
"""What an empty Select holds: ``Select.NULL`` since Textual 1.0 (``Select.BLANK`` became
the ``allow_blank`` default, ``False``), ``Select.BLANK`` before."""


class Row(Horizontal):
    """A label and one control."""

    shown_when: dict[str, list[Any]] = {}
    """Shown only while each named parameter has one of the listed values."""

    DEFAULT_CSS = """
    Row { height: auto; }
    Row > Label { width: 16; padding: 0 1 0 0; color: $text-muted; }
    Row > Input, Row > Select { width: 1fr; }
    """


def parameter_control(name: str, info: Any, value: Any) -> Any:
    """The control of one parameter field (``#param-<name>``), holding ``value``."""
    options = literal_options(info.annotation)
    wid = f"param-{name}"
    if options is not None:
        allow_blank = type(None) in typing.get_args(info.annotation)
        control: Any = Select(
            [(str(o), o) for o in options],
            value=value if value in options else (NO_CHOICE if allow_blank else options[0]),
            allow_blank=allow_blank, id=wid, compact=True,
        )
    elif info.annotation is bool:
        control = Switch(value=bool(value), id=wid)
    else:
        control = Input(field_text(value), id=wid, compact=True,
                        placeholder=(info.description or "default")[:60])
    control.tooltip = info.description
    return control


class ParamsForm(Vertical):
    """One row per parameter of the mechanism chosen (``#param-<name>`` controls)."""

    def __init__(self, memory: dict[str, dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memory = memory
        """Per mechanism, the parameter values its form last held: switching to another
        mechanism and back brings them back instead of the bare defaults (Similarity's
        ``similarity`` has none, and the form then said it was missing)."""
        self.built_mechanism = ""
        """The mechanism whose parameters the form holds."""
        self.building = 0
        """Forms being (re)built: until they are mounted their Selects are empty."""

    async def build(self, mechanism: str) -> None:
        """The parameter form of ``mechanism``, filled with what it held last time (the
        form of the mechanism it replaces is remembered first)."""
        if self.built_mechanism:
            self.memory[self.built_mechanism] = self.values()
        self.built_mechanism = mechanism
        self.building += 1
        try:
            await self._mount_params(mechanism, self.memory.get(mechanism))
        finally:
            self.building -= 1

    def _controls(self) -> list[Any]:
        return [w for w in self.query("Input, Select, Switch")
                if str(w.id).startswith("param-")]  # not a part of another control

    def values(self) -> dict[str, Any]:
        """What each parameter control of the form holds now, as the form shows it (an
        Input's text, a Select's choice, a Switch's state)."""
        values: dict[str, Any] = {}
        for widget in self._controls():
            name = str(widget.id).removeprefix("param-")
            if isinstance(widget, Select):
                values[name] = None if widget.value is NO_CHOICE else widget.value
            elif isinstance(widget, Input | Switch):
                values[name] = widget.value
        return values

    def shown_values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The parameters shown (absent or hidden ones mean nothing under the other
        choices): those chosen (Select, Switch) and those typed (Input)."""
        chosen: dict[str, Any] = {}
        typed: dict[str, str] = {}
        for widget in self._controls():
            if not widget.parent.display:
                continue
            name = str(widget.id).removeprefix("param-")
            if isinstance(widget, Select):
                chosen[name] = None if widget.value is NO_CHOICE else widget.value
            elif isinstance(widget, Switch):
                chosen[name] = widget.value
            elif isinstance(widget, Input):
                typed[name] = widget.value
        return chosen, typed

    async def _mount_params(self, mechanism: str, values: dict[str, Any] | None) -> None:
        from coop_tui.mechanisms import mechanism_class

        await self.remove_children()
        try:
            fields = mechanism_class(mechanism).Params.model_fields
        except Exception as exc:  # a broken mechanism module must not break the form
            await self.mount(Static(widget_text(str(exc), "red", lines=True)))
            return
        values = values or {}
        rows = []
        for name, info in fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if extra.get("form") is False:  # sweep-file only (e.g. scores keyed by agent name)
                continue
            value = values.get(name, info.default if not info.is_required() else None)
            row = Row(Label(name), parameter_control(name, info, value))
            row.shown_when = extra.get("shown_when") or {}
            rows.append(row)
        await self.mount_all(rows)
        self.show_relevant()

    def show_relevant(self) -> None:
        """Hide the parameters that mean nothing under the other choices made (a field's
        ``shown_when``: Similarity's benchmark fields only with a benchmark prompt)."""
        rows = list(self.query(Row).results(Row))
        chosen = {}
        for row in rows:
            for control in row.query(Select).results(Select):
                chosen[str(control.id).removeprefix("param-")] = control.value
        for row in rows:
            row.display = all(chosen.get(field) in values
                              for field, values in row.shown_when.items())
