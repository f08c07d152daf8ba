"""The strategic personalities paper's figures: cooperation by model with 95% Wilson intervals, the archetype map
(cooperation after the co-player cooperated against after it defected), the endgame
curves (cooperation per round, known horizon) and the Cohen's h matrix between agents.

Reads the ``strategic_personality`` section only.
"""

from __future__ import annotations

import math
from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import (
    DOUBLE,
    MARKERS,
    SINGLE,
    colour,
    figure,
    heatmap,
    legend,
    linestyle,
    short,
)


def _cooperation(value: dict[str, Any]) -> Drawn | None:
    agents = [(a, v["cooperation"]) for a, v in value["agents"].items()
              if (v.get("cooperation") or {}).get("rate") is not None]
    if not agents:
        return None
    agents.sort(key=lambda item: item[1]["rate"])
    fig, axes = figure(SINGLE, 0.9 + 0.22 * len(agents))
    ax = axes[0][0]
    rates = [c["rate"] for _a, c in agents]
    lower = [c["rate"] - (c.get("wilson") or [c["rate"]] * 2)[0] for _a, c in agents]
    upper = [(c.get("wilson") or [c["rate"]] * 2)[1] - c["rate"] for _a, c in agents]
    ax.barh(range(len(agents)), rates, xerr=[lower, upper], color=colour(0), height=0.65,
            error_kw={"elinewidth": 0.8, "capsize": 2}, gid="cooperation")
    ax.set_yticks(range(len(agents)), [short(a) for a, _c in agents])
    ax.set_xlim(0, 1)
    ax.set_xlabel("cooperation rate (95% Wilson interval)")
    ax.set_title("Cooperation by model")
    return Drawn("personalities_cooperation_by_model",
                 "Share of cooperative moves per agent, all games and opponents", fig)


def _archetypes(value: dict[str, Any]) -> Drawn | None:
    points = [(a, v["reciprocity"]) for a, v in value["agents"].items()
              if (v.get("reciprocity") or {}).get("p_c_after_c") is not None
              and v["reciprocity"].get("p_c_after_d") is not None]
    if not points:
        return None
    fig, axes = figure(SINGLE, 3.1)
    ax = axes[0][0]
    ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.7, linestyle="--")
    ax.text(0.97, 0.9, "anti-reciprocal\nabove the diagonal", ha="right", va="top", fontsize=6,
            color="0.4")
    ax.axvline(0.6, color="0.85", linewidth=0.7)
    ax.axhline(0.1, color="0.85", linewidth=0.7)
    for i, (agent, rec) in enumerate(points):
        # a marker shape per agent and shrinking sizes: agents at the same point stay visible
        ax.scatter([rec["p_c_after_c"]], [rec["p_c_after_d"]], color=colour(i), zorder=3 + i,
                   marker=MARKERS[i % len(MARKERS)], s=max(36 - 5 * i, 10),
                   label=f"{short(agent)}: {rec.get('archetype') or '-'}", gid=agent)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("P(cooperate | co-player cooperated)")
    ax.set_ylabel("P(cooperate | co-player defected)")
    ax.set_title("Archetype map")
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return Drawn("personalities_archetype_map",
                 "Reciprocity per agent; the legend names each agent's archetype", fig)


def _endgame(value: dict[str, Any]) -> Drawn | None:
    curves = [(a, v["curve"]) for a, v in value["agents"].items()
              if (v.get("curve") or {}).get("rounds")]
    if not curves:
        return None
    fig, axes = figure(SINGLE, 2.4 + 0.12 * len(curves))
    ax = axes[0][0]
    for i, (agent, curve) in enumerate(curves):
        ax.plot(curve["rounds"], curve["rate"], color=colour(i), linestyle=linestyle(i),
                marker="o", label=short(agent), gid=agent)
        wilson = curve.get("wilson") or []
        if len(wilson) == len(curve["rounds"]) and all(w for w in wilson):
            ax.fill_between(curve["rounds"], [w[0] for w in wilson], [w[1] for w in wilson],
                            color=colour(i), alpha=0.15, linewidth=0)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("round")
    ax.set_ylabel("cooperation rate (band: 95% Wilson)")
    ax.set_title("Cooperation per round (endgame)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2)
    return Drawn("personalities_endgame_curves", "Cooperation per round per agent", fig)


def _cohens_h(value: dict[str, Any]) -> Drawn | None:
    block = value.get("cohens_h") or {}
    agents, matrix = block.get("agents") or [], block.get("matrix") or []
    if len(agents) < 2:  # an effect size needs two agents
        return None
    size = min(DOUBLE, max(SINGLE, 0.5 * len(agents) + 1.8))
    fig, axes = figure(size, size * 0.8)
    ax = axes[0][0]
    bound = max([abs(v) for row in matrix for v in row if v is not None] + [0.2])
    heatmap(ax, matrix, agents, agents, cmap="PuOr_r", vmin=-bound, vmax=bound,
            label="Cohen's h (row − column)", fmt="{:.2f}", fig=fig)
    ax.set_title("Effect sizes between agents (Cohen's h)")
    return Drawn("personalities_cohens_h", "Cohen's h of cooperation, row agent against column", fig)


def _published(report: dict[str, Any]) -> Drawn | None:
    """Cooperation by model over trials (percent, the section's interval): the figure an
    imported trial table supports (it has no per-round choices), and that a run of our
    own playing the same games gets too."""
    models = [(m, v) for m, v in (report.get("cooperation_by_model") or {}).items()
              if v.get("mean") is not None]
    if not models:
        return None
    models.sort(key=lambda item: item[1]["mean"])
    fig, axes = figure(SINGLE, 0.9 + 0.2 * len(models))
    ax = axes[0][0]
    means = [v["mean"] for _m, v in models]
    # one trial has no interval: no error bar is drawn for it (NaN), rather than a 0-wide one
    lower = [v["mean"] - v["ci"][0] if v.get("ci") else math.nan for _m, v in models]
    upper = [v["ci"][1] - v["mean"] if v.get("ci") else math.nan for _m, v in models]
    ax.barh(range(len(models)), means, xerr=[lower, upper], color=colour(0), height=0.65,
            error_kw={"elinewidth": 0.8, "capsize": 2}, gid="cooperation")
    ax.set_yticks(range(len(models)), [f"{short(m)} (n={v['n']})" for m, v in models])
    ax.set_xlim(0, 100)
    selection = (report.get("published_trials") or {}).get("cooperation_by_model_selection") or {}
    games = ", ".join(selection.get("games") or [])
    method = "normal interval" if any(v.get("ci_method") == "normal-1.96" for _m, v in models) else "t-interval"
    ax.set_xlabel(f"cooperation (%, 95% {method} over trials)")
    ax.set_title("Cooperation by model" + (f" — {games}" if games else ""))
    return Drawn("personalities_cooperation_by_model_trials",
                 "Per-trial cooperation of each model (the strategic personalities paper's Supplementary Table 2 sample)",
                 fig)


SAMPLES = (("strategic_personality", ""), ("strategic_personality_pooled", "_pooled"))
"""The paper's sample (Table 2's trials, the agent in seat 0) and every repeated game pooled."""


def draw(report: dict[str, Any]) -> list[Drawn]:
    drawn = [_published(report)]
    for key, suffix in SAMPLES:
        value = report.get(key)
        if value and value.get("agents"):
            drawn += [_suffixed(d, suffix, value) for d in
                      (_cooperation(value), _archetypes(value), _endgame(value), _cohens_h(value))
                      if d is not None]
    return [d for d in drawn if d is not None]


def _suffixed(drawn: Drawn, suffix: str, value: dict[str, Any]) -> Drawn:
    """The pooled sample's figures carry ``_pooled`` in their name and title."""
    if not suffix:
        return drawn
    ax = drawn.figure.axes[0]
    ax.set_title(ax.get_title() + " (pooled)")
    return Drawn(drawn.name + suffix, drawn.caption + ", " + value.get("sample", {}).get(
        "description", "pooled"), drawn.figure)


FAMILY = register(Family(key="personalities", title="The strategic personalities paper: strategic personalities",
                         draw=draw, order=30))
