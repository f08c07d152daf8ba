"""Runs a sweep: expands matches, schedules them under limits, resumes what is missing.

Resume works at decision granularity. Matches have stable keys inside a run and
decisions have content keys, so replaying an unfinished match re-uses every stored
decision (no request is sent) and the per-decision seeded RNG draws the same
actions: the database after ``kill -9`` + ``--resume`` equals an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coop_tui.agents.batch import QUIET_S, BatchHub, BatchLedger
from coop_tui.agents.factory import build_agent
from coop_tui.conditions import get_condition
from coop_tui.designs import DesignBook, Tournament
from coop_tui.engine import (
    DecisionPolicy,
    MatchAborted,
    MatchContext,
    MatchStopped,
    SourceFailed,
    derived_seed,
    let_loop_run,
    stable_hash,
)
from coop_tui.errors import SpecError, failure_reason, failure_summary
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
    RunDone,
    RunProgress,
    RunStarted,
    direct_decision_count,
)
from coop_tui.grounded.stages import experiment_stages, needs_inputs, resolve_params
from coop_tui.inputs import changed_input
from coop_tui.mechanisms import mechanism_class
from coop_tui.prompts import PromptRenderer, TemplateFailed, wording_path
from coop_tui.protocols import DEFAULT_KEY
from coop_tui.redact import scrub
from coop_tui.sources import record as source_record
from coop_tui.spec import (
    Cell,
    Sweep,
    batched,
    cell_game,
    estimate_decisions,
    public_spec,
    wording_folder,
)
from coop_tui.store import LEASE_STALE_S, Store
from coop_tui.talk import DEFAULT_TALK_CHARS


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


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


@dataclass
class RunSummary:
    run_id: str
    name: str
    status: str
    matches_total: int
    matches_done: int = 0
    matches_failed: int = 0
    matches_skipped: int = 0
    decisions: int = 0
    reused: int = 0
    asked_again: int = 0
    """Decisions stored as invalid by an earlier attempt of the run, asked again."""
    invalid: int = 0
    retries: int = 0
    transport_retries: int = 0
    cost_usd: float = 0.0
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    notices: list[str] = field(default_factory=list)
    """What the transport adapted (an endpoint's concurrency lowered, one down ...)."""
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Failed matches grouped by reason: {reason: {"count": n, "example": error}}."""
    batches: BatchProgress | None = None
    """Provider batches (``batch = true`` agents): pending and done at the end."""


class _Counter:
    """Tallies decisions for progress and the final summary."""

    accepts_direct_decisions = True
    """Counts :class:`DirectDecisions` too (strategy decisions: valid, free, asked once)."""
    accepts_direct_rounds = True
    """... and :class:`DirectRounds` (the same decisions, a match's rounds at once)."""
    ignores = PER_ROUND_EVENTS

    def __init__(self, summary: RunSummary) -> None:
        self.s = summary

    def __call__(self, event: Event) -> None:
        if type(event) is DirectDecisions:
            self.s.decisions += len(event.rows)
        elif type(event) is DirectRounds:
            self.s.decisions += direct_decision_count(event)
        elif isinstance(event, DecisionDone):
            d = event.decision
            self.s.decisions += 1
            if d.reused:
                self.s.reused += 1
                return
            self.s.asked_again += int(d.asked_again)
            self.s.invalid += 0 if d.valid else 1
            self.s.retries += reasks(d.attempts)
            self.s.transport_retries += d.transport_retries
            self.s.cost_usd += d.cost_usd or 0.0
        elif type(event) is BatchProgress:
            self.s.batches = event
        elif isinstance(event, MatchDone):
            # retries of a decision that gave up: it is not stored, its retries still count
            self.s.transport_retries += int(event.info.get("transport_retries", 0) or 0)
            if event.status == "failed":
                error = event.error or "unknown error"
                entry = self.s.failures.setdefault(
                    failure_reason(error), {"count": 0, "example": error}
                )
                entry["count"] += 1


def reasks(attempts: int) -> int:
    """Times an agent was asked again after an unusable answer: attempts - 1.

    The batch summary and the report both count this, over the decisions asked in the run
    (a reused decision sends nothing). A decision that ended invalid after N attempts was
    re-asked N - 1 times: its last rejected answer is not followed by another request.
    """
    return max(int(attempts or 0) - 1, 0)


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


def _listen_for_notices(agents: dict[str, Any], bus: EventBus, summary: RunSummary) -> None:
    """Route what agents' endpoint pools notice to the bus (progress) and the summary."""

    def heard(notice: Any) -> None:
        summary.notices.append(notice.message)
        bus.emit(notice)

    for agent in agents.values():
        if hasattr(agent, "on_notice"):
            agent.on_notice = heard


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


async def close_agents(agents: Any) -> None:
    """Close what agents hold open on this loop (an LLM agent's HTTP session): the run is
    over, and a session left to the garbage collector warns "Unclosed client session"."""
    for agent in agents:
        close = getattr(agent, "aclose", None)
        if callable(close):
            with contextlib.suppress(Exception):
                await close()


async def prepare_agents(agents: Any) -> None:
    """Let agents load what they need (client libraries, model files) before any match."""
    await asyncio.gather(
        *(agent.prepare() for agent in agents if callable(getattr(agent, "prepare", None)))
    )


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
    unsubscribe = [bus.subscribe(store, critical=True), bus.subscribe(_Counter(summary))]
    status = store.match_status(run_id)
    # Matches come from a generator, never a list: a sweep of a million matches holds
    # only the grid points and the stored statuses in memory.
    done_keys = {key for key, st in status.items() if st == "done"}
    summary.matches_skipped = len(done_keys)  # the run's matches all come from this sweep
    summary.matches_done = summary.matches_skipped

    stage_of = experiment_stages(sweep)  # stage 0 first; a later stage reads earlier ones
    pending: Any = iter(())
    n_todo = summary.matches_total - summary.matches_skipped
    # the agents this process seats (a slice of the sweep may leave some out)
    names = {n for cell, k in zip(sweep.cells, sweep.slots_by_cell(), strict=True) if k
             for n in cell.seats}
    try:
        agents = agents if agents is not None else build_agents(sweep, names)
        _listen_for_notices(agents, bus, summary)
        await prepare_agents(agents.values())
    except BaseException:  # the lease must not outlive a run that never started
        lease.release()
        if agents is not None:
            await close_agents(agents.values())
        raise
    hub = start_batches(agents, store, bus, sweep.spec.batch_gather)
    designs = DesignBook()  # one per run: designs shared by a tournament's matches
    started = time.perf_counter()
    bus.emit(
        RunStarted(run_id, sweep.name, sweep.total_matches, estimate_decisions(sweep), public_spec(sweep.spec))
    )
    stop = stop or asyncio.Event()
    heartbeat = asyncio.create_task(lease.keep_alive())
    # Strategy-only matches play one at a time, in the order they were taken. They never
    # wait on anything, so running them side by side bought no speed; but the engine lets
    # the event loop run on a clock (let_loop_run), so side by side they finished in an
    # order set by the machine's load, and their float sums were folded into the
    # summaries in that order: the report's last digits changed from run to run and
    # differed from the same numbers aggregated live in match order. Taken in turn (an
    # asyncio lock serves its waiters first come, first served) they finish in the order
    # they started.
    strategy_turn = asyncio.Lock()

    def turn(cell: Cell) -> Any:
        only_strategies = all(agents[name].kind == "strategy" for name in cell.seats)
        return strategy_turn if only_strategies else contextlib.nullcontext()

    def progress() -> None:
        bus.emit(
            RunProgress(
                run_id, summary.matches_done, summary.matches_total, summary.decisions,
                summary.reused, summary.invalid, summary.retries + summary.transport_retries,
                summary.matches_failed, summary.cost_usd,
            )
        )

    async def worker() -> None:
        while not stop.is_set():
            try:
                cell, sample = next(pending)
            except StopIteration:
                return
            budget = sweep.spec.budget_usd
            if budget is not None and summary.cost_usd >= budget:
                summary.errors.append(f"budget of ${budget:g} reached; remaining matches not played")
                stop.set()
                return
            playing = hub.playing() if hub is not None else contextlib.nullcontext()
            async with turn(cell), playing:
                if stop.is_set():  # stopped while this match waited for its turn
                    return
                status = await play_cell(
                    cell, sample, run_id=run_id, sweep=sweep, agents=agents, bus=bus,
                    store=store, renderer=renderer, base=base, pause=pause,
                    on_context=on_context, designs=designs,
                )
            summary.matches_done += 1
            if status == "failed":
                summary.matches_failed += 1
            progress()
            await let_loop_run()  # a strategy match never suspends: signals must get in

    n_workers = max(1, min(n_todo, match_workers or sweep.spec.concurrency * 2))
    progress()
    # What is alive now (modules, spec, agents) outlives the run: the cyclic collector
    # need not re-scan it in every full collection while the matches run (a strategy
    # tournament spent a tenth of its time there). Given back to it when the run ends.
    gc.freeze()
    store.begin_grouped_commits()  # one commit per 50 ms of answers while matches play
    try:
        for stage_now in sorted(set(stage_of)):  # each stage waits for the ones before it
            pending = (
                (cell, sample) for cell, sample in sweep.matches()
                if stage_of[cell.experiment] == stage_now
                and (not done_keys or cell.match_key(sample) not in done_keys)
            )
            await asyncio.gather(*(worker() for _ in range(n_workers)))
            if stop.is_set():
                break
        if stop.is_set():  # the user, or the budget, ended the run early
            summary.status = "stopped"
        else:
            summary.status = "failed" if summary.matches_failed else "done"
    except BaseException as exc:
        summary.status = "stopped" if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt) else "failed"
        reason = _interruption(exc)
        summary.errors.append(reason)
        with contextlib.suppress(Exception):  # a full or broken database must not mask exc
            bus.emit(RunDone(run_id, summary.status, reason))
        raise
    finally:
        store.end_grouped_commits()  # commits what the last window holds
        gc.unfreeze()
        heartbeat.cancel()
        lease.release()
        if hub is not None:  # its batches stay with the provider: --resume polls them
            await asyncio.shield(hub.aclose())
        await asyncio.shield(close_agents(agents.values()))
        summary.elapsed_s = time.perf_counter() - started
        for u in unsubscribe[1:]:
            u()
    error = "; ".join(summary.errors[:3]) or (
        "stopped by the user" if summary.status == "stopped" else None
    )
    if summary.matches_failed:
        error = f"{summary.matches_failed} match(es) failed ({failure_summary(summary.failures)})" + (
            f"; {error}" if error else "")
    bus.emit(RunDone(run_id, summary.status, error))
    unsubscribe[0]()
    return summary


def _templates(sweep: Sweep) -> Path | None:
    if not sweep.spec.templates:
        return None
    p = Path(sweep.spec.templates).expanduser()
    if not p.is_absolute() and sweep.source is not None:
        p = sweep.source.parent / p
    return p


def cell_renderer(renderer: PromptRenderer, cell: Cell, base: Path | None) -> PromptRenderer:
    """The renderer of one cell's prompts: the run's, with the folder of the experiment's
    own wording (``wording = "PATH"``) searched first when it names one."""
    folder = wording_path(getattr(cell, "wording", None), base)
    return renderer if folder is None else renderer.overlaid(folder)


def match_id_for(run_id: str, match_key: str) -> str:
    return stable_hash([run_id, match_key])[:16]


async def play_cell(
    cell: Cell,
    sample: int,
    *,
    run_id: str,
    sweep: Sweep,
    agents: dict[str, Any],
    bus: EventBus,
    store: Store | None,
    renderer: PromptRenderer,
    base: Path | None = None,
    pause: asyncio.Event | None = None,
    on_context: Callable[[MatchContext], None] | None = None,
    designs: DesignBook | None = None,
    limit_prompts: bool = True,
) -> str:
    """Play one match of the grid; returns its status: done, failed or stopped (a failure
    is recorded, not raised).

    ``limit_prompts`` False lets a prompt over ``max_prompt_tokens`` reach the agent: the
    size probes of :mod:`coop_tui.prompt_size` must see it to measure it.

    ``sample`` is the cell's slot (replicate x sample, see :class:`Cell`); ``designs``
    is the run's book of tournament-wide designs (a fresh one when not given: stored
    designs are still found again, only concurrent matches could not share one).
    """
    slot = sample
    replicate, sample = cell.replicate_of(slot), cell.sample_of(slot)
    match_key = cell.match_key(slot)
    match_id = match_id_for(run_id, match_key)
    seed = derived_seed(sweep.spec.seed, match_key)
    game = cell_game(cell, base)
    mech_cls = mechanism_class(cell.mechanism)
    params, missing = _stage_inputs(cell, store, run_id)
    if missing is not None:  # an earlier stage left no usable input: the match fails, says why
        bus.emit(MatchStarted(run_id=run_id, match_id=match_id, experiment=cell.experiment,
                              game=game.key, mechanism=cell.mechanism, seats=cell.seats,
                              condition=_game_condition(cell), sample=sample, seed=seed,
                              info={"match_key": match_key, "matchup": cell.matchup,
                                    "replicate": replicate,
                                    "plan_index": sweep.plan_index(cell, slot)}))
        bus.emit(MatchDone(match_id, (), status="failed", error=missing))
        return "failed"
    mechanism = mech_cls(mech_cls.Params.model_validate(params))
    seat_agents = [agents[name] for name in cell.seats]
    condition = {**mechanism.condition(), **_game_condition(cell)}
    if cell.mechanism_axis:  # several mechanisms in one experiment: never pool them
        condition["mechanism"] = cell.mechanism
    bus.emit(
        MatchStarted(
            run_id=run_id,
            match_id=match_id,
            experiment=cell.experiment,
            game=game.key,
            mechanism=cell.mechanism,
            seats=cell.seats,
            condition=condition,
            sample=sample,
            seed=seed,
            info={
                "match_key": match_key,
                "matchup": cell.matchup,
                "agent_specs": [a.spec for a in seat_agents],
                "agent_kinds": [a.kind for a in seat_agents],
                "game_spec": game_spec(game),
                "replicate": replicate,
                "answers": cell.answers,
                "plan_index": sweep.plan_index(cell, slot),
            },
        )
    )
    tournament = None
    if getattr(mechanism.params, "design_scope", None) == "tournament":
        tkey = cell.tournament_key(slot)
        tournament = Tournament(
            tkey, derived_seed(sweep.spec.seed, "tournament", tkey),
            designs if designs is not None else DesignBook(),
        )
    ctx = MatchContext(
        run_id=run_id,
        match_id=match_id,
        game=game,
        agents=seat_agents,
        bus=bus,
        seed=seed,
        sample=sample,
        renderer=cell_renderer(renderer, cell, base or (sweep.source.parent if sweep.source else None)),
        policy=DecisionPolicy(
            max_attempts=cell.max_attempts,
            on_invalid=cell.on_invalid,
            randomize_labels=cell.randomize_labels,
            reuse_across_runs=sweep.spec.reuse,
            strict=cell.answers == "strict",
            answer=cell.answer,
            condition_text=_condition_text(cell.condition),
            condition=cell.condition,
            payoff_scale=get_condition(cell.condition).scale or 1.0,
            prompt_protocol=cell.prompt_protocol,
            style_message=cell.style_message,
            talk=cell.talk,
            talk_turns=cell.talk_turns,
            talk_chars=cell.talk_chars,
            max_prompt_tokens=sweep.spec.max_prompt_tokens if limit_prompts else None,
            source=sweep.wording_sources.get(cell.wording_source) if cell.wording_source else None,
            wording_folder=wording_folder(cell, base),
        ),
        lookup=store,
        pause=pause,
        tournament=tournament,
    )
    ctx.announce_strategies = on_context is not None  # headless: nobody watches answers stream
    if on_context is not None:
        on_context(ctx)
    try:
        try:
            outcome = await mechanism.play(ctx)
        finally:  # a strategy-only match's held-back rounds go before its end
            ctx.send_held()
    except MatchStopped:
        bus.emit(MatchDone(match_id, (), status="stopped", error="stopped by the user"))
        return "stopped"
    except MatchAborted as exc:
        bus.emit(MatchDone(match_id, (), status="failed", error=str(exc)))
        return "failed"
    except Exception as exc:  # provider gave up after retries, a bug, ...
        if _is_storage_error(exc):
            raise  # the database cannot record anything more: end the run, not the match
        if isinstance(exc, TemplateFailed | SourceFailed):
            raise  # every match renders the same template / source: stop the sweep, exit 2
        error = scrub(f"{type(exc).__name__}: {exc}")  # provider bodies may echo credentials
        retries = getattr(exc, "retries", 0)
        info = {"transport_retries": retries} if isinstance(retries, int) and retries else {}
        bus.emit(MatchDone(match_id, (), status="failed", error=error, info=info))
        return "failed"
    except asyncio.CancelledError:  # Ctrl-C or the app closing: say so, then let it unwind
        bus.emit(MatchDone(match_id, (), status="stopped", error="interrupted"))
        raise
    bus.emit(MatchDone(match_id, outcome.payoffs, info=outcome.info))
    return "done"


def _stage_inputs(cell: Cell, store: Store | None, run_id: str) -> tuple[dict[str, Any], str | None]:
    """A dependent stage's parameters with its inputs (the similarity signals paper: a judge's dossier, the
    per-pair scores); (params, None) or (params, why they are missing)."""
    if not needs_inputs(cell):
        return cell.mechanism_params, None
    try:
        return resolve_params(cell, store, run_id), None
    except ValueError as exc:
        return cell.mechanism_params, f"missing input from an earlier stage: {exc}"


def _game_condition(cell: Cell) -> dict[str, Any]:
    """The game is part of the condition: an experiment may list several games, scales,
    bonuses or sizes, and their results must never be pooled."""
    condition = {"game": cell.game, **cell.game_params}
    if cell.answer != "mixed":  # choice answers are a different protocol: never pooled
        condition["answer"] = cell.answer
    if cell.condition != "baseline":
        condition["condition"] = cell.condition
    if cell.prompt_protocol != DEFAULT_KEY:  # other messages and answer form: never pooled
        condition["prompt_protocol"] = cell.prompt_protocol
    if cell.style_message != "system":  # the reasoning instruction in the user message
        condition["style_message"] = cell.style_message
    if cell.source is not None:  # the similarity signals paper: scores computed from this source
        condition["similarity_source"] = cell.source
    if cell.wording != "ours":  # other words, other answers: never pooled with ours
        condition["wording"] = cell.wording
    if cell.talk != "none":  # agents that talk before they move: never pooled with silence
        condition["talk"] = cell.talk
        # the bounds only when changed, so `compare --by talk` sets a default talk cell
        # against its silent twin (compare_by.DEFAULTS fills them in)
        if cell.talk_turns != 1:
            condition["talk_turns"] = cell.talk_turns
        if cell.talk_chars != DEFAULT_TALK_CHARS:
            condition["talk_chars"] = cell.talk_chars
    return condition


def _condition_text(name: str) -> str:
    return get_condition(name).text


def game_spec(game: Any) -> dict[str, Any]:
    spec = {
        "key": game.key,
        "title": game.title,
        "params": game.params,
        "action_names": [list(a) for a in game.action_names],
        "payoffs": game.payoffs.tolist(),
        "cooperative": [sorted(c) for c in game.cooperative],
        "defect": list(game.defect),
    }
    if getattr(game, "protocol", None):  # played move by move (strategic personalities): rules, no table
        spec["protocol"] = True
        spec["rules"] = game.rules
    return spec


# ----------------------------------------------------------------- one writer per run
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


def _is_storage_error(exc: BaseException) -> bool:

    return isinstance(exc, sqlite3.Error)


def _interruption(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return "interrupted"
    return scrub(f"{type(exc).__name__}: {exc}")
