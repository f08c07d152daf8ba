"""Reference fixation frequencies for the Moran section, from the Axelrod library.

``tests/data/axelrod_moran_reference.json`` holds the mean payoffs coop-tui stored for the
strategies tournament ``tests/data/moran_strategies.toml`` (``agents``, ``payoffs``:
row agent's mean payoff against the column agent). This script feeds exactly those
payoffs to Axelrod's ``ApproximateMoranProcess`` (every pair's match outcome is the
stored pair of means, so no match is played), runs it ``RUNS`` times from one invader
among ``population - 1`` residents for every ordered pair, and writes the share of runs
the invader fixed in under ``fixation``. ``tests/test_moran.py`` checks coop-tui's exact
fixation probabilities against them. Run it with an interpreter that has ``axelrod``
(coop-tui does not depend on it)::

    python -m venv /tmp/axl && /tmp/axl/bin/pip install axelrod torch==2.13.0
    /tmp/axl/bin/python benchmarks/axelrod_moran_reference.py
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

import axelrod as axl
from axelrod.moran import ApproximateMoranProcess
from axelrod.random_ import Pdf

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "axelrod_moran_reference.json"
RUNS = 10_000
SEED = 2026


def named_player(name: str) -> axl.Player:
    """A placeholder player whose only use is its name: the outcomes are cached. Its repr
    is the name alone (the process looks outcomes up by ``str(player)`` for every pair at
    every step, and Axelrod's repr, which formats parameters, took a fifth of the time)."""
    cls = type(f"Stored_{name}", (axl.Cooperator,), {"name": name, "__repr__": lambda self: name})
    return cls()


class StoredOutcome(Pdf):
    """Axelrod's outcome distribution with its one outcome: a pair's stored means. Sampling
    a one-point distribution needs no random draw, and NumPy's weighted choice per pair
    per step was nearly all of the process's time (16 s for 200 runs)."""

    def sample(self):
        return self.sample_space[0]


def fixation_share(agents: list[str], payoffs: list[list[float]], invader: int, resident: int,
                   population: int, runs: int, seed: int) -> float:
    outcomes = {}
    for i in (invader, resident):
        for j in (invader, resident):
            outcomes[(agents[i], agents[j])] = StoredOutcome(Counter({(payoffs[i][j], payoffs[j][i]): 1}))
    fixed = 0
    for run in range(runs):
        players = [named_player(agents[invader])] + [named_player(agents[resident])
                                                      for _ in range(population - 1)]
        process = ApproximateMoranProcess(players, outcomes, seed=seed + run)
        process.play()
        fixed += process.winning_strategy_name == agents[invader]
    return fixed / runs


def main() -> None:
    data = json.loads(REFERENCE.read_text())
    agents, payoffs, population = data["agents"], data["payoffs"], data["population"]
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    pairs = [(i, j) for i in range(len(agents)) for j in range(len(agents)) if i != j]
    jobs = [(agents, payoffs, i, j, population, runs, SEED + 1000 * (i * len(agents) + j))
            for i, j in pairs]
    started = time.perf_counter()
    with multiprocessing.Pool() as pool:  # one pair per task; the pairs are independent
        shares = pool.starmap(fixation_share, jobs)
    fixation: dict[str, dict[str, float]] = {}
    for (i, j), share in zip(pairs, shares, strict=True):
        fixation.setdefault(agents[i], {})[agents[j]] = share
        print(f"{agents[i]} invading {agents[j]}: {share:.4f}")
    print(f"{len(pairs)} pairs x {runs} runs in {time.perf_counter() - started:.0f} s")
    data.update(runs=runs, seed=SEED, fixation=fixation, axelrod=axl.__version__)
    REFERENCE.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
