"""An offline study run twice, with saved prompt starts and without: every stored answer
is the same.

A cut-down copy of ``data/studies/strategic-personalities-offline.toml`` (its protocol,
agents and seed; two of its experiments, so it runs in about a minute on two cores): a
repeated game against tit-for-tat, whose every round's prompt extends the last one's, and
cross-play between the two embedded agents, whose replies queue on the one model and
interleave. It goes through the real sweep runner and SQLite store twice, once with every
embedded agent's ``prefix_cache = false``, and compares each decision's text, answer,
parse, tokens and sampled action by content key.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from coop_tui.agents.local import get_model, smollm2_path
from coop_tui.spec import build_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "strategic-personalities-offline.toml"
COLUMNS = ("content_key", "phase", "kind", "agent", "seat", "round", "response", "reasoning",
           "answer", "parsed", "valid", "attempts", "error", "normalisation", "distribution",
           "action", "input_tokens", "output_tokens", "retries")


def cut_down(prefix_cache: bool) -> dict[str, Any]:
    data = read_sweep_file(STUDY)
    keep = {"strategy play", "cross-play"}
    data["experiments"] = [e for e in data["experiments"] if e["name"] in keep]
    for e in data["experiments"]:
        if e["name"] == "strategy play":
            e["opponents"] = ["tit_for_tat"]
    for agent in data["agents"].values():
        if str(agent.get("model", "")).startswith("local/"):
            agent["prefix_cache"] = prefix_cache
    return data


def stored(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(f"select {', '.join(COLUMNS)} from decisions").fetchall()
    finally:
        conn.close()
    out = []
    for row in rows:
        retries = json.loads(row[-1] or "[]")
        for attempt in retries:
            attempt.pop("latency_ms")  # the one timing inside an answer's record
        out.append((*row[:-1], json.dumps(retries, sort_keys=True)))
    return sorted(out, key=lambda r: tuple(str(v) for v in r))


@pytest.mark.slow
async def test_a_study_stores_the_same_answers_with_and_without_saved_starts(tmp_path: Path) -> None:
    model = get_model(smollm2_path())
    with model.lock:
        model.prefixes.clear()  # the "on" run starts with nothing saved, as a new process does
    restored_before = model.prefixes.stats.restored_tokens
    runs = {}
    for cache in (True, False):
        sweep = build_sweep(cut_down(cache), source=STUDY)
        store = Store(tmp_path / f"{cache}.db")
        summary = await run_sweep(sweep, store)
        assert summary.status == "done", summary.errors
        store.close()
        runs[cache] = stored(tmp_path / f"{cache}.db")
        if cache:  # the saved starts were used, or the comparison would prove nothing
            assert model.prefixes.stats.restored_tokens > restored_before
    on, off = runs[True], runs[False]
    calls = [r for r in on if r[COLUMNS.index("input_tokens")]]
    assert len(calls) == 3 + 2 * 3  # 3 rounds against tit-for-tat, 3 rounds of cross-play
    assert len({r[0] for r in calls}) == len(calls)  # one model decision per content key
    assert on == off
