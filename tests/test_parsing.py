"""The answer parser: every repair is noted, everything else is rejected with a reason.

Three layers: table tests per repair case and per answer kind, a seeded round-trip over
random wrappers, and a replay of real CoopEval model output (hundreds of replies) whose
parses are cross-checked against what CoopEval itself recorded.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import coop_tui
from coop_tui.importers.coopeval_log import (
    LogEntry,
    PromptInfo,
    action_labels,
    classify_prompt,
    iter_log_entries,
)
from coop_tui.parsing import MixedStrategy, ParseError, parse_answer, parse_mixed_strategy
from coop_tui.schemas import answer_schema

AB = ("A0", "A1")
ABC = ("A0", "A1", "A2")


def approx(values: tuple[float, ...]) -> Any:
    return pytest.approx(values, abs=1e-12)


# --------------------------------------------------------------------------- mixed: clean


CLEAN_CASES = [
    ('{"A0": 30, "A1": 70}', AB, (0.3, 0.7)),
    ('{"A0":0,"A1":100}', AB, (0.0, 1.0)),
    ('{"A1": 70, "A0": 30}', AB, (0.3, 0.7)),
    (
        'Reasoning first.\n\n```json\n{"A0": 25, "A1": 75}\n```\nThat is my answer.',
        AB,
        (0.25, 0.75),
    ),
    ('{"A0": 20, "A1": 30, "A2": 50}', ABC, (0.2, 0.3, 0.5)),
    ('{\n  "A0": 50.0,\n  "A1": 50.0\n}', AB, (0.5, 0.5)),
    ('The example {"A0": <INT>, "A1": <INT>} means:\n{"A0": 10, "A1": 90}', AB, (0.1, 0.9)),
    ('[{"A0": 40, "A1": 60}]', AB, (0.4, 0.6)),
    ('{"A0": 45, "A1": 55, "A2": 0}', ABC, (0.45, 0.55, 0.0)),
    ('Since q = \\frac{3}{4} and {x | x > 0}:\n{"A0": 60, "A1": 40}', AB, (0.6, 0.4)),
    ('I consider the set {A0, A1 of moves...\n{"A0": 5, "A1": 95}', AB, (0.05, 0.95)),
    ("{ stray " * 300 + '{"A0": 70, "A1": 30}', AB, (0.7, 0.3)),
    ('{ "quoted ' * 300 + '\n{"A0": 70, "A1": 30}', AB, (0.7, 0.3)),
    ("x = {'a': {'b': 1} " + '{"A0": 15, "A1": 85}', AB, (0.15, 0.85)),
]


@pytest.mark.parametrize(("text", "labels", "probs"), CLEAN_CASES)
def test_clean_answers_parse_without_note(
    text: str, labels: tuple[str, ...], probs: tuple[float, ...]
) -> None:
    result = parse_mixed_strategy(text, labels)
    assert result.probabilities == approx(probs)
    assert result.note is None
    assert math.isclose(sum(result.probabilities), 1.0)
    assert json.loads(result.source)  # the source is the JSON snippet itself


def test_result_fields() -> None:
    text = 'Final:\n{"A1": 70, "A0": 30}\nDone.'
    result = parse_mixed_strategy(text, AB)
    assert isinstance(result, MixedStrategy)
    assert result.percentages == (30.0, 70.0)
    assert result.source == '{"A1": 70, "A0": 30}'
    with pytest.raises(AttributeError):
        result.note = "x"  # type: ignore[misc]  # frozen


# --------------------------------------------------------------------------- mixed: repairs


REPAIR_CASES = [
    # (text, labels, probabilities, note fragments that must all appear)
    ('{"A0": 50, "A1": 49}', AB, (50 / 99, 49 / 99), ["sum 99 normalised to 100"]),
    ('{"A0": 60, "A1": 50}', AB, (60 / 110, 50 / 110), ["sum 110 normalised to 100"]),
    ('{"A0": 1, "A1": 0}', AB, (1.0, 0.0), ["sum 1 normalised to 100"]),
    ('{"A0": 0.25, "A1": 0.75}', AB, (0.25, 0.75), ["values read as probabilities"]),
    (
        '{"A0": 0.33, "A1": 0.33, "A2": 0.33}',
        ABC,
        (1 / 3, 1 / 3, 1 / 3),
        ["values read as probabilities", "sum 99 normalised to 100"],
    ),
    ('{"A0": 1.0}', AB, (1.0, 0.0), ["values read as probabilities", "missing keys A1 taken as 0"]),
    (
        '{"A0": 33.3, "A1": 33.3, "A2": 33.4}',
        ABC,
        (0.333, 0.333, 0.334),
        ["non-integer percentages"],
    ),
    ('{"A0": 100}', AB, (1.0, 0.0), ["missing keys A1 taken as 0"]),
    ('{"A0": 40, "A1": 60}', ABC, (0.4, 0.6, 0.0), ["missing keys A2 taken as 0"]),
    ('{"A1": 100}', ABC, (0.0, 1.0, 0.0), ["missing keys A0, A2 taken as 0"]),
    ('{"a0": 20, "a1": 80}', AB, (0.2, 0.8), ["ignoring case", "'a0' as A0"]),
    ('{" A0 ": 50, "A1": 50}', AB, (0.5, 0.5), ["ignoring case/spaces"]),
    ('{"A0": "50", "A1": "50"}', AB, (0.5, 0.5), ["numbers given as strings"]),
    ('{"A0": "30%", "A1": "70%"}', AB, (0.3, 0.7), ["numbers given as strings"]),
    ("{'A0': 40, 'A1': 60}", AB, (0.4, 0.6), ["single quotes read as double quotes"]),
    ('{"A0": 40, "A1": 60,}', AB, (0.4, 0.6), ["trailing comma ignored"]),
    ("{A0: 40, A1: 60}", AB, (0.4, 0.6), ["unquoted keys read as strings"]),
    ('{"A0": 40%, "A1": 60%}', AB, (0.4, 0.6), ["percent signs ignored"]),
    (
        "{'A0': 30, 'A1': 70, }",
        AB,
        (0.3, 0.7),
        ["single quotes read as double quotes", "trailing comma ignored"],
    ),
    ('{"strategy": {"A0": 10, "A1": 90}}', AB, (0.1, 0.9), ["inside key 'strategy'"]),
    (
        'Draft: {"A0": 50, "A1": 50}\nOn reflection:\n{"A0": 20, "A1": 80}',
        AB,
        (0.2, 0.8),
        ["2 answer objects found, the last one used"],
    ),
    (
        '{"A0": 1, "A1": 99} then {"A0": 2, "A1": 98} and finally {"A0": 3, "A1": 97}',
        AB,
        (0.03, 0.97),
        ["3 answer objects found"],
    ),
    ('\\boxed{{"A0": 25, "A1": 75}}', AB, (0.25, 0.75), []),
]


@pytest.mark.parametrize(("text", "labels", "probs", "fragments"), REPAIR_CASES)
def test_repairs_are_applied_and_noted(
    text: str, labels: tuple[str, ...], probs: tuple[float, ...], fragments: list[str]
) -> None:
    result = parse_mixed_strategy(text, labels)
    assert result.probabilities == pytest.approx(probs, abs=1e-9)
    assert math.isclose(sum(result.probabilities), 1.0)
    if fragments:
        assert result.note is not None
        for fragment in fragments:
            assert fragment in result.note
    else:
        assert result.note is None


def test_percentages_keep_given_values_before_normalising() -> None:
    assert parse_mixed_strategy('{"A0": 50, "A1": 49}', AB).percentages == (50.0, 49.0)
    assert parse_mixed_strategy('{"A0": 0.25, "A1": 0.75}', AB).percentages == (25.0, 75.0)
    assert parse_mixed_strategy('{"A0": 100}', AB).percentages == (100.0, 0.0)


def test_the_last_answer_wins_even_when_an_earlier_one_was_valid() -> None:
    """No silent fallback: a broken final answer is an error, not the earlier draft."""
    with pytest.raises(ParseError) as err:
        parse_mixed_strategy('{"A0": 50, "A1": 50}\nActually:\n{"A0": 90}', AB)
    assert err.value.reason == "A1 is missing and the other values add up to 90, not 100"


# --------------------------------------------------------------------------- mixed: invalid


INVALID_CASES = [
    ("", AB, "the reply is empty"),
    ("   \n ", AB, "the reply is empty"),
    ("I pick A0 with 60% and A1 with 40%.", AB, "no JSON object with the keys A0, A1 was found"),
    ('{"A0": <INT>, "A1": <INT>}', AB, "no JSON object with the keys A0, A1 was found"),
    ('{"B0": 50, "B1": 50}', AB, "no JSON object with the keys A0, A1 was found"),
    ('{"A0": 50, "A1": 50', AB, "no JSON object with the keys A0, A1 was found"),
    (
        '{"A0": 0, "A1": 0}',
        AB,
        "the percentages add up to 0; at least one action needs a positive value",
    ),
    ('{"A0": -10, "A1": 110}', AB, "the value for A0 is negative (-10)"),
    ('{"A0": "high", "A1": 50}', AB, 'the value for A0 is not a number ("high")'),
    ('{"A0": true, "A1": 50}', AB, "the value for A0 is not a number (true)"),
    ('{"A0": null, "A1": 100}', AB, "the value for A0 is not a number (null)"),
    ('{"A0": {"x": 1}, "A1": 50}', AB, 'the value for A0 is not a number ({"x": 1})'),
    ('{"A0": NaN, "A1": 50}', AB, "the value for A0 is not a finite number"),
    ('{"A0": Infinity, "A1": 50}', AB, "the value for A0 is not a finite number"),
    ('{"A0": 50, "A1": 40, "A2": 10}', AB, "unknown key 'A2'; use exactly A0, A1"),
    (
        '{"A0": 50, "A1": 50, "why": "x", "A9": 0}',
        AB,
        "unknown keys 'why', 'A9'; use exactly A0, A1",
    ),
    ('{"A0": 60}', AB, "A1 is missing and the other values add up to 60, not 100"),
    ('{"A0": 60}', ABC, "A1, A2 are missing and the other values add up to 60, not 100"),
    ('{"A0": 0.6}', ABC, "A1, A2 are missing and the other values add up to 0.6, not 100"),
    ('{"A0": 50, "A0": 50}', AB, "the key A0 appears more than once"),
    ('{"A0": 50, "a0": 50}', AB, "the key A0 appears more than once"),
]


@pytest.mark.parametrize(("text", "labels", "reason"), INVALID_CASES)
def test_invalid_answers_raise_with_reason(text: str, labels: tuple[str, ...], reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_mixed_strategy(text, labels)
    assert err.value.reason == reason
    assert str(err.value) == reason
    assert isinstance(err.value, ValueError)


def test_no_labels_is_a_programming_error_not_a_parse_error() -> None:
    with pytest.raises(ValueError) as err:
        parse_mixed_strategy('{"A0": 100}', ())
    assert not isinstance(err.value, ParseError)


def test_package_root_reexports_the_parser() -> None:
    assert coop_tui.parse_mixed_strategy is parse_mixed_strategy
    assert coop_tui.ParseError is ParseError


# --------------------------------------------------------------------------- round trip


_WRAPPERS = [
    "{json}",
    "Let me think. Payoffs {{2, 0}} and \\frac{{1}}{{2}}.\n\n{json}",
    "```json\n{json}\n```",
    "**Final answer:**\n```\n{json}\n```\nGood luck!",
    'Example: {{"A0": <INT>, "A1": <INT>}}.\n{json}\n',
    "The keys are {{A0, A1, ...}}\n\n{json}",
]


def test_round_trip_random_answers_in_random_wrappers() -> None:
    """Integer percentages summing to 100 come back exactly, with no note, whatever the prose."""
    rng = random.Random(20240601)
    for _ in range(300):
        k = rng.choice([2, 3, 4])
        labels = tuple(f"A{i}" for i in range(k))
        cuts = sorted(rng.randint(0, 100) for _ in range(k - 1))
        parts = [b - a for a, b in zip([0, *cuts], [*cuts, 100], strict=True)]
        order = list(range(k))
        rng.shuffle(order)
        body = "{" + ", ".join(f'"{labels[i]}": {parts[i]}' for i in order) + "}"
        text = rng.choice(_WRAPPERS).format(json=body)
        result = parse_mixed_strategy(text, labels)
        assert result.note is None, text
        assert result.probabilities == approx(tuple(p / 100 for p in parts))
        assert result.source == body


# --------------------------------------------------------------------------- other kinds


def test_parse_answer_mixed_returns_strategy_and_note() -> None:
    parsed, note = parse_answer("mixed", '{"A0": 50, "A1": 49}', labels=AB, options={})
    assert isinstance(parsed, MixedStrategy)
    assert note == parsed.note == "sum 99 normalised to 100"


M12 = ("M1", "M2")

APPROVAL_CASES = [
    ('{"M1": true, "M2": false}', M12, {"M1": True, "M2": False}, None),
    (
        'Votes:\n```json\n{\n  "M2": true,\n  "M1": true\n}\n```',
        M12,
        {"M1": True, "M2": True},
        None,
    ),
    ('{"m1": false, "m2": true}', M12, {"M1": False, "M2": True}, "ignoring case"),
    (
        '{"M1": "yes", "M2": "No"}',
        M12,
        {"M1": True, "M2": False},
        "yes/no strings read as booleans",
    ),
    ('{"M1": "TRUE", "M2": "false"}', M12, {"M1": True, "M2": False}, "yes/no strings"),
    ("{'M1': True, 'M2': False}", M12, {"M1": True, "M2": False}, "Python literals read as JSON"),
    ('{"M1": true}', ("M1",), {"M1": True}, None),
]


@pytest.mark.parametrize(("text", "labels", "expected", "fragment"), APPROVAL_CASES)
def test_approvals(
    text: str, labels: tuple[str, ...], expected: dict[str, bool], fragment: str | None
) -> None:
    parsed, note = parse_answer("approvals", text, labels=labels, options={})
    assert parsed == expected
    assert list(parsed) == list(labels)
    if fragment is None:
        assert note is None
    else:
        assert note is not None and fragment in note


APPROVAL_ERRORS = [
    ('{"M1": true}', "every proposal needs true or false; missing: M2"),
    ('{"M1": true, "M2": false, "M3": true}', "unknown key 'M3'; use exactly M1, M2"),
    ('{"M1": 1, "M2": 0}', "the value for M1 must be true or false, not 1"),
    ('{"M1": "maybe", "M2": true}', 'the value for M1 must be true or false, not "maybe"'),
    ("I approve both.", "no JSON object with the keys M1, M2 was found"),
    ('{"M1": <true/false>, "M2": <true/false>}', "no JSON object with the keys M1, M2 was found"),
]


@pytest.mark.parametrize(("text", "reason"), APPROVAL_ERRORS)
def test_approval_errors(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("approvals", text, labels=M12, options={})
    assert err.value.reason == reason


@pytest.mark.parametrize(
    ("text", "expected", "fragment"),
    [
        ('{"sign": true}', True, None),
        ('I will not sign.\n{"sign": false}', False, None),
        ('{"Sign": true}', True, "ignoring case"),
        ('{"sign": "no"}', False, "yes/no strings"),
        ("{'sign': False}", False, "single quotes"),
    ],
)
def test_sign(text: str, expected: bool, fragment: str | None) -> None:
    parsed, note = parse_answer("sign", text, labels=(), options={})
    assert parsed is expected
    assert (note is None) if fragment is None else (fragment in (note or ""))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("yes", 'no JSON object with the key "sign" was found'),
        ('{"sign": 1}', "the value for sign must be true or false, not 1"),
        ('{"sign": true, "why": "fair"}', "unknown key 'why'; use exactly sign"),
        ("", "the reply is empty"),
    ],
)
def test_sign_errors(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("sign", text, labels=(), options={})
    assert err.value.reason == reason


SCORE_CASES = [
    ("Both reason alike.\nSIMILARITY SCORE: 85", {}, 85, None),
    ("**SIMILARITY SCORE:** 72", {}, 72, None),
    ("Similarity Score: 40%", {}, 40, None),
    ("SIMILARITY SCORE = 0", {}, 0, None),
    (
        "SIMILARITY SCORE: 30\nOn second thought, SIMILARITY SCORE: 45",
        {},
        45,
        "2 scores given, the last one used",
    ),
    ('{"score": 55}', {}, 55, None),
    ('SIMILARITY SCORE: 20\n{"score": 60}', {}, 60, "2 scores given"),
    ('{"score": 60}\nSIMILARITY SCORE: 20', {}, 20, "2 scores given"),
    ("SIMILARITY SCORE: 85.0", {}, 85, None),
    ("SIMILARITY SCORE: 85/100", {}, 85, None),
    ('{"score": "70"}', {}, 70, "numbers given as strings"),
    ("SIMILARITY SCORE: 7", {"min": 1, "max": 10}, 7, None),
    ("End with SIMILARITY SCORE: <n>, so: SIMILARITY SCORE: 64", {}, 64, None),
]


@pytest.mark.parametrize(("text", "options", "expected", "fragment"), SCORE_CASES)
def test_score(text: str, options: dict[str, int], expected: int, fragment: str | None) -> None:
    parsed, note = parse_answer("score", text, labels=(), options=options)
    assert parsed == expected and isinstance(parsed, int)
    assert (note is None) if fragment is None else (fragment in (note or ""))


@pytest.mark.parametrize(
    ("text", "options", "reason"),
    [
        ("They are quite similar.", {}, 'no "SIMILARITY SCORE: <number>" line was found'),
        ("SIMILARITY SCORE: <n>", {}, 'no "SIMILARITY SCORE: <number>" line was found'),
        ("SIMILARITY SCORE: 120", {}, "the score 120 is outside the range 0 to 100"),
        ("SIMILARITY SCORE: 85.5", {}, "the score must be a whole number from 0 to 100, not 85.5"),
        ("SIMILARITY SCORE: 0.85", {}, "the score must be a whole number from 0 to 100, not 0.85"),
        ("SIMILARITY SCORE: 8/10", {}, "give the score on the scale 0 to 100, not out of 10"),
        ("SIMILARITY SCORE: -5", {}, "the score -5 is outside the range 0 to 100"),
        ("SIMILARITY SCORE: 0", {"min": 1, "max": 10}, "the score 0 is outside the range 1 to 10"),
        ('{"score": "high"}', {}, 'the value for score is not a number ("high")'),
        ("", {}, "the reply is empty"),
    ],
)
def test_score_errors(text: str, options: dict[str, int], reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("score", text, labels=(), options=options)
    assert err.value.reason == reason


def test_text() -> None:
    assert parse_answer("text", "  My plan: cooperate.\n", labels=(), options={}) == (
        "My plan: cooperate.",
        None,
    )
    with pytest.raises(ParseError) as err:
        parse_answer("text", " \n\t", labels=(), options={})
    assert err.value.reason == "the reply is empty"


MEDIATOR_CASES = [
    ('{"1": "A1", "2": "A0"}', 2, {1: "A1", 2: "A0"}, None),
    ('Reasoning...\n```json\n{"2": "A0", "1": "A0"}\n```', 2, {1: "A0", 2: "A0"}, None),
    ('{"1": "a1", "2": "A0"}', 2, {1: "A1", 2: "A0"}, "actions matched ignoring case"),
    ('{"1": "A0", "2": "A1", "3": "A0"}', 3, {1: "A0", 2: "A1", 3: "A0"}, None),
    ('{1: "A1", 2: "A0"}', 2, {1: "A1", 2: "A0"}, "unquoted keys read as strings"),
]


@pytest.mark.parametrize(("text", "n", "expected", "fragment"), MEDIATOR_CASES)
def test_mediator(text: str, n: int, expected: dict[int, str], fragment: str | None) -> None:
    parsed, note = parse_answer("mediator", text, labels=AB, options={"n_players": n})
    assert parsed == expected
    assert list(parsed) == sorted(parsed)
    assert (note is None) if fragment is None else (fragment in (note or ""))


@pytest.mark.parametrize(
    ("text", "n", "reason"),
    [
        ('{"1": "A1"}', 2, "an action is needed for every number of delegators; missing: 2"),
        ('{"1": "A1", "2": "A0", "3": "A0"}', 2, "unknown key '3'; use exactly 1, 2"),
        ('{"0": "A1", "1": "A1", "2": "A0"}', 2, "unknown key '0'; use exactly 1, 2"),
        (
            '{"1": "A2", "2": "A0"}',
            2,
            'the action for 1 delegator(s) must be one of A0, A1, not "A2"',
        ),
        ('{"1": 0, "2": "A0"}', 2, "the action for 1 delegator(s) must be one of A0, A1, not 0"),
        (
            "Play A0 always.",
            2,
            "no JSON object with the keys 1, 2 (number of delegating players) was found",
        ),
    ],
)
def test_mediator_errors(text: str, n: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("mediator", text, labels=AB, options={"n_players": n})
    assert err.value.reason == reason


def test_mediator_needs_n_players() -> None:
    with pytest.raises(ValueError) as err:
        parse_answer("mediator", '{"1": "A0"}', labels=AB, options={})
    assert not isinstance(err.value, ParseError)


CONTRACT_CASES = [
    ('{"A0": 3, "A1": -2}', {}, {"A0": 3, "A1": -2}, None),
    ('{"A1": 0, "A0": 5.0}', {}, {"A0": 5, "A1": 0}, None),
    ('{"A0": "4", "A1": "-1"}', {}, {"A0": 4, "A1": -1}, "numbers given as strings"),
    ('{"A0": 5, "A1": -5}', {"max_abs": 5}, {"A0": 5, "A1": -5}, None),
]


@pytest.mark.parametrize(("text", "options", "expected", "fragment"), CONTRACT_CASES)
def test_contract(
    text: str, options: dict[str, int], expected: dict[str, int], fragment: str | None
) -> None:
    parsed, note = parse_answer("contract", text, labels=AB, options=options)
    assert parsed == expected
    assert all(isinstance(v, int) for v in parsed.values())
    assert (note is None) if fragment is None else (fragment in (note or ""))


@pytest.mark.parametrize(
    ("text", "options", "reason"),
    [
        ('{"A0": 2.5, "A1": 0}', {}, "the payment for A0 must be a whole number, not 2.5"),
        (
            '{"A0": 6, "A1": 0}',
            {"max_abs": 5},
            "the payment for A0 is 6; payments must lie between -5 and 5",
        ),
        (
            '{"A0": 0, "A1": -6}',
            {"max_abs": 5},
            "the payment for A1 is -6; payments must lie between -5 and 5",
        ),
        ('{"A0": 1}', {}, "every action needs a payment; missing: A1"),
        ('{"A0": 1, "A1": true}', {}, "the value for A1 is not a number (true)"),
    ],
)
def test_contract_errors(text: str, options: dict[str, int], reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("contract", text, labels=AB, options=options)
    assert err.value.reason == reason


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError) as err:
        parse_answer("poem", "x", labels=(), options={})
    assert not isinstance(err.value, ParseError)


# --------------------------------------------------------------------------- schemas


ALLOWED_SCHEMA_KEYS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "minimum",
    "maximum",
    "enum",
}


def _walk_schema(schema: dict[str, Any]) -> None:
    assert set(schema) <= ALLOWED_SCHEMA_KEYS, set(schema) - ALLOWED_SCHEMA_KEYS
    for inner in schema.get("properties", {}).values():
        _walk_schema(inner)


def test_mixed_schema() -> None:
    schema = answer_schema("mixed", ABC, {})
    assert schema == {
        "type": "object",
        "properties": {label: {"type": "integer", "minimum": 0, "maximum": 100} for label in ABC},
        "required": list(ABC),
        "additionalProperties": False,
    }


def test_other_schemas() -> None:
    assert answer_schema("approvals", M12, {}) == {
        "type": "object",
        "properties": {"M1": {"type": "boolean"}, "M2": {"type": "boolean"}},
        "required": ["M1", "M2"],
        "additionalProperties": False,
    }
    assert answer_schema("sign", (), {})["properties"] == {"sign": {"type": "boolean"}}  # type: ignore[index]
    assert answer_schema("score", (), {})["properties"] == {  # type: ignore[index]
        "score": {"type": "integer", "minimum": 0, "maximum": 100}
    }
    assert answer_schema("score", (), {"min": 1, "max": 10})["properties"]["score"] == {  # type: ignore[index]
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
    }
    assert answer_schema("text", (), {}) is None
    mediator = answer_schema("mediator", AB, {"n_players": 3})
    assert mediator is not None
    assert mediator["required"] == ["1", "2", "3"]
    assert mediator["properties"]["2"] == {"type": "string", "enum": ["A0", "A1"]}
    contract = answer_schema("contract", AB, {"max_abs": 4})
    assert contract is not None
    assert contract["properties"]["A1"] == {"type": "integer", "minimum": -4, "maximum": 4}
    assert answer_schema("contract", AB, {})["properties"]["A0"] == {"type": "integer"}  # type: ignore[index]
    with pytest.raises(ValueError):
        answer_schema("poem", (), {})


def _instance(schema: dict[str, Any], pick: int) -> Any:
    """A schema-valid value, chosen by ``pick`` so different instances are covered."""
    kind = schema["type"]
    if kind == "object":
        return {k: _instance(v, pick + i) for i, (k, v) in enumerate(schema["properties"].items())}
    if kind == "boolean":
        return pick % 2 == 0
    if kind == "string":
        return schema["enum"][pick % len(schema["enum"])]
    lo, hi = schema.get("minimum", -9), schema.get("maximum", 9)
    return lo + pick % (hi - lo + 1)


@pytest.mark.parametrize(
    ("kind", "labels", "options"),
    [
        ("approvals", ("M1", "M2", "M3"), {}),
        ("sign", (), {}),
        ("score", (), {}),
        ("score", (), {"min": 1, "max": 7}),
        ("mediator", AB, {"n_players": 4}),
        ("contract", ABC, {"max_abs": 3}),
        ("contract", AB, {}),
    ],
)
def test_every_schema_instance_parses_cleanly(
    kind: str, labels: tuple[str, ...], options: dict[str, Any]
) -> None:
    schema = answer_schema(kind, labels, options)
    assert schema is not None
    _walk_schema(schema)
    for pick in range(12):
        value = _instance(schema, pick)
        parsed, note = parse_answer(kind, json.dumps(value), labels=labels, options=options)
        assert note is None
        if kind == "score":
            assert parsed == value["score"]
        elif kind == "sign":
            assert parsed is value["sign"]
        elif kind == "mediator":
            assert parsed == {int(k): v for k, v in value.items()}
        else:
            assert parsed == value


@pytest.mark.parametrize(
    ("kind", "labels", "options"),
    [
        ("mixed", ABC, {}),
        ("approvals", M12, {}),
        ("sign", (), {}),
        ("score", (), {}),
        ("mediator", AB, {"n_players": 2}),
        ("contract", AB, {"max_abs": 5}),
    ],
)
def test_schemas_compile_to_llama_cpp_grammars(
    kind: str, labels: tuple[str, ...], options: dict[str, Any]
) -> None:
    """The constrained-decoding path turns these schemas into GBNF; it must accept them."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(answer_schema(kind, labels, options)))
    for key in labels:
        assert f'\\"{key}\\"' in gbnf
    LlamaGrammar.from_string(gbnf, verbose=False)


def test_mixed_schema_instances_summing_to_100_parse_cleanly() -> None:
    schema = answer_schema("mixed", ABC, {})
    assert schema is not None
    _walk_schema(schema)
    for a in range(0, 101, 10):
        value = {"A0": a, "A1": (100 - a) // 2, "A2": 100 - a - (100 - a) // 2}
        result = parse_mixed_strategy(json.dumps(value), ABC)
        assert result.note is None
        assert result.probabilities == approx(tuple(v / 100 for v in value.values()))


# --------------------------------------------------------------------------- CoopEval log reader


SYNTHETIC_LOG = """===== Prompt [ID: aa11] [2026-01-01 10:00:00] =====
agent: model-x(CoT)#P1
prompt:

Actions available to each player:
- A0
- A1

Consider A2 as an additional action "Delegate to Mediator".
Return exactly one JSON object, for example:
{"A0": <INT>, "A1": <INT>, ...}

===== Response [ID: aa11] [2026-01-01 10:00:01] =====
agent: model-x(CoT)#P1
response:
Thinking.
{"A0": 10, "A1": 0, "A2": 90}

===== Prompt [ID: bb22] [2026-01-01 10:00:02] =====
agent: model-y(IO)#P2
prompt:
Mediator proposed by Player 1:
Mediator proposed by Player 2:
Mediator proposed by Player 3:
{"M1": <true/false>, "M2": <true/false>, ...}
"""


def test_iter_log_entries_on_a_synthetic_log(tmp_path: Path) -> None:
    path = tmp_path / "game_log.txt"
    path.write_text(SYNTHETIC_LOG, encoding="utf-8")
    entries = list(iter_log_entries(path))
    assert [e.id for e in entries] == ["aa11", "bb22"]
    first, second = entries
    assert isinstance(first, LogEntry)
    assert first.agent == "model-x(CoT)#P1"
    assert first.response == 'Thinking.\n{"A0": 10, "A1": 0, "A2": 90}'
    assert first.prompt.startswith("Actions available to each player:")
    assert first.time == "2026-01-01 10:00:00"
    assert second.response is None
    assert classify_prompt(first.prompt) == PromptInfo("mixed", ABC)
    assert classify_prompt(second.prompt) == PromptInfo("approvals", ("M1", "M2", "M3"))
    assert action_labels(first.prompt) == AB
    assert classify_prompt("Say something.") == PromptInfo("unknown", ())


SAMPLE = Path(os.environ.get("COOPEVAL_SAMPLE", Path(__file__).parent / "data" / "coopeval_sample"))
LOGS = sorted(SAMPLE.glob("*/game_log.txt"))

# CoopEval's enum names for the base actions, in label order (A0 is the cooperative one).
ACTION_LABEL = {
    "PrisonersDilemmaAction.COOPERATE": "A0",
    "PrisonersDilemmaAction.DEFECT": "A1",
    "TrustGameAction.GIVE": "A0",
    "TrustGameAction.KEEP": "A1",
}


def _parse_entry(entry: LogEntry) -> tuple[PromptInfo, Any, str | None, str | None]:
    """(prompt info, parsed, note, error reason) for one real log entry."""
    info = classify_prompt(entry.prompt)
    options = {"n_players": info.n_players} if info.kind == "mediator" else {}
    try:
        parsed, note = parse_answer(
            info.kind, entry.response or "", labels=info.labels, options=options
        )
    except ParseError as err:
        return info, None, None, err.reason
    return info, parsed, note, None


@pytest.fixture(scope="module")
def real_entries() -> dict[str, list[LogEntry]]:
    assert len(LOGS) == 2, f"expected the CoopEval sample logs under {SAMPLE}"
    return {path.parent.name: list(iter_log_entries(path)) for path in LOGS}


def test_real_logs_are_read_completely(real_entries: dict[str, list[LogEntry]]) -> None:
    for name, entries in real_entries.items():
        raw = (SAMPLE / name / "game_log.txt").read_text(encoding="utf-8")
        assert len(entries) == raw.count("===== Prompt [ID: ") == raw.count("===== Response [ID: ")
        assert all(e.response for e in entries)
        assert len({e.id for e in entries}) == len(entries)
    kinds = Counter(
        (name, classify_prompt(e.prompt)) for name, entries in real_entries.items() for e in entries
    )
    assert kinds == {
        ("no_mechanism_prisoners_dilemma", PromptInfo("mixed", AB)): 72,
        ("mediation_trust_game", PromptInfo("mixed", ABC)): 75,
        ("mediation_trust_game", PromptInfo("approvals", M12)): 73,
        ("mediation_trust_game", PromptInfo("mediator", AB, 2)): 12,
    }


def test_every_real_answer_parses_or_is_rejected_for_a_reason(
    real_entries: dict[str, list[LogEntry]],
) -> None:
    outcomes: Counter[tuple[str, str]] = Counter()
    notes: Counter[str] = Counter()
    rejected: dict[str, tuple[str, str]] = {}
    for entries in real_entries.values():
        for entry in entries:
            info, parsed, note, reason = _parse_entry(entry)
            outcomes[(info.kind, "ok" if reason is None else "rejected")] += 1
            if reason is not None:
                rejected[entry.id] = (info.kind, reason)
                continue
            if note is not None:
                notes[note] += 1
            if info.kind == "mixed":
                assert math.isclose(sum(parsed.probabilities), 1.0)
                assert all(p >= 0 for p in parsed.probabilities)
    assert outcomes == {
        ("mixed", "ok"): 144,
        ("mixed", "rejected"): 3,
        ("approvals", "ok"): 72,
        ("approvals", "rejected"): 1,
        ("mediator", "ok"): 12,
    }
    # The rejected replies are qwen answers cut off mid-reasoning: there is no JSON at all.
    assert rejected == {
        "0840d6f4": ("mixed", "no JSON object with the keys A0, A1, A2 was found"),
        "cd284a7e": ("mixed", "no JSON object with the keys A0, A1, A2 was found"),
        "93eb2013": ("mixed", "no JSON object with the keys A0, A1, A2 was found"),
        "a4fc15df": ("approvals", "no JSON object with the keys M1, M2 was found"),
    }
    # The only repair real replies needed: the answer restated, the last copy used.
    assert notes == {
        "2 answer objects found, the last one used": 10,
        "3 answer objects found, the last one used": 1,
        "4 answer objects found, the last one used": 1,
        "16 answer objects found, the last one used": 1,
    }


def test_real_parses_agree_with_what_coopeval_recorded(
    real_entries: dict[str, list[LogEntry]],
) -> None:
    """Cross-check against CoopEval's own records: votes and mediator designs must match
    exactly, and every action CoopEval sampled must have positive probability in our parse.
    The four replies we reject are exactly the ones CoopEval re-asked (absent from records)."""
    checked = Counter[str]()
    for name, entries in real_entries.items():
        by_id = {e.id: e for e in entries}
        used: set[str] = set()
        folder = SAMPLE / name
        for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines():
            for record in json.loads(line):
                # Mechanism runs record {"votes", "moves", ...}; plain runs a list of moves.
                for move in record.get("moves", [record]):
                    entry = by_id[move["trace_id"]]
                    used.add(entry.id)
                    info, parsed, _, reason = _parse_entry(entry)
                    assert reason is None and info.kind == "mixed"
                    label = "A2" if move.get("mediated") else ACTION_LABEL[move["action"]]
                    assert parsed.probabilities[info.labels.index(label)] > 0, entry.id
                    checked["moves"] += 1
                for vote in record.get("votes", []):
                    entry = by_id[vote["trace_id"]]
                    used.add(entry.id)
                    info, parsed, _, reason = _parse_entry(entry)
                    assert reason is None and info.kind == "approvals"
                    assert {k.removeprefix("M"): v for k, v in parsed.items()} == vote["votes"]
                    checked["votes"] += 1
        design_file = folder / "mediator_design.json"
        if design_file.exists():
            for design in json.loads(design_file.read_text(encoding="utf-8")).values():
                entry = by_id[design["trace_id"]]
                used.add(entry.id)
                info, parsed, _, reason = _parse_entry(entry)
                assert reason is None and info.kind == "mediator"
                assert parsed == {n: ACTION_LABEL[action] for n, action in design["mediator"]}
                checked["designs"] += 1
        unused = {e.id for e in entries} - used
        assert unused == (
            {"0840d6f4", "cd284a7e", "93eb2013", "a4fc15df"} if "mediation" in name else set()
        )
    assert checked["designs"] == 12
    assert checked["votes"] == 72
    assert checked["moves"] == 72 + 72
