"""The loopback server's HTTP/1.1 over asyncio streams: one request read into a
:class:`RecordedRequest`, a JSON or error answer written back.

Why its own module: the routes, the faults and the batch endpoints speak in requests and
answers; how bytes become those (keep-alive, chunked request bodies, status lines) is the
same for all of them, and a reader following a fault need not read it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from coop_tui.testing.config import RecordedRequest

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class Closed(Exception):
    """The client went away, or a fault asks to cut the connection."""


def connection_header(keep: bool) -> str:
    """The ``Connection`` header of an answer on a kept-alive (or closing) connection."""
    return "keep-alive" if keep else "close"


async def read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[RecordedRequest, bytes, bool] | None:
    """The next request on a connection: its record (index -1 until a chat request is
    counted), its raw body and whether the connection stays open; None at a clean end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    raw = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        raw = await read_chunked(reader)
    elif "content-length" in headers:
        raw = await reader.readexactly(int(headers["content-length"]))
    keep = version.upper() == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    body: dict[str, Any] | None = None
    if raw:
        try:
            parsed = json.loads(raw)
            body = parsed if isinstance(parsed, dict) else {"_": parsed}
        except ValueError:
            body = None
    peer = writer.get_extra_info("peername") or ("?", 0)
    record = RecordedRequest(
        index=-1,
        method=method,
        path=target.split("?", 1)[0],
        headers=headers,
        body=body,
        time=time.monotonic(),
        peer=f"{peer[0]}:{peer[1]}",
    )
    return record, raw, keep


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A request body sent with ``Transfer-Encoding: chunked``."""
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


def head(status: int, headers: dict[str, str]) -> bytes:
    """The status line and headers of an answer."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send_json(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Any,
    keep: bool,
    extra: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> None:
    """A whole JSON answer (``raw`` bytes sent as they are, for hostile bodies and files)."""
    data = raw if raw is not None else json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "Content-Length": str(len(data)),
        "Connection": connection_header(keep),
        **(extra or {}),
    }
    writer.write(head(status, headers) + data)
    await writer.drain()


async def send_error(
    writer: asyncio.StreamWriter,
    status: int,
    message: str,
    kind: str,
    keep: bool,
    extra: dict[str, str] | None = None,
) -> None:
    """An error in OpenAI's shape (``{"error": {"message", "type", ...}}``)."""
    payload = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    await send_json(writer, status, payload, keep, extra)
