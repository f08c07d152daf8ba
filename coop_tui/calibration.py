"""Seconds per embedded-model call on this machine, for the wall time a dry run prints.

An embedded model (``local/...``) runs in this process, one reply at a time, so a study's
wall time is close to its number of model calls times the seconds one call takes here,
whatever the sweep's concurrency. That figure depends on the machine and on what else it
runs, so it is measured rather than assumed, in one of two ways:

* stored: the mean generation time of the embedded-model calls of the last run of the same
  sweep in the database (the time each call held the model, its wait for the model kept
  apart, so concurrency does not inflate it); a whole run is the best predictor there is;
* measured now: one call per distinct agent setting (model, style, max_tokens, threads) on
  a prompt of the mean size the estimate rendered for those agents, timed after the model
  is loaded. A few seconds on a quiet machine; noisier than a stored figure.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coop_tui.agents.factory import build_agent
from coop_tui.agents.local import LocalAgent, LocalModelError, get_model
from coop_tui.decisions import DecisionRequest, NullSink
from coop_tui.prompts import CHARS_PER_TOKEN
from coop_tui.schemas import answer_schema
from coop_tui.spec_models import Sweep

FILLER = (
    "You are one of two players in a repeated game. Each round both players choose an "
    "action at the same time; the payoffs depend on both choices and are shown after the "
    "round. Think about what the other player is likely to do and answer with a mix. "
)
"""Neutral game text repeated to the prompt size the estimate measured."""

LABELS = ("A", "B")
"""A two-action mixed answer: the commonest play decision and its grammar."""


@dataclass(frozen=True)
class CallSpeed:
    """Seconds per embedded-model call and where the figure comes from."""

    seconds: float
    source: str
    """``stored`` (the last run in the database), ``measured`` (a calibration now) or
    ``unknown`` (the model could not run: ``detail`` says why)."""
    detail: str
    """How it was obtained, for the line the dry run prints."""


def embedded_agents(sweep: Sweep) -> list[str]:
    return sorted(n for n, a in sweep.spec.agents.items() if a.kind == "local")


def stored_speed(db_path: Path, sweep: Sweep) -> CallSpeed | None:
    """Mean seconds per embedded-model call of the sweep's last run with such calls that
    recorded the wait for the model apart (read only; None without one)."""
    names = embedded_agents(sweep)
    if not names or not db_path.exists():
        return None
    marks = ",".join("?" * len(names))
    sql = (
        "select r.id, count(*), avg(d.latency_ms) from runs r join matches m on m.run_id = r.id"
        " join decisions d on d.match_id = m.id"
        f" where r.name = ? and d.agent in ({marks}) and d.reused = 0 and d.queue_ms is not null"
        " group by r.id order by r.created_at desc limit 1"
    )
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            row = conn.execute(sql, [sweep.name, *names]).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:  # not a database of ours, or one from before these columns
        return None
    if row is None or not row[1] or row[2] is None:
        return None
    run_id, n, mean_ms = row
    return CallSpeed(mean_ms / 1000.0, "stored",
                     f"the mean of {n} calls of run {run_id} in {db_path}")


def _request(prompt_tokens: float) -> tuple[DecisionRequest, list[dict[str, Any]]]:
    chars = max(int(prompt_tokens * CHARS_PER_TOKEN), len(FILLER))
    text = (FILLER * (chars // len(FILLER) + 1))[:chars]
    messages = [{"role": "user", "content": text}]
    request = DecisionRequest(
        seat=0, round=1, phase="play", kind="mixed", messages=tuple(messages),
        view=None,  # type: ignore[arg-type]  # the embedded model never reads the view
        labels=LABELS, label_to_action=(0, 1), schema=answer_schema("mixed", LABELS), seed=0,
    )
    return request, messages


async def _time_one(agent: LocalAgent, prompt_tokens: float) -> tuple[float, float]:
    """Wall and CPU seconds of one reply (the process's CPU time: only the reply's worker
    thread works meanwhile). With one llama.cpp thread the CPU time is about what the
    call takes on a machine with nothing else to do, whatever the load now."""
    await asyncio.to_thread(get_model, agent.path, agent.threads)  # loading is not a call
    request, messages = _request(prompt_tokens)
    started, cpu = time.perf_counter(), time.process_time()
    await agent.reply(request, messages, NullSink())
    return time.perf_counter() - started, time.process_time() - cpu


def _setting(agent: LocalAgent) -> tuple[Any, ...]:
    return (str(agent.path), agent.style, agent.max_tokens, agent.threads)


def measure_speed(sweep: Sweep, calls: dict[str, float], tokens_in: dict[str, float]) -> CallSpeed:
    """Time one call per distinct embedded-agent setting; the figure is their mean
    weighted by each setting's share of the estimated calls."""
    base = sweep.source.parent if sweep.source else None
    groups: dict[tuple[Any, ...], list[Any]] = {}  # setting -> [agent, calls, tokens]
    for name in embedded_agents(sweep):
        if not calls.get(name):
            continue
        agent = build_agent(name, sweep.spec.agents[name], base=base)
        group = groups.setdefault(_setting(agent), [agent, 0.0, 0.0])
        group[1] += calls[name]
        group[2] += tokens_in.get(name, 0.0)

    async def run() -> list[tuple[float, float]]:
        return [await _time_one(agent, tokens / n) for agent, n, tokens in groups.values()]

    times = asyncio.run(run())
    weights = [n for _agent, n, _tokens in groups.values()]

    def mean(values: list[float]) -> float:
        return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)

    seconds, cpu = mean([t[0] for t in times]), mean([t[1] for t in times])
    return CallSpeed(seconds, "measured",
                     f"measured now, one call per agent setting ({len(times)}) at load average "
                     f"{load_text()}; CPU {cpu:.1f} s per call, about a quiet machine's wall time")


def load_text() -> str:
    """The 1-minute load average against the cores, which the figure depends on."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return "unknown"
    return f"{load:.1f} on {os.cpu_count() or 1} cores"


def call_speed(sweep: Sweep, db_path: Path, calls: dict[str, float],
               tokens_in: dict[str, float]) -> CallSpeed | None:
    """The stored figure when the database has one, else a calibration now; None when
    the sweep makes no embedded-model call."""
    if not any(calls.get(n) for n in embedded_agents(sweep)):
        return None
    stored = stored_speed(db_path, sweep)
    if stored is not None:
        return stored
    try:
        return measure_speed(sweep, calls, tokens_in)
    except LocalModelError as exc:  # a dry run reports what it can: the time is a bonus
        return CallSpeed(0.0, "unknown", f"the embedded model could not be timed: {exc}")


def wall_time_text(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
