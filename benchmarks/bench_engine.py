"""Engine overhead with no LLM: a strategy tournament of repeated Prisoner's Dilemma.

Eight deterministic strategies play every ordered pairing (cross-play, self-play included)
for 200 rounds, ``SAMPLES`` times each, with the SQLite store on (102,400 decisions, every
one stored). The Axelrod library plays the same matches with its own match loop,
``axelrod.Match(players, turns=200).play()`` once per pairing and sample (not
``Tournament.play``, whose result analysis dominates and which hangs on this machine).
Both run in one invocation, one after the other; the table gives decisions per second
and how many times slower coop-tui is.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OURS = ["always_cooperate", "always_defect", "tit_for_tat", "suspicious_tit_for_tat",
        "grim_trigger", "win_stay_lose_shift", "alternator", "tit_for_two_tats"]
AXELROD = ["Cooperator", "Defector", "TitForTat", "SuspiciousTitForTat", "Grudger",
           "WinStayLoseShift", "Alternator", "TitFor2Tats"]
TURNS = 200
SAMPLES = 4


def pairings() -> list[tuple[int, int]]:
    return list(itertools.product(range(len(OURS)), repeat=2))


async def ours(db: Path) -> tuple[float, float, int]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    sweep = build_sweep({
        "name": "bench-engine", "seed": 1, "concurrency": 8, "reuse": False,
        "agents": {name: {"strategy": name} for name in OURS},
        "experiments": [{"game": "pd_canonical", "mechanism": "repetition", "rounds": TURNS,
                         "payoff": "mean", "matchup": "cross", "samples": SAMPLES, "agents": OURS}],
    })
    store = Store(db)
    start, cpu = time.perf_counter(), time.process_time()
    summary = await run_sweep(sweep, store)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    n = store.db.execute("select count(*) from decisions").fetchone()[0]
    store.close()
    assert summary.status == "done", summary.errors
    assert n == len(pairings()) * SAMPLES * TURNS * 2, n
    return wall, cpu, n


def axelrod_matches() -> tuple[float, float, int] | None:
    """The Axelrod library's own match loop over the same pairings and samples."""
    try:
        import axelrod as axl
    except ImportError:
        return None
    game = axl.Game(r=3, s=0, t=5, p=1)
    start, cpu = time.perf_counter(), time.process_time()
    for _sample in range(SAMPLES):
        for a, b in pairings():
            players = (getattr(axl, AXELROD[a])(), getattr(axl, AXELROD[b])())
            axl.Match(players, turns=TURNS, game=game).play()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, len(pairings()) * SAMPLES * TURNS * 2


def axelrod_elsewhere(python: str) -> tuple[float, float, int] | None:
    """Time the Axelrod side in another interpreter (axelrod needs PyTorch, which the
    project's environment does not carry). Only its match loop is timed, not its import."""
    out = subprocess.run([python, __file__, "--axelrod-only"], capture_output=True, text=True,
                         check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["wall"], data["cpu"], data["decisions"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--axelrod-python", default=os.environ.get("AXELROD_PYTHON"),
                        help="an interpreter with axelrod installed, if this one lacks it")
    parser.add_argument("--axelrod-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.axelrod_only:
        wall, cpu, n = axelrod_matches() or (0.0, 0.0, 0)
        print(json.dumps({"wall": wall, "cpu": cpu, "decisions": n}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        wall, cpu, n = asyncio.run(ours(Path(tmp) / "e.db"))
    rows: list[tuple[object, ...]] = [
        ("coop-tui (engine + SQLite store, every decision stored)", n, wall, cpu, n / wall)
    ]
    ax = axelrod_matches()
    if ax is None and args.axelrod_python:
        ax = axelrod_elsewhere(args.axelrod_python)
    ratio = cpu_ratio = None
    if ax is None:
        rows.append(("Axelrod library", "not installed", "-", "-", "-"))
    else:
        ax_wall, ax_cpu, ax_n = ax
        ratio, cpu_ratio = wall / ax_wall, cpu / ax_cpu
        rows.append(("Axelrod library: Match(...).play() loop, in memory", ax_n, ax_wall, ax_cpu,
                     ax_n / ax_wall))
        rows.append(("coop-tui / Axelrod (target <= 10)", "", ratio, cpu_ratio, ""))
    from _table import report

    report("engine",
           f"strategy tournament: 8 strategies, {len(pairings())} ordered pairings x {SAMPLES} "
           f"samples, {TURNS} rounds of repeated PD",
           ["tool", "decisions", "wall s", "CPU s", "decisions/s"], rows,
           extra={"ratio_to_axelrod_match_loop": ratio, "cpu_ratio_to_axelrod_match_loop": cpu_ratio})


if __name__ == "__main__":
    main()
