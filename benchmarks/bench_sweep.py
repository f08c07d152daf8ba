"""Sweep efficiency against the loopback server: ideal ceil(D/C)*L over measured wall time.

A similarity sweep of D decisions (self-play, two seats per match) runs through the
whole stack — sweep scheduler, engine, parser, the LLM agent's HTTP client and the
SQLite store — against an OpenAI-compatible server on 127.0.0.1 whose every answer
takes L seconds in C-way concurrency. 1.0 would be a perfect scheduler with free I/O.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ANSWER = 'I weigh both options and mix.\n{"A0": 50, "A1": 50}'


def sweep_dict(url: str, decisions: int, concurrency: int) -> dict:
    return {
        "name": "bench-sweep",
        "seed": 1,
        "concurrency": concurrency,
        "samples": decisions // 4,
        "reuse": False,
        "agents": {"m": {"model": "openai/loopback", "api_base": url, "api_key": "sk-bench"}},
        "experiments": [
            {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
             "agents": ["m"], "similarity": [0, 100]},
        ],
    }


async def run_once(url: str, decisions: int, concurrency: int, db: Path) -> tuple[float, int, float]:
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import build_agents, prepare_agents, run_sweep

    sweep = build_sweep(sweep_dict(url, decisions, concurrency))
    store = Store(db)
    # Start-up (importing the HTTP client) is measured by bench_startup; here the clock
    # covers the sweep itself: scheduling, requests, parsing, storage.
    agents = build_agents(sweep, {"m"})
    await prepare_agents(agents.values())
    start, cpu = time.perf_counter(), time.process_time()
    summary = await run_sweep(sweep, store, agents=agents)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    stored = store.db.execute("select count(*) from decisions where valid = 1").fetchone()[0]
    store.close()
    assert summary.status == "done", summary.errors
    return wall, stored, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--decisions", type=int, default=128)
    args = parser.parse_args()
    rows = []
    # The server runs in its own process, as a real provider would: in-process it would
    # share the GIL with the client and the benchmark would measure the server too.
    server = subprocess.Popen(
        [sys.executable, "-m", "coop_tui.testing.server", "--port", "0",
         "--latency", str(args.latency), "--chunks", str(args.chunks), "--answer", ANSWER],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        url = line.strip().split()[-1]
        with tempfile.TemporaryDirectory() as tmp:
            ideal = math.ceil(args.decisions / args.concurrency) * args.latency
            wall, stored, cpu = asyncio.run(run_once(url, args.decisions, args.concurrency, Path(tmp) / "b.db"))
    finally:
        server.terminate()
        server.wait()
    rows.append(("coop-tui sweep (storage on)", args.decisions, args.concurrency,
                 args.latency, args.chunks, stored, ideal, wall, ideal / wall,
                 1000 * cpu / args.decisions))
    report(
        "sweep", "sweep efficiency against the loopback server",
        ["pipeline", "decisions", "concurrency", "latency s", "chunks", "stored",
         "ideal s", "wall s", "efficiency", "client CPU ms/decision"],
        rows, {"efficiency": rows[0][-2]},
    )


if __name__ == "__main__":
    main()
