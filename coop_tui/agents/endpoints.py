"""Several servers for one model: per-endpoint concurrency, least-busy routing, failover,
and concurrency that adapts to servers which cannot stream in parallel.

Why our own pool and not litellm's Router: the Router routes among deployments, but every
request then goes through litellm (about three times the client CPU of our streaming path,
see ``benchmarks/bench_clients.py``), and it does not notice a server that cuts concurrent
streams. This module chooses an endpoint and keeps its books, and holds the pool's HTTP session
(one aiohttp session per pool and event loop); the agent sends the request.

Rules, per endpoint:

* at most ``limit`` requests at once (the agent's ``max_concurrency``, else the sweep's
  concurrency); a request goes to the endpoint with the lowest load ``in_flight / limit``;
* a connection failure marks it down for a while (5 s, doubling up to a minute); requests
  go to the others meanwhile, and after the pause one request probes it again;
* when every endpoint is down and each has failed again after its first rest, requests
  fail at once (:class:`EndpointsDown`, naming the cause) instead of waiting out the
  rests: a sweep on a dead server fails its matches in moments (``--resume`` asks them
  again), while a server that restarts within its first rest loses nothing;
* streams that end without a finish reason while other streams run on the same endpoint
  (llama.cpp's server interrupts a running stream when a new request arrives) lower its
  limit by half, down to 1, and a notice says why and which setting to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# host_of lives with the other URL helpers in transport.py (importable from here too)
from coop_tui.agents.transport import host_of, new_session
from coop_tui.events import Event

DOWN_FOR = 5.0
"""Seconds an endpoint rests after a connection failure (doubles per failure, capped)."""
MAX_DOWN_FOR = 60.0
CUTS_BEFORE_LOWERING = 2
"""Concurrent cut streams that lower an endpoint's concurrency."""
CLEAN_RUN_FORGIVES = 20
"""Completed streams in a row after which earlier cuts are forgotten."""
FAILS_BEFORE_GIVING_UP = 2
"""Connection failures in a row (the first, then the probe after its rest) after which an
endpoint's requests fail at once while it rests, when no other endpoint is up."""


class EndpointsDown(ConnectionError):
    """Every endpoint of the pool is down and was down again after resting: the request
    is not sent. The message carries the last failure's cause."""


@dataclass(frozen=True)
class EndpointNotice(Event):
    """Something the user should know about an endpoint (shown in progress and summary)."""

    agent: str
    endpoint: str
    message: str


def public_url(url: str) -> str:
    """The URL without user:password, for messages and notices."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass
class Endpoint:
    """One server and its books."""

    url: str
    limit: int
    configured: int
    in_flight: int = 0
    down_until: float = 0.0
    down_for: float = DOWN_FOR
    cuts: int = 0
    clean: int = 0
    sent: int = 0
    completed: int = 0
    failed: int = 0
    failures_in_row: int = 0
    """Connection failures since the last completed request."""
    down_cause: str = ""
    """Why the last connection failed (refused, DNS, TLS ...), for the fail-fast message."""
    down_mark: int = 0
    """``sent`` when the last failure was noticed: failures of requests sent before it
    are the same outage, not a new one."""

    @property
    def host(self) -> str:
        return host_of(self.url)

    def load(self) -> float:
        return self.in_flight / self.limit


@dataclass
class Lease:
    """An endpoint slot held for one request; ``concurrent`` is True when another request
    ran on the same endpoint at any moment of this one."""

    endpoint: Endpoint
    index: int
    concurrent: bool = False
    released: bool = False
    cause: str = ""
    """Set by the agent when the request could not connect: why."""


@dataclass
class EndpointPool:
    """Routes requests among ``urls`` (see the module docstring)."""

    urls: Sequence[str]
    limit: int
    agent: str = ""
    notify: Callable[[EndpointNotice], None] | None = None
    endpoints: list[Endpoint] = field(init=False)
    notices: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.limit = max(1, int(self.limit))
        self.endpoints = [Endpoint(u, self.limit, self.limit) for u in self.urls]
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._seen: set[str] = set()
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    # -- HTTP ------------------------------------------------------------------------------

    def http_session(self, headers: Callable[[], dict[str, str]] | None = None) -> Any:
        """The pool's aiohttp session on the running loop (made on first use, sending
        ``headers()`` with every request; a session left on another loop is dropped: its
        connections belong to that loop)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop or self._session.closed:
            made = new_session(headers() if headers is not None else None)
            self._session, self._session_loop = made, loop
        return self._session

    async def aclose(self) -> None:
        """Close the session (on its own loop) and its kept-alive connections."""
        session, self._session = self._session, None
        loop, self._session_loop = self._session_loop, None
        if session is None or session.closed:
            return
        if loop is asyncio.get_running_loop():
            with contextlib.suppress(Exception):
                await session.close()
        elif loop is not None and not loop.is_closed() and loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(session.close(), loop)
        else:  # its loop is gone: nothing can be awaited there, detach quietly
            with contextlib.suppress(Exception):  # closing the connector closes the session
                session.connector._close()  # noqa: SLF001 - frees sockets without a loop

    def _given_up(self, now: float) -> Endpoint | None:
        """An endpoint that explains why requests fail at once now, or None (some
        endpoint is up, or one is still within its first rest)."""
        if not all(ep.down_until > now for ep in self.endpoints):
            return None
        if any(ep.failures_in_row < FAILS_BEFORE_GIVING_UP for ep in self.endpoints):
            return None
        return min(self.endpoints, key=lambda ep: ep.down_until)

    # -- acquiring -------------------------------------------------------------------------

    def _pick(self, now: float) -> Endpoint | None:
        best: Endpoint | None = None
        for ep in self.endpoints:
            if ep.in_flight >= ep.limit or ep.down_until > now:
                continue
            if best is None or ep.load() < best.load():
                best = ep
        return best

    async def acquire(self) -> Lease:
        """Wait for a slot on the least busy endpoint that is up.

        Waiters queue in order and a released slot wakes one of them (not all: with
        thousands of requests waiting, waking every one per release would cost quadratic
        time). An endpoint whose pause is over gets one probe request (its pause is
        extended while the probe runs); waiters wake up for that when the pause ends.
        """
        loop = asyncio.get_running_loop()
        first = True
        while True:
            lease = self.try_acquire()
            if lease is not None:
                return lease
            now = time.monotonic()
            dead = self._given_up(now)
            if dead is not None:
                wait = dead.down_until - now
                raise EndpointsDown(
                    f"{dead.down_cause or 'the endpoint is down'} (failed "
                    f"{dead.failures_in_row} times in a row; requests fail at once while it "
                    f"rests, next try in {wait:.0f} s)"
                )
            resting = [e.down_until - now for e in self.endpoints if e.down_until > now]
            waiter = loop.create_future()
            if first:
                self._waiters.append(waiter)
            else:  # woken but beaten to the slot: keep a place at the front
                self._waiters.appendleft(waiter)
            first = False
            try:
                if resting:
                    await asyncio.wait_for(asyncio.shield(waiter), min(resting) + 0.001)
                else:
                    await waiter
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: pass the turn on
                raise
            finally:
                if not waiter.done():
                    waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def try_acquire(self) -> Lease | None:
        """A slot at once when an endpoint is up and has one free (no waiting, no
        coroutine: the usual case of a sweep within its concurrency), else None."""
        now = time.monotonic()
        ep = self._pick(now)
        if ep is None:
            return None
        if ep.down_for > DOWN_FOR and ep.down_until:  # back from a pause: probe
            ep.down_until = now + ep.down_for
        return self._lease(ep)

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _lease(self, ep: Endpoint) -> Lease:
        ep.in_flight += 1
        ep.sent += 1
        return Lease(ep, ep.sent, concurrent=ep.in_flight > 1)

    # -- releasing -------------------------------------------------------------------------

    def release(self, lease: Lease, outcome: str) -> None:
        """Return a slot. ``outcome``: ok, down (cannot connect), cut (no finish reason),
        or error (any other failure: it says nothing about the endpoint's health)."""
        if lease.released:
            return
        lease.released = True
        ep = lease.endpoint
        ep.in_flight -= 1
        # another request started on this endpoint while this one ran
        lease.concurrent = lease.concurrent or ep.sent > lease.index
        if outcome == "ok":
            ep.completed += 1
            ep.failures_in_row = 0
            ep.down_for = DOWN_FOR
            ep.down_until = 0.0
            ep.clean += 1
            if ep.clean >= CLEAN_RUN_FORGIVES:
                ep.cuts = 0
        else:
            ep.failed += 1
            ep.clean = 0
        if outcome == "down" and lease.index > ep.down_mark:
            # sent after the last failure was noticed (the first one, or the probe after a
            # rest): requests that were already under way when it failed add nothing
            ep.failures_in_row += 1
            ep.down_cause = lease.cause or ep.down_cause
            ep.down_until = time.monotonic() + ep.down_for
            ep.down_mark = ep.sent
            if len(self.endpoints) > 1:
                self._notice(
                    ep,
                    f"{ep.host} refused or dropped the connection; it rests {ep.down_for:g} s "
                    "and its requests go to the other endpoints",
                    once_per="down",
                )
            ep.down_for = min(ep.down_for * 2, MAX_DOWN_FOR)
            if self._given_up(time.monotonic()) is not None:
                self._wake_all()  # waiters fail at once rather than wait out the rest
                return
        elif outcome == "cut" and lease.concurrent:
            ep.cuts += 1
            if ep.cuts >= CUTS_BEFORE_LOWERING and ep.limit > 1:
                before = ep.limit
                ep.limit = max(1, ep.limit // 2)
                ep.cuts = 0
                self._notice(
                    ep,
                    f"{ep.host} ended streams without a finish reason while other streams ran "
                    f"on it: its concurrency was lowered from {before} to {ep.limit}. Likely "
                    "cause: the server interrupts a running stream when a new request arrives "
                    "(llama.cpp's server does so by default: start it with "
                    "--interrupt_requests False), or it cannot serve parallel requests. "
                    f"Set max_concurrency = {ep.limit} on agent {self.agent!r} to start there.",
                )
        self._wake()

    # -- reporting -------------------------------------------------------------------------

    def _notice(self, ep: Endpoint, message: str, once_per: str | None = None) -> None:
        text = f"agent {self.agent!r}: {message}" if self.agent else message
        if once_per is not None:
            key = f"{once_per}:{ep.url}"
            if key in self._seen:
                return
            self._seen.add(key)
        self.notices.append(text)
        if self.notify is not None:
            self.notify(EndpointNotice(self.agent, public_url(ep.url), text))

    def stats(self) -> list[dict[str, Any]]:
        """Per endpoint: sent, completed, failed, current and configured limits."""
        return [
            {
                "endpoint": public_url(ep.url),
                "sent": ep.sent,
                "completed": ep.completed,
                "failed": ep.failed,
                "limit": ep.limit,
                "configured": ep.configured,
            }
            for ep in self.endpoints
        ]
