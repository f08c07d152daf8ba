"""Group commit: while a sweep's matches play (``Store.grouped_commits``) the store's event
writes share one transaction per short window, committed once (a commit per event was the
biggest storage cost of a sweep at high concurrency). What must hold: nothing is visible
half-written, a failing event leaves the other writes of its window intact, leaving the
block or closing the store commits what is pending, a failed commit stops the run, and
everywhere else (a judge pass, a re-ask, no event loop) every event commits at once."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, EventBus, MatchDone, MatchStarted
from coop_tui.spec import build_sweep
from coop_tui.store import GROUP_COMMIT_WINDOW, Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer


def decision(match_id: str, seat: int, key: str) -> Decision:
    return Decision(
        match_id=match_id, round=1, phase="play", seat=seat, kind="mixed", agent="m",
        prompt=[{"role": "user", "content": f"prompt {key}"}], response='{"A0": 50, "A1": 50}',
        reasoning="", parsed={"A0": 0.5, "A1": 0.5}, valid=True, attempts=1, error=None,
        cache_key=key, content_key="c" + key, labels=("A0", "A1"), label_to_action=(0, 1),
        distribution=(0.5, 0.5), action=1, coop_prob=0.5, cooperated=False, cost_usd=0.25,
        input_tokens=10, output_tokens=5, created_at=1.0,
    )


def open_store(path: Path, *, grouped: bool = True) -> tuple[Store, EventBus, list[str]]:
    """A store on a bus (grouping its commits as a sweep does, unless told not to), with
    every COMMIT its connection sends recorded."""
    store = Store(path)
    if grouped:
        store.begin_grouped_commits()
    bus = EventBus()
    bus.subscribe(store, critical=True)
    commits: list[str] = []
    store.db.conn.set_trace_callback(
        lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    store.create_run("r", "r", kind="sweep", seed=1, sweep_hash="r", spec={})
    commits.clear()
    return store, bus, commits


def play(bus: EventBus, match_id: str, keys: tuple[str, str]) -> None:
    bus.emit(MatchStarted("r", match_id, 0, "prisoners", "none", ("m", "m"),
                          info={"agent_kinds": ["llm", "llm"]}))
    for seat, key in enumerate(keys):
        bus.emit(DecisionDone(decision(match_id, seat, key)))
    bus.emit(MatchDone(match_id, (1.0, 1.0)))


async def window_passed() -> None:
    """Until the store's commit timer has fired: a loop timer set after it, for a later
    time, fires after it (the loop's order, not a guess at the machine's speed)."""
    loop = asyncio.get_running_loop()
    later = loop.create_future()
    loop.call_later(GROUP_COMMIT_WINDOW * 2, later.set_result, None)
    await later


def seen_from_outside(path: Path, sql: str) -> int:
    """What another connection (a report, the TUI's reader, another process) sees."""
    with sqlite3.connect(path) as other:
        return other.execute(sql).fetchone()[0]


async def test_the_writes_of_one_window_share_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, commits = open_store(path)
    play(bus, "m1", ("a", "b"))
    play(bus, "m2", ("c", "d"))
    assert commits == []
    assert seen_from_outside(path, "select count(*) from decisions") == 0
    assert seen_from_outside(path, "select count(*) from matches") == 0
    await window_passed()
    assert len(commits) == 1
    assert seen_from_outside(path, "select count(*) from decisions") == 4
    assert seen_from_outside(path, "select count(*) from matches where status = 'done'") == 2
    store.close()


async def test_a_failing_event_leaves_the_other_writes_of_its_window(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, _ = open_store(path)
    play(bus, "m1", ("a", "b"))
    with pytest.raises(sqlite3.IntegrityError):  # a decision of a match never started
        bus.emit(DecisionDone(decision("nowhere", 0, "x")))
    play(bus, "m2", ("c", "d"))
    store.commit_pending()
    assert seen_from_outside(path, "select count(*) from decisions") == 4
    assert seen_from_outside(path, "select count(*) from decisions where match_id = 'nowhere'") == 0
    # its prompt text was written before the decision failed: rolled back with it
    assert seen_from_outside(path, "select count(*) from texts where text like '%prompt x%'") == 0
    assert seen_from_outside(path, "select count(*) from texts where text like '%prompt a%'") == 1
    assert seen_from_outside(path, "select count(*) from matches where status = 'done'") == 2
    store.close()


async def test_close_commits_what_is_pending(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, _ = open_store(path)
    play(bus, "m1", ("a", "b"))
    store.close()  # before the window ends, as a stopped run closes its store
    assert seen_from_outside(path, "select count(*) from decisions") == 2
    await window_passed()  # the store's timer finds it closed and does nothing


async def test_writes_outside_the_events_commit_the_pending_ones_first(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, _ = open_store(path)
    play(bus, "m1", ("a", "b"))
    store.set_run_status("r", "done")  # as RunDone does at the end of a run
    assert seen_from_outside(path, "select count(*) from decisions") == 2
    assert seen_from_outside(path, "select status from runs") == "done"
    store.close()


def test_outside_an_event_loop_every_event_commits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, commits = open_store(path)
    play(bus, "m1", ("a", "b"))
    assert len(commits) == 4  # match started, two decisions, match done
    assert seen_from_outside(path, "select count(*) from decisions") == 2
    store.close()


async def test_outside_a_sweep_every_event_commits_at_once(tmp_path: Path) -> None:
    """A judge pass, a re-ask: on an event loop, but no window to wait for (one of them
    may end its loop before a window would)."""
    path = tmp_path / "g.db"
    store, bus, commits = open_store(path, grouped=False)
    play(bus, "m1", ("a", "b"))
    assert len(commits) == 4
    assert seen_from_outside(path, "select count(*) from decisions") == 2
    store.close()


async def test_leaving_the_grouped_block_commits_the_last_window(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store, bus, commits = open_store(path, grouped=False)
    with store.grouped_commits():
        play(bus, "m1", ("a", "b"))
        assert seen_from_outside(path, "select count(*) from decisions") == 0
    assert len(commits) == 1
    assert seen_from_outside(path, "select count(*) from decisions") == 2
    play(bus, "m2", ("c", "d"))  # after the block: at once again
    assert len(commits) == 5
    store.close()


async def test_a_sweep_commits_many_answers_at_once_and_loses_none(tmp_path: Path) -> None:
    """The whole path: a sweep of 64 streamed answers at concurrency 16 against a real
    HTTP server commits far fewer times than it has events, and stores every answer."""
    path = tmp_path / "s.db"
    store = Store(path)
    commits: list[str] = []
    store.db.conn.set_trace_callback(
        lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    with LoopbackServer(latency=0.05, chunks=4, answer='{"A0": 50, "A1": 50}') as srv:
        sweep = build_sweep({
            "name": "grouped", "seed": 1, "concurrency": 16, "samples": 16, "reuse": False,
            "agents": {"m": {"model": "openai/loopback", "api_base": srv.url,
                             "api_key": "sk-test"}},
            "experiments": [{"game": "prisoners", "mechanism": "similarity",
                             "matchup": "self", "agents": ["m"], "similarity": [0, 100]}],
        })
        summary = await run_sweep(sweep, store)
    assert summary.status == "done"
    assert seen_from_outside(path, "select count(*) from decisions where valid = 1") == 64
    assert seen_from_outside(path, "select count(*) from matches where status = 'done'") == 32
    # 32 matches of one round each: 160 events (start, two answers, round, end per match)
    # that committed one by one before
    assert len(commits) < 80, len(commits)
    store.close()


async def test_a_failed_commit_fails_every_later_event_write(tmp_path: Path) -> None:
    """A commit that fails (here a foreign key SQLite checks only at COMMIT) loses its
    window's writes; the run must then stop rather than go on writing past them (a match
    could be marked done while its decisions were lost)."""
    path = tmp_path / "g.db"
    store, bus, _ = open_store(path)
    play(bus, "m1", ("a", "b"))
    store.db.conn.execute("PRAGMA defer_foreign_keys = ON")  # until this window's commit
    bus.emit(DecisionDone(decision("nowhere", 0, "x")))  # accepted for now
    await window_passed()
    assert seen_from_outside(path, "select count(*) from decisions") == 0
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        play(bus, "m2", ("c", "d"))
    with pytest.raises(sqlite3.IntegrityError):
        store.commit_pending()
    store.close()  # already reported: closing does not raise it again
    assert seen_from_outside(path, "select count(*) from matches") == 0
