"""Engine overhead with no LLM: a strategy round-robin of repeated Prisoner's Dilemma.

Eight deterministic strategies play every unordered pairing (self-play included) for 200
rounds with the SQLite store on, exactly the tournament the Axelrod library plays with
``Tournament(turns=200, repetitions=1)``. Both run here, in one process, one after the
other; the table gives decisions per second and the ratio between the two tools.
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


def pairings() -> list[list[str]]:
    return [list(p) for p in itertools.combinations_with_replacement(OURS, 2)]


async def ours(db: Path) -> tuple[float, int]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    sweep = build_sweep({
        "name": "bench-engine", "seed": 1, "concurrency": 64, "reuse": False,
        "agents": {name: {"strategy": name} for name in OURS},
        "experiments": [{"game": "pd_canonical", "mechanism": "repetition", "rounds": TURNS,
                         "payoff": "mean", "matchup": pairings()}],
    })
    store = Store(db)
    start = time.perf_counter()
    summary = await run_sweep(sweep, store)
    wall = time.perf_counter() - start
    n = store.db.execute("select count(*) from decisions").fetchone()[0]
    store.close()
    assert summary.status == "done", summary.errors
    return wall, n


def axelrod_tournament() -> tuple[float, int] | None:
    try:
        import axelrod as axl
    except ImportError:
        return None
    players = [getattr(axl, name)() for name in AXELROD]
    tournament = axl.Tournament(players, game=axl.Game(r=3, s=0, t=5, p=1), turns=TURNS,
                                repetitions=1)
    start = time.perf_counter()
    tournament.play(processes=1, progress_bar=False)
    wall = time.perf_counter() - start
    return wall, len(pairings()) * TURNS * 2


def axelrod_elsewhere(python: str) -> tuple[float, int] | None:
    """Time the Axelrod side in another interpreter (axelrod needs PyTorch, which the
    project's environment does not carry)."""
    out = subprocess.run([python, __file__, "--axelrod-only"], capture_output=True, text=True,
                         check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["wall"], data["decisions"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--axelrod-python", default=os.environ.get("AXELROD_PYTHON"),
                        help="an interpreter with axelrod installed, if this one lacks it")
    parser.add_argument("--axelrod-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.axelrod_only:
        wall, n = axelrod_tournament() or (0.0, 0)
        print(json.dumps({"wall": wall, "decisions": n}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        wall, n = asyncio.run(ours(Path(tmp) / "e.db"))
    rows = [("coop-tui (engine + prompts + SQLite)", n, wall, n / wall, 1.0)]
    ax = axelrod_tournament()
    if ax is None and args.axelrod_python:
        ax = axelrod_elsewhere(args.axelrod_python)
    if ax is None:
        rows.append(("Axelrod library", "not installed", "-", "-", "-"))
    else:
        ax_wall, ax_n = ax
        rows.append(("Axelrod library (in memory)", ax_n, ax_wall, ax_n / ax_wall,
                     (ax_n / ax_wall) / (n / wall)))
    from _table import report

    report("engine", f"strategy tournament: 8 strategies, {len(pairings())} pairings, {TURNS} rounds",
           ["tool", "decisions", "wall s", "decisions/s", "speed relative to coop-tui"], rows)


if __name__ == "__main__":
    main()
