"""The watcher's reading of the channel, as a property: whatever JSON object arrives, it is
taken (an event whose every field has its annotated type) or skipped and counted, and
nothing a watcher does with it afterwards (the dashboard, the plain line) raises.
Hypothesis writes the objects: known and unknown types, the events' field names, any
JSON value in each."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest

from coop_tui import channel, watch
from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, MatchStarted
from coop_tui.watch import WatchState, take

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
KINDS = [*channel.EVENT_TYPES, "hello", "dropped", "lagging", "unknown"]


def _typed(hint: Any) -> Any:
    """Values of the annotated type as JSON carries them (a tuple as a list), or any JSON
    value where the type is not one JSON has."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return JSON
    if origin in (types.UnionType, typing.Union):
        return st.one_of(*(_typed(a) for a in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    simple = {type(None): st.none(), bool: st.booleans(), int: st.integers(),
              float: st.floats() | st.integers(), str: st.text(max_size=20)}
    if hint in simple:
        return simple[hint]
    if origin in (tuple, list):
        return st.lists(_typed(args[0]) if args else JSON, max_size=4)
    if origin is dict or hint is dict:
        return st.dictionaries(st.text(max_size=8), JSON, max_size=4)
    return JSON


@st.composite
def _value(draw: Any, hint: Any) -> Any:
    """Mostly a value of type ``hint``; one time in ten any JSON value."""
    return draw(JSON) if draw(st.integers(0, 9)) == 0 else draw(_typed(hint))


@st.composite
def _fields(draw: Any, cls: type, names: Any) -> dict[str, Any]:
    """An object with ``cls``'s fields among ``names``: each one there most of the time
    (a required one is left out now and then), mostly of its type."""
    hints = typing.get_type_hints(cls)
    data = {}
    for name in names:
        f = cls.__dataclass_fields__[name]
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if draw(st.integers(0, 19 if required else 1)) != 0:
            data[name] = draw(_value(hints[name]))
    return data


@st.composite
def wire_objects(draw: Any) -> dict[str, Any]:
    """A JSON object of a known (or unknown) type whose fields are mostly of their types."""
    kind = draw(st.sampled_from(KINDS))
    cls = channel.EVENT_TYPES.get(kind)
    if cls is DecisionDone:
        data = {"decision": draw(_fields(Decision, channel.DECISION_FIELDS) | JSON)}
    elif cls is not None:
        data = draw(_fields(cls, [f for f in cls.__dataclass_fields__ if f != "messages"]))
    else:
        data = draw(st.dictionaries(st.sampled_from(["count", "dropped", "run_id", "pid"]), JSON))
    data["type"] = kind
    return data


def _has_its_types(event: Any) -> bool:
    """Every field of a decoded event is of its annotated type (what the watcher relies on)."""
    target = event.decision if isinstance(event, DecisionDone) else event
    hints = typing.get_type_hints(type(target))
    for name in (channel.DECISION_FIELDS if isinstance(event, DecisionDone)
                 else target.__dataclass_fields__):
        value = getattr(target, name)
        wire_value = list(value) if isinstance(value, tuple) else value
        if not channel._fits(wire_value, hints[name]):
            return False
    return True


def _well_typed(data: dict[str, Any]) -> bool:
    """What the watcher must accept, said independently of its code: a known event whose
    required fields are present and every field given is of its type."""
    cls = channel.EVENT_TYPES.get(data["type"])
    if cls is None:
        return False
    if cls is DecisionDone:
        body = data.get("decision")
        if not isinstance(body, dict):
            return False
        hints = typing.get_type_hints(Decision)
        return all(_json_fits(body[f], hints[f]) for f in channel.DECISION_FIELDS if f in body)
    hints = typing.get_type_hints(cls)
    for name, f in cls.__dataclass_fields__.items():
        if name == "messages":
            continue
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                return False
        elif not _json_fits(data[name], hints[name]):
            return False
    return True


def _json_fits(value: Any, hint: Any) -> bool:
    """Whether JSON's ``value`` is of type ``hint``: a second, plainer reading of the rules
    than the channel's own (bool is not a number, a list stands for a tuple)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (types.UnionType, typing.Union):
        return any(_json_fits(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin in (tuple, list):
        return isinstance(value, list) and all(_json_fits(v, args[0]) for v in value)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if hint is float:
        return type(value) in (int, float)
    return type(value) is hint or (hint is type(None) and value is None)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(wire_objects())
def test_any_wire_object_is_taken_or_skipped_never_a_crash(data: dict[str, Any]) -> None:
    hypothesis.event("taken" if _well_typed(data) else "refused")
    state = WatchState({"id": "r1"}, {"plan": {"models": ["a"]}})
    state.apply(MatchStarted("r1", "m1", 0, "prisoners", "none", ("a", "b"), {}))
    item = take(state, data)
    if data["type"] in channel.EVENT_TYPES:
        # an event is taken exactly when every field it needs is there with its type
        assert (item is not None) == _well_typed(data), (data, item)
    if item is not None and not isinstance(item, dict):
        assert _has_its_types(item)
        watch.event_line(item, lambda mid: mid)
    state.headline()
    state.summary_lines()
