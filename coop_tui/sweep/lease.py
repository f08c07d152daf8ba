"""One writer per run: the lease a sweep (or a judge pass) holds while it writes a run."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time

from coop_tui.errors import SpecError
from coop_tui.store import LEASE_STALE_S, Store

LEASE_HEARTBEAT_S = 5.0
"""How often a running sweep renews its lease."""


class RunLease:
    """The right to write a run's matches, held by one process at a time.

    A row in ``run_leases`` (run id, pid, host, heartbeat) is taken when a sweep starts or
    resumes, renewed every few seconds and removed at the end. A second process finding a
    live lease is refused; a lease whose process is dead (same host) or whose heartbeat is
    older than ``LEASE_STALE_S`` is taken over, so a ``kill -9`` never locks a run.
    """

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.token = secrets.token_hex(8)
        self.held = False

    def acquire(self, *, field: str = "--resume", then: str = "resume") -> None:
        """Take the lease, or refuse (SpecError on ``field``; ``then`` says what to do
        once the other process is gone: a sweep resumes, a judge pass is run again)."""
        holder = self.store.take_lease(self.run_id, self.token, stale_after=LEASE_STALE_S)
        if holder is not None:
            age = max(0.0, time.time() - float(holder["heartbeat"]))
            raise SpecError(
                field,
                f"run {self.run_id} is being played by process {holder['pid']} on "
                f"{holder['host']} (last heartbeat {age:.0f} s ago); wait for it to finish or "
                f"stop it, then {then}. One run has one writer.",
            )
        self.held = True

    async def keep_alive(self) -> None:
        while True:
            await asyncio.sleep(LEASE_HEARTBEAT_S)
            with contextlib.suppress(Exception):  # a busy database skips one beat
                self.store.renew_lease(self.run_id, self.token)

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(Exception):
                self.store.release_lease(self.run_id, self.token)
            self.held = False
