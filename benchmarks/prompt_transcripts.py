"""Every shipped study's prompts as JSON lines, to show that a change renders the same.

For each study and example sweep (data/studies, data/sweeps): one line with the sweep's
hash and digests of its match keys and conditions, then, for up to six cells of every
experiment, each request the model seats receive in the first eight turns (messages,
labels, answer options, schema; strategies play their seats). Model seats are probes that
answer the simplest valid way and never call a model. The similarity study's benchmark
files (a user supplies them) get fixed stand-ins in /tmp/protocol_work/stubs.

Compare two trees (the refactor of prompt protocols into coop_tui/protocols was checked
this way against the commit before it, 3,838 requests of 376 cells, byte-identical):

    python benchmarks/prompt_transcripts.py . > after.jsonl
    PYTHONPATH=<old tree laid out as installed> python benchmarks/prompt_transcripts.py <old tree> > before.jsonl
    cmp before.jsonl after.jsonl
"""
from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

from coop_tui.decisions import AgentReply
from coop_tui.events import EventBus
from coop_tui.hashing import stable_hash
from coop_tui.prompts import PromptRenderer
from coop_tui.spec import load_sweep
from coop_tui.sweep import _game_condition, _templates, build_agents, play_cell

PER_CELL = 8
"""Requests recorded per model seat and cell."""
STUBS = Path("/tmp/protocol_work/stubs")
"""Fixed, so the benchmark paths (part of match keys) are the same on both trees."""


def with_benchmarks(f: Path) -> Path:
    """The similarity study names benchmark files a user supplies: give it stand-ins
    (the same on both trees) in a copy beside them."""
    if "benchmarks/" not in f.read_text():
        return f
    (STUBS / "benchmarks").mkdir(parents=True, exist_ok=True)
    for name in ("trait", "hle", "moral_choice", "newcomb"):
        rows = [{"id": f"{name}-{i}", "prompt": f"question {i}", "kind": "options",
                 "options": ["yes", "no", "unsure"]} for i in range(200)]
        (STUBS / "benchmarks" / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    shutil.copy(f, STUBS / f.name)
    return STUBS / f.name
CELLS_PER_EXPERIMENT = 6


class Stop(Exception):
    pass


class Probe:
    def __init__(self, name, kind, style, out, meta):
        self.name, self.kind, self.style = name, kind, style
        self.spec = {"probe": name}
        self.out, self.meta = out, meta
        self.count = 0

    async def reply(self, request, messages, sink):
        self.count += 1
        self.out.append({**self.meta, "seat": request.seat, "round": request.round,
                         "phase": request.phase, "kind": request.kind,
                         "messages": list(messages), "labels": list(request.labels),
                         "options": {k: v for k, v in request.options.items() if k != "draw"},
                         "schema": request.schema})
        if self.count > PER_CELL:
            raise Stop()
        labels = list(request.labels)
        if request.kind == "choice" and labels:
            ans = {"choice": labels[0]}
        elif request.kind == "mixed" and labels:
            shares = [100 // len(labels)] * len(labels)
            shares[0] += 100 - sum(shares)
            ans = dict(zip(labels, shares, strict=True))
            if request.options.get("ask_leave"):
                ans["leave"] = False
        elif request.kind == "number":
            ans = {request.options.get("name", "value"): request.options.get("min", 0)}
        else:
            raise Stop()
        return AgentReply(text=json.dumps(ans))


async def main(root: Path) -> None:
    files = sorted((root / "data/studies").glob("*.toml")) + sorted((root / "data/sweeps").glob("*.toml"))
    for f in files:
        try:
            sweep = load_sweep(with_benchmarks(f), check_keys=False)
        except Exception as exc:  # noqa: BLE001
            print(json.dumps({'file': f.name, 'load_error': str(exc)}))
            continue
        print(json.dumps({'file': f.name, 'sweep_hash': sweep.hash, 'cells': len(sweep.cells),
                          'match_keys': stable_hash([c.match_key(0) for c in sweep.cells]),
                          'conditions': stable_hash([_game_condition(c) for c in sweep.cells])}))
        renderer = PromptRenderer(_templates(sweep))
        by_exp = {}
        for i, c in enumerate(sweep.cells):
            by_exp.setdefault(c.experiment, []).append(i)
        for idx in by_exp.values():
            step = max(1, len(idx) // CELLS_PER_EXPERIMENT)
            for i in idx[::step][:CELLS_PER_EXPERIMENT]:
                cell = sweep.cells[i]
                out = []
                meta = {"file": f.name, "cell": i, "match_key": cell.match_key(0),
                        "tournament_key": cell.tournament_key(0),
                        "condition": _game_condition(cell)}
                agents = {}
                for name in set(cell.seats):
                    spec = sweep.spec.agents[name]
                    if spec.kind in ("llm", "local"):
                        agents[name] = Probe(name, spec.kind, spec.style, out, meta)
                if not agents:
                    continue
                others = {n for n in set(cell.seats) if n not in agents}
                agents.update(build_agents(sweep, others))
                try:
                    await play_cell(cell, 0, run_id="probe", sweep=sweep, agents=agents,
                                    bus=EventBus(), store=None, renderer=renderer,
                                    base=sweep.source.parent, limit_prompts=False)
                except Exception as exc:  # noqa: BLE001
                    out.append({**meta, "error": repr(exc)})
                for line in out:
                    print(json.dumps(line, sort_keys=True, default=str))


asyncio.run(main(Path(sys.argv[1])))
