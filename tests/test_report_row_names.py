"""Report rows that read ambiguously (issue #40): every row of the printed report names
the condition it stands for, as the JSON does. A similarity sweep over X with the
cooperation bonus (+3, +7) is played by strategies (no model), and the printed tables are
read back."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from coop_tui.analysis.sections import sections
from coop_tui.report import build_report, strict_json
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

SWEEP: dict[str, Any] = {
    "name": "bonus-rows",
    "seed": 3,
    "samples": 2,
    "agents": {"tft": {"strategy": "tit_for_tat"}, "coin": {"strategy": "random", "params": {"p": 0.5}}},
    "experiments": [
        {"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
         "agents": ["tft", "coin"], "similarity": [0, 100], "bonus": [3.0, 7.0]},
    ],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = Store(tmp_path_factory.mktemp("rows") / "c.db")
    summary = asyncio.run(run_sweep(build_sweep(SWEEP, source=Path("bonus-rows.toml")), store))
    assert summary.matches_done, summary.errors
    return json.loads(strict_json(build_report(store, summary.run_id)))


def _printed(report: dict[str, Any], key: str) -> str:
    (section,) = [s for s in sections() if s.key == key]
    console = Console(file=io.StringIO(), width=250, color_system=None)
    for part in section.render(report[key]):
        console.print(part)
    return console.file.getvalue()


@pytest.mark.parametrize("key", ["expected", "welfare"])
def test_bonus_variants_name_their_bonus_in_expected_and_welfare_rows(
    report: dict[str, Any], key: str
) -> None:
    labels = [c["label"] for c in report[key]["conditions"]]
    assert sorted(labels) == sorted(f"X={x} · bonus +{b}" for x in (0, 100) for b in (3, 7))
    printed = _printed(report, key)
    for label in labels:
        assert label in printed


def test_every_coopeval_style_row_names_its_condition(report: dict[str, Any]) -> None:
    """Four similarity settings (X x bonus) in one game table: each row says which, in
    the JSON's layout and on the printed table."""
    from coop_tui.analysis.coopeval_tables import render_rich, table_layout

    (table,) = [t for t in table_layout(report["tables"]) if t["table"] == "prisoners"]
    mean_rows = [r["mechanism"] for r in table["rows"] if r["metric"] == "mean"]
    assert sorted(mean_rows) == sorted(
        f"similarity [bonus={b} similarity={x}]" for x in (0, 100) for b in (3, 7))
    console = Console(file=io.StringIO(), width=250, color_system=None)
    for part in render_rich(report["tables"]):
        console.print(part)
    printed = console.file.getvalue()
    for row in mean_rows:
        assert row in printed, printed
