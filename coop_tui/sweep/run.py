"""A run of a sweep, as four stages: open the run, open its agents, play, close.

:func:`run_sweep` reads as Inspect's task run does: :func:`open_run` (create or resume
the run, take its lease, find the matches it already holds), :func:`open_agents`,
:func:`play_stages` (a :class:`MatchPool` of workers, stage after stage) and
:func:`close_run` (the lease and the agents given back, ``RunDone``). Like Axelrod's
``Tournament``, it schedules matches and knows no mechanism, strategy or paper.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coop_tui.agents.batch import BatchHub
from coop_tui.designs import DesignBook
from coop_tui.engine import MatchContext, let_loop_run
from coop_tui.errors import SpecError, failure_summary
from coop_tui.events import EventBus, RunDone, RunProgress, RunStarted
from coop_tui.inputs import changed_input
from coop_tui.prompts import PromptRenderer
from coop_tui.redact import scrub
from coop_tui.sources import record as source_record
from coop_tui.spec import Cell, Sweep, estimate_decisions, public_spec
from coop_tui.store import Store
from coop_tui.sweep.cell import _templates, cell_renderer, play_cell
from coop_tui.sweep.lease import RunLease
from coop_tui.sweep.run_agents import (
    build_agents,
    close_agents,
    listen_for_notices,
    prepare_agents,
    seated_names,
    start_batches,
)
from coop_tui.sweep.summary import RunSummary, SummaryCounter


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


async def run_sweep(
    sweep: Sweep,
    store: Store,
    *,
    bus: EventBus | None = None,
    resume: bool = False,
    concurrency: int | None = None,
    run_id: str | None = None,
    stop: asyncio.Event | None = None,
    agents: dict[str, Any] | None = None,
    kind: str = "sweep",
    pause: asyncio.Event | None = None,
    on_context: Callable[[MatchContext], None] | None = None,
    match_workers: int | None = None,
) -> RunSummary:
    """Play every match of the sweep that the run does not hold yet.

    ``pause`` (cleared = paused) and ``on_context`` reach every match's context (the TUI
    pauses and stops live matches through them); ``match_workers`` caps how many matches
    run at once (the TUI follows one match at a time).
    """
    if concurrency is not None:
        sweep.spec.concurrency = concurrency
    renderer = PromptRenderer(_templates(sweep))
    base = sweep.source.parent if sweep.source else None
    for cell in sweep.cells:  # a bad folder of one's own wording stops before the run is written
        cell_renderer(renderer, cell, base)
    bus = bus or EventBus()
    run = open_run(sweep, store, bus, resume=resume, run_id=run_id, kind=kind)
    agents = await open_agents(sweep, run, bus, agents)
    hub = start_batches(agents, store, bus, sweep.spec.batch_gather)
    started = time.perf_counter()
    bus.emit(RunStarted(run.run_id, sweep.name, sweep.total_matches, estimate_decisions(sweep),
                        public_spec(sweep.spec)))
    pool = MatchPool(
        sweep, store, bus, agents, run.summary, stop=stop or asyncio.Event(), hub=hub,
        renderer=renderer, base=base, pause=pause, on_context=on_context,
    )
    heartbeat = asyncio.create_task(run.lease.keep_alive())
    n_workers = max(1, min(run.summary.matches_total - run.summary.matches_skipped,
                           match_workers or sweep.spec.concurrency * 2))
    pool.progress()
    # What is alive now (modules, spec, agents) outlives the run: the cyclic collector
    # need not re-scan it in every full collection while the matches run (a strategy
    # tournament spent a tenth of its time there). Given back to it when the run ends.
    gc.freeze()
    store.begin_grouped_commits()  # one commit per 50 ms of answers while matches play
    try:
        run.summary.status = await play_stages(pool, sweep, run.done_keys, n_workers)
    except BaseException as exc:
        run.interrupted(exc, bus)
        raise
    finally:
        await close_run(run, store, hub, agents, heartbeat, started)
    run.finish(bus)
    return run.summary


# ----------------------------------------------------------------- open: the run and its agents
@dataclass
class OpenRun:
    """A run being played: its id, summary and lease, the keys of the matches it already
    holds, and its subscriptions to the bus (the store's first: it goes last)."""

    run_id: str
    summary: RunSummary
    lease: RunLease
    done_keys: set[str]
    unsubscribe: list[Callable[[], None]]

    def interrupted(self, exc: BaseException, bus: EventBus) -> None:
        """An exception ends the run: record why (RunDone), without masking ``exc``."""
        stopped = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
        self.summary.status = "stopped" if stopped else "failed"
        reason = _interruption(exc)
        self.summary.errors.append(reason)
        with contextlib.suppress(Exception):  # a full or broken database must not mask exc
            bus.emit(RunDone(self.run_id, self.summary.status, reason))

    def finish(self, bus: EventBus) -> None:
        """The run ended by itself (all played, stopped or out of budget): ``RunDone`` with
        what went wrong, then the store stops listening."""
        summary = self.summary
        error = "; ".join(summary.errors[:3]) or (
            "stopped by the user" if summary.status == "stopped" else None
        )
        if summary.matches_failed:
            error = f"{summary.matches_failed} match(es) failed ({failure_summary(summary.failures)})" + (
                f"; {error}" if error else "")
        bus.emit(RunDone(self.run_id, summary.status, error))
        self.unsubscribe[0]()


def open_run(sweep: Sweep, store: Store, bus: EventBus, *, resume: bool, run_id: str | None,
             kind: str) -> OpenRun:
    """Create the run, or resume the one named (or the sweep's latest), under its lease;
    subscribe the store and the summary's counter; find the matches already done."""
    previous = None
    if resume:
        previous = store.run(run_id) if run_id else store.latest_sweep_run(sweep.name, sweep.shard)
    if previous is not None:
        check_resumable(previous, sweep)
        run_id = previous["id"]
        lease = RunLease(store, run_id)
        lease.acquire()  # a second live process on this run is refused (SpecError, exit 2)
        store.set_run_status(run_id, "running")
    else:
        run_id = run_id or new_run_id()
        store.create_run(
            run_id, sweep.name, kind=kind, seed=sweep.spec.seed, sweep_hash=sweep.hash,
            spec=public_spec(sweep.spec), inputs=sweep.inputs, shard=sweep.shard,
            sources=source_records(sweep),
        )
        lease = RunLease(store, run_id)
        lease.acquire()  # no contention on a new run; renewed while it plays, released at the end
    summary = RunSummary(run_id=run_id, name=sweep.name, status="running", matches_total=sweep.total_matches)
    if previous is not None:  # the budget covers the whole run, not each resume
        summary.cost_usd = store.run_cost(run_id)
    unsubscribe = [bus.subscribe(store, critical=True), bus.subscribe(SummaryCounter(summary))]
    status = store.match_status(run_id)
    # Matches come from a generator, never a list: a sweep of a million matches holds
    # only the grid points and the stored statuses in memory.
    done_keys = {key for key, st in status.items() if st == "done"}
    summary.matches_skipped = len(done_keys)  # the run's matches all come from this sweep
    summary.matches_done = summary.matches_skipped
    return OpenRun(run_id, summary, lease, done_keys, unsubscribe)


async def open_agents(sweep: Sweep, run: OpenRun, bus: EventBus,
                      agents: dict[str, Any] | None) -> dict[str, Any]:
    """The run's agents (built for the seats this process plays unless given), listened
    to and prepared. The lease is given back if they cannot be: no run never started
    holds one."""
    try:
        agents = agents if agents is not None else build_agents(sweep, seated_names(sweep))
        listen_for_notices(agents, bus, run.summary)
        await prepare_agents(agents.values())
    except BaseException:  # the lease must not outlive a run that never started
        run.lease.release()
        if agents is not None:
            await close_agents(agents.values())
        raise
    return agents


def check_resumable(previous: dict[str, Any], sweep: Sweep) -> None:
    """Refuse to continue a run with a sweep that has changed since: its stored results
    would silently mix two different experiments."""
    if previous.get("sweep_hash") and previous["sweep_hash"] != sweep.hash:
        raise SpecError(
            "--resume",
            f"the sweep {sweep.name!r} has changed since run {previous['id']} was started; "
            "run it without --resume (a new run reuses identical finished decisions), "
            "or give it another name",
        )

    _check_sources_unchanged(previous, sweep)
    recorded = json.loads(previous.get("inputs") or "{}")
    changed = changed_input(recorded)
    if changed is not None:
        path, what = changed
        raise SpecError(
            "--resume",
            f"{path} {what} since run {previous['id']} was started; its finished matches "
            "used the old version. Restore the file to continue the run, or run without "
            "--resume (a new run reuses identical finished decisions)",
        )


def source_records(sweep: Sweep) -> dict[str, dict[str, str]]:
    """What the run stores about each paper source it reads: {name: name, clone, commit,
    tested commit}."""
    return {name: source_record(loaded) for name, loaded in sorted(sweep.wording_sources.items())}


def _check_sources_unchanged(previous: dict[str, Any], sweep: Sweep) -> None:
    """A run that read a paper's code resumes only at the commit it began with: another
    commit may word the remaining matches differently from the finished ones."""
    recorded = json.loads(previous.get("sources") or "{}")
    for name, was in sorted(recorded.items()):
        now = sweep.wording_sources.get(name)
        if now is not None and now.commit != was.get("commit"):
            raise SpecError(
                "--resume",
                f"the {name} source at {now.root} is at commit {now.commit}, but run "
                f"{previous['id']} began with commit {was.get('commit')}; its finished matches "
                f"used that version. Check it out again (git -C {now.root} checkout "
                f"{was.get('commit')}) to continue the run, or run without --resume",
            )


# ----------------------------------------------------------------- play: stages of matches
class MatchPool:
    """The workers that play a run's matches, taking them in turn from one iterator.

    Strategy-only matches play one at a time, in the order they were taken. They never
    suspend, so several workers would interleave them arbitrarily: the store's summary
    fold would then see a cell's matches in another order, and float sums rounded by
    order differed from the same numbers aggregated live in match order. Taken in turn
    (an asyncio lock serves its waiters first come, first served) they finish in the
    order they started.
    """

    def __init__(
        self, sweep: Sweep, store: Store, bus: EventBus, agents: dict[str, Any],
        summary: RunSummary, *, stop: asyncio.Event, hub: BatchHub | None,
        renderer: PromptRenderer, base: Path | None, pause: asyncio.Event | None,
        on_context: Callable[[MatchContext], None] | None,
    ) -> None:
        self.sweep, self.store, self.bus, self.agents = sweep, store, bus, agents
        self.summary, self.stop, self.hub = summary, stop, hub
        self.renderer, self.base, self.pause, self.on_context = renderer, base, pause, on_context
        self.designs = DesignBook()  # one per run: designs shared by a tournament's matches
        self.strategy_turn = asyncio.Lock()
        self.pending: Iterator[tuple[Cell, int]] = iter(())

    def turn(self, cell: Cell) -> Any:
        only_strategies = all(self.agents[name].kind == "strategy" for name in cell.seats)
        return self.strategy_turn if only_strategies else contextlib.nullcontext()

    def progress(self) -> None:
        s = self.summary
        self.bus.emit(
            RunProgress(
                s.run_id, s.matches_done, s.matches_total, s.decisions, s.reused, s.invalid,
                s.retries + s.transport_retries, s.matches_failed, s.cost_usd,
            )
        )

    async def play(self, pending: Iterator[tuple[Cell, int]], n_workers: int) -> None:
        """Play every match ``pending`` yields with ``n_workers`` workers, until it is
        empty or the run is stopped."""
        self.pending = pending
        await asyncio.gather(*(self.worker() for _ in range(n_workers)))

    async def worker(self) -> None:
        summary = self.summary
        while not self.stop.is_set():
            try:
                cell, sample = next(self.pending)
            except StopIteration:
                return
            budget = self.sweep.spec.budget_usd
            if budget is not None and summary.cost_usd >= budget:
                summary.errors.append(f"budget of ${budget:g} reached; remaining matches not played")
                self.stop.set()
                return
            playing = self.hub.playing() if self.hub is not None else contextlib.nullcontext()
            async with self.turn(cell), playing:
                if self.stop.is_set():  # stopped while this match waited for its turn
                    return
                status = await play_cell(
                    cell, sample, run_id=summary.run_id, sweep=self.sweep, agents=self.agents,
                    bus=self.bus, store=self.store, renderer=self.renderer, base=self.base,
                    pause=self.pause, on_context=self.on_context, designs=self.designs,
                )
            summary.matches_done += 1
            if status == "failed":
                summary.matches_failed += 1
            self.progress()
            await let_loop_run()  # a strategy match never suspends: signals must get in


async def play_stages(pool: MatchPool, sweep: Sweep, done_keys: set[str], n_workers: int) -> str:
    """Play the matches not done yet, stage 0 first: each stage waits for the ones before
    it (a later stage reads what they stored). Returns the run's status. A sweep built by
    hand rather than by ``build_sweep`` has no stages worked out: it plays as one stage,
    never as none."""
    for stage_now in sorted(set(_stages(sweep))):
        await pool.play(_stage_matches(sweep, stage_now, done_keys), n_workers)
        if pool.stop.is_set():
            break
    if pool.stop.is_set():  # the user, or the budget, ended the run early
        return "stopped"
    return "failed" if pool.summary.matches_failed else "done"


def _stages(sweep: Sweep) -> list[int]:
    """Each experiment's stage (``build_sweep`` works them out where it checks the spec)."""
    return sweep.stages or [0] * len(sweep.spec.experiments)


def _stage_matches(sweep: Sweep, stage: int, done_keys: set[str]) -> Iterator[tuple[Cell, int]]:
    stage_of = _stages(sweep)
    return (
        (cell, sample) for cell, sample in sweep.matches()
        if stage_of[cell.experiment] == stage
        and (not done_keys or cell.match_key(sample) not in done_keys)
    )


# ----------------------------------------------------------------- close
async def close_run(run: OpenRun, store: Store, hub: BatchHub | None, agents: dict[str, Any],
                    heartbeat: asyncio.Task[None], started: float) -> None:
    """However the run ended: commit what the last window holds, give back the lease, the
    agents and the collector's frozen objects, stop counting."""
    store.end_grouped_commits()  # commits what the last window holds
    gc.unfreeze()
    heartbeat.cancel()
    run.lease.release()
    if hub is not None:  # its batches stay with the provider: --resume polls them
        await asyncio.shield(hub.aclose())
    await asyncio.shield(close_agents(agents.values()))
    run.summary.elapsed_s = time.perf_counter() - started
    for u in run.unsubscribe[1:]:
        u()


def _interruption(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return "interrupted"
    return scrub(f"{type(exc).__name__}: {exc}")
