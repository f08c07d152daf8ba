"""Report section ``moran``: Moran fixation and the rare-mutation stationary shares of each
cross-play tournament, from the payoffs the run stored (no new model call).

Computed in :mod:`coop_tui.analysis.moran`; settings come from the sweep's ``[moran]``
table (``population``, ``selection``, ``fitness``) or the defaults (10, 1.0, linear).
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.moran import MoranError, MoranSettings, moran_summary
from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.tournament import cross_play_tensor, run_spec


def settings_of(store: Any, run_id: str) -> MoranSettings:
    """The run's ``[moran]`` settings (checked when the sweep was), the defaults for what
    it does not say."""
    given = run_spec(store, run_id).get("moran")
    if not isinstance(given, dict):
        return MoranSettings()
    return MoranSettings(**{k: given[k] for k in ("population", "selection", "fitness") if k in given})


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    groups = store.db.execute(
        """select experiment, game, condition_key from matches
           where run_id = ? and matchup = 'cross' and status = 'done'
           group by experiment, game, condition_key order by experiment, min(rowid)""",
        [run_id],
    ).fetchall()
    if not groups:
        return None
    settings = settings_of(store, run_id)
    tournaments = []
    for experiment, game, ckey in groups:
        tensor = cross_play_tensor(store.db, run_id, experiment, game, ckey)
        row: dict[str, Any] = {"experiment": experiment, "game": game, "condition": ckey,
                               "agents": list(tensor.agents)}
        try:
            row.update(moran_summary(tensor.agents, tensor.payoffs, settings))
        except MoranError as exc:
            row["note"] = str(exc)
        tournaments.append(row)
    return {"settings": {"population": settings.population, "selection": settings.selection,
                         "fitness": settings.fitness},
            "tournaments": tournaments}


def _label(row: dict[str, Any]) -> str:
    condition = row["condition"] or "-"
    return f"exp {row['experiment']} · {row['game']} · {condition}"


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    s = value["settings"]
    out: list[Any] = [Text(f"population {s['population']}, selection {s['selection']:g} "
                           f"({s['fitness']} fitness); neutral fixation 1/N = "
                           f"{1 / s['population']:.3f}")]
    for row in value["tournaments"]:
        if "note" in row:
            out.append(Text(f"{_label(row)}: {row['note']}"))
            continue
        agents = row["agents"]
        table = Table("invader \\ resident", *agents, "mean", "stationary", title=_label(row))
        for a in agents:
            cells = ["·" if a == b else f"{row['fixation'][a][b]:.3f}" for b in agents]
            mean = row["mean_fixation"][a]
            table.add_row(a, *cells, "-" if mean is None else f"{mean:.3f}",
                          f"{100 * row['stationary'][a]:.1f}%")
        out.append(table)
    return out


SECTION = register(Section(
    key="moran", title="Moran process: fixation from the stored payoffs",
    build=build, render=render, order=63,
))
