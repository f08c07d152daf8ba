"""Report section ``welfare``: welfare recovered per one-shot condition (similarity signals, RQ6):
0 when everyone defects, 1 when everyone cooperates, from expected and realised payoffs.

Computed in :mod:`coop_tui.analysis.similarity_play`.
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.similarity_play import one_shot_outcomes, welfare_section


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    conds = one_shot_outcomes(store, run_id)
    return welfare_section(conds) if conds else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("exp", "condition", "game", "n", "payoff expected / realised",
                  "recovered expected / realised")
    for c in value["conditions"]:
        table.add_row(str(c["experiment"]), c["label"], c["game"], str(c["matches"]),
                      f"{_num(c['expected_per_player'])} / {_num(c['realised_per_player'])}",
                      f"{_pct(c['recovered_expected'])} / {_pct(c['recovered_realised'])}")
    return [table]


SECTION = register(Section(
    key="welfare", title="Welfare recovered (0 = all defect, 100% = all cooperate)",
    build=build, render=render, order=61,
))
