"""Rubric files, judgement answers and the judge command's bad-input errors (no model)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.analysis.sections.judgements import cohen_kappa
from coop_tui.judging.rubric import builtin_rubrics, judgement_gbnf, load_rubric
from coop_tui.parsing import ParseError, parse_answer
from coop_tui.schemas import answer_schema
from coop_tui.spec import SpecError

COOPEVAL_TYPES = [
    "Individual utility maximization", "Strategic equilibrium focus", "Social welfare maximization",
    "Inequity aversion", "Reciprocity", "Strategic influence", "Trust evaluation",
    "Competitiveness", "Uncertainty evaluation", "Social norm conformity", "Rule misunderstanding",
    "Exploration-exploitation trade-off", "Risk aversion", "Strategy legibility",
    "Multidimensional reasoning", "Others",
]


def test_builtin_rubrics_carry_coopevals_categories_and_seed_000s_reasoning_types() -> None:
    assert {"justifications", "similarity-reasoning"} <= set(builtin_rubrics())
    just = load_rubric("justifications")
    assert [c.name for c in just.categories] == COOPEVAL_TYPES  # its 16, "Others" included
    assert all(len(c.definition) > 40 for c in just.categories)
    assert just.threshold == 0.5 and just.version == "2" and just.protocol == "coopeval"
    sim = load_rubric("similarity-reasoning")
    assert {"causal", "acausal_expected_value", "dissimilar_plays_rational",
            "dissimilar_plays_opposite"} <= set(sim.ids)
    assert sim.protocol == "per-category"
    # CoopEval's request: the types by name, the game, the text; the answer shape
    from coop_tui.judging.rubric import coopeval_input_lines

    prompt = just.prompt("I defect because it dominates.",
                         coopeval_input_lines("Prisoner's Dilemma", "none", None, "alpha"))
    assert "I defect because it dominates." in prompt and "Game: Prisoner's Dilemma\n" in prompt
    assert all(f"- {name}:" in prompt for name in COOPEVAL_TYPES)
    # CoopEval's answer keys, its types as one string separated by commas
    assert ('"Reasoning_behind_classification": "why these types apply", "Confidence": 0.85, '
            '"justification_type": "<name>, <name>"}') in prompt and 'give "Others"' in prompt
    # the per-category protocol, as an option: one confidence per category id
    per = just.with_protocol("per-category")
    prompt = per.prompt("I defect because it dominates.", "game prisoners")
    assert all(f"- {cid}:" in prompt for cid in per.ids) and per.digest != just.digest


def test_coopeval_answers_give_one_confidence_and_a_list_of_types() -> None:
    just = load_rubric("justifications")
    opts = just.answer_options()
    parsed, note = parse_answer("judgement", 'Thinking...\n{"reasoning": "tit for tat", '
                                '"confidence": 0.9, "types": ["Reciprocity", "trust evaluation"]}',
                                labels=just.ids, options=opts)
    assert parsed == {"reasoning": "tit for tat", "confidence": 0.9,
                      "types": ["reciprocity", "trust_evaluation"]} and note is None
    # CoopEval's own shape, the one asked for: its keys, the types as one string
    parsed, note = parse_answer("judgement", '{"Reasoning_behind_classification": "", '
                                '"Confidence": 0.5, "justification_type": "Reciprocity, Others"}',
                                labels=just.ids, options=opts)
    assert parsed["types"] == ["reciprocity", "others"] and note is None
    present = just.present(parsed)
    assert present["reciprocity"] == (0.5, True) and present["risk_aversion"] == (0.0, False)
    for bad, reason in (('{"confidence": 80, "types": []}', "from 0 to 1"),
                        ('{"confidence": 0.5, "types": ["Kindness"]}', "not one of the categories"),
                        ('{"Confidence": 0.5}', '"justification_type"')):
        with pytest.raises(ParseError, match=reason):
            parse_answer("judgement", bad, labels=just.ids, options=opts)
    schema = answer_schema("judgement", just.ids, opts)
    pattern = re.compile(schema["properties"]["justification_type"]["pattern"])
    assert set(schema["properties"]) == {"Reasoning_behind_classification", "Confidence",
                                         "justification_type"}
    assert all(pattern.match(name) for name in COOPEVAL_TYPES)
    assert pattern.match("Reciprocity, Trust evaluation") and not pattern.match("Kindness")


def test_a_user_rubric_file_is_loaded_and_its_digest_follows_its_content(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    body = """
name = "mine"
version = 3
instructions = "Say what the text does."
[[categories]]
id = "threat"
name = "Threat"
definition = "The agent threatens to punish."
[[categories]]
id = "promise"
definition = "The agent promises to cooperate."
"""
    path.write_text(body)
    rubric = load_rubric(str(path))
    assert rubric.ids == ("threat", "promise") and rubric.version == "3"
    assert rubric.names["promise"] == "promise"
    digest = rubric.digest
    path.write_text(body.replace("punish.", "punish later."))
    assert load_rubric(str(path)).digest != digest


@pytest.mark.parametrize(("body", "field", "words"), [
    ('name = "x"\ninstructions = "y"\n', "categories", "is required"),
    ('name = "x"\ninstructions = "y"\n[[categories]]\nid = "Bad Id"\ndefinition = "d"\n',
     "categories[0].id", "lower-case"),
    ('name = "x"\ninstructions = "y"\n[[categories]]\nid = "a"\ndefinition = "d"\n'
     '[[categories]]\nid = "a"\ndefinition = "e"\n', "categories[1].id", "used twice"),
    ('name = "x"\ninstructions = "y"\nthreshold = 2\n[[categories]]\nid = "a"\ndefinition = "d"\n',
     "threshold", "at most 1"),
    ('name = "x"\ninstructions = "y"\ncolour = 1\n[[categories]]\nid = "a"\ndefinition = "d"\n',
     "colour", "not a known rubric field"),
    ('name = "x"\ninstructions = "y"\n[[categories]]\nid = "a"\n', "categories[0].definition",
     "is required"),
    ('name = "x"\ninstructions = "y"\n[output]\nformat = "labels"\n[[categories]]\nid = "a"\n'
     'definition = "d"\n', "output.format", "confidence-per-category"),
])
def test_bad_rubric_files_name_the_field(tmp_path: Path, body: str, field: str, words: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(SpecError) as err:
        load_rubric(str(path))
    assert err.value.field == f"rubric {path}: {field}"
    assert words in err.value.message


def test_judgement_answers_parse_and_malformed_ones_say_why() -> None:
    ids = ("reciprocity", "risk_aversion")
    parsed, note = parse_answer("judgement", 'Sure.\n```json\n{"reciprocity": 0.8, "risk_aversion": 0}\n```',
                                labels=ids)
    assert parsed == {"reciprocity": 0.8, "risk_aversion": 0.0} and note is None
    parsed, note = parse_answer("judgement", '{"Reciprocity": "0.5", "risk_aversion": 1}', labels=ids)
    assert parsed == {"reciprocity": 0.5, "risk_aversion": 1.0} and "strings" in note
    with pytest.raises(ParseError, match="from 0 to 1"):
        parse_answer("judgement", '{"reciprocity": 80, "risk_aversion": 0}', labels=ids)
    with pytest.raises(ParseError, match="missing: risk_aversion"):
        parse_answer("judgement", '{"reciprocity": 0.2}', labels=ids)
    with pytest.raises(ParseError, match="unknown key"):
        parse_answer("judgement", '{"reciprocity": 0.2, "risk_aversion": 0, "greed": 1}', labels=ids)
    schema = answer_schema("judgement", ids)
    assert schema["required"] == list(ids)
    assert schema["properties"]["reciprocity"] == {"type": "number", "minimum": 0, "maximum": 1}


def test_the_judgement_grammar_compiles_and_forces_every_category() -> None:
    from llama_cpp import LlamaGrammar

    ids = load_rubric("justifications").ids
    text = judgement_gbnf(ids)
    LlamaGrammar.from_string(text, verbose=False)  # raises on a malformed grammar
    assert all(f'\\"{cid}\\"' in text for cid in ids)
    # the confidence rule admits only 0, 1, 1.0 and 0.d / 0.dd
    assert 'conf ::= ("0" ("." [0-9] [0-9]?)? | "1" (".0")?) space' in text


def test_cohen_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, only A 5, only B 10, both no 15 -> po .7, pe .5 -> kappa .4
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohen_kappa(3, 0, 0, 0) is None
    assert cohen_kappa(0, 0, 0, 0) is None


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database with one strategy run (no text to judge, but a run to name)."""
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "s"\nseed = 1\n[agents.t]\nstrategy = "tit_for_tat"\n'
                     '[[experiments]]\ngame = "prisoners"\nmechanism = "none"\nmatchup = "self"\n'
                     'agents = ["t"]\n')
    path = tmp_path / "s.db"
    assert cli("--batch", str(sweep), "--db", str(path)).returncode == 0
    return path


def snapshot(path: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(path)
    try:
        return [(t, conn.execute(f"select count(*) from {t}").fetchone()[0])
                for (t,) in conn.execute("select name from sqlite_master where type = 'table'")]
    finally:
        conn.close()


@pytest.mark.parametrize(("args", "message"), [
    (["--judge", "gpt", "--rubric", "justifications"], "--judge: 'gpt' is not a model string"),
    (["--judge", "local/smollm2", "--rubric", "nope"], "--rubric: 'nope' is neither a built-in"),
    (["--judge", "local/bigmodel", "--rubric", "justifications"], "--judge: unknown embedded model"),
    (["--judge", "local/smollm2", "--rubric", "justifications", "--limit", "0"], "--limit"),
    (["--judge", "local/smollm2", "--rubric", "justifications", "--phase", "dance"], "--phase"),
    (["--judge", "local/smollm2", "--rubric", "justifications", "--resume"],
     "--resume: there is no judge pass"),
    (["nosuchrun", "--judge", "local/smollm2", "--rubric", "justifications"], "RUN: no run"),
])
def test_bad_judge_input_exits_2_naming_the_field_and_writes_nothing(
        db: Path, args: list[str], message: str) -> None:
    before = snapshot(db)
    done = cli("judge", *args, "--db", str(db))
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert snapshot(db) == before


@pytest.mark.slow
def test_a_strategy_or_a_missing_table_cannot_judge(db: Path, tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.tft]\nstrategy = "tit_for_tat"\n[agents.small]\nmodel = "local/smollm2"\n')
    done = cli("judge", "--judge", "tft", "--agents", str(agents), "--rubric", "justifications",
               "--db", str(db))
    assert done.returncode == 2 and "agents.tft: tft is a strategy" in done.stderr
    done = cli("judge", "--judge", "big", "--agents", str(agents), "--rubric", "justifications",
               "--db", str(db))
    assert done.returncode == 2 and "has no agent table 'big'" in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\ninstructions = "x"\n[[categories]]\nid = "A"\ndefinition = "d"\n')
    done = cli("judge", "--judge", "small", "--agents", str(agents), "--rubric", str(bad),
               "--db", str(db))
    assert done.returncode == 2 and f"rubric {bad}: categories[0].id" in done.stderr
    # a run without text: nothing to ask, nothing written but the judge run's record
    done = cli("judge", "--judge", "small", "--agents", str(agents), "--rubric", "justifications",
               "--db", str(db), "--dry-run")
    assert done.returncode == 0 and "0 play decisions of chain-of-thought" in done.stdout
    assert json.dumps(snapshot(db))  # still a readable database


def test_a_provider_judge_without_its_key_is_refused_before_anything_is_written(
        db: Path, tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    before = snapshot(db)
    done = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "judge", "--judge", "anthropic/claude-sonnet-4-5",
         "--rubric", "justifications", "--db", str(db)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "--judge: no API key for anthropic/claude-sonnet-4-5: set ANTHROPIC_API_KEY" in done.stderr
    assert snapshot(db) == before


def test_a_dry_run_with_a_provider_judge_needs_no_key_and_names_the_one_it_will(
        db: Path, tmp_path: Path) -> None:
    """A dry run sends nothing, like ``--batch --dry-run``: it says which key the real pass
    needs instead of refusing."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    before = snapshot(db)
    done = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "judge", "--judge", "anthropic/claude-sonnet-4-5",
         "--rubric", "justifications", "--db", str(db), "--dry-run"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ANTHROPIC_API_KEY (not set: set it before the real pass)" in done.stdout
    assert snapshot(db) == before
