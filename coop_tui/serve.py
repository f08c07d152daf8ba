"""``coop-tui serve``: the TUI in a web browser, through textual-serve.

Every browser tab that opens the page starts its own ``coop-tui`` process on the same
database (textual-serve runs the command per websocket session and streams its screen
to xterm.js). Whoever holds a session can read every run and start runs that spend the
API credit of the keys in the server's environment, so the server lets in only the
person who started it, the way Jupyter does:

- a secret token (random at each start, or ``--token``) printed once, in the URL to open;
  the page and the websocket refuse a request without it, and the first page load sets
  an HttpOnly, SameSite=Strict cookie that stands for it afterwards (xterm.js cannot put
  it in the websocket's URL). Browsers send a cookie to every port of a host, so its name
  and value are random per server start (a cookie another server set is not ours, ours
  is not the token) and a request a browser marks as coming from another origin is
  refused (below);
- nothing frames the page (``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``),
  and a request a browser sends for a frame, or from another origin (``Sec-Fetch-Site``
  ``same-site``/``cross-site``: a page on another port of 127.0.0.1 is same-site, and
  SameSite=Strict lets its requests carry our cookie), or with another ``Origin``, is
  refused: no other page can drive or show the TUI;
- every request names in ``Host`` a name the server answers to (loopback names, ``--host``,
  with the port): a page on an attacker's domain that re-resolves to 127.0.0.1 (DNS
  rebinding) names its own domain and is refused;
- every websocket handshake comes from the server's own page (``Origin``): another site
  open in the same browser cannot drive a session.

A refused request gets 403 and one line on stderr, before textual-serve sees it, so no app
process is started for it. The token never reaches a log: the access log and every other
log line are scrubbed of it, and the page sends no ``Referer`` (which would carry it). The server listens on 127.0.0.1 unless ``--host`` says
otherwise; binding elsewhere prints a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hmac
import logging
import re
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from coop_tui.errors import fail
from coop_tui.redact import register_secret, scrub
from coop_tui.terminal import terminal_text

INSTALL_HINT = "textual-serve is not installed; install the serve extra: pip install 'coop-tui[serve]'"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WILDCARD = {"0.0.0.0", "::", ""}
TOKEN_FORM = re.compile(r"[A-Za-z0-9._~-]{16,256}")
"""A ``--token``: long enough not to be guessed, and safe in a URL as it is."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def app_command(db: Path) -> str:
    """The shell command textual-serve runs for each browser session."""
    return shlex.join([sys.executable, "-m", "coop_tui.cli", "--db", str(db)])


def _url_host(host: str) -> str:
    """A host as it appears in a URL or a ``Host`` header (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _names_of_this_machine() -> set[str]:
    """What a browser elsewhere may call this machine when the server listens on every
    address: its host names and their addresses."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except OSError:
            continue
    return {n for n in names if n}


def accepted_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values the server answers to: the loopback names, ``host``
    (and this machine's names when ``host`` is a wildcard address), with the port (and
    without it on port 80, where browsers leave it out)."""
    names = LOOPBACK | {host}
    if host in WILDCARD:
        names |= _names_of_this_machine()
    out = set()
    for name in names - WILDCARD:
        shown = _url_host(name).lower()
        out.add(f"{shown}:{port}")
        if port == 80:
            out.add(shown)
    return frozenset(out)


FRAMED = frozenset({"iframe", "frame", "embed", "object", "fencedframe"})
"""``Sec-Fetch-Dest`` values of a request for a page inside another page."""
OWN_SITE = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values of a request from our own page or typed by the user."""
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
"""Sent with every response: never framed, never a Referer carrying the token."""


@dataclass(frozen=True)
class Gate:
    """Who may use the server: the token's holder, through a name the server answers to,
    from the server's own page."""

    token: str
    hosts: frozenset[str]
    cookie: str
    """The cookie's name: random per start (browsers share cookies between ports)."""
    cookie_value: str
    """What the cookie holds: random per start, not the token (a cookie sent to another
    port of this host must not give away the URL)."""

    @classmethod
    def new(cls, token: str, hosts: frozenset[str]) -> Gate:
        return cls(token, hosts, f"coop_tui_{secrets.token_hex(8)}", secrets.token_urlsafe(32))

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None when it may go on."""
        host = (request.headers.get("Host") or "").lower()
        if host not in self.hosts:
            return f"Host {host!r} is not a name this server answers to"
        why = self._foreign(request, host)
        if why is not None:
            return why
        given = request.query.get("token")
        if given is not None:
            expected = self.token
        else:
            given, expected = request.cookies.get(self.cookie), self.cookie_value
        if not given:
            return "no token (open the URL the server printed)"
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return "wrong token"
        return None

    @staticmethod
    def _foreign(request: web.Request, host: str) -> str | None:
        """Why a request comes from another page than ours (framed, another origin),
        or None. Browsers say where a request comes from in ``Sec-Fetch-*`` and
        ``Origin``; a client that sends neither is judged by the token alone."""
        dest = request.headers.get("Sec-Fetch-Dest", "").lower()
        if dest in FRAMED:
            return f"a request for a page inside another page (Sec-Fetch-Dest {dest!r})"
        site = request.headers.get("Sec-Fetch-Site", "").lower()
        if site and site not in OWN_SITE:
            return f"a request from another origin (Sec-Fetch-Site {site!r})"
        origin = request.headers.get("Origin")
        if (request.path == "/ws" or origin is not None) and origin != f"http://{host}":
            return f"a request from origin {origin!r}, not this server's page"
        return None

    def middleware(self) -> Any:
        """The aiohttp middleware that refuses what :meth:`refusal` names (403, one line
        on stderr) and keeps the token in a cookie once the URL brought it."""

        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            why = self.refusal(request)
            if why is not None:
                peer = request.remote or "?"
                line = f"coop-tui serve: refused {request.method} {request.path} from {peer}: {why}"
                # the path and headers are the requester's: shown escaped, and cut
                print(terminal_text(scrub(line), markup=False, limit=500), file=sys.stderr,
                      flush=True)
                return web.Response(status=403, headers=SECURITY_HEADERS,
                                    text="403: forbidden; open the URL coop-tui serve printed\n")
            response = await handler(request)
            if not response.prepared:  # a websocket's handshake has gone out already
                response.headers.update(SECURITY_HEADERS)
                if "token" in request.query and request.path == "/":
                    response.set_cookie(self.cookie, self.cookie_value, httponly=True,
                                        samesite="Strict", path="/")
            return response

        return guard


class ScrubFilter(logging.Filter):
    """Masks registered secrets in a log record: aiohttp's access log writes each
    request line (``GET /?token=...``) and its ``Referer``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), ()
        for name, value in list(vars(record).items()):
            if isinstance(value, str) and name not in ("msg", "name", "levelname"):
                setattr(record, name, scrub(value))
        return True


def scrub_logs() -> None:
    """Scrub every handler the root logger writes to (textual-serve's rich handler), and
    keep its tracebacks from printing local variables (a token among them)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(ScrubFilter())
        if hasattr(handler, "tracebacks_show_locals"):
            handler.tracebacks_show_locals = False


def serve_command(db: Path, *, host: str, port: int, token: str | None = None) -> int:
    if not 0 < port < 65536:
        return fail(f"--port: {port} is not a TCP port; give 1-65535")
    if token is not None and not TOKEN_FORM.fullmatch(token):
        return fail("--token: give 16 to 256 characters from letters, digits and . _ ~ - "
                    "(or leave it out for a random one)")
    try:
        from textual_serve.server import Server
    except ImportError:
        return fail(INSTALL_HINT)
    if host not in LOOPBACK:
        print(
            f"coop-tui: warning: serving on {host}: anyone who can reach port {port} and "
            "holds the token can use the TUI, start runs and spend the API credit of the "
            "keys in this environment",
            file=sys.stderr,
        )
    gate = Gate.new(token or secrets.token_urlsafe(32), accepted_hosts(host, port))
    register_secret(gate.token)  # every log line, refusal and traceback is scrubbed of it
    register_secret(gate.cookie_value)
    shown_host = "127.0.0.1" if host in WILDCARD else _url_host(host)
    open_url = f"http://{shown_host}:{port}/?token={gate.token}"

    class CoopServer(Server):  # type: ignore[misc]
        """textual-serve's server behind the gate, saying when a session starts and ends."""

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(gate.middleware())
            return app

        def serve(self, debug: bool = False) -> None:
            """textual-serve's ``serve``, printing the URL to open once the port listens
            (its own line comes before, while the port is still closed)."""
            self.debug = debug
            self.initialize_logging()
            scrub_logs()
            loop = asyncio.new_event_loop()
            with contextlib.suppress(NotImplementedError):  # Windows' loops have none
                loop.add_signal_handler(signal.SIGINT, self.request_exit)
                loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False,
                        loop=loop, print=lambda *_: print(f"open {open_url}", flush=True))

        async def handle_index(self, request: web.Request) -> Any:
            # the page's websocket and files on the name the browser used (the gate has
            # checked it): its cookie and origin then belong to the same host
            page = copy.copy(self)
            page.public_url = f"http://{request.host}"
            return await Server.handle_index(page, request)

        async def handle_websocket(self, request: Any) -> Any:
            peer = request.remote or "?"
            print(f"session started ({peer})", flush=True)
            try:
                return await super().handle_websocket(request)
            finally:
                print(f"session ended ({peer})", flush=True)

    server = CoopServer(app_command(db), host=host, port=port, title="coop-tui")
    server.serve()
    return 0
