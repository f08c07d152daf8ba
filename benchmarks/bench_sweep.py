"""A whole sweep against a keep-alive loopback server, compared with a bare ``openai`` loop.

A similarity sweep of D decisions (self-play, two seats per match) runs through the whole
stack — sweep scheduler, engine, parser, the LLM agent's HTTP client and the SQLite store —
against an OpenAI-compatible server on 127.0.0.1 (its own process) whose every answer takes
L seconds, at concurrency C. In the same run, the same D streamed requests go through a
bare ``openai`` SDK loop at the same C. Printed per C: efficiency (ideal ceil(D/C)*L over
wall time), client CPU per decision, and the sweep's throughput and CPU as ratios to the
bare loop's (the sweep does far more per decision: prompts, parsing, storage).

``--endpoints 4`` adds a row: the same sweep over four servers, one killed mid-sweep.

``--reference-src PATH`` adds the same sweep run by the coop-tui of another source tree (a
checkout of an earlier commit: ``git worktree add --detach /tmp/old e440c13^`` is the last
one with the hand-written HTTP client), in one run against the same server. Each sweep of
this comparison runs in a fresh interpreter after a warm-up sweep of 8 decisions (so
one-time imports are not charged per decision), the two trees alternate and the best of
``--repeats`` is kept, as ``bench_clients.py`` does.

    .venv/bin/python benchmarks/bench_sweep.py [--concurrency 16,128,1024] [--latency 0.2]
        [--reference-src /tmp/old --repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _reference import check_loaded_from, check_reference_arg, use_source_tree  # noqa: E402
from _table import report  # noqa: E402
from bench_clients import measure, openai_raw  # noqa: E402

ANSWER = 'I weigh both options and mix.\n{"A0": 50, "A1": 50}'


def sweep_dict(urls: str | list[str], decisions: int, concurrency: int, **agent: object) -> dict:
    return {
        "name": "bench-sweep",
        "seed": 1,
        "concurrency": concurrency,
        "samples": max(1, decisions // 4),
        "reuse": False,
        "agents": {"m": {"model": "openai/loopback", "api_base": urls, "api_key": "sk-bench",
                         **agent}},
        "experiments": [
            {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
             "agents": ["m"], "similarity": [0, 100]},
        ],
    }


async def run_once(spec: dict, db: Path, kill: subprocess.Popen[str] | None = None,
                   kill_after: float = 0.0) -> tuple[float, int, float, int]:
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import build_agents, prepare_agents, run_sweep

    sweep = build_sweep(spec)
    store = Store(db)
    agents = build_agents(sweep, {"m"})
    await prepare_agents(agents.values())

    async def killer() -> None:
        await asyncio.sleep(kill_after)
        if kill is not None:
            kill.kill()

    task = asyncio.create_task(killer()) if kill is not None else None
    start, cpu = time.perf_counter(), time.process_time()
    summary = await run_sweep(sweep, store, agents=agents)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if task is not None:
        await task
    stored = store.db.execute("select count(*) from decisions where valid = 1").fetchone()[0]
    store.close()
    assert summary.status == "done", summary.errors
    return wall, stored, cpu, summary.transport_retries


def start_server(latency: float, chunks: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "coop_tui.testing.server", "--port", "0",
         "--latency", str(latency), "--chunks", str(chunks), "--answer", ANSWER],
        stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, line.strip().split()[-1]


def sweep_worker(args: argparse.Namespace) -> None:
    """One sweep in this fresh interpreter, by this tree or ``--src``; prints its numbers."""
    root = use_source_tree(args.src) if args.src else None
    with tempfile.TemporaryDirectory() as tmp:
        # a small sweep first: imports (aiohttp's, 0.12 s of CPU, only the newer tree's)
        # and templates are paid once per process, not per decision
        asyncio.run(run_once(sweep_dict(args.url, 8, 8), Path(tmp) / "warm.db"))
        wall, stored, cpu, _ = asyncio.run(
            run_once(sweep_dict(args.url, args.decisions, args.conc), Path(tmp) / "w.db")
        )
    if root is not None:
        check_loaded_from(root)
    print(json.dumps({"wall": wall, "stored": stored, "cpu": cpu}))


def run_sweep_worker(url: str, conc: int, decisions: int, src: str | None) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", "--url", url, "--conc", str(conc),
               "--decisions", str(decisions)]
    if src:
        command += ["--src", src]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"sweep worker ({src or 'this tree'}) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_with_reference(url: str, levels: list[int], args: argparse.Namespace,
                           rows: list, ratios: dict[str, dict[str, float]]) -> None:
    """This tree's sweep against the reference tree's, same server, alternating, best of
    ``--repeats``: rows for the table and ``vs_reference`` ratios per C."""
    for conc in levels:
        decisions = max(64, args.per_slot * conc)
        decisions -= decisions % 4
        ideal = math.ceil(decisions / conc) * args.latency
        best: dict[str, dict[str, float]] = {}
        for repeat in range(args.repeats):
            order = ["this", "reference"] if repeat % 2 == 0 else ["reference", "this"]
            for name in order:
                time.sleep(0.5)  # the server closes the last sweep's connections
                got = run_sweep_worker(url, conc, decisions,
                                       args.reference_src if name == "reference" else None)
                old = best.get(name)
                best[name] = got if old is None else {k: min(got[k], old[k]) for k in got}
        this, ref = best["this"], best["reference"]
        for label, got in (("coop-tui sweep (this tree)", this),
                           ("coop-tui sweep (reference tree)", ref)):
            rows.append((label, conc, decisions, int(got["stored"]), ideal, got["wall"],
                         ideal / got["wall"], 1000 * got["cpu"] / decisions,
                         float("nan"), float("nan")))
        ratios.setdefault(str(conc), {}).update({
            "throughput_vs_reference": round(ref["wall"] / this["wall"], 3),
            "cpu_vs_reference": round(this["cpu"] / ref["cpu"], 3),
        })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--concurrency", default="16,128,1024")
    parser.add_argument("--per-slot", type=int, default=2,
                        help="decisions per concurrency slot (D = per-slot x C, at least 64)")
    parser.add_argument("--endpoints", type=int, default=4,
                        help="also run over this many servers with one killed (0: skip)")
    parser.add_argument("--reference-src", default=None, metavar="PATH",
                        help="a source tree (e.g. a checkout of an earlier commit) whose "
                             "sweep is measured beside this one's")
    parser.add_argument("--repeats", type=int, default=3,
                        help="sweeps per tree in the --reference-src comparison; best is kept")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--conc", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--decisions", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sweep_worker(args)
        return
    check_reference_arg(parser, args.reference_src)
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    rows = []
    ratios: dict[str, dict[str, float]] = {}
    # The server runs in its own process, as a real provider would: in-process it would
    # share the GIL with the client and the benchmark would measure the server too.
    server, url = start_server(args.latency, args.chunks)
    try:
        for conc in levels:
            decisions = max(64, args.per_slot * conc)
            decisions -= decisions % 4
            ideal = math.ceil(decisions / conc) * args.latency
            bare_wall, _, bare_cpu = asyncio.run(measure(openai_raw(url, conc), decisions, conc))
            with tempfile.TemporaryDirectory() as tmp:
                wall, stored, cpu, _ = asyncio.run(
                    run_once(sweep_dict(url, decisions, conc), Path(tmp) / "b.db")
                )
            rows.append(("openai SDK (bare loop)", conc, decisions, decisions, ideal, bare_wall,
                         ideal / bare_wall, 1000 * bare_cpu / decisions, 1.0, 1.0))
            rows.append(("coop-tui sweep (storage on)", conc, decisions, stored, ideal, wall,
                         ideal / wall, 1000 * cpu / decisions, bare_wall / wall, cpu / bare_cpu))
            ratios[str(conc)] = {"throughput_ratio": round(bare_wall / wall, 3),
                                 "cpu_ratio": round(cpu / bare_cpu, 3)}
        if args.reference_src:
            compare_with_reference(url, levels, args, rows, ratios)
    finally:
        server.terminate()
        server.wait()
    if args.endpoints > 1:
        conc = 16
        decisions = 256
        ideal = math.ceil(decisions / (conc * args.endpoints)) * args.latency
        for kill in (False, True):  # healthy first, then one server killed a third of the way
            servers = [start_server(args.latency, args.chunks) for _ in range(args.endpoints)]
            try:
                spec = sweep_dict([u for _, u in servers], decisions, conc * args.endpoints,
                                  max_concurrency=conc)
                with tempfile.TemporaryDirectory() as tmp:
                    wall, stored, cpu, retried = asyncio.run(
                        run_once(spec, Path(tmp) / "e.db", kill=servers[1][0] if kill else None,
                                 kill_after=ideal / 3)
                    )
            finally:
                for proc, _ in servers:
                    proc.kill()
                    proc.wait()
            label = f"sweep over {args.endpoints} endpoints" + (", 1 killed" if kill else "")
            rows.append((label, conc * args.endpoints, decisions, stored, ideal, wall,
                         ideal / wall, 1000 * cpu / decisions, float("nan"), float("nan")))
            if kill:
                healthy = rows[-2][5]
                ratios["failover"] = {"throughput_vs_healthy": round(healthy / wall, 3)}
                print(f"{args.endpoints} endpoints, one killed after {ideal / 3:.2f} s: "
                      f"{stored}/{decisions} decisions stored, {retried} transport retries, "
                      f"throughput {healthy / wall:.2f} of the healthy run")
    report(
        "sweep", f"sweep vs bare openai loop, keep-alive loopback server ({args.latency:g} s answers)",
        ["pipeline", "concurrency", "decisions", "stored", "ideal s", "wall s", "efficiency",
         "client CPU ms/decision", "throughput vs bare", "cpu vs bare"],
        rows, {"ratios": ratios, "reference_src": args.reference_src},
    )
    for conc, r in ratios.items():
        if "throughput_ratio" in r:
            print(f"C={conc}: sweep/openai-loop throughput {r['throughput_ratio']:.2f}, "
                  f"client CPU {r['cpu_ratio']:.2f}")
        if "throughput_vs_reference" in r:
            print(f"C={conc}: sweep against the reference tree's: throughput "
                  f"{r['throughput_vs_reference']:.2f}, client CPU {r['cpu_vs_reference']:.2f}")


if __name__ == "__main__":
    main()
