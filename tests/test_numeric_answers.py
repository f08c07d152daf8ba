"""The ``number`` and ``allocation`` answer kinds: what real model output they accept,
what they refuse (with a reason the re-ask shows), and the constraint the embedded model
decodes under."""

from __future__ import annotations

import json

import pytest

from coop_tui.parsing import ParseError, parse_answer
from coop_tui.schemas import answer_schema

OFFER = {"name": "offer", "min": 0, "max": 100, "step": 1}
BLOTTO = {"keys": ["B1", "B2", "B3"], "min": 0, "max": 100, "step": 1, "total": 100}


@pytest.mark.parametrize(("text", "value"), [
    ('{"offer": 40}', 40),
    ("Let me think. Half would be 50 but I keep a little.\n```json\n{\"offer\": 45}\n```", 45),
    ("I'll offer $4.", 4),
    ("<answer>33</answer>", 33),
    ("Reasoning about 100 points and 2 players...\nOFFER: 30", 30),
    ("  60 ", 60),
    ("**Final answer:** 25", 25),
    ('{"value": 12.0}', 12),
    ("{'offer': 7}", 7),
])
def test_number_answers_in_the_shapes_models_write(text: str, value: int) -> None:
    parsed, _ = parse_answer("number", text, options=OFFER)
    assert parsed == value and isinstance(parsed, int)


@pytest.mark.parametrize(("text", "reason"), [
    ('{"offer": 150}', "offer 150 is above the maximum 100"),
    ('{"offer": -5}', "offer -5 is below the minimum 0"),
    ('{"offer": 12.5}', "steps of 1"),
    ("I would offer 40 or maybe 50.", "several numbers"),
    ("I cannot decide.", 'no offer found; end with one JSON object such as {"offer": <number>}'),
])
def test_bad_numbers_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("number", text, options=OFFER)
    assert reason in err.value.reason


def test_number_steps_and_real_ranges() -> None:
    opts = {"name": "bid", "min": 0, "max": 10, "step": 0.5}
    assert parse_answer("number", '{"bid": 7.5}', options=opts)[0] == 7.5
    with pytest.raises(ParseError, match="steps of 0.5"):
        parse_answer("number", '{"bid": 7.25}', options=opts)
    assert answer_schema("number", (), opts)["properties"]["bid"]["enum"][:3] == [0, 0.5, 1]


@pytest.mark.parametrize(("text", "expected"), [
    ('{"B1": 40, "B2": 30, "B3": 30}', [40, 30, 30]),
    ("I will split them.\n<answer>40, 30, 30</answer>", [40, 30, 30]),
    ("Concentrate on two fields: 50, 50, 0", [50, 50, 0]),
    ('```json\n{"b1": 34, "b2": 33, "b3": 33}\n```', [34, 33, 33]),
])
def test_allocations_in_the_shapes_models_write(text: str, expected: list[int]) -> None:
    parsed, _ = parse_answer("allocation", text, options=BLOTTO)
    assert [parsed[k] for k in ("B1", "B2", "B3")] == expected


@pytest.mark.parametrize(("text", "reason"), [
    ('{"B1": 40, "B2": 30, "B3": 20}', "add up to 90, they must add up to exactly 100"),
    ('{"B1": 40, "B2": 60}', "missing B3"),
    ('{"B1": 140, "B2": -20, "B3": -20}', "B1 140 is above the maximum 100"),
    ("<answer>50, 50</answer>", "give exactly 3 numbers"),
])
def test_bad_allocations_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("allocation", text, options=BLOTTO)
    assert reason in err.value.reason


def test_allocation_without_a_sum() -> None:
    opts = {"keys": ["A", "B"], "min": 0, "max": 100, "step": 1}
    assert parse_answer("allocation", '{"A": 100, "B": 100}', options=opts)[0] == {"A": 100, "B": 100}


def test_the_embedded_model_decodes_numbers_and_allocations_under_a_grammar() -> None:
    from coop_tui.agents.local import _grammar, answer_grammar

    schema = answer_schema("number", (), OFFER)
    kind, payload = answer_grammar("number", (), schema)
    assert kind == "schema" and json.loads(payload)["properties"]["offer"]["enum"] == list(range(101))
    _grammar(kind, payload)  # llama.cpp accepts it
    kind, payload = answer_grammar("allocation", (), answer_schema("allocation", (), BLOTTO))
    assert list(json.loads(payload)["properties"]) == ["B1", "B2", "B3"]
    _grammar(kind, payload)


def test_allocation_grammar_spells_out_exactly_the_splits_with_the_sum() -> None:
    from coop_tui.agents.local import _grammar, allocation_gbnf, answer_grammar

    small = allocation_gbnf(("B1", "B2", "B3"), 4, 0, 4)
    assert small is not None
    # after B1 = 3 the rest is 1: B2 may be 0 or 1, and B3 is forced to what is left
    assert 'f1-1 ::= "\\"B2\\"" space ":" space ("0" space "," space f2-1 | "1" space "," space f2-0)' in small
    assert 'f2-0 ::= "\\"B3\\"" space ":" space "0" space' in small
    assert allocation_gbnf(("A", "B"), 300, 0, 100) is None  # no split can reach the sum
    kind, payload = answer_grammar("allocation", (), answer_schema("allocation", (), BLOTTO), BLOTTO)
    assert kind == "gbnf" and payload.count("::=") > 100
    _grammar(kind, payload)  # llama.cpp accepts it


@pytest.mark.slow
async def test_the_embedded_model_plays_blotto_with_an_exact_sum(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    data = {"name": "blotto", "seed": 2, "agents": {
        "local": {"model": "local/smollm2", "style": "direct", "max_tokens": 40},
        "even": {"strategy": "fixed_number"}},
        "experiments": [{"game": "colonel_blotto", "game_params": {"rounds": 2},
                         "matchup": [["local", "even"]], "max_attempts": 1}]}
    store = Store(tmp_path / "b.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    model = [d for d in store.decisions(match["id"]) if d.seat == 0]
    assert len(model) == 2
    for d in model:
        assert d.constrained and d.attempts == 1 and sum(d.parsed.values()) == 100
