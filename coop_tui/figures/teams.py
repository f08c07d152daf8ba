"""The super-additive cooperation paper's figures: cooperation per round by tournament
structure (its Figure 2), one-shot cooperation over the matches played (its Figure 3) and
pooled per structure with intra / inter splits, and intra- against inter-group
cooperation in SA (its Figure 4). Like the paper's, the curves and the one-shot bars
have one panel per model (per roster, when a tournament mixes agents), so the three
structures of each model are read side by side, with the paper's 50% line.

Reads the ``teams`` section only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import DOUBLE, RC, SINGLE, colour, figure, legend, linestyle, short

STRUCTURE_ORDER = {"SA": 0, "RI": 1, "GC": 2}
STRUCTURE_LOOK = {"SA": ("-", "o", 0.0), "RI": ("--", "s", -1.6), "GC": (":", "^", 1.6)}
"""Per structure, a line style, a marker and a sideways shift in points: two structures
with the same curve (RI and GC often are) stay both visible, the later one no longer
drawn over the earlier; the shift moves the drawing only, never the data."""

PANELS_PER_ROW = 3
"""The paper sets its three models side by side; more rosters wrap to further rows."""

HALF = 0.5
"""The paper's reference line: cooperation at 50% (what a coin would give)."""

Indexed = list[tuple[int, dict[str, Any]]]
"""Conditions with their index in the report's list (the lines' ids)."""


def _in_paper_order(conds: Indexed) -> Indexed:
    """SA, RI, GC first as the paper orders them; the report's order otherwise."""
    return sorted(conds, key=lambda ic: (STRUCTURE_ORDER.get(ic[1]["structure"], 3), ic[0]))


def _roster(c: dict[str, Any]) -> str:
    """Who played a condition: the model of a self-play tournament (the paper's
    panels), else its agents listed."""
    return ", ".join(short(a) for a in c.get("agents") or []) or "?"


def _by_model(conds: list[dict[str, Any]]) -> list[tuple[str, Indexed]]:
    """One panel per roster, by name (the report lists conditions in the order their
    matches were stored, which the run's scheduling decides); in each, the paper's
    structure order."""
    panels: dict[str, Indexed] = {}
    for i, c in enumerate(conds):
        panels.setdefault(_roster(c), []).append((i, c))
    return [(name, _in_paper_order(panels[name])) for name in sorted(panels)]


def _label(c: dict[str, Any], index: int, panel: Indexed) -> str:
    """The structure, numbered by its report index when the panel holds it twice."""
    same = [x for _i, x in panel if x["structure"] == c["structure"]]
    return c["structure"] if len(same) == 1 else f"{c['structure']} #{index + 1}"


def _panels(n: int, height: float) -> tuple[Any, list[Any]]:
    """A figure of n panels sharing the y axis (one column's width for one), its
    unused cells hidden."""
    cols = min(n, PANELS_PER_ROW)
    rows = -(-n // cols)
    width = SINGLE if cols == 1 else min(DOUBLE, 0.45 * DOUBLE * cols)
    fig, axes = figure(width, height * rows, ncols=cols, nrows=rows, sharey=True)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _half_line(ax: Any) -> None:
    ax.axhline(HALF, color="0.45", linestyle=":", linewidth=0.9, zorder=0, gid="half")


CURVES = {
    "per_round": ("superadditive_fig2_cooperation_per_round", "Cooperation per round by structure",
                  "round of the tournament (r)", "cooperation rate (p_c)",
                  "At a player's r-th round, its running cooperation share within the match; "
                  "mean over tournaments, band: 95% t-interval; one panel per model; dotted: 50%"),
    "osc_curve": ("superadditive_fig3_one_shot_over_matches", "One-shot cooperation over matches",
                  "matches played (k)", "one-shot cooperation so far (p_osc)",
                  "After the k-th match, the share of cooperative first moves so far; "
                  "mean over tournaments, band: 95% t-interval; one panel per model; dotted: 50%"),
}
"""The section's two curves (points ``{"x", "mean", "ci"}``) and how each is labelled."""


def _draw_curve(ax: Any, fig: Any, i: int, c: dict[str, Any], key: str, label: str) -> None:
    from matplotlib.transforms import ScaledTranslation

    points = [p for p in c[key] if p.get("mean") is not None]
    xs = [p["x"] for p in points]
    # a structure keeps its colour and look in every panel, figure and run
    shade = STRUCTURE_ORDER.get(c["structure"], 3 + i)
    style, marker, shift = STRUCTURE_LOOK.get(c["structure"], (linestyle(shade), "o", 0.0))
    moved = ax.transData + ScaledTranslation(shift / 72, 0, fig.dpi_scale_trans)
    (line,) = ax.plot(xs, [p["mean"] for p in points], color=colour(shade), linestyle=style,
                      marker=marker, markersize=3.5, markerfacecolor="none",
                      markeredgewidth=1.0, label=label, gid=str(i))
    line.set_transform(moved)  # after plotting: the axes' limits still fit the data
    bands = [(p["x"], *p["ci"]) for p in points if p.get("ci")]
    if bands:  # intervals over two tournaments can pass 0 and 1: drawn clipped
        ax.fill_between([b[0] for b in bands], [max(b[1], 0.0) for b in bands],
                        [min(b[2], 1.0) for b in bands], color=colour(shade), alpha=0.12,
                        linewidth=0)


def _curve(conds: list[dict[str, Any]], key: str) -> Drawn | None:
    panels = [(name, [(i, c) for i, c in members if c.get(key)]) for name, members in _by_model(conds)]
    panels = [(name, members) for name, members in panels if members]
    if not panels:
        return None
    name, title, xlabel, ylabel, caption = CURVES[key]
    fig, axes = _panels(len(panels), 2.5)
    for ax, (model, members) in zip(axes, panels, strict=True):
        _half_line(ax)
        for i, c in members:
            _draw_curve(ax, fig, i, c, key, _label(c, i, members))
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(xlabel)
        ax.set_title(model)
        ax.xaxis.get_major_locator().set_params(integer=True)
        legend(ax, loc="best")
    axes[0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=RC["axes.titlesize"])
    return Drawn(name, caption, fig)


Part = tuple[str, str, Callable[[dict[str, Any]], Any]]
"""(artist id, legend label, the cell of a condition) of one bar series."""


def _bars(ax: Any, columns: list[tuple[str, dict[str, Any]]], parts: list[Part]) -> None:
    """Side-by-side bars per column, one series per part; a missing cell says so."""
    width = 0.8 / len(parts)
    for p, (key, label, get) in enumerate(parts):
        xs, heights, lower, upper, absent = [], [], [], [], []
        for i, (_tick, c) in enumerate(columns):
            cell = get(c)
            x = i - 0.4 + width * (p + 0.5)
            if not cell or cell.get("mean") is None:
                absent.append(x)
                continue
            ci = cell.get("ci") or [cell["mean"], cell["mean"]]
            xs.append(x)
            heights.append(cell["mean"])
            # an interval over two tournaments can pass 0 and 1: the bar shows it clipped
            lower.append(cell["mean"] - max(ci[0], 0.0))
            upper.append(min(ci[1], 1.0) - cell["mean"])
        ax.bar(xs, heights, width=width * 0.92, yerr=[lower, upper], color=colour(p),
               label=label, error_kw={"elinewidth": 0.7, "capsize": 1.5}, gid=key)
        for x in absent:  # GC plays no intra-group match: the slot says so, not a gap
            ax.text(x, 0.02, f"no {label}", rotation=90, ha="center", va="bottom",
                    fontsize=6, color=colour(p), gid=f"{key}|none")
    ax.set_xticks(range(len(columns)), [tick for tick, _c in columns])
    ax.set_ylim(0, 1.05)


def _one_shot(conds: list[dict[str, Any]]) -> Drawn | None:
    """First-round cooperation per structure (the paper's Tables 6-8), a panel per model."""
    parts: list[Part] = [
        (k, label, lambda c, k=k: (c.get("one_shot") or {}).get(k))
        for k, label in (("all", "all matches"), ("intra", "intra-group"), ("inter", "inter-group"))
    ]
    if not any(get(c) for c in conds for _k, _l, get in parts):
        return None
    panels = _by_model(conds)
    fig, axes = _panels(len(panels), 2.5)
    for ax, (model, members) in zip(axes, panels, strict=True):
        _half_line(ax)
        _bars(ax, [(_label(c, i, members), c) for i, c in members], parts)
        ax.set_title(model)
    axes[0].set_ylabel("cooperation rate (95% t-interval)")
    legend(axes[0], loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=len(parts))
    fig.suptitle("One-shot cooperation (first round of each match)", fontsize=RC["axes.titlesize"])
    return Drawn("superadditive_fig3_one_shot_by_structure",
                 "Cooperation in the first round of every match, by structure; one panel per "
                 "model; dotted: 50%", fig)


def _intra_inter(conds: list[dict[str, Any]]) -> Drawn | None:
    """The paper's Figure 4: intra- against inter-group cooperation in SA, the one
    structure with both kinds of match; a pair of bars per model."""
    sa = sorted((c for c in conds if c["structure"] == "SA"), key=_roster)
    parts: list[Part] = [("intra", "intra-group", lambda c: c.get("intra")),
                         ("inter", "inter-group", lambda c: c.get("inter"))]
    if not any(get(c) for c in sa for _k, _l, get in parts):
        return None
    fig, axes = figure(SINGLE, 2.5)
    ax = axes[0][0]
    rosters = [_roster(c) for c in sa]
    _bars(ax, [(r if rosters.count(r) == 1 else f"{r} #{conds.index(c) + 1}", c)
               for r, c in zip(rosters, sa, strict=True)], parts)
    ax.set_ylabel("cooperation rate (95% t-interval)")
    ax.set_title("Intra- and inter-group cooperation in SA")
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=len(parts))
    return Drawn("superadditive_fig4_intra_inter_cooperation",
                 "Cooperation over all rounds of intra- and inter-group matches of the "
                 "super-additive (SA) tournaments, per model", fig)


def draw(report: dict[str, Any]) -> list[Drawn]:
    conds = (report.get("teams") or {}).get("conditions") or []
    if not conds:
        return []
    drawn = [_curve(conds, "per_round"), _curve(conds, "osc_curve"), _one_shot(conds),
             _intra_inter(conds)]
    return [d for d in drawn if d is not None]


FAMILY = register(Family(key="teams", title="The super-additive cooperation paper: superadditive cooperation", draw=draw,
                         order=40))
