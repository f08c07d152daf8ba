"""Cost of ``coop-tui report`` on an imported CoopEval study with real-length reasoning texts.

Builds a CoopEval study directory from the two tournaments in ``tests/data/coopeval_sample``
(or ``--sample DIR``): ``--runs`` runs (replicates), each with three copies of each
tournament under its own name, every record repeated ``--repeat`` times. Each repeated
move gets its own trace id and a varied reasoning text in ``game_log.txt``: the agent's
own paragraphs (from every text it wrote in the sample) drawn and shuffled to about the
original length, numbers redrawn, the original final JSON answer kept so the importer's
parser reads the same distribution. The defaults give ~52,600 decisions (CoopEval's
published study has 52,092).

Then, each in a fresh process through the installed ``coop-tui``:

- ``import coopeval`` (which also stores the cached report sections),
- ``report --format latex``, ``report --json``, ``report`` (text),
- the same reports after the section cache is emptied (what a report costs when nothing
  was stored: the reasoning fingerprints computed in it),

and, in this process, the fingerprints section alone. Prints a table and writes
``benchmarks/results/report_cost.json``.

    .venv/bin/python benchmarks/bench_report_cost.py [--repeat 27] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SAMPLE = ROOT / "tests" / "data" / "coopeval_sample"
COPIES = 3
"""Copies of each sample tournament per run (each its own experiment)."""


def _paragraphs(text: str) -> tuple[list[str], str]:
    """(body paragraphs, the final answer paragraph) of one response."""
    parts = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    tail_at = max((i for i, p in enumerate(parts) if "{" in p), default=len(parts) - 1)
    return parts[:tail_at], "\n\n".join(parts[tail_at:])


def _number(match: re.Match[str], rng: random.Random) -> str:
    return str(rng.randint(0, 120)) if rng.random() < 0.4 else match.group(0)


def varied(text: str, pool: list[str], rng: random.Random) -> str:
    """Another text of about the same length, from the agent's own paragraphs."""
    body, tail = _paragraphs(text)
    if not body or not pool:
        return text
    target = sum(len(p) for p in body) * rng.uniform(0.6, 1.4)
    out: list[str] = []
    while sum(len(p) for p in out) < target:
        out.append(re.sub(r"\d+", lambda m: _number(m, rng), rng.choice(pool)))
    return "\n\n".join([*out, tail])


def _trace_holders(value: Any) -> list[dict[str, Any]]:
    """Every dict in a record that carries a ``trace_id`` (moves, votes, proposals)."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if "trace_id" in value:
            found.append(value)
        for v in value.values():
            found.extend(_trace_holders(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_trace_holders(v))
    return found


def build_study(sample: Path, out: Path, runs: int, repeat: int, seed: int = 1) -> None:
    from coop_tui.importers.coopeval_log import iter_log_entries

    rng = random.Random(seed)
    tournaments = sorted(p for p in sample.iterdir() if (p / "config.json").is_file())
    logs = {t: {e.id: e for e in iter_log_entries(t / "game_log.txt")} for t in tournaments}
    pools: dict[str, list[str]] = {}
    for t in tournaments:
        for e in logs[t].values():
            pools.setdefault(e.agent.split("#")[0], []).extend(_paragraphs(e.response or "")[0])
    counter = 0
    for r in range(1, runs + 1):
        for t in tournaments:
            records = [json.loads(line) for line in (t / "records.jsonl").read_text().splitlines()
                       if line.strip()]
            for copy in range(COPIES):
                target = out / f"run{r}_2026-01-01" / f"{t.name}_{copy}"
                target.mkdir(parents=True)
                for name in ("config.json", "mediator_design.json", "contract_design.json"):
                    if (t / name).is_file():
                        shutil.copy(t / name, target / name)
                with (target / "records.jsonl").open("w") as rec_out, \
                        (target / "game_log.txt").open("w") as log_out:
                    for _ in range(repeat):
                        for record in records:
                            record = json.loads(json.dumps(record))
                            for holder in _trace_holders(record):
                                entry = logs[t].get(holder["trace_id"])
                                counter += 1
                                holder["trace_id"] = f"{counter:08x}"
                                original = (entry.response if entry else None) or holder.get("response")
                                if not original:
                                    continue
                                agent = entry.agent if entry else str(holder.get("player", ""))
                                text = varied(original, pools.get(agent.split("#")[0], []), rng)
                                if "response" in holder:
                                    holder["response"] = text
                                if entry is not None:
                                    stamp = "2026-01-01 00:00:00"
                                    log_out.write(
                                        f"===== Prompt [ID: {holder['trace_id']}] [{stamp}] =====\n"
                                        f"agent: {entry.agent}\nprompt:\n{entry.prompt}\n\n"
                                        f"===== Response [ID: {holder['trace_id']}] [{stamp}] =====\n"
                                        f"agent: {entry.agent}\nresponse:\n{text}\n\n")
                            rec_out.write(json.dumps(record) + "\n")


CPU: dict[str, float] = {}
"""CPU seconds (user + system) of the last :func:`timed` command: on a shared machine
the wall time moves with the load, the CPU time much less."""


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=27)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the study and database here")
    opts = parser.parse_args()
    work = opts.keep or Path(tempfile.mkdtemp(prefix="bench-report-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    study, db = work / "study", work / "coop.db"
    exe = str(Path(sys.executable).with_name("coop-tui"))
    env = {**os.environ, "COOP_TUI_DB": str(db)}
    rows: list[list[Any]] = []
    if not db.exists():
        if study.exists():
            shutil.rmtree(study)
        t0 = time.perf_counter()
        build_study(opts.sample, study, opts.runs, opts.repeat)
        rows.append(["write the study directory", time.perf_counter() - t0, None, ""])
        wall, _ = timed([exe, "import", "coopeval", str(study), "--db", str(db)], env)
        rows.append(["import coopeval (folds summaries, stores the slow sections)", wall,
                     CPU["last"], ""])
    conn = sqlite3.connect(db)
    decisions, chars = conn.execute(
        "select count(*), coalesce(sum(length(coalesce(nullif(reasoning, ''), response))), 0)"
        " from decisions").fetchone()
    play = conn.execute("select count(*) from decisions where phase = 'play'").fetchone()[0]
    conn.close()

    def reports(label: str) -> dict[str, list[float]]:
        out = {}
        for name, extra in (("report --format latex", ["--format", "latex"]),
                            ("report --json", ["--json"]), ("report", [])):
            wall, _ = timed([exe, "report", "--db", str(db), *extra], env)
            out[name] = [wall, CPU["last"]]
            rows.append([f"{name} ({label})", wall, CPU["last"], ""])
        return out

    warm = reports("sections stored")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("delete from section_results")
    conn.close()
    cold_json, _ = timed([exe, "report", "--db", str(db), "--json"], env)
    rows.append(["report --json (nothing stored: builds the fingerprints)", cold_json,
                 CPU["last"], ""])
    again, _ = timed([exe, "report", "--db", str(db), "--json"], env)
    rows.append(["report --json again (stored by the one before)", again, CPU["last"], ""])

    from coop_tui.analysis.sections.fingerprints import SECTION
    from coop_tui.store import Store

    store = Store(db)
    run_id = store.resolve_run(None)["id"]
    t0, c0 = time.perf_counter(), time.process_time()
    value = SECTION.build(store, run_id, {})
    fp, fp_cpu = time.perf_counter() - t0, time.process_time() - c0
    store.close()
    rows.append([f"fingerprints section alone ({value['traces']} traces)", fp, fp_cpu, ""])
    for row in rows:
        row[-1] = f"{decisions:,} decisions"
        row[2] = "-" if row[2] is None else row[2]
    from _table import report

    report("report_cost", "report on an imported CoopEval study with reasoning texts",
           ["task", "wall s", "CPU s", "data"], rows,
           {"decisions": decisions, "play_decisions": play, "text_chars": chars,
            "load_average": os.getloadavg()[0], "warm": warm, "cold_json": cold_json,
            "fingerprints_s": fp, "fingerprints_cpu_s": fp_cpu,
            "fingerprint_traces": value["traces"]})
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
