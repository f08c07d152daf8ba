"""Does watching a sweep slow it down? The same headless sweep with 0 and with 2 watchers.

A similarity sweep (self-play, two seats per match) runs as a real ``coop-tui --batch``
process against the loopback server (its own process; every answer streamed in 20
chunks over L seconds) at concurrency C, so the sweep publishes about 20·C/L text deltas
per second. With watchers, two ``coop-tui watch --plain`` processes attach as soon as the
sweep names its channel and print every event (deltas included) to /dev/null.

Throughput is taken from the database: decisions stored per second between ``--skip``
seconds after the run was created (both watchers have attached by then; the script
checks) and the run's last decision, the same window with or without watchers. Runs
alternate (none, two, none, two, ...) and the best of ``--repeats`` of each is kept; the
ratio printed is watched / unwatched throughput (1.00 = no cost).

    .venv/bin/python benchmarks/bench_watch.py [--concurrency 16] [--latency 0.2]
        [--decisions 1600] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import report  # noqa: E402

ANSWER = 'I weigh both options and mix.\n{"A0": 50, "A1": 50}'


def sweep_file(folder: Path, url: str, decisions: int, concurrency: int) -> Path:
    spec = {
        "name": "bench-watch", "seed": 1, "concurrency": concurrency,
        "samples": max(1, decisions // 4), "reuse": False,
        "agents": {"m": {"model": "openai/loopback", "api_base": url, "api_key": "sk-bench"}},
        "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                         "agents": ["m"], "similarity": [0, 100]}],
    }
    path = folder / "sweep.yaml"  # JSON is YAML
    path.write_text(json.dumps(spec))
    return path


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "coop_tui.testing.server", "--latency", str(latency),
         "--chunks", "20", "--answer", ANSWER],
        stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    return server, line.split("listening on ", 1)[1].strip()


def channel_named(db: Path, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    if conn.execute("select 1 from run_leases where coalesce(channel, '') != ''"
                                    ).fetchone():
                        return True
            except sqlite3.OperationalError:
                pass
        time.sleep(0.02)
    return False


def one_sweep(folder: Path, sweep: Path, watchers: int, skip: float) -> dict[str, float]:
    db = folder / f"w{watchers}-{time.monotonic_ns()}.db"
    cmd = [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db), "--yes"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    attached: list[float] = []
    watching: list[subprocess.Popen[str]] = []
    try:
        if watchers:
            if not channel_named(db, time.monotonic() + 60):
                raise SystemExit("the sweep never named its channel")
            for _ in range(watchers):
                watching.append(subprocess.Popen(
                    [sys.executable, "-m", "coop_tui.cli", "watch", "--plain", "--db", str(db)],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
            for w in watching:
                assert w.stdout is not None
                w.stdout.readline()  # the dashboard's first line: attached
                attached.append(time.time())
            sinks = [subprocess.Popen(["wc", "-l"], stdin=w.stdout, stdout=subprocess.PIPE,
                                      text=True) for w in watching]
        code = proc.wait()
        if code != 0:
            raise SystemExit(f"the sweep failed ({code}): {proc.stderr.read() if proc.stderr else ''}")
        for w in watching:
            w.wait(60)
        printed = [int(s.communicate(timeout=60)[0]) for s in sinks] if watchers else []
    finally:
        for p in (proc, *watching):
            if p.poll() is None:
                p.kill()
    with sqlite3.connect(db) as conn:
        created = conn.execute("select created_at from runs").fetchone()[0]
        start = created + skip
        n, last = conn.execute(
            "select count(*), max(created_at) from decisions where created_at >= ?", [start]
        ).fetchone()
        total = conn.execute("select count(*) from decisions").fetchone()[0]
    late = max(attached, default=start) - start
    if late > 0:
        raise SystemExit(f"a watcher attached {late:.2f} s after the measured window began; "
                         "raise --skip")
    return {"rate": n / (last - start), "decisions": total, "window": last - start,
            "attach_s": (max(attached) - created) if attached else 0.0,
            "lines": min(printed, default=0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--decisions", type=int, default=1600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", type=float, default=6.0,
                        help="seconds after the run starts before the measured window")
    args = parser.parse_args()
    server, url = start_server(args.latency)
    load = os.getloadavg()[0]
    best: dict[int, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            sweep = sweep_file(folder, url, args.decisions, args.concurrency)
            for _ in range(args.repeats):
                for watchers in (0, 2):
                    got = one_sweep(folder, sweep, watchers, args.skip)
                    print(f"{watchers} watchers: {got['rate']:.1f} decisions/s "
                          f"({got['decisions']} decisions, {got['lines']} lines per watcher)",
                          flush=True)
                    if watchers not in best or got["rate"] > best[watchers]["rate"]:
                        best[watchers] = got
    finally:
        server.kill()
    ideal = args.concurrency / args.latency
    ratio = best[2]["rate"] / best[0]["rate"]
    rows = [[f"{w} watchers", best[w]["rate"], best[w]["rate"] / ideal, best[w]["decisions"],
             best[w]["attach_s"], best[w]["lines"]] for w in (0, 2)]
    report("watch", f"A sweep watched by 2 `coop-tui watch` processes: {ratio:.3f} of the "
           f"unwatched throughput (C={args.concurrency}, L={args.latency} s, best of "
           f"{args.repeats}, load {load:.1f})",
           ["sweep", "decisions/s", "of ideal C/L", "decisions", "watchers attached after s",
            "lines each watcher printed"],
           rows, {"ratio": ratio, "load_before": load, "load_after": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
