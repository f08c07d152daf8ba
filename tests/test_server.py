"""The loopback server speaks the OpenAI chat API and injects the faults it promises.

These tests use the standard library's HTTP client so they check the wire format itself,
independently of the openai / litellm clients exercised in test_llm_agent.py.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

from coop_tui.testing.server import LoopbackServer, last_user_message


def _conn(server: LoopbackServer, timeout: float = 10.0) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def _post(
    conn: http.client.HTTPConnection, body: dict[str, Any], headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    conn.request(
        "POST",
        "/v1/chat/completions",
        json.dumps(body),
        {"Content-Type": "application/json", **(headers or {})},
    )
    return conn.getresponse()


def _chat(stream: bool, usage: bool = False, content: str = "hello") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "loopback",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": content},
        ],
        "stream": stream,
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    return body


def _events(raw: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE body, in order."""
    return [
        block[len("data: ") :] for block in raw.decode().split("\n\n") if block.startswith("data: ")
    ]


def test_stream_delivers_answer_in_chunks_then_usage_and_done(loopback: LoopbackServer) -> None:
    loopback.configure(answer="The quick brown fox jumps", chunks=4, reasoning="hmm, let me see")
    conn = _conn(loopback)
    resp = _post(conn, _chat(stream=True, usage=True))
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "text/event-stream"
    assert resp.getheader("Transfer-Encoding") == "chunked"
    events = _events(resp.read())
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    content = [d["content"] for d in deltas if "content" in d]
    reasoning = [d["reasoning_content"] for d in deltas if "reasoning_content" in d]
    assert "".join(content) == "The quick brown fox jumps"
    assert len(content) == 4
    assert "".join(reasoning) == "hmm, let me see"
    # Reasoning comes before the visible answer, as reasoning models stream it.
    first_content = next(i for i, d in enumerate(deltas) if "content" in d)
    assert all("reasoning_content" not in d for d in deltas[first_content:])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "stop" and finishes.count("stop") == 1
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == []
    assert usage["completion_tokens"] == 5 + 4  # answer words + reasoning words
    assert usage["prompt_tokens"] == loopback.requests[0].usage["prompt_tokens"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_usage_chunk_only_when_asked(loopback: LoopbackServer) -> None:
    conn = _conn(loopback)
    events = _events(_post(conn, _chat(stream=True)).read())
    assert not any("usage" in json.loads(e) for e in events[:-1])


def test_non_streaming_answer_and_models(loopback: LoopbackServer) -> None:
    loopback.configure(answer="plain answer", reasoning="why")
    conn = _conn(loopback)
    resp = _post(conn, _chat(stream=False))
    payload = json.loads(resp.read())
    assert payload["object"] == "chat.completion"
    message = payload["choices"][0]["message"]
    assert message["content"] == "plain answer"
    assert message["reasoning_content"] == "why"
    assert payload["usage"]["completion_tokens"] == 3
    # Same connection again: keep-alive works.
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert [m["id"] for m in models["data"]] == ["loopback"]
    assert [r.path for r in loopback.requests] == ["/v1/chat/completions", "/v1/models"]


def test_scripted_answer_reads_the_request(loopback: LoopbackServer) -> None:
    def answer(body: dict[str, Any]) -> str:
        prompt = last_user_message(body)
        return '{"A0": 60, "A1": 40}' if "percent" in prompt else "no idea"

    loopback.configure(answer=answer)
    conn = _conn(loopback)
    out = []
    for content in ("give percentages: percent", "something else"):
        payload = json.loads(_post(conn, _chat(stream=False, content=content)).read())
        out.append(payload["choices"][0]["message"]["content"])
    assert out == ['{"A0": 60, "A1": 40}', "no idea"]


def test_records_headers_and_bodies(loopback: LoopbackServer) -> None:
    conn = _conn(loopback)
    _post(conn, _chat(stream=False), {"Authorization": "Bearer sk-test-123"}).read()
    record = loopback.requests[0]
    assert record["headers"]["authorization"] == "Bearer sk-test-123"
    assert record["body"]["messages"][1]["content"] == "hello"
    # the server stamps ``done`` after its last write drains, which may be just after the
    # client has read the body: wait for it rather than race it
    deadline = time.monotonic() + 5
    while record.done is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert record.fault is None and record.done is not None


def test_api_key_enforced_with_401(loopback: LoopbackServer) -> None:
    loopback.configure(api_key="right-key")
    conn = _conn(loopback)
    bad = _post(conn, _chat(stream=False), {"Authorization": "Bearer wrong-key"})
    assert bad.status == 401
    assert json.loads(bad.read())["error"]["type"] == "authentication_error"
    good = _post(conn, _chat(stream=False), {"Authorization": "Bearer right-key"})
    assert good.status == 200
    good.read()
    assert [r.fault for r in loopback.requests] == ["401", None]


def test_status_faults_from_the_script(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["429", "500", "503", None], retry_after=0.3)
    conn = _conn(loopback)
    statuses, retry_after = [], None
    for _ in range(4):
        resp = _post(conn, _chat(stream=True))
        statuses.append(resp.status)
        if resp.status == 429:
            retry_after = resp.getheader("Retry-After")
        resp.read()
    assert statuses == [429, 500, 503, 200]
    assert retry_after == "0.3"
    assert [r.fault for r in loopback.requests] == ["429", "500", "503", None]


def test_malformed_and_truncated_streams(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["malformed", "truncate"], answer="abcdefgh", chunks=4)
    conn = _conn(loopback)
    malformed = _events(_post(conn, _chat(stream=True)).read())
    with pytest.raises(json.JSONDecodeError):
        json.loads(malformed[-1])
    assert "[DONE]" not in malformed
    truncated = _events(_post(conn, _chat(stream=True)).read())
    assert truncated and "[DONE]" not in truncated
    chunks = [json.loads(e) for e in truncated]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "abcd"


def test_drop_cuts_the_connection_mid_body(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["drop"], answer="abcdefgh", chunks=4)
    conn = _conn(loopback)
    resp = _post(conn, _chat(stream=True))
    assert resp.status == 200
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        resp.read()


def test_timeout_fault_stays_silent(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["timeout"], hang=5.0)
    conn = _conn(loopback, timeout=0.3)
    with pytest.raises((socket.timeout, TimeoutError)):
        _post(conn, _chat(stream=True))
    assert loopback.requests[0].fault == "timeout"


def _fault_sequence(seed: int, n: int = 40) -> list[str | None]:
    with LoopbackServer(latency=0.0, fault_rate=0.5, fault_kinds=("500", "503"), seed=seed) as s:
        conn = _conn(s)
        for _ in range(n):
            _post(conn, _chat(stream=False)).read()
        return [r.fault for r in s.requests]


def test_random_faults_are_deterministic_per_seed() -> None:
    first, again, other = _fault_sequence(7), _fault_sequence(7), _fault_sequence(8)
    assert first == again
    assert first != other
    assert set(first) == {None, "500", "503"}


def test_many_concurrent_streams_all_complete(loopback: LoopbackServer) -> None:
    loopback.configure(latency=0.3, chunks=20, answer=lambda b: last_user_message(b).upper())

    def one(i: int) -> str:
        conn = _conn(loopback)
        events = _events(_post(conn, _chat(stream=True, content=f"request {i}")).read())
        conn.close()
        chunks = [json.loads(e) for e in events[:-1]]
        return "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(one, range(40)))
    assert answers == [f"REQUEST {i}" for i in range(40)]
    assert len(loopback.requests) == 40


def test_hold_keeps_every_answer_until_release(loopback: LoopbackServer) -> None:
    loopback.configure(hold=True, latency=0.0, answer="held")

    def ask() -> dict[str, Any]:
        conn = _conn(loopback)
        try:
            return json.loads(_post(conn, _chat(stream=False)).read())
        finally:
            conn.close()

    with ThreadPoolExecutor(2) as pool:
        waiting = [pool.submit(ask) for _ in range(2)]
        deadline = time.monotonic() + 10
        while len(loopback.chat_requests) < 2:  # both arrived and were recorded
            assert time.monotonic() < deadline, "the requests never arrived"
            time.sleep(0.01)
        assert not any(f.done() for f in waiting)  # held, not answered
        loopback.release()
        answers = [f.result(timeout=10) for f in waiting]
    assert [a["choices"][0]["message"]["content"] for a in answers] == ["held", "held"]
    assert len(loopback.chat_requests) == 2  # still recorded: release() forgets nothing
    assert ask()["choices"][0]["message"]["content"] == "held"  # later requests pass at once


def test_configure_rejects_unknown_settings(loopback: LoopbackServer) -> None:
    with pytest.raises(TypeError, match="latancy"):
        loopback.configure(latancy=1.0)


def test_unknown_route_is_404(loopback: LoopbackServer) -> None:
    conn = _conn(loopback)
    conn.request("GET", "/v1/nothing")
    resp = conn.getresponse()
    assert resp.status == 404
    assert "no route" in json.loads(resp.read())["error"]["message"]


def test_keep_alive_connection_is_recorded_as_one_peer(loopback: LoopbackServer) -> None:
    conn = _conn(loopback)
    for _ in range(2):
        _post(conn, _chat(stream=True)).read()
    other = _conn(loopback)
    _post(other, _chat(stream=False)).read()
    peers = [r.peer for r in loopback.requests]
    assert peers[0] == peers[1] != peers[2]


def test_command_line_server_answers() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coop_tui.testing.server",
            "--port",
            "0",
            "--latency",
            "0.01",
            "--chunks",
            "3",
            "--answer",
            "from the cli",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        parts = urlsplit(line.removeprefix("listening on "))
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        payload = json.loads(_post(conn, _chat(stream=False)).read())
        assert payload["choices"][0]["message"]["content"] == "from the cli"
    finally:
        proc.terminate()
        proc.wait(10)


def test_interrupt_mode_ends_a_running_stream_like_llama_cpp(loopback: LoopbackServer) -> None:
    loopback.configure(interrupt=True, latency=0.6, chunks=6, answer="abcdefghijkl")
    first = _conn(loopback)
    resp = _post(first, _chat(stream=True))
    assert resp.status == 200
    head = resp.read1(1)  # returns once the first stream is running
    second = _conn(loopback)
    later = _post(second, _chat(stream=True))
    raw = b""
    with pytest.raises((http.client.IncompleteRead, ConnectionError)) as info:
        raw = resp.read()  # [DONE], then the connection drops mid-body
    raw = head + (getattr(info.value, "partial", raw) or raw)
    events = _events(raw)
    assert events[-1] == "[DONE]"
    finishes = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1]]
    assert finishes and not any(finishes)  # no finish reason anywhere
    assert loopback.interrupted == 1
    complete = _events(later.read())
    assert complete[-1] == "[DONE]" and '"finish_reason": "stop"' in complete[-2]
