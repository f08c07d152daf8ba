"""The LLM agent's transport against a bare aiohttp loop and the openai SDK, at several
concurrencies.

Why: a sweep is a long run of streamed chat completions at a fixed concurrency, so the
client's CPU per streamed answer and the pool's cost per request decide how close a sweep
gets to the ideal ``ceil(D / C) * L`` seconds. For each concurrency C this measures, in one
run against one keep-alive server (``python -m coop_tui.testing.server`` in its own
process, so it does not share the interpreter lock with the clients):

* a bare aiohttp loop (one ``ClientSession``, streaming, lines split by hand: the floor for
  what the agent adds on the same library),
* the bare ``openai`` SDK (one ``AsyncOpenAI`` on httpx, pool sized to C, no retries),
* ``LLMAgent`` on the ``openai`` transport (what sweeps use for OpenAI-compatible servers:
  aiohttp, endpoint pool, retries, cut-stream detection, usage and cost),
* optionally (``--litellm``) a bare ``litellm.acompletion`` loop and the agent on litellm,

and prints, per C, the agent's throughput and client CPU per decision as ratios to the
bare aiohttp loop's and the openai SDK's. Runs alternate between clients and the best of
``--repeats`` is kept, so a stall elsewhere on a shared machine is not charged to one
client.

    .venv/bin/python benchmarks/bench_clients.py [--concurrency 16,128,512] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
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

from _table import report  # noqa: E402

from coop_tui.agents.llm import LLMAgent, _import_litellm  # noqa: E402
from coop_tui.decisions import NullSink  # noqa: E402

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
    import json

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


async def measure(call: OneCall, decisions: int, concurrency: int) -> tuple[float, int, float]:
    """Wall seconds, failures, and client CPU seconds for ``decisions`` calls."""
    await call()  # warm-up: imports, first connection
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="16,128,512",
                        help="comma-separated concurrencies")
    parser.add_argument("--per-slot", type=int, default=2,
                        help="decisions per concurrency slot (D = per-slot x C, at least 64)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2, help="runs per client; best is kept")
    parser.add_argument("--litellm", action="store_true", help="also measure litellm")
    args = parser.parse_args()

    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    clients: list[tuple[str, Callable[[str, int], OneCall]]] = [
        ("aiohttp (bare loop)", aiohttp_raw),
        ("openai SDK (bare loop)", openai_raw),
        ("LLMAgent transport=openai", agent_call),
    ]
    if args.litellm:
        clients += [
            ("litellm (bare loop)", litellm_raw),
            ("LLMAgent transport=litellm", lambda u, c: agent_call(u, c, "litellm")),
        ]
    proc, url = start_server(args.latency, args.chunks)
    rows: list[list[Any]] = []
    ratios: dict[str, dict[str, float]] = {}
    try:
        for conc in levels:
            decisions = max(64, args.per_slot * conc)
            ideal = math.ceil(decisions / conc) * args.latency
            best: dict[str, tuple[float, int, float]] = {}
            for _ in range(args.repeats):
                for label, make in clients:  # alternate, so drift hits every client alike
                    wall, fail, cpu = asyncio.run(measure(make(url, conc), decisions, conc))
                    old = best.get(label)
                    best[label] = (min(wall, old[0]) if old else wall,
                                   fail + (old[1] if old else 0),
                                   min(cpu, old[2]) if old else cpu)
            aio_wall, _, aio_cpu = best["aiohttp (bare loop)"]
            sdk_wall, _, sdk_cpu = best["openai SDK (bare loop)"]
            for label, _ in clients:
                wall, fail, cpu = best[label]
                rows.append([label, conc, decisions, round(wall, 3), round(ideal / wall, 3),
                             round(1000 * cpu / decisions, 2),
                             round(aio_wall / wall, 3), round(cpu / aio_cpu, 3),
                             round(sdk_wall / wall, 3), round(cpu / sdk_cpu, 3), fail])
            agent_wall, _, agent_cpu = best["LLMAgent transport=openai"]
            ratios[str(conc)] = {
                "throughput_vs_aiohttp": round(aio_wall / agent_wall, 3),
                "cpu_vs_aiohttp": round(agent_cpu / aio_cpu, 3),
                "throughput_vs_openai": round(sdk_wall / agent_wall, 3),
                "cpu_vs_openai": round(agent_cpu / sdk_cpu, 3),
                "agent_cpu_ms_per_decision": round(1000 * agent_cpu / decisions, 3),
                "agent_efficiency": round(ideal / agent_wall, 3),
            }
    finally:
        proc.terminate()
        proc.wait(10)
    report(
        "clients",
        f"streamed decisions against a keep-alive loopback server ({args.latency:g} s answers, "
        f"{args.chunks} chunks)",
        ["client", "concurrency", "decisions", "best wall s", "efficiency", "cpu ms/decision",
         "throughput vs aiohttp", "cpu vs aiohttp", "throughput vs openai", "cpu vs openai",
         "failures"],
        rows,
        {"ratios": ratios},
    )
    for conc, r in ratios.items():
        print(f"C={conc}: LLMAgent throughput {r['throughput_vs_aiohttp']:.2f}x bare aiohttp, "
              f"{r['throughput_vs_openai']:.2f}x openai SDK; client CPU "
              f"{r['cpu_vs_aiohttp']:.2f}x bare aiohttp, {r['cpu_vs_openai']:.2f}x openai SDK "
              f"({r['agent_cpu_ms_per_decision']:.2f} ms/decision)")


if __name__ == "__main__":
    main()
