"""Throughput of the two LLM transports against the loopback server.

Why: a sweep is a long run of streamed chat completions at a fixed concurrency, so the
client's per-chunk overhead decides how close a sweep gets to the ideal
``ceil(D / C) * L`` seconds. This measures, on the same server and workload:

* the bare ``openai`` SDK (AsyncOpenAI, one client, streaming),
* a bare ``litellm.acompletion`` streaming loop,
* ``LLMAgent`` on each of its two transports (what sweeps actually use).

The server runs in its own process (``python -m coop_tui.testing.server``) so it does not
compete with the clients for the interpreter lock. Efficiency = ideal time / wall time.

    .venv/bin/python benchmarks/bench_clients.py [--decisions 128] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coop_tui.agents.llm import LLMAgent, _import_litellm  # noqa: E402
from coop_tui.decisions import NullSink  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are playing a game."},
    {"role": "user", "content": "Choose your mixed strategy over A0 and A1."},
]

OneCall = Callable[[], Awaitable[str]]


def start_server(latency: float, chunks: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coop_tui.testing.server",
            "--port",
            "0",
            "--latency",
            str(latency),
            "--chunks",
            str(chunks),
        ],
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


def openai_raw(url: str) -> OneCall:
    import httpx
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key="bench",
        base_url=url,
        max_retries=0,
        http_client=httpx.AsyncClient(
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=512),
            timeout=httpx.Timeout(60.0),
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


def litellm_raw(url: str) -> OneCall:
    litellm = _import_litellm()

    async def call() -> str:
        stream = await litellm.acompletion(
            model="hosted_vllm/loopback",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
            api_base=url,
            api_key="bench",
            timeout=60.0,
        )
        parts = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    return call


def agent_call(url: str, transport: str) -> OneCall:
    model = "openai/loopback" if transport == "openai" else "hosted_vllm/loopback"
    agent = LLMAgent(
        "bench",
        model,
        api_base=url,
        api_key="bench",
        timeout=60.0,
        transport=transport,  # type: ignore[arg-type]
    )

    async def call() -> str:
        reply = await agent.reply(None, [dict(m) for m in MESSAGES], NullSink())  # type: ignore[arg-type]
        return reply.text

    return call


async def measure(call: OneCall, decisions: int, concurrency: int) -> tuple[float, int, float]:
    """Wall seconds, failures, and client CPU seconds for ``decisions`` calls."""
    await call()  # warm-up: imports, first connection
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def one() -> None:
        nonlocal failures
        async with gate:
            try:
                text = await call()
                if not text:
                    failures += 1
            except Exception:  # noqa: BLE001 - counted, the table shows it
                failures += 1

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(decisions)))
    return time.perf_counter() - started, failures, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description="LLM client throughput on the loopback server")
    parser.add_argument("--decisions", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3, help="runs per client; best is kept")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "clients.json"
    )
    args = parser.parse_args()

    proc, url = start_server(args.latency, args.chunks)
    ideal = math.ceil(args.decisions / args.concurrency) * args.latency
    clients: list[tuple[str, Callable[[str], OneCall]]] = [
        ("openai SDK (bare loop)", openai_raw),
        ("litellm (bare loop)", litellm_raw),
        ("LLMAgent transport=openai", lambda u: agent_call(u, "openai")),
        ("LLMAgent transport=litellm", lambda u: agent_call(u, "litellm")),
    ]
    rows: list[dict[str, Any]] = []
    try:
        for label, make in clients:
            # Best of a few runs: the machine is shared, and a stall elsewhere is not the
            # client's cost. Each run is a fresh client on a fresh event loop.
            runs = [
                asyncio.run(measure(make(url), args.decisions, args.concurrency))
                for _ in range(args.repeats)
            ]
            wall = min(w for w, _, _ in runs)
            failures = sum(f for _, f, _ in runs)
            cpu_ms = 1000.0 * min(c for _, _, c in runs) / args.decisions
            rows.append(
                {
                    "client": label,
                    "decisions": args.decisions,
                    "concurrency": args.concurrency,
                    "latency_s": args.latency,
                    "chunks": args.chunks,
                    "wall_s": round(wall, 3),
                    "runs_wall_s": [round(w, 3) for w, _, _ in runs],
                    "cpu_ms_per_decision": round(cpu_ms, 2),
                    "ideal_s": ideal,
                    "efficiency": round(ideal / wall, 3),
                    "failures": failures,
                }
            )
    finally:
        proc.terminate()
        proc.wait(10)

    header = (
        "client",
        "decisions",
        "conc.",
        "latency",
        "best s",
        "ideal s",
        "efficiency",
        "cpu ms/dec",
        "fail",
    )
    print(
        f"{header[0]:<28} {header[1]:>9} {header[2]:>5} {header[3]:>7} {header[4]:>7} "
        f"{header[5]:>7} {header[6]:>10} {header[7]:>10} {header[8]:>4}"
    )
    for r in rows:
        print(
            f"{r['client']:<28} {r['decisions']:>9} {r['concurrency']:>5} {r['latency_s']:>7.2f} "
            f"{r['wall_s']:>7.2f} {r['ideal_s']:>7.2f} {r['efficiency']:>10.2f} "
            f"{r['cpu_ms_per_decision']:>10.2f} {r['failures']:>4}"
        )

    def version(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "absent"

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "clients",
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "openai": version("openai"),
                "litellm": version("litellm"),
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
