"""``coop-tui watch``: what a running headless sweep is doing, from another terminal.

A watcher reads the run's state so far from the database (:meth:`Store.watch_snapshot`:
aggregates over indexes, never the run's rows one by one), then follows the events the
sweep publishes on its socket (:mod:`coop_tui.channel`), whose address is in the run's
lease row. :class:`WatchState` holds the dashboard's numbers and is updated by both; the
Textual screen (``screens/watch.py``) and the plain one-line-per-event mode here show it.

When the stream ends the lease row tells how: no lease (the sweep released it) means the
sweep ended, and the run's status says how it ended; a lease whose process no longer
runs means the process was killed (``kill -9``, a crash, a reboot): "the sweep process
is gone", and ``--resume`` continues the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from coop_tui.channel import Malformed, Skipped, decode, subscribe
from coop_tui.errors import SpecError
from coop_tui.eta import CallClock
from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    Event,
    MatchDone,
    MatchStarted,
    ReasoningDelta,
    RoundDone,
    RunDone,
    RunProgress,
    StreamRestarted,
    TextDelta,
)
from coop_tui.store import LEASE_STALE_S, Store, condition_key
from coop_tui.terminal import terminal_text

SILENT = "publishing no events (a run of the TUI or of an older coop-tui)"
"""Why a live run is followed through the database (one of the reasons; see ``follow``)."""
POLL_S = 2.0
"""How often a watcher that cannot follow a live sweep's events reads the database."""
SETTLE_CHECKS, SETTLE_STEP_S = 60, 0.05
"""How long a watcher waits for a sweep that hung up to be gone or done (3 s at most)."""
CURVE_POINTS = 400
"""Finished matches the cooperation curve keeps per condition (older points fall off)."""


@dataclass
class Experiment:
    """One experiment's counts on the dashboard."""

    name: str
    total: int = 0
    done: int = 0
    running: int = 0
    failed: int = 0
    decisions: int = 0
    calls: int = 0
    invalid: int = 0
    retries: int = 0
    cost: float = 0.0


@dataclass
class Condition:
    """Cooperation so far in one condition of one experiment, and its curve."""

    label: str
    parts: tuple[str, str, str] = ("", "", "")
    """Its game, mechanism and condition key (for :func:`distinct_labels`)."""
    cooperated: float = 0.0
    counted: int = 0
    curve: list[float] = field(default_factory=list)
    """The running cooperation rate after each finished match."""

    @property
    def rate(self) -> float | None:
        return self.cooperated / self.counted if self.counted else None


def condition_label(game: str, mechanism: str, key: str) -> str:
    """``prisoners · repeated · rounds=5`` (the key drops the game, shown first)."""
    return " · ".join(p for p in (game, mechanism, " ".join(_key_words(key))) if p)


def _key_words(key: str) -> list[str]:
    # here, not at the top: the protocol registry brings numpy and the games into
    # `coop-tui watch`, which only needs it to name a protocol in a label
    from coop_tui.protocols import shown_key

    return [w for w in shown_key(key).split(" ") if not w.startswith("game=") and w != "-"]


def distinct_labels(parts: dict[Any, tuple[str, str, str]]) -> dict[Any, str]:
    """Labels of conditions (game, mechanism, key) that lead with what tells them apart:
    ``similarity=50 · prisoners · similarity · framing=similar ...``. A label is cut to
    fit a column or a legend, and conditions that differ only in their last field (the
    key's fields are sorted) would all read ``framing=similar prompt…``."""
    if len(parts) < 2:  # nothing to tell apart
        return {k: condition_label(*p) for k, p in parts.items()}
    words = {k: [game, mechanism, *_key_words(key)] for k, (game, mechanism, key) in parts.items()}
    common = set.intersection(*(set(w) for w in words.values()))
    labels = {}
    for k, ws in words.items():
        differ = " ".join(w for w in ws if w and w not in common)
        game, mechanism, key = parts[k]
        plain = condition_label(game, mechanism, key)
        labels[k] = f"{differ} · {plain}" if differ and differ != plain else plain
    return labels


class WatchState:
    """The dashboard of one run: loaded from the database, then kept up by events."""

    def __init__(self, run: dict[str, Any], lease: dict[str, Any] | None) -> None:
        self.run_id = str(run["id"])
        self.name = str(run.get("name") or "")
        try:
            spec = json.loads(run.get("spec") or "{}")
        except ValueError:
            spec = {}
        self.budget: float | None = spec.get("budget_usd") if isinstance(spec, dict) else None
        plan = (lease or {}).get("plan") or {}
        self.models: list[str] = [str(m) for m in plan.get("models", [])]
        self.experiments: dict[int, Experiment] = {
            int(k): Experiment(str(v.get("name") or f"#{k}"), int(v.get("total") or 0))
            for k, v in (plan.get("experiments") or {}).items()
        }
        self.matches_total = int(plan.get("matches_total") or 0)
        limit = plan.get("concurrency")
        self.limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
        """The sweep's concurrency (calls asked beyond it wait for a slot)."""
        self.clock = CallClock(int(plan.get("model_calls") or 0), self.matches_total, self.models,
                               limit=self.limit)
        self.conditions: dict[tuple[int, str], Condition] = {}
        self.running: dict[str, dict[str, Any]] = {}
        """Matches in flight: id -> experiment, game, condition key, agents, label."""
        self.started_at = time.monotonic()
        self.status = "running"
        """running / ended / gone / silent (running, but followed through the database)"""
        self.why_silent = SILENT
        """Why a silent run's events cannot be followed."""
        self.skipped = 0
        """Channel lines skipped: malformed, or too long to read."""
        self.ended = ""
        """How the sweep ended (its run status and error), once it has."""
        self.connected = False
        """True once the sweep's channel has greeted this watcher (events flow from then)."""
        self.dropped = 0
        self.lagging = 0
        self.cost = 0.0

    def quiet(self, why: str) -> None:
        """The sweep runs but its events cannot be followed (``why``): the numbers come
        from the database."""
        self.status, self.why_silent = "silent", why

    # ------------------------------------------------------------ from the database
    def load(self, store: Store) -> None:
        """Replace the counts with the database's (at attach, and after lagging)."""
        snap = store.watch_snapshot(self.run_id, self.models, curve_points=CURVE_POINTS)
        for exp in self.experiments.values():
            exp.done = exp.running = exp.failed = exp.decisions = exp.calls = 0
            exp.invalid = exp.retries = 0
            exp.cost = 0.0
        for experiment, status, n in snap["statuses"]:
            exp = self.experiment(experiment)
            if status == "done":
                exp.done += n
            elif status == "failed":
                exp.failed += n
            elif status == "running":
                exp.running += n
        for experiment, n, invalid, retries, cost, calls in snap["decisions"]:
            exp = self.experiment(experiment)
            exp.decisions, exp.invalid, exp.retries = n, invalid or 0, retries or 0
            exp.cost, exp.calls = float(cost or 0.0), calls or 0
        self.conditions.clear()
        for experiment, key, game, mechanism, _cond, cooperated, counted in snap["cooperation"]:
            c = self.condition(experiment, key, game, mechanism)
            c.cooperated, c.counted = float(cooperated or 0), int(counted or 0)
        curves: dict[tuple[int, str], list[float]] = {}
        for experiment, key, _at, rate in snap["curve"]:
            if rate is not None:
                curves.setdefault((int(experiment or 0), key), []).append(float(rate))
        for ckey, rates in curves.items():
            if ckey in self.conditions:
                total = 0.0
                self.conditions[ckey].curve = [
                    (total := total + r) / (i + 1) for i, r in enumerate(rates)]
        self.running = {
            row["id"]: {"experiment": int(row["experiment"] or 0), "game": row["game"],
                        "key": row["condition_key"], "agents": row["agents"] or "",
                        "label": self._match_label(row["game"], row["mechanism"],
                                                   row["condition_key"], row["agents"] or "")}
            for row in snap["running"]
        }
        self.cost = sum(e.cost for e in self.experiments.values())
        done = sum(e.done + e.failed for e in self.experiments.values())
        self.clock = CallClock(self.clock.calls_total, self.matches_total, self.models,
                               limit=self.limit)
        self.clock.skip(done)

    # ------------------------------------------------------------ from the stream
    def apply(self, event: Event, now: float | None = None) -> None:
        """Count one published event in."""
        now = time.monotonic() if now is None else now
        self.clock.observe(event, now)
        if isinstance(event, MatchStarted):
            if event.match_id in self.running:  # read from the database, then streamed
                return
            key = condition_key(event.condition)
            self.experiment(event.experiment).running += 1
            self.condition(event.experiment, key, event.game, event.mechanism)
            agents = " vs ".join(event.seats)
            self.running[event.match_id] = {
                "experiment": event.experiment, "game": event.game, "key": key, "agents": agents,
                "label": self._match_label(event.game, event.mechanism, key, agents)}
        elif isinstance(event, DecisionDone):
            self._decision(event)
        elif isinstance(event, MatchDone):
            self._match_done(event)
        elif isinstance(event, RunProgress):
            self.cost = event.cost_usd
        elif isinstance(event, RunDone):
            self.status, self.ended = "ended", event.status + (f": {event.error}" if event.error else "")

    def _decision(self, event: DecisionDone) -> None:
        d = event.decision
        match = self.running.get(d.match_id)
        if match is None:
            return
        exp = self.experiment(match["experiment"])
        exp.decisions += 1
        exp.invalid += 0 if d.valid else 1
        exp.retries += max((d.attempts or 1) - 1, 0) + (d.transport_retries or 0)
        if not d.reused:
            exp.cost += d.cost_usd or 0.0
            self.cost += d.cost_usd or 0.0
        if d.agent in self.models:
            exp.calls += 1
        if d.cooperated is not None:
            c = self.conditions.get((match["experiment"], match["key"]))
            if c is not None:
                c.cooperated += float(d.cooperated)
                c.counted += 1
                match["coop"] = match.get("coop", 0.0) + float(d.cooperated)
                match["counted"] = match.get("counted", 0) + 1

    def _match_done(self, event: MatchDone) -> None:
        match = self.running.pop(event.match_id, None)
        if match is None:
            return
        exp = self.experiment(match["experiment"])
        exp.running = max(exp.running - 1, 0)
        if event.status == "done":
            exp.done += 1
        elif event.status == "failed":
            exp.failed += 1
        c = self.conditions.get((match["experiment"], match["key"]))
        if c is not None and event.status == "done" and c.rate is not None:
            c.curve.append(c.rate)
            del c.curve[:-CURVE_POINTS]

    # ------------------------------------------------------------ helpers
    def experiment(self, index: Any) -> Experiment:
        index = int(index or 0)
        if index not in self.experiments:
            self.experiments[index] = Experiment(f"#{index}")
        return self.experiments[index]

    def condition(self, experiment: Any, key: str, game: str, mechanism: str) -> Condition:
        ckey = (int(experiment or 0), key)
        if ckey not in self.conditions:
            self.conditions[ckey] = Condition(condition_label(game, mechanism, key),
                                              (game, mechanism, key))
        return self.conditions[ckey]

    def labels(self) -> dict[tuple[int, str], str]:
        """Each condition's label, leading with what tells it from the others."""
        return distinct_labels({k: c.parts for k, c in self.conditions.items()})

    def match_label(self, info: dict[str, Any], labels: dict[tuple[int, str], str]) -> str:
        """A running match: its agents and its condition's label from ``labels``."""
        label = labels.get((int(info.get("experiment") or 0), str(info.get("key"))))
        return f"{info.get('agents', '')} · {label}" if label else str(info.get("label", ""))

    @staticmethod
    def _match_label(game: str, mechanism: str, key: str, agents: str) -> str:
        return f"{agents} · {condition_label(game, mechanism, key)}"

    def rates(self, exp: Experiment) -> tuple[float | None, float | None]:
        """(invalid-answer rate, retries per decision) of an experiment so far."""
        if not exp.decisions:
            return None, None
        return exp.invalid / exp.decisions, exp.retries / exp.decisions

    def calls_per_minute(self, now: float) -> float | None:
        """Model calls answered per minute, over the clock's window."""
        each = self.clock.calls.seconds_each(now)
        return None if not each else 60.0 / each

    def headline(self, now: float | None = None) -> str:
        """One line: status, spend against the budget, rate and the ETA."""
        now = time.monotonic() if now is None else now
        spend = f"${self.cost:.4f}" + (f" of ${self.budget:g}" if self.budget is not None else "")
        rate = self.calls_per_minute(now)
        per_minute = f"{rate:.1f} calls/min" if rate is not None else "calls/min ?"
        state = {"running": "running", "ended": f"sweep ended ({self.ended})",
                 "gone": "sweep process is gone",
                 "silent": f"running, but {self.why_silent}: the numbers are the database's",
                 }[self.status]
        lag = f"  {self.dropped} deltas dropped" if self.dropped else ""
        if self.skipped:
            lag += f"  {self.skipped} malformed lines skipped"
        return (f"{state}  spend {spend}  {per_minute}  {self.clock.describe(now)}"
                f"  {len(self.running)} matches running{lag}")

    def summary_lines(self) -> list[str]:
        """The dashboard as plain lines (the text mode prints them at attach and end)."""
        lines = [f"run {self.run_id} {self.name}: {self.headline()}"]
        labels = self.labels()
        for index, exp in sorted(self.experiments.items()):
            invalid, retries = self.rates(exp)
            lines.append(
                f"  {exp.name}: matches {exp.done} done, "
                f"{exp.running} running, {exp.failed} failed of {exp.total or '?'}; "
                f"decisions {exp.decisions}, model calls {exp.calls}, "
                f"invalid {_percent(invalid)}, retries {_percent(retries)}, ${exp.cost:.4f}")
            for (e, key), c in sorted(self.conditions.items()):
                if e == index:
                    lines.append(f"    cooperation {_percent(c.rate)} "
                                 f"({c.counted} moves)  {labels[(e, key)]}")
        return lines


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


# ------------------------------------------------------------------ finding the sweep
def watched_run(store: Store, ref: str | None) -> dict[str, Any]:
    """The run ``watch`` attaches to: ``ref`` (id, id prefix or name), else the newest
    running run; SpecError (exit 2) naming RUN when there is none."""
    run = store.resolve_run(ref) if ref else store.running_run()
    if run is None:
        what = f"no run {ref!r} in {store.path}" if ref else f"no running run in {store.path}"
        raise SpecError("RUN", f"{what}; start a sweep with `coop-tui --batch FILE --db "
                               f"{store.path}`, or name a run listed by `coop-tui list runs`")
    return run


def end_state(store: Store, run_id: str) -> tuple[str, str]:
    """After the stream stops (or cannot start): ("ended", how) or ("gone", why)."""
    lease = store.lease(run_id)
    run = store.run(run_id) or {}
    if lease is not None and not lease["alive"]:
        age = time.time() - float(lease["heartbeat"] or 0)
        if age > LEASE_STALE_S:
            why = (f"process {lease['pid']} on {lease['host']} stopped renewing its lease "
                   f"{age:.0f} s ago")
        else:
            why = f"process {lease['pid']} no longer runs"
        return "gone", f"{why}; continue with --resume"
    status = str(run.get("status") or "?")
    if status == "running" and lease is None:
        return "gone", "the run is marked running but no process holds it; continue with --resume"
    error = run.get("error")
    return "ended", status + (f": {error}" if error else "")


def take(state: WatchState, data: dict[str, Any] | Skipped) -> Event | dict[str, Any] | None:
    """One wire object counted into ``state``: the event it carries (applied), a control
    line to hand on, or None. A line that is not a well-formed event is skipped and
    counted (``state.skipped``); an event type this version does not know is ignored (a
    newer sweep may publish more)."""
    if isinstance(data, Skipped):
        state.skipped += 1
        return None
    kind = data.get("type")
    if kind in ("dropped", "lagging"):  # the publisher's counts of what it dropped for us
        count = data.get("count" if kind == "dropped" else "dropped")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            state.skipped += 1
            return None
        state.dropped = count
        if kind == "dropped":
            return None
        state.lagging += 1
        return data
    if kind == "hello":
        state.connected = True
        return data
    try:
        event = decode(data)
    except Malformed:
        state.skipped += 1
        return None
    if event is not None:
        state.apply(event)
    return event


async def follow(store: Store, state: WatchState) -> AsyncIterator[Event | dict[str, Any]]:
    """The run's published events (and control lines as dicts) until the sweep ends; the
    state is updated before each is handed on, and its end state set at the end.

    A sweep that is alive (:func:`~coop_tui.store.lease_alive`: its heartbeat, and on this
    host its pid) but cannot be followed, because it runs on another host sharing the
    database file, publishes nothing, or its socket cannot be reached, is followed through
    the database instead (a ``reloaded`` control line each time) until it ends."""
    lease = store.lease(state.run_id)
    address = (lease or {}).get("channel") or ""
    if lease is not None and lease["alive"] and not lease["here"]:
        state.quiet(f"its events reach only a watcher on {lease['host']}, where process "
                    f"{lease['pid']} plays it")
    elif lease is not None and lease["alive"] and not address:
        state.quiet(SILENT)
    elif address:
        try:
            async for data in subscribe(address):
                item = take(state, data)
                if isinstance(item, dict) and item.get("type") in ("hello", "lagging"):
                    # subscribed (what ended before is in the database, not on the stream)
                    # or too slow (the database has what was missed): read it again
                    state.load(store)
                if item is not None:
                    yield item
        except (OSError, ValueError):
            pass  # nothing listens (ended or gone, the lease row says which), or the row
            # names no local socket (tampered): the database is followed instead
    if state.status != "ended" or not state.ended:
        if state.status != "silent":
            await _settled(store, state.run_id)
        while (lease := store.lease(state.run_id)) is not None and lease["alive"]:
            if state.status != "silent":
                state.quiet("running, but its event channel cannot be reached")
            state.load(store)
            yield {"type": "reloaded"}
            await asyncio.sleep(POLL_S)
        state.status, state.ended = end_state(store, state.run_id)
        if state.status == "gone":
            state.ended = ""
    state.load(store)


async def _settled(store: Store, run_id: str) -> None:
    """Wait (briefly) until a sweep whose socket closed has also left its process table
    entry or its lease: the kernel closes a killed process's sockets a moment before the
    process is gone, and until then it still looks alive."""
    for _ in range(SETTLE_CHECKS):
        lease = store.lease(run_id)
        if lease is None or not lease["alive"]:
            return
        await asyncio.sleep(SETTLE_STEP_S)


def event_line(event: Event | dict[str, Any], names: Callable[[str], str]) -> str | None:
    """One line of the plain mode for an event (None: not worth a line)."""
    if isinstance(event, dict):
        if event.get("type") == "lagging":
            return "lagging: reloaded the state from the database"
        if event.get("type") == "hello":
            return "following the sweep's events live"
        return None
    if isinstance(event, TextDelta | ReasoningDelta):
        what = "reasoning" if isinstance(event, ReasoningDelta) else "answer"
        return f"{names(event.match_id)} seat {event.seat} {what}: {event.text}"
    if isinstance(event, MatchStarted):
        return f"{names(event.match_id)} started: {' vs '.join(event.seats)}"
    if isinstance(event, DecisionStarted):
        return f"{names(event.match_id)} seat {event.seat} asked: round {event.round} {event.phase}"
    if isinstance(event, DecisionDone):
        d = event.decision
        outcome = f"action {d.action}" if d.valid else f"invalid ({d.error})"
        return f"{names(d.match_id)} seat {d.seat} answered round {d.round}: {outcome}"
    if isinstance(event, AnswerRejected | StreamRestarted):
        return f"{names(event.match_id)} seat {event.seat}: {event.reason}"
    if isinstance(event, RoundDone):
        return f"{names(event.match_id)} round {event.round}: payoffs {list(event.payoffs)}"
    if isinstance(event, MatchDone):
        return f"{names(event.match_id)} {event.status}: payoffs {list(event.payoffs)}"
    if isinstance(event, RunDone):
        return f"sweep ended: {event.status}"
    return None


async def watch_plain(db_path: Path, ref: str | None, out: TextIO) -> int:
    """The text mode: the dashboard, one line per event, the dashboard again at the end."""
    store = Store(db_path)
    try:
        run = watched_run(store, ref)
        state = WatchState(run, store.lease(run["id"]))
        state.load(store)
        write = _writer(out)
        for line in state.summary_lines():
            write(line)
        said = ""
        async for event in follow(store, state):
            line = event_line(event, lambda mid: f"match {mid[:8]}")
            if line is not None:
                write(line)
            if state.status == "silent" and state.why_silent != said:  # once per reason
                said = state.why_silent
                write(state.headline())
        for line in state.summary_lines():
            write(line)
        if state.status == "gone":
            write(f"sweep process is gone: {end_state(store, state.run_id)[1]}")
        return 0
    finally:
        store.close()


def _writer(out: TextIO) -> Callable[[str], None]:
    def write(line: str) -> None:
        # outside text (answers, names) must not drive the terminal
        out.write(terminal_text(line, markup=False) + "\n")
        out.flush()
    return write
