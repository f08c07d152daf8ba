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
STRUCTURE_LOOK = {"SA": ("-", "o"), "RI": ("--", "s"), "GC": (":", "^")}
"""Per structure, a line style and a marker beside its colour."""

PANELS_PER_ROW = 3
"""The bar figures set three models side by side; more rosters wrap to further rows."""

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


def _percent_axis(ax: Any) -> None:
    """The paper's y axis: 0-100% with the 50% line (what a coin would give)."""
    ax.set_ylim(0, 100 * 1.03)
    ax.axhline(100 * HALF, color="0.45", linestyle=":", linewidth=0.9, zorder=0, gid="half")


CURVES = {
    "per_round": ("superadditive_fig2_cooperation_per_round", "Cooperation per round",
                  "round of the tournament (r)", "cooperation rate p_c (%)",
                  "At a player's r-th round, its running cooperation share within the match; "
                  "mean over tournaments, band: 95% t-interval; one panel per model and "
                  "structure; dotted: 50%"),
    "osc_curve": ("superadditive_fig3_one_shot_over_matches", "One-shot cooperation over matches",
                  "matches played (k)", "one-shot cooperation p_osc (%)",
                  "After the k-th match, the share of cooperative first moves so far; "
                  "mean over tournaments, band: 95% t-interval; one panel per model and "
                  "structure; dotted: 50%"),
}
"""The section's two curves (points ``{"x", "mean", "ci"}``) and how each is labelled."""


def _draw_curve(ax: Any, i: int, c: dict[str, Any], key: str) -> None:
    """One condition's curve in percent, its band the report's interval (the report
    clips intervals of shares to [0, 1]; nothing is clipped here)."""
    points = [p for p in c[key] if p.get("mean") is not None]
    xs = [p["x"] for p in points]
    # a structure keeps its colour and look in every panel, figure and run
    shade = STRUCTURE_ORDER.get(c["structure"], 3 + i)
    style, marker = STRUCTURE_LOOK.get(c["structure"], (linestyle(shade), "o"))
    ax.plot(xs, [100 * p["mean"] for p in points], color=colour(shade), linestyle=style,
            marker=marker, markersize=3.5, markerfacecolor="none", markeredgewidth=1.0,
            label=c["structure"], gid=str(i))
    bands = [(p["x"], *p["ci"]) for p in points if p.get("ci")]
    if bands:
        ax.fill_between([b[0] for b in bands], [100 * b[1] for b in bands],
                        [100 * b[2] for b in bands], color=colour(shade), alpha=0.15,
                        linewidth=0)


def _grid(conds: list[dict[str, Any]], key: str) -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
    """The paper's panels: one row per model (roster), one column per structure in the
    paper's order (SA, RI, GC); a cell the run did not play stays empty."""
    return [(model, [(i, c) for i, c in members if c.get(key)]) for model, members in _by_model(conds)]


def _curve(conds: list[dict[str, Any]], key: str) -> Drawn | None:
    rows = [(model, members) for model, members in _grid(conds, key) if members]
    if not rows:
        return None
    structures = sorted({c["structure"] for _m, members in rows for _i, c in members},
                        key=lambda s: (STRUCTURE_ORDER.get(s, 3), s))
    name, title, xlabel, ylabel, caption = CURVES[key]
    ncols = max(len(structures), max(len(m) for _n, m in rows))
    # no shared axes: with a cell left empty, shared ticks would vanish from the panel above
    fig, axes = figure(min(DOUBLE, 2.2 * ncols + 0.4), 1.9 * len(rows) + 0.4, ncols=ncols,
                       nrows=len(rows))
    for r, (model, members) in enumerate(rows):
        placed: dict[int, int] = {}
        for i, c in members:  # the structure's column; a second tournament of it the next free one
            col = structures.index(c["structure"])
            while col in placed.values() and col < ncols - 1:
                col += 1
            placed[i] = col
            ax = axes[r][col]
            _percent_axis(ax)
            _draw_curve(ax, i, c, key)
            ax.set_title(f"{model} — {_label(c, i, members)}")
            ax.set_xlabel(xlabel)
            ax.xaxis.get_major_locator().set_params(integer=True)
        for col in set(range(ncols)) - set(placed.values()):
            axes[r][col].set_visible(False)
        axes[r][min(placed.values())].set_ylabel(ylabel)
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
            heights.append(100 * cell["mean"])
            lower.append(100 * (cell["mean"] - ci[0]))  # the report's interval, as it is
            upper.append(100 * (ci[1] - cell["mean"]))
        ax.bar(xs, heights, width=width * 0.92, yerr=[lower, upper], color=colour(p),
               label=label, error_kw={"elinewidth": 0.7, "capsize": 1.5}, gid=key)
        for x in absent:  # GC plays no intra-group match: the slot says so, not a gap
            ax.text(x, 2, f"no {label}", rotation=90, ha="center", va="bottom",
                    fontsize=6, color=colour(p), gid=f"{key}|none")
    ax.set_xticks(range(len(columns)), [tick for tick, _c in columns])
    ax.set_ylim(0, 100 * 1.05)


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
        _bars(ax, [(_label(c, i, members), c) for i, c in members], parts)
        _percent_axis(ax)
        ax.set_title(model)
    axes[0].set_ylabel("cooperation rate (%, 95% t-interval)")
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
    ax.set_ylabel("cooperation rate (%, 95% t-interval)")
    ax.set_title("Intra- and inter-group cooperation in SA")
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=len(parts))
    return Drawn("superadditive_fig4_intra_inter_cooperation",
                 "Cooperation over all rounds of intra- and inter-group matches of the "
                 "super-additive (SA) tournaments, per model", fig)


def _meta_accuracy(conds: list[dict[str, Any]]) -> Drawn | None:
    """The paper's Figure 5: meta-prompt accuracy in the SA tournaments, per model; a bar
    per question the run asked (its share of right answers, mean over tournaments) and
    the overall share with its 95% t-interval, on the 0-100% axis."""
    sa = [(i, c) for i, c in enumerate(conds) if c["structure"] == "SA"
          and ((c.get("meta_accuracy") or {}).get("all") or {}).get("mean") is not None]
    if not sa:
        return None
    sa.sort(key=lambda ic: (_roster(ic[1]), ic[0]))
    fig, axes = _panels(len(sa), 2.6)
    for ax, (i, c) in zip(axes, sa, strict=True):
        meta = c["meta_accuracy"]
        questions = [q for q, v in meta.get("by_question", {}).items() if v is not None]
        heights = [100 * meta["by_question"][q] for q in questions]
        ax.bar(range(len(questions)), heights, width=0.7, color=colour(0), gid=f"{i}|questions")
        overall = meta["all"]
        ci = overall.get("ci") or [overall["mean"], overall["mean"]]
        ax.bar([len(questions)], [100 * overall["mean"]], width=0.7, color=colour(1),
               yerr=[[100 * (overall["mean"] - ci[0])], [100 * (ci[1] - overall["mean"])]],
               error_kw={"elinewidth": 0.7, "capsize": 1.5}, gid=f"{i}|all")
        for x, h in enumerate([*heights, 100 * overall["mean"]]):  # a 0% bar is no bar
            ax.text(x, h + 1.5, f"{h:.0f}%", ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(questions) + 1), [*questions, "all"], rotation=45, ha="right")
        ax.set_ylim(0, 100 * 1.05)
        same = [x for x in sa if _roster(x[1]) == _roster(c)]
        ax.set_title(_roster(c) if len(same) == 1 else f"{_roster(c)} #{i + 1}")
    axes[0].set_ylabel("right answers (%)")
    fig.suptitle("Meta-prompt accuracy in SA", fontsize=RC["axes.titlesize"])
    return Drawn("superadditive_fig5_meta_prompt_accuracy",
                 "Share of meta-prompt (comprehension) answers that were right in the SA "
                 "tournaments, per question and overall (95% t-interval), per model", fig)


def draw(report: dict[str, Any]) -> list[Drawn]:
    conds = (report.get("teams") or {}).get("conditions") or []
    if not conds:
        return []
    drawn = [_curve(conds, "per_round"), _curve(conds, "osc_curve"), _one_shot(conds),
             _intra_inter(conds), _meta_accuracy(conds)]
    return [d for d in drawn if d is not None]


FAMILY = register(Family(key="teams", title="The super-additive cooperation paper: superadditive cooperation", draw=draw,
                         order=40))
