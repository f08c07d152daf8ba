"""A lean HTTP/1.1 client for streamed chat completions, on asyncio streams alone.

Why not httpx: at sweep concurrency its connection pool (httpcore) checks every kept-alive
connection on every request (a readability ``select`` per socket), so the client's CPU per
request grows with the concurrency; measured at 128 concurrent 0.2 s streams it was most
of the client's time. This pool keeps idle connections in a stack: taking one is O(1), a
connection the server has closed is noticed from the reader's end-of-file flag (set by
the event loop, no system call), and the number of idle connections kept is the
endpoint's concurrency. It speaks exactly what OpenAI-compatible servers need: a POST with
a JSON body, then a response framed by ``Content-Length``, chunked transfer encoding or
the end of the connection, read as server-sent-event lines.

Errors are raised as :class:`HTTPStatusError` (with status, headers and body, so the
caller can honour ``Retry-After``) or :class:`StreamClosed` (a ``ConnectionError``: the
connection ended where the framing says it must not). Timeouts are the caller's business,
except connecting, which is bounded here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_HEAD = 64 * 1024
"""Bytes: the longest response head accepted."""
MAX_ERROR_BODY = 1024 * 1024
"""Bytes of an error body kept for the message."""


class HTTPStatusError(Exception):
    """A non-2xx answer; ``body`` is the parsed JSON error when there was one."""

    def __init__(self, status: int, headers: dict[str, str], text: str) -> None:
        self.status_code = status
        self.headers = headers
        self.text = text
        try:
            self.body: Any = json.loads(text) if text else None
        except ValueError:
            self.body = None
        super().__init__(f"HTTP {status}: {text[:500] or '(empty body)'}")


class StreamClosed(ConnectionError):
    """The connection ended before the response did (dropped, reset, cut framing)."""


class _Connection:
    __slots__ = ("reader", "writer", "idle_since")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float, expiry: float) -> bool:
        return (
            not self.reader.at_eof()
            and not self.writer.is_closing()
            and now - self.idle_since < expiry
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Response:
    """One streamed response: status, headers, and the body as lines."""

    def __init__(self, pool: ConnectionPool, conn: _Connection, status: int,
                 headers: dict[str, str], keep: bool) -> None:
        self.status = status
        self.headers = headers
        self._pool = pool
        self._conn: _Connection | None = conn
        self._keep = keep
        self._finished = False

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it arrives (chunk payloads, or reads of a plain body)."""
        conn = self._conn
        if conn is None:
            return
        reader = conn.reader
        headers = self.headers
        try:
            if "chunked" in headers.get("transfer-encoding", "").lower():
                while True:
                    size_line = await reader.readuntil(b"\r\n")
                    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while (await reader.readuntil(b"\r\n")) != b"\r\n":
                            pass  # trailers
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif "content-length" in headers:
                left = int(headers["content-length"])
                while left > 0:
                    data = await reader.read(min(left, 65536))
                    if not data:
                        raise StreamClosed("the connection closed before the body ended")
                    left -= len(data)
                    yield data
            else:
                self._keep = False
                while data := await reader.read(65536):
                    yield data
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            self._keep = False
            raise StreamClosed(f"the response body was cut ({type(exc).__name__})") from None
        except BaseException:
            self._keep = False
            raise
        self._finished = True

    async def lines(self) -> AsyncIterator[str]:
        """The body split into lines (``\\n`` or ``\\r\\n``), decoded as UTF-8."""
        buffer = b""
        async for piece in self.pieces():
            if b"\n" not in piece:
                buffer += piece
                continue
            parts = (buffer + piece).split(b"\n")
            buffer = parts.pop()
            for part in parts:
                yield part.decode("utf-8", "replace").rstrip("\r")
        if buffer:
            yield buffer.decode("utf-8", "replace").rstrip("\r")

    async def read_text(self, limit: int = MAX_ERROR_BODY) -> str:
        out = bytearray()
        async for piece in self.pieces():
            if len(out) < limit:
                out += piece[: limit - len(out)]
        return out.decode("utf-8", "replace")

    def release(self) -> None:
        """Give the connection back (fully read, keep-alive) or close it."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._keep and self._finished:
            self._pool._put(conn)
        else:
            conn.close()


def _basic_auth(user: str | None, password: str | None) -> str | None:
    if not user:
        return None
    raw = f"{unquote(user)}:{unquote(password or '')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


class ConnectionPool:
    """Kept-alive connections to one server (``scheme://host:port``)."""

    def __init__(
        self,
        base_url: str,
        *,
        max_idle: int = 64,
        keepalive_expiry: float = 30.0,
        connect_timeout: float = 30.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.basic_auth = _basic_auth(parts.username, parts.password)
        """``http://user:pass@host`` connects with HTTP Basic auth, as httpx does."""
        default_port = self.port == (443 if parts.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = host if default_port else f"{host}:{self.port}"
        self.max_idle = max(1, max_idle)
        self.keepalive_expiry = keepalive_expiry
        self.connect_timeout = connect_timeout
        self._idle: deque[_Connection] = deque()
        self._ssl: ssl.SSLContext | None = None
        self.opened = 0
        """Connections opened so far (tests and benchmarks read it)."""

    async def _connect(self) -> _Connection:
        ctx = None
        if self.scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ctx = self._ssl
        async with asyncio.timeout(self.connect_timeout):
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=ctx, limit=MAX_HEAD
            )
        self.opened += 1
        return _Connection(reader, writer)

    def _take_idle(self) -> _Connection | None:
        now = time.monotonic()
        idle = self._idle
        while idle:
            conn = idle.pop()  # the most recently used: least likely to have expired
            if conn.usable(now, self.keepalive_expiry):
                return conn
            conn.close()
        return None

    def _put(self, conn: _Connection) -> None:
        conn.idle_since = time.monotonic()
        self._idle.append(conn)
        if len(self._idle) > self.max_idle:
            self._idle.popleft().close()

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> Response:
        """Send a POST and read the response head; the caller reads and releases the body.

        A kept-alive connection the server closed while idle fails on first use; that
        request is sent again once on a new connection (nothing of it was answered).
        """
        head = (
            f"POST {self.base_path}{path} HTTP/1.1\r\nHost: {self.authority}\r\n"
            f"Content-Length: {len(body)}\r\n"
            + "".join(
                f"{k}: {v}\r\n" for k, v in headers.items()
                if not (self.basic_auth and k.lower() == "authorization")
            )
            + (f"Authorization: {self.basic_auth}\r\n" if self.basic_auth else "")
            + "\r\n"
        ).encode("latin-1")
        conn = self._take_idle()
        if conn is not None:
            try:
                return await self._exchange(conn, head + body)
            except (StreamClosed, ConnectionError, asyncio.IncompleteReadError):
                conn.close()  # stale: fall through to a fresh connection
        try:
            conn = await self._connect()
        except OSError as exc:
            raise ConnectionRefusedError(
                f"cannot connect to {self.authority}: {exc.strerror or exc}"
            ) from None
        return await self._exchange(conn, head + body)

    async def _exchange(self, conn: _Connection, request: bytes) -> Response:
        try:
            conn.writer.write(request)
            await conn.writer.drain()
            raw = await conn.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            conn.close()
            raise StreamClosed("the server closed the connection without answering") from None
        except asyncio.LimitOverrunError:
            conn.close()
            raise StreamClosed("the response head is too long") from None
        except BaseException:
            conn.close()
            raise
        lines = raw.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        try:
            status = int(status_line[1])
        except (IndexError, ValueError):
            conn.close()
            raise StreamClosed(f"not an HTTP response: {lines[0][:80]!r}") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        keep = (
            status_line[0].upper() == "HTTP/1.1"
            and headers.get("connection", "").lower() != "close"
        )
        return Response(self, conn, status, headers, keep)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    @property
    def idle(self) -> int:
        return len(self._idle)
