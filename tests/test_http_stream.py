"""The lean HTTP/1.1 client on the framings servers use besides chunked SSE.

A tiny asyncio server answers one canned response per connection, so each test fixes
the exact bytes on the wire: a ``Content-Length`` body, a body ended by closing the
connection, a body cut short, and an error status with a JSON body.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from coop_tui.agents.http_stream import ConnectionPool, HTTPStatusError, StreamClosed
from coop_tui.agents.llm import LLMAgent, ProviderError
from coop_tui.decisions import NullSink

SSE = (
    b'data: {"choices": [{"delta": {"content": "hi "}, "finish_reason": null}]}\n\n'
    b'data: {"choices": [{"delta": {"content": "there"}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


async def _canned(response: bytes) -> AsyncIterator[str]:
    seen: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        seen.append(head + await reader.readexactly(length))
        writer.write(response)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()


async def _lines(url: str) -> list[str]:
    pool = ConnectionPool(url)
    response = await pool.post("/chat/completions", b"{}", {"Content-Type": "application/json"})
    try:
        return [line async for line in response.lines()]
    finally:
        response.release()


async def test_content_length_body_is_read_as_lines() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(SSE) + SSE
    async for url in _canned(raw):
        lines = await _lines(url)
    assert lines[-2:] == ["data: [DONE]", ""]
    assert sum(line.startswith("data:") for line in lines) == 3


async def test_body_ended_by_closing_the_connection_is_complete() -> None:
    raw = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + SSE
    async for url in _canned(raw):
        agent = LLMAgent("a", "openai/x", api_base=url, timeout=5.0)
        reply = await agent.reply(None, [{"role": "user", "content": "q"}], NullSink())  # type: ignore[arg-type]
    assert reply.text == "hi there" and reply.transport_retries == 0


async def test_a_body_shorter_than_its_length_is_a_cut_stream() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + SSE[:40]
    async for url in _canned(raw):
        with pytest.raises(StreamClosed):
            await _lines(url)


async def test_error_status_carries_the_json_body_and_headers() -> None:
    body = b'{"error": {"message": "slow down"}}'
    raw = (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0.01\r\nContent-Length: %d\r\n\r\n"
           % len(body) + body)
    async for url in _canned(raw):
        pool = ConnectionPool(url)
        response = await pool.post("/chat/completions", b"{}", {})
        assert response.status == 429
        error = HTTPStatusError(response.status, response.headers, await response.read_text())
        response.release()
        assert error.body["error"]["message"] == "slow down"
        assert error.headers["retry-after"] == "0.01"
        # and the agent gives up after its retries with the provider's words
        agent = LLMAgent("a", "openai/x", api_base=url, timeout=5.0, max_retries=1)
        with pytest.raises(ProviderError, match="slow down"):
            await agent.reply(None, [{"role": "user", "content": "q"}], NullSink())  # type: ignore[arg-type]


async def test_nothing_listening_is_a_refused_connection() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    pool = ConnectionPool(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ConnectionRefusedError, match="cannot connect"):
        await pool.post("/chat/completions", b"{}", {})
