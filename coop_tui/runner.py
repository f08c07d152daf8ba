"""Headless sweeps: validate, estimate, run with rich progress bars, summarise.

The runner is just another listener on the engine's events; it never touches the
database itself. Validation happens before the database is opened, so bad input
writes nothing.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from coop_tui.events import DecisionDone, Event, EventBus, MatchDone, MatchStarted
from coop_tui.spec import Sweep, load_sweep


def estimate(sweep: Sweep) -> dict[str, Any]:
    """Matches, decisions, model calls and an upper-bound cost before anything runs."""
    from coop_tui.sweep import estimate_decisions

    per_agent: dict[str, int] = {}
    total = estimate_decisions(sweep)
    seats = sum(len(c.seats) * c.samples for c in sweep.cells) or 1
    for cell in sweep.cells:
        for name in cell.seats:
            per_agent[name] = per_agent.get(name, 0) + cell.samples
    calls: dict[str, float] = {}
    for name, n in per_agent.items():
        kind = sweep.spec.agents[name].kind
        if kind in ("llm", "local"):
            calls[name] = n * total / seats
    cost, unknown = 0.0, []
    llm = [n for n in calls if sweep.spec.agents[n].kind == "llm"]
    if llm:
        from coop_tui.agents.llm import cost_for

        for name in llm:
            spec = sweep.spec.agents[name]
            per_call = cost_for(spec.model or "", 700, spec.max_tokens or 800)
            if per_call is None:
                unknown.append(name)
            else:
                cost += per_call * calls[name]
    return {
        "matches": sweep.total_matches,
        "decisions": total,
        "model_calls": int(round(sum(calls.values()))),
        "cost_usd": cost,
        "unknown_price": unknown,
    }


class ProgressView:
    """Overall and per-experiment bars with ETA, failures, retries and cost."""

    def __init__(self, sweep: Sweep, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"),
            console=console,
            transient=False,
        )
        self.overall = self.progress.add_task("all", total=sweep.total_matches, stats="")
        self.tasks: dict[int, TaskID] = {}
        self.stats: dict[Any, dict[str, float]] = {}
        for cell in sweep.cells:
            if cell.experiment not in self.tasks:
                exp = sweep.spec.experiments[cell.experiment]
                label = exp.name or f"#{cell.experiment} {cell.game} / {cell.mechanism}"
                total = sum(c.slots for c in sweep.cells if c.experiment == cell.experiment)
                self.tasks[cell.experiment] = self.progress.add_task(label, total=total, stats="")
        self.match_exp: dict[str, int] = {}

    def _bump(self, key: Any, field: str, amount: float = 1) -> None:
        st = self.stats.setdefault(key, {"failed": 0, "retries": 0, "cost": 0.0, "calls": 0})
        st[field] += amount

    def _fmt(self, key: Any) -> str:
        st = self.stats.get(key, {})
        return (
            f"calls {int(st.get('calls', 0))}  failed {int(st.get('failed', 0))}  "
            f"retries {int(st.get('retries', 0))}  ${st.get('cost', 0.0):.4f}"
        )

    def skip(self, n: int) -> None:
        self.progress.advance(self.overall, n)

    def __call__(self, event: Event) -> None:
        if isinstance(event, MatchStarted):
            self.match_exp[event.match_id] = event.experiment
        elif isinstance(event, DecisionDone):
            d = event.decision
            exp = self.match_exp.get(d.match_id)
            if d.reused:
                return
            for key in ("all", exp):
                self._bump(key, "calls")
                self._bump(key, "retries", len(d.retries) + d.transport_retries)
                self._bump(key, "cost", d.cost_usd or 0.0)
        elif isinstance(event, MatchDone):
            exp = self.match_exp.get(event.match_id)
            if event.status != "done":
                self._bump("all", "failed")
                self._bump(exp, "failed")
            self.progress.advance(self.overall)
            self.progress.update(self.overall, stats=self._fmt("all"))
            if exp in self.tasks:
                self.progress.advance(self.tasks[exp])
                self.progress.update(self.tasks[exp], stats=self._fmt(exp))


def run_batch(
    path: Path,
    db_path: Path,
    *,
    resume: bool = False,
    concurrency: int | None = None,
    assume_yes: bool = False,
    dry_run: bool = False,
    console: Console | None = None,
) -> int:
    from coop_tui.sweep import run_sweep

    console = console or Console(stderr=False)
    sweep = load_sweep(path)  # SpecError -> exit 2 before anything is written
    est = estimate(sweep)
    price = f"~${est['cost_usd']:.4f}" if not est["unknown_price"] else (
        f"~${est['cost_usd']:.4f} + unknown price for {', '.join(est['unknown_price'])}"
    )
    console.print(
        f"[bold]{sweep.name}[/]: {est['matches']} matches, ~{est['decisions']} decisions, "
        f"~{est['model_calls']} model calls, estimated cost {price}"
    )
    budget = sweep.spec.budget_usd
    if budget is not None and est["cost_usd"] > budget:
        console.print(
            f"[yellow]the estimate exceeds the budget of ${budget:g}: the run stops when the budget is spent"
        )
    if dry_run:
        return 0
    if est["cost_usd"] > 1.0 and not assume_yes and sys.stdin.isatty():
        answer = console.input("Start? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return 1
    store = open_store(db_path)
    console.print(f"database: {db_path}")
    bus = EventBus()
    view = ProgressView(sweep, console)
    bus.subscribe(view)
    if resume:
        prev = store.latest_run(name=sweep.name)
        if prev is None:
            console.print(f"[yellow]no earlier run named {sweep.name!r}: starting a new one")
        else:
            from coop_tui.sweep import check_resumable

            check_resumable(prev, sweep)
            done = store.match_status(prev["id"])
            skipped = sum(
                1 for cell, s in sweep.matches() if done.get(cell.match_key(s)) == "done"
            )
            console.print(f"resuming run {prev['id']}: {skipped} of {sweep.total_matches} matches already done")
            view.skip(skipped)
    with view.progress:
        summary = asyncio.run(run_sweep(sweep, store, bus=bus, resume=resume, concurrency=concurrency))
    print_summary(summary, console)
    store.close()
    return 0 if summary.status == "done" else 1


def open_store(db_path: Path) -> Any:
    """The database, or one clear error naming ``--db`` (a folder, no permission, ...)."""
    import sqlite3

    from coop_tui.spec import SpecError
    from coop_tui.store import Store

    try:
        return Store(db_path)
    except (sqlite3.Error, OSError) as exc:
        raise SpecError("--db", f"cannot open {db_path} as a SQLite database ({exc}); "
                                "give a writable file path") from None


def print_summary(summary: Any, console: Console) -> None:
    table = Table(title=f"run {summary.run_id} ({summary.name}): {summary.status}", show_header=False)
    rows = [
        ("matches", f"{summary.matches_done}/{summary.matches_total} "
                    f"({summary.matches_skipped} already done, {summary.matches_failed} failed)"),
        ("decisions", f"{summary.decisions} ({summary.reused} reused from the database)"),
        ("invalid answers", str(summary.invalid)),
        ("re-asks / transport retries", f"{summary.retries} / {summary.transport_retries}"),
        ("cost", f"${summary.cost_usd:.4f}"),
        ("time", f"{summary.elapsed_s:.1f} s"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for err in summary.errors[:5]:
        console.print(f"[red]{err}")
    console.print(f"report: coop-tui report {summary.run_id}")
