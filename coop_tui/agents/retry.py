"""Which failed calls to a chat model are asked again, and after how long.

:func:`classify` turns whatever a transport raised into a :class:`Failure`: retryable or
not, the message a user reads (naming the cause: connection refused, DNS, TLS, timeout,
HTTP status ...), and a server's ``Retry-After``. :class:`RetryPolicy` holds an agent's
retry settings and its backoff; :class:`Retries` counts one step's attempts against them,
so the agent's attempt loop only asks what to do next. Like Inspect's ``should_retry``
beside its model API, the rules know nothing of how a request is sent.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from dataclasses import dataclass
from typing import Any, Literal

from coop_tui.agents.failures import Refused, StreamBroken
from coop_tui.agents.transport import connect_failed, connection_cause

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Besides every 5xx: statuses that say "try again later" rather than "you are wrong"."""
MAX_RETRY_AFTER = 300.0
"""Seconds: the longest ``Retry-After`` wait we accept before trying again anyway."""
MAX_FREE_CUTS = 16
"""Cut streams per answer blamed on server concurrency that do not use up ``max_retries``
(the endpoint halves its concurrency meanwhile, so this bound is never reached in practice)."""
CONCURRENT_CUT_DELAY = 0.05
"""Seconds at most before asking again after a cut blamed on concurrency (the endpoint has
already lowered its concurrency; waiting longer would only slow the answer)."""

Verdict = Literal["retry", "refused", "exhausted"]
"""Ask again; fail at once (asking again cannot help); fail, the retries being used up."""


@dataclass
class Failure:
    """One failed attempt, as the retry rules and the user see it."""

    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None


def classify(exc: BaseException) -> Failure:
    """Decide whether an exception from a provider call is worth another attempt."""
    status = _status_of(exc)
    name = type(exc).__name__
    if isinstance(exc, StreamBroken):
        return Failure(True, str(exc))
    if isinstance(exc, Refused):
        return Failure(False, str(exc))
    if isinstance(exc, json.JSONDecodeError):
        return Failure(True, f"malformed stream chunk ({exc.msg})")
    if isinstance(exc, UnicodeDecodeError):
        return Failure(True, f"malformed stream chunk (not UTF-8: {exc.reason})")
    cause = connection_cause(exc)
    if cause is not None and (status is None or "Connection" in name):
        # litellm's APIConnectionError says 500, but no server answered: name the cause
        return Failure(True, f"{cause}: {name}: {_provider_message(exc)}")
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return Failure(True, f"timeout: {str(exc) or 'no answer in time'}")
    if status is not None:
        retryable = status in RETRYABLE_STATUS or status >= 500
        retry_after = _parse_retry_after(_headers_of(exc)) if retryable else None
        return Failure(retryable, f"HTTP {status}: {_provider_message(exc)}", status, retry_after)
    if isinstance(exc, ConnectionError | OSError):
        return Failure(True, f"{name}: {exc}")
    module = type(exc).__module__ or ""
    if module.split(".", 1)[0] in ("openai", "litellm", "httpx", "httpcore", "aiohttp"):
        # Connection resets, read timeouts, protocol errors, incomplete chunked bodies.
        return Failure(True, f"{name}: {_provider_message(exc)}")
    return Failure(False, f"{name}: {exc}")


def endpoint_outcome(exc: BaseException) -> str:
    """What a failure says about the endpoint: down (no connection), cut (stream ended
    without a finish reason), or error (nothing about its health)."""
    if isinstance(exc, StreamBroken) and exc.cut:
        return "cut"
    if "ended before a finish_reason" in str(exc):
        return "cut"  # litellm's word for the same (MidStreamFallbackError, status 500)
    if connect_failed(exc):
        return "down"
    return "error"


class RetryPolicy:
    """One agent's retry settings: how many retries an answer may use, and the backoff."""

    def __init__(self, max_retries: int, backoff_base: float, backoff_cap: float) -> None:
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._rng = random.Random()

    def backoff(self, retries: int, retry_after: float | None) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^n)]; a server's Retry-After wins.

        Retry-After is honoured up to ``MAX_RETRY_AFTER`` so one absurd header cannot park
        a sweep for hours.
        """
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        return self._rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * (2**retries)))

    def start(self) -> Retries:
        """A fresh count for one step of an answer."""
        return Retries(self)


class Retries:
    """The attempts of one step so far: ``count`` retries, of which ``free`` were cut
    streams blamed on server concurrency (the endpoint adapts; the budget stays)."""

    __slots__ = ("policy", "count", "free")

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.count = 0
        self.free = 0

    def verdict(self, failure: Failure, *, concurrent_cut: bool) -> Verdict:
        """Whether the step is asked again after ``failure`` (a free cut is counted here)."""
        if concurrent_cut and self.free < MAX_FREE_CUTS:
            self.free += 1
            return "retry"
        if not failure.retryable:
            return "refused"
        if self.count - self.free >= self.policy.max_retries:
            return "exhausted"
        return "retry"

    def next_delay(self, failure: Failure, *, failover: bool, concurrent_cut: bool) -> float:
        """Seconds to wait before the retry :meth:`verdict` allowed, which it counts: none
        when another server takes over, a short pause after a concurrency cut."""
        delay = 0.0 if failover else self.policy.backoff(self.count - self.free,
                                                         failure.retry_after)
        if concurrent_cut:
            delay = min(delay, CONCURRENT_CUT_DELAY)
        self.count += 1
        return delay


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
