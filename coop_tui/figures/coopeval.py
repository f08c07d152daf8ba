"""CoopEval's figures: per-game Mean and Fitness bars with standard errors (its
Tables 2-7 drawn), the matchup payoff heat maps (its metagame figures) and the
replicator-dynamics trajectories.

Reads the report's ``tables`` (mean ± SE over replicates, per game table and mechanism),
each experiment's ``matchup_matrix`` and the report's ``evolution``.
"""

from __future__ import annotations

import re
from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import (
    DOUBLE,
    RC,
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
           ("fitness", "Fitness", "Fitness\n(points, replicator-weighted)"))


def _bars(report: dict[str, Any]) -> list[Drawn]:
    from coop_tui.analysis.coopeval_tables import aggregate_title, pooled_games

    rows = [r for r in report.get("tables") or [] if r.get("metric") in ("mean", "fitness")
            and r.get("agent") != "average" and r.get("value") is not None]
    out = []
    for table in dict.fromkeys(r["table"] for r in rows):
        mine = [r for r in rows if r["table"] == table]
        agents = list(dict.fromkeys(r["agent"] for r in mine))
        columns = _columns(mine)
        # a panel per metric the table has (Reputation has a Mean but no Fitness: a table
        # of Reputation alone gets no empty Fitness panel)
        metrics = [m for m in METRICS if any(r["metric"] == m[0] for r in mine)]
        counts = [len({_key(r) for r in mine if r["metric"] == m}) for m, _l, _u in metrics]
        fig, axes = figure(DOUBLE if len(metrics) > 1 else 0.6 * DOUBLE,
                           2.3 + 0.08 * len(agents), ncols=len(metrics),
                           gridspec_kw={"width_ratios": counts})
        where = (f"{aggregate_title(pooled_games(mine))} (normalised)" if table == "all"
                 else table)
        for ax, (metric, label, unit) in zip(axes[0], metrics, strict=True):
            _metric_bars(ax, [r for r in mine if r["metric"] == metric], agents, columns, metric)
            # the aggregate table holds each game's cell normalised, not points
            ax.set_ylabel(unit.replace("points", "normalised") if table == "all" else unit)
            ax.set_title(label)
        missing = [label for m, label, _u in METRICS if (m, label, _u) not in metrics]
        if missing:  # say on the figure why a panel is not there
            axes[0][0].set_xlabel(f"no {', '.join(missing)} for these mechanisms in the report",
                                  color="0.35")
        # one legend with every agent's colour, drawn from explicit handles (a legend read
        # from an empty panel showed every agent in matplotlib's default blue)
        axes[0][-1].legend(handles=_agent_handles(agents), loc="upper left",
                           bbox_to_anchor=(1.01, 1.0), fontsize=RC["legend.fontsize"],
                           frameon=False)
        fig.suptitle(f"CoopEval — {where}", fontsize=RC["axes.titlesize"])
        note = f"; no {', '.join(missing)} for these mechanisms" if missing else ""
        out.append(Drawn(f"coopeval_mean_fitness_{slug(table)}",
                         f"{' and '.join(label for _m, label, _u in metrics)} per mechanism, "
                         f"{where} (mean ± SE over replicates{note})", fig))
    return out


def _metric_bars(ax: Any, rows: list[dict[str, Any]], agents: list[str],
                 columns: dict[tuple[Any, ...], str], metric: str) -> None:
    """One group of bars per column, one bar per agent. A value too small to see as a bar
    (0, the Fitness of an agent that died out, or under 1% of the panel's largest) is
    marked by a hollow circle on the axis, so a zero reads as a zero, not as a gap."""
    values = {(columns[_key(r)], r["agent"]): r for r in rows}
    # only the columns with this metric (Reputation has a Mean but no Fitness), in order
    mechanisms = [c for c in dict.fromkeys(columns.values()) if any(m == c for m, _a in values)]
    width = 0.8 / max(len(agents), 1)
    tiny = 0.01 * max((abs(r["value"]) for r in rows), default=0.0)
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
               gid=f"{metric}|{agent}", zorder=2)
        zeros = [x for x, h in zip(xs, heights, strict=True) if abs(h) <= tiny]
        if zeros:
            ax.plot(zeros, [0.0] * len(zeros), linestyle="none", marker="o",
                    markersize=4, markerfacecolor="white", markeredgecolor=colour(i),
                    markeredgewidth=1.2, zorder=3, gid=f"{metric}|{agent}|zero")
    crowded = len(mechanisms) > 4  # long labels side by side would run into each other
    ax.set_xticks(range(len(mechanisms)), mechanisms, rotation=35 if crowded else 0,
                  ha="right" if crowded else "center")
    ax.axhline(0, color="0.3", linewidth=0.6, zorder=1)


def _agent_handles(agents: list[str]) -> list[Any]:
    from matplotlib.patches import Patch

    return [Patch(facecolor=colour(i), label=short(agent)) for i, agent in enumerate(agents)]


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["mechanism"], row.get("order"), row.get("condition"))


def _columns(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], str]:
    """Each (mechanism, order, condition) of a table as the paper names the column
    (Reputation- / Reputation+ by order); conditions that share a name are told apart by
    the condition fields that differ between them (``similarity=50``)."""
    from coop_tui.analysis.coopeval_tables import mechanism_label

    keys = list(dict.fromkeys(_key(r) for r in rows))
    names = {k: mechanism_label(k[0], k[1]) for k in keys}
    first = {name: i for i, name in reversed(list(enumerate(names[k] for k in keys)))}
    # a mechanism's conditions in their natural order (similarity 0, 50, 100; not 0, 100, 50)
    keys.sort(key=lambda k: (first[names[k]], _natural(k[2])))
    out = {}
    for k in keys:
        same = [x for x in keys if names[x] == names[k]]
        out[k] = names[k] if len(same) == 1 else _distinct_label(names[k], k[2], [x[2] for x in same])
    return out


CONDITION_FIELD = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")
"""One ``name=value`` of a stored condition key; a value may hold spaces (a dict)."""
LABEL_VALUE = 24
"""Longer values (score tables, long names) do not name a column: it is numbered instead."""


def _condition_fields(condition: Any) -> dict[str, str]:
    """A stored condition key (``framing=similar similarity=50.0``) as fields, numbers
    written short (``50``)."""
    return {name: _short_number(value)
            for name, value in CONDITION_FIELD.findall(str(condition or ""))}


def _short_number(text: str) -> str:
    """``50.0`` as ``50``; text that is no number as it is."""
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def _natural(condition: Any) -> list[tuple[int, float, str]]:
    """A sort key for a condition key that orders its numbers as numbers."""
    out = []
    for name, value in _condition_fields(condition).items():
        try:
            out.append((0, float(value), name))
        except ValueError:
            out.append((1, 0.0, f"{name}={value}"))
    return out


def _distinct_label(name: str, condition: Any, conditions: list[Any]) -> str:
    """``name`` with the short fields that tell ``condition`` apart from the others of
    ``conditions`` (just ``similarity=50`` when the field is the mechanism's name);
    numbered ``name (2)`` when no short fields tell them all apart."""
    fields = [_condition_fields(c) for c in conditions]
    mine = fields[conditions.index(condition)]
    varying = [f for f in mine if len({o.get(f) for o in fields}) > 1
               and all(len(o.get(f) or "") <= LABEL_VALUE for o in fields)]
    told_apart = len({tuple(o.get(f) for f in varying) for o in fields}) == len(fields)
    if not varying or not told_apart:
        return f"{name} ({conditions.index(condition) + 1})"
    text = " ".join(f"{f}={mine[f]}" for f in varying)
    return text if varying == [name] else f"{name}\n{text}"


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
