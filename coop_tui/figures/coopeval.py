"""CoopEval's figures: per-game Mean and Fitness bars with standard errors (its
Tables 2-7 drawn), the matchup payoff heat maps (its metagame figures) and the
replicator-dynamics trajectories.

Reads the report's ``tables`` (mean ± SE over replicates, per game table and mechanism),
each experiment's ``matchup_matrix`` and the report's ``evolution``.
"""

from __future__ import annotations

from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import (
    DOUBLE,
    SINGLE,
    colour,
    figure,
    heatmap,
    legend,
    linestyle,
    short,
    slug,
)

METRICS = (("mean", "Mean", "Mean payoff (points)"),
           ("fitness", "Fitness", "Fitness (points, replicator-weighted)"))


def _bars(report: dict[str, Any]) -> list[Drawn]:
    from coop_tui.analysis.coopeval_tables import aggregate_title, pooled_games

    rows = [r for r in report.get("tables") or [] if r.get("metric") in ("mean", "fitness")
            and r.get("agent") != "average" and r.get("value") is not None]
    out = []
    for table in dict.fromkeys(r["table"] for r in rows):
        mine = [r for r in rows if r["table"] == table]
        agents = list(dict.fromkeys(r["agent"] for r in mine))
        columns = _columns(mine)
        counts = [len({_key(r) for r in mine if r["metric"] == m}) or 1 for m, _l, _u in METRICS]
        fig, axes = figure(DOUBLE, 2.3 + 0.08 * len(agents), ncols=2,
                           gridspec_kw={"width_ratios": counts})
        width = 0.8 / max(len(agents), 1)
        for ax, (metric, label, unit) in zip(axes[0], METRICS, strict=True):
            values = {(columns[_key(r)], r["agent"]): r for r in mine if r["metric"] == metric}
            # only the columns with this metric (Reputation has a Mean but no Fitness)
            mechanisms = list(dict.fromkeys(m for m, _a in values))
            for i, agent in enumerate(agents):
                xs, heights, errors = [], [], []
                for m, mech in enumerate(mechanisms):
                    row = values.get((mech, agent))
                    if row is None:
                        continue
                    xs.append(m - 0.4 + width * (i + 0.5))
                    heights.append(row["value"])
                    errors.append(row.get("se") or 0.0)
                ax.bar(xs, heights, width=width * 0.92, yerr=errors, color=colour(i),
                       label=short(agent), error_kw={"elinewidth": 0.7, "capsize": 1.5},
                       gid=f"{metric}|{agent}")
            ax.set_xticks(range(len(mechanisms)), mechanisms)
            # the aggregate table holds each game's cell normalised, not points
            ax.set_ylabel(unit.replace("points", "normalised") if table == "all" else unit)
            ax.set_title(f"{label} — {aggregate_title(pooled_games(mine))}" if table == "all"
                         else f"{label} — {table}")
            ax.axhline(0, color="0.3", linewidth=0.6)
        legend(axes[0][1], loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out.append(Drawn(f"coopeval_mean_fitness_{slug(table)}",
                         f"Mean and Fitness per mechanism, {table} (mean ± SE over replicates)",
                         fig))
    return out


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["mechanism"], row.get("order"), row.get("condition"))


def _columns(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], str]:
    """Each (mechanism, order, condition) of a table as the paper names the column
    (Reputation- / Reputation+ by order); conditions that share a name are numbered."""
    from coop_tui.analysis.coopeval_tables import mechanism_label

    keys = list(dict.fromkeys(_key(r) for r in rows))
    names = {k: mechanism_label(k[0], k[1]) for k in keys}
    out = {}
    for k in keys:
        same = [x for x in keys if names[x] == names[k]]
        out[k] = names[k] if len(same) == 1 else f"{names[k]} ({same.index(k) + 1})"
    return out


def _matchups(report: dict[str, Any]) -> list[Drawn]:
    out = []
    for e in report.get("experiments") or []:
        matrix = e.get("matchup_matrix")
        if not matrix:
            continue
        agents = list(matrix)
        cols = list(dict.fromkeys(c for row in matrix.values() for c in row))
        size = min(DOUBLE, max(SINGLE, 0.45 * len(cols) + 1.6))
        fig, axes = figure(size, size * 0.82)
        ax = axes[0][0]
        heatmap(ax, [[matrix[r].get(c) for c in cols] for r in agents], agents, cols,
                label="row agent's payoff (points)", fmt="{:.2f}", fig=fig)
        ax.set_xlabel("co-player")
        ax.set_ylabel("agent")
        ax.set_title(f"Matchup payoffs — {e['game']}, {e['mechanism']}")
        out.append(Drawn(f"coopeval_matchups_exp{e['experiment']}_{slug(e['game'])}_{slug(e['mechanism'])}",
                         f"Mean payoff of the row agent against the column agent, experiment {e['experiment']}",
                         fig))
    return out


def _trajectories(report: dict[str, Any]) -> list[Drawn]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (table, column)
    moving = [ev for ev in report.get("evolution") or []
              if len(ev.get("steps") or []) >= 2]  # one step: nothing moved, nothing to draw
    for table in dict.fromkeys(ev["table"] for ev in moving):
        mine = [ev for ev in moving if ev["table"] == table]
        columns = _columns(mine)
        for ev in mine:
            groups.setdefault((table, columns[_key(ev)]), []).append(ev)
    out = []
    for (table, mech), runs in groups.items():
        runs.sort(key=lambda ev: ev.get("replicate") or 0)
        agents_n = len({a for ev in runs for a in ev["shares"]})
        fig, axes = figure(SINGLE, 2.3 + 0.13 * ((agents_n + 1) // 2))
        ax = axes[0][0]
        agents = list(dict.fromkeys(a for ev in runs for a in ev["shares"]))
        for r, ev in enumerate(runs):
            for i, agent in enumerate(agents):
                shares = ev["shares"].get(agent)
                if shares is None:
                    continue
                ax.plot(ev["steps"], shares, color=colour(i), linestyle=linestyle(i),
                        alpha=1.0 if r == 0 else 0.45, linewidth=1.3 if r == 0 else 0.8,
                        label=short(agent) if r == 0 else None,
                        gid=f"{ev['table']}|{ev['mechanism']}|{ev.get('order')}|"
                            f"{ev.get('replicate') or 0}|{agent}")
        ax.set_ylim(0, 1)
        ax.set_xscale("symlog", linthresh=10)  # most of the movement is in the first steps
        ax.set_xlim(0, max(max(ev["steps"] or [1]) for ev in runs))
        ax.set_xlabel("replicator step (log scale above 10)")
        ax.set_ylabel("population share")
        more = f"; {len(runs)} replicates (first solid)" if len(runs) > 1 else ""
        ax.set_title(f"Replicator dynamics — {table}, {mech}{more}")
        legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2)
        out.append(Drawn(f"coopeval_replicator_{slug(table)}_{slug(mech)}",
                         f"Replicator-dynamics trajectories, {table} under {mech}", fig))
    return out


def draw(report: dict[str, Any]) -> list[Drawn]:
    return _bars(report) + _matchups(report) + _trajectories(report)


FAMILY = register(Family(key="coopeval", title="CoopEval", draw=draw, order=10))
