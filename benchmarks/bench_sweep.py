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


async def run_once(url: str, decisions: int, concurrency: int, db: Path) -> tuple[float, int]:
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    sweep = build_sweep(sweep_dict(url, decisions, concurrency))
    store = Store(db)
    start = time.perf_counter()
    summary = await run_sweep(sweep, store)
    wall = time.perf_counter() - start
    stored = store.db.execute("select count(*) from decisions where valid = 1").fetchone()[0]
    store.close()
    assert summary.status == "done", summary.errors
    return wall, stored


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--decisions", type=int, default=128)
    args = parser.parse_args()
    from coop_tui.testing.server import LoopbackServer

    rows = []
    with LoopbackServer(latency=args.latency, chunks=args.chunks, answer=ANSWER) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        ideal = math.ceil(args.decisions / args.concurrency) * args.latency
        wall, stored = asyncio.run(run_once(srv.url, args.decisions, args.concurrency, Path(tmp) / "b.db"))
        rows.append(("coop-tui sweep (storage on)", args.decisions, args.concurrency,
                     args.latency, args.chunks, stored, ideal, wall, ideal / wall))
    report(
        "sweep", "sweep efficiency against the loopback server",
        ["pipeline", "decisions", "concurrency", "latency s", "chunks", "stored",
         "ideal s", "wall s", "efficiency"],
        rows, {"efficiency": rows[0][-1]},
    )


if __name__ == "__main__":
    main()
