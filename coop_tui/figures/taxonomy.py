"""The reasoning taxonomy's figures (the CoopEval paper, its justification judge), from any
judged run: the most frequent categories per model broken down by mechanism (its Figure
2), the profile per mechanism (Figure 4), and heat maps of every category against the
mechanisms, pooled (Figure 5), per model (Figure 6) and per game (Figure 7).

Reads the ``taxonomy`` section only (its pooled shares; nothing is recounted).
"""

from __future__ import annotations

from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import DOUBLE, RC, colour, figure, heatmap, legend, short, slug

TOP = 6
"""Categories shown in the bar figures: the most frequent over the pass, as the paper
shows "the most popular" of its list."""


def _mechanisms(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({r["mechanism"] for r in rows})


def _top(rows: list[dict[str, Any]]) -> list[str]:
    """The pass's most frequent categories (pooled over every row, by decisions)."""
    total = sum(r["n"] for r in rows) or 1
    cats = list(rows[0]["categories"]) if rows else []
    share = {c: sum(r["categories"][c] * r["n"] for r in rows) / total for c in cats}
    return sorted(cats, key=lambda c: (-share[c], cats.index(c)))[:TOP]


def _grouped_bars(ax: Any, rows: list[dict[str, Any]], cats: list[str], mechs: list[str],
                  prefix: str) -> None:
    """Per category, one bar per mechanism (percent); gid ``prefix|mechanism|category``."""
    width = 0.8 / max(1, len(mechs))
    by_mech = {r["mechanism"]: r for r in rows}
    for j, mech in enumerate(mechs):
        row = by_mech.get(mech)
        if row is None:
            continue
        for i, cat in enumerate(cats):
            ax.bar(i - 0.4 + width * (j + 0.5), 100 * row["categories"][cat], width=width * 0.92,
                   color=colour(j), label=mech if i == 0 else None, gid=f"{prefix}|{mech}|{cat}")
    ax.set_xticks(range(len(cats)), [short(c, 30) for c in cats], rotation=35, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("decisions showing it (%)")


def _bars(p: dict[str, Any]) -> list[Drawn]:
    out = []
    mechs = _mechanisms(p["by_mechanism"])
    cats = _top(p["by_mechanism"])
    models = sorted({r["agent"] for r in p["by_model_mechanism"]})
    fig, axes = figure(DOUBLE, 2.4 * len(models) + 0.6, nrows=len(models))
    for ax, model in zip(axes.flat, models, strict=True):
        _grouped_bars(ax, [r for r in p["by_model_mechanism"] if r["agent"] == model], cats, mechs,
                      model)
        ax.set_title(short(model))
    legend(axes.flat[0], loc="upper right", ncols=min(len(mechs), 5))
    fig.suptitle(f"Most frequent justifications per model, by mechanism ({p['judge']})",
                 fontsize=RC["axes.titlesize"])
    out.append(Drawn(f"taxonomy_fig2_by_model_{slug(p['judge'])}",
                     "Share of judged decisions showing each of the most frequent categories, "
                     "per model, one bar per mechanism", fig))
    fig, axes = figure(DOUBLE, 2.8)
    _grouped_bars(axes[0][0], p["by_mechanism"], cats, mechs, "all")
    legend(axes[0][0], loc="upper right", ncols=min(len(mechs), 5))
    axes[0][0].set_title(f"Justification profile by mechanism ({p['judge']})")
    out.append(Drawn(f"taxonomy_fig4_profile_{slug(p['judge'])}",
                     "Share of judged decisions showing each of the most frequent categories, "
                     "one bar per mechanism", fig))
    return out


def _heat(p: dict[str, Any], key: str, field: str | None, number: str, what: str) -> Drawn:
    """Categories (rows) against mechanisms (columns), in percent; one panel per value of
    ``field`` (model, game) or a single one."""
    rows = p[key]
    mechs = _mechanisms(rows)
    cats = list(rows[0]["categories"])
    groups = sorted({r[field] for r in rows}) if field else [None]
    fig, axes = figure(DOUBLE, (0.18 * len(cats) + 1.2) * len(groups), nrows=len(groups))
    for ax, group in zip(axes.flat, groups, strict=True):
        cells = {r["mechanism"]: r for r in rows if field is None or r[field] == group}
        values = [[100 * cells[m]["categories"][c] if m in cells else None for m in mechs]
                  for c in cats]
        heatmap(ax, values, cats, mechs, vmin=0, vmax=100, label="decisions (%)", fmt="{:.0f}",
                fig=fig, cmap="viridis")
        ax.set_title(short(str(group)) if field else "all judged decisions")
        ax.tick_params(axis="x", rotation=0)
    fig.suptitle(f"Justifications by mechanism{what} ({p['judge']})", fontsize=RC["axes.titlesize"])
    suffix = f"_{slug(what)}" if what else ""
    return Drawn(f"taxonomy_{number}_heatmap{suffix}_{slug(p['judge'])}",
                 f"Share of judged decisions showing each category, by mechanism{what}", fig)


def draw(report: dict[str, Any]) -> list[Drawn]:
    out: list[Drawn] = []
    for p in (report.get("taxonomy") or {}).get("passes") or []:
        if not p["by_mechanism"] or not p["by_mechanism"][0]["categories"]:
            continue
        out.extend(_bars(p))
        out.append(_heat(p, "by_mechanism", None, "fig5", ""))
        out.append(_heat(p, "by_model_mechanism", "agent", "fig6", " per model"))
        out.append(_heat(p, "by_game_mechanism", "game", "fig7", " per game"))
    return out


FAMILY = register(Family(key="taxonomy", title="The CoopEval paper: reasoning taxonomy", draw=draw,
                         order=15))
