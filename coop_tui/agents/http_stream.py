"""The ``openai`` transport: one streamed chat completion posted with aiohttp.

Requests go out on the endpoint pool's session (:mod:`coop_tui.agents.transport`: kept-alive
connections, TLS, proxies from the environment), and the server-sent events are decoded
here (:mod:`coop_tui.agents.sse`) without building an object per chunk. aiohttp is imported
only when the first request is sent (or by :func:`import_aiohttp` ahead of it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from coop_tui.agents.endpoints import EndpointPool
from coop_tui.agents.failures import HTTPStatusError, Refused, redirect_refused
from coop_tui.agents.request import ChatRequest, RequestBuilder
from coop_tui.agents.sse import EventTooLong, SSEDecoder
from coop_tui.agents.stream_state import (
    FINISH_GRACE,
    StreamState,
    event_limit,
    sse_event,
    whole_answer,
)

MAX_ERROR_BODY = 1024 * 1024
"""Bytes of an error answer's body kept for the message."""


def import_aiohttp() -> None:
    import aiohttp  # noqa: F401


class HttpStream:
    """POSTs a request on the endpoint pool's aiohttp session and decodes the SSE stream.

    Two clocks bound an attempt. ``timeout`` bounds silence: it is pushed back whenever
    a data event arrives (a long generation is fine, a server that stops talking is
    not; SSE comments and keep-alive bytes are not data, so a server that only says
    ``: keepalive`` times out). ``deadline`` bounds the whole request, however steadily
    the server talks. Once the ``finish_reason`` has come the answer is complete: the
    usage chunk and ``[DONE]`` get a short grace (:data:`FINISH_GRACE`), and a server
    that stalls or hangs up after it still gives its answer. A URL with
    ``user:password@`` is sent with HTTP Basic auth (aiohttp reads it from the URL) and
    then carries no bearer key. Redirects are not followed (a POST body and the key
    must not go to wherever a server points), and the size of what is read is bounded
    by ``max_answer_chars``.
    """

    def __init__(
        self,
        requests: RequestBuilder,
        endpoints: EndpointPool | None,
        *,
        timeout: float,
        deadline: float,
        max_answer_chars: int,
    ) -> None:
        self.requests = requests
        self.endpoints = endpoints
        self.timeout = timeout
        self.deadline = deadline
        self.max_answer_chars = max_answer_chars

    async def stream(self, request: ChatRequest, sink: Any, state: StreamState) -> None:
        """Send ``request`` and feed what streams back into ``state`` (and ``sink``)."""
        import aiohttp

        assert self.endpoints is not None  # the openai transport always has an api_base
        session = self.endpoints.http_session(self.requests.session_headers)
        target, proxy, proxy_headers = self.requests.chat_url(request.url or "")
        headers, proxy_headers = self.requests.request_headers(target, proxy_headers)
        loop = asyncio.get_running_loop()
        limit = self.timeout
        end = loop.time() + self.deadline
        try:
            async with asyncio.timeout_at(min(loop.time() + limit, end)) as deadline:
                async with session.post(target, data=request.body, headers=headers, proxy=proxy,
                                        proxy_headers=proxy_headers,
                                        allow_redirects=False) as response:
                    if not await self._events_follow(response, sink, state):
                        return
                    # Server-sent events, read here rather than in a method of their own
                    # (one coroutine level less to resume per chunk). After [DONE] the
                    # body is read on only to reuse the connection (a server that then
                    # drops it, as llama.cpp's does when it interrupts a stream, has still
                    # ended the stream).
                    push_after = limit / 4  # push the silence deadline back at most this often
                    pushed = loop.time()
                    graced = False
                    decoder = SSEDecoder(event_limit(self.max_answer_chars))
                    content = response.content
                    try:
                        while piece := await content.readany():  # b"" at the end of the body
                            if state.done:
                                continue  # read to the end so the connection can be reused
                            payloads = decoder.feed(piece)
                            if not payloads:
                                continue  # comments, keep-alive bytes, part of an event
                            for payload in payloads:
                                if sse_event(payload, sink, state):
                                    break
                            now = loop.time()
                            if state.done:
                                if not content.at_eof():
                                    # a server that keeps the body open after [DONE]
                                    # gets one more second
                                    deadline.reschedule(now + 1.0)
                            elif state.finish_reason is not None:
                                if not graced:  # usage and [DONE] get a short wait
                                    graced = True
                                    grace = min(FINISH_GRACE, limit / 4)
                                    deadline.reschedule(min(deadline.when() or end, now + grace))
                            elif now - pushed > push_after:
                                deadline.reschedule(min(now + limit, end))
                                pushed = now
                    except (aiohttp.ClientError, ConnectionError):
                        if not state.complete:
                            raise
                        return
                    except EventTooLong as exc:
                        raise self._event_refused(exc) from None
                    if not state.done:
                        for payload in decoder.close():
                            sse_event(payload, sink, state)
        except TimeoutError:
            if state.complete:
                return  # the answer is whole; its usage or [DONE] did not come in time
            raise self._timed_out((deadline.when() or 0.0) >= end) from None

    async def _events_follow(self, response: Any, sink: Any, state: StreamState) -> bool:
        """Check the answer's head; True when server-sent events follow. An error status
        raises with its (capped) body; a server that sent the whole answer as one JSON body
        has it read into ``state`` here (False)."""
        if response.status >= 400:
            raise HTTPStatusError(
                response.status, response.headers, await _read_capped(response)
            )
        check_head(response)
        kind = response.headers.get("Content-Type", "")
        if "json" in kind and "event-stream" not in kind:
            text = await _read_whole(response, event_limit(self.max_answer_chars))
            whole_answer(text, sink, state)
            return False
        return True

    def _event_refused(self, exc: EventTooLong) -> Refused:
        return Refused(
            f"one server-sent event passed {exc.limit:,} bytes (6 bytes per "
            f"character of the agent's max_answer_chars = "
            f"{self.max_answer_chars:,}, and 64 KiB); refused without "
            "reading the rest"
        )

    def _timed_out(self, at_deadline: bool) -> TimeoutError:
        """The timeout's message: the agent's overall ``deadline``, or its silence limit."""
        if at_deadline:
            return TimeoutError(
                f"no complete answer within {self.deadline:g} s (the agent's deadline)"
            )
        return TimeoutError(
            f"the server sent no data for {self.timeout:g} s (the agent's timeout)"
        )


def check_head(response: Any) -> None:
    """Refuse a 2xx or 3xx answer that is no chat answer, before reading its body: a
    redirect, or an HTML page (a sign-in portal, a web server's start page: a wrong
    ``api_base``, not a cut stream)."""
    status = response.status
    if 300 <= status < 400:
        raise redirect_refused(status, response.headers.get("Location", ""))
    kind = response.headers.get("Content-Type", "")
    if "html" in kind.lower():
        raise Refused(
            f"the server answered with an HTML page (Content-Type: {kind[:80]}), not a chat "
            "answer: check that api_base is the API's address (it often ends in /v1)"
        )


async def _read_capped(response: Any, limit: int = MAX_ERROR_BODY) -> str:
    """The body as text, at most ``limit`` bytes of it (an error page can be huge: the
    rest is not read)."""
    out = bytearray()
    async for piece in response.content.iter_any():
        out += piece[: limit - len(out)]
        if len(out) >= limit:
            break
    return out.decode("utf-8", "replace")


async def _read_whole(response: Any, limit: int) -> str:
    """A whole (non-streamed) JSON answer as text; refused past ``limit`` bytes."""
    out = bytearray()
    async for piece in response.content.iter_any():
        out += piece
        if len(out) > limit:
            raise Refused(
                f"the answer's body passed {limit:,} bytes (6 bytes per character of the "
                "agent's max_answer_chars, and 64 KiB); refused without reading the rest"
            )
    return out.decode("utf-8", "replace")
