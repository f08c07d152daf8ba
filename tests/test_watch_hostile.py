"""``coop-tui watch`` under hostile or odd input: the lease row, the channel's lines, the
sockets left behind.

The watcher reads two things another process wrote: the run's lease row (who plays the
run, and where its socket is) and the lines on that socket. Here the lease rows are
written as a sweep on another host, or a killed sweep whose pid was reused, would leave
them; the lines come from a stand-in publisher (a plain Unix socket server in the test)
that sends what a broken or hostile one could: lines that are not JSON, events with keys
missing or of the wrong type, a line longer than the watcher reads. Nothing here sleeps:
every wait is on a line, a row or a task.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import sqlite3
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coop_tui import channel, watch
from coop_tui.channel import CUT_MARK, LINE_LIMIT, Publisher, Skipped, decode, encode, subscribe
from coop_tui.decisions import Decision
from coop_tui.events import DecisionDone, MatchDone, MatchStarted, RunStarted
from coop_tui.store import Store
from coop_tui.watch import WatchState, follow, watch_plain

DEADLINE = 120.0
"""Only guards against a hang: every wait below ends on an event."""


def decision(match_id: str = "m1", **changes: Any) -> Decision:
    d = Decision(match_id=match_id, round=1, phase="play", seat=0, kind="mixed", agent="a",
                 prompt=[], response='{"choice": "A0"}', reasoning="", parsed={"choice": "A0"},
                 valid=True, attempts=1, error=None, cache_key="k", content_key="c",
                 action=0, cooperated=True, coop_prob=1.0)
    for name, value in changes.items():
        setattr(d, name, value)
    return d


def running_run(db: Path) -> str:
    """A run marked running, with one running match (m1) of experiment 0."""
    store = Store(db)
    store.create_run("r1", "watched", kind="sweep", seed=1, sweep_hash="h", spec={})
    store(RunStarted("r1", "watched", 2, 4))
    store(MatchStarted("r1", "m1", 0, "prisoners", "none", ("a", "b"), {"similarity": 50}))
    store.close()
    return "r1"


def lease(db: Path, *, pid: int, host: str, age: float, channel_address: str = "") -> None:
    """Write the run's lease row as a sweep would have (its heartbeat ``age`` s old)."""
    with sqlite3.connect(db) as conn:
        conn.execute("insert or replace into run_leases (run_id, pid, host, token, heartbeat,"
                     " taken_at, channel) values ('r1', ?, ?, 'other', ?, ?, ?)",
                     [pid, host, time.time() - age, time.time() - age, channel_address])
    conn.close()


class Lines(io.StringIO):
    """The plain mode's output, with an event set when a line holding ``needle`` arrives."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle
        self.seen = asyncio.Event()

    def write(self, text: str) -> int:
        if self.needle in text:
            self.seen.set()
        return super().write(text)


# ------------------------------------------------------------------ liveness
async def test_a_reused_pid_with_a_stale_heartbeat_is_gone_not_ended(tmp_path: Path) -> None:
    """kill -9, and a minute later the pid belongs to another process (here: this one).
    The heartbeat, 79 s stale, says the sweep is gone, as ``--resume`` decides it."""
    db = tmp_path / "w.db"
    running_run(db)
    lease(db, pid=os.getpid(), host=socket.gethostname(), age=79.0,
          channel_address=f"unix:{tmp_path / '.w.db.watch-1.sock'}")
    out = io.StringIO()
    assert await asyncio.wait_for(watch_plain(db, None, out), DEADLINE) == 0
    text = out.getvalue()
    assert "sweep ended" not in text
    assert "sweep process is gone" in text and "stopped renewing its lease 79 s ago" in text
    assert "--resume" in text


async def test_a_stale_lease_on_another_host_is_gone(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    running_run(db)
    lease(db, pid=4242, host="another-host.example", age=79.0, channel_address="unix:/nowhere")
    out = io.StringIO()
    assert await asyncio.wait_for(watch_plain(db, None, out), DEADLINE) == 0
    assert "sweep process is gone" in out.getvalue() and "another-host.example" in out.getvalue()


async def test_a_sweep_on_another_host_is_followed_through_the_database_until_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its socket is on the other host: the watcher says so, follows the database, and
    says the sweep ended only once its lease is gone and the run has a final status."""
    monkeypatch.setattr(watch, "POLL_S", 0.01)
    db = tmp_path / "w.db"
    running_run(db)
    lease(db, pid=4242, host="another-host.example", age=1.0, channel_address="unix:/nowhere")
    out = Lines("another-host.example")
    task = asyncio.create_task(watch_plain(db, None, out))
    await asyncio.wait_for(out.seen.wait(), DEADLINE)
    assert not task.done()  # still watching: the sweep plays on
    text = out.getvalue()
    assert "sweep ended" not in text and "the numbers are the database's" in text
    store = Store(db)  # the sweep on the other host finishes: its match, its status, its lease
    store(MatchDone("m1", (1.0, 1.0)))
    store.set_run_status("r1", "done")
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("delete from run_leases")
    conn.close()
    assert await asyncio.wait_for(task, DEADLINE) == 0
    tail = out.getvalue()[len(text):]
    assert "sweep ended (done)" in tail and "matches 1 done" in tail


# ------------------------------------------------------------------ a stand-in publisher
async def stand_in(path: Path, lines: list[bytes]) -> tuple[asyncio.AbstractServer, asyncio.Event]:
    """A Unix socket server that writes ``lines`` to whoever connects, then hangs up; the
    event is set once it has written them all."""
    written = asyncio.Event()

    async def serve(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for line in lines:
            writer.write(line)
            await writer.drain()
        written.set()
        writer.close()

    return await asyncio.start_unix_server(serve, path=str(path)), written


def wire(data: dict[str, Any]) -> bytes:
    return (json.dumps(data) + "\n").encode()


HELLO = wire({"type": "hello", "protocol": 1, "run_id": "r1", "pid": 1})


async def test_malformed_events_are_skipped_and_counted_not_fatal(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    running_run(db)
    sock = tmp_path / "s.sock"
    bad = [
        b"{not json\n",
        b"[1, 2, 3]\n",
        wire({"type": "DecisionDone", "decision": "not an object"}),
        wire({"type": "DecisionDone", "decision": {"match_id": "m1", "seat": "zero"}}),
        wire({"type": "MatchStarted", "run_id": "r1"}),  # keys missing
        wire({"type": "MatchStarted", "run_id": "r1", "match_id": "m2", "experiment": 0,
              "game": "prisoners", "mechanism": "none", "seats": 7}),  # seats not a list
        wire({"type": "MatchDone", "match_id": "m1", "payoffs": ["a", None]}),
        wire({"type": "TextDelta", "match_id": ["m1"], "seat": 0, "text": "x"}),
        wire({"type": "dropped", "count": "lots"}),
        wire({"type": "lagging", "dropped": -1}),
        b"\xff\xfe not utf-8\n",
    ]
    good = [wire({"type": "DecisionDone", "decision": {"match_id": "m1", "seat": 0, "valid": True,
                                                       "cooperated": True}}),
            wire({"type": "SomethingNewer", "x": 1}),  # a newer sweep's event: ignored
            wire({"type": "RunDone", "run_id": "r1", "status": "done"})]
    server, written = await stand_in(sock, [HELLO, *bad, *good])
    lease(db, pid=os.getpid(), host=socket.gethostname(), age=0.0, channel_address=f"unix:{sock}")
    store = Store(db)
    state = WatchState(store.run("r1"), store.lease("r1"))
    state.load(store)
    items = [item async for item in follow(store, state)]
    await written.wait()
    server.close()
    store.close()
    assert state.skipped == len(bad)
    assert [type(i).__name__ for i in items] == ["dict", "DecisionDone", "RunDone"]
    assert state.status == "ended" and "malformed lines skipped" in state.headline()


async def test_a_line_over_the_limit_is_skipped_and_the_next_one_read(tmp_path: Path) -> None:
    """A line longer than the watcher reads is dropped as it arrives (memory stays within
    the limit), counted, and the line after it is read whole."""
    sock = tmp_path / "s.sock"
    huge = b'{"type": "TextDelta", "match_id": "m1", "seat": 0, "text": "' + b"x" * 300_000 + b'"}\n'
    after = wire({"type": "RunDone", "run_id": "r1", "status": "done"})
    server, _ = await stand_in(sock, [HELLO, huge, huge[:1000] + b"\n", after])
    got: list[Any] = [item async for item in subscribe(f"unix:{sock}", limit=100_000)]
    server.close()
    assert got[0]["type"] == "hello"
    assert isinstance(got[1], Skipped) and "over 100000 bytes" in got[1].reason
    assert isinstance(got[2], Skipped)  # a cut-off line is not JSON: skipped, not misread
    assert got[3] == {"type": "RunDone", "run_id": "r1", "status": "done"}


async def test_a_legitimately_huge_answer_reaches_the_watcher_cut(tmp_path: Path) -> None:
    """A 3M-character answer (``max_answer_chars = 5000000``) of control characters is
    18 MB as JSON: on the wire it is cut with a note; the decision is whole in the store."""
    answer = "\x01" * 3_000_000
    (line,) = encode(DecisionDone(decision(response=answer, reasoning=answer)))
    assert len(line) < LINE_LIMIT
    back = decode(json.loads(line))
    assert isinstance(back, DecisionDone)
    assert back.decision.response.startswith("\x01" * 1000)
    assert back.decision.response.endswith(CUT_MARK.format(n=3_000_000))
    pub = Publisher(tmp_path / "runs.db")
    await pub.start()
    got = subscribe(pub.address)
    assert (await asyncio.wait_for(anext(got), DEADLINE))["type"] == "hello"
    pub(DecisionDone(decision(response=answer)))
    data = await asyncio.wait_for(anext(got), DEADLINE)
    assert data["type"] == "DecisionDone" and "[cut on the watch channel" in data["decision"]["response"]
    await got.aclose()
    await pub.close()


async def test_a_late_watcher_reloads_once_subscribed_so_no_finished_match_stays_running(
        tmp_path: Path) -> None:
    """A match that ends between the watcher's first read of the database and its
    subscription would have its end published to nobody: the watcher reads the database
    again once the channel greets it."""
    db = tmp_path / "w.db"
    running_run(db)
    sock = tmp_path / "s.sock"
    server, _ = await stand_in(sock, [HELLO, wire({"type": "RunDone", "run_id": "r1",
                                                   "status": "done"})])
    lease(db, pid=os.getpid(), host=socket.gethostname(), age=0.0, channel_address=f"unix:{sock}")
    store = Store(db)
    state = WatchState(store.run("r1"), store.lease("r1"))
    state.load(store)
    assert list(state.running) == ["m1"]
    store(MatchDone("m1", (1.0, 1.0)))  # ends now: before the watcher subscribes
    stream: AsyncIterator[Any] = follow(store, state)
    hello = await asyncio.wait_for(anext(stream), DEADLINE)
    assert hello["type"] == "hello"
    assert state.running == {} and state.experiments[0].done == 1
    async for _ in stream:
        pass
    server.close()
    store.close()


def test_a_repeated_match_start_is_counted_once() -> None:
    state = WatchState({"id": "r1"}, None)
    start = MatchStarted("r1", "m1", 0, "prisoners", "none", ("a", "b"), {})
    state.apply(start)
    state.apply(start)  # read from the database and then seen on the stream
    assert state.experiments[0].running == 1
    state.apply(MatchDone("m1", (1.0, 1.0)))
    assert (state.experiments[0].running, state.experiments[0].done) == (0, 1)


# ------------------------------------------------------------------ sockets left behind
async def test_dead_sockets_beside_the_database_are_removed_by_the_next_sweep(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    dead = []
    for pid in (11, 12, os.getpid() + 1):  # kill -9 leaves the socket file behind
        path = tmp_path / f".runs.db.watch-{pid}.sock"
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))
        dead.append(path)
    live = Publisher(db)  # another sweep on this database, still listening
    live_path = channel.socket_of(await live.start())
    lookalike = tmp_path / ".runs.db.watch-13.sock"
    lookalike.write_text("not a socket")
    other_db = tmp_path / ".other.db.watch-14.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(other_db))
    pub = Publisher(db)
    own = channel.socket_of(await pub.start())
    assert not any(p.exists() for p in dead)
    assert stat.S_ISSOCK(live_path.stat().st_mode) and stat.S_ISSOCK(own.stat().st_mode)
    assert lookalike.read_text() == "not a socket" and other_db.exists()
    await pub.close()
    await live.close()


# ------------------------------------------------------------------ a match opened part-way
async def test_a_match_opened_part_way_fills_in_its_earlier_rounds_from_the_database(
        tmp_path: Path) -> None:
    """The panes' totals and round timeline come from RoundDone events: the rounds played
    before the watcher opened the match are replayed from the database, and the same
    round published again is not counted twice."""
    from coop_tui.api import run_sweep
    from coop_tui.events import RoundDone
    from coop_tui.session import WatchSession

    db = tmp_path / "p.db"
    run_id = run_sweep({"name": "part-way", "seed": 5, "samples": 1,
                        "agents": {"tft": {"strategy": "tit_for_tat"},
                                   "alld": {"strategy": "always_defect"}},
                        "experiments": [{"game": "prisoners", "mechanism": "repetition",
                                         "rounds": 4, "agents": ["tft"], "opponents": ["alld"],
                                         "matchup": "versus"}]}, db)
    store = Store(db)
    (match,) = store.matches(run_id)
    rounds = store.rounds(match["id"])
    totals = [sum(r["payoff"] for r in rounds if r["seat"] == seat) for seat in (0, 1)]
    session = WatchSession(store, match["id"])
    seen: list[RoundDone] = []
    ends: list[MatchDone] = []
    session.bus.subscribe(lambda e: seen.append(e) if isinstance(e, RoundDone) else None)
    session.bus.subscribe(lambda e: ends.append(e) if isinstance(e, MatchDone) else None)
    task = asyncio.create_task(session.run())
    await asyncio.wait_for(session.replayed.wait(), DEADLINE)
    assert [r.round for r in seen] == [1, 2, 3, 4]
    assert [sum(r.payoffs[s] for r in seen) for s in (0, 1)] == totals
    session.feed(seen[-1])  # round 4 again, as the stream publishes it: already shown
    assert len(seen) == 4
    # it ended before the view opened: its end comes from the database, not a wait forever
    assert [(e.status, list(e.payoffs)) for e in ends] == [("done", json.loads(match["payoffs"]))]
    session.stop()
    await asyncio.wait_for(task, DEADLINE)
    store.close()


def test_the_documented_plain_mode_grep_finds_reasoning_and_answers() -> None:
    """docs/cli.md pipes ``watch --plain`` into grep to see what the models write: its
    pattern matches both labels (a chain-of-thought written in the answer's text is an
    ``answer:`` piece)."""
    import re

    from coop_tui.events import ReasoningDelta, TextDelta
    from coop_tui.watch import event_line

    docs = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    (line,) = [x for x in docs.splitlines() if "watch --plain" in x and "| grep" in x]
    pattern = re.search(r"grep (?:-E )?'([^']+)'", line)
    assert pattern, line
    for event in (ReasoningDelta("m1", 0, "first I think"), TextDelta("m1", 0, "I cooperate")):
        assert re.search(pattern.group(1), event_line(event, lambda mid: mid) or ""), event


async def test_a_tampered_channel_address_is_followed_through_the_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease row whose channel is not a local socket (``tcp:...``) is not connected to;
    the live sweep is followed through the database until it ends."""
    monkeypatch.setattr(watch, "POLL_S", 0.01)
    db = tmp_path / "w.db"
    running_run(db)
    lease(db, pid=os.getpid(), host=socket.gethostname(), age=0.0,
          channel_address="tcp:203.0.113.9:80")
    out = Lines("cannot be reached")
    task = asyncio.create_task(watch_plain(db, None, out))
    await asyncio.wait_for(out.seen.wait(), DEADLINE)
    Store(db).set_run_status("r1", "stopped")
    with sqlite3.connect(db) as conn:
        conn.execute("delete from run_leases")
    conn.close()
    assert await asyncio.wait_for(task, DEADLINE) == 0
    assert "sweep ended (stopped)" in out.getvalue()


async def test_hostile_text_on_the_channel_is_shown_escaped_in_the_plain_mode(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    running_run(db)
    sock = tmp_path / "s.sock"
    lines = [HELLO, wire({"type": "ReasoningDelta", "match_id": "m1\x1b[2J", "seat": 0,
                          "text": "\x1b]0;pwned\x07 and \x1b[31mred"}),
             wire({"type": "RunDone", "run_id": "r1", "status": "done"})]
    server, _ = await stand_in(sock, lines)
    lease(db, pid=os.getpid(), host=socket.gethostname(), age=0.0, channel_address=f"unix:{sock}")
    out = io.StringIO()
    assert await asyncio.wait_for(watch_plain(db, None, out), DEADLINE) == 0
    server.close()
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07" in text


# ------------------------------------------------------------------ long names
def test_conditions_lead_with_what_tells_them_apart() -> None:
    """Three conditions that differ only in their last field: cut to a legend's 30
    characters or a column's 48, each still says which it is."""
    from coop_tui.terminal import terminal_text

    state = WatchState({"id": "r1"}, None)
    for i, level in enumerate((0, 50, 100)):
        state.apply(MatchStarted("r1", f"m{i}", 0, "prisoners", "similarity", ("a", "b"), {
            "framing": "similar", "prompt": "percentage_updated_with_a_long_name",
            "similarity": level}))
    labels = state.labels()
    for width in (30, 48):
        shown = {terminal_text(label, markup=False, limit=width) for label in labels.values()}
        assert len(shown) == 3, shown
    assert sorted(label.split(" · ")[0] for label in labels.values()) == [
        "similarity=0", "similarity=100", "similarity=50"]
    running = [state.match_label(info, labels) for info in state.running.values()]
    assert all(line.startswith("a vs b · similarity=") for line in running), running
    assert sum("cooperation" in line and "similarity=50 ·" in line
               for line in state.summary_lines()) == 1
    alone = WatchState({"id": "r1"}, None)  # one condition: nothing to lead with
    alone.apply(MatchStarted("r1", "m0", 0, "prisoners", "none", ("a", "b"), {"rounds": 3}))
    assert list(alone.labels().values()) == ["prisoners · none · rounds=3"]


@pytest.mark.parametrize("width", [80, 160])
def test_a_long_experiment_name_leaves_the_counts_and_the_time_whole(width: int) -> None:
    """The progress rows, on a terminal or piped: a long experiment name wraps in its
    column and the done/total and elapsed columns are never cut."""
    from rich.console import Console

    from coop_tui.runner import ProgressView
    from coop_tui.spec import build_sweep

    name = "the model against tit for tat under the similar framing, similarity 100"
    sweep = build_sweep({"name": "n", "seed": 1, "samples": 12,
                         "agents": {"tft": {"strategy": "tit_for_tat"},
                                    "alld": {"strategy": "always_defect"}},
                         "experiments": [{"name": name, "game": "prisoners", "mechanism": "none",
                                          "agents": ["tft"], "opponents": ["alld"],
                                          "matchup": "versus"}]})
    out = io.StringIO()
    view = ProgressView(sweep, Console(file=out, width=width))
    view.progress.start()
    view.progress.stop()
    text = out.getvalue()
    rows = [line for line in text.splitlines() if "0/12" in line]
    assert len(rows) == 2 and all("0:00:00" in row for row in rows), text
    assert "…" not in "".join(rows[1:]).split("0/12")[0]
    assert " ".join(" ".join(text.split()).split()).count("similarity 100") == 1, text



def test_following_never_reopens_a_match_seen_to_end(tmp_path: Path) -> None:
    """``f`` opens the first running match not seen to end: a match the dashboard still
    lists but whose view saw its end is skipped (it was reopened again and again)."""
    from coop_tui.screens.watch import WatchScreen as Screen

    db = tmp_path / "w.db"
    running_run(db)
    store = Store(db)
    screen = Screen(store, store.run("r1"))
    screen.state.running = {"m1": {}, "m2": {}}
    screen._session_event(MatchDone("m1", (1.0, 1.0)))
    assert screen._next_running() == "m2"
    screen._session_event(MatchDone("m2", (1.0, 1.0)))
    assert screen._next_running() is None
    store.close()
