"""The LLM agent: one streamed chat completion per decision, with transport retries.

Two transports, chosen per agent:

* ``openai``: OpenAI-compatible servers given by ``api_base`` (``openai/…``,
  ``hosted_vllm/…`` or a bare model name). Requests go through aiohttp
  (:mod:`coop_tui.agents.transport`: one session per endpoint pool and event loop, kept-alive
  connections, TLS, proxies from the environment); the SSE lines are decoded
  (:mod:`coop_tui.agents.http_stream`) without building an object per chunk. At sweep
  concurrency it spends less client CPU per answer than the ``openai`` SDK, whose httpx pool
  checks every idle connection on each request (``benchmarks/bench_clients.py``).
* ``litellm``: ``litellm.acompletion`` for every other provider string
  (:mod:`coop_tui.agents.litellm_stream`).

``api_base`` may list several servers for one model: :mod:`coop_tui.agents.endpoints`
spreads requests over them (per-endpoint ``max_concurrency``, least busy first), moves
them off a server that dies, lowers the concurrency of a server that cuts concurrent
streams, and fails requests at once while every server of the agent is down (the match
fails naming the cause; ``--resume`` asks again). Local providers that litellm sends to a
default server (Ollama) get that server as their endpoint. With ``constrained`` set,
answers are restricted by the server's grammar (llama.cpp ``grammar``) or JSON-schema
support (``response_format``).

Both client libraries are imported lazily (litellm costs seconds to import, and must not
slow ``--help``). Retries (:mod:`coop_tui.agents.retry`) cover rate limits, 5xx, timeouts,
connection errors, streams that end without a finish reason, and malformed chunks; each
HTTP attempt holds the sweep's limiter, the backoff sleep does not. What a server cannot
fix by being asked again is refused at once: an answer past the agent's
``max_answer_chars``, a redirect (never followed: the body and key would go wherever it
points), an HTML page. Every request has a silence limit (``timeout``, data only) and an
overall ``deadline``. Failures are named by their cause (connection refused, DNS, TLS,
timeout, HTTP status ...). The API key lives in a wrapper whose ``repr`` hides it, and
every error message is scrubbed of it before it leaves this module.

The agent composes the parts, each in its own module beside this one: what is sent
(:mod:`~coop_tui.agents.request`), the two transports, what an attempt has streamed
(:mod:`~coop_tui.agents.stream_state`), the retry rules and the prices
(:mod:`~coop_tui.agents.pricing`). Their public names are importable from here as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from coop_tui.agents.batch import FIRST_POLL_S, import_batch_sdk
from coop_tui.agents.endpoints import EndpointPool, EndpointsDown, host_of, public_url
from coop_tui.agents.failures import HTTPStatusError, ProviderError, Refused, StreamBroken
from coop_tui.agents.http_stream import MAX_ERROR_BODY, HttpStream, import_aiohttp
from coop_tui.agents.litellm_stream import LiteLLMStream, litellm_async
from coop_tui.agents.litellm_stream import import_litellm as _import_litellm
from coop_tui.agents.litellm_stream import refuse_litellm_redirects as _refuse_litellm_redirects
from coop_tui.agents.pricing import (
    BATCH_PRICE_FACTOR,
    PRICE_MAP_FILE,
    cost_for,
    price_map,
    reply_cost,
)
from coop_tui.agents.request import (
    OPENAI_COMPATIBLE_PREFIXES,
    ChatRequest,
    Constrained,
    RequestBuilder,
    Secret,
    Transport,
    choose_transport,
    split_provider,
)
from coop_tui.agents.retry import (
    MAX_FREE_CUTS,
    MAX_RETRY_AFTER,
    RETRYABLE_STATUS,
    Failure,
    Retries,
    RetryPolicy,
    classify,
    endpoint_outcome,
)
from coop_tui.agents.stream_state import FINISH_GRACE, MAX_USAGE_TOKENS, StreamState, event_limit
from coop_tui.agents.transport import implicit_base
from coop_tui.decisions import DEFAULT_MAX_ANSWER_CHARS, AgentReply, DecisionRequest
from coop_tui.redact import scrub
from coop_tui.schemas import FINAL_ANSWER_PROMPT

__all__ = [
    "BATCH_PRICE_FACTOR",
    "DEADLINE_FACTOR",
    "DEFAULT_ENDPOINT_LIMIT",
    "FINISH_GRACE",
    "MAX_ERROR_BODY",
    "MAX_FREE_CUTS",
    "MAX_RETRY_AFTER",
    "MAX_USAGE_TOKENS",
    "OPENAI_COMPATIBLE_PREFIXES",
    "PRICE_MAP_FILE",
    "RETRYABLE_STATUS",
    "Constrained",
    "HTTPStatusError",
    "LLMAgent",
    "ProviderError",
    "Transport",
    "_import_litellm",
    "_refuse_litellm_redirects",
    "choose_transport",
    "classify",
    "cost_for",
    "event_limit",
    "price_map",
    "split_provider",
]

DEFAULT_ENDPOINT_LIMIT = 1024
"""Requests at once per endpoint when neither the agent nor the sweep says (the sweep cap)."""
DEADLINE_FACTOR = 10
"""An agent without its own ``deadline`` gives one request this many times its ``timeout``."""


@dataclass
class _Call:
    """One streamed answer after its transport retries (one step of a reply)."""

    state: StreamState
    latency: float
    queued: float
    retries: int


class LLMAgent:
    """A seat answered by a hosted or self-hosted chat model."""

    kind = "llm"

    def __init__(
        self,
        name: str,
        model: str,
        temperature: float | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        style: str = "cot",
        api_base: str | Sequence[str] | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        limiter: Any = None,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_retries: int = 6,
        transport: Transport = "auto",
        max_connections: int | None = None,
        max_concurrency: int | None = None,
        constrained: Constrained | None = None,
        deadline: float | None = None,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
        batch: bool = False,
        batch_poll: float = FIRST_POLL_S,
    ) -> None:
        _check_settings(name, model, constrained)
        urls = [api_base] if isinstance(api_base, str) else list(api_base or [])
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.style = style
        self._key = Secret(api_key)
        self.timeout = timeout
        self.deadline = deadline or DEADLINE_FACTOR * timeout
        """Seconds one request may take in all, however steadily the server talks."""
        self.max_answer_chars = max_answer_chars
        self.limiter = limiter
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retries = max_retries
        self.retry = RetryPolicy(max_retries, backoff_base, backoff_cap)
        self.constrained = constrained
        # Per endpoint: the agent's max_concurrency, else what the sweep allows at once
        # (the connection pool keeps that many connections alive, no more).
        per_endpoint = max_concurrency or max_connections or DEFAULT_ENDPOINT_LIMIT
        self.max_connections = per_endpoint
        self.transport: Literal["openai", "litellm"] = (
            choose_transport(model, urls[0] if urls else None) if transport == "auto" else transport
        )
        if not urls and self.transport == "litellm" and implicit_base(model):
            # litellm sends ollama/... to a local server by default: name it, so that the
            # endpoint pool can see it die and the preflight can probe it
            urls = [implicit_base(model)]  # type: ignore[list-item]
        self.api_base: str | None = urls[0] if urls else None
        self.api_bases = urls
        self.spec: dict[str, Any] = {"model": model}
        self.on_notice: Any = None
        """Called with an :class:`~coop_tui.agents.endpoints.EndpointNotice` (the sweep
        sets it to reach progress and summary)."""
        self.endpoints: EndpointPool | None = (
            EndpointPool(urls, per_endpoint, agent=name, notify=self._notify) if urls else None
        )
        self.requests = RequestBuilder(
            model, temperature=temperature, max_tokens=max_tokens,
            reasoning_effort=reasoning_effort, constrained=constrained, key=self._key,
            api_bases=urls,
        )
        """Builds what is sent: bodies, parameters, constraints, URL and headers."""
        self._stream = self._transport_stream()
        self.batch = batch
        """Decisions go through the provider's Batch API (at half price): the sweep gives
        the agent a :class:`~coop_tui.agents.batch.BatchHub` as ``batcher``."""
        self.batch_poll = batch_poll
        """Seconds before a batch is first polled (the interval then doubles)."""
        self.batcher: Any = None

    def _transport_stream(self) -> HttpStream | LiteLLMStream:
        """The agent's transport, sending what :attr:`requests` builds."""
        if self.transport == "openai":
            return HttpStream(self.requests, self.endpoints, timeout=self.timeout,
                              deadline=self.deadline, max_answer_chars=self.max_answer_chars)
        return LiteLLMStream(self.requests, model=self.model, timeout=self.timeout,
                             deadline=self.deadline)

    def __repr__(self) -> str:
        bases = [public_url(u) for u in self.api_bases]
        return (
            f"LLMAgent(name={self.name!r}, model={self.model!r}, "
            f"api_base={bases[0] if len(bases) == 1 else bases or None!r}, "
            f"transport={self.transport!r}, api_key={self._key!r})"
        )

    def _notify(self, notice: Any) -> None:
        if callable(self.on_notice):
            self.on_notice(notice)

    def notices(self) -> list[str]:
        """What the endpoint pool adapted or noticed during the run, in order."""
        return list(self.endpoints.notices) if self.endpoints is not None else []

    # -- public --------------------------------------------------------------------------

    async def reply(self, request: DecisionRequest, messages: list[dict], sink: Any) -> AgentReply:
        """Stream one answer; retry transport faults; return only the last attempt's text.

        With ``constrained`` set and an answer kind that has a schema, style ``cot`` asks
        twice, like the embedded model: a free answer (the reasoning), then the final
        answer under the server's grammar or JSON-schema constraint; style ``direct`` asks
        only the constrained question.

        ``latency_ms`` is the provider's time: from sending each HTTP attempt to the end of
        its stream, summed over attempts (backoff pauses excluded); ``queue_ms`` is the
        time spent waiting for a concurrency slot (endpoint and sweep limits).
        """
        # The litellm transport needs litellm before the request; its first (slow) import
        # runs in a thread and that wait is not part of the latency.
        if self.transport == "litellm" and not self.batch:
            await litellm_async()
        constraint = self.requests.constraint(request) if self.constrained else None
        answer: str | None = None
        calls: list[_Call] = (
            [await self._call(messages, sink, {})]
            if constraint is None or self.style in ("cot", "plain") else []
        )
        if constraint is not None:
            params, budget = constraint
            follow = list(messages)
            if calls:
                text = "".join(calls[0].state.text).strip()
                follow = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": FINAL_ANSWER_PROMPT},
                ]
                if text:
                    sink.text("\n\n")
            # the agent's max_tokens bounds the reasoning; the answer gets what its schema needs
            params = {**params, "max_tokens": budget}
            try:
                final = await self._call(follow, sink, params)
            except ProviderError as exc:
                exc.retries += sum(c.retries for c in calls)  # the first step's count too
                raise
            calls.append(final)
            answer = "".join(final.state.text).strip()
        return self._reply_of(calls, answer)

    def _reply_of(self, calls: list[_Call], answer: str | None) -> AgentReply:
        """The steps of one reply as one answer: the first step's text (unless the only
        step was the constrained one), all reasoning, summed tokens, cost and times."""
        first, last = calls[0].state, calls[-1].state
        tokens_in = _sum_known(c.state.input_tokens for c in calls)
        tokens_out = _sum_known(c.state.output_tokens for c in calls)
        text = "".join(first.text) if answer is None or len(calls) > 1 else ""
        return AgentReply(
            text=text,
            reasoning="".join(first.reasoning) + "".join(
                "".join(c.state.reasoning) for c in calls[1:]
            ),
            answer=answer,
            constrained=answer is not None,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=reply_cost(self.model, tokens_in, tokens_out,
                                batched=self.batcher is not None),
            latency_ms=sum(c.latency for c in calls) * 1000.0,
            queue_ms=sum(c.queued for c in calls) * 1000.0,
            transport_retries=sum(c.retries for c in calls),
            model=last.model or self.model,
        )

    async def aclose(self) -> None:
        """Close the HTTP session and its kept-alive connections (call it on the loop that
        used them; a later request opens a new session)."""
        if self.endpoints is not None:
            await self.endpoints.aclose()

    async def prepare(self) -> None:
        """Import the client library off the event loop, before the first request needs it.

        aiohttp takes a tenth of a second to import and litellm several; imported inside
        the first reply they would stall every stream already running.
        """
        if self.batch:  # the Batch API's SDK instead of the streaming transport
            await asyncio.to_thread(import_batch_sdk, self.model)
        elif self.transport == "openai":
            await asyncio.to_thread(import_aiohttp)
        else:
            await litellm_async()

    # -- one step with its retries ---------------------------------------------------------

    async def _call(self, messages: list[dict], sink: Any, extra: dict[str, Any]) -> _Call:
        """One step of a reply: attempts on the agent's transport until one answers whole
        or the retry rules give up (:class:`ProviderError`)."""
        if self.batcher is not None:
            return await self._batch_call(messages, sink, extra)
        tries = self.retry.start()
        busy = queued = 0.0
        body = self._body(messages, extra) if self.transport == "openai" else b""
        request = ChatRequest(messages, extra, body)
        while True:
            attempt = StreamState(self.max_answer_chars)
            asked = time.perf_counter()
            lease = await self._lease(tries)
            outcome = "error"
            sent = 0.0
            try:
                if self.limiter is not None:
                    async with self.limiter:
                        sent = time.perf_counter()
                        await self._attempt(lease, request, sink, attempt)
                else:
                    sent = time.perf_counter()
                    await self._attempt(lease, request, sink, attempt)
                if attempt.finish_reason is None:
                    raise StreamBroken(
                        "the stream ended without a finish reason (dropped connection, or the "
                        "server interrupted it for another request?)",
                        cut=True,
                    )
                outcome = "ok"
            except Exception as exc:  # noqa: BLE001 - classified below
                failure = classify(exc)
                outcome = endpoint_outcome(exc)
                if outcome == "down" and lease is not None:
                    lease.cause = failure.message  # the pool names it when it gives up
            finally:
                now = time.perf_counter()
                if sent:
                    busy += now - sent
                    queued += sent - asked
                else:
                    queued += now - asked
                if lease is not None:
                    self.endpoints.release(lease, outcome)  # type: ignore[union-attr]
            if outcome == "ok":
                return _Call(attempt, busy, queued, tries.count)
            await self._before_retry(failure, outcome, lease, tries, attempt, sink)

    def _body(self, messages: list[dict], extra: dict[str, Any]) -> bytes:
        """The step's JSON body for the aiohttp transport (tests replace it to play a server
        that ignores ``stream``)."""
        return self.requests.body(messages, extra)

    async def _lease(self, tries: Retries) -> Any:
        """A slot on one of the agent's servers (None without an endpoint pool)."""
        try:
            pool = self.endpoints
            return None if pool is None else pool.try_acquire() or await pool.acquire()
        except EndpointsDown as exc:  # every server failed again after its rest: fail fast
            raise ProviderError(
                f"{self._where()}: {scrub(self._key.scrub(str(exc)))}",
                retries=tries.count, retryable=True,
            ) from None

    def _attempt(
        self, lease: Any, request: ChatRequest, sink: Any, state: StreamState
    ) -> Awaitable[None]:
        """One HTTP attempt on the agent's transport (a plain function handing on the
        coroutine: every streamed chunk resumes each coroutine level in between)."""
        url = lease.endpoint.url if lease is not None else self.api_base
        return self._stream.stream(request.at(url), sink, state)

    async def _before_retry(
        self, failure: Failure, outcome: str, lease: Any, tries: Retries, attempt: StreamState,
        sink: Any,
    ) -> None:
        """After a failed attempt: raise when the retry rules give up, else tell the live
        pane (when the attempt had shown something) and wait the backoff."""
        # the live pane shows this too: no key, no user:pass@, no echoed auth header
        message = scrub(self._key.scrub(failure.message))
        concurrent_cut = outcome == "cut" and lease is not None and lease.concurrent
        verdict = tries.verdict(failure, concurrent_cut=concurrent_cut)
        if verdict == "refused":
            raise ProviderError(
                f"{self._where(lease)}: {message}", status=failure.status, retries=tries.count
            ) from None
        if verdict == "exhausted":
            raise ProviderError(
                f"{self._where(lease)}: gave up after {tries.count} retries; "
                f"last error: {message}",
                status=failure.status,
                retries=tries.count,
                retryable=True,
            ) from None
        failover = outcome == "down" and self.endpoints is not None and len(self.api_bases) > 1
        delay = tries.next_delay(failure, failover=failover, concurrent_cut=concurrent_cut)
        if attempt.emitted:
            restart = getattr(sink, "restart", None)
            if callable(restart):
                restart(f"{message}; retrying in {delay:.1f}s ({tries.count}/{self.max_retries})")
        if delay:
            await asyncio.sleep(delay)

    async def _batch_call(self, messages: list[dict], sink: Any, extra: dict[str, Any]) -> _Call:
        """One step through the Batch API: the answer as if it had streamed (no deltas);
        a request that failed in its batch, or whose batch expired or failed, is asked
        again in a new batch (up to ``max_retries``), naming the reason on the live pane.
        The latency is the time from sending the batch to its answer."""
        body = self.requests.batch_body(messages, extra)
        retries, waited, fresh = 0, 0.0, False
        while True:
            outcome, seconds = await self.batcher.ask(self, body, fresh=fresh)
            waited += seconds
            if outcome.error is None:
                try:
                    state = StreamState.from_batch(outcome, self.max_answer_chars)
                except Refused as exc:
                    raise ProviderError(f"{self._where()}: {exc}", retries=retries) from None
                return _Call(state, waited, 0.0, retries)
            message = scrub(self._key.scrub(outcome.error))
            if not outcome.retryable:  # refused, or its batch may still complete
                raise ProviderError(f"{self._where()}: {message}", retries=retries,
                                    retryable=True)
            if retries >= self.max_retries:
                raise ProviderError(
                    f"{self._where()}: gave up after {retries} retries through the Batch "
                    f"API; last error: {message}", retries=retries, retryable=True,
                )
            retries, fresh = retries + 1, True
            restart = getattr(sink, "restart", None)
            if callable(restart):
                restart(f"{message}; asking again in a new batch ({retries}/{self.max_retries})")

    def _where(self, lease: Any = None) -> str:
        url = lease.endpoint.url if lease is not None else self.api_base
        return f"{self.model} at {host_of(url)}" if url else self.model


def _check_settings(name: str, model: str, constrained: Any) -> None:
    """Refuse an agent without a model, or with an unknown kind of constraint."""
    if not model:
        raise ValueError(
            f"agent {name!r}: an LLM agent needs a model string like openai/gpt-4o"
        )
    if constrained not in (None, "grammar", "json_schema"):
        raise ValueError(
            f"agent {name!r}: constrained must be 'grammar' or 'json_schema', "
            f"not {constrained!r}"
        )


def _sum_known(values: Any) -> int | None:
    """The total, or None when any part is unknown (a partial sum would look exact)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total
