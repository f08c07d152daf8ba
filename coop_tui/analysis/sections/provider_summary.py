"""Report section ``provider_summary``: the strategic personalities paper's Supplementary Table 5.

Per provider (read from the model's name, as the published table has it): its models, the
mean and range of their Table 2 cooperation rates and the coefficient of variation of their
coordination rates (:mod:`coop_tui.analysis.paper_tables`). The paper's trust means and
silhouettes need numbers the trial table does not hold; on our own runs the fingerprint
section gives silhouettes.
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
    if not data["cooperation"]:
        return None
    return {"providers": paper_tables.provider_summary(data["cooperation"],
                                                       data["coordination"]),
            "cv_method": paper_tables.CV_METHOD,
            "coordination_method": paper_tables.COORDINATION_METHOD,
            "not_available": {"trust_mean": paper_tables.NOT_IN_TABLE["trust"]}}


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("provider", "models", "cooperation mean %", "range %", "coordination CV",
                  title="Providers (strategic personalities, Supplementary Table 5)")
    for prov, v in value["providers"].items():
        rng = v["cooperation_range"]
        table.add_row(prov, str(v["n_models"]), f"{v['cooperation_mean']:.1f}",
                      "–" if rng is None else f"{rng[0]:.1f}–{rng[1]:.1f}",
                      "–" if v["coordination_cv"] is None else f"{v['coordination_cv']:.2f}")
    return [table]


SECTION = register(Section(key="provider_summary", title="Providers (strategic personalities, Supplementary Table 5)",
                           build=build, render=render, order=56))
