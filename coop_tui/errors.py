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


# Failures are grouped by a short reason so "2 failed" always says why. The reason is
# derived from the error text in a fixed order: HTTP statuses first (the most common cause
# of a whole sweep failing: a wrong key, a wrong URL, a rate limit that never ends).
_HTTP = re.compile(r"\bHTTP (\d{3})\b")
_EXC = re.compile(r"^([A-Z][A-Za-z0-9_]*(?:Error|Exception|Aborted|Timeout|Interrupt)):")


def failure_reason(error: str | None) -> str:
    """A short, stable label for a failed match's error, for grouping and counting.

    ``HTTP 401`` / ``HTTP 500 after retries`` for provider statuses, ``invalid answers``
    for matches stopped by unusable answers, ``timeout``, ``connection``, otherwise the
    exception type (or the first words of the message).
    """
    text = (error or "").strip()
    if not text:
        return "unknown error"
    lowered = text.lower()
    gave_up = "gave up after" in lowered
    status = _HTTP.search(text)
    if status:
        return f"HTTP {status.group(1)}" + (" after retries" if gave_up else "")
    if "gave no valid" in lowered:
        return "invalid answers"
    if "timeout" in lowered or "timed out" in lowered:
        return "timeout" + (" after retries" if gave_up else "")
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


def database_message(exc: BaseException, path: object) -> str:
    """One sentence for a SQLite failure: what is wrong with the file and what to do."""
    text = str(exc)
    lowered = text.lower()
    if "readonly" in lowered or "read-only" in lowered:
        return f"the database {path} is read-only; give a writable --db path or fix its permissions"
    if "full" in lowered:
        return f"the database {path} cannot grow: the disk (or its size limit) is full; free space"
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return (f"{path} is damaged or not a coop-tui database ({text}); restore it from a "
                "backup or give another --db path")
    if "locked" in lowered or "busy" in lowered:
        return f"the database {path} is locked by another process ({text}); try again when it is done"
    if "unable to open" in lowered:
        return f"cannot open the database {path} ({text}); give a writable file path with --db"
    return f"the database {path} failed: {text}"
