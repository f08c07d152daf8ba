"""Report section ``strategic_personality``: the strategic personalities paper's profile of repeated play, on the
paper's sample (the Supplementary Table 2 prisoner's dilemma trials, the agent in seat 0;
``sample`` in the JSON says so). The same profile over every repeated game and both seats
is the section ``strategic_personality_pooled`` (:mod:`.personality_pooled`).

Per agent × game × opponent: cooperation with Wilson and per-trial intervals, first-round
and joint cooperation, the per-round curve; per agent: reciprocity (P(C|C), P(C|D), index,
archetype), endgame effect and type; Cohen's h between agents; providers and tests
between them. The computation is :mod:`coop_tui.analysis.personality_profile`; this module
only wires it into the report, the text output and the analysis screen (archetype map,
endgame curves, Cohen's h matrix).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.personality_profile import (
    forget_seat_runs,
    has_repeated_pairs,
    personality_profile,
)
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from textual.widget import Widget

    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    # the core report already knows whether any experiment has per-round data: runs of
    # one-shot matches stop here without a query
    if not any(e.get("per_round") for e in report.get("experiments", [])):
        return None
    if not has_repeated_pairs(store.db, run_id):
        return None
    # after cooperation_by_model (order 55), which read the same seat runs; the pooled
    # profile (order 61) reads them once more and forgets them
    try:
        return personality_profile(store.db, run_id, sample="table2")
    except BaseException:
        forget_seat_runs()
        raise


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ci(pair: list[float] | None) -> str:
    return "" if not pair else f"[{100 * pair[0]:.1f}, {100 * pair[1]:.1f}]"


def agent_table(value: dict[str, Any]) -> Any:
    from rich.table import Table

    sample = value.get("sample", {}).get("name", "pooled")
    scope = ("Table 2 prisoner's dilemma trials, seat 0" if sample == "table2"
             else "all games and opponents, both seats")
    table = Table("agent", "provider", "coop %", "trial CI", "P(C|C) (N)", "P(C|D) (N)",
                  "index", "archetype", "R(T-1)", "R(T)", "endgame", "type",
                  title=f"Reciprocity and endgame (per agent, {scope})")
    for name, a in value["agents"].items():
        coop, rec, end = a["cooperation"], a["reciprocity"], a["endgame"] or {}
        table.add_row(
            name, a["provider"], _pct(coop["rate"]), _ci(coop["trial_interval"]),
            f"{_pct(rec['p_c_after_c'])} ({rec['n_after_c']})",
            f"{_pct(rec['p_c_after_d'])} ({rec['n_after_d']})",
            _pct(rec["index"]), rec["archetype"] or "-",
            _pct(end.get("before_last")), _pct(end.get("last")),
            "-" if end.get("effect") is None else f"{100 * end['effect']:+.1f}",
            end.get("type") or "-",
        )
    return table


def cohens_table(value: dict[str, Any]) -> Any:
    from rich.table import Table

    names = value["cohens_h"]["agents"]
    table = Table("Cohen's h (row − column)", *names)
    for name, row in zip(names, value["cohens_h"]["matrix"], strict=True):
        table.add_row(name, *(f"{h:+.2f}" for h in row))
    return table


_BARS = "▁▂▃▄▅▆▇█"
MAX_CELL_ROWS = 200
"""Cells shown in the text report and on the screen (the JSON has every one)."""


def sparkline(rates: list[float]) -> str:
    """One character per round, its height the cooperation rate (full block = 100%)."""
    return "".join(_BARS[min(int(r * len(_BARS)), len(_BARS) - 1)] for r in rates)


def cells_table(value: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table("agent", "game", "opponent", "coop %", "trial CI", "trials",
                  "R1 %", "joint %", "curve R1..RT",
                  title="Cooperation per agent × game × opponent")
    for c in value["cells"][:MAX_CELL_ROWS]:
        game = c["game"] + (f" [{c['condition']}]" if c.get("condition") else "")
        table.add_row(
            c["agent"], game, c["opponent"], _pct(c["rate"]),
            _ci(c["trial_interval"]), str(c["trials"]), _pct(c["first_round"]),
            _pct(c["joint"]), sparkline(c["curve"]),
        )
    if len(value["cells"]) > MAX_CELL_ROWS:
        table.caption = (f"first {MAX_CELL_ROWS} of {len(value['cells'])} cells; "
                         "all of them in report --json")
    return table


def provider_lines(value: dict[str, Any]) -> list[str]:
    tests = value["providers"]["tests"]
    members = value["providers"]["members"]
    lines = ["providers: " + "; ".join(f"{p}: {', '.join(a)}" for p, a in members.items())]
    if tests and tests.get("kruskal"):
        k = tests["kruskal"]
        lines.append(f"between providers (per-match rates): Kruskal-Wallis H={k['H']:.2f}, "
                     f"p={k['p']:.3g}")
    return lines


def render(value: dict[str, Any]) -> list[Any]:
    return [agent_table(value), cohens_table(value), cells_table(value),
            *provider_lines(value)]


def make_widgets(prefix: str) -> Callable[[dict[str, Any]], list[Widget]]:
    """The panel's widgets, their ids starting with ``prefix`` (the paper's-sample profile
    and the pooled one can be on the same screen)."""

    def widgets(value: dict[str, Any]) -> list[Widget]:
        from rich.console import Group
        from textual.widgets import DataTable, Static

        from coop_tui.analysis.personality_plots import ArchetypeMap, EndgameCurves

        table = DataTable(id=f"{prefix}-cohens-h", cursor_type="cell", show_cursor=False)
        names = value["cohens_h"]["agents"]
        table.add_columns("h (row − col)", *names)
        for name, row in zip(names, value["cohens_h"]["matrix"], strict=True):
            table.add_row(name, *(f"{h:+.2f}" for h in row))
        table.styles.height = "auto"
        return [
            Static(Group(agent_table(value)), id=f"{prefix}-agents"),
            ArchetypeMap(value, id=f"{prefix}-archetype-map"),
            EndgameCurves(value, id=f"{prefix}-endgame"),
            table,
            Static(Group(cells_table(value), *provider_lines(value)), id=f"{prefix}-cells"),
        ]

    return widgets


widgets = make_widgets("sp")


SECTION = register(Section(
    key="strategic_personality",
    title="Strategic personality: reciprocity, endgame, effect sizes (paper's sample)",
    build=build, render=render, widgets=widgets, order=60,
))
