"""The whole ``coop-tui --batch`` command against the Axelrod library's match loop.

The scale bar of issue 34: a strategy tournament of repeated Prisoner's Dilemma (the eight
classic strategies of ``bench_engine.py``, 64 ordered pairings x 4 samples x 200 rounds,
102,400 decisions, every one stored) run as a user runs it, ``coop-tui --batch FILE --yes``
into a new database, timed from spawn to exit (interpreter start, imports, validation,
planning, the engine, SQLite, the deviation ratings and the summary all included). Beside
it, in the same invocation, the Axelrod library plays the same matches with its own loop,
``axelrod.Match(players, turns=200).play()`` (``bench_engine.py --axelrod-only`` in an
interpreter that has axelrod, which needs PyTorch: ``--axelrod-python``; only its loop is
timed, not its import). The sides alternate, ``--repeats`` times each, and the best of each
is kept: on a shared machine the best run is the one least disturbed by others.

``--reference-src PATH`` also times the same command of another checkout (say the commit
before a change, ``git worktree add --detach /tmp/old COMMIT``), imported through
``_reference.py``, so a change is measured against the code it replaced in one run.
"""

from __future__ import annotations

import argparse
import json
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


def timed_process(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds spawn to exit, CPU seconds of the process, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
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


def run_axelrod(python: str, work: Path) -> tuple[float, float, float, float]:
    """(loop wall, loop CPU, process wall, process CPU) of Axelrod's match loop."""
    wall, cpu, out = timed_process([python, str(HERE / "bench_engine.py"), "--axelrod-only"], work)
    data = json.loads(out.strip().splitlines()[-1])
    if not data["decisions"]:
        raise SystemExit(f"{python} has no axelrod: pip install axelrod into it")
    return data["wall"], data["cpu"], wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--axelrod-python", default=os.environ.get("AXELROD_PYTHON"),
                        help="an interpreter with axelrod installed (it needs PyTorch)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side (best kept)")
    parser.add_argument("--reference-src", help="also time this checkout's command")
    args = parser.parse_args()
    check_reference_arg(parser, args.reference_src)
    if args.repeats < 1:
        parser.error("--repeats: give 1 or more")
    if not args.axelrod_python:
        parser.error("--axelrod-python: give an interpreter with axelrod "
                     "(python -m venv /tmp/axl && /tmp/axl/bin/pip install axelrod)")
    load_before = os.getloadavg()
    results: dict[str, list[tuple[float, ...]]] = {"ours": [], "axelrod": [], "reference": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sweep = work / "tournament.toml"
        sweep.write_text(sweep_text(), encoding="utf-8")
        for _ in range(args.repeats):
            results["ours"].append(run_command(None, sweep, work, "ours"))
            results["axelrod"].append(run_axelrod(args.axelrod_python, work))
            if args.reference_src:
                results["reference"].append(run_command(args.reference_src, sweep, work, "ref"))
    load_after = os.getloadavg()
    n = len(pairings()) * SAMPLES * TURNS * 2
    ours_wall = min(r[0] for r in results["ours"])
    ours_cpu = min(r[1] for r in results["ours"])
    ax_wall = min(r[0] for r in results["axelrod"])
    ax_cpu = min(r[1] for r in results["axelrod"])
    rows: list[tuple[object, ...]] = [
        ("coop-tui --batch FILE --yes, spawn to exit", n, ours_wall, ours_cpu),
        ("Axelrod: Match(...).play() loop (its import not timed)", n, ax_wall, ax_cpu),
        ("Axelrod's whole process, PyTorch import included (for scale)", n,
         min(r[2] for r in results["axelrod"]), min(r[3] for r in results["axelrod"])),
    ]
    extra: dict[str, object] = {
        "ratio_wall": ours_wall / ax_wall, "ratio_cpu": ours_cpu / ax_cpu,
        "repeats": args.repeats, "load_before": load_before, "load_after": load_after,
        "runs": results,
    }
    if results["reference"]:
        ref_wall = min(r[0] for r in results["reference"])
        ref_cpu = min(r[1] for r in results["reference"])
        rows.append((f"the same command of {args.reference_src}", n, ref_wall, ref_cpu))
        rows.append(("reference / Axelrod", "", ref_wall / ax_wall, ref_cpu / ax_cpu))
        extra.update(reference_wall=ref_wall, reference_cpu=ref_cpu)
    rows.append(("coop-tui / Axelrod (target <= 10)", "", ours_wall / ax_wall, ours_cpu / ax_cpu))
    report("command",
           f"whole command, best of {args.repeats} alternating: 8 strategies, "
           f"{len(pairings())} pairings x {SAMPLES} samples x {TURNS} rounds "
           f"(load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)",
           ["what", "decisions", "wall s", "CPU s"], rows, extra=extra)


if __name__ == "__main__":
    main()
