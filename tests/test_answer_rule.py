"""The store's answer rule: a decision with answer text is either parsed or stored invalid
with its reason, on every write path (engine events, strategies' direct rows, an
importer's rows).

An importer once stored 648 CoopEval answers it could not parse as valid decisions; the
store now refuses such a row, and a database holding some repairs them when opened.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, DirectDecisions, EventBus, MatchDone, MatchStarted
from coop_tui.migrations import REPAIRED_NO_REASON, REPAIRED_UNPARSED, answer_rule_broken
from coop_tui.store import (
    DECISION_COLUMNS,
    INSERT_DECISION,
    AnswerRuleError,
    Store,
    decision_row,
    insert_decisions,
)

ANSWER = '{"A0": 50, "A1": 50}'


def decision(key: str, **changes: object) -> Decision:
    base = Decision(
        match_id="r-m", round=1, phase="play", seat=0, kind="mixed", agent="m",
        prompt=[{"role": "user", "content": "choose"}], response=ANSWER, reasoning="",
        parsed={"A0": 0.5, "A1": 0.5}, valid=True, attempts=1, error=None, cache_key=key,
        content_key="c" + key, labels=("A0", "A1"), label_to_action=(0, 1),
        distribution=(0.5, 0.5), action=1, coop_prob=0.5, cooperated=False, created_at=1.0,
    )
    return dataclasses.replace(base, **changes)


def opened(tmp_path: Path) -> tuple[Store, EventBus]:
    store = Store(tmp_path / "rule.db")
    bus = EventBus()
    bus.subscribe(store, critical=True)
    store.create_run("r", "r", kind="sweep", seed=1, sweep_hash="r", spec={})
    bus.emit(MatchStarted("r", "r-m", 0, "prisoners", "none", ("m", "m"),
                          info={"agent_kinds": ["llm", "llm"]}))
    return store, bus


def count(store: Store) -> int:
    return store.db.execute("select count(*) from decisions").fetchone()[0]


def broken(store: Store) -> int:
    return store.db.execute(f"select count(*) from decisions where {answer_rule_broken()}").fetchone()[0]


def raw_insert(store: Store, d: Decision) -> None:
    """A row written as an earlier coop-tui (or a careless writer) could: no check at all."""
    row = {**dict.fromkeys(DECISION_COLUMNS), **vars(d), "prompt": None, "parsed": None,
           "labels": None, "label_map": None, "distribution": None, "retries": "[]",
           "options": None, "valid": int(d.valid)}
    with store.db.conn:
        store.db.conn.execute(INSERT_DECISION, [row[c] for c in DECISION_COLUMNS])


def test_rows_that_keep_the_rule_are_stored(tmp_path: Path) -> None:
    store, bus = opened(tmp_path)
    bus.emit(DecisionDone(decision("parsed")))
    bus.emit(DecisionDone(decision("invalid", parsed=None, valid=False, error="no JSON object")))
    bus.emit(DecisionDone(decision("silent", response="", parsed=None)))  # no answer text
    with store.db.conn:
        insert_decisions(store.db.conn, [decision_row(decision("imported", seat=1))])
    assert count(store) == 4 and broken(store) == 0
    store.close()


@pytest.mark.parametrize("changes", [{"parsed": None},
                                     {"parsed": None, "valid": False, "error": ""}])
def test_the_engine_event_path_refuses_a_broken_decision(tmp_path: Path, changes: dict) -> None:
    store, bus = opened(tmp_path)
    with pytest.raises(AnswerRuleError, match="parsed|reason"):
        bus.emit(DecisionDone(decision("k", **changes)))
    assert count(store) == 0
    store.close()


def test_a_strategys_direct_rows_are_held_to_it(tmp_path: Path) -> None:
    store, bus = opened(tmp_path)
    bus.emit(MatchStarted("r", "s-m", 0, "prisoners", "none", ("s", "s"),
                          info={"agent_kinds": ["strategy", "strategy"]}))
    unparsed = ("I cooperate.", None, ("A0", "A1"), (0, 1), (1.0, 0.0), 0, 1.0, True, None)
    bus.emit(DirectDecisions("s-m", 1, 1.0, ((0, "s", 0.1, unparsed),)))
    with pytest.raises(AnswerRuleError, match="direct answer 'I cooperate.'"):
        bus.emit(MatchDone("s-m", (1.0, 1.0)))  # a strategy match's rows are written at its end
    assert count(store) == 0
    store.close()


def test_an_importer_cannot_store_an_unparsed_answer_as_valid(tmp_path: Path) -> None:
    store, _ = opened(tmp_path)
    with pytest.raises(AnswerRuleError, match="stored valid but was not parsed"):
        decision_row(decision("k", parsed=None))
    # rows an importer builds itself go through the same check, and its transaction
    # writes nothing when one breaks the rule
    good = decision_row(decision("good"))
    bad = {**decision_row(decision("bad", seat=1)), "parsed": None}
    with pytest.raises(AnswerRuleError, match="decision of m in match r-m"), store.db.conn:
        insert_decisions(store.db.conn, [good, bad])
    assert count(store) == 0
    store.close()


def test_opening_an_older_database_repairs_its_rows(tmp_path: Path) -> None:
    """Rows stored before the rule become invalid with a reason, and the run's totals
    (read by the runs list and the report) count them."""
    store, bus = opened(tmp_path)
    bus.emit(DecisionDone(decision("a")))
    raw_insert(store, decision("b", seat=1, parsed=None, error="unknown key 'A2'"))
    raw_insert(store, decision("c", seat=1, round=2, parsed=None, valid=False))
    raw_insert(store, decision("e", round=2, parsed=None))
    bus.emit(MatchDone("r-m", (1.0, 1.0)))
    assert store.db.execute("select invalid from match_totals").fetchone()[0] == 1
    assert broken(store) == 3
    with store.db.conn:  # the database as an earlier coop-tui left it
        store.db.execute("delete from _migrations where name = 'm190_answers_parsed_or_invalid'")
    store.close()

    store = Store(tmp_path / "rule.db")
    rows = dict(store.db.execute("select cache_key, error from decisions where valid = 0").fetchall())
    assert rows == {"b": "unknown key 'A2'", "c": REPAIRED_NO_REASON, "e": REPAIRED_UNPARSED}
    assert broken(store) == 0
    assert store.db.execute("select invalid from match_totals").fetchone()[0] == 3
    store.close()
