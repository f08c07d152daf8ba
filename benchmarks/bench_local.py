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

The study rows (``--study``, repeatable) run a whole offline study as the user does,
``coop-tui --batch FILE --yes --db ...`` timed spawn to exit, with the saved prompt starts
(agents/prefix_cache.py) and without them (every embedded agent given
``prefix_cache = false``), alternating, each into a fresh database; then every stored
decision of the two runs is compared (text, answer, parse, tokens, sampled action). The
figure is the ratio of the two wall times in one run, so the load of the moment hits both.

    .venv/bin/python benchmarks/bench_local.py [--runs 5] [--max-tokens 128] [--threads N]
    .venv/bin/python benchmarks/bench_local.py --runs 0 --study data/studies/superadditive-offline.toml

Writes benchmarks/results/local.json.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
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


# ----------------------------------------------------------------- a whole study, on and off
ANSWER_COLUMNS = ("content_key", "phase", "kind", "agent", "seat", "round", "response",
                  "reasoning", "answer", "parsed", "valid", "attempts", "error", "normalisation",
                  "distribution", "action", "input_tokens", "output_tokens", "retries")
"""What a decision stored: everything but its timing, ids and creation time."""


def without_cache(text: str) -> str:
    """The study file with ``prefix_cache = false`` in every embedded agent's table."""
    agents = tomllib.loads(text).get("agents", {})
    local = [name for name, a in agents.items()
             if str(a.get("model", "")).startswith(("local/", "local:"))]
    for name in local:
        header = re.compile(rf'^\[agents\.(?:"{re.escape(name)}"|{re.escape(name)})\][ \t]*$',
                            re.MULTILINE)
        text, n = header.subn(lambda m: m.group(0) + "\nprefix_cache = false", text, count=1)
        if n != 1:
            raise SystemExit(f"cannot find [agents.{name}] in the study file: write it as a table")
    return text


def stored_answers(db: Path) -> list[tuple[Any, ...]]:
    """Every decision of the database's runs, timing left out (retries keep theirs in JSON)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(f"select {', '.join(ANSWER_COLUMNS)} from decisions").fetchall()
    finally:
        conn.close()
    retries = ANSWER_COLUMNS.index("retries")
    clean = []
    for row in rows:
        attempts = json.loads(row[retries] or "[]")
        for attempt in attempts:
            attempt.pop("latency_ms", None)
        clean.append((*row[:retries], json.dumps(attempts, sort_keys=True), *row[retries + 1:]))
    return sorted(clean, key=lambda r: tuple("" if v is None else str(v) for v in r))


def run_study(study: Path, text: str, folder: Path, tag: str) -> dict[str, Any]:
    """One ``coop-tui --batch`` of the study text, spawn to exit, into a fresh database."""
    source = folder / f"{tag}-{study.name}"
    source.write_text(text, encoding="utf-8")
    db = folder / f"{tag}.db"
    db.unlink(missing_ok=True)
    env = dict(os.environ, COOP_TUI_DB=str(db))
    started = time.perf_counter()
    before = os.times()
    done = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(source), "--yes",
                           "--db", str(db)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{tag} run of {study.name} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"seconds": wall, "cpu_seconds": cpu, "db": db}


def study_row(study: Path, repeats: int) -> dict[str, Any]:
    """The study with saved prompt starts and without, alternating (off first, so the page
    cache and the model file are warm for both), answers compared run by run."""
    text = study.read_text(encoding="utf-8")
    cold_text = without_cache(text)
    runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    identical = True
    decisions = 0
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-local-study-") as tmp:
        folder = Path(tmp)
        for _ in range(repeats):
            off = run_study(study, cold_text, folder, "off")
            on = run_study(study, text, folder, "on")
            a, b = stored_answers(on.pop("db")), stored_answers(off.pop("db"))
            identical = identical and a == b
            decisions = len(a)
            runs["on"].append(on)
            runs["off"].append(off)
    best_on = min(r["seconds"] for r in runs["on"])
    best_off = min(r["seconds"] for r in runs["off"])
    return {
        "study": study.name,
        "decisions": decisions,
        "identical_answers": identical,
        "on_seconds": [round(r["seconds"], 2) for r in runs["on"]],
        "off_seconds": [round(r["seconds"], 2) for r in runs["off"]],
        "on_cpu_seconds": [round(r["cpu_seconds"], 2) for r in runs["on"]],
        "off_cpu_seconds": [round(r["cpu_seconds"], 2) for r in runs["off"]],
        "speedup": round(best_off / best_on, 2),
        "cpu_speedup": round(min(r["cpu_seconds"] for r in runs["off"])
                             / min(r["cpu_seconds"] for r in runs["on"]), 2),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }


def print_studies(rows: list[dict[str, Any]]) -> None:
    print(f"{'study (coop-tui --batch, spawn to exit)':<44} {'off s':>7} {'on s':>7} "
          f"{'wall x':>7} {'CPU x':>6}  answers")
    for r in rows:
        same = "identical" if r["identical_answers"] else "DIFFER"
        print(f"{r['study']:<44} {min(r['off_seconds']):>7.1f} {min(r['on_seconds']):>7.1f} "
              f"{r['speedup']:>7.2f} {r['cpu_speedup']:>6.2f}  {same} ({r['decisions']} decisions; "
              f"load {r['load_average_before']} -> {r['load_average_after']})")


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
    parser.add_argument("--runs", type=int, default=5, help="throughput runs per path (0: none)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--study", type=Path, action="append", default=[],
                        help="an offline study to run with and without saved prompt starts")
    parser.add_argument("--study-repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    outcome: dict[str, Any] = {"benchmark": "local"}
    if args.runs > 0:
        outcome = asyncio.run(main(args.runs, args.max_tokens, args.threads))
        print_table(outcome)
    if args.study:
        outcome["studies"] = []
        for path in args.study:  # each row printed as it is done: a study can take minutes
            outcome["studies"].append(study_row(path, args.study_repeats))
            print_studies(outcome["studies"][-1:])
            sys.stdout.flush()
    if args.runs <= 0 and args.out == RESULTS:  # the throughput figures stay as they were
        args.out = RESULTS.with_name("local-studies.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(outcome, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
