"""Transcripts of the super-additive cooperation study, one per message family.

The paper's code (pippot/Superadditive-cooperation-LLMs, ``IPDv6.py`` and
``metaprompts.py``) plays one game, the iterated Prisoner's Dilemma, in team tournaments
of three structures (RI: repeated interaction; GC: group competition; SA: both), and
sends five kinds of message: the move (with the keep-playing choice), the plan, its
critique, and the comprehension questions after a match. Every (structure, message) pair
the shipped study plays is mapped in ``FAMILIES`` to the test that pins its transcript;
the comprehension battery is pinned here against ``metaprompts.py``'s ten questions.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer
from tests.test_mechanisms import STRATEGIES, phases, run, sweep_data
from tests.test_teams import llm, model, teams_exp  # noqa: F401  (model: the fixture)

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "data/studies/superadditive.toml"

PLAY = "test_teams.py::test_prompts_unknown_opponent_plans_and_exit_timing"
PLAN = "test_teams.py::test_planner_sees_the_co_player_and_the_match_stats_as_the_code_does"
FAMILIES: dict[tuple[str, str], str] = {
    **{(s, "play"): PLAY for s in ("RI", "GC", "SA")},
    **{(s, "exit"): PLAY for s in ("RI", "GC", "SA")},
    ("RI", "plan"): PLAN, ("SA", "plan"): PLAN,
    ("GC", "plan"): "test_protocol_superadditive.py::test_comprehension_questions_are_the_codes_ten",
    **{(s, "critique"): PLAN for s in ("RI", "SA")},
    ("GC", "critique"): "test_protocol_superadditive.py::test_comprehension_questions_are_the_codes_ten",
    **{(s, "meta"): "test_protocol_superadditive.py::test_comprehension_questions_are_the_codes_ten"
       for s in ("RI", "GC", "SA")},
    ("SA", "numbering"): "test_teams.py::test_one_numbering_in_every_prompt",
}
"""(structure, message) -> the test pinning its transcript."""

CODE_QUESTIONS = {
    "payoff_range": "the lowest and the highest number of points a player can get",
    "actions": "actions a player may choose in this game",
    "payoff": "How many points do you get in a single round if you choose",
    "rounds": "How many rounds did the match you just finished last?",
    "co_action": "Which action did your co-player choose in round",
    "co_points": "How many points did your co-player get in round",
    "co_count": "How many times did your co-player choose",
    "co_total": "your co-player's total score in that match",
    "tit_for_tat": "mostly play tit-for-tat",
    "forgiving": "Was your co-player forgiving",
}
"""``metaprompts.py``'s ten questions, by our key, as our wording asks them."""


def test_every_structure_and_message_has_a_transcript_test() -> None:
    experiments = tomllib.loads(STUDY.read_text())["experiments"]
    structures = {s for e in experiments for s in (
        e["structure"] if isinstance(e["structure"], list) else [e["structure"]])}
    assert structures == {"RI", "GC", "SA"}
    assert {e["game"] for e in experiments} == {"ipd"}
    for structure in structures:
        for message in ("play", "exit", "plan", "critique", "meta"):
            assert (structure, message) in FAMILIES, (structure, message)
    for where in set(FAMILIES.values()):
        file, name = where.split("::")
        tree = ast.parse((ROOT / "tests" / file).read_text())
        assert name in {n.name for n in tree.body if hasattr(n, "name")}, where


async def test_comprehension_questions_are_the_codes_ten(
        tmp_path: Any, model: LoopbackServer) -> None:  # noqa: F811
    """GC, one match cut to two rounds by the budget between Agent #1 and #2, then the battery for both:
    each of the code's ten questions once per player, each prompt carrying the rules, the
    groups and the finished match round by round, as the code's meta prompt does."""
    store, (m,) = await run(tmp_path, sweep_data(teams_exp(
        ["m", "m"], structure="GC", teams=2, team_size=1, rounds=3, budget=2, plan_every=1,
        meta="all", exit_timing="with_move"), agents={**STRATEGIES, "m": llm(model)}))
    assert isinstance(store, Store)
    metas = [d for d in store.decisions(m["id"]) if d.phase == "meta"]
    asked = phases(store, m["id"])["meta"]
    for seat in ("0", "1"):
        keys = [q["key"] for q in asked[seat]["questions"]]
        assert sorted(keys) == sorted(CODE_QUESTIONS)
    assert len(metas) == 2 * len(CODE_QUESTIONS)
    for seat in (0, 1):
        questions = []
        for d in (d for d in metas if d.seat == seat):
            text = d.prompt[-1]["content"]
            assert "the match you were playing has just ended" in text
            assert "Group" in text  # the group information (GC)
            assert "Round 1: you chose" in text and "Round 2: you chose" in text
            questions.append(text.split("Question:")[1])
        for key, fragment in CODE_QUESTIONS.items():
            assert sum(fragment in q for q in questions) == 1, key
    plans = {d.phase for d in store.decisions(m["id"])}
    assert {"plan", "critique"} <= plans  # GC also plans and critiques
    critique = next(d.prompt[-1]["content"] for d in store.decisions(m["id"])
                    if d.phase == "critique")
    assert "You review the strategy" in critique and "Group" in critique
