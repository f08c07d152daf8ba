"""Live-screen throughput and responsiveness, measured with Textual's pilot in one run.

1. Burst: 4 seats x 2000 text deltas are emitted at once into the live screen's bus; we
   time until every character is in its pane's Markdown and the screen has refreshed.
2. Steady streaming: 4 seats stream at a fixed token rate while keys are pressed; for
   each press we time from the key event to the moment its handler runs.
3. First paint: a fresh interpreter imports coop-tui and paints the setup screen.

Ratios, not absolute speeds, are what matter across machines: deltas per second drained,
and key latency against one frame (1/60 s).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import report

from coop_tui.events import DecisionStarted, TextDelta

SEATS = 4
BURST = 2000
STREAM_SECONDS = 3.0
RATES = (100, 400)
"""Tokens per second per seat during the steady-streaming test."""
PRESSES = 15
TOKEN = "word "
PARAGRAPH = 60
"""A paragraph break every this many tokens: model text has paragraphs, and Markdown
re-parses only the last block, so one endless line would measure the wrong thing."""


def token(i: int) -> str:
    return "word\n\n" if i % PARAGRAPH == PARAGRAPH - 1 else TOKEN


def _session() -> Any:
    """A session with four seats that plays nothing: the benchmark feeds its bus."""
    from coop_tui.games import load_game
    from coop_tui.session import Session

    class Feed(Session):
        kind = "bench"

        def __init__(self) -> None:
            super().__init__()
            self.game = load_game("public_good", players=SEATS)
            self.seat_names = [f"bench-{i + 1}" for i in range(SEATS)]
            self.seat_kinds = ["llm"] * SEATS
            self.title = "benchmark feed"
            self.match_id = "bench"
            self.status = "running"

        async def run(self) -> None:
            await asyncio.Event().wait()

    return Feed()


def _start_decisions(session: Any) -> None:
    for seat in range(SEATS):
        session.bus.emit(DecisionStarted("bench", seat, 1, "play", 1, (), f"bench-{seat + 1}"))


async def _wait_text(screen: Any, expected: int, pilot: Any) -> None:
    while True:
        blocks = [pane.current for pane in screen.panes]
        if all(b is not None and len(b.markdown.source) >= expected for b in blocks) and not screen.queue:
            break
        await asyncio.sleep(0.001)
    await pilot.pause()


async def burst() -> dict[str, float]:
    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen

    with tempfile.TemporaryDirectory() as tmp:
        app = CoopApp(Path(tmp) / "bench.db")
        async with app.run_test(size=(160, 48)) as pilot:
            session = _session()
            screen = LiveScreen(session, autostart=False)
            await app.push_screen(screen)
            await pilot.pause()
            _start_decisions(session)
            await _wait_text(screen, 0, pilot)
            start = time.perf_counter()
            for i in range(BURST):
                for seat in range(SEATS):
                    session.bus.emit(TextDelta("bench", seat, token(i)))
            emitted = time.perf_counter()
            await _wait_text(screen, sum(len(token(i)) for i in range(BURST)), pilot)
            drained = time.perf_counter()
    total = SEATS * BURST
    return {
        "deltas": total,
        "emit_s": emitted - start,
        "drain_s": drained - start,
        "deltas_per_s": total / (drained - start),
    }


async def streaming(rate: int) -> dict[str, float]:
    """Stream at ``rate`` tokens/s per seat; press keys and time each handler."""
    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen

    latencies: list[float] = []
    sent = 0
    with tempfile.TemporaryDirectory() as tmp:
        app = CoopApp(Path(tmp) / "bench.db")
        async with app.run_test(size=(160, 48)) as pilot:
            session = _session()
            screen = LiveScreen(session, autostart=False)
            await app.push_screen(screen)
            await pilot.pause()
            _start_decisions(session)
            pressed: list[float] = []
            original = screen.action_select

            def timed_select(step: int) -> None:
                latencies.append(time.perf_counter() - pressed[-1])
                original(step)

            screen.action_select = timed_select  # type: ignore[method-assign]
            stop = asyncio.Event()

            async def produce() -> None:
                nonlocal sent
                tick = 1 / 60
                per_tick = rate * tick
                owed = 0.0
                while not stop.is_set():
                    owed += per_tick
                    n = int(owed)
                    owed -= n
                    for _ in range(n):
                        for seat in range(SEATS):
                            session.bus.emit(TextDelta("bench", seat, token(sent)))
                        sent += 1
                    await asyncio.sleep(tick)

            producer = asyncio.create_task(produce())
            await asyncio.sleep(0.5)
            for _ in range(PRESSES):
                pressed.append(time.perf_counter())
                await pilot.press("right")
                await asyncio.sleep(STREAM_SECONDS / PRESSES)
            stop.set()
            await producer
            await _wait_text(screen, sum(len(token(i)) for i in range(sent)), pilot)
    return {
        "rate_per_seat": rate,
        "tokens_total_per_s": rate * SEATS,
        "tokens_streamed_per_seat": sent,
        "presses": len(latencies),
        "key_latency_median_ms": 1000 * statistics.median(latencies),
        "key_latency_max_ms": 1000 * max(latencies),
    }


PAINT_SCRIPT = """
import time
t0 = time.perf_counter()
import asyncio, sys
from coop_tui.app import CoopApp

class Probe(CoopApp):
    painted = None
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(self._painted)
    def _painted(self):
        self.painted = time.perf_counter() - t0
        self.exit()

async def main():
    app = Probe(sys.argv[1])
    async with app.run_test(size=(160, 48)) as pilot:
        while app.painted is None:
            await pilot.pause()
    print(app.painted)

asyncio.run(main())
"""


def first_paint(runs: int = 3) -> float:
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", PAINT_SCRIPT, str(Path(tmp) / f"p{i}.db")],
                check=True, capture_output=True, text=True,
            )
            samples.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def main() -> None:
    b = asyncio.run(burst())
    streams = [asyncio.run(streaming(rate)) for rate in RATES]
    paint = first_paint()
    frame_ms = 1000 / 60
    rows: list[tuple[Any, ...]] = [
        ("burst: deltas drained", f"{b['deltas']}", f"{b['drain_s']:.3f} s",
         f"{b['deltas_per_s']:.0f} deltas/s"),
    ]
    for s in streams:
        rows.append((
            f"streaming {s['tokens_total_per_s']} tok/s ({SEATS} seats)",
            f"{s['presses']} keys",
            f"median {s['key_latency_median_ms']:.1f} ms, max {s['key_latency_max_ms']:.1f} ms",
            f"{s['key_latency_median_ms'] / frame_ms:.2f} frames",
        ))
    rows.append(("first paint (fresh process, median of 3)", "setup screen", f"{paint:.3f} s",
                 f"{paint:.2f} of the 1 s budget"))
    report(
        "tui", "live screen: burst drain, key latency while streaming, first paint",
        ["measure", "size", "time", "ratio"], rows,
        {"burst": b, "streaming": streams, "first_paint_s": paint},
    )


if __name__ == "__main__":
    main()
