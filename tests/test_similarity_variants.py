"""Seed 000's similarity curves keep game variants apart, and ``report --json`` is the same
on every call.

Plain, +3 and +7 Prisoner's Dilemma (the cooperation bonus of the paper's robustness
check) are three games: b* is 0.5, 0.2 and 1/9. They were pooled into one curve per agent
(n = 6 per X instead of 2) whose b* was whichever of the three a set yielded first, so two
identical ``report --json`` calls could print different numbers.

The loopback 'model' cooperates with the probability it is told as similarity.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

COOP_TUI = Path(sys.executable).parent / "coop-tui"
PLAIN, BONUS_3, BONUS_7 = "a · prisoners", "a · prisoners (bonus 3)", "a · prisoners (bonus 7)"


def cooperate_as_told(body: dict[str, Any]) -> str:
    text = last_user_message(body)
    figures = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)% similar", text)]
    coop = round(sum(figures) / len(figures))
    return json.dumps({"A0": coop, "A1": 100 - coop})


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=cooperate_as_told) as server:
        agent = {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
                 "style": "direct"}
        data = {
            "name": "variants", "seed": 3, "agents": {"a": agent},
            "experiments": [
                {"name": "plain", "game": "prisoners", "mechanism": "similarity", "agents": ["a"],
                 "similarity": [0, 50, 100]},
                {"name": "bonus", "game": "prisoners", "bonus": [3.0, 7.0],
                 "mechanism": "similarity", "agents": ["a"], "similarity": [0, 50, 100]},
                {"name": "scored", "game": "prisoners", "mechanism": "similarity", "agents": ["a"],
                 "similarity_scores": {"a": {"a": 50}}, "similarity_label": "exogenous:newcomb"},
            ],
        }
        db = tmp_path_factory.mktemp("variants") / "variants.db"
        store = Store(db)
        summary = asyncio.run(run_sweep(build_sweep(data, check_keys=False), store))
        assert summary.matches_failed == 0
        report = build_report(store, summary.run_id)
        store.close()
    return db, report


def test_each_game_variant_is_its_own_curve_with_its_own_b_star(played: Any) -> None:
    table = played[1]["similarity_table"]
    curve = table["curves"]["no domain"]
    assert set(curve) == {PLAIN, BONUS_3, BONUS_7}
    for series in curve.values():  # one match of two seats per X and variant: never pooled
        assert [(p["told"], p["coop_rate"], p["n"]) for p in series] == [
            (0.0, 0.0, 2), (50.0, 0.5, 2), (100.0, 1.0, 2)]
    assert table["b_star_by_series"]["no domain"] == {
        PLAIN: 0.5, BONUS_3: 0.2, BONUS_7: pytest.approx(1 / 9, abs=1e-6)}
    assert table["b_star"]["no domain"] is None  # three curves, three b*: no single line
    assert table["b_star"]["newcomb"] == 0.5  # the plain game alone
    assert list(table["tables"]) == ["prisoners"]


def test_the_figure_draws_each_variants_b_star(played: Any) -> None:
    pytest.importorskip("matplotlib")
    from coop_tui.figures import figures_for

    (drawn,) = [d for d in figures_for(played[1])
                if d.name == "similarity_fig3_cooperation_by_benchmark"]
    gids = {line.get_gid(): list(line.get_xdata())
            for ax in drawn.figure.axes for line in ax.get_lines() if line.get_gid()}
    assert gids["b_star"] == [50.0, 50.0]  # newcomb: the plain game's single line
    for star in (0.5, 0.2, round(1 / 9, 6)):  # no domain: one line per variant's b*
        assert gids[f"b_star|{star:g}"] == pytest.approx([100 * star] * 2)


def _report_json(db: Path, seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([str(COOP_TUI), "report", "--db", str(db), "--json"], env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout)


def test_report_json_is_identical_across_processes(played: Any) -> None:
    first, second = (_report_json(played[0], seed) for seed in ("1", "2"))
    assert first == second  # every byte: the report holds no clock of its own
    assert first["similarity_table"]["b_star"]["no domain"] is None
