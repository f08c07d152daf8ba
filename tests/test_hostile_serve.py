"""Hostile cases against ``coop-tui serve``: only the person who started it gets in.

A real server process on a free port of 127.0.0.1, real HTTP requests and websocket
handshakes (aiohttp's client). The attacks: a page on another site opening the websocket
(foreign ``Origin``), a rebound DNS name pointing at 127.0.0.1 (foreign ``Host``), a
request without the token or with a wrong one. Each gets 403, one line on stderr, and no
app process; the URL the server printed gets the page and a live session.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")

COOP_TUI = Path(sys.executable).parent / "coop-tui"
EVENT_TIMEOUT = 180.0
"""A bound on waits for events that normally take seconds (a busy machine is slow)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    url: str
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    """Notified for every line read from the server's output."""

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def children(self) -> list[str]:
        """The server's child processes now (an app process per live session)."""
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return path.read_text().split()

    def sessions(self) -> int:
        return sum("session started" in line for line in self.out)


def _follow(stream, into: list[str], arrived: threading.Condition) -> None:
    def read() -> None:
        for line in iter(stream.readline, ""):
            with arrived:
                into.append(line)
                arrived.notify_all()

    threading.Thread(target=read, daemon=True).start()


def _start(tmp: Path, *extra: str) -> Served:
    port = _free_port()
    proc = subprocess.Popen(
        [str(COOP_TUI), "serve", "--port", str(port), "--db", str(tmp / "coop.db"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
    )
    served = Served(proc, port, "")
    for line in iter(proc.stdout.readline, ""):  # the URL is printed once it listens
        served.out.append(line)
        if line.startswith("open http"):
            served.url = line.split(" ", 1)[1].strip()
            break
    else:
        _stop(proc)
        raise AssertionError(f"serve never printed its URL: {''.join(served.out)}{proc.stderr.read()}")
    _follow(proc.stdout, served.out, served.arrived)
    _follow(proc.stderr, served.err, served.arrived)
    return served


def _stop(proc: subprocess.Popen[str]) -> None:
    """End the server this test started, and its children (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = _start(tmp_path_factory.mktemp("serve"))
    try:
        yield server
    finally:
        _stop(server.proc)


def _refusals(served: Served, at_least: int = 0) -> list[str]:
    """stderr's refusal lines, once there are ``at_least`` (the server writes each before
    its 403; this test's reader thread may not have read it yet)."""
    def lines() -> list[str]:
        return [line for line in served.err if "refused" in line]

    with served.arrived:
        assert served.arrived.wait_for(lambda: len(lines()) >= at_least, EVENT_TIMEOUT), served.err
        return lines()


async def _page_status(url: str, headers: dict[str, str] | None = None) -> int:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers or {}) as response:
        return response.status


async def _handshake_status(served: Served, query: str = "", headers: dict[str, str] | None = None,
                            ) -> int:
    """The status of a websocket handshake to /ws (101 when a session was opened)."""
    url = f"http://127.0.0.1:{served.port}/ws{query}"
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, headers=headers or {}):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def _token(served: Served) -> str:
    return served.url.split("token=", 1)[1]


async def _page_cookie(served: Served) -> tuple[str, str]:
    """The name and value of the cookie the printed URL's page sets."""
    async with aiohttp.ClientSession() as http, http.get(served.url) as page:
        assert page.status == 200
        (morsel,) = page.cookies.values()
        return morsel.key, morsel.value


def _cookie(served: Served, value: str | None = None) -> dict[str, str]:
    """A ``Cookie`` header as the browser sends it after loading the printed URL
    (``value`` instead of the cookie's own)."""
    name, own = asyncio.run(_page_cookie(served))
    return {"Cookie": f"{name}={own if value is None else value}"}


def _assert_refused(served: Served, statuses: list[int], before: int, why: str) -> None:
    assert statuses == [403] * len(statuses)
    lines = _refusals(served, before + len(statuses))[before:]
    assert len(lines) == len(statuses), served.err
    assert all(why in line for line in lines), lines
    assert served.sessions() == 0 and served.children() == [], served.out


def test_the_printed_url_holds_a_random_token(served: Served) -> None:
    assert served.url.startswith(f"http://127.0.0.1:{served.port}/?token=")
    assert len(_token(served)) >= 32


def test_no_token_is_refused_page_and_websocket(served: Served) -> None:
    before = len(_refusals(served))
    statuses = [
        asyncio.run(_page_status(f"{served.origin}/")),
        asyncio.run(_page_status(f"{served.origin}/static/js/textual.js")),
        asyncio.run(_handshake_status(served, headers={"Origin": served.origin})),
    ]
    _assert_refused(served, statuses, before, "no token")


def test_a_wrong_token_is_refused_page_and_websocket(served: Served) -> None:
    before = len(_refusals(served))
    wrong = _token(served)[:-1] + ("A" if _token(served)[-1] != "A" else "B")
    statuses = [
        asyncio.run(_page_status(f"{served.origin}/?token={wrong}")),
        asyncio.run(_handshake_status(served, f"?token={wrong}", {"Origin": served.origin})),
        asyncio.run(_handshake_status(served, headers={
            "Origin": served.origin, **_cookie(served, wrong)})),
        # the cookie holds a value of its own: the URL's token in it is wrong too
        asyncio.run(_handshake_status(served, headers={
            "Origin": served.origin, **_cookie(served, _token(served))})),
    ]
    _assert_refused(served, statuses, before, "wrong token")


def test_a_foreign_host_is_refused_even_with_the_token(served: Served) -> None:
    """DNS rebinding: evil.example re-resolved to 127.0.0.1 reaches the port, but its page
    names its own domain in Host (and would not hold our cookie anyway)."""
    before = len(_refusals(served))
    rebound = f"evil.example:{served.port}"
    statuses = [
        asyncio.run(_page_status(served.url, {"Host": rebound})),
        asyncio.run(_handshake_status(served, f"?token={_token(served)}",
                                      {"Host": rebound, "Origin": f"http://{rebound}"})),
    ]
    _assert_refused(served, statuses, before, "not a name this server answers to")


def test_a_refusal_line_shows_a_hostile_path_escaped(served: Served) -> None:
    """The refused path is the requester's: its escape sequence is shown, not obeyed."""
    before = len(_refusals(served))
    status = asyncio.run(_page_status(f"{served.origin}/%1b]0;pwned%07x"))
    _assert_refused(served, [status], before, "no token")
    line = _refusals(served)[-1]
    assert "\x1b" not in line and "\x07" not in line
    assert "\\x1b]0;pwned\\x07x" in line


def test_a_websocket_from_a_foreign_origin_is_refused_even_with_the_token(served: Served) -> None:
    cookie = _cookie(served)
    before = len(_refusals(served))
    statuses = [
        asyncio.run(_handshake_status(served, headers={**cookie, "Origin": "http://evil.example"})),
        asyncio.run(_handshake_status(served, headers={**cookie, "Origin": "null"})),
        asyncio.run(_handshake_status(served, headers=cookie)),  # no Origin at all
        asyncio.run(_handshake_status(served, headers={  # same host, another port
            **cookie, "Origin": f"http://127.0.0.1:{served.port + 1}"})),
    ]
    _assert_refused(served, statuses, before, "not this server's page")


async def _headers(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers or {}) as response:
        return response.status, dict(response.headers)


def test_no_page_of_the_server_can_be_framed(served: Served) -> None:
    """A page on another port of 127.0.0.1 framing the TUI could click in it: the browser
    is told never to frame any answer, the page's and a refusal's alike."""
    for url in (served.url, f"{served.origin}/static/js/textual.js", f"{served.origin}/"):
        status, headers = asyncio.run(_headers(url))
        assert headers.get("X-Frame-Options") == "DENY", (url, status)
        assert "frame-ancestors 'none'" in headers.get("Content-Security-Policy", ""), url
        assert headers.get("Referrer-Policy") == "no-referrer", url  # no token in a Referer


def test_a_framed_or_other_origin_request_is_refused_even_with_the_cookie(served: Served) -> None:
    """Browsers send a cookie to every port of a host, and SameSite=Strict lets a page on
    another port of 127.0.0.1 (same site) send ours: what the browser says about where a
    request comes from decides, with the cookie or the token."""
    cookie = _cookie(served)
    other_port = f"http://127.0.0.1:{served.port + 1}"
    before = len(_refusals(served))
    statuses = [
        asyncio.run(_page_status(f"{served.origin}/", {**cookie, "Sec-Fetch-Dest": "iframe"})),
        asyncio.run(_page_status(served.url, {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "same-origin"})),
        asyncio.run(_page_status(f"{served.origin}/", {**cookie, "Sec-Fetch-Site": "same-site"})),
        asyncio.run(_page_status(served.url, {"Sec-Fetch-Site": "cross-site"})),
        asyncio.run(_page_status(f"{served.origin}/", {**cookie, "Origin": other_port})),
        asyncio.run(_handshake_status(served, headers={
            **cookie, "Origin": served.origin, "Sec-Fetch-Site": "same-site"})),
        # a value no browser sends today is not taken for our own page
        asyncio.run(_page_status(served.url, {"Sec-Fetch-Site": "some-future-value"})),
    ]
    _assert_refused(served, statuses, before, "")
    lines = _refusals(served)[before:]
    assert sum("Sec-Fetch-Dest 'iframe'" in line for line in lines) == 2, lines
    assert sum("Sec-Fetch-Site" in line for line in lines) == 4, lines
    assert "not this server's page" in lines[4], lines
    # what a browser sends for the printed URL, its page's files and its websocket goes on
    assert asyncio.run(_page_status(served.url, {"Sec-Fetch-Site": "none",
                                                 "Sec-Fetch-Dest": "document"})) == 200
    assert asyncio.run(_page_status(f"{served.origin}/static/js/textual.js", {
        **cookie, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Dest": "script"})) == 200


def test_the_cookie_is_not_the_token_nor_named_by_the_port(served: Served) -> None:
    name, value = asyncio.run(_page_cookie(served))
    assert value != _token(served) and len(value) >= 32
    assert str(served.port) not in name
    before = len(_refusals(served))  # the old per-port cookie holding the token: refused
    status = asyncio.run(_page_status(f"{served.origin}/", {
        "Cookie": f"coop_tui_token_{served.port}={_token(served)}"}))
    _assert_refused(served, [status], before, "no token")


def test_the_token_never_reaches_the_log(served: Served) -> None:
    """aiohttp's access log writes each request line: the URL's token is masked in it."""
    assert asyncio.run(_page_status(served.url)) == 200
    with served.arrived:
        assert served.arrived.wait_for(
            lambda: any("GET /?token=" in line for line in served.out + served.err),
            EVENT_TIMEOUT), served.out
        # every line but the one that prints the URL to open
        logged = "".join(line for line in served.out + served.err
                         if not line.startswith("open http"))
    assert _token(served) not in logged
    assert "GET /?token=***" in logged


def test_an_oversized_request_is_refused_and_the_server_lives_on(served: Served) -> None:
    huge = "x" * 100_000
    assert asyncio.run(_page_status(f"{served.url}&pad={huge}")) >= 400
    assert asyncio.run(_page_status(served.url, {"X-Pad": huge})) >= 400
    assert asyncio.run(_page_status(served.url)) == 200  # still serving
    assert served.sessions() == 0 and served.children() == []


def test_another_servers_token_and_cookie_are_refused(served: Served, tmp_path: Path) -> None:
    """A second server (a restart, or another port of the same host) has its own token and
    cookie: the browser sends both servers' cookies to each, and each takes only its own."""
    other = _start(tmp_path)
    try:
        theirs = _cookie(other)
    finally:
        _stop(other.proc)
    assert _token(other) != _token(served) and theirs != _cookie(served)
    before = len(_refusals(served))
    statuses = [asyncio.run(_page_status(f"{served.origin}/?token={_token(other)}")),
                asyncio.run(_page_status(f"{served.origin}/", theirs))]
    _assert_refused(served, statuses, before, "token")
    both = {"Cookie": f"{theirs['Cookie']}; {_cookie(served)['Cookie']}"}
    assert asyncio.run(_page_status(f"{served.origin}/", both)) == 200


async def _open_session(served: Served) -> tuple[int, str, bytes]:
    """Load the printed URL as a browser does, then open the websocket with the cookie the
    page set; returns the page's status, its cookie flags and the app's first bytes."""
    jar = aiohttp.CookieJar(unsafe=True)  # cookies of an IP-address host
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get(served.url) as page:
            status = page.status
            flags = page.headers.get("Set-Cookie", "")
        ws_url = f"{served.origin}/ws?width=80&height=24"
        async with http.ws_connect(ws_url, headers={"Origin": served.origin}) as ws:
            async with asyncio.timeout(EVENT_TIMEOUT):
                async for msg in ws:  # the app's screen arrives once its process runs
                    if msg.type == aiohttp.WSMsgType.BINARY and msg.data:
                        return status, flags, msg.data
    raise AssertionError("the session ended before the app sent anything")


@pytest.mark.slow
def test_the_printed_url_gets_the_page_and_a_live_session(tmp_path: Path) -> None:
    served = _start(tmp_path)
    try:
        status, flags, first = asyncio.run(_open_session(served))
    finally:
        _stop(served.proc)
    assert status == 200
    assert "HttpOnly" in flags and "SameSite=Strict" in flags
    assert first
    assert served.sessions() == 1, served.out
    assert _refusals(served) == [], served.err


def test_a_given_token_is_used_and_a_short_one_refused(tmp_path: Path) -> None:
    mine = "my-own-token-0123456789"
    served = _start(tmp_path, "--token", mine)
    try:
        assert served.url == f"http://127.0.0.1:{served.port}/?token={mine}"
        assert asyncio.run(_page_status(served.url)) == 200
    finally:
        _stop(served.proc)
    short = subprocess.run([str(COOP_TUI), "serve", "--token", "abc", "--port", str(_free_port()),
                            "--db", str(tmp_path / "coop.db")], capture_output=True, text=True,
                           timeout=120)
    assert short.returncode == 2
    assert "--token" in short.stderr
