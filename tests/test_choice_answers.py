"""The ``choice`` answer kind: exactly one action, ``{"choice": "<label>"}``.

Parsing (clean, tolerated with a note, re-asked with a reason), its schema and its
grammar for the embedded model, the strategy agent's seeded pick, a human's typed move,
and a repeated match played with ``answer = "choice"`` through the real sweep runner and
SQLite store, including a model that is re-asked after a malformed reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coop_tui.agents.strategies import get_strategy
from coop_tui.agents.strategy_agent import StrategyAgent
from coop_tui.decisions import DecisionRequest, SeatView
from coop_tui.games import get_game
from coop_tui.parsing import ParseError, parse_answer
from coop_tui.schemas import answer_schema
from coop_tui.session import human_answer, prompt_text
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

AB = ("A0", "A1")
JF = ("J", "F")


# --------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "labels", "label", "note"),
    [
        ('{"choice": "A1"}', AB, "A1", None),
        ('I think cooperating is best.\n{"choice": "A0"}', AB, "A0", None),
        ('Draft {"choice": "A0"} ... final: {"choice": "A1"}', AB, "A1", "2 answer objects"),
        ('{"Choice": "a1"}', AB, "A1", "ignoring case"),
        ('{"choice": " F "}', JF, "F", "ignoring case"),
        ('```json\n{"choice": "J"}\n```', JF, "J", None),
        ("{'choice': 'J'}", JF, "J", "single quotes"),
        ('{"choice": "A1", "reason": "they defected"}', AB, "A1", "other keys ignored"),
        ("A1", AB, "A1", "bare action label"),
        ('"F".', JF, "F", "bare action label"),
    ],
)
def test_choice_is_read_and_every_repair_is_noted(
    text: str, labels: tuple[str, ...], label: str, note: str | None
) -> None:
    parsed, got_note = parse_answer("choice", text, labels=labels)
    assert parsed == label
    if note is None:
        assert got_note is None
    else:
        assert got_note is not None and note in got_note


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("I choose to cooperate.", 'no JSON object with the key "choice"'),
        ('{"A0": 100, "A1": 0}', 'no JSON object with the key "choice"'),
        ('{"choice": "A2"}', "must be one of A0, A1"),
        ('{"choice": 1}', "must be one of A0, A1"),
        ('{"choice": ["A0", "A1"]}', "exactly one action"),
        ('{"choice": "A0", "A1": 50}', "not also keys named after actions"),
        ('{"choice": "A0", "choice": "A1"}', "appears more than once"),
        ("A0 or A1", 'no JSON object with the key "choice"'),
    ],
)
def test_unusable_choices_are_re_asked_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_answer("choice", text, labels=AB)
    assert reason in err.value.reason


def test_choice_needs_labels() -> None:
    with pytest.raises(ValueError):
        parse_answer("choice", '{"choice": "A0"}', labels=())


def test_choice_schema_enumerates_the_labels_and_accepts_what_it_describes() -> None:
    schema = answer_schema("choice", JF)
    assert schema == {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": ["J", "F"]}},
        "required": ["choice"],
        "additionalProperties": False,
    }
    for label in JF:
        assert parse_answer("choice", json.dumps({"choice": label}), labels=JF) == (label, None)


def test_choice_grammar_is_a_dedicated_gbnf_that_llama_cpp_accepts() -> None:
    from coop_tui.agents.local import _grammar, answer_grammar, choice_gbnf

    kind, payload = answer_grammar("choice", JF, answer_schema("choice", JF))
    assert kind == "gbnf" and payload == choice_gbnf(JF)
    assert '"\\"J\\"" | "\\"F\\""' in payload
    _grammar(kind, payload)  # llama.cpp parses it (raises LocalModelError otherwise)


# --------------------------------------------------------------------------- agents
def _choice_request(strategy_labels: tuple[str, ...], mapping: tuple[int, ...], draw: float,
                    history: tuple = ()) -> DecisionRequest:
    game = get_game("pd_canonical")
    return DecisionRequest(
        seat=0, round=1, phase="play", kind="choice", messages=(),
        view=SeatView(game=game, seat=0, round=1, history=history),
        labels=strategy_labels, label_to_action=mapping, options={"draw": draw},
    )


@pytest.mark.parametrize(
    ("draw", "mapping", "expected"),
    [
        (0.10, (0, 1), "J"),  # action 0 (cooperate) under J
        (0.69, (0, 1), "J"),
        (0.71, (0, 1), "F"),
        (0.10, (1, 0), "F"),  # labels shuffled: cooperate is F
        (0.99, (1, 0), "J"),
    ],
)
def test_a_stochastic_strategy_picks_by_the_engine_draw(
    draw: float, mapping: tuple[int, ...], expected: str
) -> None:
    agent = StrategyAgent("r", get_strategy("random", p=0.7))
    reply = agent.answer(_choice_request(JF, mapping, draw))
    assert json.loads(reply) == {"choice": expected}
    assert parse_answer("choice", reply, labels=JF)[0] == expected


def test_a_deterministic_strategy_picks_its_action_whatever_the_draw() -> None:
    agent = StrategyAgent("d", get_strategy("always_defect"))
    for draw in (0.0, 0.5, 0.999):
        assert json.loads(agent.answer(_choice_request(AB, (1, 0), draw))) == {"choice": "A0"}


def test_a_human_types_a_number_or_a_label() -> None:
    assert json.loads(human_answer("1", JF, "choice")) == {"choice": "F"}
    assert json.loads(human_answer("j", JF, "choice")) == {"choice": "J"}
    with pytest.raises(ValueError, match="choose one action"):
        human_answer("J=50 F=50", JF, "choice")


# --------------------------------------------------------------------------- played
AGENTS = {
    "tft": {"strategy": "tit_for_tat"},
    "rnd": {"strategy": "random", "params": {"p": 0.5}},
}


@pytest.mark.usefixtures("strategies_read_prompts")
async def test_a_repeated_match_with_choice_answers_stores_one_action_per_decision(
    tmp_path: Any,
) -> None:
    data = {
        "name": "choice", "seed": 3, "agents": AGENTS,
        "experiments": [{
            "game": "pd_canonical", "mechanism": "repetition", "matchup": [["rnd", "tft"]],
            "rounds": 12, "continuation": 0.9, "answer": "choice", "randomize_labels": True,
        }],
    }
    store = Store(tmp_path / "c.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    (match,) = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    decisions = store.decisions(match["id"])
    assert len(decisions) == 24
    for d in decisions:
        assert d.kind == "choice" and d.valid and d.attempts == 1
        assert d.parsed in d.labels
        played = d.label_to_action[d.labels.index(d.parsed)]
        assert d.action == played
        assert d.distribution is not None and d.distribution[played] == 1.0
        assert sum(d.distribution) == 1.0
        assert d.coop_prob == (1.0 if played == 0 else 0.0)
        content = prompt_text(d.prompt)
        assert '"choice"' in content and "probability for each" not in content
        assert "picks one of their actions" in content
    rnd = [d.action for d in decisions if d.seat == 0]
    tft = sorted((d for d in decisions if d.seat == 1), key=lambda d: d.round)
    # random(0.5) really varies with the match seed, and tit-for-tat copies it
    assert 0 < sum(rnd) < 12
    by_round = {d.round: d.action for d in decisions if d.seat == 0}
    assert [d.action for d in tft] == [0] + [by_round[t] for t in range(1, 12)]
    # the condition says the protocol, so choice and mixed results are never pooled
    assert json.loads(match["condition"])["answer"] == "choice"


async def test_a_malformed_model_choice_is_re_asked_with_the_reason(tmp_path: Any) -> None:
    replies: dict[str, int] = {}

    def answer(body: dict[str, Any]) -> str:
        prompt = last_user_message(body)
        if "could not be used" in prompt:
            first = next(m["content"] for m in body["messages"] if m["role"] == "user")
            labels = re.findall(r"^- (A\d)$", first, re.M)
            return f'Fine. {{"choice": "{labels[0]}"}}'
        replies["first"] = replies.get("first", 0) + 1
        return "I would go with both, 50/50."

    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as server:
        data = {
            "name": "choice-llm", "seed": 1,
            "agents": {"m": {"model": "openai/test", "api_base": server.url},
                       "tft": {"strategy": "tit_for_tat"}},
            "experiments": [{"game": "prisoners", "matchup": [["m", "tft"]],
                             "answer": "choice"}],
        }
        store = Store(tmp_path / "r.db")
        summary = await run_sweep(build_sweep(data, check_keys=False), store)
    (match,) = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    (model,) = [d for d in store.decisions(match["id"]) if d.seat == 0]
    assert model.valid and model.attempts == 2 and model.parsed == "A0" and model.action == 0
    assert 'no JSON object with the key "choice"' in model.retries[0].error
    assert replies["first"] == 1


def test_a_bad_answer_mode_names_the_field() -> None:
    data = {"name": "x", "agents": AGENTS,
            "experiments": [{"game": "prisoners", "agents": ["tft"], "answer": "pure"}]}
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False)
    assert err.value.field == "experiments[0].answer"
    assert "mixed" in err.value.message and "choice" in err.value.message


def test_answer_is_a_grid_axis_and_keeps_mixed_keys_unchanged() -> None:
    base = {"name": "x", "agents": AGENTS,
            "experiments": [{"game": "prisoners", "agents": ["tft"]}]}
    plain = build_sweep(base, check_keys=False).cells
    both = build_sweep({**base, "experiments": [{"game": "prisoners", "agents": ["tft"],
                                                 "answer": ["mixed", "choice"]}]},
                       check_keys=False).cells
    assert [c.answer for c in both] == ["mixed", "choice"]
    assert both[0].match_key(0) == plain[0].match_key(0)
    assert both[1].match_key(0) != plain[0].match_key(0)


@pytest.mark.parametrize("mechanism", ["none", "similarity", "mediation", "contracting",
                                       "reputation"])
async def test_every_mechanism_plays_with_choice_answers(tmp_path: Any, mechanism: str) -> None:
    extra = {"similarity": 80} if mechanism == "similarity" else {}
    data = {"name": "mech-choice", "seed": 2,
            "agents": {"t": {"strategy": "tit_for_tat"}, "d": {"strategy": "always_defect"}},
            "experiments": [{"game": "prisoners", "mechanism": mechanism, "matchup": "cross",
                             "agents": ["t", "d"], "answer": "choice",
                             "randomize_labels": "trial", **extra}]}
    store = Store(tmp_path / "m.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    plays = [d for m in matches for d in store.decisions(m["id"]) if d.phase == "play"]
    assert plays and all(d.kind == "choice" and d.parsed in d.labels for d in plays)
