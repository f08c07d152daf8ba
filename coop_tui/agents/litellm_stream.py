"""The ``litellm`` transport: one streamed chat completion through ``litellm.acompletion``,
for every provider that is not an OpenAI-compatible server given by ``api_base``.

litellm costs seconds to import, so it is imported once per process in a worker thread
(:func:`litellm_async`), quietly and offline. Its HTTP clients follow redirects with the
request's body; :func:`refuse_litellm_redirects` and :func:`refuse_provider_redirects` make
them refuse instead, as the aiohttp transport does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import warnings
import weakref
from typing import Any

from coop_tui.agents.failures import Refused, redirect_refused
from coop_tui.agents.request import ChatRequest, RequestBuilder
from coop_tui.agents.stream_state import FINISH_GRACE, StreamState, field

_import_lock = threading.Lock()
_litellm: Any = None
_import_future: concurrent.futures.Future[Any] | None = None


class LiteLLMStream:
    """Sends a request through litellm within the agent's ``deadline``; as on the aiohttp
    path, a stream that stalls after its ``finish_reason`` keeps its answer."""

    def __init__(
        self, requests: RequestBuilder, *, model: str, timeout: float, deadline: float
    ) -> None:
        self.requests = requests
        self.model = model
        self.timeout = timeout
        self.deadline = deadline

    async def stream(self, request: ChatRequest, sink: Any, state: StreamState) -> None:
        """Send ``request`` and feed what streams back into ``state`` (and ``sink``)."""
        litellm = await litellm_async()
        refuse_litellm_redirects(litellm)
        refuse_provider_redirects(litellm, self.model, request.url)
        kwargs = self.requests.litellm_kwargs(request.url, request.extra)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.deadline) as deadline:
                try:
                    stream = await litellm.acompletion(
                        model=self.model,
                        messages=request.messages,
                        stream=True,
                        stream_options={"include_usage": True},
                        timeout=self.timeout,
                        num_retries=0,
                        max_retries=0,
                        **kwargs,
                    )
                except Exception as exc:
                    refused = wrapped_refusal(exc)
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
                check_litellm_stream(stream, state)
        except TimeoutError:
            if state.finish_reason is not None:
                return  # the answer is whole; its usage did not come in time
            raise TimeoutError(
                f"no complete answer within {self.deadline:g} s (the agent's deadline)"
            ) from None


def check_litellm_stream(stream: Any, state: StreamState) -> None:
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
    reported = isinstance(chunks, list) and any(field(c, "usage") is not None for c in chunks)
    if not reported:
        state.input_tokens = None
        state.output_tokens = None


# -- importing litellm -----------------------------------------------------------------------


def _start_litellm_import() -> concurrent.futures.Future[Any]:
    """Begin importing litellm in a worker thread (once per process); return its future."""
    global _import_future
    with _import_lock:
        if _import_future is None:
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="litellm-import")
            _import_future = pool.submit(import_litellm)
            pool.shutdown(wait=False)
        return _import_future


async def litellm_async() -> Any:
    """litellm, imported off the event loop the first time so the loop never stalls."""
    return await asyncio.wrap_future(_start_litellm_import())


def import_litellm() -> Any:
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


# -- refusing redirects ----------------------------------------------------------------------

_redirect_free: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None
"""The event loop litellm's redirect-free httpx client was made on, and the client."""


def refuse_litellm_redirects(litellm: Any) -> Any:
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
            event_hooks={"response": [refuse_httpx_redirect]},
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        _redirect_free = (weakref.ref(loop), client)
    litellm.aclient_session = _redirect_free[1]
    return _redirect_free[1]


def refuse_provider_redirects(litellm: Any, model: str, api_base: str | None) -> None:
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
    if refuse_httpx_redirect not in hooks.get("response", []):
        hooks["response"] = [*hooks.get("response", []), refuse_httpx_redirect]
    handler.event_hooks = hooks  # used when litellm remakes a closed client
    handler.follow_redirects = False
    client = handler.client
    client.follow_redirects = False
    client.event_hooks = hooks


async def refuse_httpx_redirect(response: Any) -> None:
    """httpx response hook of litellm's client: a ``3xx`` answer ends the attempt here,
    before anything could be sent on (the client does not follow redirects either)."""
    if 300 <= response.status_code < 400:
        raise redirect_refused(response.status_code, response.headers.get("Location", ""))


def wrapped_refusal(exc: BaseException) -> Refused | None:
    """Our refusal inside an exception litellm raised: the openai SDK wraps what an httpx
    hook raises in its ``APIConnectionError``, and litellm wraps that again (keeping the
    chain); unwrapped, it is recorded as on the aiohttp path and not retried."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, Refused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
