"""The agents of a run: built from the roster under shared limits, prepared, closed.

A run owns its agents from :func:`build_agents` to :func:`close_agents`; a match only
borrows them. Request limits are shared here, once, so a match never counts requests.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from coop_tui.agents.batch import QUIET_S, BatchHub, BatchLedger
from coop_tui.agents.factory import build_agent
from coop_tui.events import BatchProgress, EventBus
from coop_tui.spec import Sweep, batched
from coop_tui.store import Store
from coop_tui.sweep.summary import RunSummary


class Limiter:
    """Holds a global slot and a per-provider slot for one request."""

    def __init__(self, *semaphores: asyncio.Semaphore) -> None:
        self._sems = [s for s in semaphores if s is not None]

    async def __aenter__(self) -> Limiter:
        for s in self._sems:
            await s.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in reversed(self._sems):
            s.release()


def build_agents(sweep: Sweep, names: set[str]) -> dict[str, Any]:
    """One agent object per roster name, sharing global and per-provider limits."""
    spec = sweep.spec
    global_sem = asyncio.Semaphore(spec.concurrency)
    provider_sems: dict[str, asyncio.Semaphore] = {}
    agents = {}
    for name in sorted(names):
        a = spec.agents[name]
        # An LLM agent's max_concurrency is enforced per endpoint by its endpoint pool.
        own = None if a.kind == "llm" else a.max_concurrency
        limit = own or spec.provider_limits.get(a.provider)
        sem = None
        if limit:
            key = f"{a.provider}:{name}" if own else a.provider
            sem = provider_sems.setdefault(key, asyncio.Semaphore(limit))
        # The provider slot first: a request queued behind a slow provider must not hold
        # a global slot that another provider's request could use.
        limiter = Limiter(sem, global_sem) if sem else Limiter(global_sem)
        agents[name] = build_agent(
            name, a, limiter=limiter, base=sweep.source.parent if sweep.source else None,
            concurrency=spec.concurrency, batch=batched(a, spec),
        )
    return agents


def seated_names(sweep: Sweep) -> set[str]:
    """The agents this process seats (a slice of the sweep may leave some out)."""
    return {n for cell, k in zip(sweep.cells, sweep.slots_by_cell(), strict=True) if k
            for n in cell.seats}


def start_batches(agents: dict[str, Any], store: Store, bus: EventBus,
                  gather: float = QUIET_S) -> BatchHub | None:
    """One :class:`BatchHub` for the run's batch agents (None when no agent batches): their
    requests go out together, recorded in the run's database."""
    batching = [a for a in agents.values() if getattr(a, "batch", False)]
    if not batching:
        return None
    hub = BatchHub(BatchLedger(store.path, store.commit_pending), quiet=gather,
                   notify=lambda pending, done, oldest: bus.emit(BatchProgress(pending, done, oldest)))
    for agent in batching:
        agent.batcher = hub
    return hub


def listen_for_notices(agents: dict[str, Any], bus: EventBus, summary: RunSummary) -> None:
    """Route what agents' endpoint pools notice to the bus (progress) and the summary."""

    def heard(notice: Any) -> None:
        summary.notices.append(notice.message)
        bus.emit(notice)

    for agent in agents.values():
        if hasattr(agent, "on_notice"):
            agent.on_notice = heard


async def close_agents(agents: Iterable[Any]) -> None:
    """Close what agents hold open on this loop (an LLM agent's HTTP session): the run is
    over, and a session left to the garbage collector warns "Unclosed client session"."""
    for agent in agents:
        close = getattr(agent, "aclose", None)
        if callable(close):
            with contextlib.suppress(Exception):
                await close()


async def prepare_agents(agents: Iterable[Any]) -> None:
    """Let agents load what they need (client libraries, model files) before any match."""
    await asyncio.gather(
        *(agent.prepare() for agent in agents if callable(getattr(agent, "prepare", None)))
    )
