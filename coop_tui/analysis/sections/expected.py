"""Report section ``expected``: expected payoffs from the stated mixed strategies beside
the realised ones from the sampled actions, per one-shot condition and agent.

The numbers come from :mod:`coop_tui.analysis.similarity_play`; this module only
registers them and prints them.
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.similarity_play import expected_section, one_shot_outcomes


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
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
    return [table, *matchup_tables(value)]


MAX_MATRIX_AGENTS = 12


def matchup_cells(c: dict[str, Any]) -> tuple[list[str], dict[tuple[str, str], tuple[float, float]]] | None:
    """One two-player condition's expected payoffs per seating as (row, column), seats
    symmetrised by averaging both orders (the similarity signals paper's matchup figures
    13-16); None for self-play only, more than two seats or too many agents."""
    cells: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for m in c["matchups"]:
        if len(m["seats"]) != 2 or None in m["expected"]:
            return None
        a, b = m["seats"]
        cells.setdefault((a, b), []).append((m["expected"][0], m["expected"][1], m["n"]))
        cells.setdefault((b, a), []).append((m["expected"][1], m["expected"][0], m["n"]))
    agents = sorted({a for a, _ in cells})
    if not 1 < len(agents) <= MAX_MATRIX_AGENTS or all(a == b for a, b in cells):
        return None  # self-play only: the per-agent rows say it all
    out = {}
    for key, got in cells.items():
        n = sum(x[2] for x in got)
        out[key] = (sum(x[0] * x[2] for x in got) / n, sum(x[1] * x[2] for x in got) / n)
    return agents, out


def matchup_tables(value: dict[str, Any]) -> list[Any]:
    """Per two-player condition with several agents: the expected payoffs of each seating
    as "row / column" (:func:`matchup_cells`)."""
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for c in value["conditions"]:
        found = matchup_cells(c)
        if found is None:
            continue
        agents, cells = found
        out.append(Text(f"experiment {c['experiment']}, {c['label']}: expected payoff "
                        "row / column", style="bold"))
        table = Table("row \\ column", *agents)
        for a in agents:
            table.add_row(a, *(f"{cells[(a, b)][0]:.2f} / {cells[(a, b)][1]:.2f}"
                               if (a, b) in cells else "-" for b in agents))
        out.append(table)
    return out


SECTION = register(Section(
    key="expected", title="Expected and realised payoffs (one-shot play)",
    build=build, render=render, order=60,
))
