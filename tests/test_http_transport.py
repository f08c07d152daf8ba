"""The agent's HTTP path on aiohttp: framings, kept-alive reuse, cut streams, faults,
proxies, refused connections and the fail-fast rule for a dead server.

Canned servers answer one fixed byte string per connection, so a test fixes exactly what
is on the wire (a ``Content-Length`` body, a body ended by closing the connection, a body
cut short, an error status); the loopback server (coop_tui/testing/server.py) plays the
rest. A closed port on 127.0.0.1 stands for a dead server.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.llm import LLMAgent, ProviderError
from coop_tui.agents.transport import REFUSED, connection_cause, probe_all
from coop_tui.decisions import NullSink
from coop_tui.errors import failure_reason
from coop_tui.redact import scrub
from coop_tui.testing.server import LoopbackServer

MESSAGES = [{"role": "user", "content": "q"}]
SSE = (
    b'data: {"choices": [{"delta": {"content": "hi "}, "finish_reason": null}]}\n\n'
    b'data: {"choices": [{"delta": {"content": "there"}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


async def _canned(response: bytes) -> AsyncIterator[str]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(response)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()


def closed_port() -> int:
    """A port on 127.0.0.1 with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _reply(agent: LLMAgent) -> Any:
    try:
        return await agent.reply(None, list(MESSAGES), NullSink())  # type: ignore[arg-type]
    finally:
        await agent.aclose()


# ------------------------------------------------------------------------ framings
async def test_content_length_body_is_read_as_sse() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(SSE) + SSE
    async for url in _canned(raw):
        reply = await _reply(LLMAgent("a", "openai/x", api_base=url, timeout=5.0))
    assert reply.text == "hi there" and reply.transport_retries == 0


async def test_body_ended_by_closing_the_connection_is_complete() -> None:
    raw = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + SSE
    async for url in _canned(raw):
        reply = await _reply(LLMAgent("a", "openai/x", api_base=url, timeout=5.0))
    assert reply.text == "hi there" and reply.transport_retries == 0


async def test_crlf_events_with_comments_and_multi_line_data_in_small_http_chunks() -> None:
    events = (
        b": keep-alive\r\n\r\n"
        b'event: message\r\nid: 1\r\ndata: {"choices": [{"delta": {"content": "hi "},\r\n'
        b'data:  "finish_reason": null}]}\r\n\r\n'
        b'data: {"choices": [{"delta": {"content": "there"}, "finish_reason": "stop"}],'
        b' "usage": {"prompt_tokens": 3, "completion_tokens": 2}}\r\n\r\n'
        b"data: [DONE]\r\n\r\n"
    )
    body = b"".join(b"%x\r\n%s\r\n" % (len(events[i:i + 7]), events[i:i + 7])
                    for i in range(0, len(events), 7)) + b"0\r\n\r\n"
    raw = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n" + body)
    async for url in _canned(raw):
        reply = await _reply(LLMAgent("a", "openai/x", api_base=url, timeout=5.0))
    assert reply.text == "hi there" and reply.transport_retries == 0
    assert (reply.input_tokens, reply.output_tokens) == (3, 2)


async def test_a_body_shorter_than_its_length_is_a_cut_stream_and_retried() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + SSE[:40]
    async for url in _canned(raw):
        agent = LLMAgent("a", "openai/x", api_base=url, timeout=5.0, max_retries=1,
                         backoff_base=0.001)
        with pytest.raises(ProviderError) as info:
            await _reply(agent)
    assert info.value.retries == 1
    assert failure_reason(str(info.value)) in ("connection dropped after retries",
                                               "gave up after retries")


async def test_error_status_carries_the_providers_words_and_retry_after() -> None:
    body = b'{"error": {"message": "slow down"}}'
    raw = (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0.01\r\nContent-Length: %d\r\n\r\n"
           % len(body) + body)
    async for url in _canned(raw):
        agent = LLMAgent("a", "openai/x", api_base=url, timeout=5.0, max_retries=1)
        started = time.monotonic()
        with pytest.raises(ProviderError, match="HTTP 429: slow down") as info:
            await _reply(agent)
    assert info.value.status == 429 and info.value.retries == 1
    assert time.monotonic() - started < 5  # waited Retry-After (0.01 s), not a backoff cap


# ------------------------------------------------------------------------ the loopback server
async def test_chunked_sse_streams_and_reuses_one_connection(loopback: LoopbackServer) -> None:
    loopback.configure(chunks=7, answer="seven chunks of a streamed answer here")
    agent = LLMAgent("a", "openai/loopback", api_base=loopback.url, timeout=5.0)
    try:
        texts = [(await agent.reply(None, list(MESSAGES), NullSink())).text for _ in range(4)]  # type: ignore[arg-type]
    finally:
        await agent.aclose()
    assert texts == ["seven chunks of a streamed answer here"] * 4
    assert len({r.peer for r in loopback.chat_requests}) == 1  # kept alive, reused


@pytest.mark.parametrize("fault", ["500", "429", "drop", "truncate", "malformed", "timeout"])
async def test_each_fault_is_retried_on_the_aiohttp_path(loopback: LoopbackServer, fault: str) -> None:
    loopback.configure(fault_script=[fault], hang=0.5, retry_after=0.01)
    agent = LLMAgent("a", "openai/loopback", api_base=loopback.url, timeout=0.3,
                     backoff_base=0.001)
    reply = await _reply(agent)
    assert reply.text == loopback.config.answer and reply.transport_retries == 1


@pytest.mark.parametrize("credentials", ["", "carol:pw-123@"])
async def test_a_proxy_from_the_environment_is_used(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, credentials: str
) -> None:
    """Requests go through HTTP_PROXY; a proxy's credentials reach it as its
    Proxy-Authorization header, without aiohttp's deprecated proxy_auth."""
    seen: list[bytes] = []
    heads: list[bytes] = []
    relays: list[asyncio.Task[Any]] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relays.append(asyncio.current_task())  # type: ignore[arg-type]
        head = await reader.readuntil(b"\r\n\r\n")
        line, rest = head.split(b"\r\n", 1)
        seen.append(line)
        heads.append(rest)
        method, target, version = line.split(b" ")
        path = b"/" + target.split(b"://", 1)[1].split(b"/", 1)[1]  # absolute form -> path
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", loopback.port)
        up_writer.write(b" ".join([method, path, version]) + b"\r\n" + rest)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer),
                             return_exceptions=True)

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://{credentials}127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            reply = await _reply(LLMAgent("a", "openai/loopback", api_base=loopback.url,
                                          timeout=5.0))
    finally:
        proxy.close()
        await asyncio.wait(relays, timeout=5)  # the agent closed its connection: they end
    assert reply.text == loopback.config.answer
    assert seen and seen[0].startswith(b"POST http://127.0.0.1:") and b"/chat/completions" in seen[0]
    sent = b"proxy-authorization: basic " + base64.b64encode(b"carol:pw-123").lower()
    assert (sent in heads[0].lower()) == bool(credentials)


async def test_a_slow_server_keeps_the_long_read_timeout(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connect budget bounds connecting only: a server that thinks longer than it
    before its first byte is waited for, up to the agent's own timeout."""
    import coop_tui.agents.transport as transport

    monkeypatch.setattr(transport, "CONNECT_BUDGET", 0.05)
    loopback.configure(ttft=0.3, latency=0.35)
    reply = await _reply(LLMAgent("a", "openai/loopback", api_base=loopback.url, timeout=10.0))
    assert reply.text == loopback.config.answer and reply.transport_retries == 0


# ------------------------------------------------------------------------ dead servers
@pytest.mark.slow
async def test_a_refused_connection_fails_fast_naming_its_cause() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    agent = LLMAgent("a", "openai/x", api_base=url, timeout=120.0, max_retries=6,
                     backoff_base=0.001)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        await _reply(agent)
    elapsed = time.monotonic() - started
    assert "connection refused" in str(info.value)
    assert failure_reason(f"ProviderError: {info.value}") == "connection refused"
    # one rest of 5 s, then the probe fails again and the rest of the retries fail at once
    # (the old client took 5 + 10 + 20 + 40 + 60 + 60 s of rests for the same answer)
    assert elapsed < 30


@pytest.mark.slow
async def test_once_the_server_failed_twice_every_request_fails_at_once() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    agent = LLMAgent("a", "openai/x", api_base=url, backoff_base=0.001)
    with pytest.raises(ProviderError):
        await agent.reply(None, list(MESSAGES), NullSink())  # type: ignore[arg-type]
    sent = agent.endpoints.endpoints[0].sent  # type: ignore[union-attr]
    results = await asyncio.gather(
        *(agent.reply(None, list(MESSAGES), NullSink()) for _ in range(50)),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    await agent.aclose()
    assert all(isinstance(r, ProviderError) and "connection refused" in str(r) for r in results)
    assert agent.endpoints.endpoints[0].sent == sent  # type: ignore[union-attr]  # none was sent


async def test_probe_names_refused_and_accepts_any_http_answer(loopback: LoopbackServer) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    results = await probe_all([dead, loopback.url, loopback.url + "/nowhere"])
    assert results[loopback.url].error is None and results[loopback.url].status == 200
    assert results[loopback.url + "/nowhere"].error is None  # a 404 is still a server
    assert results[dead].error is not None and results[dead].error.startswith(REFUSED)


async def test_connection_causes_are_read_from_aiohttp_and_wrapped_errors() -> None:
    import aiohttp

    session = aiohttp.ClientSession()
    try:
        with pytest.raises(aiohttp.ClientError) as info:
            await session.get(f"http://127.0.0.1:{closed_port()}/")
    finally:
        await session.close()
    assert connection_cause(info.value) == REFUSED

    class APIConnectionError(Exception):  # litellm's wrapper: a 500 that no server sent
        status_code = 500

    wrapped = APIConnectionError("OllamaException - Cannot connect to host localhost:11434 "
                                 "ssl:default [Connect call failed ('127.0.0.1', 11434)]")
    assert connection_cause(wrapped) == REFUSED
    assert failure_reason(
        "ProviderError: m: gave up after 6 retries; last error: HTTP 500: litellm."
        "APIConnectionError: Cannot connect to host localhost:11434 ssl:default "
        "[Connect call failed ('127.0.0.1', 11434)]"
    ) == "connection refused"


def test_aiohttp_error_texts_are_scrubbed() -> None:
    text = ("ClientConnectorError: Cannot connect to host alice:s3cret-Pass@gpu1:8000 "
            "ssl:default; url='https://gpu1:8000/v1/chat/completions?api_key=sk-abcdef123456'; "
            "URL('http://bob:hunter2-XY@proxy:3128'); "
            "real_url=URL('https://g.example/v1beta/models?alt=sse&key=AIzaSyA-0123456789xyz')")
    cleaned = scrub(text)
    for secret in ("s3cret-Pass", "sk-abcdef123456", "hunter2-XY", "AIzaSyA-0123456789xyz"):
        assert secret not in cleaned, cleaned


# ------------------------------------------------------------------------ sessions
def test_a_sweep_leaves_no_unclosed_session(tmp_path: Path) -> None:
    code = (
        "import asyncio, gc, warnings, sys\n"
        "warnings.simplefilter('always')\n"
        "from coop_tui.spec import build_sweep\n"
        "from coop_tui.store import Store\n"
        "from coop_tui.sweep import run_sweep\n"
        "from coop_tui.testing.server import LoopbackServer\n"
        "with LoopbackServer(latency=0.01, chunks=2, answer='ok {\"A0\": 60, \"A1\": 40}') as srv:\n"
        "    spec = build_sweep({'name': 's', 'agents': {'m': {'model': 'openai/loopback',\n"
        "        'api_base': srv.url}}, 'experiments': [{'game': 'prisoners', 'agents': ['m']}]})\n"
        "    summary = asyncio.run(run_sweep(spec, Store(sys.argv[1])))\n"
        "    gc.collect()\n"
        "print(summary.status)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.db")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "Unclosed" not in out.stderr, out.stderr


async def test_closing_the_agent_closes_its_session(loopback: LoopbackServer) -> None:
    agent = LLMAgent("a", "openai/loopback", api_base=loopback.url, timeout=5.0)
    await agent.reply(None, list(MESSAGES), NullSink())  # type: ignore[arg-type]
    session = agent.endpoints._session  # type: ignore[union-attr]
    await agent.aclose()
    assert session.closed
    gc.collect()  # what earlier tests left for the collector must not be counted as this one's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session
        gc.collect()
    assert not [w for w in caught if "Unclosed" in str(w.message)]


@pytest.mark.slow
async def test_a_litellm_routed_ollama_agent_names_the_refused_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The superadditive study's agents (ollama/..., no api_base) go through litellm to its
    default server: a dead one is named as a refused connection, not "HTTP 500"."""
    base = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("OLLAMA_API_BASE", base)
    agent = LLMAgent("a", "ollama/qwen3:14b", timeout=30.0, backoff_base=0.001)
    assert agent.transport == "litellm" and agent.api_bases == [base]
    with pytest.raises(ProviderError) as info:
        await _reply(agent)
    assert failure_reason(f"ProviderError: {info.value}") == "connection refused", info.value
    assert "HTTP 500" not in str(info.value)
    assert info.value.retries <= 2  # the first failure and the probe after the rest
