"""How a call to a chat model fails: the exceptions the LLM agent's transports raise.

They live apart from the transports so that both streams (:mod:`coop_tui.agents.http_stream`,
:mod:`coop_tui.agents.litellm_stream`), the stream state and the retry rules
(:mod:`coop_tui.agents.retry`) name the same kinds of failure without importing each other.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit


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


class Refused(Exception):
    """The server's answer is refused for good (too large, a redirect, an HTML page): asking
    the same server again would meet the same, so it is not retried."""


class StreamBroken(Exception):
    """The stream ended badly: without a finish reason (``cut``: the answer may be
    incomplete), or with an error or an unexpected chunk in it."""

    def __init__(self, message: str, *, cut: bool = False) -> None:
        super().__init__(message)
        self.cut = cut


def redirect_refused(status: int, location: str) -> Refused:
    """The error for a ``3xx`` answer, naming its status and target (without the query,
    which may carry a token); the same words on the aiohttp and litellm paths, so both
    are counted as ``redirect refused``."""
    where = _without_query(location)
    return Refused(
        f"the server redirected the request (HTTP {status} to {where or 'nowhere'}); "
        "a request with its body and key is not sent on to another address: set "
        "api_base to the address the server points to"
    )


def _without_query(url: str) -> str:
    """``url`` without its query, fragment and ``user:password@`` (a redirect's target is
    named in errors; its query may carry a token)."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]
