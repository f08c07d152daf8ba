"""Several servers for one model, servers that cut concurrent streams, and what the
decision records about its transport (provider latency, queueing, unknown tokens, retries).

Everything speaks real HTTP to loopback servers on 127.0.0.1; a server is killed by
stopping it (its listening socket closes, running streams are cut).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.endpoints import EndpointPool
from coop_tui.agents.llm import LLMAgent, ProviderError
from coop_tui.decisions import NullSink
from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

MESSAGES = [{"role": "user", "content": "Choose."}]


def answer_for(body: dict[str, Any]) -> str:
    h = int(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest(), 16) % 101
    return f'I mix.\n{{"A0": {h}, "A1": {100 - h}}}'


def sweep(urls: str | list[str], *, concurrency: int, samples: int, **agent: Any) -> Any:
    return build_sweep(
        {
            "name": "endpoints",
            "seed": 5,
            "concurrency": concurrency,
            "samples": samples,
            "agents": {"m": {"model": "openai/loopback", "api_base": urls, "api_key": "k",
                             "timeout": 5.0, **agent}},
            "experiments": [
                {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                 "agents": ["m"], "similarity": [0, 100]},
            ],
        }
    )


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# ------------------------------------------------------------------- the pool alone
async def test_least_busy_routing_respects_each_endpoint_limit() -> None:
    pool = EndpointPool(["http://a", "http://b"], 2)
    leases = [await pool.acquire() for _ in range(4)]
    assert sorted(lease.endpoint.url for lease in leases) == ["http://a"] * 2 + ["http://b"] * 2
    waiter = asyncio.create_task(pool.acquire())
    for _ in range(10):  # the pool needs no I/O: a few loop turns let the waiter run and block
        await asyncio.sleep(0)
    assert not waiter.done()  # both endpoints are full
    pool.release(leases[3], "ok")
    lease = await asyncio.wait_for(waiter, 1)
    assert lease.endpoint is leases[3].endpoint


async def test_a_down_endpoint_is_skipped_then_probed_again() -> None:
    pool = EndpointPool(["http://a", "http://b"], 4)
    first = await pool.acquire()
    pool.release(first, "down")
    for _ in range(3):
        lease = await pool.acquire()
        assert lease.endpoint is not first.endpoint
        pool.release(lease, "ok")
    first.endpoint.down_until = time.monotonic()  # its pause is over
    seen = set()
    for _ in range(2):
        lease = await pool.acquire()
        seen.add(lease.endpoint.url)
    assert seen == {"http://a", "http://b"}
    assert "rests" in pool.notices[0]


async def test_concurrent_cuts_halve_the_limit_down_to_one() -> None:
    pool = EndpointPool(["http://a"], 4, agent="m")
    for expected in (2, 1):
        for _ in range(2):
            a, b = await pool.acquire(), await pool.acquire()
            pool.release(a, "cut")
            pool.release(b, "ok")
        assert pool.endpoints[0].limit == expected
    lone = await pool.acquire()
    pool.release(lone, "cut")  # alone on the endpoint: says nothing about concurrency
    assert pool.endpoints[0].limit == 1
    assert len(pool.notices) == 2
    assert "interrupt" in pool.notices[0] and "max_concurrency" in pool.notices[0]


# ------------------------------------------------------------------- the agent
@pytest.mark.parametrize("transport", ["openai", "litellm"])
async def test_interrupting_server_is_adapted_to_and_every_answer_completes(
    transport: str,
) -> None:
    with LoopbackServer(latency=0.1, chunks=5, answer="done and dusted", interrupt=True) as srv:
        agent = LLMAgent("m", "openai/loopback", api_base=srv.url, backoff_base=0.01,
                         max_retries=2, max_concurrency=4, transport=transport)  # type: ignore[arg-type]
        heard: list[Any] = []
        agent.on_notice = heard.append
        replies = await asyncio.gather(
            *(agent.reply(None, list(MESSAGES), NullSink()) for _ in range(12))  # type: ignore[arg-type]
        )
        assert [r.text for r in replies] == ["done and dusted"] * 12
        assert srv.interrupted > 0
        assert agent.endpoints is not None and agent.endpoints.endpoints[0].limit < 4
        assert heard and "lowered" in heard[0].message
        # cut streams were retried (and counted), without using up max_retries = 2
        assert sum(r.transport_retries for r in replies) >= srv.interrupted


async def test_give_up_counts_retries_and_names_the_host_only() -> None:
    with LoopbackServer(latency=0.01, fault_script=["500"] * 10) as srv:
        user_url = srv.url.replace("http://", "http://user:pw@")
        agent = LLMAgent("m", "openai/loopback", api_base=user_url, backoff_base=0.001,
                         max_retries=2)
        with pytest.raises(ProviderError) as info:
            await agent.reply(None, list(MESSAGES), NullSink())  # type: ignore[arg-type]
        assert info.value.retries == 2
        assert "pw" not in str(info.value) and "user" not in str(info.value)


def test_sweep_reports_adaptation_and_queue_time(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.05, chunks=5, answer=answer_for, interrupt=True) as srv:
        store = Store(tmp_path / "a.db")
        summary = asyncio.run(run_sweep(sweep(srv.url, concurrency=4, samples=3), store))
        store.close()
    assert summary.status == "done", summary.errors
    assert summary.matches_done == 6 and summary.matches_failed == 0
    assert any("lowered" in n for n in summary.notices)
    stored = rows(tmp_path / "a.db", "select latency_ms, queue_ms, valid from decisions")
    assert len(stored) == 12 and all(valid for *_, valid in stored)
    assert all(q is not None and q >= 0 for _, q, _ in stored)
    # once lowered to 1, decisions wait for the slot: queueing shows apart from latency
    assert max(q for _, q, _ in stored) > 20
    assert all(lat < 1000 for lat, _, _ in stored)


def test_tokens_a_server_did_not_send_are_stored_as_null(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, answer=answer_for, send_usage=False) as srv:
        store = Store(tmp_path / "t.db")
        summary = asyncio.run(run_sweep(sweep(srv.url, concurrency=2, samples=1), store))
        counts = build_report(store, summary.run_id)["counts"]
        store.close()
    assert summary.status == "done"
    tokens = rows(tmp_path / "t.db", "select input_tokens, output_tokens from decisions")
    assert tokens and all(t == (None, None) for t in tokens)
    assert counts["input_tokens"] is None and counts["output_tokens"] is None
    assert counts["tokens_unknown"] == len(tokens)


def test_retries_of_a_decision_that_gives_up_are_counted(tmp_path: Path) -> None:
    faults = ["429"] * 200  # Retry-After keeps the backoff short
    with LoopbackServer(latency=0.01, answer=answer_for, fault_script=faults, retry_after=0.01) as srv:
        store = Store(tmp_path / "g.db")
        spec = sweep(srv.url, concurrency=1, samples=1)
        summary = asyncio.run(run_sweep(spec, store))
        counts = build_report(store, summary.run_id)["counts"]
        store.close()
    assert summary.matches_failed == 2
    assert counts["transport_retries"] == 12
    # 2 matches, each gave up on its first decision after max_retries (6) retries
    assert summary.transport_retries == 12
    stored = rows(tmp_path / "g.db", "select transport_retries from failures")
    assert sorted(r for (r,) in stored) == [6, 6]


# ------------------------------------------------------------------- many endpoints
def test_four_endpoints_one_killed_mid_sweep_nothing_lost(tmp_path: Path) -> None:
    servers = [LoopbackServer(latency=0.05, chunks=5, answer=answer_for).start() for _ in range(4)]
    victim = servers[1]
    try:
        spec = sweep([s.url for s in servers], concurrency=16, samples=20, max_concurrency=4)
        store = Store(tmp_path / "e.db")

        def kill_soon() -> None:
            while len(victim.chat_requests) < 8:
                time.sleep(0.005)
            victim.stop()

        killer = threading.Thread(target=kill_soon)
        killer.start()
        started = time.perf_counter()
        summary = asyncio.run(run_sweep(spec, store))
        wall = time.perf_counter() - started
        killer.join()
        store.close()
    finally:
        for s in servers:
            s.stop()
    assert summary.status == "done", summary.errors
    assert summary.matches_done == 40 and summary.matches_failed == 0
    decisions = rows(tmp_path / "e.db", "select valid, transport_retries from decisions")
    assert len(decisions) == 80 and all(valid for valid, _ in decisions)
    served = [len([r for r in s.chat_requests if r.done is not None]) for s in servers]
    assert sum(served) == 80  # every decision answered exactly once, somewhere
    assert served[1] < min(served[0], served[2], served[3])  # the dead one got no more
    assert any("rests" in n for n in summary.notices)
    ideal = (80 / 16) * 0.05
    print(f"\n4 endpoints, one killed: {wall:.2f} s for 80 decisions, "
          f"efficiency {ideal / wall:.2f}, answered per endpoint {served}")


@pytest.mark.parametrize(
    ("value", "words"),
    [([], "lists no server"), (["http://a/v1", "http://a/v1"], "twice"), ([3], "api_base")],
)
def test_bad_endpoint_lists_are_refused_naming_the_field(value: Any, words: str) -> None:
    from coop_tui.spec import SpecError

    with pytest.raises(SpecError) as info:
        sweep(value, concurrency=1, samples=1)
    assert "api_base" in str(info.value) and words in str(info.value)


def test_constrained_must_be_a_known_kind() -> None:
    from coop_tui.spec import SpecError

    with pytest.raises(SpecError) as info:
        sweep("http://127.0.0.1:1/v1", concurrency=1, samples=1, constrained="regex")
    assert "constrained" in str(info.value)


def test_migration_adds_the_queue_column_to_an_older_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("alter table decisions drop column queue_ms")
    conn.execute("alter table failures drop column transport_retries")
    conn.execute("delete from _migrations where name = 'm020_transport_queue'")
    conn.commit()
    conn.close()
    store = Store(path)
    assert "m020_transport_queue" in store.applied
    assert "queue_ms" in store.db["decisions"].columns_dict
    assert "transport_retries" in store.db["failures"].columns_dict
    store.close()


def test_migration_names_stored_failures_by_their_cause(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    Store(path).close()
    refused = ("ProviderError: ollama/qwen3 at localhost:11434: gave up after 6 retries; last "
               "error: HTTP 500: litellm.APIConnectionError: Cannot connect to host "
               "localhost:11434 ssl:default [Connect call failed ('127.0.0.1', 11434)]")
    conn = sqlite3.connect(path)
    conn.execute("insert into failures (match_id, run_id, error, reason) values "
                 "('m1', 'r', ?, 'HTTP 500 after retries'), ('m2', 'r', 'x: HTTP 401: no', 'HTTP 401')",
                 [refused])
    conn.execute("delete from _migrations where name = 'm120_failure_reasons_by_cause'")
    conn.commit()
    conn.close()
    store = Store(path)
    assert "m120_failure_reasons_by_cause" in store.applied
    groups = {g["reason"]: g["count"] for g in store.failure_groups("r")}
    store.close()
    assert groups == {"connection refused": 1, "HTTP 401": 1}
