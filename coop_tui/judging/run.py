"""``coop-tui judge``: a judge agent classifies the stored reasoning of a run's decisions.

The judge pass is a run of its own (kind ``judge``) whose id is derived from what it
does — the judged run, the rubric (name, version and content) and the judge agent's
public spec — so running the same command again continues the same pass: decisions
already linked are skipped by one indexed query, a decision asked but not yet linked
(a kill in between) is found by its cache key, and an identical request made in any
earlier run is reused by its content key. Nothing is paid for twice.

Every judged match gets one judge match (same game, mechanism and condition; seat 0 is
the judge); every judgement goes through the engine's ``ask`` like any decision: it is
streamed, parsed (kind ``judgement``), re-asked with the reason when malformed, stored
with its prompt, raw answer, timing, tokens and cost. The embedded model answers under
a grammar, so its answers always have the rubric's shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.agents.batch import BatchHub, BatchLedger
from coop_tui.agents.factory import build_agent
from coop_tui.agents.llm import cost_for
from coop_tui.decisions import DecisionRequest, SeatView
from coop_tui.errors import SpecError, fail
from coop_tui.eta import CallClock
from coop_tui.events import DecisionDone, EventBus, MatchDone, MatchStarted
from coop_tui.judging.links import JUDGE_KIND, context_line, judged_text, link
from coop_tui.store import game_spec_sql

if TYPE_CHECKING:
    from rich.console import Console

    from coop_tui.engine import MatchContext
    from coop_tui.judging.rubric import Rubric
    from coop_tui.spec import AgentSpec
    from coop_tui.store import Store

PAGE = 200
"""Judged matches read per query: the pass streams, it never lists a run in memory."""
MAX_ERRORS_KEPT = 100
"""Transport failures kept as examples for the summary (each is counted regardless)."""
PHASES_WITH_TEXT = ("play", "propose", "vote", "sign", "score", "plan", "critique", "meta",
                    "talk")

_TEXT_SQL = (
    "(coalesce(d.response, '') != '' or coalesce(d.reasoning, '') != '')"
    " and not exists (select 1 from seats s where s.match_id = d.match_id"
    " and s.seat = d.seat and s.agent_kind = 'strategy')"
)
"""Decisions with a text a person or model wrote (a strategy's fixed JSON is no reasoning)."""

_WHITESPACE = "' ' || char(9) || char(10) || char(13)"
_COOPEVAL_SQL = (
    f" and length(trim(coalesce(d.response, ''), {_WHITESPACE})) >= {{min_chars}}"
    " and exists (select 1 from seats s where s.match_id = d.match_id and s.seat = d.seat"
    " and (json_extract(s.agent_spec, '$.style') = 'cot'"
    " or json_extract(s.agent_spec, '$.type') = 'CoTAgent'))"
)
"""CoopEval judges only the answers of chain-of-thought agents (our ``style = "cot"``, an
import's ``CoTAgent``) whose text is at least ``min_chars`` long after trimming."""


_LOGGED_SQL = " and (d.prompt_hash is not null or coalesce(d.prompt, '[]') not in ('[]', ''))"
"""Only decisions whose prompt is stored: CoopEval's judge script reads answers from the
game logs, so an imported tournament without its ``game_log.txt`` (answers from
``records.jsonl`` alone, no prompt) is skipped there."""


def selection_sql(rubric: Rubric) -> str:
    """Which decisions of the phase the rubric's protocol judges (SQL over ``d``)."""
    from coop_tui.judging.rubric import COOPEVAL_MIN_CHARS

    where = _TEXT_SQL
    if rubric.coopeval:
        where += _COOPEVAL_SQL.format(min_chars=COOPEVAL_MIN_CHARS)
    if rubric.logged_only:
        where += _LOGGED_SQL
    return where


BATCH_IN_FLIGHT = 100_000
"""Judgements asked at once by a judge with ``batch = true``: a whole page goes into one
batch (split at the provider's limits)."""


def protocol_spec(spec: AgentSpec, rubric: Rubric) -> AgentSpec:
    """The judge agent as the protocol runs it: CoopEval's judge answers at temperature 0
    with at most 500 tokens."""
    from coop_tui.judging.rubric import COOPEVAL_MAX_TOKENS, COOPEVAL_TEMPERATURE

    wanted = {"temperature": COOPEVAL_TEMPERATURE, "max_tokens": COOPEVAL_MAX_TOKENS}
    if rubric.coopeval and any(getattr(spec, k) != v for k, v in wanted.items()):
        return spec.model_copy(update=wanted)
    return spec


@dataclass
class JudgeStats:
    to_judge: int = 0
    asked: int = 0
    reused: int = 0
    invalid: int = 0
    failed: int = 0
    cost_usd: float = 0.0
    errors: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- choosing the judge
def resolve_judge(ref: str, agents_file: str | None, *,
                  check_keys: bool = True) -> tuple[str, AgentSpec]:
    """``--judge``: an agent table of ``--agents FILE`` by name, else a model string.
    ``check_keys``: False for a dry run, which sends nothing (it says which key a real
    pass needs instead, as a sweep's dry run does)."""
    from pydantic import ValidationError

    from coop_tui.spec import (
        AgentSpec,
        SpecError,
        _check_agent,
        check_batch,
        read_sweep_file,
        spec_error_from,
    )

    base: Path | None = None
    if agents_file is not None:
        path = Path(agents_file).expanduser()
        data = read_sweep_file(path)
        base = path.parent
        tables = data.get("agents")
        if not isinstance(tables, dict) or not tables:
            raise SpecError("--agents", f"{path} has no [agents.NAME] tables; add one for the judge")
        if ref in tables:
            if not isinstance(tables[ref], dict):
                raise SpecError(f"agents.{ref}", "must be a table of agent settings")
            try:
                spec = AgentSpec.model_validate(tables[ref])
            except ValidationError as exc:
                raise spec_error_from(exc, f"agents.{ref}") from None
            _check_judge(ref, spec, f"agents.{ref}")
            _check_agent(ref, spec, check_keys=check_keys, base=base)
            check_batch(ref, spec)
            return ref, spec
        if "/" not in ref:
            raise SpecError("--judge", f"{path} has no agent table {ref!r}; known: "
                            f"{', '.join(sorted(tables))} (or give a model string)")
    if "/" not in ref and not ref.startswith("local:"):
        raise SpecError("--judge", f"{ref!r} is not a model string; write provider/model "
                        "(e.g. local/smollm2, openai/gpt-4o-mini) or name an agent table of "
                        "--agents FILE")
    spec = AgentSpec(model=ref)
    _check_judge(ref, spec, "--judge")
    try:
        _check_agent(ref, spec, check_keys=check_keys, base=base)
    except SpecError as exc:
        raise SpecError("--judge", exc.message) from None
    return ref, spec


def _print_judge_key(name: str, spec: AgentSpec, console: Console) -> None:
    """A dry run's line on the API key a real pass needs (its variable, never its value)."""
    from coop_tui.spec import needs_key
    from coop_tui.spec_models import PROVIDER_KEY_ENV

    if not needs_key(spec):
        return
    env = spec.api_key_env or PROVIDER_KEY_ENV.get(spec.provider) or "an API key"
    there = "set" if spec.resolve_key() is not None else "not set: set it before the real pass"
    console.print(f"API key for the judge {name}: {env} ({there})", markup=False,
                  highlight=False, soft_wrap=True)


def _check_judge(name: str, spec: AgentSpec, where: str) -> None:
    if spec.kind not in ("llm", "local"):
        raise SpecError(where, f"{name} is a {spec.kind}; a judge must be a model that reads "
                        "text (model = \"local/smollm2\" or a provider/model)")


def judge_run_id(judged_run: str, rubric: Rubric, spec: dict[str, Any], phase: str) -> str:
    from coop_tui.engine import NOT_IN_CONTENT_KEY, stable_hash

    public = {k: v for k, v in spec.items() if k not in NOT_IN_CONTENT_KEY}
    return "judge-" + stable_hash([judged_run, rubric.name, rubric.version, rubric.digest,
                                   public, phase])[:16]


# ----------------------------------------------------------------- what to judge
def pending_counts(
    store: Store, judged_run: str, judge_run: str, phase: str, rubric: Rubric | None = None,
) -> dict[str, int]:
    """Decisions with text in ``phase`` (that the rubric's protocol judges); how many are
    judged already; characters to read."""
    where = _TEXT_SQL if rubric is None else selection_sql(rubric)
    row = store.db.execute(
        f"""select count(*),
                   coalesce(sum(j.judged_decision_id is not null), 0),
                   coalesce(sum(case when j.judged_decision_id is null then
                       length(coalesce(d.response, '')) + length(coalesce(d.reasoning, ''))
                       else 0 end), 0)
            from matches m join decisions d on d.match_id = m.id
            left join judgements j on j.judge_run_id = ? and j.judged_decision_id = d.id
            where m.run_id = ? and d.phase = ? and {where}""",
        [judge_run, judged_run, phase],
    ).fetchone()
    return {"eligible": row[0], "judged": row[1], "pending": row[0] - row[1], "chars": row[2]}


def _pages(store: Store, judged_run: str, judge_run: str, phase: str,  # noqa: ANN202
           where: str = _TEXT_SQL):
    """Judged matches with their decisions still to judge, a page of matches at a time."""
    last = -1
    while True:
        matches = store.db.execute(
            f"select rowid, *, {game_spec_sql()} as game_spec from matches"
            " where run_id = ? and rowid > ? order by rowid limit ?",
            [judged_run, last, PAGE],
        )
        cols = [c[0] for c in matches.description]
        page = [dict(zip(cols, r, strict=True)) for r in matches.fetchall()]
        if not page:
            return
        last = page[-1]["rowid"]
        out = []
        for match in page:
            cur = store.db.execute(
                f"""select d.id, d.round, d.seat, d.phase, d.agent, d.response, d.reasoning,
                           d.answer, d.parsed
                    from decisions d
                    where d.match_id = ? and d.phase = ? and {where}
                      and not exists (select 1 from judgements j where j.judge_run_id = ?
                                      and j.judged_decision_id = d.id)
                    order by d.id""",
                [match["id"], phase, judge_run],
            )
            dcols = [c[0] for c in cur.description]
            rows = [dict(zip(dcols, r, strict=True)) for r in cur.fetchall()]
            if rows:
                out.append((match, rows))
        yield out


# ----------------------------------------------------------------- estimate
def estimate(spec: AgentSpec, rubric: Rubric, n: int, chars: int) -> dict[str, Any]:
    """Calls and cost before anything is asked, as the sweep estimates them: prompt
    characters / 4 for input, the agent's ``max_tokens`` (else 800) for output."""
    from coop_tui.prompt_size import CHARS_PER_TOKEN
    from coop_tui.runner import OUTPUT_TOKENS_GUESS

    overhead = len(rubric.prompt("", "")) + 200
    tokens_in = (chars + n * overhead) // CHARS_PER_TOKEN
    cost: float | None = 0.0
    if spec.kind == "llm" and n:
        cost = cost_for(spec.model or "", int(tokens_in), int(n * (spec.max_tokens or OUTPUT_TOKENS_GUESS)))
    return {"calls": n, "input_tokens": int(tokens_in), "cost_usd": cost}


# ----------------------------------------------------------------- the pass
async def judge_pass(
    store: Store, *, judged_run: dict[str, Any], judge_name: str, judge_spec: AgentSpec,
    rubric: Rubric, phase: str = "play", limit: int | None = None, concurrency: int = 4,
    budget_usd: float | None = None, max_attempts: int = 3, listener: Any = None,
    agent: Any = None,
) -> tuple[str, JudgeStats]:
    """Judge every not yet judged decision of ``judged_run`` in ``phase``; (run id, stats).

    ``listener`` receives the engine's events (progress bars, tests); ``agent`` replaces
    the agent built from ``judge_spec`` (tests).
    """
    from coop_tui.sweep import RunLease

    judge_spec = protocol_spec(judge_spec, rubric)
    public = judge_spec.public()
    run_id = judge_run_id(judged_run["id"], rubric, public, phase)
    if store.run(run_id) is None:
        store.create_run(
            run_id, f"{rubric.name} by {judge_name} of {judged_run.get('name')}",
            kind=JUDGE_KIND, seed=0, sweep_hash=rubric.digest,
            spec={"judge_of_run": judged_run["id"], "judge": judge_name, "agent_spec": public,
                  "rubric": rubric.public(), "rubric_digest": rubric.digest, "phase": phase},
        )
    lease = RunLease(store, run_id)
    lease.acquire(field="judge", then="run the same judge command again (it continues the pass)")
    keep_alive = asyncio.create_task(lease.keep_alive())
    judging = _JudgePass(
        store, run_id, judged_run, judge_name, judge_spec, rubric, concurrency=concurrency,
        budget_usd=budget_usd, max_attempts=max_attempts, listener=listener, agent=agent,
    )
    status = "done"
    try:
        await judging.judge_pages(phase, limit)
        status = judging.outcome()
    except BaseException:
        status = "stopped"
        raise
    finally:
        keep_alive.cancel()
        store.set_run_status(run_id, status, "; ".join(judging.stats.errors[:3]) or None)
        lease.release()
        await judging.close()
    return run_id, judging.stats


class _JudgePass:
    """The judge agent at work on one judged run: a judge match per judged match, a
    judgement per decision, asked through the engine and linked to what it judges; the
    budget, the judgements in flight and the stats are shared by all of them."""

    def __init__(
        self, store: Store, run_id: str, judged_run: dict[str, Any], judge_name: str,
        judge_spec: AgentSpec, rubric: Rubric, *, concurrency: int, budget_usd: float | None,
        max_attempts: int, listener: Any, agent: Any,
    ) -> None:
        from coop_tui.games import load_game

        self.store, self.run_id, self.judged_run = store, run_id, judged_run
        self.judge_name, self.judge_spec, self.rubric = judge_name, judge_spec, rubric
        self.public = judge_spec.public()
        self.budget_usd, self.max_attempts = budget_usd, max_attempts
        self.stats = JudgeStats()
        batching = bool(judge_spec.batch) and judge_spec.kind == "llm"
        self.agent = agent if agent is not None else build_agent(
            judge_name, judge_spec, concurrency=concurrency, batch=batching)
        self.hub: BatchHub | None = None
        if getattr(self.agent, "batch", False):  # every item of a page in one provider batch
            self.hub = self.agent.batcher = BatchHub(BatchLedger(store.path, store.commit_pending))
        self.bus = EventBus()
        self.bus.subscribe(store, critical=True)
        if listener is not None:
            self.bus.subscribe(listener)
        # through a Batch API every item of a page waits in the batch, not in a queue here
        self.slots = asyncio.Semaphore(
            BATCH_IN_FLIGHT if self.hub is not None else max(1, concurrency))
        self.placeholder = load_game("prisoners")  # the judge plays no game; the context needs one
        self.spent = store.run_cost(run_id)
        self.budget_hit = asyncio.Event()
        self.inflight: dict[str, asyncio.Future[None]] = {}

    async def judge_pages(self, phase: str, limit: int | None) -> None:
        """Every page of judged matches, until done, the budget is hit or ``limit``
        decisions were taken; the matches of a page run together."""
        stats, left = self.stats, limit
        for page in _pages(self.store, self.judged_run["id"], self.run_id, phase,
                           selection_sql(self.rubric)):
            batch = []
            for match, rows in page:
                if left is not None:
                    rows = rows[:left]
                    left -= len(rows)
                if rows:
                    batch.append(self.judge_match(match, rows))
                    stats.to_judge += len(rows)
            # matches of a page run together; the semaphore bounds requests in flight
            await asyncio.gather(*batch)
            if self.budget_hit.is_set() or (left is not None and left <= 0):
                break

    def outcome(self) -> str:
        """The pass's status once its pages are through: stopped by the budget (said in
        the errors), failed when a judgement was not answered, else done."""
        if self.budget_hit.is_set():
            self.stats.errors.append(
                f"budget of ${self.budget_usd:g} reached; the rest is not judged")
            return "stopped"
        if self.stats.failed:
            return "failed"
        return "done"

    async def close(self) -> None:
        from coop_tui.sweep import close_agents

        if self.hub is not None:  # pending batches stay with the provider: a rerun polls them
            await asyncio.shield(self.hub.aclose())
        await asyncio.shield(close_agents([self.agent]))

    async def judge_match(self, match: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        """One judge match: seat 0 is the judge, one judgement per decision of ``rows``;
        failed when a judgement was not answered, stopped when the budget left some."""
        from coop_tui.engine import DecisionPolicy, MatchContext, stable_hash
        from coop_tui.spec import DEFAULT_MAX_PROMPT_TOKENS

        stats, bus = self.stats, self.bus
        match_id = stable_hash([self.run_id, match["id"]])[:16]
        bus.emit(MatchStarted(
            run_id=self.run_id, match_id=match_id, experiment=match.get("experiment") or 0,
            game=match["game"], mechanism=match["mechanism"], seats=(self.judge_name,),
            condition=json.loads(match.get("condition") or "{}"), sample=0, seed=0,
            info={"match_key": match_id, "matchup": JUDGE_KIND, "agent_specs": [self.public],
                  "agent_kinds": [self.judge_spec.kind],
                  "judge_of": {"run_id": self.judged_run["id"], "match_id": match["id"]}},
        ))
        ctx = MatchContext(
            run_id=self.run_id, match_id=match_id, game=self.placeholder, agents=[self.agent],
            bus=bus, seed=0, policy=DecisionPolicy(max_attempts=self.max_attempts,
                                                   on_invalid="abort",
                                                   max_prompt_tokens=DEFAULT_MAX_PROMPT_TOKENS),
            lookup=self.store,
        )
        before = stats.failed
        linked = await asyncio.gather(*(self.judge_one(ctx, match, row) for row in rows))
        failed = stats.failed - before
        if failed:
            bus.emit(MatchDone(match_id, (), status="failed",
                               error=f"{failed} judgement(s) not answered: {stats.errors[-1]}"
                               if stats.errors else f"{failed} judgement(s) not answered"))
        else:  # stopped: the budget left some of its decisions unjudged
            bus.emit(MatchDone(match_id, (), status="done" if all(linked) else "stopped"))

    def request(self, match: dict[str, Any], row: dict[str, Any]) -> tuple[DecisionRequest, str]:
        """The judgement request for one decision, and its prompt."""
        rubric = self.rubric
        if rubric.coopeval:  # CoopEval's judge reads who answered where, and the answer only
            prompt = rubric.prompt(judged_text(row["response"], None), coopeval_lines(match, row))
        else:
            text = judged_text(row["response"], row["reasoning"])
            prompt = rubric.prompt(text, context_line(match, row))
        request = DecisionRequest(
            seat=0, round=int(row["round"]), phase=JUDGE_KIND, kind="judgement",
            messages=({"role": "user", "content": prompt},),
            view=SeatView(game=self.placeholder, seat=0, round=int(row["round"])),
            labels=rubric.ids, schema=None, options=rubric.answer_options(),
        )
        return request, prompt

    async def judge_one(self, ctx: MatchContext, match: dict[str, Any], row: dict[str, Any]) -> bool:
        """Judge one decision and link it; False when it was not (budget, transport)."""
        from coop_tui.engine import stable_hash

        request, prompt = self.request(match, row)
        # The same text judged twice at once (CoopEval repeats answers) is asked once: the
        # second waits for the first and then finds it in the store by its keys.
        same = stable_hash([request.round, prompt])
        first = self.inflight.get(same)
        if first is not None:
            await asyncio.shield(first)
        else:
            self.inflight[same] = asyncio.get_running_loop().create_future()
        try:
            hub = self.hub
            async with self.slots, hub.playing() if hub is not None else contextlib.nullcontext():
                if self.budget_hit.is_set():
                    return False
                try:
                    decision = await ctx.ask(request)
                except Exception as exc:  # transport gave up: counted, retried by a rerun
                    self.stats.failed += 1
                    if len(self.stats.errors) < MAX_ERRORS_KEPT:
                        self.stats.errors.append(
                            f"decision #{row['id']}: {type(exc).__name__}: {exc}")
                    return False
        finally:
            if first is None:
                self.inflight.pop(same).set_result(None)
        link(self.store, judge_run_id=self.run_id, judged_run_id=self.judged_run["id"],
             judged_decision_id=int(row["id"]), decision=decision, judge=self.judge_name,
             rubric=self.rubric)
        ctx.decisions.clear()  # the store holds them; a long pass keeps nothing in memory
        self.count(decision)
        return True

    def count(self, decision: Any) -> None:
        """A linked judgement in the stats and the money spent; the budget hit once spent."""
        stats = self.stats
        if decision.reused:
            stats.reused += 1
        else:
            stats.asked += 1
            stats.cost_usd += decision.cost_usd or 0.0
            self.spent += decision.cost_usd or 0.0
        if not decision.valid:
            stats.invalid += 1
        if self.budget_usd is not None and self.spent >= self.budget_usd:
            self.budget_hit.set()


# ----------------------------------------------------------------- the command
def judge_command(
    db_path: Path, run_ref: str | None, *, judge: str, rubric_ref: str, agents_file: str | None,
    phase: str | None, limit: int | None, resume: bool, concurrency: int | None,
    budget_usd: float | None, dry_run: bool, assume_yes: bool,
    console: Console | None = None, protocol: str | None = None, selection: str | None = None,
) -> int:
    from rich.console import Console

    console = console or Console()
    rubric, phase = _checked_options(limit, budget_usd, rubric_ref, protocol, selection, phase)
    judge_name, spec = resolve_judge(judge, agents_file, check_keys=not dry_run)
    spec = protocol_spec(spec, rubric)
    if not db_path.exists():
        return fail(f"--db: no database at {db_path}; run a sweep or import a run first")
    from coop_tui.runner import open_store

    store = open_store(db_path)
    judged = _judged_run(store, run_ref)
    if judged is None:
        return fail(f"RUN: no run {run_ref!r} in {db_path}; see coop-tui list runs"
                    if run_ref else f"RUN: {db_path} holds no run to judge")
    run_id = judge_run_id(judged["id"], rubric, spec.public(), phase)
    exists = store.run(run_id) is not None
    if resume and not exists:
        return fail(f"--resume: there is no judge pass of run {judged['id']} with {judge_name} "
                    f"and rubric {rubric.name} to continue; run it without --resume")
    counts = pending_counts(store, judged["id"], run_id, phase, rubric)
    n = counts["pending"] if limit is None else min(limit, counts["pending"])
    chars = counts["chars"] * n // counts["pending"] if counts["pending"] else 0
    est = estimate(spec, rubric, n, chars)
    _print_plan(console, judged, judge_name, rubric, phase, counts, n, est)
    if budget_usd is not None and (est["cost_usd"] or 0) > budget_usd:
        console.print(f"[yellow]the estimate exceeds the budget of ${budget_usd:g}: the pass "
                      "stops when the budget is spent")
    if dry_run or n == 0:
        if n == 0:
            console.print(f"nothing to ask: judge run {run_id} is complete")
        if dry_run:
            _print_judge_key(judge_name, spec, console)
        return 0
    confirm = (est["cost_usd"] or 0) > 1.0 and not assume_yes and sys.stdin.isatty()
    if confirm and console.input("Start? [y/N] ").strip().lower() not in ("y", "yes"):
        return 1
    console.print(f"database: {db_path}\n{'continuing' if exists else 'judge'} run {run_id}")
    view = _Progress(console, n)
    started = time.perf_counter()
    from coop_tui.runner import run_stoppable, stop_words

    with view.progress:
        result, stopped_by = run_stoppable(judge_pass(
            store, judged_run=judged, judge_name=judge_name, judge_spec=spec, rubric=rubric,
            phase=phase, limit=limit, concurrency=concurrency or 4, budget_usd=budget_usd,
            listener=view,
        ))
    if stopped_by is not None:

        again = ["coop-tui", "judge", judged["id"], "--judge", judge, "--rubric", rubric_ref]
        if agents_file:
            again += ["--agents", agents_file]
        if phase != "play":
            again += ["--phase", phase]
        again += ["--db", str(db_path), "--resume"]
        console.print(f"{stop_words(stopped_by)}: judge run {run_id} stopped; continue with: "
                      f"{shlex.join(again)}", style="yellow", markup=False,
                      highlight=False, soft_wrap=True)
        store.close()
        return stopped_by
    run_id, stats = result
    _print_result(console, stats, time.perf_counter() - started)
    console.print(f"analysis: coop-tui report {judged['id']} --db {db_path}")
    store.close()
    return 1 if stats.failed else 0


def _checked_options(
    limit: int | None, budget_usd: float | None, rubric_ref: str, protocol: str | None,
    selection: str | None, phase: str | None,
) -> tuple[Rubric, str]:
    """``--limit`` and ``--budget`` checked, the rubric loaded with its protocol and
    selection, and the phase to judge (the rubric's own unless ``--phase`` names another)."""
    from coop_tui.judging.rubric import load_rubric

    if limit is not None and limit < 1:
        raise SpecError("--limit", f"{limit} is not a positive number of decisions; give 1 or more")
    if budget_usd is not None and not budget_usd > 0:
        raise SpecError("--budget", f"{budget_usd} is not a positive amount of dollars")
    rubric = load_rubric(rubric_ref).with_protocol(protocol).with_selection(selection)
    phase = phase or rubric.phase  # the rubric's own phase unless --phase names another
    if phase not in PHASES_WITH_TEXT:
        raise SpecError("--phase", f"unknown phase {phase!r}; use one of {', '.join(PHASES_WITH_TEXT)}")
    return rubric, phase


def _print_plan(
    console: Console, judged: dict[str, Any], judge_name: str, rubric: Rubric, phase: str,
    counts: dict[str, int], n: int, est: dict[str, Any],
) -> None:
    """What the pass is about to do: what it judges, with what, and at what cost."""
    from coop_tui.terminal import NAME_WIDTH, terminal_text  # Rich, like the console

    price = "unknown price" if est["cost_usd"] is None else f"~${est['cost_usd']:.4f}"
    console.print(
        f"[bold]judge[/] run {judged['id']} ({terminal_text(judged.get('name'), limit=NAME_WIDTH)}): "
        f"{counts['eligible']} {phase} decisions {_selected(rubric)}, {counts['judged']} already "
        f"judged; asking {terminal_text(judge_name)} about {n} with rubric "
        f"{terminal_text(rubric.name)} v{rubric.version} "
        f"({len(rubric.ids)} categories, protocol {rubric.protocol}): "
        f"~{est['calls']} model calls, ~{est['input_tokens']:,} input tokens, {price}"
    )


def _print_result(console: Console, stats: JudgeStats, seconds: float) -> None:
    """What the pass did, and its first errors."""
    from coop_tui.terminal import terminal_text

    console.print(
        f"judged {stats.to_judge - stats.failed} of {stats.to_judge} in "
        f"{seconds:.1f} s: asked {stats.asked}, reused {stats.reused}, "
        f"invalid {stats.invalid}, failed {stats.failed}, cost ${stats.cost_usd:.4f}"
    )
    for error in stats.errors[:5]:
        console.print(f"[red]{terminal_text(error)}")


def _selected(rubric: Rubric) -> str:
    from coop_tui.judging.rubric import COOPEVAL_MIN_CHARS

    logged = " whose prompt is stored" if rubric.logged_only else ""
    if rubric.coopeval:
        return (f"of chain-of-thought agents with at least {COOPEVAL_MIN_CHARS} characters of "
                f"answer{logged} (judged at temperature 0)")
    return f"with text{logged}"


def game_name(match: dict[str, Any]) -> str:
    """The game as CoopEval's judge is told it: CoopEval's name for its six games
    ("PrisonersDilemma"), else the title from the match's game spec, else the key."""
    from coop_tui.judging.rubric import coopeval_game_name

    try:
        title = json.loads(match.get("game_spec") or "{}").get("title")
    except (TypeError, ValueError, AttributeError):
        title = None
    key = str(match.get("game") or "")
    return coopeval_game_name(key, str(title or key or "unknown game"))


def coopeval_lines(match: dict[str, Any], row: dict[str, Any]) -> str:
    """The judge's input lines under CoopEval's protocol: game, mechanism, run, player."""
    from coop_tui.judging.rubric import coopeval_input_lines

    try:
        order = json.loads(match.get("condition") or "{}").get("order")
    except (TypeError, ValueError, AttributeError):
        order = None
    return coopeval_input_lines(game_name(match), str(match.get("mechanism") or "none"),
                                order, str(row.get("agent") or f"seat {row.get('seat')}"))


def _judged_run(store: Store, ref: str | None) -> dict[str, Any] | None:
    """RUN, or the latest run that is not itself a judge pass or a re-ask."""
    if ref is not None:
        return store.resolve_run(ref)
    rows = list(store.db["runs"].rows_where(
        "kind not in (?, ?) or kind is null", [JUDGE_KIND, "reask"],
        order_by="created_at desc", limit=1))
    return rows[0] if rows else None


class _Progress:
    """One bar over the judgements: done / total, ETA, asked, reused, invalid, cost.

    Every judgement is a model call, timed by the sweeps' estimator (:mod:`coop_tui.eta`):
    reused judgements count as done but not towards the speed, which they would fake."""

    def __init__(self, console: Console, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        from coop_tui.runner import EtaColumn

        self.clock = CallClock(total, total, None)
        eta = EtaColumn(self.clock)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(), eta,
            TextColumn("{task.fields[stats]}"), console=console,
        )
        self.task = self.progress.add_task("judge", total=total, stats="")
        eta.row = self.task
        self.counts = {"asked": 0, "reused": 0, "invalid": 0, "re-asks": 0}
        self.cost = 0.0

    def __call__(self, event: Any) -> None:
        self.clock.observe(event, time.monotonic())
        if not isinstance(event, DecisionDone):
            return
        d = event.decision
        self.counts["reused" if d.reused else "asked"] += 1
        if not d.valid:
            self.counts["invalid"] += 1
        if not d.reused:
            self.counts["re-asks"] += max(0, len(d.retries) - (0 if d.valid else 1))
            self.cost += d.cost_usd or 0.0
        stats = "  ".join(f"{k} {v}" for k, v in self.counts.items()) + f"  ${self.cost:.4f}"
        self.progress.update(self.task, advance=1, stats=stats)


__all__ = ["JudgeStats", "estimate", "game_name", "judge_command", "judge_pass", "judge_run_id",
           "pending_counts", "protocol_spec", "resolve_judge", "selection_sql"]
