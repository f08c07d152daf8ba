"""The one way a command reports bad input: a line on stderr and exit code 2.

It lives apart from ``cli.py`` so that the report, export and importer modules can use
it without importing the command line (which imports them: a cycle). The message is
scrubbed of credentials on the way out, whatever produced it.
"""

from __future__ import annotations

import re
import sys

EXIT_USAGE = 2


class SpecError(ValueError):
    """A sweep, match, rubric or benchmark specification that cannot run, with the field and
    the fix. It lives here, in the bottom layer, because every layer raises it (benchmark
    items, rubrics, agents); ``coop_tui.spec.SpecError`` is the same class."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


def fail(message: str) -> int:
    """Print ``coop-tui: error: <message>`` (secrets removed, control characters shown as
    escapes) and return exit code 2."""
    from coop_tui.redact import scrub
    from coop_tui.terminal import terminal_text

    print(f"coop-tui: error: {terminal_text(scrub(message), markup=False)}", file=sys.stderr)
    return EXIT_USAGE


# Failures are grouped by a short reason so "2 failed" always says why. The reason is the
# real cause as far as the text tells it: a connection that never came about (refused, DNS,
# TLS, connect timeout, unreachable; the agent writes these words first, see
# coop_tui.agents.transport), an HTTP status a server sent, a timeout, unusable answers.
_HTTP = re.compile(r"\bHTTP (\d{3})\b")
_EXC = re.compile(r"^([A-Z][A-Za-z0-9_]*(?:Error|Exception|Aborted|Timeout|Interrupt)):")
_CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("connection refused", ("connection refused", "connect call failed", "actively refused")),
    ("DNS lookup failed", ("dns lookup failed", "name or service not known",
                           "nodename nor servname", "temporary failure in name resolution",
                           "getaddrinfo failed")),
    ("TLS error", ("tls error:", "certificate_verify_failed", "certificate verify failed")),
    ("connect timeout", ("connect timeout", "connection timeout to host")),
    ("host unreachable", ("host unreachable:", "network is unreachable", "no route to host")),
)
"""Causes and the phrases that show them (ours, or the OS's words inside a library's)."""
_REFUSALS: tuple[tuple[str, str], ...] = (
    ("answer too large", "max_answer_chars"),
    ("redirect refused", "the server redirected the request"),
    ("HTML page", "answered with an html page"),
)
"""Answers the LLM agent refuses (coop_tui.agents.llm), by the words it names them with."""


def _connection_cause(text: str, lowered: str, status: re.Match[str] | None) -> str | None:
    """The connection cause in ``text``, unless an HTTP status came first (a gateway's 502
    whose body talks of a refused upstream is a 502); a 500 that only wraps a failed
    connection (litellm's APIConnectionError) is the connection's failure."""
    for cause, phrases in _CAUSES:
        where = [lowered.find(p) for p in phrases if p in lowered]
        if not where:
            continue
        if status is None or min(where) < status.start() or (
            status.group(1) == "500" and "connection" in lowered[:min(where)]
        ):
            return cause
    return None


def failure_reason(error: str | None) -> str:
    """A short, stable label for a failed match's error, for grouping and counting.

    ``connection refused`` / ``DNS lookup failed`` / ``TLS error`` / ``connect timeout`` /
    ``host unreachable`` when no connection came about; ``answer too large`` /
    ``redirect refused`` / ``HTML page`` for answers the agent refuses; ``HTTP 401`` /
    ``HTTP 500 after retries`` for provider statuses, ``invalid answers`` for matches stopped by unusable
    answers, ``timeout``, ``connection dropped``, ``connection error``, otherwise the
    exception type (or the first words of the message).
    """
    text = (error or "").strip()
    if not text:
        return "unknown error"
    lowered = text.lower()
    gave_up = "gave up after" in lowered
    for reason, phrase in _REFUSALS:
        if phrase in lowered:
            return reason
    status = _HTTP.search(text)
    cause = _connection_cause(text, lowered, status)
    if cause:
        return cause
    if status:
        return f"HTTP {status.group(1)}" + (" after retries" if gave_up else "")
    if "gave no valid" in lowered:
        return "invalid answers"
    if "timeout" in lowered or "timed out" in lowered:
        return "timeout" + (" after retries" if gave_up else "")
    if "connection dropped" in lowered or "serverdisconnected" in lowered:
        return "connection dropped" + (" after retries" if gave_up else "")
    if any(w in lowered for w in ("connection", "connect", "refused", "unreachable")):
        return "connection error" + (" after retries" if gave_up else "")
    if gave_up:
        return "gave up after retries"
    if "interrupted" in lowered or "stopped" in lowered:
        return "stopped"
    exc = _EXC.match(text)
    if exc:
        return exc.group(1)
    return " ".join(text.split(":", 1)[0].split()[:6])[:60]


def failure_summary(groups: dict[str, dict]) -> str:
    """``"HTTP 401: 2, invalid answers: 1"`` from ``{reason: {"count": n, ...}}``."""
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1]["count"], kv[0]))
    return ", ".join(f"{reason}: {g['count']}" for reason, g in ordered)


def database_message(exc: BaseException, path: object, *, flag: str = "--db") -> str:
    """One sentence for a SQLite failure: what is wrong with the file and what to do
    (``flag`` is the option that named the file: ``compare --db-b`` is not ``--db``)."""
    text = str(exc)
    lowered = text.lower()
    if "newer coop-tui" in lowered:
        return f"the database {path} was {text}"
    if "readonly" in lowered or "read-only" in lowered:
        return f"the database {path} is read-only; give a writable {flag} path or fix its permissions"
    if "full" in lowered:
        return f"the database {path} cannot grow: the disk (or its size limit) is full; free space"
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return (f"{path} is damaged or not a coop-tui database ({text}); restore it from a "
                f"backup or give another {flag} path")
    if "locked" in lowered or "busy" in lowered:
        return f"the database {path} is locked by another process ({text}); try again when it is done"
    if "unable to open" in lowered:
        return f"cannot open the database {path} ({text}); give a writable file path with {flag}"
    return f"the database {path} failed: {text}"
