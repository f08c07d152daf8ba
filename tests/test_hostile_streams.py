"""Hostile servers against the real agent over real HTTP (issue #31): streams that never
end, stall, grow without bound, lie about usage, redirect, answer with a web page, echo
the key; and proxies from the environment.

The loopback server (coop_tui/testing/server.py) plays each fault; the agent
(coop_tui/agents/llm.py and http_stream.py) talks to it through aiohttp (or litellm) as in a sweep. No test
waits on a clock to decide: each asserts what was recorded (the error's words, the retry
count, what a proxy saw), so a busy machine changes only how long a test takes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest

from coop_tui import redact
from coop_tui.agents import llm
from coop_tui.agents.factory import build_agent
from coop_tui.agents.llm import LLMAgent, ProviderError
from coop_tui.agents.sse import EventTooLong, SSEDecoder
from coop_tui.errors import failure_reason
from coop_tui.events import EventBus, ReasoningDelta, TextDelta
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

MESSAGES = [{"role": "user", "content": "q"}]
ANSWER = "Cooperate, since the other player mirrors me."


class Recorder:
    """A stream sink that keeps what the agent handed on, and why it restarted."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.restarts: list[str] = []

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def reasoning(self, delta: str) -> None:
        self.texts.append(delta)

    def restart(self, reason: str) -> None:
        self.restarts.append(reason)


async def ask(agent: LLMAgent, sink: Any = None) -> Any:
    try:
        return await agent.reply(None, list(MESSAGES), sink or Recorder())  # type: ignore[arg-type]
    finally:
        await agent.aclose()


def agent_for(server: LoopbackServer, **options: Any) -> LLMAgent:
    options.setdefault("backoff_base", 0.001)
    return LLMAgent("a", "openai/loopback", api_base=server.url, **options)


# ------------------------------------------------------------- 1. silence and deadline
async def test_keepalive_comments_are_not_data_the_silence_timeout_ends_them(
    loopback: LoopbackServer,
) -> None:
    """A server that sends ``: keepalive`` and never an answer times out on the agent's
    silence limit, and the attempt is retried (recorded); before, every comment pushed the
    limit back and the agent waited as long as the server kept talking."""
    loopback.configure(answer=ANSWER, fault_script=["keepalive"], hang=8.0,
                       keepalive_every=0.02)
    sink = Recorder()
    reply = await ask(agent_for(loopback, timeout=1.0), sink)
    assert reply.text == ANSWER and reply.transport_retries == 1
    assert len(sink.restarts) == 0  # nothing was shown, so nothing to take back
    assert loopback.chat_requests[0].fault == "keepalive"


async def test_keepalive_forever_fails_naming_the_silence_limit(loopback: LoopbackServer) -> None:
    loopback.configure(answer=ANSWER, fault_script=["keepalive"] * 2, hang=8.0,
                       keepalive_every=0.02)
    with pytest.raises(ProviderError) as info:
        await ask(agent_for(loopback, timeout=1.0, max_retries=1))
    assert "the server sent no data for 1 s (the agent's timeout)" in str(info.value)
    assert info.value.retries == 1 and info.value.retryable


async def test_a_steady_stream_that_never_ends_meets_the_deadline(loopback: LoopbackServer) -> None:
    """Data every 20 ms keeps the silence limit away, so only the overall deadline ends a
    request that would take a minute."""
    loopback.configure(answer="word " * 3000, chunks=3000, latency=60.0)
    with pytest.raises(ProviderError) as info:
        await ask(agent_for(loopback, timeout=5.0, deadline=0.5, max_retries=0))
    assert "no complete answer within 0.5 s (the agent's deadline)" in str(info.value)
    assert failure_reason(f"ProviderError: {info.value}") == "timeout after retries"


def test_the_deadline_defaults_to_ten_silence_limits() -> None:
    assert LLMAgent("a", "openai/x", api_base="http://127.0.0.1:1/v1", timeout=30).deadline == 300
    sweep = build_sweep({
        "name": "s", "agents": {"m": {"model": "openai/x", "api_base": "http://127.0.0.1:1/v1",
                                      "deadline": 90, "max_answer_chars": 5000}},
        "experiments": [{"game": "prisoners", "agents": ["m"]}],
    })
    agent = build_agent("m", sweep.spec.agents["m"])
    assert (agent.deadline, agent.max_answer_chars) == (90, 5000)


def test_the_limits_change_no_content_key() -> None:
    """Raising a limit must not ask anything again: like ``timeout``, the limits are not
    part of the sweep's hash (nor of a decision's content key)."""

    def sweep(**limits: Any) -> Any:
        return build_sweep({
            "name": "s", "agents": {"m": {"model": "openai/x", **limits,
                                          "api_base": "http://127.0.0.1:1/v1"}},
            "experiments": [{"game": "prisoners", "agents": ["m"]}],
        })

    assert sweep().hash == sweep(deadline=30, max_answer_chars=10, timeout=3).hash


@pytest.mark.parametrize(("field", "value"), [("deadline", 0), ("max_answer_chars", -5),
                                            ("max_answer_chars", "lots")])
def test_bad_limits_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(SpecError) as info:
        build_sweep({
            "name": "s", "agents": {"m": {"model": "openai/x", field: value,
                                          "api_base": "http://127.0.0.1:1/v1"}},
            "experiments": [{"game": "prisoners", "agents": ["m"]}],
        })
    assert str(info.value).startswith(f"agents.m.{field}: ")


# ------------------------------------------------------------- 2. a complete answer is kept
@pytest.mark.parametrize("transport", ["openai", "litellm"])
async def test_a_stream_that_stalls_after_its_finish_reason_keeps_its_answer(
    loopback: LoopbackServer, transport: str
) -> None:
    """The answer and its ``finish_reason`` came, then neither usage nor ``[DONE]``: the
    answer is taken after a short grace (its token counts unknown), not thrown away and
    asked again."""
    loopback.configure(answer=ANSWER, fault_script=["stall"], hang=5.0)
    reply = await ask(agent_for(loopback, timeout=0.8, transport=transport))
    assert reply.text == ANSWER
    assert reply.transport_retries == 0 and len(loopback.chat_requests) == 1
    assert reply.input_tokens is None and reply.output_tokens is None


async def test_a_stall_before_the_finish_reason_is_still_a_retry(loopback: LoopbackServer) -> None:
    loopback.configure(answer=ANSWER, fault_script=["timeout"], hang=5.0)
    reply = await ask(agent_for(loopback, timeout=0.5))
    assert reply.text == ANSWER and reply.transport_retries == 1


# ------------------------------------------------------------- 3. sizes
def test_the_decoder_appends_a_long_event_in_place() -> None:
    """Linear in the bytes fed: the unfinished event grows in one buffer (the old decoder
    joined its whole buffer to every piece: quadratic, a 20 MB line took a minute)."""
    decoder = SSEDecoder()
    decoder.feed(b'data: {"choices": [{"delta": {"content": "')
    buffer = decoder._buffer  # noqa: SLF001 - the buffer's identity is the property tested
    for _ in range(200):
        assert decoder.feed(b"x" * 4096) == []
        assert decoder._buffer is buffer  # noqa: SLF001
    events = decoder.feed(b'"}}]}\n\ndata: [DONE]\n\n')
    assert len(events) == 2 and len(events[0]) > 200 * 4096 and events[1] == b"[DONE]"


def test_the_decoder_refuses_an_event_past_its_limit_as_soon_as_it_passes() -> None:
    decoder = SSEDecoder(limit=100_000)
    fed = 0
    with pytest.raises(EventTooLong):
        for _ in range(20 * 1024 * 1024 // 65536):  # a 20 MB line in 64 KiB pieces
            decoder.feed(b"data: " + b"x" * 65530 if fed == 0 else b"x" * 65536)
            fed += 65536
    assert fed <= 100_000 + 65536  # refused at the first piece past the limit
    assert decoder.feed(b"data: 1\n\n") == [b"1"]  # and nothing of it is kept


async def test_a_huge_line_is_refused_without_reading_it_all(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["huge_line"], huge_size=20 * 1024 * 1024)
    with pytest.raises(ProviderError) as info:
        await ask(agent_for(loopback, timeout=10.0, max_answer_chars=1000))
    message = str(info.value)
    assert "one server-sent event passed 71,536 bytes" in message and "max_answer_chars" in message
    assert info.value.retries == 0 and not info.value.retryable  # refused, not asked again
    assert len(loopback.chat_requests) == 1


async def test_an_answer_past_max_answer_chars_is_refused(loopback: LoopbackServer) -> None:
    loopback.configure(answer="x" * 5000, chunks=50)
    with pytest.raises(ProviderError) as info:
        await ask(agent_for(loopback, timeout=5.0, max_answer_chars=1000))
    assert "the answer passed 1,000 characters (the agent's max_answer_chars)" in str(info.value)
    assert len(str(info.value)) < 300  # nothing of the answer rides along
    assert failure_reason(f"ProviderError: {info.value}") == "answer too large"
    loopback.configure(answer="x" * 1000, chunks=50)  # exactly the limit is fine
    assert (await ask(agent_for(loopback, timeout=5.0, max_answer_chars=1000))).text == "x" * 1000


async def test_a_huge_json_answer_is_refused_while_it_is_read() -> None:
    """A server that ignores ``stream`` and sends one JSON body: the same bound applies
    to the body, which is not read past it."""
    content = b"x" * 300_000
    body = b'{"choices": [{"message": {"content": "' + content + b'"}, "finish_reason": "stop"}]}'

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        with pytest.raises(ProviderError) as info:
            await ask(LLMAgent("a", "openai/x", api_base=url, timeout=5.0, max_answer_chars=1000))
    finally:
        server.close()
    assert "the answer's body passed 71,536 bytes" in str(info.value)
    assert info.value.retries == 0


# ------------------------------------------------------------- 4. usage numbers
@pytest.mark.parametrize(("reported", "kept"), [
    ({"prompt_tokens": 10**30, "completion_tokens": 7}, (None, 7)),
    ({"prompt_tokens": -3, "completion_tokens": 2.5}, (None, None)),
    ({"prompt_tokens": 12.0, "completion_tokens": "9"}, (12, None)),
    ({"prompt_tokens": True, "completion_tokens": 10**9 + 1}, (None, None)),
])
async def test_usage_numbers_are_clamped_to_sane_counts(
    loopback: LoopbackServer, reported: dict[str, Any], kept: tuple[Any, Any]
) -> None:
    loopback.configure(answer=ANSWER, usage_override=reported)
    reply = await ask(agent_for(loopback, timeout=5.0))
    assert reply.text == ANSWER and (reply.input_tokens, reply.output_tokens) == kept


async def test_absurd_usage_keeps_every_answer_of_a_sweep(tmp_path: Path) -> None:
    """A ``prompt_tokens`` of 10^30 used to overflow the SQLite insert and lose the
    answers with it."""
    answer = 'I cooperate. {"A0": 100, "A1": 0}'
    with LoopbackServer(latency=0.01, chunks=2, answer=answer,
                        usage_override={"prompt_tokens": 10**30}) as server:
        sweep = build_sweep({
            "name": "usage", "seed": 1, "agents": {"m": {"model": "openai/loopback",
                                                        "api_base": server.url}},
            "experiments": [{"game": "prisoners", "agents": ["m"]}],
        })
        store = Store(tmp_path / "a.db")
        try:
            summary = await run_sweep(sweep, store)
        finally:
            store.close()
    assert summary.matches_failed == 0 and summary.matches_done == 1
    with sqlite3.connect(tmp_path / "a.db") as db:
        rows = db.execute("select input_tokens, output_tokens from decisions").fetchall()
    assert len(rows) == 2 and all(r[0] is None and r[1] is not None for r in rows)


# ------------------------------------------------------------- 5. proxies
KEY = "sk-proxy-test-KEY-4411"


async def relay_proxy(upstream_port: int, heads: list[bytes]) -> AsyncIterator[int]:
    """A plain-http forward proxy on 127.0.0.1 that records each request head it relays
    (request line and headers, as the client sent them to the proxy)."""
    relays: list[asyncio.Task[Any]] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relays.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            writer.close()
            return
        heads.append(head)
        line, rest = head.split(b"\r\n", 1)
        method, target, version = line.split(b" ")
        path = b"/" + target.split(b"://", 1)[1].split(b"/", 1)[1]  # absolute form -> path
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        up_writer.write(b" ".join([method, path, version]) + b"\r\n" + rest)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer),
                             return_exceptions=True)

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield proxy.sockets[0].getsockname()[1]
    finally:
        proxy.close()
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)


def header_values(head: bytes, name: bytes) -> list[bytes]:
    return [line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")[1:]
            if line.lower().startswith(name.lower() + b":")]


@pytest.mark.parametrize("transport", ["openai", "litellm"])
@pytest.mark.parametrize("credentials", ["", "carol:pw-proxy-77@"])
async def test_a_proxy_gets_its_own_credentials_never_the_api_key(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, transport: str, credentials: str
) -> None:
    """Through a plain-http proxy from the environment, ``Proxy-Authorization`` is the
    proxy's own Basic credentials (from its URL), or absent: never ``Bearer <API key>``.
    The key goes to the server, in ``Authorization``, as it must."""
    loopback.configure(answer=ANSWER, api_key=KEY)
    heads: list[bytes] = []
    async for port in relay_proxy(loopback.port, heads):
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, f"http://{credentials}127.0.0.1:{port}")
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                     "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        agent = agent_for(loopback, timeout=10.0, api_key=KEY, transport=transport)
        reply = await ask(agent)
    assert reply.text == ANSWER
    chat = [h for h in heads if b"/chat/completions" in h.split(b"\r\n", 1)[0]]
    assert chat, "the request did not go through the proxy"
    expected = [b"Basic " + base64.b64encode(b"carol:pw-proxy-77")] if credentials else []
    for head in chat:
        assert header_values(head, b"proxy-authorization") == expected
        assert KEY.encode() not in b" ".join(header_values(head, b"proxy-authorization"))
        assert header_values(head, b"authorization") == [f"Bearer {KEY}".encode()]


@pytest.mark.parametrize("transport", ["openai", "litellm"])
@pytest.mark.parametrize("credentials", ["", "carol:pw-proxy-77@"])
async def test_an_https_tunnel_asks_the_proxy_with_its_own_credentials(
    monkeypatch: pytest.MonkeyPatch, credentials: str, transport: str
) -> None:
    """For an https server the proxy sees only the ``CONNECT``: it must carry the proxy's
    credentials, not the key (aiohttp put the session's ``Authorization: Bearer`` there).
    This proxy refuses the tunnel after recording what it was asked."""
    heads: list[bytes] = []

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    proxy = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    for name in ("HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, f"http://{credentials}127.0.0.1:{port}")
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    agent = LLMAgent("a", "openai/x", api_base="https://api.example.invalid/v1", api_key=KEY,
                     timeout=10.0, max_retries=0, transport=transport)
    try:
        with pytest.raises(ProviderError):
            await ask(agent)
    finally:
        proxy.close()
    assert heads and heads[0].startswith(b"CONNECT api.example.invalid:443 ")
    expected = [b"Basic " + base64.b64encode(b"carol:pw-proxy-77")] if credentials else []
    assert header_values(heads[0], b"proxy-authorization") == expected
    assert KEY.encode() not in heads[0]


# ------------------------------------------------------------- 6. secrets, encoded and cut
SECRET = "sk-live-SCRUB-9052+/pad word"


def test_url_encoded_secrets_are_scrubbed_in_every_form() -> None:
    redact.register_secret(SECRET)
    percent = "".join(f"%{b:02x}" for b in SECRET.encode())  # every byte, lower-case hex
    forms = [
        SECRET,
        percent,
        percent.upper(),
        "sk%2Dlive%2DSCRUB-9052%2B%2Fpad%20word",  # what quote() makes of it, partly
        "sk-live-SCRUB-9052%2B%2Fpad+word",  # quote_plus
    ]
    for form in forms:
        cleaned = redact.scrub(f"error: bad key {form}; retry")
        assert cleaned == "error: bad key ***; retry", (form, cleaned)
    assert redact.scrub("100% sure, 2+2 = 4") == "100% sure, 2+2 = 4"


def test_the_live_scrubber_never_hands_on_a_secret_cut_in_two() -> None:
    redact.register_secret(SECRET)
    text = f"before {SECRET} middle {SECRET.replace(' ', '+')} after"
    for cut in range(1, len(text)):
        for step in (1, 3, 7):  # pieces of several sizes, cut everywhere
            scrubber = redact.LiveScrubber()
            pieces = [text[:cut]] + [text[i:i + step] for i in range(cut, len(text), step)]
            shown = [scrubber.feed(p) for p in pieces] + [scrubber.flush()]
            joined = "".join(shown)
            assert joined == "before *** middle *** after"
            assert not any("SCRUB" in s for s in shown)


def echo_sweep(server: LoopbackServer) -> Any:
    return build_sweep({
        "name": "echo", "seed": 1, "max_attempts": 1,
        "agents": {"m": {"model": "openai/loopback", "api_base": server.url, "api_key": KEY}},
        "experiments": [{"game": "prisoners", "agents": ["m"]}],
    })


@pytest.mark.parametrize("encoding", ["plain", "percent", "plus"])
async def test_a_key_echoed_across_two_deltas_never_reaches_a_listener(
    tmp_path: Path, encoding: str
) -> None:
    """The server repeats the key in its answer, cut between two streamed deltas (and
    URL-encoded): the live events carry none of it, nor does the stored answer."""
    answer = 'I cooperate. {"A0": 100, "A1": 0}'
    seen: list[str] = []

    def listen(event: Any) -> None:
        if isinstance(event, TextDelta | ReasoningDelta):
            seen.append(event.text)

    bus = EventBus()
    bus.subscribe(listen)
    with LoopbackServer(latency=0.01, chunks=2, answer=answer,
                        echo_key_in_answer=encoding) as server:
        store = Store(tmp_path / "a.db")
        try:
            summary = await run_sweep(echo_sweep(server), store, bus=bus)
        finally:
            store.close()
    assert summary.matches_done == 1 and seen
    shown = "".join(seen)
    assert shown.count("***") == 2  # both seats' answers, the key masked in each
    fragments = {KEY[i:i + 6] for i in range(len(KEY) - 5)}
    with sqlite3.connect(tmp_path / "a.db") as db:
        stored = [r[0] for r in db.execute("select response from decisions")]
    for piece in [shown, *seen, *stored]:
        assert not any(f in unquote_plus(piece) for f in fragments), piece
    assert all(r.count("***") == 1 for r in stored) and len(stored) == 2


# ------------------------------------------------------------- 7. redirects, HTML pages
async def test_a_redirect_is_refused_and_named_never_followed(loopback: LoopbackServer) -> None:
    """aiohttp follows a 307 with the POST body and the session's key to wherever it
    points; the agent refuses it, naming the status and the target (without its query,
    which may carry a token), and asks nobody else."""
    with LoopbackServer(latency=0.01) as elsewhere:
        target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions"
        loopback.configure(fault_script=["redirect"], redirect_to=f"{target}?token=sk-redir-31")
        with pytest.raises(ProviderError) as info:
            await ask(agent_for(loopback, timeout=5.0, api_key=KEY))
        assert elsewhere.requests == []
    message = str(info.value)
    assert f"the server redirected the request (HTTP 307 to {target})" in message
    assert "sk-redir-31" not in message and "token" not in message
    assert info.value.retries == 0 and len(loopback.chat_requests) == 1
    assert failure_reason(f"ProviderError: {message}") == "redirect refused"


async def test_an_html_page_is_named_not_taken_for_a_cut_stream(loopback: LoopbackServer) -> None:
    loopback.configure(fault_script=["html"])
    with pytest.raises(ProviderError) as info:
        await ask(agent_for(loopback, timeout=5.0))
    assert ("the server answered with an HTML page (Content-Type: text/html; charset=utf-8)"
            in str(info.value))
    assert "finish reason" not in str(info.value) and info.value.retries == 0
    assert failure_reason(f"ProviderError: {info.value}") == "HTML page"


@pytest.mark.parametrize("model", ["openai/loopback", "groq/loopback"])
async def test_the_litellm_path_still_answers_without_a_redirect(
    loopback: LoopbackServer, model: str
) -> None:
    """The redirect-free clients change nothing else: an ordinary answer streams."""
    agent = LLMAgent("a", model, api_base=loopback.url, timeout=5.0, api_key=KEY,
                     transport="litellm")
    reply = await ask(agent)
    assert reply.text == "Hello from the loopback server." and reply.transport_retries == 0


@pytest.mark.parametrize("model", ["openai/loopback", "groq/loopback"])
async def test_the_litellm_path_refuses_a_redirect_and_sends_nothing_on(
    loopback: LoopbackServer, model: str
) -> None:
    """litellm's own httpx clients follow a 307 with the prompt in the POST body. The
    agent makes them refuse it: through ``litellm.aclient_session`` for the providers
    litellm sends through the OpenAI SDK (``openai/``), through litellm's cached HTTP
    handler for the others (``groq/``). Should a litellm release change either, the
    second server gets the request and this test fails."""
    with LoopbackServer(latency=0.01) as elsewhere:
        target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions"
        loopback.configure(fault_script=["redirect"], redirect_to=f"{target}?token=sk-redir-31")
        agent = LLMAgent("a", model, api_base=loopback.url, backoff_base=0.001, timeout=5.0,
                         api_key=KEY, transport="litellm")
        with pytest.raises(ProviderError) as info:
            await ask(agent)
        assert elsewhere.requests == [], f"litellm followed the redirect for {model}: see llm._refuse_*"
    message = str(info.value)
    assert f"the server redirected the request (HTTP 307 to {target})" in message
    assert "sk-redir-31" not in message and "token" not in message
    assert info.value.retries == 0 and len(loopback.chat_requests) == 1
    assert failure_reason(f"ProviderError: {message}") == "redirect refused"


def test_a_litellm_redirect_is_recorded_in_the_decision(tmp_path: Path) -> None:
    """Through a sweep (a ``groq/`` agent with an ``api_base`` goes through litellm): the
    failed match records the named refusal, and the server the redirect points to is
    never asked."""
    with LoopbackServer(latency=0.01) as server, LoopbackServer(latency=0.01) as elsewhere:
        target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions"
        server.configure(fault_script=["redirect"] * 4, redirect_to=target)
        sweep = build_sweep({
            "name": "moved", "seed": 1, "max_attempts": 1,
            "agents": {"m": {"model": "groq/loopback", "api_base": server.url, "api_key": KEY}},
            "experiments": [{"game": "prisoners", "agents": ["m"]}],
        })
        store = Store(tmp_path / "a.db")
        try:
            summary = asyncio.run(run_sweep(sweep, store))
            groups = store.failure_groups(summary.run_id)
        finally:
            store.close()
        assert elsewhere.requests == []
    assert [g["reason"] for g in groups] == ["redirect refused"]
    assert f"the server redirected the request (HTTP 307 to {target})" in groups[0]["example"]


def test_each_event_loop_gets_its_own_redirect_free_litellm_client() -> None:
    """httpx connections belong to the loop that opened them: a second ``asyncio.run``
    (a second sweep in one process) must not reuse the first loop's client."""
    litellm = llm._import_litellm()

    async def client_twice() -> tuple[Any, Any]:
        return llm._refuse_litellm_redirects(litellm), llm._refuse_litellm_redirects(litellm)

    first, again = asyncio.run(client_twice())
    second, _ = asyncio.run(client_twice())
    assert first is again and second is not first
    assert litellm.aclient_session is second and second.follow_redirects is False
