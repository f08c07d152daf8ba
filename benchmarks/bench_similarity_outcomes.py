"""Cost of the ``expected`` / ``welfare`` / ``similarity_table`` report sections.

Builds a one-shot similarity sweep through the real engine and store (eight ``random``
strategies with different cooperation probabilities, cross-play, X = 0..100 under two
framings, as many samples as it takes to pass ``--decisions``), then, in one process:

- ``build_report`` without the similarity sections (the rest of the report), and
- the three sections (one shared aggregation), timed separately,

first with the strategies' eight distinct distributions, then after rewriting every
stored distribution to a random whole percentage (what LLM answers look like: up to 101
distinct strategies per seat, so the GROUP BY keeps far more rows). Prints a table and
writes ``benchmarks/results/similarity_outcomes.json``.

    .venv/bin/python benchmarks/bench_similarity_outcomes.py --decisions 200000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBS = [0.05, 0.15, 0.3, 0.45, 0.55, 0.7, 0.85, 0.95]
XS = list(range(0, 101, 10))
FRAMINGS = ["similar", "different"]


async def build(db: Path, samples: int) -> str:
    from coop_tui.spec import build_sweep
    from coop_tui.store import Store
    from coop_tui.sweep import run_sweep

    agents = {f"r{i}": {"strategy": "random", "params": {"p": p}} for i, p in enumerate(PROBS)}
    sweep = build_sweep({
        "name": "bench-similarity", "seed": 1, "concurrency": 8, "reuse": False,
        "agents": agents,
        "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
                         "agents": list(agents), "similarity": XS, "framing": FRAMINGS,
                         "samples": samples}],
    }, check_keys=False)
    store = Store(db)
    summary = await run_sweep(sweep, store)
    store.close()
    return summary.run_id


def timed(db: Path, run_id: str) -> dict[str, float]:
    from coop_tui.analysis import sections, similarity_play
    from coop_tui.report import build_report
    from coop_tui.store import Store

    store = Store(db)
    sections.sections()  # import every section module, then take ours out of the report
    mine = {k: sections._SECTIONS.pop(k) for k in ("expected", "welfare", "similarity_table")}
    t0 = time.perf_counter()
    report = build_report(store, run_id)
    core = time.perf_counter() - t0
    similarity_play._CACHE.clear()
    t0 = time.perf_counter()
    values = {k: s.build(store, run_id, report) for k, s in mine.items()}
    own = time.perf_counter() - t0
    for s in mine.values():
        sections.register(s)
    groups = sum(len(c["matchups"]) for c in values["expected"]["conditions"])
    n = store.db.execute("select count(*) from decisions").fetchone()[0]
    store.close()
    return {"decisions": n, "report_s": core, "sections_s": own, "ratio": own / core,
            "matchup_rows": groups}


def vary_answers(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "update decisions set distribution = json_array(x / 100.0, 1 - x / 100.0) from "
            "(select id as did, abs(random()) % 101 as x from decisions) where id = did")
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decisions", type=int, default=200_000)
    args = ap.parse_args()
    per_sample = len(XS) * len(FRAMINGS) * len(PROBS) ** 2 * 2
    samples = max(1, -(-args.decisions // per_sample))
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        run_id = asyncio.run(build(db, samples))
        built = time.perf_counter() - t0
        rows = {"strategies": timed(db, run_id)}
        vary_answers(db)
        rows["whole-percent answers"] = timed(db, run_id)
    print(f"built {rows['strategies']['decisions']:,} decisions in {built:.1f} s\n")
    print(f"{'distributions':<24}{'decisions':>11}{'report s':>10}{'sections s':>12}"
          f"{'sections/report':>17}{'matchup rows':>14}")
    for name, r in rows.items():
        print(f"{name:<24}{r['decisions']:>11,}{r['report_s']:>10.2f}{r['sections_s']:>12.2f}"
              f"{r['ratio']:>17.2f}{r['matchup_rows']:>14,}")
    out = ROOT / "benchmarks" / "results" / "similarity_outcomes.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
