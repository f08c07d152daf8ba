"""Report section ``domain_spread``: how much models differ within each behavioural domain.

Per domain, across models: mean, sd, coefficient of variation and range of the models'
scores — cooperation (Table 2 rates) and coordination (the public code's coordination
rate in its six coordination games, :data:`coop_tui.analysis.paper_tables.COORDINATION_METHOD`).
The paper's abstract: coordination CV 0.06 (0.62-0.85),
strategic depth 0.11 (0.54-0.90); strategic depth needs per-round guesses the trial table
does not hold and is listed as not available.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis import paper_tables
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.relevant(store, run_id, report):
        return None
    data = paper_tables.inputs(store, run_id)
    domains = paper_tables.domain_spread({"cooperation": data["cooperation"],
                                          "coordination": data["coordination"]})
    if not domains:
        return None
    return {"domains": domains, "cv_method": paper_tables.CV_METHOD,
            "coordination_method": paper_tables.COORDINATION_METHOD,
            "not_available": {"strategic_depth": paper_tables.NOT_IN_TABLE["strategic_depth"]}}


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("domain", "models", "mean", "CV", "range", "lowest", "highest",
                  title="Spread across models by domain (strategic personalities)")
    for domain, v in value["domains"].items():
        table.add_row(domain, str(v["models"]), f"{v['mean']:.3f}",
                      "–" if v["cv"] is None else f"{v['cv']:.3f}",
                      f"{v['range'][0]:.2f}–{v['range'][1]:.2f}", v["lowest"], v["highest"])
    return [table, *(f"not available: {k} ({why})" for k, why in value["not_available"].items())]


SECTION = register(Section(key="domain_spread", title="Spread across models by domain (strategic personalities)",
                           build=build, render=render, order=58))
