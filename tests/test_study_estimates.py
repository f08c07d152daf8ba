"""The estimate printed before a batch run counts the model calls the run makes.

Each shipped study is played with its model agents replaced by the ``random`` strategy
(the same seats, rounds and moves; no model call), and the decisions those seats make are
compared with the estimate's ``model_calls`` for the study as written. The full studies are
shrunk first (one trial, the first game, opponent and two agents per experiment): the
estimate is per grid point, so a smaller grid checks the same arithmetic. The super-additive cooperation paper's
estimate (``superadditive*``) is an upper bound by design (a player who leaves, or whose
partners leave, plays fewer rounds than its budget allows; docs/reproducing-superadditive.md),
so its studies are held to that; ``similarity.toml`` reads benchmark files from outside
the repository, so it is checked beside stand-in files of the size it asks.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from coop_tui.runner import estimate
from coop_tui.spec import build_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDIES = Path(__file__).resolve().parent.parent / "data" / "studies"


def shrink(data: dict[str, Any]) -> dict[str, Any]:
    for exp in data["experiments"]:
        if isinstance(exp.get("game"), list):
            exp["game"] = exp["game"][:1]
        if isinstance(exp.get("opponents"), list):
            exp["opponents"] = exp["opponents"][:1]
        if isinstance(exp.get("agents"), list):
            exp["agents"] = exp["agents"][:2]
        exp["samples"] = 1
    return data


def with_stand_in_benchmarks(folder: Path) -> Path:
    """``similarity.toml`` copied beside stand-in item files for the four published
    benchmarks it reads (not shipped): 150 two-option items each, as many as it asks."""
    (folder / "benchmarks").mkdir()
    for name in ("trait", "hle", "moral_choice", "newcomb"):
        rows = [json.dumps({"id": f"{name}-{i}", "kind": "options", "prompt": f"Question {i}?",
                            "options": ["Yes", "No"]}) for i in range(150)]
        (folder / "benchmarks" / f"{name}.jsonl").write_text("\n".join(rows))
    return Path(shutil.copy(STUDIES / "similarity.toml", folder / "similarity.toml"))


@pytest.mark.parametrize("name", ["strategic-personalities-offline", "strategic-personalities",
                                  "coopeval-offline", "coopeval", "similarity-offline",
                                  "similarity", "superadditive-offline", "superadditive"])
async def test_the_estimate_counts_the_model_decisions_made(
        tmp_path: Path, name: str) -> None:
    path = (with_stand_in_benchmarks(tmp_path) if name == "similarity"
            else STUDIES / f"{name}.toml")
    data = read_sweep_file(path)
    if "offline" not in name:
        data = shrink(data)
    models = [n for n, a in data["agents"].items() if "model" in a]
    predicted = estimate(build_sweep(copy.deepcopy(data), source=path, check_keys=False))
    for agent in models:
        data["agents"][agent] = {"strategy": "random"}
    store = Store(tmp_path / "s.db")
    summary = await run_sweep(build_sweep(data, source=path, check_keys=False), store)
    made = sum(1 for m in store.matches(summary.run_id) for d in store.decisions(m["id"])
               if d.agent in models)
    store.close()
    assert made > 0
    if name.startswith("superadditive"):  # an upper bound: leaving ends play early
        assert made <= predicted["model_calls"], (predicted["model_calls"], made)
    elif name.startswith("coopeval"):  # every call counted, the designs asked once too
        assert predicted["model_calls"] == made, (predicted["model_calls"], made)
    else:  # within 10 %
        assert abs(predicted["model_calls"] - made) <= 0.1 * made, (predicted["model_calls"], made)


async def test_a_tournaments_shared_designs_are_counted_as_the_models_calls(tmp_path: Path) -> None:
    """Mediation and Contracting ask each agent's design once per seat and tournament; the
    estimate counted them as decisions but not as model calls (60 made against 56)."""
    data: dict[str, Any] = {
        "name": "designs", "agents": {"m": {"model": "local/smollm2"}, "tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "mechanism": ["mediation", "contracting"],
                         "matchup": "cross", "agents": ["m", "tft"]}]}
    predicted = estimate(build_sweep(copy.deepcopy(data)))["model_calls"]
    data["agents"]["m"] = {"strategy": "random"}
    store = Store(tmp_path / "d.db")
    summary = await run_sweep(build_sweep(data), store)
    made = sum(1 for m in store.matches(summary.run_id) for d in store.decisions(m["id"]) if d.agent == "m")
    store.close()
    # per mechanism: 2 designs (one per seat), then the model's 4 seats of the cross-play
    # vote and move (mediation) or vote, sign and move (contracting)
    assert predicted == made == (2 + 4 * 2) + (2 + 4 * 3)
