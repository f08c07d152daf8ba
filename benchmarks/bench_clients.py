"""The LLM agent's transport against a bare aiohttp loop and the openai SDK, at several
concurrencies.

Why: a sweep is a long run of streamed chat completions at a fixed concurrency, so the
client's CPU per streamed answer and the pool's cost per request decide how close a sweep
gets to the ideal ``ceil(D / C) * L`` seconds. For each concurrency C this measures, in one
run against one keep-alive server (``python -m coop_tui.testing.server`` in its own
process, so it does not share the interpreter lock with the clients):

* a bare aiohttp loop (one ``ClientSession``, streaming, the body read line by line with
  ``async for line in response.content`` and each ``data:`` line given to ``json.loads``:
  the loop the aiohttp documentation suggests, with no pool, retries or checks),
* the bare ``openai`` SDK (one ``AsyncOpenAI`` on httpx, pool sized to C, no retries),
* ``LLMAgent`` on the ``openai`` transport (what sweeps use for OpenAI-compatible servers:
  aiohttp, endpoint pool, retries, cut-stream detection, usage and cost),
* optionally (``--litellm``) a bare ``litellm.acompletion`` loop and the agent on litellm,
* optionally (``--reference-src PATH``) ``LLMAgent`` from another source tree, e.g. a
  checkout of an earlier commit (``git worktree add --detach /tmp/old e440c13^`` gives the
  hand-written HTTP/1.1 client that aiohttp replaced), so old and new are compared in one
  run; the old code is imported from that path only, never from this package,

and prints, per C, the agent's throughput and client CPU per decision as ratios to the
bare aiohttp loop's, the openai SDK's and the reference agent's (the full table, then the
agent's row of ratios per C). Each measurement runs in
a fresh interpreter (so one client's imports, heap and garbage collections are not charged
to the next), against the same server; runs alternate between clients (each repeat
starting with the next one) and the best of ``--repeats`` is kept, so a stall elsewhere on
a shared machine is not charged to one client.

    .venv/bin/python benchmarks/bench_clients.py [--concurrency 16,128,512] [--latency 0.2]
        [--repeats 3] [--reference-src /tmp/old] [--freeze-gc]

``--freeze-gc`` measures every client alike as ``--batch`` runs agents: what is alive after
the warm-up (modules, the client, its session) is frozen out of the cyclic collector
(``gc.freeze()``), so a full collection does not re-scan it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _reference import check_loaded_from, check_reference_arg, use_source_tree  # noqa: E402
from _table import report  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are playing a game."},
    {"role": "user", "content": "Choose your mixed strategy over A0 and A1."},
]

OneCall = Callable[[], Awaitable[str]]


def start_server(latency: float, chunks: int, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "coop_tui.testing.server", "--port", "0",
         "--latency", str(latency), "--chunks", str(chunks), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"loopback server did not start: {line!r}")
    return proc, line.removeprefix("listening on ")


def aiohttp_raw(url: str, concurrency: int) -> OneCall:
    import aiohttp

    body = json.dumps({"model": "loopback", "messages": MESSAGES, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    target = url.rstrip("/") + "/chat/completions"
    session: list[Any] = []

    async def call() -> str:
        if not session:  # made on the loop that runs the calls
            session.append(aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=concurrency)))
        parts = []
        async with session[0].post(target, data=body, headers=headers) as response:
            async for line in response.content:
                if line.startswith(b"data: {"):
                    chunk = json.loads(line[6:])
                    for choice in chunk.get("choices") or ():
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            parts.append(text)
        return "".join(parts)

    call.session = session  # type: ignore[attr-defined]  # closed by measure()
    return call


def openai_raw(url: str, concurrency: int) -> OneCall:
    import httpx
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key="bench",
        base_url=url,
        max_retries=0,
        http_client=httpx.AsyncClient(
            limits=httpx.Limits(max_connections=concurrency,
                                max_keepalive_connections=concurrency),
            timeout=httpx.Timeout(120.0),
        ),
    )

    async def call() -> str:
        stream = await client.chat.completions.create(
            model="loopback",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        parts = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    return call


def litellm_raw(url: str, concurrency: int) -> OneCall:
    from coop_tui.agents.llm import _import_litellm

    litellm = _import_litellm()

    async def call() -> str:
        stream = await litellm.acompletion(
            model="hosted_vllm/loopback",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
            api_base=url,
            api_key="bench",
            timeout=120.0,
        )
        parts = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    return call


def agent_call(url: str | list[str], concurrency: int, transport: str = "openai") -> OneCall:
    """``LLMAgent.reply`` of the ``coop_tui`` first on ``sys.path`` (this tree's, or the
    reference tree's in a ``--src`` worker)."""
    from coop_tui.agents.llm import LLMAgent
    from coop_tui.decisions import NullSink

    model = "openai/loopback" if transport == "openai" else "hosted_vllm/loopback"
    agent = LLMAgent(
        "bench", model, api_base=url, api_key="bench", timeout=120.0,
        transport=transport,  # type: ignore[arg-type]
        max_connections=concurrency,  # what a sweep of this concurrency gives it
    )

    async def call() -> str:
        reply = await agent.reply(None, [dict(m) for m in MESSAGES], NullSink())  # type: ignore[arg-type]
        return reply.text

    call.agent = agent  # type: ignore[attr-defined]  # closed by measure()
    return call


async def measure(call: OneCall, decisions: int, concurrency: int,
                  freeze_gc: bool = False) -> tuple[float, int, float]:
    """Wall seconds, failures, and client CPU seconds for ``decisions`` calls. With
    ``freeze_gc``, what is alive after the warm-up is frozen out of the cyclic collector,
    as ``--batch`` does around a run (``gc.freeze()`` in coop_tui/sweep/run.py)."""
    await call()  # warm-up: imports, first connection
    if freeze_gc:
        gc.freeze()
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def one() -> None:
        nonlocal failures
        async with gate:
            try:
                if not await call():
                    failures += 1
            except Exception:  # noqa: BLE001 - counted, the table shows it
                failures += 1

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(decisions)))
    result = time.perf_counter() - started, failures, time.process_time() - cpu
    agent = getattr(call, "agent", None)
    if agent is not None and hasattr(agent, "aclose"):
        await agent.aclose()
    for session in getattr(call, "session", ()):
        await session.close()
    return result


CLIENTS: dict[str, tuple[str, Callable[[str, int], OneCall]]] = {
    "aiohttp": ("aiohttp (bare loop)", aiohttp_raw),
    "openai": ("openai SDK (bare loop)", openai_raw),
    "agent": ("LLMAgent transport=openai", agent_call),
    "reference": ("reference LLMAgent (--reference-src)", agent_call),
    "litellm": ("litellm (bare loop)", litellm_raw),
    "agent-litellm": ("LLMAgent transport=litellm", lambda u, c: agent_call(u, c, "litellm")),
}
"""Worker names: label in the table, and the factory of one call."""


def worker(args: argparse.Namespace) -> None:
    """One measurement in this fresh interpreter; prints ``{wall, failures, cpu}``."""
    root = use_source_tree(args.src) if args.src else None  # its coop_tui, not ours
    _, make = CLIENTS[args.worker]
    wall, fail, cpu = asyncio.run(measure(make(args.url, args.conc), args.decisions, args.conc,
                                          args.freeze_gc))
    if root is not None:
        check_loaded_from(root)
    print(json.dumps({"wall": wall, "failures": fail, "cpu": cpu}))


def run_worker(name: str, url: str, conc: int, decisions: int,
               src: str | None = None, freeze_gc: bool = False) -> tuple[float, int, float]:
    command = [sys.executable, __file__, "--worker", name, "--url", url,
               "--conc", str(conc), "--decisions", str(decisions)]
    if src:
        command += ["--src", src]
    if freeze_gc:
        command.append("--freeze-gc")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} worker failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["wall"], result["failures"], result["cpu"]


def summary(ratios: dict[str, dict[str, float]], refs: list[str]) -> None:
    """The agent alone, one row per C: its CPU per decision and its ratios to each reference
    (throughput above 1 and CPU below 1 mean the agent does better)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="LLMAgent (openai transport) against the references, same run")
    table.add_column("C", justify="right")
    table.add_column("agent cpu ms/decision", justify="right")
    for ref in refs:
        table.add_column(f"{ref} cpu ms", justify="right")
    for ref in refs:
        table.add_column(f"throughput vs {ref}", justify="right")
        table.add_column(f"cpu vs {ref}", justify="right")
    for conc, r in ratios.items():
        cells = [conc, f"{r['agent_cpu_ms_per_decision']:.3f}"]
        cells += [f"{r[f'{ref}_cpu_ms_per_decision']:.3f}" for ref in refs]
        for ref in refs:
            cells += [f"{r[f'throughput_vs_{ref}']:.2f}", f"{r[f'cpu_vs_{ref}']:.2f}"]
        table.add_row(*cells)
    Console(width=max(Console().width, 150)).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="16,128,512",
                        help="comma-separated concurrencies")
    parser.add_argument("--per-slot", type=int, default=2,
                        help="decisions per concurrency slot (D = per-slot x C, at least 64)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="runs per client; best is kept")
    parser.add_argument("--litellm", action="store_true", help="also measure litellm")
    parser.add_argument("--reference-src", default=None, metavar="PATH",
                        help="a source tree (e.g. a checkout of an earlier commit) whose "
                             "LLMAgent is measured beside this one")
    parser.add_argument("--no-openai", action="store_true",
                        help="skip the openai SDK (slow at high C; its ratios are then omitted)")
    parser.add_argument("--freeze-gc", action="store_true",
                        help="every client alike with what is alive after its warm-up frozen "
                             "out of the cyclic collector, as --batch does around a run")
    parser.add_argument("--worker", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--conc", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--decisions", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    check_reference_arg(parser, args.reference_src)

    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    names = ["aiohttp", *([] if args.no_openai else ["openai"]), "agent"]
    if args.reference_src:
        names.append("reference")
    if args.litellm:
        names += ["litellm", "agent-litellm"]
    proc, url = start_server(args.latency, args.chunks)
    rows: list[list[Any]] = []
    ratios: dict[str, dict[str, float]] = {}
    try:
        for conc in levels:
            decisions = max(64, args.per_slot * conc)
            ideal = math.ceil(decisions / conc) * args.latency
            best: dict[str, tuple[float, int, float]] = {}
            for repeat in range(args.repeats):
                # alternate, so drift hits every client alike; each repeat starts with the
                # next client, so none always follows the same one
                shift = repeat % len(names)
                for name in names[shift:] + names[:shift]:
                    src = args.reference_src if name == "reference" else None
                    time.sleep(0.5)  # the server closes the last client's connections
                    wall, fail, cpu = run_worker(name, url, conc, decisions, src, args.freeze_gc)
                    old = best.get(name)
                    best[name] = (min(wall, old[0]) if old else wall,
                                  fail + (old[1] if old else 0),
                                  min(cpu, old[2]) if old else cpu)
            refs = [n for n in ("aiohttp", "openai", "reference") if n in best]
            for name in names:
                wall, fail, cpu = best[name]
                row: list[Any] = [CLIENTS[name][0], conc, decisions, round(wall, 3),
                                  round(ideal / wall, 3), round(1000 * cpu / decisions, 3)]
                for ref in refs:
                    row += [round(best[ref][0] / wall, 3), round(cpu / best[ref][2], 3)]
                rows.append([*row, fail])
            agent_wall, _, agent_cpu = best["agent"]
            entry = {
                "agent_cpu_ms_per_decision": round(1000 * agent_cpu / decisions, 3),
                "agent_efficiency": round(ideal / agent_wall, 3),
            }
            for ref in refs:
                entry[f"throughput_vs_{ref}"] = round(best[ref][0] / agent_wall, 3)
                entry[f"cpu_vs_{ref}"] = round(agent_cpu / best[ref][2], 3)
                entry[f"{ref}_cpu_ms_per_decision"] = round(1000 * best[ref][2] / decisions, 3)
            ratios[str(conc)] = entry
    finally:
        proc.terminate()
        proc.wait(10)
    columns = ["client", "concurrency", "decisions", "best wall s", "efficiency",
               "cpu ms/decision"]
    short = {"aiohttp": "aiohttp", "openai": "openai", "reference": "reference"}
    for ref in (n for n in ("aiohttp", "openai", "reference") if n in names):
        columns += [f"throughput vs {short[ref]}", f"cpu vs {short[ref]}"]
    report(
        "clients",
        f"streamed decisions against a keep-alive loopback server ({args.latency:g} s answers, "
        f"{args.chunks} chunks), best of {args.repeats}",
        [*columns, "failures"],
        rows,
        {"ratios": ratios, "reference_src": args.reference_src},
    )
    summary(ratios, [k for k in short if any(f"cpu_vs_{k}" in r for r in ratios.values())])
    for conc, r in ratios.items():
        through = ", ".join(f"{r[f'throughput_vs_{k}']:.2f}x {k}" for k in short
                            if f"throughput_vs_{k}" in r)
        cpu = ", ".join(f"{r[f'cpu_vs_{k}']:.2f}x {k} ({r[f'{k}_cpu_ms_per_decision']:.3f} ms)"
                        for k in short if f"cpu_vs_{k}" in r)
        print(f"C={conc}: LLMAgent throughput {through}; client CPU "
              f"{r['agent_cpu_ms_per_decision']:.3f} ms/decision = {cpu}")


if __name__ == "__main__":
    main()
