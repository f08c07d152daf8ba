"""Embedded model throughput: our pipeline against bare llama.cpp on the same prompt.

"Ours" is ``LocalAgent.reply`` (worker thread, deltas handed to the event loop, sink
calls) on a real game prompt; "bare" is llama-cpp-python's ``create_chat_completion``
streaming the same messages with the same settings, on the same loaded model, in the
same process. Both evaluate the prompt from scratch on every run (a fixed seed makes our
agent reset the context, so the bare runs reset it too) and write the same text for the
same seed. The figure is output tokens per second of wall time; the pipeline's ratio to
bare should be at least 0.9. Runs alternate between the two, so load from other processes
hits both alike. A second table row shows a full two-step mixed decision (reasoning then
the grammar-constrained answer) for reference; it has no bare counterpart.

    .venv/bin/python benchmarks/bench_local.py [--runs 5] [--max-tokens 128] [--threads N]

Writes benchmarks/results/local.json.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from coop_tui.agents.local import (
    DEFAULT_TEMPERATURE,
    LocalAgent,
    default_threads,
    get_model,
    smollm2_path,
)
from coop_tui.decisions import DecisionRequest
from coop_tui.engine import MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game

RESULTS = Path(__file__).resolve().parent / "results" / "local.json"
TWIST = "The other player reasons a lot like you do: the two of you are 80% similar."
TARGET = 0.9


class CountingSink:
    """What the engine's sink costs at least: one call per delta, kept."""

    def __init__(self) -> None:
        self.deltas: list[str] = []

    def text(self, delta: str) -> None:
        self.deltas.append(delta)

    def reasoning(self, delta: str) -> None:
        self.deltas.append(delta)


def game_request(agent: LocalAgent) -> DecisionRequest:
    ctx = MatchContext(
        run_id="bench", match_id="bench", game=get_game("prisoners"), agents=[agent, agent],
        bus=EventBus(), seed=1,
    )
    return ctx.play_request(0, 1, twist=TWIST)


async def run_ours(agent: LocalAgent, request: DecisionRequest) -> dict[str, Any]:
    sink = CountingSink()
    started = time.perf_counter()
    reply = await agent.reply(request, list(request.messages), sink)
    wall = time.perf_counter() - started
    return {"tokens": reply.output_tokens or 0, "seconds": wall, "text": reply.text,
            "deltas": len(sink.deltas)}


def run_bare(llama: Any, messages: list[dict[str, str]], *, max_tokens: int, temperature: float,
             seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    llama.reset()
    parts: list[str] = []
    for chunk in llama.create_chat_completion(
        messages=messages, max_tokens=max_tokens, temperature=temperature, seed=seed, stream=True
    ):
        delta = chunk["choices"][0]["delta"].get("content")
        if delta:
            parts.append(delta)
    wall = time.perf_counter() - started
    text = "".join(parts)
    # a stream reports no usage: count the tokens of the text it wrote
    tokens = len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    return {"tokens": tokens, "seconds": wall, "text": text, "deltas": len(parts)}


def rate(runs: list[dict[str, Any]]) -> float:
    return sum(r["tokens"] for r in runs) / sum(r["seconds"] for r in runs)


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Unix
        return None


async def main(runs: int, max_tokens: int, threads: int) -> dict[str, Any]:
    path = smollm2_path()
    started = time.perf_counter()
    model = get_model(path, threads)
    load_seconds = time.perf_counter() - started
    model.use_threads(threads)
    probe = LocalAgent("bench", max_tokens=max_tokens, threads=threads, seed=0)
    mixed = game_request(probe)
    # the free step alone: the same work bare llama.cpp does
    free = dataclasses.replace(mixed, kind="text", schema=None)
    messages = [dict(m) for m in mixed.messages]
    prompt_tokens = len(model.llama.tokenize(
        model.formatter(messages=messages).prompt.encode("utf-8"),  # type: ignore[misc]
        add_bos=False, special=True,
    ))
    ours: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    two_step: list[dict[str, Any]] = []
    same_text = 0
    load_before = load_average()
    # one untimed warm-up of each path
    await run_ours(probe, free)
    with model.lock:
        run_bare(model.llama, messages, max_tokens=max_tokens, temperature=DEFAULT_TEMPERATURE,
                 seed=0)
    for seed in range(1, runs + 1):
        agent = LocalAgent("bench", max_tokens=max_tokens, threads=threads, seed=seed)
        ours.append(await run_ours(agent, free))
        with model.lock:
            bare.append(run_bare(model.llama, messages, max_tokens=max_tokens,
                                 temperature=DEFAULT_TEMPERATURE, seed=seed))
        same_text += ours[-1]["text"] == bare[-1]["text"]
        two_step.append(await run_ours(agent, mixed))
    load_after = load_average()
    ours_rate, bare_rate = rate(ours), rate(bare)
    ratio = ours_rate / bare_rate
    per_run = [o["tokens"] / o["seconds"] / (b["tokens"] / b["seconds"]) for o, b in zip(ours, bare, strict=True)]
    result = {
        "benchmark": "local",
        "model": "local/smollm2",
        "gguf": path.name,
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "load_seconds": round(load_seconds, 3),
        "prompt_tokens": prompt_tokens,
        "max_tokens": max_tokens,
        "temperature": DEFAULT_TEMPERATURE,
        "runs": runs,
        "identical_text_runs": same_text,
        "ours_tokens_per_s": round(ours_rate, 2),
        "bare_tokens_per_s": round(bare_rate, 2),
        "ratio": round(ratio, 3),
        "median_run_ratio": round(statistics.median(per_run), 3),
        "target": TARGET,
        "meets_target": ratio >= TARGET,
        "two_step_mixed_tokens_per_s": round(rate(two_step), 2),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "ours": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items() if k != "text"}
                 for r in ours],
        "bare": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items() if k != "text"}
                 for r in bare],
        "two_step": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()
                      if k != "text"} for r in two_step],
    }
    return result


def print_table(r: dict[str, Any]) -> None:
    ours_tokens = sum(x["tokens"] for x in r["ours"])
    bare_tokens = sum(x["tokens"] for x in r["bare"])
    two_tokens = sum(x["tokens"] for x in r["two_step"])
    rows = [
        ("bare llama.cpp create_chat_completion", bare_tokens, r["bare_tokens_per_s"], "1.000"),
        ("LocalAgent.reply (free step only)", ours_tokens, r["ours_tokens_per_s"],
         f"{r['ratio']:.3f}"),
        ("LocalAgent.reply (two-step mixed)", two_tokens, r["two_step_mixed_tokens_per_s"], "-"),
    ]
    print(f"Embedded model: {r['gguf']}, {r['threads']} thread(s), prompt {r['prompt_tokens']} "
          f"tokens, max_tokens {r['max_tokens']}, {r['runs']} runs per path, "
          f"load {r['load_seconds']:.2f} s")
    print(f"{'path':<40} {'tokens':>7} {'tokens/s':>9} {'ratio':>7}")
    for name, tokens, tps, ratio in rows:
        print(f"{name:<40} {tokens:>7} {tps:>9.2f} {ratio:>7}")
    verdict = "meets" if r["meets_target"] else "MISSES"
    print(f"ratio {r['ratio']:.3f} (median per run {r['median_run_ratio']:.3f}) {verdict} the "
          f"target >= {r['target']}; identical text in {r['identical_text_runs']}/{r['runs']} "
          f"runs; load average {r['load_average_before']} -> {r['load_average_after']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    outcome = asyncio.run(main(args.runs, args.max_tokens, args.threads))
    print_table(outcome)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(outcome, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
