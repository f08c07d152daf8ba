"""The store's answer rule: a decision with answer text is either parsed or stored invalid
with its reason, on every write path (engine events, an importer's own inserts, updates).

An importer once stored 648 CoopEval answers it could not parse as valid decisions; the
database now refuses such a row, and a database holding some repairs them when opened.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, EventBus, MatchDone, MatchStarted
from coop_tui.migrations import REPAIRED_NO_REASON, REPAIRED_UNPARSED, answer_rule_broken
from coop_tui.store import DECISION_COLUMNS, INSERT_DECISION, Store, decision_row

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


def raw_insert(store: Store, d: Decision, sql: str = INSERT_DECISION) -> None:
    row = decision_row(d)
    row["prompt_hash"] = None
    with store.db.conn:
        store.db.conn.execute(sql, [row[c] for c in DECISION_COLUMNS])


def broken(store: Store) -> int:
    return store.db.execute(f"select count(*) from decisions where {answer_rule_broken()}").fetchone()[0]


def test_rows_that_keep_the_rule_are_stored(tmp_path: Path) -> None:
    store, bus = opened(tmp_path)
    bus.emit(DecisionDone(decision("parsed")))
    raw_insert(store, decision("invalid", parsed=None, valid=False, error="no JSON object"))
    raw_insert(store, decision("silent", response="", parsed=None))  # no answer text at all
    assert store.db.execute("select count(*) from decisions").fetchone()[0] == 3
    assert broken(store) == 0
    store.close()


@pytest.mark.parametrize("sql", [INSERT_DECISION, INSERT_DECISION.replace(" or ignore", "")])
def test_an_importer_cannot_store_an_unparsed_answer_as_valid(tmp_path: Path, sql: str) -> None:
    store, _ = opened(tmp_path)
    with pytest.raises(sqlite3.IntegrityError, match="must be parsed"):
        raw_insert(store, decision("k", parsed=None), sql)  # "insert or ignore" too
    with pytest.raises(sqlite3.IntegrityError, match="invalid with its reason"):
        raw_insert(store, decision("k", parsed=None, valid=False, error=""), sql)
    assert store.db.execute("select count(*) from decisions").fetchone()[0] == 0
    store.close()


def test_the_engine_event_path_and_updates_are_held_to_it(tmp_path: Path) -> None:
    store, bus = opened(tmp_path)
    with pytest.raises(sqlite3.IntegrityError, match="must be parsed"):
        bus.emit(DecisionDone(decision("k", parsed=None)))
    bus.emit(DecisionDone(decision("ok")))
    with pytest.raises(sqlite3.IntegrityError, match="must be parsed"), store.db.conn:
        store.db.execute("update decisions set parsed = null")
    with pytest.raises(sqlite3.IntegrityError, match="invalid with its reason"), store.db.conn:
        store.db.execute("update decisions set valid = 0")
    with store.db.conn:  # marking it invalid with a reason is allowed
        store.db.execute("update decisions set valid = 0, error = 'judged unreadable'")
    assert broken(store) == 0
    store.close()


def test_opening_an_older_database_repairs_its_rows(tmp_path: Path) -> None:
    """Rows stored before the rule become invalid with a reason, and the run's totals
    (read by the runs list and the report) count them."""
    store, bus = opened(tmp_path)
    bus.emit(DecisionDone(decision("a")))
    with store.db.conn:  # the database as an earlier coop-tui left it
        store.db.execute("drop trigger decisions_answer_rule_insert")
        store.db.execute("drop trigger decisions_answer_rule_update")
        store.db.execute("delete from _migrations where name = 'm190_answers_parsed_or_invalid'")
    raw_insert(store, decision("b", seat=1, parsed=None, error="unknown key 'A2'"))
    raw_insert(store, decision("c", seat=1, round=2, parsed=None, valid=False))
    raw_insert(store, decision("e", round=2, parsed=None))
    bus.emit(MatchDone("r-m", (1.0, 1.0)))
    assert store.db.execute("select invalid from match_totals").fetchone()[0] == 1
    store.close()

    store = Store(tmp_path / "rule.db")
    rows = dict(store.db.execute("select cache_key, error from decisions where valid = 0").fetchall())
    assert rows == {"b": "unknown key 'A2'", "c": REPAIRED_NO_REASON, "e": REPAIRED_UNPARSED}
    assert broken(store) == 0
    assert store.db.execute("select invalid from match_totals").fetchone()[0] == 3
    with pytest.raises(sqlite3.IntegrityError):
        raw_insert(store, decision("d", parsed=None))
    store.close()
