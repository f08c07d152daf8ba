"""Headless sweeps: validate, estimate, run with rich progress bars, summarise.

The runner is just another listener on the engine's events; it never touches the
database itself. Validation happens before the database is opened, so bad input
writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column, Table
from rich.text import Text

from coop_tui import preflight
from coop_tui.agents.batch import BATCH_PRICE_FACTOR
from coop_tui.agents.llm import cost_for
from coop_tui.analysis.coopeval_tables import rate_run
from coop_tui.analysis.sections import store_sections
from coop_tui.calibration import call_speed, embedded_agents, wall_time_text
from coop_tui.channel import Publisher
from coop_tui.database import BUSY_TIMEOUT, check_database_path
from coop_tui.errors import database_message
from coop_tui.eta import CallClock
from coop_tui.events import (
    PER_ROUND_EVENTS,
    BatchProgress,
    DecisionDone,
    DirectDecisions,
    DirectRounds,
    Event,
    EventBus,
    MatchDone,
    MatchStarted,
    RunStarted,
    direct_decision_count,
)
from coop_tui.mechanisms._designs import shared_design_count, shared_designs_by_agent
from coop_tui.prompt_size import PromptSizes, check_prompt_sizes, measure_sync
from coop_tui.redact import scrub
from coop_tui.shards import Shard, apply_shard
from coop_tui.spec import SpecError, Sweep, api_keys, batched, decisions_per_match, load_sweep
from coop_tui.store import Store
from coop_tui.sweep import check_resumable, reasks, run_sweep
from coop_tui.terminal import terminal_text

OUTPUT_TOKENS_GUESS = 800
"""Output tokens per call assumed for the estimate when an agent sets no max_tokens."""


def estimate(sweep: Sweep, sizes: Any = None) -> dict[str, Any]:
    """Matches, decisions, model calls and cost before anything runs.

    Input tokens come from the real rendered prompts of each grid point and seat (their
    mean, ``sizes``, see :mod:`coop_tui.prompt_size`), extrapolated to every decision of
    the match; output tokens are the agent's ``max_tokens`` (else 800), an upper bound.
    """
    per_match = decisions_per_match(sweep)
    slots = sweep.slots_by_cell()  # a slice (--shard) plays only some of each cell
    played = sweep.tournaments_played()
    total = sum(n * k for n, k in zip(per_match, slots, strict=True))
    total += shared_design_count(sweep.cells, played)  # a tournament's designs, asked once
    agents = sweep.spec.agents
    calls: dict[str, float] = {}
    tokens_in: dict[str, float] = {}
    unmeasured: dict[str, float] = {}
    for i, (n, cell) in enumerate(zip(per_match, sweep.cells, strict=True)):
        per_seat = n * slots[i] / max(len(cell.seats), 1)
        for seat, name in enumerate(cell.seats):
            if agents[name].kind not in ("llm", "local"):
                continue
            calls[name] = calls.get(name, 0.0) + per_seat
            seen = (sizes.mean_by_cell.get(i) or sizes.by_cell.get(i, {})) if sizes is not None else {}
            if seat in seen:
                tokens_in[name] = tokens_in.get(name, 0.0) + per_seat * seen[seat]
            else:
                unmeasured[name] = unmeasured.get(name, 0.0) + per_seat
    for name, designs in shared_designs_by_agent(sweep.cells, played).items():
        if agents[name].kind in ("llm", "local"):  # asked once per tournament, not per match
            calls[name] = calls.get(name, 0.0) + designs
            unmeasured[name] = unmeasured.get(name, 0.0) + designs  # sized by the agent's mean prompt
    for name, n in unmeasured.items():  # seats no probe reached: the agent's mean prompt
        measured = calls[name] - n
        mean = tokens_in.get(name, 0.0) / measured if measured else 700.0
        tokens_in[name] = tokens_in.get(name, 0.0) + n * mean
    cost, list_cost, unknown, batching = 0.0, 0.0, [], []
    llm = [n for n in calls if agents[n].kind == "llm"]
    if llm:
        for name in llm:
            spec = agents[name]
            out = calls[name] * (spec.max_tokens or OUTPUT_TOKENS_GUESS)
            price = cost_for(spec.model or "", int(tokens_in.get(name, 0)), int(out))
            if batched(spec, sweep.spec):
                batching.append(name)
            if price is None:
                unknown.append(name)
            else:
                list_cost += price
                cost += price * (BATCH_PRICE_FACTOR if batched(spec, sweep.spec) else 1.0)
    n_calls = sum(calls.values())
    return {
        "matches": sweep.total_matches,
        "decisions": total,
        "model_calls": int(round(n_calls)),
        "cost_usd": cost,
        "list_cost_usd": list_cost,
        "batch_agents": batching,
        "unknown_price": unknown,
        "input_tokens": int(round(sum(tokens_in.values()))),
        "prompt_tokens_mean": (sum(tokens_in.values()) / n_calls) if n_calls else None,
        "prompts_measured": bool(sizes is not None and sizes.probed),
        "calls_by_agent": calls,
        "input_tokens_by_agent": tokens_in,
    }


class EtaColumn(ProgressColumn):
    """The time left and the model calls answered / estimated / in flight, on the overall
    row only (one :class:`~coop_tui.eta.CallClock` for the whole sweep), worked out at
    each refresh so the countdown moves between events."""

    def __init__(self, clock: CallClock) -> None:
        super().__init__(table_column=Column(no_wrap=True))  # one line, at any width
        self.clock = clock
        self.row: TaskID | None = None

    def render(self, task: Task) -> Text:
        if task.id != self.row:
            return Text("")
        return Text(self.clock.describe(time.monotonic()) + "  ", no_wrap=True, overflow="ellipsis")


NAME_COLUMN = 36
"""The widest an experiment's name is shown on a progress row (longer ones wrap)."""
BAR_WIDTH = 20


class ProgressView:
    """Overall and per-experiment bars with ETA, failures, retries and cost.

    The ETA comes from model calls (:mod:`coop_tui.eta`), not from matches: ``calls`` is
    the estimate's ``model_calls`` (worked out from the sweep when not given)."""

    def __init__(self, sweep: Sweep, console: Console, calls: int | None = None,
                 concurrency: int | None = None) -> None:
        self.console = console
        self.models = {name for name, a in sweep.spec.agents.items() if a.kind in ("llm", "local")}
        """Agents whose decisions are model calls (what the estimate counts); strategies'
        and people's decisions are counted as moves."""
        total_calls = estimate(sweep)["model_calls"] if calls is None else calls
        # a provider batch holds no slot of the sweep's concurrency: no bound then
        limit = None if any(batched(a, sweep.spec) for a in sweep.spec.agents.values()) else (
            concurrency or sweep.spec.concurrency)
        self.clock = CallClock(total_calls, sweep.total_matches, self.models, limit=limit)
        self.eta = EtaColumn(self.clock)
        digits = 2 * len(str(sweep.total_matches)) + 1
        self.progress = Progress(
            SpinnerColumn(),
            # a long experiment name wraps within its column; the counts and the time keep
            # their width (a narrow or piped terminal cut them to "4… 0…")
            TextColumn("[bold]{task.description}", table_column=Column(
                no_wrap=False, overflow="fold", min_width=20, max_width=NAME_COLUMN)),
            BarColumn(bar_width=BAR_WIDTH),
            MofNCompleteColumn(table_column=Column(no_wrap=True, min_width=digits)),
            TimeElapsedColumn(table_column=Column(no_wrap=True, min_width=7)),
            self.eta,
            TextColumn("{task.fields[stats]}", table_column=Column(no_wrap=True,
                                                                    overflow="ellipsis")),
            console=console,
            transient=False,
        )
        self.overall = self.progress.add_task("all", total=sweep.total_matches, stats="")
        self.eta.row = self.overall
        self.tasks: dict[int, TaskID] = {}
        self.stats: dict[Any, dict[str, float]] = {}
        per_experiment: dict[int, int] = {}
        for cell, slots in zip(sweep.cells, sweep.slots_by_cell(), strict=True):
            per_experiment[cell.experiment] = per_experiment.get(cell.experiment, 0) + slots
        for cell in sweep.cells:
            total = per_experiment[cell.experiment]
            if cell.experiment not in self.tasks and total:  # a slice may play none of it
                exp = sweep.spec.experiments[cell.experiment]
                label = terminal_text(exp.name) or f"#{cell.experiment} {cell.game} / {cell.mechanism}"
                self.tasks[cell.experiment] = self.progress.add_task(label, total=total, stats="")
        self.match_exp: dict[str, int] = {}
        self.batches: BatchProgress | None = None
        """The latest state of the provider batches (``batch = true`` agents)."""

    def _bump(self, key: Any, field: str, amount: float = 1) -> None:
        st = self.stats.setdefault(
            key, {"failed": 0, "retries": 0, "cost": 0.0, "calls": 0, "moves": 0})
        st[field] += amount

    def _fmt(self, key: Any) -> str:
        st = self.stats.get(key, {})
        # the overall row's model calls are in its ETA column (answered / estimated)
        calls = "" if key == "all" else f"model calls {int(st.get('calls', 0))}  "
        return (
            f"{calls}other moves {int(st.get('moves', 0))}  "
            f"failed {int(st.get('failed', 0))}  retries {int(st.get('retries', 0))}  "
            f"${st.get('cost', 0.0):.4f}"
        ) + (self._batch_text() if key == "all" else "")

    def _batch_text(self) -> str:
        """Batches pending and done, and the oldest pending one's age."""
        b = self.batches
        if b is None:
            return ""
        age = f" (oldest {b.oldest_s / 60:.1f} min)" if b.pending else ""
        return f"  batches pending {b.pending}{age}, done {b.done}"

    def _show(self, exp: Any) -> None:
        self.progress.update(self.overall, stats=self._fmt("all"))
        if exp in self.tasks:
            self.progress.update(self.tasks[exp], stats=self._fmt(exp))

    def skip(self, n: int) -> None:
        self.progress.advance(self.overall, n)
        self.clock.skip(n)

    accepts_direct_decisions = True
    """Strategy rounds arrive as one DirectDecisions event: moves only (no retries, no cost)."""
    accepts_direct_rounds = True
    """... or a strategy-only match's rounds as one DirectRounds event (the same moves)."""
    ignores = PER_ROUND_EVENTS
    """Neither the progress bars nor the ETA read rounds or streamed text."""

    def __call__(self, event: Event) -> None:
        self.clock.observe(event, time.monotonic())
        if isinstance(event, MatchStarted):
            self.match_exp[event.match_id] = event.experiment
        elif type(event) is DirectDecisions:  # strategies' moves, never a model call
            for key in ("all", self.match_exp.get(event.match_id)):
                self._bump(key, "moves", len(event.rows))
        elif type(event) is DirectRounds:
            for key in ("all", self.match_exp.get(event.match_id)):
                self._bump(key, "moves", direct_decision_count(event))
        elif isinstance(event, DecisionDone):
            d = event.decision
            exp = self.match_exp.get(d.match_id)
            if d.reused:
                return
            model = d.agent in self.models
            for key in ("all", exp):
                self._bump(key, "calls" if model else "moves")
                self._bump(key, "retries", reasks(d.attempts) + d.transport_retries)
                self._bump(key, "cost", d.cost_usd or 0.0)
            if model:  # shown as it happens: one match may be a long tournament of calls
                self._show(exp)
        elif type(event) is BatchProgress:
            self.batches = event
            self._show(None)
        elif type(event).__name__ == "EndpointNotice":
            # a server's words may be in it: shown, not obeyed
            self.console.print(f"[yellow]{terminal_text(event.message)}")  # type: ignore[attr-defined]
        elif isinstance(event, MatchDone):
            exp = self.match_exp.get(event.match_id)
            if event.status == "stopped":  # interrupted, not failed: a resume plays it
                return
            if event.status == "failed":
                self._bump("all", "failed")
                self._bump(exp, "failed")
            self.progress.advance(self.overall)
            if exp in self.tasks:
                self.progress.advance(self.tasks[exp])
            self._show(exp)


def print_wall_time(sweep: Sweep, db_path: Path, est: dict[str, Any], console: Console) -> None:
    """The estimated wall time of the sweep's embedded-model calls (they take turns on one
    model in this process, so calls x seconds per call), and where that speed comes from."""
    calls = est["calls_by_agent"]
    speed = call_speed(sweep, db_path, calls, est["input_tokens_by_agent"])
    if speed is None:
        return
    if speed.source == "unknown":
        console.print(f"no wall time estimate: {speed.detail}", style="yellow", markup=False,
                      highlight=False, soft_wrap=True)
        return
    n = int(round(sum(calls.get(name, 0.0) for name in embedded_agents(sweep))))
    console.print(
        f"estimated wall time ~{wall_time_text(n * speed.seconds)}: {n} embedded-model calls x "
        f"{speed.seconds:.1f} s per call ({speed.detail})",
        markup=False, highlight=False, soft_wrap=True,
    )


def print_api_keys(sweep: Sweep, console: Console) -> None:
    """The API keys a real run of ``sweep`` needs, each said set or missing."""
    needed = api_keys(sweep.spec)
    if not needed:
        console.print("API keys: none needed")
        return
    missing = [source for source, _agents, present in needed if not present]
    console.print(f"API keys a real run needs ({len(missing)} missing):", highlight=False)
    for source, agents, present in needed:
        state = "set" if present else "[red]missing[/]"
        console.print(f"  {terminal_text(source)}: {state} (agents: "
                      f"{terminal_text(', '.join(agents))})", highlight=False, soft_wrap=True)


def print_worded_prompts(sweep: Sweep, sizes: PromptSizes, console: Console) -> None:
    """``--dry-run``: the first message of each cell worded by a paper's code or the
    user's own templates, as it would be sent, so the wording is seen before any model
    is asked. Cells whose first message is the same are shown once."""
    shown: dict[str, list[str]] = {}
    for i, cell in enumerate(sweep.cells):
        messages = sizes.first_messages.get(i)
        if cell.wording == "ours" or not messages:
            continue
        whose = (f"the {cell.wording_source} source" if cell.wording_source
                 else f"the folder {cell.wording}")
        where = (f"experiment {cell.experiment}: {cell.game} / {cell.mechanism}, "
                 f"seats {', '.join(cell.seats)} ({whose})")
        first = messages[0]
        text = f"[{first.get('role')}]\n{first.get('content')}"
        shown.setdefault(text, []).append(where)
    for text, cells in shown.items():
        more = f" and {len(cells) - 1} more cell(s)" if len(cells) > 1 else ""
        console.print(f"first message of {cells[0]}{more}:", style="bold", markup=False,
                      highlight=False, soft_wrap=True)
        console.print(terminal_text(text, markup=False, lines=True), markup=False, highlight=False,
                      soft_wrap=True)


def run_batch(
    path: Path,
    db_path: Path,
    *,
    resume: bool = False,
    concurrency: int | None = None,
    assume_yes: bool = False,
    dry_run: bool = False,
    console: Console | None = None,
    shard: Shard | None = None,
    sources: dict[str, str] | None = None,
) -> int:
    """Validate, estimate and play a sweep file (or its slice ``shard``) into ``db_path``;
    ``sources`` (``--source NAME=PATH``) override the file's ``[sources]``."""
    console = console or Console(stderr=False)
    check_database_path(db_path)  # a device, FIFO or folder: refused before any read of it
    # SpecError -> exit 2 before anything is written; a dry run sends nothing, so it needs
    # no API key: it lists the keys a real run will need instead
    sweep = apply_shard(load_sweep(path, check_keys=not dry_run, sources=sources), shard)
    _print_warnings(sweep.warnings, console)  # a source at another commit than the tested one
    sizes = measure_sync(sweep)  # the real prompts, rendered without sending them
    check_prompt_sizes(sweep, sizes)
    est = estimate(sweep, sizes)
    print_estimate(sweep, est, console)
    check_source_runs(sweep, db_path)
    check_servers(sweep, console, strict=not dry_run)
    if dry_run:
        print_worded_prompts(sweep, sizes, console)
        print_api_keys(sweep, console)
        print_wall_time(sweep, db_path, est, console)
        return 0
    if est["cost_usd"] > 1.0 and not assume_yes and sys.stdin.isatty():
        answer = console.input("Start? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return 1
    store = open_store(db_path)
    console.print(f"database: {db_path}")
    return play_batch(sweep, store, path, db_path, est, resume=resume, concurrency=concurrency,
                      console=console)


def _print_warnings(lines: list[str], console: Console) -> None:
    for warning in lines:  # whole lines: a URL or a cause must not be split
        console.print(terminal_text(warning, markup=False), style="yellow", highlight=False,
                      markup=False, soft_wrap=True)


def print_estimate(sweep: Sweep, est: dict[str, Any], console: Console) -> None:
    """The sweep's size and cost before anything runs, and a warning when the estimate
    passes the budget."""
    price = f"~${est['cost_usd']:.4f}" if not est["unknown_price"] else (
        f"~${est['cost_usd']:.4f} + unknown price for {', '.join(est['unknown_price'])}"
    )
    slice_words = f" (slice {sweep.shard} of the sweep)" if sweep.shard else ""
    if est["batch_agents"]:
        price += (f" (Batch API at half price for {', '.join(est['batch_agents'])}; "
                  f"~${est['list_cost_usd']:.4f} at list price)")
    console.print(
        f"[bold]{terminal_text(sweep.name)}[/]{slice_words}: {est['matches']} matches, "
        f"~{est['decisions']} decisions, ~{est['model_calls']} model calls, estimated cost {price}"
    )
    if est["model_calls"] and est["prompts_measured"]:
        console.print(
            f"[dim]cost from the rendered prompts of each grid point: ~{est['prompt_tokens_mean']:,.0f} "
            "input tokens per call (characters / 4; the mean over a match where it was rendered "
            "whole), output at max_tokens (or 800)"
        )
    budget = sweep.spec.budget_usd
    if budget is not None and est["cost_usd"] > budget:
        console.print(
            f"[yellow]the estimate exceeds the budget of ${budget:g}: the run stops when the budget is spent"
        )


def check_servers(sweep: Sweep, console: Console, *, strict: bool) -> None:
    """Every server the agents talk to answers once before anything runs or is written
    (dry runs too, warning only: one GET per endpoint, no model call; hosted providers
    are not probed)."""
    flight = preflight.check(sweep, strict=strict)  # SpecError (exit 2): no live server
    line = preflight.describe(flight)
    if line:
        console.print(f"[dim]{terminal_text(line)}", soft_wrap=True)
    _print_warnings(flight.warnings, console)


def play_batch(sweep: Sweep, store: Store, path: Path, db_path: Path, est: dict[str, Any], *,
               resume: bool, concurrency: int | None, console: Console) -> int:
    """Play the checked sweep into the open store under progress bars; print the summary
    and store the slow report parts. Returns the exit code (130 / 143 when a signal
    stopped it, 1 when the database failed or a match did)."""
    bus = EventBus()
    view = ProgressView(sweep, console, est["model_calls"], concurrency)
    bus.subscribe(view)
    seen_run = _run_ids_seen(bus)
    if resume:
        _announce_resume(sweep, store, view, seen_run, console)
    resume_hint = "continue with: " + shlex.join(
        ["coop-tui", "--batch", str(path), "--db", str(db_path), "--resume"]
        + (["--shard", sweep.shard] if sweep.shard else []))
    try:
        with view.progress:
            summary, stopped_by = run_stoppable(published(
                run_sweep(sweep, store, bus=bus, resume=resume, concurrency=concurrency),
                bus, store, db_path, watch_plan(view),
            ))
        if stopped_by is not None:
            run = f"run {seen_run[-1]} " if seen_run else "the run "
            console.print(f"{stop_words(stopped_by)}: {run}stopped; {resume_hint}",
                          style="yellow", markup=False, highlight=False, soft_wrap=True)
            _close_quietly(store)
            return stopped_by
    except sqlite3.Error as exc:
        _close_quietly(store)
        run = f"run {seen_run[-1]}" if seen_run else "the run"
        console.print(
            f"coop-tui: error: {database_message(exc, db_path)}; {run} stopped where it was "
            f"(every finished decision is stored); {resume_hint}",
            style="red", markup=False, highlight=False,
        )
        return 1
    print_summary(summary, console)
    if summary.run_id and summary.matches_done:
        # deviation ratings solved now, once, so `report` reads them without scipy
        with contextlib.suppress(sqlite3.Error):
            rate_run(store, summary.run_id)
        # and the slow report sections (reasoning fingerprints) built and stored
        with contextlib.suppress(sqlite3.Error):
            store_sections(store, summary.run_id)
    store.close()
    return 0 if summary.status == "done" else 1


def _run_ids_seen(bus: EventBus) -> list[str]:
    """The ids of the runs the bus announces (RunStarted), in order: what a stop names."""
    seen_run: list[str] = []

    def note_run(e: Event) -> None:
        if isinstance(e, RunStarted):
            seen_run.append(e.run_id)

    note_run.accepts_direct_decisions = True  # type: ignore[attr-defined]
    note_run.accepts_direct_rounds = True  # type: ignore[attr-defined]
    note_run.ignores = (*PER_ROUND_EVENTS, DirectDecisions, DirectRounds,  # type: ignore[attr-defined]
                        DecisionDone)
    bus.subscribe(note_run)
    return seen_run


def _announce_resume(sweep: Sweep, store: Store, view: ProgressView, seen_run: list[str],
                     console: Console) -> None:
    """Say which run ``--resume`` continues and how far it got (or that a new one starts),
    refusing a sweep changed since; the bars start at the matches already done."""
    prev = store.latest_sweep_run(sweep.name, sweep.shard)
    if prev is None:
        of_slice = f" for slice {sweep.shard}" if sweep.shard else ""
        console.print(f"[yellow]no earlier run named {terminal_text(repr(sweep.name))}{of_slice}: "
                      "starting a new one")
        return
    check_resumable(prev, sweep)
    seen_run.append(prev["id"])
    done = store.match_status(prev["id"])
    skipped = sum(1 for status in done.values() if status == "done")  # no key hashing
    console.print(f"resuming run {terminal_text(prev['id'])}: {skipped} of {sweep.total_matches} "
                  "matches already done")
    view.skip(skipped)


def watch_plan(view: ProgressView) -> dict[str, Any]:
    """What a watcher needs to show progress against (recorded in the lease row): each
    experiment's name and matches, the estimated model calls and which agents make them."""
    return {
        "matches_total": view.progress.tasks[view.overall].total,
        "experiments": {str(exp): {"name": view.progress.tasks[task].description,
                                   "total": view.progress.tasks[task].total}
                        for exp, task in view.tasks.items()},
        "model_calls": view.clock.calls_total,
        "models": sorted(view.models),
        "concurrency": view.clock.limit,
    }


async def published(run: Any, bus: EventBus, store: Store, db_path: Path,
                    plan: dict[str, Any]) -> Any:
    """Await ``run`` (a sweep) while its events are published for ``coop-tui watch``
    (:mod:`coop_tui.channel`); the socket is named in the run's lease row and removed
    when the sweep ends, however it ends."""
    publisher = Publisher(db_path)
    try:
        address = await publisher.start()
    except OSError as exc:  # a sweep runs unwatched rather than not at all
        print(f"coop-tui: watching this sweep is not possible ({exc})", file=sys.stderr)
        return await run

    def record(event: Event) -> None:
        if isinstance(event, RunStarted):
            with contextlib.suppress(sqlite3.Error):  # unwatchable, still a sweep
                store.record_channel(event.run_id, address, plan)

    record.accepts_direct_decisions = True  # type: ignore[attr-defined]
    record.accepts_direct_rounds = True  # type: ignore[attr-defined]
    record.ignores = (*PER_ROUND_EVENTS, DirectDecisions, DirectRounds)  # type: ignore[attr-defined]
    unsubscribe = [bus.subscribe(record), bus.subscribe(publisher)]
    try:
        return await run
    finally:
        for u in unsubscribe:
            u()
        await asyncio.shield(publisher.close())


EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def run_stoppable(coro: Any) -> tuple[Any, int | None]:
    """Run ``coro`` on a new event loop: (its result, None), or (None, 130 / 143) when
    SIGINT (Ctrl-C) or SIGTERM stopped it.

    Either signal cancels the coroutine, which records its in-flight work as stopped on
    the way out. Before returning, any embedded-model generation still running in a
    worker thread is stopped at its next token and joined: the caller may then close the
    database and exit without freeing llama.cpp under a running decode.
    """
    terminated: list[int] = []
    try:
        return asyncio.run(_with_signals(coro, terminated)), None
    except asyncio.CancelledError:
        if not terminated:
            raise
        return None, 128 + terminated[0]
    except KeyboardInterrupt:
        return None, EXIT_SIGINT
    finally:
        stop_embedded_generation()


def stop_words(code: int) -> str:
    """How the stop is announced: 'interrupted' for Ctrl-C, 'terminated (SIGTERM)'."""
    return "terminated (SIGTERM)" if code == EXIT_SIGTERM else "interrupted"


def stop_embedded_generation() -> None:
    """Stop and join embedded-model worker threads, when that module was ever used (it
    is not imported for a sweep without the embedded model)."""
    local = sys.modules.get("coop_tui.agents.local")
    if local is not None:
        local.stop_generation()


async def _with_signals(coro: Any, terminated: list[int]) -> Any:
    """Run ``coro`` and turn SIGTERM into the same stop as Ctrl-C: in-flight matches are
    recorded as stopped, the run as stopped, and the process exits 143 with a message."""

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_term(signum: int = signal.SIGTERM) -> None:
        terminated.append(signum)
        if task is not None:
            task.cancel()

    installed = False
    try:
        loop.add_signal_handler(signal.SIGTERM, on_term)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
        pass
    try:
        return await coro
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)


def _close_quietly(store: Any) -> None:
    with contextlib.suppress(Exception):
        store.close()


def open_store(db_path: Path) -> Any:
    """The database, or one clear error naming ``--db`` (a folder, no permission, ...)."""
    check_database_path(db_path)
    if db_path.exists() and not os.access(db_path, os.W_OK):
        raise SpecError("--db", database_message(sqlite3.OperationalError("readonly"), db_path))
    try:
        return Store(db_path)
    except sqlite3.Error as exc:
        raise SpecError("--db", database_message(exc, db_path)) from None
    except OSError as exc:
        raise SpecError("--db", f"cannot open {db_path} as a SQLite database ({exc}); "
                                "give a writable file path") from None


def check_source_runs(sweep: Sweep, db_path: Path) -> None:
    """Every ``source_run`` names a run in the database (SpecError otherwise), checked
    read-only before the database is opened for writing."""
    wanted = {(i, exp.source_run) for i, exp in enumerate(sweep.spec.experiments) if exp.source_run}
    if not wanted:
        return
    known: set[str] = set()
    if db_path.exists():
        try:
            conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
            try:
                known = {row[0] for row in conn.execute("select id from runs")}
            finally:
                conn.close()
        except sqlite3.Error:
            known = set()
    for i, run in sorted(wanted):
        if run not in known:
            raise SpecError(
                f"experiments[{i}].source_run",
                f"no run {run!r} in {db_path}; name a run listed by `coop-tui list runs --db "
                f"{db_path}`, or drop source_run to read this sweep's own earlier stages",
            )


def print_summary(summary: Any, console: Console) -> None:
    table = Table(title=f"run {summary.run_id} ({terminal_text(summary.name)}): {summary.status}",
                  show_header=False)
    rows = [
        ("matches", f"{summary.matches_done}/{summary.matches_total} "
                    f"({summary.matches_skipped} already done, {summary.matches_failed} failed)"),
        ("decisions", f"{summary.decisions} ({summary.reused} reused from the database"
                      + (f", {summary.asked_again} asked again: they had no usable answer before"
                         if getattr(summary, "asked_again", 0) else "") + ")"),
        ("invalid answers", str(summary.invalid)),
        ("re-asks / transport retries", f"{summary.retries} / {summary.transport_retries}"),
        ("cost", f"${summary.cost_usd:.4f}"),
        ("time", f"{summary.elapsed_s:.1f} s"),
    ]
    batches = getattr(summary, "batches", None)
    if batches is not None:
        rows.append(("provider batches", f"{batches.done} done, {batches.pending} pending"
                     + (" (--resume polls them)" if batches.pending else "")))
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for note in getattr(summary, "notices", [])[:10]:
        console.print(f"[yellow]adapted: {terminal_text(note)}")
    if summary.failures:
        failures = Table(title="failed matches by reason", title_justify="left")
        failures.add_column("reason", no_wrap=True)
        failures.add_column("matches", justify="right")
        failures.add_column("example")
        for reason, group in sorted(summary.failures.items(), key=lambda kv: (-kv[1]["count"], kv[0])):
            failures.add_row(terminal_text(reason), str(group["count"]),
                             terminal_text(scrub(group["example"])))
        console.print(failures)
    for err in summary.errors[:5]:
        console.print(f"{terminal_text(scrub(err), markup=False)}", style="red", highlight=False,
                      markup=False)
    console.print(f"report: coop-tui report {summary.run_id}")
