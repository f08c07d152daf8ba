"""Which fault a chat request meets, and the faults answered before any answer is composed.

Why its own module: a test names a fault and expects one precise misbehaviour; the choice
(a script, then a seeded rate) and the refusals (a wrong key, a status, a hang, a redirect,
an HTML page) read best in one place. Faults that cut or spoil an answer mid-way belong
to the writers that send it (:mod:`.streaming`).
"""

from __future__ import annotations

import asyncio
import random

from coop_tui.testing.config import RecordedRequest, ServerConfig
from coop_tui.testing.wire import Closed, connection_header, head, send_error

FAULT_KINDS = ("429", "500", "timeout", "drop", "truncate", "malformed", "keepalive",
               "stall", "huge_line", "redirect", "html")
"""Known fault kinds. Any other three-digit string is answered with that HTTP status.

429: rate limit with ``Retry-After``; 500: server error; timeout: no byte for ``hang``
seconds; drop: some chunks then the socket is closed mid-body; truncate: some chunks then
a clean end of body without ``finish_reason`` or ``[DONE]``; malformed: a non-JSON data line.
Hostile servers: keepalive: an SSE ``: keepalive`` comment every ``keepalive_every`` seconds
and no data, for ``hang`` seconds; stall: the whole answer and its ``finish_reason``, then
silence for ``hang`` seconds (no usage, no ``[DONE]``); huge_line: one ``data:`` line of
``huge_size`` bytes, written in 64 KiB pieces; redirect: ``307`` to ``redirect_to``; html:
a ``200`` with an HTML page.
"""

SIGN_IN_PAGE = b"<!doctype html><html><body><h1>Please sign in</h1></body></html>"
"""What an ``html`` fault serves: a proxy's login page where JSON was expected."""


def pick_fault(cfg: ServerConfig, index: int) -> str | None:
    """The fault of the ``index``-th chat request: the script's entry, else a draw from a
    generator seeded by ``seed`` and ``index`` (the same arrival order, the same faults)."""
    if index < len(cfg.fault_script):
        return cfg.fault_script[index] or None
    if cfg.fault_rate > 0 and cfg.fault_kinds:
        rng = random.Random(f"{cfg.seed}:{index}")
        if rng.random() < cfg.fault_rate:
            return cfg.fault_kinds[rng.randrange(len(cfg.fault_kinds))]
    return None


async def refuse(
    cfg: ServerConfig,
    record: RecordedRequest,
    fault: str | None,
    writer: asyncio.StreamWriter,
    keep: bool,
) -> bool:
    """Answer the request with its refusal, if it gets one: 401 for a wrong key, then the
    faults that answer instead of the model. True when answered (a ``timeout`` raises
    :class:`Closed` after its hang); False when the answer is still to be sent."""
    if cfg.api_key is not None and await _wrong_key(cfg, record, writer, keep):
        return True
    if fault is None:
        return False
    if fault == "429":
        await send_error(writer, 429, "rate limit reached, slow down", "rate_limit_error", keep,
                         {"Retry-After": f"{cfg.retry_after:g}"})
        return True
    if fault.isdigit() and len(fault) == 3:
        await _status(int(fault), writer, keep)
        return True
    if fault == "timeout":
        await asyncio.sleep(cfg.hang)
        raise Closed()
    if fault == "redirect":
        await send_error(writer, 307, "moved", "redirect", keep, {"Location": cfg.redirect_to})
        return True
    if fault == "html":
        writer.write(head(200, {
            "Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(SIGN_IN_PAGE)),
            "Connection": connection_header(keep),
        }) + SIGN_IN_PAGE)
        await writer.drain()
        return True
    return False


async def _wrong_key(
    cfg: ServerConfig, record: RecordedRequest, writer: asyncio.StreamWriter, keep: bool
) -> bool:
    """401 when the request does not carry ``Bearer <api_key>``; the message quotes the
    offered key when ``echo_key_in_errors`` (careless providers do; tests redaction)."""
    offered = record.headers.get("authorization", "")
    if offered == f"Bearer {cfg.api_key}":
        return False
    record.fault = "401"
    key = offered.removeprefix("Bearer ").strip()
    shown = f": {key}" if cfg.echo_key_in_errors and key else ""
    await send_error(writer, 401, f"Incorrect API key provided{shown}", "authentication_error", keep)
    return True


async def _status(status: int, writer: asyncio.StreamWriter, keep: bool) -> None:
    """An injected HTTP status, with the error type a provider gives it."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    if status == 401:
        kind = "authentication_error"
    elif status == 404:
        kind = "not_found_error"
    await send_error(writer, status, f"injected HTTP {status}", kind, keep)
