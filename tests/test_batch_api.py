"""``batch = true``: decisions through the providers' Batch APIs, end to end.

Real ``coop-tui --batch`` processes against the loopback server's OpenAI Batch API (files
and ``/v1/batches``) and its fake of Anthropic's Message Batches, through the real SDKs.
The server counts every ``custom_id`` it was sent, so "no request twice" is checked by
the server, not by our own bookkeeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.batch import BatchHub, BatchLedger, OpenAIBatches, custom_id
from coop_tui.agents.llm import LLMAgent
from coop_tui.decisions import ASKING, DecisionRequest, NullSink, SeatView
from coop_tui.games import load_game
from coop_tui.judging.rubric import load_rubric
from coop_tui.spec import load_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

SECRET = "sk-batch-SECRET-7731"
ONE_SHOT_DECISIONS = 2 * 2  # samples x seats
REPEATED_DECISIONS = 2 * 3 * 2  # samples x rounds x seats
DECISIONS = ONE_SHOT_DECISIONS + REPEATED_DECISIONS


def answer_for(body: dict[str, Any]) -> str:
    """A deterministic mixed answer per prompt, with prose around it like real models."""
    h = int(hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest(), 16)
    coop = h % 101
    return f"I weigh it.\n{{\"A0\": {coop}, \"A1\": {100 - coop}}}"


def write_sweep(path: Path, url: str, *, model: str = "openai/loopback",
                agent_extra: str = "", sweep_extra: str = "") -> Path:
    """A one-shot Prisoner's Dilemma and a three-round repeated one, two samples each:
    four matches that all play at once (8 match workers)."""
    path.write_text(f"""
name = "batched"
seed = 5
concurrency = 4
samples = 2
# the batch goes when every match waits; a busy machine must not send a round early
batch_gather = 120
{sweep_extra}

[agents.m]
model = "{model}"
api_base = "{url}"
api_key_env = "LOOPBACK_KEY"
style = "direct"
batch_poll = 0.02
{agent_extra}

[[experiments]]
name = "one-shot"
game = "prisoners"
mechanism = "none"
matchup = "self"
agents = ["m"]

[[experiments]]
name = "repeated"
game = "prisoners"
mechanism = "repetition"
matchup = "self"
agents = ["m"]
rounds = 3
""")
    return path


def cli(*args: str, wait: bool = True) -> Any:
    env = {**os.environ, "LOOPBACK_KEY": SECRET}
    cmd = [sys.executable, "-m", "coop_tui.cli", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def count(db: Path, sql: str) -> int:
    return rows(db, sql)[0][0]


def db_bytes(db: Path) -> bytes:
    return b"".join(Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm")
                    if Path(str(db) + s).exists())


def batch_sizes(srv: LoopbackServer) -> list[int]:
    return [len(srv.batch_book.inputs[b]) for b in srv.batch_book.created]


@pytest.fixture
def server() -> Any:
    with LoopbackServer(answer=answer_for, api_key=SECRET) as srv:
        yield srv


def test_the_way_requests_travel_is_no_part_of_the_sweep(tmp_path: Path) -> None:
    """``batch`` and ``batch_gather`` change how requests reach the provider, not what
    is asked: a batched sweep has the streamed sweep's hash (so either resumes the other),
    and a sweep that never names them hashes as it did before they existed."""
    plain = load_sweep(write_sweep(tmp_path / "a.toml", "http://127.0.0.1:9"))
    batched_ = load_sweep(write_sweep(tmp_path / "b.toml", "http://127.0.0.1:9",
                                      sweep_extra="batch = true"))
    assert plain.hash == batched_.hash
    assert load_sweep(Path(__file__).parents[1] / "data/sweeps/strategies-prisoners.toml").hash \
        == "ec725cf3c73aadfb"  # as before the Batch API fields were added


def test_a_round_larger_than_the_provider_allows_is_split(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ``max_requests`` requests (or ``max_bytes``) per batch: round 1's eight
    requests go out as 3 + 3 + 2, and every decision still arrives."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    monkeypatch.setattr(OpenAIBatches, "max_requests", 3)
    sweep = load_sweep(write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true"))
    store = Store(tmp_path / "split.db")
    try:
        summary = asyncio.run(run_sweep(sweep, store))
    finally:
        store.close()
    assert summary.status == "done" and summary.decisions == DECISIONS
    assert batch_sizes(server) == [3, 3, 2, 3, 1, 3, 1]
    assert set(server.batch_book.submitted.values()) == {1}


def test_a_sweep_in_process_asks_each_round_of_every_match_in_one_batch(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick tier's check of the collector: four matches, three rounds, three batches."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    sweep = load_sweep(write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true"))
    store = Store(tmp_path / "q.db")
    try:
        summary = asyncio.run(run_sweep(sweep, store))
    finally:
        store.close()
    assert summary.status == "done" and summary.decisions == DECISIONS
    assert summary.batches is not None and (summary.batches.done, summary.batches.pending) == (3, 0)
    assert batch_sizes(server) == [8, 4, 4] and server.chat_requests == []


@pytest.mark.slow
def test_every_decision_goes_through_one_batch_per_round_across_matches(
    server: LoopbackServer, tmp_path: Path
) -> None:
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true")
    db = tmp_path / "b.db"
    done = cli("--batch", str(sweep), "--db", str(db))
    assert done.returncode == 0, done.stderr + done.stdout
    assert server.chat_requests == []  # nothing streamed: every answer came from a batch
    # round 1 of all four matches (one-shot and repeated) together, then rounds 2 and 3
    assert batch_sizes(server) == [8, 4, 4]
    assert set(server.batch_book.submitted.values()) == {1}
    assert count(db, "select count(*) from decisions where valid = 1 and action is not null") == DECISIONS
    assert count(db, "select count(*) from matches where status = 'done'") == 4
    assert count(db, "select count(*) from batches where status = 'completed'") == 3
    # every request's content key is the decision's own
    assert count(db, "select count(*) from batch_requests r join decisions d"
                     " on d.content_key = r.content_key") == DECISIONS
    # the key goes in the Authorization header, never into a batch file, the db or output
    for data in server.batch_book.files.values():
        assert SECRET.encode() not in data
    assert SECRET.encode() not in db_bytes(db)
    assert SECRET not in done.stdout + done.stderr
    line = next(row for row in done.stdout.splitlines() if "provider batches" in row)
    assert "3 done, 0 pending" in line

    again = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert again.returncode == 0, again.stderr
    assert len(server.batch_book.created) == 3  # a finished run sends nothing


@pytest.mark.slow
def test_batch_answers_are_the_streamed_answers_at_half_the_price(tmp_path: Path) -> None:
    """The same sweep streamed and batched stores the same decisions; the batched costs
    half (a model with a list price)."""
    with LoopbackServer(answer=answer_for, models=("gpt-4o-mini",)) as srv:
        streamed_db, batched_db = tmp_path / "s.db", tmp_path / "b.db"
        plain = write_sweep(tmp_path / "plain.toml", srv.url, model="openai/gpt-4o-mini")
        batch = write_sweep(tmp_path / "batch.toml", srv.url, model="openai/gpt-4o-mini",
                            agent_extra="batch = true")
        assert cli("--batch", str(plain), "--db", str(streamed_db)).returncode == 0
        assert cli("--batch", str(batch), "--db", str(batched_db)).returncode == 0
    sql = ("select m.match_key, d.round, d.seat, d.response, d.action, d.input_tokens,"
           " d.output_tokens from decisions d join matches m on m.id = d.match_id order by 1, 2, 3")
    assert rows(batched_db, sql) == rows(streamed_db, sql)
    full = count(streamed_db, "select sum(cost_usd) from decisions")
    half = count(batched_db, "select sum(cost_usd) from decisions")
    assert full > 0 and half == pytest.approx(full / 2)


def test_dry_run_shows_the_batch_price_and_the_list_price(server: LoopbackServer, tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path / "s.toml", server.url, model="openai/gpt-4o-mini",
                        agent_extra="batch = true\nmax_tokens = 100")
    out = cli("--batch", str(sweep), "--dry-run", "--db", str(tmp_path / "d.db"))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "(Batch API at half price for m; ~$" in text and "at list price)" in text
    batch_price = float(text.split("estimated cost ~$")[1].split()[0])
    list_price = float(text.split("half price for m; ~$")[1].split()[0])
    assert batch_price == pytest.approx(list_price / 2, abs=1e-4) and batch_price > 0
    assert server.batch_book.created == []


@pytest.mark.slow
def test_expired_batch_and_failed_requests_are_asked_again_with_their_reason(
    server: LoopbackServer, tmp_path: Path
) -> None:
    failed: set[str] = set()

    def fail_two_once(body: dict[str, Any]) -> str | None:
        key = json.dumps(body["messages"])
        if len(failed) < 2 and key not in failed:
            failed.add(key)
            return "injected: the model is overloaded"
        return None

    server.configure(batch_script=["expired"], batch_fail=fail_two_once)
    sweep = write_sweep(tmp_path / "s.toml", server.url, agent_extra="batch = true")
    db = tmp_path / "f.db"
    done = cli("--batch", str(sweep), "--db", str(db))
    assert done.returncode == 0, done.stderr + done.stdout
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS
    assert server.chat_requests == []
    # round 1: expired (8 sent), all 8 again (2 fail alone), those 2 a third time in the
    # next batch, beside the requests of the matches that went on to round 2
    book = server.batch_book
    assert batch_sizes(server)[:2] == [8, 8]
    thrice = [cid for cid, n in book.submitted.items() if n == 3]
    # rounds 2 and 3 once each (8), round 1 twice (6) or three times (2)
    assert Counter(book.submitted.values()) == {1: 8, 2: 6, 3: 2}
    assert {line["custom_id"] for line in book.inputs[book.created[2]]} >= set(thrice)
    reasons = [r[0] for r in rows(db, "select error from batch_requests where error is not null")]
    assert sum("expired" in r for r in reasons) == 8
    assert sum("injected: the model is overloaded" in r for r in reasons) == 2
    assert count(db, "select sum(transport_retries) from decisions") == 8 + 2
    assert count(db, "select count(*) from batches where status = 'expired'") == 1


def sweep_process_until_batch_pending(sweep: Path, db: Path) -> subprocess.Popen[bytes]:
    """Start a sweep and return once its first batch's id is committed to the database."""
    proc = cli("--batch", str(sweep), "--db", str(db), wait=False)
    deadline = time.monotonic() + 120  # guards against a hang only
    while time.monotonic() < deadline:
        try:
            if db.exists() and count(db, "select count(*) from batches where batch_id is not null"
                                         " and status = 'pending'"):
                return proc
        except sqlite3.OperationalError:  # the schema is still being created
            pass
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("no batch became pending")


@pytest.mark.slow
def test_kill_9_while_a_batch_is_pending_then_resume_sends_nothing_twice(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.configure(batch_hold=True)
    sweep = write_sweep(tmp_path / "s.toml", server.url, agent_extra="batch = true")
    db = tmp_path / "k.db"
    proc = sweep_process_until_batch_pending(sweep, db)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert count(db, "select count(*) from decisions") == 0
    assert batch_sizes(server) == [8]

    server.configure(batch_hold=False)  # the batch finishes while nobody is polling it
    resumed = cli("--batch", str(sweep), "--db", str(db), "--resume")
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert set(server.batch_book.submitted.values()) == {1}  # no request sent twice
    assert batch_sizes(server) == [8, 4, 4]  # the pending batch's answers were used
    assert count(db, "select count(*) from runs") == 1
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS
    assert server.chat_requests == []


@pytest.mark.slow
def test_anthropic_message_batches(server: LoopbackServer, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    sweep = write_sweep(tmp_path / "s.toml", server.url, model="anthropic/claude-loop",
                        agent_extra="batch = true\nmax_tokens = 300")
    db = tmp_path / "a.db"
    done = cli("--batch", str(sweep), "--db", str(db))
    assert done.returncode == 0, done.stderr + done.stdout
    assert [b.startswith("msgbatch_") for b in server.batch_book.created] == [True] * 3
    assert batch_sizes(server) == [8, 4, 4]
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS
    first = server.batch_book.inputs[server.batch_book.created[0]][0]["params"]
    assert first["model"] == "claude-loop" and first["max_tokens"] == 300
    assert all(m["role"] != "system" for m in first["messages"])
    assert SECRET.encode() not in db_bytes(db)


@pytest.mark.parametrize(
    ("agent", "field", "words"),
    [
        ('strategy = "tit_for_tat"\nbatch = true', "agents.m.batch", "only a model agent"),
        ('model = "groq/llama-3"\napi_key_env = "LOOPBACK_KEY"\nbatch = true',
         "agents.m.batch", "no Batch API for provider 'groq'"),
    ],
)
def test_batch_where_no_batch_api_answers_is_refused(
    tmp_path: Path, agent: str, field: str, words: str
) -> None:
    sweep = tmp_path / "bad.toml"
    sweep.write_text(f'name = "bad"\n[agents.m]\n{agent}\n\n[[experiments]]\ngame = "prisoners"\n'
                     'mechanism = "none"\nmatchup = "self"\nagents = ["m"]\n')
    db = tmp_path / "bad.db"
    out = cli("--batch", str(sweep), "--db", str(db))
    assert out.returncode == 2, out.stderr + out.stdout
    said = " ".join((out.stderr + out.stdout).split())
    assert field in said and words in said
    assert not db.exists()


def test_a_batch_sent_just_before_a_crash_is_found_by_its_tag_not_sent_again(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Killed after the provider took the batch and before its id was committed: the
    ledger holds the requests under the batch's tag only; the next process finds the
    batch by that tag (OpenAI batch metadata) and uses its answers."""
    store = Store(tmp_path / "c.db")
    ledger = BatchLedger(store.path, store.commit_pending)
    messages = [{"role": "user", "content": "Choose: A0 or A1"}]
    body = {"model": "loopback", "messages": messages}

    async def crash_after_sending() -> None:
        ASKING.set(("content-key-1", 1))
        cid = custom_id(body)
        client = OpenAIBatches(server.url, SECRET, 30)
        ledger.submitting("tag-1", provider="openai", agent="m", model="openai/loopback",
                          items=[(cid, "content-key-1", 1)])
        await client.submit([client.line(cid, body)], "tag-1")  # the id is never committed
        await client.aclose()

    async def next_process() -> Any:
        ASKING.set(("content-key-1", 1))
        agent = LLMAgent("m", "openai/loopback", api_base=server.url, api_key=SECRET,
                         batch=True, batch_poll=0.02)
        agent.batcher = hub = BatchHub(ledger)
        view = SeatView(load_game("prisoners"), 0, 1)
        request = DecisionRequest(0, 1, "play", "mixed", tuple(messages), view)
        try:
            return await agent.reply(request, messages, NullSink())
        finally:
            await hub.aclose()
            await agent.aclose()

    asyncio.run(crash_after_sending())
    reply = asyncio.run(next_process())
    assert "A0" in reply.text
    assert list(server.batch_book.submitted.values()) == [1]
    assert rows(tmp_path / "c.db", "select batch_id, status from batches") == [
        (server.batch_book.created[0], "completed")]
    store.close()


def judge_or_play(body: dict[str, Any]) -> str:
    """Players answer as :func:`answer_for`; the judge gives every category one confidence."""
    if body.get("model") == "judge":
        return json.dumps({cid: 0.7 for cid in load_rubric("justifications").ids})
    return answer_for(body)


@pytest.mark.slow
def test_a_judge_with_batch_sends_every_item_of_the_pass_in_one_batch(tmp_path: Path) -> None:
    with LoopbackServer(answer=judge_or_play, api_key=SECRET) as srv:
        sweep = write_sweep(tmp_path / "s.toml", srv.url, agent_extra='batch = true')
        with sweep.open("a") as f:
            f.write(f'\n[agents.j]\nmodel = "openai/judge"\napi_base = "{srv.url}"\n'
                    'api_key_env = "LOOPBACK_KEY"\nbatch = true\nbatch_poll = 0.02\n')
        db = tmp_path / "j.db"
        assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
        played = len(srv.batch_book.created)
        done = cli("judge", "--judge", "j", "--agents", str(sweep), "--rubric", "justifications",
                   "--protocol", "per-category", "--db", str(db))
        assert done.returncode == 0, done.stdout + done.stderr
        assert srv.chat_requests == []
        judge_batches = srv.batch_book.created[played:]
    assert count(db, "select count(*) from judgements") == DECISIONS
    # the same text is judged once (the judge's own rule): one request per distinct text
    asked = count(db, "select count(*) from decisions d join matches m on m.id = d.match_id"
                      " join runs r on r.id = m.run_id where r.kind = 'judge' and d.reused = 0")
    assert len(judge_batches) == 1 and len(srv.batch_book.inputs[judge_batches[0]]) == asked
    assert set(srv.batch_book.submitted.values()) == {1}


# ----------------------------------------------------------------- hostile results files
def run_in_process(sweep_path: Path, db: Path, *, resume: bool = False,
                   stop_when_pending: bool = False) -> Any:
    """Play the sweep in this process. ``stop_when_pending``: cancel the run as soon as
    its first batch is pending (the batch stays with the provider, as after a kill) and
    return None. The ``wait_for`` only keeps a regression (polling for good) from hanging
    the suite."""
    from coop_tui.events import BatchProgress, EventBus

    async def play() -> Any:
        bus, pending = EventBus(), asyncio.Event()
        bus.subscribe(lambda e: pending.set() if isinstance(e, BatchProgress) and e.pending
                      else None)
        store = Store(db)
        try:
            task = asyncio.ensure_future(run_sweep(load_sweep(sweep_path), store, bus=bus,
                                                   resume=resume))
            if not stop_when_pending:
                return await asyncio.wait_for(task, 60)
            await asyncio.wait_for(pending.wait(), 60)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return None
        finally:
            store.close()

    return asyncio.run(play())


def first_batch_only(edit: Any) -> Any:
    """An output edit applied to the first batch that ends, the later ones left alone."""
    calls: list[int] = []

    def once(lines: list[bytes]) -> list[bytes] | None:
        calls.append(1)
        return edit(lines) if len(calls) == 1 else lines

    return once


def plant_bad_lines(lines: list[bytes]) -> list[bytes]:
    """The first answer's line made not JSON, and a line that is JSON but not an object."""
    return [b"{not json", *lines[1:], b"[]"]


@pytest.mark.parametrize(("model", "resume"), [("openai/loopback", False),
                                               ("openai/loopback", True),
                                               ("anthropic/claude-loop", False)])
def test_a_results_line_that_is_not_a_json_object_fails_only_its_request(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str,
    resume: bool,
) -> None:
    """``{not json`` and ``[]`` in a batch's output: the seven good answers are stored,
    the request whose line was spoilt gets the reason and is asked again in the next batch,
    and the sweep finishes (it used to poll that batch for good). The same when the batch
    ends while nobody polls it and ``--resume`` reads it."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    if model.startswith("anthropic/"):
        pytest.importorskip("anthropic")
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true", model=model,
                        agent_extra="max_tokens = 300")
    db = tmp_path / "bad-line.db"
    if resume:
        server.configure(batch_hold=True)
        run_in_process(sweep, db, stop_when_pending=True)
        assert count(db, "select count(*) from batches where status = 'pending'") == 1
        server.configure(batch_hold=False)
    server.configure(batch_output_edit=first_batch_only(plant_bad_lines))
    summary = run_in_process(sweep, db, resume=resume)
    assert summary.status == "done"
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS
    assert Counter(server.batch_book.submitted.values()) == {1: DECISIONS - 1, 2: 1}
    reasons = [r[0] for r in rows(db, "select error from batch_requests where error is not null")]
    assert len(reasons) == 1
    assert "line 1 is not JSON" in reasons[0] and "is not a JSON object" in reasons[0]
    assert count(db, "select count(*) from batch_requests where result is not null") == DECISIONS


def test_a_results_file_that_cannot_be_read_ends_its_batch_with_the_reason(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output file of the first batch cannot be downloaded (404): after a few tries the
    batch ends with that error, its requests go into a new batch, the sweep finishes."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    server.configure(batch_output_edit=first_batch_only(lambda lines: None))
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true")
    db = tmp_path / "unreadable.db"
    assert run_in_process(sweep, db).status == "done"
    assert batch_sizes(server) == [8, 8, 4, 4]
    [(status, error)] = rows(db, "select status, error from batches where status != 'completed'")
    assert status == "unreadable" and "could not be read (3 tries)" in error
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS


def test_a_repeated_custom_id_keeps_its_first_answer_and_is_counted(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    first: dict[str, Any] = {}

    def repeat_first(lines: list[bytes]) -> list[bytes]:
        line = json.loads(lines[0])
        first.update(line)
        other = json.loads(lines[0])
        other["response"]["body"]["choices"][0]["message"]["content"] = '{"A0": 0, "A1": 100} late'
        return [lines[0], *lines[1:], json.dumps(other).encode(), json.dumps(other).encode()]

    server.configure(batch_output_edit=first_batch_only(repeat_first))
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true")
    db = tmp_path / "dup.db"
    assert run_in_process(sweep, db).status == "done"
    kept = rows(db, f"select result from batch_requests where custom_id = '{first['custom_id']}'")
    answer = first["response"]["body"]["choices"][0]["message"]["content"]
    assert json.loads(kept[0][0])["text"] == answer
    assert any("2 result line(s) repeated a custom_id" in r.getMessage() for r in caplog.records)
    assert set(server.batch_book.submitted.values()) == {1}


@pytest.mark.parametrize("size", [5_000, 400_000])
def test_an_oversized_batch_answer_is_refused_and_only_the_refusal_stored(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """An answer past ``max_answer_chars`` (here 1,000): under the line bound it is read
    and refused; past it (400,000 characters) it is refused from the line's first bytes.
    Either way ``batch_requests`` keeps the refusal, never the payload."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)

    def grow_first(lines: list[bytes]) -> list[bytes]:
        line = json.loads(lines[0])
        line["response"]["body"]["choices"][0]["message"]["content"] = "Z" * size
        return [json.dumps(line).encode(), *lines[1:]]

    server.configure(batch_output_edit=first_batch_only(grow_first))
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true",
                        agent_extra="max_answer_chars = 1000")
    db = tmp_path / "big.db"
    run_in_process(sweep, db)
    [(result, error)] = rows(db, "select result, error from batch_requests where error is not null")
    assert result is None and "refused, and only this refusal stored" in error
    assert count(db, "select max(length(coalesce(result, ''))) from batch_requests") < 1000
    assert b"Z" * 1000 not in db_bytes(db)


def test_an_unknown_batch_status_counts_as_pending_with_a_warning(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A status coop-tui does not know (a provider adds one tomorrow) is pending: the batch
    is polled on until it ends, nothing is sent twice, and the log names the status."""
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    server.configure(batch_status="deliberating", batch_polls=3)
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true")
    db = tmp_path / "unknown.db"
    assert run_in_process(sweep, db).status == "done"
    assert batch_sizes(server) == [8, 4, 4]
    assert set(server.batch_book.submitted.values()) == {1}
    warned = [r.getMessage() for r in caplog.records if "'deliberating'" in r.getMessage()]
    assert len(warned) == 3 and "counts as pending" in warned[0]  # once per batch


def test_a_batch_whose_state_cannot_be_learnt_is_never_sent_again(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling fails in a row (the batch answers 404): the batch may still complete, so its
    requests fail in this run instead of going into a new batch, the ledger keeps it
    pending, and ``--resume`` polls it again and uses its answers: every request sent once."""
    import coop_tui.agents.batch as batch_module

    monkeypatch.setenv("LOOPBACK_KEY", SECRET)
    monkeypatch.setattr(batch_module, "MAX_POLL_FAILURES", 3)
    server.configure(batch_lost=True)
    sweep = write_sweep(tmp_path / "s.toml", server.url, sweep_extra="batch = true")
    db = tmp_path / "lost.db"
    summary = run_in_process(sweep, db)
    assert summary.status == "failed"
    assert batch_sizes(server) == [8] and set(server.batch_book.submitted.values()) == {1}
    assert rows(db, "select status from batches") == [("pending",)]
    server.configure(batch_lost=False)
    assert run_in_process(sweep, db, resume=True).status == "done"
    assert set(server.batch_book.submitted.values()) == {1}
    assert batch_sizes(server) == [8, 4, 4]
    assert count(db, "select count(*) from decisions where valid = 1") == DECISIONS
