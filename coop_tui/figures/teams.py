"""The super-additive cooperation paper's figures: cooperation per round by tournament
structure (its Figure 2), one-shot cooperation over the matches played (its Figure 3) and
pooled per structure with intra / inter splits, and intra- against inter-group
cooperation (its Figure 4).

Reads the ``teams`` section only.
"""

from __future__ import annotations

from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import SINGLE, colour, figure, legend, linestyle

STRUCTURE_ORDER = {"SA": 0, "RI": 1, "GC": 2}
STRUCTURE_LOOK = {"SA": ("-", "o", 0.0), "RI": ("--", "s", -1.6), "GC": (":", "^", 1.6)}
"""Per structure, a line style, a marker and a sideways shift in points: two structures
with the same curve (RI and GC often are) stay both visible, the later one no longer
drawn over the earlier; the shift moves the drawing only, never the data."""


def _in_paper_order(conds: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(index in the report, condition), SA, RI, GC first as the paper orders them."""
    return sorted(enumerate(conds), key=lambda ic: (STRUCTURE_ORDER.get(ic[1]["structure"], 3), ic[0]))


def _label(c: dict[str, Any], index: int, all_conditions: list[dict[str, Any]]) -> str:
    same = [x for x in all_conditions if x["structure"] == c["structure"]]
    return c["structure"] if len(same) == 1 else f"{c['structure']} #{index + 1}"


CURVES = {
    "per_round": ("superadditive_fig2_cooperation_per_round", "Cooperation per round by structure",
                  "round of the tournament (r)", "cooperation rate (p_c)",
                  "At a player's r-th round, its running cooperation share within the match; "
                  "mean over tournaments, band: 95% t-interval"),
    "osc_curve": ("superadditive_fig3_one_shot_over_matches", "One-shot cooperation over matches",
                  "matches played (k)", "one-shot cooperation so far (p_osc)",
                  "After the k-th match, the share of cooperative first moves so far; "
                  "mean over tournaments, band: 95% t-interval"),
}
"""The section's two curves (points ``{"x", "mean", "ci"}``) and how each is labelled."""


def _curve(conds: list[dict[str, Any]], key: str) -> Drawn | None:
    from matplotlib.transforms import ScaledTranslation

    series = [(i, c) for i, c in _in_paper_order(conds) if c.get(key)]
    if not series:
        return None
    name, title, xlabel, ylabel, caption = CURVES[key]
    fig, axes = figure(SINGLE, 2.5)
    ax = axes[0][0]
    for k, (i, c) in enumerate(series):
        points = [p for p in c[key] if p.get("mean") is not None]
        xs = [p["x"] for p in points]
        # a structure keeps its colour and look in every figure and run
        shade = STRUCTURE_ORDER.get(c["structure"], 3 + k)
        style, marker, shift = STRUCTURE_LOOK.get(c["structure"], (linestyle(shade), "o", 0.0))
        moved = ax.transData + ScaledTranslation(shift / 72, 0, fig.dpi_scale_trans)
        (line,) = ax.plot(xs, [p["mean"] for p in points], color=colour(shade), linestyle=style,
                          marker=marker, markersize=3.5, markerfacecolor="none",
                          markeredgewidth=1.0, label=_label(c, i, conds), gid=str(i))
        line.set_transform(moved)  # after plotting: the axes' limits still fit the data
        bands = [(p["x"], *p["ci"]) for p in points if p.get("ci")]
        if bands:  # intervals over two tournaments can pass 0 and 1: drawn clipped
            ax.fill_between([b[0] for b in bands], [max(b[1], 0.0) for b in bands],
                            [min(b[2], 1.0) for b in bands], color=colour(shade), alpha=0.12,
                            linewidth=0)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    legend(ax, loc="lower right")
    return Drawn(name, caption, fig)


def _grouped(conds: list[dict[str, Any]], parts: list[tuple[str, str, Any]], title: str,
             ylabel: str, name: str, caption: str) -> Drawn | None:
    if not any(get(c) for c in conds for _k, _l, get in parts):
        return None
    fig, axes = figure(SINGLE, 2.5)
    ax = axes[0][0]
    width = 0.8 / len(parts)
    ordered = [c for _i, c in _in_paper_order(conds)]
    for p, (key, label, get) in enumerate(parts):
        xs, heights, lower, upper, absent = [], [], [], [], []
        for i, c in enumerate(ordered):
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
    ax.set_xticks(range(len(ordered)), [_label(c, conds.index(c), conds) for c in ordered])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=len(parts))
    return Drawn(name, caption, fig)


def draw(report: dict[str, Any]) -> list[Drawn]:
    conds = (report.get("teams") or {}).get("conditions") or []
    if not conds:
        return []
    one_shot = _grouped(
        conds,
        [("all", "all matches", lambda c: (c.get("one_shot") or {}).get("all")),
         ("intra", "intra-group", lambda c: (c.get("one_shot") or {}).get("intra")),
         ("inter", "inter-group", lambda c: (c.get("one_shot") or {}).get("inter"))],
        "One-shot cooperation (first round of each match)", "cooperation rate (95% t-interval)",
        "superadditive_fig3_one_shot_by_structure",
        "Cooperation in the first round of every match, by structure", )
    intra_inter = _grouped(
        conds,
        [("intra", "intra-group", lambda c: c.get("intra")),
         ("inter", "inter-group", lambda c: c.get("inter"))],
        "Intra- and inter-group cooperation", "cooperation rate (95% t-interval)",
        "superadditive_fig4_intra_inter_cooperation",
        "Cooperation over all rounds of intra- and inter-group matches, by structure")
    drawn = [_curve(conds, "per_round"), _curve(conds, "osc_curve"), one_shot, intra_inter]
    return [d for d in drawn if d is not None]


FAMILY = register(Family(key="teams", title="The super-additive cooperation paper: superadditive cooperation", draw=draw,
                         order=40))
