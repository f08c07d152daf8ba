"""Analysis and export at a million stored decisions.

Builds the database through the real write path: a strategy sweep (eight classic
strategies, every ordered pairing, 200-round repeated Prisoner's Dilemma, as many samples
as it takes to pass ``--decisions``) played by the engine into the SQLite store, exactly
as ``coop-tui --batch`` would. Then each measurement runs in a fresh child process, which
reports its own wall time and peak resident memory:

- ``report``: ``coop-tui report`` (text tables), whole command;
- ``report --json``: ``coop-tui report --json``, whole command;
- the same two as the user runs them: the installed ``coop-tui`` script in a subprocess,
  timed by this process with a wall clock from spawn to exit;
- analysis screen load: :func:`coop_tui.report.build_report`, what the screen's loader
  thread calls (no rendering), timed after its modules are imported, as in a running TUI;
- interpreter start and imports alone, the fixed part of every command's time;
- ``export`` to CSV and to Parquet, whole command, with its peak memory.

Before measuring, the run's deviation ratings are solved and stored as ``coop-tui
--batch`` does when a run finishes (:func:`coop_tui.analysis.coopeval_tables.rate_run`),
timed on its own row. It also prints the database size per stored decision. The database is kept under
``--db`` (default: a temporary directory) so it can be reused with ``--reuse``.

    .venv/bin/python benchmarks/bench_scale.py --decisions 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ["always_cooperate", "always_defect", "tit_for_tat", "suspicious_tit_for_tat",
              "grim_trigger", "win_stay_lose_shift", "alternator", "tit_for_two_tats"]
TURNS = 200
PER_SAMPLE = len(STRATEGIES) ** 2 * TURNS * 2

CHILD = r"""
import json, resource, sys, time, io, contextlib
start = time.perf_counter()
task, db, arg = sys.argv[1], sys.argv[2], sys.argv[3]
sink = io.StringIO()
if task == "imports":
    import coop_tui.cli, coop_tui.report, coop_tui.analysis.tournament, coop_tui.store
elif task == "sections":
    import dataclasses
    from pathlib import Path
    from coop_tui.analysis import sections as registry
    from coop_tui.report import build_report
    from coop_tui.store import Store
    import coop_tui.analysis.tournament, coop_tui.analysis.theory, scipy.optimize
    times = {}
    def timed(section):
        def build(store, run_id, report):
            t0, c0 = time.perf_counter(), time.process_time()
            value = section.build(store, run_id, report)
            times[section.key] = (time.perf_counter() - t0, time.process_time() - c0, bool(value))
            return value
        return dataclasses.replace(section, build=build)
    for section in registry.sections():
        registry._SECTIONS[section.key] = timed(section)
    store = Store(Path(db))
    t0 = time.perf_counter()
    build_report(store, store.latest_run()["id"])
    total = time.perf_counter() - t0
    print(json.dumps({"sections": times, "total": total}))
    sys.exit(0)
elif task == "load":
    from pathlib import Path
    from coop_tui.report import build_report
    from coop_tui.store import Store
    import coop_tui.analysis.tournament, coop_tui.analysis.theory, scipy.optimize  # a running TUI has them
    store = Store(Path(db))
    t0, cpu0 = time.perf_counter(), time.process_time()
    build_report(store, store.latest_run()["id"])
    start = t0
else:
    from coop_tui.cli import main
    with contextlib.redirect_stdout(sink):
        try:
            main(json.loads(arg))
        except SystemExit:
            pass
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
peak = usage.ru_maxrss / 1024
cpu = usage.ru_utime + usage.ru_stime if task != "load" else time.process_time() - cpu0
print(json.dumps({"wall": wall, "peak_mb": peak, "cpu": cpu}))
"""


async def build(db: Path, samples: int, rounds: int = TURNS) -> float:
    sys.path.insert(0, str(ROOT))
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    sweep = build_sweep({
        "name": "bench-scale", "seed": 1, "concurrency": 8, "reuse": False,
        "agents": {name: {"strategy": name} for name in STRATEGIES},
        "experiments": [{"game": "pd_canonical", "mechanism": "repetition", "rounds": rounds,
                         "payoff": "mean", "matchup": "cross", "samples": samples,
                         "agents": STRATEGIES}],
    })
    store = Store(db)
    start = time.perf_counter()
    summary = await run_sweep(sweep, store)
    wall = time.perf_counter() - start
    store.close()
    assert summary.status == "done", summary.errors
    return wall


def child(task: str, db: Path, arg: list[str] | None = None) -> dict[str, float]:
    """Run one measurement in a fresh interpreter: its wall time (from process start for
    commands, of the call alone for the screen load) and peak RSS."""
    env = {**os.environ, "COOP_TUI_DB": str(db)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, task, str(db), json.dumps(arg or [])],
        capture_output=True, text=True, env=env, cwd=ROOT, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def command(db: Path, arg: list[str]) -> dict[str, float]:
    """The installed ``coop-tui`` script as a user runs it: wall clock from spawn to exit."""
    script = Path(sys.executable).with_name("coop-tui")
    env = {**os.environ, "COOP_TUI_DB": str(db)}
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(script), *arg], capture_output=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "peak_mb": after.ru_maxrss / 1024, "cpu": cpu}


def rate(db: Path) -> dict[str, float]:
    """Solve and store the run's deviation ratings, as ``--batch`` does at the end."""
    sys.path.insert(0, str(ROOT))
    from coop_tui.analysis.coopeval_tables import rate_run
    from coop_tui.store import Store

    store = Store(db)
    start, cpu = time.perf_counter(), time.process_time()
    rate_run(store, store.latest_run()["id"])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return {"wall": wall, "peak_mb": float("nan"), "cpu": cpu}


def section_rows(db: Path) -> list[tuple[str, dict[str, float]]]:
    """Each report section's ``build`` inside one ``build_report`` (modules loaded): a row
    per section with something to show, and all sections together (empty ones included)."""
    env = {**os.environ, "COOP_TUI_DB": str(db)}
    out = subprocess.run([sys.executable, "-c", CHILD, "sections", str(db), "[]"],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    times = json.loads(out.stdout.strip().splitlines()[-1])["sections"]
    rows = [(f"  report section `{key}` (build)", {"wall": w, "cpu": c, "peak_mb": float("nan")})
            for key, (w, c, shown) in times.items() if shown]
    rows.append((f"  all {len(times)} report sections (build, inside the load above)", {
        "wall": sum(w for w, _, _ in times.values()),
        "cpu": sum(c for _, c, _ in times.values()), "peak_mb": float("nan")}))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="where to keep the database (default: temporary)")
    parser.add_argument("--reuse", action="store_true", help="measure an existing --db")
    parser.add_argument("--rounds", type=int, default=TURNS,
                        help="rounds per match (e.g. 10: many short matches, as the strategic personalities paper plays)")
    args = parser.parse_args()
    samples = max(1, -(-args.decisions // (len(STRATEGIES) ** 2 * args.rounds * 2)))
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "scale.db"
        build_s = None
        if not (args.reuse and db.exists()):
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
            build_s = asyncio.run(build(db, samples, args.rounds))
        import sqlite3

        conn = sqlite3.connect(db)
        conn.execute("pragma wal_checkpoint(truncate)")
        n = conn.execute("select count(*) from decisions").fetchone()[0]
        conn.close()
        size = db.stat().st_size
        out = Path(tmp) / "out"
        rated = rate(db)
        rows = [
            ("deviation ratings solved and stored (end of --batch; once per run)", rated),
            ("interpreter start + imports only (part of each command below)", child("imports", db)),
            ("report", child("cli", db, ["report"])),
            ("report --json", child("cli", db, ["report", "--json"])),
            ("`coop-tui report`, subprocess, spawn to exit", command(db, ["report"])),
            ("`coop-tui report --json`, subprocess, spawn to exit", command(db, ["report", "--json"])),
            ("analysis screen data load (build_report, modules loaded)", child("load", db)),
            *section_rows(db),
            ("export csv", child("cli", db, ["export", "--format", "csv", "--out", str(out / "csv")])),
            ("export parquet", child("cli", db, ["export", "--format", "parquet", "--out", str(out / "pq")])),
        ]
    from _table import report

    table = [(name, n, f"{r['wall']:.2f}", f"{r['cpu']:.2f}",
              "-" if r["peak_mb"] != r["peak_mb"] else f"{r['peak_mb']:.0f}")
             for name, r in rows]
    load = os.getloadavg()[0]
    report(
        "scale" if args.rounds == TURNS else f"scale-{args.rounds}-rounds",
        f"{n:,} decisions ({samples} samples of 8 strategies x 64 pairings x {args.rounds} rounds); "
        f"database {size / 1e6:.0f} MB = {size / n:.0f} bytes per decision"
        + (f"; built through the engine and store in {build_s:.1f} s" if build_s else "")
        + f"; load average {load:.1f} on {os.cpu_count()} cores (wall clock waits for"
        " the CPU on a loaded machine: CPU s is the process's own work)",
        ["task", "decisions", "wall s", "CPU s", "peak RSS MB"],
        table,
        extra={"decisions": n, "db_bytes": size, "bytes_per_decision": size / n,
               "build_s": build_s, "load_average": load},
    )


if __name__ == "__main__":
    main()
