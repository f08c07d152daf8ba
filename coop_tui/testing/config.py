"""How the loopback server answers (:class:`ServerConfig`) and what it saw
(:class:`RecordedRequest`).

Why its own module: the routes, the faults, the streaming writer and the batch endpoints
all read the same settings and fill the same records; the server only holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

TextSource = str | Callable[[dict[str, Any]], str] | None
"""A fixed text, or ``callable(request_body) -> str`` for scripted answers."""


@dataclass
class ServerConfig:
    """How the server answers; every field can be changed between tests with ``configure``."""

    latency: float = 0.05
    """Seconds from request to the last content chunk (spread over the chunks)."""
    ttft: float | None = None
    """Seconds before the first chunk; default: an even share of ``latency``."""
    chunks: int = 5
    """Number of content chunks (fewer when the answer has fewer characters)."""
    answer: TextSource = "Hello from the loopback server."
    """The answer text, or ``callable(request_body) -> str`` for scripted answers."""
    reasoning: TextSource = None
    """Optional reasoning text streamed as ``delta.reasoning_content`` before the answer."""
    fault_rate: float = 0.0
    fault_kinds: Sequence[str] = ("429", "500", "timeout", "drop", "malformed")
    fault_script: Sequence[str | None] = ()
    """Faults for the first chat requests, in arrival order (None or "" = answer normally)."""
    seed: int = 0
    retry_after: float = 0.2
    """Seconds sent in the ``Retry-After`` header of 429 answers."""
    hang: float = 30.0
    """How long a ``timeout`` fault keeps silent before closing the connection."""
    api_key: str | None = None
    """When set, requests without ``Authorization: Bearer <api_key>`` get 401."""
    echo_key_in_errors: bool = True
    """Quote the offered key in 401 messages, like careless providers do (tests redaction)."""
    models: Sequence[str] = ("loopback",)
    send_usage: bool = True
    """False: ignore ``stream_options.include_usage``, like servers that never report usage."""
    keepalive_every: float = 0.05
    """Seconds between the comments of a ``keepalive`` fault."""
    huge_size: int = 20 * 1024 * 1024
    """Bytes of the one line a ``huge_line`` fault sends."""
    redirect_to: str = "http://127.0.0.1:9/elsewhere/v1/chat/completions?token=sk-redirect-secret"
    """Where a ``redirect`` fault sends the client."""
    usage_override: dict[str, Any] | None = None
    """Values that replace the counted usage numbers (huge, negative, fractional ...)."""
    echo_key_in_answer: str | None = None
    """Put the offered key in the middle of the answer, like a model that repeats its
    context: "plain", "percent" (every byte as ``%XX``) or "plus" (form encoding)."""
    interrupt: bool = False
    """Like llama-cpp-python's server by default (``interrupt_requests``): a new chat request
    ends every stream still running with ``[DONE]`` (no finish reason), then drops its
    connection."""
    batch_polls: int = 1
    """Retrievals a batch answers "in progress" before it ends (see :mod:`.batches`)."""
    batch_hold: bool = False
    """While set, every batch stays in progress (a test ends it by clearing this)."""
    hold: bool = False
    """While set, every chat request waits before answering until ``release()``: a test
    holds a run live for exactly as long as it needs (no latency to guess), and the requests
    stay recorded (``configure`` would forget them)."""
    batch_script: Sequence[str | None] = ()
    """Outcomes of the batches in creation order: "completed" (or None), "expired", "failed"."""
    batch_fail: Callable[[dict[str, Any]], str | None] | None = None
    """``callable(chat body) -> error message or None``: that request fails in its batch."""
    batch_output_edit: Callable[[list[bytes]], list[bytes] | None] | None = None
    """``callable(result lines) -> lines served instead``, or None for a results file that
    cannot be downloaded (see :mod:`.batches`): bad lines, repeats, oversized answers."""
    batch_lost: bool = False
    """While set, retrieving a batch answers 404: its state cannot be learnt (the batch goes
    on; clearing this lets it be polled again)."""
    batch_status: str | None = None
    """The status a batch in progress reports instead of ``in_progress`` (one coop-tui
    does not know)."""


@dataclass(eq=False)
class RecordedRequest:
    """One request as the server saw it; tests read these from ``server.requests``."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    time: float
    """``time.monotonic()`` when the request was fully read."""
    fault: str | None = None
    usage: dict[str, int] | None = None
    done: float | None = None
    """``time.monotonic()`` when the answer was finished (None for faults that cut it)."""
    peer: str = ""
    """The client's ``host:port``: equal for requests that reused one kept-alive connection."""
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        """Dict-style access (``req["headers"]``) so tests may treat records as dicts."""
        return getattr(self, key)
