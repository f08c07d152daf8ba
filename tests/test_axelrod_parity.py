"""The engine against the Axelrod library: same tournament, same mean payoff per round.

Eight strategies play every ordered pairing for 200 rounds of ``pd_canonical`` under
Repetition with ``payoff = "mean"`` and ``matchup = "cross"``. The reference numbers
were produced by the Axelrod library itself (``benchmarks/axelrod_reference.py``; the
library needs PyTorch, too heavy for the test environment).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

REFERENCE = json.loads((Path(__file__).parent / "data" / "axelrod_pd_canonical_200.json").read_text())
TABLE = REFERENCE["mean_payoff_per_round"]


async def test_every_pairing_matches_the_axelrod_library(tmp_path: Path) -> None:
    names = sorted(TABLE)
    sweep = build_sweep({
        "name": "axelrod-parity",
        "seed": 5,
        "concurrency": 64,
        "agents": {n: {"strategy": n} for n in names},
        "experiments": [{"game": "pd_canonical", "mechanism": "repetition", "rounds": 200,
                         "payoff": "mean", "matchup": "cross", "agents": names}],
    })
    store = Store(tmp_path / "p.db")
    summary = await run_sweep(sweep, store)
    assert summary.status == "done"
    rows = store.db.execute(
        """select s0.agent, s1.agent, s0.payoff, s1.payoff
           from matches m join seats s0 on s0.match_id = m.id and s0.seat = 0
                          join seats s1 on s1.match_id = m.id and s1.seat = 1"""
    ).fetchall()
    assert len(rows) == len(names) ** 2
    for a, b, pa, pb in rows:
        assert (pa, pb) == pytest.approx(tuple(TABLE[a][b]), abs=1e-12), (a, b)
    store.close()
