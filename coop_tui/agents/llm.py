"""The LLM agent: one streamed chat completion per decision, with transport retries.

Two transports, chosen per agent:

* ``openai``: the ``openai`` SDK's ``AsyncOpenAI`` talking straight to an OpenAI-compatible
  ``api_base`` (``openai/…``, ``hosted_vllm/…`` or a bare model name with ``api_base``).
  One client per agent, reused, with a connection pool sized for sweep concurrency; the SDK
  sends the request and raises status errors, we decode the SSE lines. This is the fast
  path: litellm spends about three times the CPU per streamed answer and reaches markedly
  lower throughput on the loopback benchmark (``benchmarks/bench_clients.py``).
* ``litellm``: ``litellm.acompletion`` for every other provider string.

Both are imported lazily (litellm costs seconds to import, and must not slow ``--help``).
Retries cover rate limits, 5xx, timeouts, connection errors, streams that end without a
finish reason, and malformed chunks; each HTTP attempt holds the sweep's limiter, the
backoff sleep does not. The API key lives in a wrapper whose ``repr`` hides it, and every
error message is scrubbed of it before it leaves this module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import functools
import importlib.util
import json
import logging
import os
import random
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from coop_tui.decisions import AgentReply, DecisionRequest

Transport = Literal["auto", "openai", "litellm"]

OPENAI_COMPATIBLE_PREFIXES = frozenset(
    {"openai", "hosted_vllm", "openai-compatible", "openai_compatible", "custom_openai"}
)
"""Provider prefixes that mean "speaks the OpenAI chat API at ``api_base``"."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Besides every 5xx: statuses that say "try again later" rather than "you are wrong"."""


MAX_RETRY_AFTER = 300.0
"""Seconds: the longest ``Retry-After`` wait we accept before trying again anyway."""


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


class _StreamBroken(Exception):
    """The stream ended without a finish reason (no ``[DONE]``): the answer may be cut."""


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


def _import_openai_sdk() -> None:
    import httpx  # noqa: F401
    import openai  # noqa: F401
    import openai.resources  # noqa: F401  # ``client.chat`` imports it lazily: ~0.7 s


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


PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def _price_map() -> dict[str, Any]:
    """litellm's offline price map, read straight from its package data.

    It is the same file litellm loads with ``LITELLM_LOCAL_MODEL_COST_MAP=True``; reading
    the JSON costs milliseconds, where importing litellm costs seconds of CPU that would
    otherwise compete with a sweep's event loop on the openai transport.
    """
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PRICE_MAP_FILE
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return {}


def cost_for(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD cost of one call from litellm's offline price map; None when the model is unknown."""
    if not model:
        return None
    prices = _price_map()
    parts = model.split("/")
    # "openrouter/openai/gpt-4o" -> that, "openai/gpt-4o", "gpt-4o": the map keys vary
    candidates = ["/".join(parts[i:]) for i in range(len(parts))]
    for name in candidates:
        entry = prices.get(name)
        if not isinstance(entry, dict):
            continue
        per_in, per_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if per_in is None or per_out is None:
            continue
        return float(per_in) * input_tokens + float(per_out) * output_tokens
    return None


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
    if isinstance(exc, json.JSONDecodeError):
        return _Failure(True, f"malformed stream chunk ({exc.msg})")
    if status is not None:
        retryable = status in RETRYABLE_STATUS or status >= 500
        retry_after = _parse_retry_after(_headers_of(exc)) if retryable else None
        return _Failure(retryable, f"HTTP {status}: {_provider_message(exc)}", status, retry_after)
    if isinstance(exc, asyncio.TimeoutError | TimeoutError | ConnectionError | OSError):
        return _Failure(True, f"{name}: {exc}")
    module = type(exc).__module__ or ""
    if module.split(".", 1)[0] in ("openai", "litellm", "httpx", "httpcore", "aiohttp"):
        # Connection resets, read timeouts, protocol errors, incomplete chunked bodies.
        return _Failure(True, f"{name}: {_provider_message(exc)}")
    return _Failure(False, f"{name}: {exc}")


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
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        limiter: Any = None,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_retries: int = 6,
        transport: Transport = "auto",
        max_connections: int = 512,
    ) -> None:
        if not model:
            raise ValueError(
                f"agent {name!r}: an LLM agent needs a model string like openai/gpt-4o"
            )
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.style = style
        self.api_base = api_base
        self._key = _Secret(api_key)
        self.timeout = timeout
        self.limiter = limiter
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retries = max_retries
        self.max_connections = max_connections
        self.transport: Literal["openai", "litellm"] = (
            choose_transport(model, api_base) if transport == "auto" else transport
        )
        self.spec: dict[str, Any] = {"model": model}
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random()

    def __repr__(self) -> str:
        return (
            f"LLMAgent(name={self.name!r}, model={self.model!r}, api_base={self.api_base!r}, "
            f"transport={self.transport!r}, api_key={self._key!r})"
        )

    # -- public --------------------------------------------------------------------------

    async def reply(self, request: DecisionRequest, messages: list[dict], sink: Any) -> AgentReply:
        """Stream one answer; retry transport faults; return only the last attempt's text.

        ``latency_ms`` counts the HTTP attempts and the backoff pauses between them, not the
        time spent queueing for the limiter.
        """
        retries = 0
        busy = 0.0
        # The litellm transport needs litellm before the request; its first (slow) import
        # runs in a thread and that wait is not part of the latency.
        if self.transport == "litellm":
            await _litellm_async()
        while True:
            attempt = _AttemptState()
            started = 0.0
            try:
                if self.limiter is not None:
                    async with self.limiter:
                        started = time.perf_counter()
                        await self._attempt(messages, sink, attempt)
                else:
                    started = time.perf_counter()
                    await self._attempt(messages, sink, attempt)
                busy += time.perf_counter() - started
                break
            except Exception as exc:  # noqa: BLE001 - classified below
                if started:
                    busy += time.perf_counter() - started
                failure = classify(exc)
            message = self._key.scrub(failure.message)
            if not failure.retryable:
                raise ProviderError(
                    f"{self._where()}: {message}", status=failure.status, retries=retries
                ) from None
            if retries >= self.max_retries:
                raise ProviderError(
                    f"{self._where()}: gave up after {retries} retries; last error: {message}",
                    status=failure.status,
                    retries=retries,
                    retryable=True,
                ) from None
            delay = self._backoff(retries, failure.retry_after)
            retries += 1
            if attempt.emitted:
                restart = getattr(sink, "restart", None)
                if callable(restart):
                    restart(f"{message}; retrying in {delay:.1f}s ({retries}/{self.max_retries})")
            await asyncio.sleep(delay)
            busy += delay
        cost = None
        if attempt.input_tokens is not None and attempt.output_tokens is not None:
            cost = cost_for(self.model, attempt.input_tokens, attempt.output_tokens)
        return AgentReply(
            text="".join(attempt.text),
            reasoning="".join(attempt.reasoning),
            input_tokens=attempt.input_tokens,
            output_tokens=attempt.output_tokens,
            cost_usd=cost,
            latency_ms=busy * 1000.0,
            transport_retries=retries,
            model=attempt.model or self.model,
        )

    async def aclose(self) -> None:
        """Close the pooled HTTP client (optional; the pool is also freed with the agent)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # -- internals -----------------------------------------------------------------------

    def _where(self) -> str:
        if self.api_base:
            from urllib.parse import urlsplit

            host = urlsplit(self.api_base).netloc or self.api_base
            return f"{self.model} at {host}"
        return self.model

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

    async def _attempt(self, messages: list[dict], sink: Any, state: _AttemptState) -> None:
        if self.transport == "openai":
            await self._stream_openai(messages, sink, state)
        else:
            await self._stream_litellm(messages, sink, state)
        if state.finish_reason is None:
            raise _StreamBroken("the stream ended without a finish reason (dropped connection?)")

    async def prepare(self) -> None:
        """Import the client library off the event loop, before the first request needs it.

        The openai SDK takes about a second to import and litellm several; imported inside
        the first reply they would stall every stream already running.
        """
        if self.transport == "openai":
            await asyncio.to_thread(_import_openai_sdk)
            self._openai_client().chat.completions  # noqa: B018  # client, pool, resources
        else:
            await _litellm_async()

    def _openai_client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        import httpx
        from openai import AsyncOpenAI

        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 30.0))
        http = httpx.AsyncClient(
            timeout=timeout,
            limits=httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,
                keepalive_expiry=30.0,
            ),
        )
        # A placeholder when no key was given: the SDK would otherwise pick up
        # OPENAI_API_KEY from the environment and send it to whatever api_base says.
        self._client = AsyncOpenAI(
            api_key=self._key.get() or "no-key",
            base_url=self.api_base,
            max_retries=0,
            timeout=timeout,
            http_client=http,
        )
        self._client_loop = loop
        return self._client

    async def _stream_openai(self, messages: list[dict], sink: Any, state: _AttemptState) -> None:
        """Stream through the openai SDK, reading the SSE lines ourselves.

        The SDK still does the request, auth, base URL and status errors; only the chunk
        decoding is ours, because building a pydantic object per chunk was most of the
        client's CPU time at sweep concurrency (see benchmarks/bench_clients.py).
        """
        client = self._openai_client()
        prefix, name = split_provider(self.model)
        model = name if prefix in OPENAI_COMPATIBLE_PREFIXES else self.model
        async with client.chat.completions.with_streaming_response.create(
            model=model,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            **self._params(),
        ) as response:
            lines = response.iter_lines().__aiter__()
            data: list[str] = []
            async for line in lines:
                if line:
                    if line.startswith("data:"):
                        value = line[5:]
                        data.append(value[1:] if value.startswith(" ") else value)
                    continue  # event:, id:, retry: and ":" comments carry nothing we use
                if data and _sse_event("\n".join(data), sink, state):
                    # Read the end of the body so the connection goes back to the pool,
                    # but do not wait on a server that keeps it open after [DONE].
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(1.0):
                            async for _ in lines:
                                pass
                    return
                data = []
            if data:
                _sse_event("\n".join(data), sink, state)

    async def _stream_litellm(self, messages: list[dict], sink: Any, state: _AttemptState) -> None:
        litellm = await _litellm_async()
        kwargs: dict[str, Any] = dict(self._params())
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._key.get():
            kwargs["api_key"] = self._key.get()
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
        try:
            async for chunk in stream:
                state.consume(chunk, sink)
        finally:
            close = getattr(stream, "aclose", None)
            if callable(close):
                with contextlib.suppress(Exception):  # closing a broken stream may fail too
                    await close()
        _check_litellm_stream(stream, state)


def _sse_event(payload: str, sink: Any, state: _AttemptState) -> bool:
    """Handle one SSE ``data`` payload; True at ``[DONE]``. Bad JSON raises (retryable)."""
    if payload.strip() == "[DONE]":
        return True
    chunk = json.loads(payload)
    if not isinstance(chunk, dict):
        raise _StreamBroken(f"unexpected stream chunk: {payload[:80]!r}")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise _StreamBroken(f"the provider reported an error mid-stream: {message}")
    state.consume(chunk, sink)
    return False


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


class _AttemptState:
    """What one attempt has streamed so far (discarded when the attempt fails)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.emitted = False

    def consume(self, chunk: Any, sink: Any) -> None:
        usage = _field(chunk, "usage")
        if usage is not None:
            prompt = _field(usage, "prompt_tokens")
            completion = _field(usage, "completion_tokens")
            if isinstance(prompt, int):
                self.input_tokens = prompt
            if isinstance(completion, int):
                self.output_tokens = completion
        model = _field(chunk, "model")
        if isinstance(model, str) and model:
            self.model = model
        for choice in _field(chunk, "choices") or []:
            delta = _field(choice, "delta")
            reasoning = _field(delta, "reasoning_content") or _field(delta, "reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                self.emitted = True
                sink.reasoning(reasoning)
            content = _field(delta, "content")
            if isinstance(content, str) and content:
                self.text.append(content)
                self.emitted = True
                sink.text(content)
            finish = _field(choice, "finish_reason")
            if finish:
                self.finish_reason = str(finish)
