"""The LLM agent: one streamed chat completion per decision, with transport retries.

Two transports, chosen per agent:

* ``openai``: OpenAI-compatible servers given by ``api_base`` (``openai/…``,
  ``hosted_vllm/…`` or a bare model name). Requests go through aiohttp
  (:mod:`coop_tui.agents.transport`: one session per endpoint pool and event loop, kept-alive
  connections, TLS, proxies from the environment); the SSE lines are decoded here without
  building an object per chunk. At sweep concurrency it spends less client CPU per answer
  than the ``openai`` SDK, whose httpx pool checks every idle connection on each request
  (``benchmarks/bench_clients.py``).
* ``litellm``: ``litellm.acompletion`` for every other provider string.

``api_base`` may list several servers for one model: :mod:`coop_tui.agents.endpoints`
spreads requests over them (per-endpoint ``max_concurrency``, least busy first), moves
them off a server that dies, lowers the concurrency of a server that cuts concurrent
streams, and fails requests at once while every server of the agent is down (the match
fails naming the cause; ``--resume`` asks again). Local providers that litellm sends to a
default server (Ollama) get that server as their endpoint. With ``constrained`` set,
answers are restricted by the server's grammar (llama.cpp ``grammar``) or JSON-schema
support (``response_format``).

Both client libraries are imported lazily (litellm costs seconds to import, and must not
slow ``--help``). Retries cover rate limits, 5xx, timeouts, connection errors, streams
that end without a finish reason, and malformed chunks; each HTTP attempt holds the
sweep's limiter, the backoff sleep does not. What a server cannot fix by being asked again
is refused at once: an answer past the agent's ``max_answer_chars``, a redirect (never
followed: the body and key would go wherever it points), an HTML page. Every request has
a silence limit (``timeout``, data only) and an overall ``deadline``. Failures are named
by their cause (connection refused, DNS, TLS, timeout, HTTP status ...). The API key lives
in a wrapper whose ``repr`` hides it, and every error message is scrubbed of it before it
leaves this module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import functools
import json
import logging
import os
import random
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from coop_tui.agents.batch import FIRST_POLL_S, Outcome, import_batch_sdk
from coop_tui.agents.endpoints import EndpointPool, EndpointsDown, host_of, public_url
from coop_tui.agents.pricing import (  # noqa: F401 - their old import path
    PRICE_MAP_FILE,
    cost_for,
    price_map,
    reply_cost,
)
from coop_tui.agents.sse import DONE, EventTooLong, SSEDecoder
from coop_tui.agents.sse import loads as sse_loads
from coop_tui.agents.transport import (
    connect_failed,
    connection_cause,
    endpoint_url,
    env_proxy,
    implicit_base,
    proxy_headers_for,
)
from coop_tui.decisions import DEFAULT_MAX_ANSWER_CHARS, AgentReply, DecisionRequest
from coop_tui.redact import has_userinfo, scrub
from coop_tui.schemas import (
    FINAL_ANSWER_PROMPT,
    answer_budget,
    answer_grammar,
    answer_schema,
    grammar_schema,
)

Transport = Literal["auto", "openai", "litellm"]
Constrained = Literal["grammar", "json_schema"]

DEFAULT_ENDPOINT_LIMIT = 1024
"""Requests at once per endpoint when neither the agent nor the sweep says (the sweep cap)."""
MAX_FREE_CUTS = 16
"""Cut streams per answer blamed on server concurrency that do not use up ``max_retries``
(the endpoint halves its concurrency meanwhile, so this bound is never reached in practice)."""

OPENAI_COMPATIBLE_PREFIXES = frozenset(
    {"openai", "hosted_vllm", "openai-compatible", "openai_compatible", "custom_openai"}
)
"""Provider prefixes that mean "speaks the OpenAI chat API at ``api_base``"."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Besides every 5xx: statuses that say "try again later" rather than "you are wrong"."""


MAX_RETRY_AFTER = 300.0
"""Seconds: the longest ``Retry-After`` wait we accept before trying again anyway."""
MAX_ERROR_BODY = 1024 * 1024
"""Bytes of an error answer's body kept for the message."""
DEADLINE_FACTOR = 10
"""An agent without its own ``deadline`` gives one request this many times its ``timeout``."""
FINISH_GRACE = 2.0
"""Seconds (at most; a quarter of the timeout when that is shorter) a stream may take after
its ``finish_reason`` to send usage and ``[DONE]`` before the answer is taken without them."""
MAX_USAGE_TOKENS = 10**9
"""The largest token count a server may report for one request; more is nonsense (None)."""


def event_limit(max_answer_chars: int) -> int:
    """Bytes one server-sent event (or a whole JSON answer) may have: room for an answer of
    ``max_answer_chars`` characters escaped as JSON (``\\uXXXX``: six bytes a character), and
    64 KiB for the rest of the chunk."""
    return 6 * max_answer_chars + 65536


class HTTPStatusError(Exception):
    """A non-2xx answer; ``body`` is the parsed JSON error when there was one (so the
    provider's own words reach the message), ``headers`` carry ``Retry-After``."""

    def __init__(self, status: int, headers: Any, text: str) -> None:
        self.status_code = status
        self.headers = headers
        self.text = text
        try:
            self.body: Any = json.loads(text) if text else None
        except ValueError:
            self.body = None
        super().__init__(f"HTTP {status}: {text[:500] or '(empty body)'}")


class ProviderError(RuntimeError):
    """A provider call failed for good: a non-retryable answer, or retries exhausted.

    The message names the model, the endpoint host and the provider's complaint, and never
    contains the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retries: int = 0,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retries = retries
        self.retryable = retryable


class _Secret:
    """Holds the API key; prints as ``***`` so it cannot leak through a repr or a log."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def get(self) -> str | None:
        return self._value

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "***" if self._value else "None"

    __str__ = __repr__


class _Refused(Exception):
    """The server's answer is refused for good (too large, a redirect, an HTML page): asking
    the same server again would meet the same, so it is not retried."""


class _StreamBroken(Exception):
    """The stream ended badly: without a finish reason (``cut``: the answer may be
    incomplete), or with an error or an unexpected chunk in it."""

    def __init__(self, message: str, *, cut: bool = False) -> None:
        super().__init__(message)
        self.cut = cut


@dataclass
class _Failure:
    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None


_import_lock = threading.Lock()
_litellm: Any = None
_import_future: concurrent.futures.Future[Any] | None = None


def _start_litellm_import() -> concurrent.futures.Future[Any]:
    """Begin importing litellm in a worker thread (once per process); return its future."""
    global _import_future
    with _import_lock:
        if _import_future is None:
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="litellm-import")
            _import_future = pool.submit(_import_litellm)
            pool.shutdown(wait=False)
        return _import_future


async def _litellm_async() -> Any:
    """litellm, imported off the event loop the first time so the loop never stalls."""
    return await asyncio.wrap_future(_start_litellm_import())


def _import_aiohttp() -> None:
    import aiohttp  # noqa: F401


def _import_litellm() -> Any:
    """Import litellm quietly and offline (local cost map, no telemetry, no banners)."""
    global _litellm
    if _litellm is not None:
        return _litellm
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    # litellm trips pydantic warnings at import and on every streamed chunk; they are its
    # business, and would otherwise land on a user's terminal mid-sweep.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm(\.|$)")
    warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.set_verbose = False
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.ERROR)
    _litellm = litellm
    return litellm


_redirect_free: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None
"""The event loop litellm's redirect-free httpx client was made on, and the client."""


def _refuse_litellm_redirects(litellm: Any) -> Any:
    """Give litellm an httpx client that does not follow redirects; return the client.

    litellm's own clients follow a ``307`` with the POST body (the prompt) to wherever it
    points. ``litellm.aclient_session`` is litellm's documented setting for the httpx
    client under its OpenAI-SDK providers (``openai/``, ``azure/`` and the OpenAI-compatible
    ones); checked on litellm 1.110.2, and guarded by a test in test_hostile_streams.py
    that fails when litellm stops using it. Its connections belong to one event loop, so
    each loop gets its own client (litellm caches its SDK clients per loop too).
    """
    global _redirect_free
    loop = asyncio.get_running_loop()
    if _redirect_free is None or _redirect_free[0]() is not loop:
        import httpx  # litellm's own dependency, imported with it

        client = httpx.AsyncClient(
            follow_redirects=False,
            event_hooks={"response": [_refuse_httpx_redirect]},
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        _redirect_free = (weakref.ref(loop), client)
    litellm.aclient_session = _redirect_free[1]
    return _redirect_free[1]


def _refuse_provider_redirects(litellm: Any, model: str, api_base: str | None) -> None:
    """Make litellm's own HTTP client for ``model``'s provider refuse redirects.

    Providers that litellm does not send through the OpenAI SDK (``groq/``,
    ``deepseek/``, ``mistral/``, ``together_ai/``, ``openrouter/``, ``anthropic/``, ...)
    post with a cached ``AsyncHTTPHandler`` that follows redirects, and a ``client``
    argument of the wrong kind would break the providers that do use the SDK. litellm
    has no setting for it, so this reaches into its internals: the cache of
    ``get_async_httpx_client`` (per provider and event loop, keyed by ``ssl_verify``).
    Checked on litellm 1.110.2; a test in test_hostile_streams.py fails when a redirect
    is followed again.
    """
    from litellm.llms.custom_httpx.http_handler import get_async_httpx_client

    try:
        provider = litellm.get_llm_provider(model=model, api_base=api_base)[1]
        handler = get_async_httpx_client(llm_provider=provider, params={"ssl_verify": None})
    except Exception:  # an unknown provider: litellm itself will name it
        return
    hooks = dict(handler.event_hooks or {})
    if _refuse_httpx_redirect not in hooks.get("response", []):
        hooks["response"] = [*hooks.get("response", []), _refuse_httpx_redirect]
    handler.event_hooks = hooks  # used when litellm remakes a closed client
    handler.follow_redirects = False
    client = handler.client
    client.follow_redirects = False
    client.event_hooks = hooks


def split_provider(model: str) -> tuple[str | None, str]:
    """``"openai/gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"gpt-4o"`` -> ``(None, "gpt-4o")``."""
    if "/" in model:
        prefix, rest = model.split("/", 1)
        return prefix, rest
    return None, model


def choose_transport(model: str, api_base: str | None) -> Literal["openai", "litellm"]:
    """The openai SDK for OpenAI-compatible endpoints given by ``api_base``, else litellm."""
    prefix, _ = split_provider(model)
    if api_base and (prefix is None or prefix in OPENAI_COMPATIBLE_PREFIXES):
        return "openai"
    return "litellm"


def _field(obj: Any, name: str) -> Any:
    """Attribute or key access for SDK objects, litellm objects and plain dicts alike."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, dict):
            value = extra.get(name)
    return value


def _parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms``."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except Exception:  # noqa: BLE001 - odd header containers
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 100 <= status <= 599:
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and 100 <= status <= 599:
        return status
    return None


def _headers_of(exc: BaseException) -> Any:
    for attr in ("litellm_response_headers", "headers"):
        headers = getattr(exc, attr, None)
        if headers:
            return headers
    response = getattr(exc, "response", None)
    return getattr(response, "headers", None)


def _provider_message(exc: BaseException) -> str:
    """The provider's own complaint, without SDK boilerplate where we can find it."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    # litellm wraps the provider's JSON error body in its own prefixes; dig it out.
    start = text.find("{")
    if start >= 0:
        try:
            payload = json.loads(text[start:])
        except ValueError:
            payload = None
        err = payload.get("error", payload) if isinstance(payload, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
    return text or type(exc).__name__


def classify(exc: BaseException) -> _Failure:
    """Decide whether an exception from a provider call is worth another attempt."""
    status = _status_of(exc)
    name = type(exc).__name__
    if isinstance(exc, _StreamBroken):
        return _Failure(True, str(exc))
    if isinstance(exc, _Refused):
        return _Failure(False, str(exc))
    if isinstance(exc, json.JSONDecodeError):
        return _Failure(True, f"malformed stream chunk ({exc.msg})")
    if isinstance(exc, UnicodeDecodeError):
        return _Failure(True, f"malformed stream chunk (not UTF-8: {exc.reason})")
    cause = connection_cause(exc)
    if cause is not None and (status is None or "Connection" in name):
        # litellm's APIConnectionError says 500, but no server answered: name the cause
        return _Failure(True, f"{cause}: {name}: {_provider_message(exc)}")
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return _Failure(True, f"timeout: {str(exc) or 'no answer in time'}")
    if status is not None:
        retryable = status in RETRYABLE_STATUS or status >= 500
        retry_after = _parse_retry_after(_headers_of(exc)) if retryable else None
        return _Failure(retryable, f"HTTP {status}: {_provider_message(exc)}", status, retry_after)
    if isinstance(exc, ConnectionError | OSError):
        return _Failure(True, f"{name}: {exc}")
    module = type(exc).__module__ or ""
    if module.split(".", 1)[0] in ("openai", "litellm", "httpx", "httpcore", "aiohttp"):
        # Connection resets, read timeouts, protocol errors, incomplete chunked bodies.
        return _Failure(True, f"{name}: {_provider_message(exc)}")
    return _Failure(False, f"{name}: {exc}")


@dataclass
class _Call:
    """One streamed answer after its transport retries (one step of a reply)."""

    state: _AttemptState
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
        if not model:
            raise ValueError(
                f"agent {name!r}: an LLM agent needs a model string like openai/gpt-4o"
            )
        if constrained not in (None, "grammar", "json_schema"):
            raise ValueError(
                f"agent {name!r}: constrained must be 'grammar' or 'json_schema', "
                f"not {constrained!r}"
            )
        urls = [api_base] if isinstance(api_base, str) else list(api_base or [])
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.style = style
        self.api_base: str | None = urls[0] if urls else None
        self.api_bases = urls
        self._key = _Secret(api_key)
        self.timeout = timeout
        self.deadline = deadline or DEADLINE_FACTOR * timeout
        """Seconds one request may take in all, however steadily the server talks."""
        self.max_answer_chars = max_answer_chars
        self.limiter = limiter
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retries = max_retries
        self.constrained = constrained
        # Per endpoint: the agent's max_concurrency, else what the sweep allows at once
        # (the connection pool keeps that many connections alive, no more).
        per_endpoint = max_concurrency or max_connections or DEFAULT_ENDPOINT_LIMIT
        self.max_connections = per_endpoint
        self.transport: Literal["openai", "litellm"] = (
            choose_transport(model, self.api_base) if transport == "auto" else transport
        )
        if not urls and self.transport == "litellm" and implicit_base(model):
            # litellm sends ollama/... to a local server by default: name it, so that the
            # endpoint pool can see it die and the preflight can probe it
            urls = [implicit_base(model)]  # type: ignore[list-item]
            self.api_base, self.api_bases = urls[0], urls
        self.spec: dict[str, Any] = {"model": model}
        self.on_notice: Any = None
        """Called with an :class:`~coop_tui.agents.endpoints.EndpointNotice` (the sweep
        sets it to reach progress and summary)."""
        self.endpoints: EndpointPool | None = (
            EndpointPool(urls, per_endpoint, agent=name, notify=self._notify) if urls else None
        )
        self._chat_urls: dict[str, Any] = {}
        # The key goes on the HTTP session's headers, unless a server of the list is
        # reached with user:password@ (Basic auth from the URL, which must not meet a
        # bearer header): then it is added per request to the other servers. A proxy
        # from the environment sends it per request too (see _session_headers).
        self._key_per_request = bool(self._key.get()) and any(has_userinfo(u) for u in urls)
        self._rng = random.Random()
        self.batch = batch
        """Decisions go through the provider's Batch API (at half price): the sweep gives
        the agent a :class:`~coop_tui.agents.batch.BatchHub` as ``batcher``."""
        self.batch_poll = batch_poll
        """Seconds before a batch is first polled (the interval then doubles)."""
        self.batcher: Any = None

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
            await _litellm_async()
        constraint = self._constraint(request) if self.constrained else None
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
                    {"role": "user", "content": _final_answer_prompt()},
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
        first, last = calls[0].state, calls[-1].state
        tokens_in = _sum_known(c.state.input_tokens for c in calls)
        tokens_out = _sum_known(c.state.output_tokens for c in calls)
        cost = reply_cost(self.model, tokens_in, tokens_out, batched=self.batcher is not None)
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
            cost_usd=cost,
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

    # -- one step with its retries ---------------------------------------------------------

    async def _call(self, messages: list[dict], sink: Any, extra: dict[str, Any]) -> _Call:
        if self.batcher is not None:
            return await self._batch_call(messages, sink, extra)
        retries = 0
        free = 0  # cut streams blamed on concurrency: the endpoint adapts, the budget stays
        busy = queued = 0.0
        body = self._body(messages, extra) if self.transport == "openai" else b""
        while True:
            attempt = _AttemptState(self.max_answer_chars)
            asked = time.perf_counter()
            try:
                pool = self.endpoints
                lease = None if pool is None else pool.try_acquire() or await pool.acquire()
            except EndpointsDown as exc:  # every server failed again after its rest: fail fast
                raise ProviderError(
                    f"{self._where()}: {scrub(self._key.scrub(str(exc)))}",
                    retries=retries, retryable=True,
                ) from None
            outcome = "error"
            sent = 0.0
            try:
                if self.limiter is not None:
                    async with self.limiter:
                        sent = time.perf_counter()
                        await self._attempt(lease, messages, extra, body, sink, attempt)
                else:
                    sent = time.perf_counter()
                    await self._attempt(lease, messages, extra, body, sink, attempt)
                if attempt.finish_reason is None:
                    raise _StreamBroken(
                        "the stream ended without a finish reason (dropped connection, or the "
                        "server interrupted it for another request?)",
                        cut=True,
                    )
                outcome = "ok"
            except Exception as exc:  # noqa: BLE001 - classified below
                failure = classify(exc)
                outcome = _endpoint_outcome(exc)
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
                return _Call(attempt, busy, queued, retries)
            # the live pane shows this too: no key, no user:pass@, no echoed auth header
            message = scrub(self._key.scrub(failure.message))
            concurrent_cut = outcome == "cut" and lease is not None and lease.concurrent
            if concurrent_cut and free < MAX_FREE_CUTS:
                free += 1
            elif not failure.retryable:
                raise ProviderError(
                    f"{self._where(lease)}: {message}", status=failure.status, retries=retries
                ) from None
            elif retries - free >= self.max_retries:
                raise ProviderError(
                    f"{self._where(lease)}: gave up after {retries} retries; "
                    f"last error: {message}",
                    status=failure.status,
                    retries=retries,
                    retryable=True,
                ) from None
            failover = outcome == "down" and self.endpoints is not None and len(self.api_bases) > 1
            delay = 0.0 if failover else self._backoff(retries - free, failure.retry_after)
            if concurrent_cut:
                delay = min(delay, 0.05)
            retries += 1
            if attempt.emitted:
                restart = getattr(sink, "restart", None)
                if callable(restart):
                    restart(f"{message}; retrying in {delay:.1f}s ({retries}/{self.max_retries})")
            if delay:
                await asyncio.sleep(delay)

    async def _batch_call(self, messages: list[dict], sink: Any, extra: dict[str, Any]) -> _Call:
        """One step through the Batch API: the answer as if it had streamed (no deltas);
        a request that failed in its batch, or whose batch expired or failed, is asked
        again in a new batch (up to ``max_retries``), naming the reason on the live pane.
        The latency is the time from sending the batch to its answer."""
        body = {"model": self._model_name(), "messages": messages, **self._params(), **extra}
        retries, waited, fresh = 0, 0.0, False
        while True:
            outcome, seconds = await self.batcher.ask(self, body, fresh=fresh)
            waited += seconds
            if outcome.error is None:
                try:
                    state = self._batch_state(outcome)
                except _Refused as exc:
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

    def _batch_state(self, outcome: Outcome) -> _AttemptState:
        """A batch answer as the state a stream would have left (limits checked alike)."""
        state = _AttemptState(self.max_answer_chars)
        for piece in (outcome.reasoning, outcome.text):
            state._grow(piece)  # noqa: SLF001 - the same limit as a streamed answer
        state.text = [outcome.text] if outcome.text else []
        state.reasoning = [outcome.reasoning] if outcome.reasoning else []
        state.input_tokens, state.output_tokens = outcome.input_tokens, outcome.output_tokens
        state.finish_reason, state.model = outcome.finish_reason, outcome.model
        return state

    # -- internals -----------------------------------------------------------------------

    def _where(self, lease: Any = None) -> str:
        url = lease.endpoint.url if lease is not None else self.api_base
        return f"{self.model} at {host_of(url)}" if url else self.model

    def _backoff(self, retries: int, retry_after: float | None) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^n)]; a server's Retry-After wins.

        Retry-After is honoured up to ``MAX_RETRY_AFTER`` so one absurd header cannot park
        a sweep for hours.
        """
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        return self._rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * (2**retries)))

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        return params

    def _constraint(self, request: DecisionRequest) -> tuple[dict[str, Any], int] | None:
        """Request parameters that constrain the answer to its schema, and a token budget;
        None for free-text kinds."""
        schema = request.schema
        if schema is None:
            schema = answer_schema(request.kind, request.labels, request.options)
        if schema is None:
            return None
        budget = answer_budget(schema)
        if self.constrained == "json_schema":
            fmt = {"name": "answer", "schema": grammar_schema(schema), "strict": True}
            return {"response_format": {"type": "json_schema", "json_schema": fmt}}, budget
        kind, payload = answer_grammar(request.kind, request.labels, schema)
        grammar = payload if kind == "gbnf" else _schema_gbnf(payload)
        return {"grammar": grammar}, budget

    def _model_name(self) -> str:
        prefix, name = split_provider(self.model)
        return name if prefix in OPENAI_COMPATIBLE_PREFIXES else self.model

    def _body(self, messages: list[dict], extra: dict[str, Any]) -> bytes:
        payload = {
            "model": self._model_name(),
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            **self._params(),
            **extra,
        }
        return json.dumps(payload).encode()

    def _attempt(
        self,
        lease: Any,
        messages: list[dict],
        extra: dict[str, Any],
        body: bytes,
        sink: Any,
        state: _AttemptState,
    ) -> Awaitable[None]:
        """One HTTP attempt on the agent's transport (a plain function handing on the
        coroutine: every streamed chunk resumes each coroutine level in between)."""
        url = lease.endpoint.url if lease is not None else self.api_base
        if self.transport == "openai":
            return self._stream_http(url or "", body, sink, state)
        return self._stream_litellm(url, messages, extra, sink, state)

    async def prepare(self) -> None:
        """Import the client library off the event loop, before the first request needs it.

        aiohttp takes a tenth of a second to import and litellm several; imported inside
        the first reply they would stall every stream already running.
        """
        if self.batch:  # the Batch API's SDK instead of the streaming transport
            await asyncio.to_thread(import_batch_sdk, self.model)
        elif self.transport == "openai":
            await asyncio.to_thread(_import_aiohttp)
        else:
            await _litellm_async()

    def _chat_url(self, url: str) -> tuple[Any, Any, Any]:
        """``{api_base}/chat/completions`` as a parsed URL with the environment's proxy for
        it (and its credentials' header), worked out once per endpoint."""
        known = self._chat_urls.get(url)
        if known is None:
            from yarl import URL

            target = URL(endpoint_url(url, "chat/completions"))
            known = self._chat_urls[url] = (target, *env_proxy(target))
        return known

    def _session_headers(self) -> dict[str, str]:
        """Headers of every request, set once when the endpoint pool's session is made.

        The key is among them only when no server of the agent is reached through a
        proxy: aiohttp copies a session's headers into the proxy's own, and moves an
        ``Authorization`` there to ``Proxy-Authorization`` (on the ``CONNECT`` of an https
        tunnel too): the proxy would get ``Bearer <API key>`` in place of its own
        credentials. Through a proxy the key goes with each request, to the server.
        """
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._key.get() and any(self._chat_url(u)[1] is not None for u in self.api_bases):
            self._key_per_request = True
        if self._key.get() and not self._key_per_request:
            headers["Authorization"] = f"Bearer {self._key.get()}"
        return headers

    async def _stream_http(self, url: str, body: bytes, sink: Any, state: _AttemptState) -> None:
        """POST on the endpoint pool's aiohttp session and decode the SSE stream.

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
        import aiohttp

        assert self.endpoints is not None  # the openai transport always has an api_base
        session = self.endpoints.http_session(self._session_headers)
        target, proxy, proxy_headers = self._chat_url(url)
        headers = None
        if self._key_per_request and target.user is None:
            headers = {"Authorization": f"Bearer {self._key.get()}"}
        if proxy_headers is not None:
            headers, proxy_headers = proxy_headers_for(target, proxy_headers, headers)
        loop = asyncio.get_running_loop()
        limit = self.timeout
        end = loop.time() + self.deadline
        try:
            async with asyncio.timeout_at(min(loop.time() + limit, end)) as deadline:
                async with session.post(target, data=body, headers=headers, proxy=proxy,
                                        proxy_headers=proxy_headers,
                                        allow_redirects=False) as response:
                    if response.status >= 400:
                        raise HTTPStatusError(
                            response.status, response.headers, await _read_capped(response)
                        )
                    _check_head(response)
                    kind = response.headers.get("Content-Type", "")
                    if "json" in kind and "event-stream" not in kind:
                        text = await _read_whole(response, event_limit(self.max_answer_chars))
                        _whole_answer(text, sink, state)
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
                                if _sse_event(payload, sink, state):
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
                        raise _Refused(
                            f"one server-sent event passed {exc.limit:,} bytes (6 bytes per "
                            f"character of the agent's max_answer_chars = "
                            f"{self.max_answer_chars:,}, and 64 KiB); refused without "
                            "reading the rest"
                        ) from None
                    if not state.done:
                        for payload in decoder.close():
                            _sse_event(payload, sink, state)
        except TimeoutError:
            if state.complete:
                return  # the answer is whole; its usage or [DONE] did not come in time
            if (deadline.when() or 0.0) >= end:
                raise TimeoutError(
                    f"no complete answer within {self.deadline:g} s (the agent's deadline)"
                ) from None
            raise TimeoutError(
                f"the server sent no data for {self.timeout:g} s (the agent's timeout)"
            ) from None

    async def _stream_litellm(
        self, url: str | None, messages: list[dict], extra: dict[str, Any], sink: Any,
        state: _AttemptState,
    ) -> None:
        """The same request through litellm, within the agent's ``deadline``; as on the
        aiohttp path, a stream that stalls after its ``finish_reason`` keeps its answer."""
        litellm = await _litellm_async()
        _refuse_litellm_redirects(litellm)
        _refuse_provider_redirects(litellm, self.model, url)
        kwargs: dict[str, Any] = dict(self._params())
        params = dict(extra)
        if "grammar" in params:
            kwargs["extra_body"] = {"grammar": params.pop("grammar")}
        kwargs.update(params)
        if url:
            kwargs["api_base"] = url
        if self._key.get():
            kwargs["api_key"] = self._key.get()
        elif url and split_provider(self.model)[0] in OPENAI_COMPATIBLE_PREFIXES:
            # a keyless local server: litellm's OpenAI provider refuses to send without a
            # key, and must not fall back to OPENAI_API_KEY for a server that is not OpenAI
            kwargs["api_key"] = "no-key"
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.deadline) as deadline:
                try:
                    stream = await litellm.acompletion(
                        model=self.model,
                        messages=messages,
                        stream=True,
                        stream_options={"include_usage": True},
                        timeout=self.timeout,
                        num_retries=0,
                        max_retries=0,
                        **kwargs,
                    )
                except Exception as exc:
                    refused = _wrapped_refusal(exc)
                    if refused is None:
                        raise
                    raise refused from None
                graced = False
                try:
                    async for chunk in stream:
                        state.consume(chunk, sink)
                        if state.finish_reason is not None and not graced:
                            graced = True
                            grace = min(FINISH_GRACE, self.timeout / 4)
                            deadline.reschedule(
                                min(deadline.when() or loop.time(), loop.time() + grace)
                            )
                finally:
                    close = getattr(stream, "aclose", None)
                    if callable(close):
                        with contextlib.suppress(Exception):  # closing a broken stream may fail
                            await close()
                _check_litellm_stream(stream, state)
        except TimeoutError:
            if state.finish_reason is not None:
                return  # the answer is whole; its usage did not come in time
            raise TimeoutError(
                f"no complete answer within {self.deadline:g} s (the agent's deadline)"
            ) from None


def _final_answer_prompt() -> str:
    return FINAL_ANSWER_PROMPT


def _sum_known(values: Any) -> int | None:
    """The total, or None when any part is unknown (a partial sum would look exact)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _endpoint_outcome(exc: BaseException) -> str:
    """What a failure says about the endpoint: down (no connection), cut (stream ended
    without a finish reason), or error (nothing about its health)."""
    if isinstance(exc, _StreamBroken) and exc.cut:
        return "cut"
    if "ended before a finish_reason" in str(exc):
        return "cut"  # litellm's word for the same (MidStreamFallbackError, status 500)
    if connect_failed(exc):
        return "down"
    return "error"


@functools.cache
def _schema_gbnf(schema_json: str) -> str:
    """GBNF text for a JSON schema, by llama.cpp's own converter (pure Python)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema_json)


def _sse_event(payload: bytes, sink: Any, state: _AttemptState) -> bool:
    """Handle one SSE ``data`` payload (UTF-8 bytes, as JSON reads them); True at
    ``[DONE]``. Bad JSON raises (retryable)."""
    if payload == DONE:
        state.done = True
        return True
    chunk = sse_loads(payload)
    if type(chunk) is not dict:
        raise _StreamBroken(f"unexpected stream chunk: {payload[:80]!r}")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise _StreamBroken(f"the provider reported an error mid-stream: {message}")
    state.consume_dict(chunk, sink)
    return False


def _check_head(response: Any) -> None:
    """Refuse a 2xx or 3xx answer that is no chat answer, before reading its body: a
    redirect, or an HTML page (a sign-in portal, a web server's start page: a wrong
    ``api_base``, not a cut stream)."""
    status = response.status
    if 300 <= status < 400:
        raise _redirect_refused(status, response.headers.get("Location", ""))
    kind = response.headers.get("Content-Type", "")
    if "html" in kind.lower():
        raise _Refused(
            f"the server answered with an HTML page (Content-Type: {kind[:80]}), not a chat "
            "answer: check that api_base is the API's address (it often ends in /v1)"
        )


def _redirect_refused(status: int, location: str) -> _Refused:
    """The error for a ``3xx`` answer, naming its status and target (without the query,
    which may carry a token); the same words on the aiohttp and litellm paths, so both
    are counted as ``redirect refused``."""
    where = _without_query(location)
    return _Refused(
        f"the server redirected the request (HTTP {status} to {where or 'nowhere'}); "
        "a request with its body and key is not sent on to another address: set "
        "api_base to the address the server points to"
    )


async def _refuse_httpx_redirect(response: Any) -> None:
    """httpx response hook of litellm's client: a ``3xx`` answer ends the attempt here,
    before anything could be sent on (the client does not follow redirects either)."""
    if 300 <= response.status_code < 400:
        raise _redirect_refused(response.status_code, response.headers.get("Location", ""))


def _wrapped_refusal(exc: BaseException) -> _Refused | None:
    """Our refusal inside an exception litellm raised: the openai SDK wraps what an httpx
    hook raises in its ``APIConnectionError``, and litellm wraps that again (keeping the
    chain); unwrapped, it is recorded as on the aiohttp path and not retried."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, _Refused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _without_query(url: str) -> str:
    """``url`` without its query, fragment and ``user:password@`` (a redirect's target is
    named in errors; its query may carry a token)."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]


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
            raise _Refused(
                f"the answer's body passed {limit:,} bytes (6 bytes per character of the "
                "agent's max_answer_chars, and 64 KiB); refused without reading the rest"
            )
    return out.decode("utf-8", "replace")


def _whole_answer(text: str, sink: Any, state: _AttemptState) -> None:
    """A server that ignored ``stream`` and sent the whole completion as one JSON body."""
    payload = json.loads(text)
    if not isinstance(payload, dict):
        raise _StreamBroken(f"unexpected answer: {text[:80]!r}")
    choices = []
    for choice in payload.get("choices") or []:
        if isinstance(choice, dict):
            message = choice.get("message") or {}
            choices.append({"delta": message, "finish_reason": choice.get("finish_reason")})
    state.consume({**payload, "choices": choices}, sink)
    state.done = True


def _check_litellm_stream(stream: Any, state: _AttemptState) -> None:
    """Undo two litellm conveniences that would hide facts we must record.

    litellm appends a synthetic ``finish_reason="stop"`` when a stream just ends, and
    counts tokens itself when the provider sent no usage. We look at what the provider
    actually sent: no finish reason means a cut stream (retry), no usage chunk means the
    token counts are unknown (None, never a silent estimate).
    """
    received = getattr(stream, "received_finish_reason", "absent")
    if received is None and getattr(stream, "intermittent_finish_reason", None) is None:
        state.finish_reason = None
    chunks = getattr(stream, "chunks", None)
    reported = isinstance(chunks, list) and any(_field(c, "usage") is not None for c in chunks)
    if not reported:
        state.input_tokens = None
        state.output_tokens = None


def _token_count(value: Any) -> int | None:
    """A reported token count as a sane integer, else None (unknown): servers have sent
    negative counts, fractions and 10^30, which would corrupt totals and costs and cannot
    be stored in an SQLite integer. Whole floats (``12.0``) count."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_USAGE_TOKENS:
        return value
    return None


class _AttemptState:
    """What one attempt has streamed so far (discarded when the attempt fails)."""

    __slots__ = ("text", "reasoning", "input_tokens", "output_tokens", "finish_reason", "model",
                 "emitted", "done", "size", "limit")

    def __init__(self, limit: int = DEFAULT_MAX_ANSWER_CHARS) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.emitted = False
        self.done = False  # [DONE] arrived: the answer is complete whatever the connection does
        self.size = 0
        """Characters of text and reasoning so far."""
        self.limit = limit
        """The agent's ``max_answer_chars``: an answer growing past it is refused."""

    @property
    def complete(self) -> bool:
        """The answer is whole: ``[DONE]`` or a ``finish_reason`` arrived (a stream that
        then stalls or drops has lost at most its usage numbers)."""
        return self.done or self.finish_reason is not None

    def _grow(self, piece: str) -> None:
        """Count ``piece`` against the limit."""
        self.size += len(piece)
        if self.size > self.limit:
            self._refuse()

    def _refuse(self) -> None:
        """The answer grew past the limit: the attempt is refused (what came is dropped
        with it, so nothing huge is stored)."""
        raise _Refused(
            f"the answer passed {self.limit:,} characters (the agent's max_answer_chars); "
            "refused"
        )

    def consume(self, chunk: Any, sink: Any) -> None:
        if type(chunk) is dict:
            self.consume_dict(chunk, sink)
            return
        usage = _field(chunk, "usage")
        if usage is not None:
            prompt = _field(usage, "prompt_tokens")
            completion = _field(usage, "completion_tokens")
            if prompt is not None:
                self.input_tokens = _token_count(prompt)
            if completion is not None:
                self.output_tokens = _token_count(completion)
        model = _field(chunk, "model")
        if isinstance(model, str) and model:
            self.model = model
        for choice in _field(chunk, "choices") or []:
            delta = _field(choice, "delta")
            reasoning = _field(delta, "reasoning_content") or _field(delta, "reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._grow(reasoning)
                self.reasoning.append(reasoning)
                self.emitted = True
                sink.reasoning(reasoning)
            content = _field(delta, "content")
            if isinstance(content, str) and content:
                self._grow(content)
                self.text.append(content)
                self.emitted = True
                sink.text(content)
            finish = _field(choice, "finish_reason")
            if finish:
                self.finish_reason = str(finish)

    def consume_dict(self, chunk: dict[str, Any], sink: Any) -> None:
        """:meth:`consume` for a decoded SSE chunk (plain dicts: the common case, taken
        without the attribute probing that SDK objects need; same rules, same result)."""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            prompt = usage.get("prompt_tokens")
            completion = usage.get("completion_tokens")
            if prompt is not None:
                self.input_tokens = _token_count(prompt)
            if completion is not None:
                self.output_tokens = _token_count(completion)
        model = chunk.get("model")
        if model and isinstance(model, str):
            self.model = model
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue  # nothing to read in it (the general path finds nothing either)
            delta = choice.get("delta")
            if delta and isinstance(delta, dict):
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning and isinstance(reasoning, str):
                    self.size += len(reasoning)
                    if self.size > self.limit:
                        self._refuse()
                    self.reasoning.append(reasoning)
                    self.emitted = True
                    sink.reasoning(reasoning)
                content = delta.get("content")
                if content and isinstance(content, str):
                    self.size += len(content)  # counted here: a call per chunk costs
                    if self.size > self.limit:
                        self._refuse()
                    self.text.append(content)
                    self.emitted = True
                    sink.text(content)
            finish = choice.get("finish_reason")
            if finish:
                self.finish_reason = str(finish)
