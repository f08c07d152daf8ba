"""How long a sweep has left, from its model calls: the one estimator every progress view uses.

A sweep's time goes to its model calls; strategy moves are free. Counting matches (what
a progress bar does by default) therefore says nothing: a study's strategy-only matches
finish in the first seconds and the bar's rate promised "2 s left" with twenty minutes
to go. Here the unit is the model call: the calls still to make (the estimate printed
before the run, less those answered) times the wall time one call takes *in this run*,
measured as the time between completed calls over the last :data:`WINDOW` of them. That
rate already holds the concurrency (four calls at a time complete four times as often)
and whatever else the machine runs. Between completions the open interval counts too, so
a stalled run's estimate grows instead of standing still. A sweep with no model agent
falls back to the same measure over matches.

The clock is fed plain facts with their times (:meth:`CallClock.observe` reads them off
engine events), so it is tested without a run, a model or a real clock.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from typing import Any

from coop_tui.events import DecisionDone, DecisionStarted, Event, MatchDone, MatchStarted

WINDOW = 20
"""Completed calls (or matches) the moving rate is taken over: enough to smooth one slow
answer, few enough to follow a run whose prompts grow."""


class _Rate:
    """Wall seconds per completed unit over the last :data:`WINDOW` completions."""

    def __init__(self, window: int = WINDOW) -> None:
        self.times: deque[float] = deque(maxlen=window + 1)
        self.first_start: float | None = None
        """When the first unit started: the reference until the window has filled."""

    def started(self, now: float) -> None:
        if self.first_start is None:
            self.first_start = now

    def done(self, now: float) -> None:
        self.started(now)
        self.times.append(now)

    def seconds_each(self, now: float) -> float | None:
        """None before the first completion (nothing measured yet)."""
        times = list(self.times)  # a render thread may read while the loop appends
        if not times:
            return None
        full = len(times) == self.times.maxlen
        since = times[0] if full or self.first_start is None else self.first_start
        count = len(times) - 1 if full else len(times)
        return (max(now, times[-1]) - since) / count


class CallClock:
    """Model calls answered, in flight and left, and the time left at the measured rate."""

    def __init__(self, calls_total: int, matches_total: int, models: Iterable[str] | None,
                 *, window: int = WINDOW, limit: int | None = None) -> None:
        self.calls_total = calls_total
        self.limit = limit
        """Calls that can be in flight at once (the sweep's ``concurrency``); None: no
        bound known. A call is counted from the moment it is asked, which is before it
        holds a slot, so more may be asked than are sent: those are shown as waiting."""
        self.matches_total = matches_total
        self.models = None if models is None else frozenset(models)
        """Agents whose decisions are model calls (what the estimate counts); None: every
        decision is one (a judge pass)."""
        self.calls_done = 0
        """Model decisions answered, reused ones included (the estimate counts them)."""
        self.matches_done = 0
        self.in_flight: Counter[tuple[Any, ...]] = Counter()
        """Calls asked and not answered, by (match, seat, round, phase). A count, not a set:
        a judge pass asks about several decisions of one round of one match at once, under
        the same key."""
        self.calls_in_flight = 0
        """Their total, kept as one number: the progress bar's refresh thread reads it
        while the event loop changes the counter."""
        self.calls = _Rate(window)
        self.matches = _Rate(window)

    def is_model(self, agent: str) -> bool:
        return self.models is None or agent in self.models

    @property
    def by_calls(self) -> bool:
        """Whether time is measured in model calls (else in matches: no model agent)."""
        return self.calls_total > 0

    def skip(self, matches: int) -> None:
        """A resumed run's matches done before: their share of the estimated calls too."""
        if self.matches_total:
            share = min(matches, self.matches_total) / self.matches_total
            self.calls_done += int(round(self.calls_total * share))
        self.matches_done += matches

    def call_started(self, key: tuple[Any, ...], now: float) -> None:
        self.in_flight[key] += 1
        self.calls_in_flight += 1
        self.calls.started(now)

    def call_done(self, key: tuple[Any, ...], now: float, *, reused: bool = False) -> None:
        asked = self.in_flight.pop(key, 0)
        if asked:
            self.calls_in_flight -= 1
        if asked > 1:
            self.in_flight[key] = asked - 1
        self.calls_done += 1
        if not reused:  # a stored answer takes no time: it would make calls look fast
            self.calls.done(now)

    def match_done(self, match_id: str, now: float, *, counted: bool = True) -> None:
        """A match ended; its calls still in flight are over (a failed or stopped match
        drops them unanswered). ``counted``: False for a stopped match (a resume plays it)."""
        for key in [k for k in self.in_flight if k[0] == match_id]:
            self.calls_in_flight -= self.in_flight.pop(key)
        if counted:
            self.matches_done += 1
            self.matches.done(now)

    def observe(self, event: Event, now: float) -> None:
        """Feed one engine event (the ones that are not about calls or matches pass by)."""
        if isinstance(event, DecisionStarted):
            key = (event.match_id, event.seat, event.round, event.phase)
            # a re-ask (attempt 2, 3, ...) is the same call still in flight, not another one
            if self.is_model(event.agent) and not (event.attempt > 1 and key in self.in_flight):
                self.call_started(key, now)
        elif isinstance(event, DecisionDone):
            d = event.decision
            if self.is_model(d.agent):
                self.call_done((d.match_id, d.seat, d.round, d.phase), now, reused=bool(d.reused))
        elif isinstance(event, MatchDone):
            self.match_done(event.match_id, now, counted=event.status != "stopped")
        elif isinstance(event, MatchStarted):
            self.matches.started(now)

    def seconds_left(self, now: float) -> float | None:
        """None until something has been measured."""
        if self.by_calls:
            left, each = max(self.calls_total - self.calls_done, 0), self.calls.seconds_each(now)
        else:
            left, each = max(self.matches_total - self.matches_done, 0), self.matches.seconds_each(now)
        if left == 0:
            return 0.0
        return None if each is None else left * each

    def describe(self, now: float) -> str:
        """``eta 0:04:10  model calls 12/88, 2 in flight`` (eta ``?`` before a first call)."""
        left = self.seconds_left(now)
        eta = "?" if left is None else clock_text(left)
        if not self.by_calls:
            return f"eta {eta} (from matches: no model agent)"
        asked = self.calls_in_flight
        if self.limit is not None and asked > self.limit:
            flight = f"{self.limit} in flight, {asked - self.limit} waiting for a slot"
        else:
            flight = f"{asked} in flight"
        return f"eta {eta}  model calls {self.calls_done}/{self.calls_total}, {flight}"


def clock_text(seconds: float) -> str:
    """H:MM:SS, as rich's own time columns write it."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
