"""The whole ``coop-tui --batch`` command against the Axelrod library's match loop.

The scale bar of issue 34: a strategy tournament of repeated Prisoner's Dilemma (the eight
classic strategies of ``bench_engine.py``, 64 ordered pairings x 4 samples x 200 rounds,
102,400 decisions, every one stored) run as a user runs it, ``coop-tui --batch FILE --yes``
into a new database, timed from spawn to exit (interpreter start, imports, validation,
planning, the engine, SQLite, the deviation ratings and the summary all included). Beside
it, in the same invocation, the Axelrod library plays the same matches with its own loop,
``axelrod.Match(players, turns=200).play()`` (``bench_engine.axelrod_matches``, in an
interpreter that has axelrod, which needs PyTorch: ``--axelrod-python``; that interpreter
imports axelrod once and plays the loop when asked, and only the loop is timed). The sides
alternate, ``--repeats`` times each, and the best of each
is kept: on a shared machine the best run is the one least disturbed by others.

``--reference-src PATH`` also times the same command of another checkout (say the commit
before a change, ``git worktree add --detach /tmp/old COMMIT``), imported through
``_reference.py``, so a change is measured against the code it replaced in one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _reference import check_reference_arg
from _table import report
from bench_engine import OURS, SAMPLES, TURNS, pairings

HERE = Path(__file__).resolve().parent


def sweep_text() -> str:
    """The sweep file a user would write for the tournament of ``bench_engine.py``."""
    agents = "\n".join(f'{name} = {{ strategy = "{name}" }}' for name in OURS)
    return (
        'name = "bench-command"\nseed = 1\nconcurrency = 8\nreuse = false\n\n'
        f"[agents]\n{agents}\n\n[[experiments]]\n"
        f'game = "pd_canonical"\nmechanism = "repetition"\nrounds = {TURNS}\npayoff = "mean"\n'
        f'matchup = "cross"\nsamples = {SAMPLES}\nagents = {json.dumps(OURS)}\n'
    )


CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The command's environment: its modules' bytecode is cached, as in an installed package
(pip compiles it on install); with PYTHONDONTWRITEBYTECODE set (some shells and CI set it)
an editable checkout would compile every module from source on every run."""


def timed_process(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds spawn to exit, CPU seconds of the process, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False, env=CHILD_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{cmd[0]} exited {out.returncode}:\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def command(tree: str | None, sweep: Path, db: Path) -> list[str]:
    """``coop-tui --batch`` of this checkout (the installed script), or of ``tree``."""
    argv = ["--db", str(db), "--batch", str(sweep), "--yes"]
    if tree is None:
        script = Path(sys.executable).with_name("coop-tui")
        return [str(script), *argv] if script.exists() else [sys.executable, "-m", "coop_tui.cli", *argv]
    boot = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from _reference import use_source_tree; "
            f"use_source_tree({tree!r}); from coop_tui.cli import main; main({argv!r})")
    return [sys.executable, "-c", boot]


def stored_decisions(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from decisions").fetchone()[0])


def run_command(tree: str | None, sweep: Path, work: Path, label: str) -> tuple[float, float]:
    db = work / f"{label}-{time.monotonic_ns()}.db"
    wall, cpu, _ = timed_process(command(tree, sweep, db), work)
    n = stored_decisions(db)
    expected = len(pairings()) * SAMPLES * TURNS * 2
    if n != expected:
        raise SystemExit(f"{label}: {n} decisions stored, expected {expected}")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return wall, cpu


AXELROD_SERVER = f"""
import json, sys
sys.path.insert(0, {str(HERE)!r})
from bench_engine import axelrod_matches
for _line in sys.stdin:
    result = axelrod_matches()
    if result is None:
        print(json.dumps(None), flush=True)
        break
    wall, cpu, n = result
    print(json.dumps({{"wall": wall, "cpu": cpu, "decisions": n}}), flush=True)
"""
"""Plays the Axelrod side once per line read: axelrod and PyTorch are imported once (a
minute on a loaded machine), and each run still alternates with ours."""


class AxelrodSide:
    """An interpreter with axelrod that times its match loop when asked."""

    def __init__(self, python: str, work: Path) -> None:
        self.proc = subprocess.Popen([python, "-c", AXELROD_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=work)

    def run(self) -> tuple[float, float] | None:
        """(wall, CPU) of one pass of the match loop over every pairing and sample; None
        when the interpreter has no axelrod."""
        if self.proc.poll() is not None:
            return None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        data = json.loads(self.proc.stdout.readline() or "null")
        return None if not data else (data["wall"], data["cpu"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.communicate("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--axelrod-python", default=os.environ.get("AXELROD_PYTHON"),
                        help="an interpreter with axelrod installed (it needs PyTorch)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side (best kept)")
    parser.add_argument("--reference-src", action="append", default=[],
                        help="also time this checkout's command (may be given more than once)")
    args = parser.parse_args()
    for tree in args.reference_src:
        check_reference_arg(parser, tree)
    if args.repeats < 1:
        parser.error("--repeats: give 1 or more")
    load_before = os.getloadavg()
    results: dict[str, list[tuple[float, ...]]] = {"ours": [], "axelrod": []}
    results.update({tree: [] for tree in args.reference_src})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sweep = work / "tournament.toml"
        sweep.write_text(sweep_text(), encoding="utf-8")
        axelrod = AxelrodSide(args.axelrod_python or sys.executable, work)
        try:
            # untimed: each command once, so its bytecode is cached (see CHILD_ENV)
            for tree in (None, *args.reference_src):
                run_command(tree, sweep, work, "warm-up")
            for _ in range(args.repeats):
                results["ours"].append(run_command(None, sweep, work, "ours"))
                played = axelrod.run()
                if played is not None:
                    results["axelrod"].append(played)
                for tree in args.reference_src:
                    results[tree].append(run_command(tree, sweep, work, "ref"))
        finally:
            axelrod.close()
    load_after = os.getloadavg()
    n = len(pairings()) * SAMPLES * TURNS * 2
    best = {name: (min(r[0] for r in runs), min(r[1] for r in runs))
            for name, runs in results.items() if runs}
    ours_wall, ours_cpu = best["ours"]
    ax_wall, ax_cpu = best.get("axelrod", (math.nan, math.nan))
    rows: list[tuple[object, ...]] = [
        ("coop-tui --batch FILE --yes, spawn to exit", n, ours_wall, ours_cpu),
        ("Axelrod: Match(...).play() loop (its import not timed)",
         n if "axelrod" in best else "not installed: --axelrod-python", ax_wall, ax_cpu),
    ]
    extra: dict[str, object] = {
        "ratio_wall": ours_wall / ax_wall, "ratio_cpu": ours_cpu / ax_cpu,
        "repeats": args.repeats, "load_before": load_before, "load_after": load_after,
        "runs": results,
    }
    for tree in args.reference_src:
        ref_wall, ref_cpu = best[tree]
        rows.append((f"the same command of {tree}", n, ref_wall, ref_cpu))
        rows.append((f"{tree} / Axelrod", "", ref_wall / ax_wall, ref_cpu / ax_cpu))
        extra[f"reference {tree}"] = {"wall": ref_wall, "cpu": ref_cpu}
    rows.append(("coop-tui / Axelrod (target <= 10)", "", ours_wall / ax_wall, ours_cpu / ax_cpu))
    report("command",
           f"whole command, best of {args.repeats} alternating: 8 strategies, "
           f"{len(pairings())} pairings x {SAMPLES} samples x {TURNS} rounds "
           f"(load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)",
           ["what", "decisions", "wall s", "CPU s"], rows, extra=extra)


if __name__ == "__main__":
    main()
