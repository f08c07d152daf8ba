"""Report section ``expected``: expected payoffs from the stated mixed strategies beside
the realised ones from the sampled actions, per one-shot condition and agent.

The numbers come from :mod:`coop_tui.analysis.similarity_play`; this module only
registers them and prints them.
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, register


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    from coop_tui.analysis.similarity_play import expected_section, one_shot_outcomes

    conds = one_shot_outcomes(store, run_id)
    return expected_section(conds) if conds else None


def _pm(mean: float | None, se: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("exp", "condition", "agent", "n", "expected ± SE", "realised ± SE")
    for c in value["conditions"]:
        pp = c["per_player"]
        table.add_row(str(c["experiment"]), c["label"], "all seats", str(c["matches"]),
                      _pm(pp["expected"], pp["expected_se"]), _pm(pp["realised"], pp["realised_se"]))
        if len(c["agents"]) > 1:
            for agent, a in c["agents"].items():
                table.add_row("", "", agent, str(a["n"]), _pm(a["expected"], a["expected_se"]),
                              _pm(a["realised"], a["realised_se"]))
    return [table]


SECTION = register(Section(
    key="expected", title="Expected and realised payoffs (one-shot play)",
    build=build, render=render, order=60,
))
