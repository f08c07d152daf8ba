"""HTTP for OpenAI-compatible servers on aiohttp: one session per endpoint pool, the
connect budget, naming why a connection failed, and probing an endpoint before a sweep.

Why aiohttp: its connector hands out a kept-alive connection without scanning the others
(httpx's pool checks every idle connection per request, so its CPU per request grows with
the concurrency), it does TLS, proxies and chunked framing for us, and litellm already
depends on it.

Proxies come from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, with
aiohttp's own reading of them, :func:`env_proxy`), resolved once per endpoint. The session's
``trust_env`` flag stays off: with it aiohttp reads ``~/.netrc`` in a worker thread on every
request (a thread hop per streamed answer), and a netrc entry for the server's host would
collide with the bearer key (aiohttp refuses an ``Authorization`` header next to netrc
credentials).
``benchmarks/bench_clients.py`` compares the agent with a bare aiohttp loop and the openai
SDK in one run.

Timeouts: connecting has its own short budget (:data:`CONNECT_BUDGET`), so a refused or
unroutable host fails in seconds; reading is bounded by the agent's ``timeout`` as a
silence limit (pushed back whenever bytes arrive), so a slow server keeps its long wait.

aiohttp is imported inside the functions that need it: ``coop-tui --help`` and the
strategy-only paths do not pay for its import.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

CONNECT_BUDGET = 10.0
"""Seconds to open a TCP connection (TLS included) before the endpoint counts as down."""
PROBE_BUDGET = 10.0
"""Seconds a preflight probe may take in all (connect, request, answer head)."""

LOCAL_DEFAULT_BASES: dict[str, tuple[str, str]] = {
    "ollama": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "ollama_chat": ("OLLAMA_API_BASE", "http://localhost:11434"),
}
"""Providers that litellm sends to a server on this machine when no ``api_base`` is given:
the environment variable litellm reads, and its default. Hosted providers are not here."""


def implicit_base(model: str) -> str | None:
    """The server litellm would use for ``model`` without an ``api_base`` (local providers
    only: Ollama listens on localhost:11434 unless ``OLLAMA_API_BASE`` says otherwise)."""
    prefix = model.split("/", 1)[0] if "/" in model else ""
    entry = LOCAL_DEFAULT_BASES.get(prefix)
    if entry is None:
        return None
    env, default = entry
    return os.environ.get(env) or default


def host_of(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or url
    return f"{host}:{parts.port}" if parts.port else host


def new_session(headers: dict[str, str] | None = None) -> Any:
    """An aiohttp session for one endpoint pool on the running event loop.

    The connector does not queue (``limit=0``): the endpoint pool already bounds requests
    per endpoint, and a second limit would only add bookkeeping. Kept-alive connections
    live 30 s idle. ``total`` is None: the agent bounds silence itself (see the module
    docstring), the connector bounds connecting. ``headers`` go with every request (set
    once here, not merged per request); no cookie jar (chat APIs set none worth keeping,
    and filtering one costs time on every request).
    """
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=0, keepalive_timeout=30.0, ttl_dns_cache=300,
    )
    timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=CONNECT_BUDGET)
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, trust_env=False, raise_for_status=False,
        headers={"User-Agent": "coop-tui", **(headers or {})},
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def env_proxy(url: Any) -> tuple[Any, dict[str, str] | None]:
    """``(proxy, proxy_headers)`` the environment sets for ``url`` (``NO_PROXY`` honoured),
    or ``(None, None)``: what aiohttp's ``trust_env`` would pick, asked once per endpoint.
    A proxy's ``user:password@`` becomes its ``Proxy-Authorization`` header (aiohttp's
    ``proxy_auth`` argument is deprecated)."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(str(url)))
    except LookupError:
        return None, None
    return proxy, ({"Proxy-Authorization": auth.encode()} if auth is not None else None)


def proxy_headers_for(
    target: Any, proxy_headers: dict[str, str] | None, headers: dict[str, str] | None
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """``(headers, proxy_headers)`` of one request through a proxy that wants credentials.
    aiohttp sends ``proxy_headers`` only on the CONNECT that tunnels an https target; a
    plain-http target is sent to the proxy itself, so the header travels with it."""
    if not proxy_headers or str(target).startswith("https:"):
        return headers, proxy_headers
    return {**(headers or {}), **proxy_headers}, None


# ------------------------------------------------------------------------- failure causes

REFUSED = "connection refused"
DNS = "DNS lookup failed"
TLS = "TLS error"
CONNECT_TIMEOUT = "connect timeout"
UNREACHABLE = "host unreachable"
DROPPED = "connection dropped"

_TEXT_CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (REFUSED, ("connection refused", "connect call failed", "errno 111", "actively refused")),
    (DNS, ("name or service not known", "nodename nor servname", "temporary failure in name "
           "resolution", "getaddrinfo failed", "no address associated", "could not resolve")),
    (TLS, ("certificate_verify_failed", "certificate verify failed", "[ssl:", "sslerror",
           "wrong version number", "tlsv1")),
    (UNREACHABLE, ("network is unreachable", "no route to host")),
    (CONNECT_TIMEOUT, ("connection timeout to host", "connect timeout")),
)
"""Phrases by which the cause shows in texts of wrapped exceptions (litellm wraps aiohttp's
and httpx's errors in its own, and keeps the original's words)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [getattr(e, "os_error", None), e.__cause__, e.__context__]


def connection_cause(exc: BaseException) -> str | None:
    """Why no answer came, when the reason is the connection: refused, DNS, TLS, connect
    timeout, unreachable, dropped; None for anything else (HTTP statuses, bad answers).

    The exception chain is read first (aiohttp keeps the ``OSError`` it met); the text is
    read only for exceptions that say they are about connecting (litellm's
    ``APIConnectionError`` carries a status 500 that is no server's answer).
    """
    for e in _chain(exc):
        name = type(e).__name__
        if isinstance(e, ConnectionRefusedError):
            return REFUSED
        if isinstance(e, socket.gaierror) or name == "ClientConnectorDNSError":
            return DNS
        if isinstance(e, ssl.SSLError | ssl.CertificateError) or name in (
            "ClientConnectorCertificateError", "ClientConnectorSSLError", "ClientSSLError"
        ):
            return TLS
        if name in ("ConnectionTimeoutError", "ConnectTimeout", "SocketTimeoutError"
                    ) and "read" not in str(e).lower():
            return CONNECT_TIMEOUT
        if isinstance(e, OSError) and e.errno in (101, 113):  # ENETUNREACH, EHOSTUNREACH
            return UNREACHABLE
    for e in _chain(exc):
        name = type(e).__name__
        if not ("Connect" in name or "Connection" in name or isinstance(e, OSError)):
            continue
        text = str(e).lower()
        for cause, phrases in _TEXT_CAUSES:
            if any(p in text for p in phrases):
                return cause
    for e in _chain(exc):
        name = type(e).__name__
        if name in ("ServerDisconnectedError", "ClientPayloadError", "RemoteProtocolError") or (
            isinstance(e, ConnectionResetError | BrokenPipeError)
        ):
            return DROPPED
    return None


def connect_failed(exc: BaseException) -> bool:
    """True when no connection could be made at all (the endpoint is down, not slow)."""
    cause = connection_cause(exc)
    return cause is not None and cause != DROPPED


# ----------------------------------------------------------------------------- preflight


@dataclass(frozen=True)
class ProbeResult:
    """One endpoint's answer to the preflight: ``error`` is None when it answered."""

    url: str
    error: str | None = None
    status: int | None = None


def endpoint_url(api_base: str, path: str) -> str:
    """``{api_base}/{path}``, keeping a query the base carries (``/v1?key=...``: some
    providers take the key there) after the joined path, not inside it."""

    parts = urlsplit(api_base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))


async def probe(session: Any, url: str, *, budget: float = PROBE_BUDGET) -> ProbeResult:
    """``GET {url}/models`` once: any HTTP answer (even 401 or 404) means the server is
    there; no answer is an error naming the cause (refused, DNS, TLS, timeout ...)."""
    import aiohttp

    target = endpoint_url(url, "models")
    proxy, proxy_headers = env_proxy(target)
    headers, proxy_headers = proxy_headers_for(target, proxy_headers, None)
    try:
        async with asyncio.timeout(budget):
            async with session.get(target, allow_redirects=False, proxy=proxy, headers=headers,
                                   proxy_headers=proxy_headers) as response:
                return ProbeResult(url, None, response.status)
    except TimeoutError:
        return ProbeResult(url, f"no answer within {budget:g} s (timeout) from {host_of(url)}")
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        cause = connection_cause(exc) or type(exc).__name__
        detail = str(exc) or type(exc).__name__
        return ProbeResult(url, f"{cause}: {detail}")


async def probe_all(urls: list[str], *, budget: float = PROBE_BUDGET) -> dict[str, ProbeResult]:
    """Probe every URL once, at the same time, on one short-lived session."""
    if not urls:
        return {}
    session = new_session()
    try:
        results = await asyncio.gather(*(probe(session, u, budget=budget) for u in urls))
    finally:
        with contextlib.suppress(Exception):
            await session.close()
    return {r.url: r for r in results}
