"""The similarity signals paper's figures: cooperation over the similarity the agents were told, one curve per
agent with standard errors and the theory's threshold b* marked (its Figure 2; per
benchmark, its Figures 3 and 10), the Traveler's Dilemma claim distribution of its
Figure 9, and the similarity matrices between agents, exogenous from benchmark answers
and endogenous from judges' scores (its Figure 4; Figures 11-12 per view).

Reads each experiment's ``curve`` (abstract similarity sweeps), the ``travelers_claims``
section, the ``similarity_table`` section's ``curves`` and ``b_star`` (grounded sweeps)
and the ``exogenous`` / ``endogenous`` sections.
"""

from __future__ import annotations

from typing import Any

from coop_tui.figures import Drawn, Family, register
from coop_tui.figures.style import (
    DOUBLE,
    MARKERS,
    OKABE_ITO,
    SINGLE,
    colour,
    figure,
    heatmap,
    legend,
    linestyle,
    short,
    slug,
)


def _curve_axes(ax: Any, series: dict[str, list[dict[str, Any]]], x_key: str, b_star: float | None,
                prefix: str = "", series_stars: dict[str, float | None] | None = None,
                order: list[str] | None = None, labels: dict[str, str] | None = None) -> None:
    """The curves of one panel and b*: one dotted line, or, when the panel's curves are
    different games (plain and bonus Prisoner's Dilemma) with b* of their own, one line
    per distinct b* (``series_stars``). ``order`` numbers the series across panels, so
    one series keeps its colour and line style in every panel (a shared legend needs it)."""
    for name, points in series.items():
        i = order.index(name) if order and name in order else list(series).index(name)
        pts = sorted((p for p in points if p.get("coop_rate") is not None), key=lambda p: p[x_key])
        if not pts:
            continue
        xs = [p[x_key] for p in pts]
        ys = [p["coop_rate"] for p in pts]
        errors = [p.get("se") or 0.0 for p in pts]
        bars = ax.errorbar(xs, ys, yerr=errors, color=colour(i), linestyle=linestyle(i),
                           marker=MARKERS[(i // len(OKABE_ITO)) % len(MARKERS)], capsize=2,
                           elinewidth=0.7, label=(labels or {}).get(name) or short(name, 56))
        bars.lines[0].set_gid(prefix + name)  # the data line, found by its series name
    if b_star is not None:
        ax.axvline(100 * b_star, color="0.3", linestyle=":", linewidth=1.0, gid="b_star",
                   label=f"b* = {100 * b_star:.0f}%")
    else:
        stars = sorted({v for v in (series_stars or {}).values() if v is not None}, reverse=True)
        for k, star in enumerate(stars):
            ax.axvline(100 * star, color=f"{0.2 + 0.2 * (k % 3):.1f}", linestyle=":",
                       linewidth=0.8, gid=f"b_star|{star:g}", label=f"b* = {100 * star:.0f}%")
    ax.set_xlim(-3, 103)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("similarity told (%)")
    ax.set_ylabel("cooperation rate")


BASE_X = -18
"""Where the Base point (no similarity sentence) sits: left of X = 0, its own tick."""
INVERTED_FRAMINGS = ("dissimilar", "different")
"""Framings told as (1 - X): the paper's Figure 8 inverts their Y axis for comparison."""


def _bases(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The Base control (prompt "base": no similarity sentence) of every experiment, per
    (game, agent): the papers' "Base" row of Figure 2 and column of Figure 9."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for e in report.get("experiments") or []:
        for c in e.get("conditions") or []:
            cond = c.get("condition") or {}
            if cond.get("prompt") != "base":
                continue
            game = cond.get("game") or e.get("game")
            for agent, a in (c.get("agents") or {}).items():
                if a.get("coop_rate") is not None:
                    out.setdefault((game, agent), {"coop_rate": a["coop_rate"], "se": a.get("coop_se")})
    return out


def _panel_of(e: dict[str, Any], name: str, points: list[dict[str, Any]]) -> tuple[str, str]:
    """A series' (game, framing): from its label's ``game=`` field (an experiment over
    several games) and its points' framing."""
    fields = dict(part.split("=", 1) for part in name.partition(" / ")[2].split() if "=" in part)
    framings = {p.get("framing") for p in points} - {None}
    return fields.get("game", e.get("game")), (framings.pop() if len(framings) == 1 else "similar")


def _draw_base(ax: Any, series: dict[str, list[dict[str, Any]]], game: str,
               bases: dict[tuple[str, str], dict[str, Any]]) -> bool:
    """Each agent's Base point beside its curve, in its colour (hollow square)."""
    drawn = False
    for i, name in enumerate(series):
        base = bases.get((game, name.partition(" / ")[0]))
        if base is None:
            continue
        ax.errorbar([BASE_X], [base["coop_rate"]], yerr=[base.get("se") or 0.0], color=colour(i),
                    marker="s", markerfacecolor="none", capsize=2, elinewidth=0.7,
                    linestyle="none").lines[0].set_gid(f"base|{name}")
        drawn = True
    if drawn:
        ax.set_xlim(BASE_X - 6, 103)
        ax.set_xticks([BASE_X, 0, 20, 40, 60, 80, 100], ["Base", "0", "20", "40", "60", "80", "100"])
        ax.axvline((BASE_X + 0) / 2 - 1, color="0.85", linewidth=0.6)
    return drawn


def _rest(name: str, key: tuple[str, str]) -> str:
    """A series' condition fields that its panel's title does not already say."""
    said = {f"game={key[0]}", f"framing={key[1]}"}
    rest = [p for p in name.partition(" / ")[2].split() if p not in said]
    return f" ({' '.join(rest)})" if rest else ""


def _abstract_curves(report: dict[str, Any]) -> list[Drawn]:
    """Per X-sweep experiment, one figure: a single panel (the paper's Figure 2), one
    panel per framing with the dissimilar / different axes inverted (Figure 8), or one
    panel per game (Figure 9); each agent's Base point beside its curve where the run
    played the Base control for that game."""
    out = []
    bases = _bases(report)
    for e in report.get("experiments") or []:
        curve = e.get("curve") or {}
        if not any(len(points) > 1 for points in curve.values()):
            continue
        panels: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
        for name, points in curve.items():
            panels.setdefault(_panel_of(e, name, points), {})[name] = points
        keys = sorted(panels, key=lambda k: (k[0], ("similar", *INVERTED_FRAMINGS).index(k[1])
                                             if k[1] in ("similar", *INVERTED_FRAMINGS) else 9, k[1]))
        games = {g for g, _f in keys}
        framings = {f for _g, f in keys}
        ncols = min(len(keys), 3)
        nrows = -(-len(keys) // ncols)
        most = max(len(s) for s in panels.values())
        fig, axes = figure(SINGLE if ncols == 1 else DOUBLE, (2.2 + 0.12 * most) * nrows,
                           ncols=ncols, nrows=nrows)
        for k, key in enumerate(keys):
            ax = axes.flat[k]
            game, framing = key
            # the agent's name alone: the panel's title says the game and framing (short()
            # would drop "agent / " as if it were a provider prefix)
            names = {n: short(n.partition(" / ")[0]) + _rest(n, key) for n in panels[key]}
            _curve_axes(ax, panels[key], "similarity", e.get("b_star"), labels=names)
            _draw_base(ax, panels[key], game, bases)
            if framing in INVERTED_FRAMINGS:
                ax.invert_yaxis()  # as the paper: told (1 - X), read against "similar"
                ax.set_ylabel("cooperation rate (axis inverted)")
            ax.set_title(" — ".join(p for p in (game if len(games) > 1 or len(keys) == 1 else "",
                                                framing if len(framings) > 1 else "") if p))
            legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncols=1)
        for ax in list(axes.flat)[len(keys):]:
            ax.set_visible(False)
        if len(keys) == 1:
            axes.flat[0].set_title(f"Cooperation over similarity — {e['game']}")
            name, what = "fig2_cooperation_over_similarity", "Cooperation rate over the similarity told"
        elif len(framings) > 1:
            name, what = "fig8_framing", "Cooperation rate over X per framing (dissimilar / different: Y inverted)"
            fig.suptitle(f"Cooperation over similarity by framing — {e['game']}", fontsize=8)
        else:
            name, what = "fig9_games", "Cooperation rate over the similarity told, one panel per game"
            fig.suptitle("Cooperation over similarity per game", fontsize=8)
        out.append(Drawn(f"similarity_{name}_exp{e['experiment']}",
                         f"{what}, per agent (± SE); the dotted line is b*; hollow squares: "
                         "Base (no similarity sentence)", fig))
    return out


def _grounded_curves(report: dict[str, Any]) -> list[Drawn]:
    table = report.get("similarity_table") or {}
    curves = table.get("curves") or {}
    if not curves:
        return []
    stars = table.get("b_star") or {}
    benches = list(curves)
    ncols = min(len(benches), 3)
    nrows = -(-len(benches) // ncols)
    order = sorted({name for bench in benches for name in curves[bench]})
    shared = len(order) > PANEL_LEGEND_MAX
    legend_rows = -(-(len(order) + 2) // _legend_columns(len(order) + 2)) if shared else 0
    fig, axes = figure(DOUBLE if ncols > 1 or shared else SINGLE,
                       2.2 * nrows + 0.6 + 0.13 * legend_rows, ncols=ncols, nrows=nrows,
                       sharey=True)
    for k, bench in enumerate(benches):
        ax = axes.flat[k]
        _curve_axes(ax, curves[bench], "told", stars.get(bench), prefix=f"{bench}|",
                    series_stars=(table.get("b_star_by_series") or {}).get(bench), order=order)
        ax.set_title(bench)
        if not shared:
            legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=6)
    for ax in list(axes.flat)[len(benches):]:
        ax.set_visible(False)
    if shared:
        _shared_legend(fig, [ax for ax in axes.flat if ax.get_visible()])
    fig.suptitle("Cooperation over the grounded similarity, per benchmark and method", fontsize=8)
    return [Drawn("similarity_fig3_cooperation_by_benchmark",
                  "Cooperation rate over the similarity told, per benchmark, agent and method "
                  "(± SE; dotted: b*, one line per game variant when they differ)", fig)]


PANEL_LEGEND_MAX = 8
"""Past this many series a legend under each panel swamps the plot (22 series collapsed
constrained layout): one legend for the whole figure, outside its panels, instead."""


def _shared_legend(fig: Any, axes: list[Any]) -> None:
    """One legend below every panel: each series (and each b*) once, in columns, so the
    panels keep their size whatever the number of series."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="outside lower center",
                   ncols=_legend_columns(len(entries)), fontsize=6, frameon=False)


def _legend_columns(entries: int) -> int:
    """Columns of a shared legend: at most 12 rows, at most 3 columns (7 in wide)."""
    return min(3, max(1, -(-entries // 12)))


def _matrix(title: str, agents: list[str], matrix: dict[str, dict[str, Any]], label: str,
            rows_label: str, cols_label: str) -> Any:
    """An agent x agent matrix as the section holds it (percent; missing cells blank)."""
    size = min(DOUBLE, max(SINGLE, 0.5 * len(agents) + 1.8))
    fig, axes = figure(size, size * 0.8)
    ax = axes[0][0]
    values = [[matrix.get(r, {}).get(c) for c in agents] for r in agents]
    heatmap(ax, values, agents, agents, vmin=0, vmax=100, label=label, fmt="{:.0f}", fig=fig)
    ax.set_ylabel(rows_label)
    ax.set_xlabel(cols_label)
    ax.set_title(title)
    return fig


def _matrices(report: dict[str, Any]) -> list[Drawn]:
    out = []
    for bench, block in (report.get("exogenous") or {}).items():
        matrix = block.get("matrix") or {}
        if not any(v is not None for row in matrix.values() for v in row.values()):
            continue
        agents = block.get("agents") or list(matrix)
        fig = _matrix(f"Exogenous similarity — {bench} ({block.get('metric')})", agents, matrix,
                      "similarity (%)", "agent", "agent")
        out.append(Drawn(f"similarity_fig4_exogenous_{slug(bench)}",
                         f"Exogenous similarity between agents on {bench}", fig))
    figure_of_view = {"decision": "fig11", "explanation": "fig12", "both": "fig4"}
    for bench, views in (report.get("endogenous") or {}).items():
        for view, block in views.items():
            matrix = block.get("matrix") or {}
            if not any(v is not None for row in matrix.values() for v in row.values()):
                continue
            agents = block.get("agents") or list(matrix)
            fig = _matrix(f"Endogenous similarity — {bench}, judge sees {view}", agents, matrix,
                          "similarity score (%)", "judge", "target")
            out.append(Drawn(
                f"similarity_{figure_of_view.get(view, 'fig4')}_endogenous_{slug(bench)}_{slug(view)}",
                f"Endogenous similarity on {bench}: judges (rows) scoring targets, view {view}", fig))
    return out


MATCHUP_FIGURES = (("explanations", "fig14"), ("decisions", "fig15"), ("both", "fig16"),
                   ("exogenous", "fig13"))
"""The paper's matchup figure of each source of scores (first match wins)."""


def _matchup_figure_number(label: str) -> str:
    return next((fig for word, fig in MATCHUP_FIGURES if word in label), "fig13")


def _matchups(report: dict[str, Any]) -> list[Drawn]:
    """The paper's Figures 13-16: per condition where different agents met, the expected
    payoffs of each seating as a matrix, the colour the row player's payoff, each cell
    written "row / column" (the ``expected`` section's matchups, seats symmetrised)."""
    from coop_tui.analysis.sections.expected import matchup_cells

    out = []
    for c in (report.get("expected") or {}).get("conditions") or []:
        found = matchup_cells(c)
        if found is None:
            continue
        agents, cells = found
        size = min(DOUBLE, max(SINGLE, 0.6 * len(agents) + 1.8))
        fig, axes = figure(size, size * 0.8)
        ax = axes[0][0]
        values = [[cells[(a, b)][0] if (a, b) in cells else None for b in agents] for a in agents]
        heatmap(ax, values, agents, agents, label="row player's expected payoff", fig=fig,
                fmt="{:.2f}")
        for text in list(ax.texts):  # the paper writes both payoffs in each cell
            text.remove()
        known = [v for row in values for v in row if v is not None]
        lo, hi = min(known), max(known)
        for i, a in enumerate(agents):
            for j, b in enumerate(agents):
                mine, theirs = cells.get((a, b), (None, None))
                dark = mine is None or hi <= lo or (mine - lo) / (hi - lo) < 0.5
                ax.text(j, i, "–" if mine is None else f"{mine:.2f} / {theirs:.2f}",
                        ha="center", va="center", fontsize=6,
                        color="white" if dark and mine is not None else "black",
                        gid=f"cell|{a}|{b}")
        ax.set_ylabel("row player")
        ax.set_xlabel("column player")
        ax.set_title(f"Matchup payoffs — {c['label']}")
        number = _matchup_figure_number(c["label"])
        out.append(Drawn(f"similarity_{number}_matchups_exp{c['experiment']}_{slug(c['label'])}",
                         f"Expected payoffs of each seating (row / column) under {c['label']}", fig))
    return out


TRAVELERS_CLAIMS = "similarity_fig9_travelers_claims"
"""The file of Figure 9's Traveler's Dilemma part: one per run, as the Base column of
the paper's figure comes from an experiment of its own."""


def _claim_panels(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The ``travelers_claims`` rows per panel: one agent (and setting, where the run
    varies one), its columns in the section's order (Base, X ascending, the rest)."""
    panels: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        name = row["agent"] + (f" ({row['setting']})" if row["setting"] else "")
        panels.setdefault(name, []).append(row)
    return panels


def _claim_columns(rows: list[dict[str, Any]]) -> list[str]:
    """Each column's tick: "Base", the X told (the axis says "%"), or the grounded source;
    the experiment added where two experiments told the same."""
    ticks = ["Base" if r["base"] else f"{r['similarity']:g}" if r["similarity"] is not None
             else r["told"] for r in rows]
    return [f"{t} (exp {r['experiment']})" if ticks.count(t) > 1 else t
            for t, r in zip(ticks, rows, strict=True)]


def _claim_bars(ax: Any, name: str, rows: list[dict[str, Any]], claims: list[str],
                colours: list[Any]) -> None:
    """One panel: a bar per column, stacked from the lowest claim (the equilibrium) up to
    the highest (cooperation), each segment the mean probability on that claim."""
    ticks = _claim_columns(rows)
    apart = rows[0]["base"] and len(rows) > 1
    xs = [k - 0.5 if apart and k == 0 else k for k in range(len(rows))]  # Base set apart
    bottoms = [0.0] * len(rows)
    for claim, shade in zip(claims, colours, strict=True):
        heights = [r["mean_prob"].get(claim) or 0.0 for r in rows]
        bars = ax.bar(xs, heights, bottom=bottoms, width=0.75, color=shade,
                      label=f"claim {claim}")
        for patch, tick in zip(bars.patches, ticks, strict=True):
            patch.set_gid(f"claim|{name}|{tick}|{claim}")
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    turned = len(rows) > 6 or any(len(t) > 4 for t in ticks)
    ax.set_xticks(xs, ticks, rotation=90 if turned else 0)
    if apart:
        ax.axvline(0.25, color="0.6", linewidth=0.6)  # as Fig 2 sets its Base point apart
    ax.set_xlim(xs[0] - 0.6, len(rows) - 0.4)
    ax.set_ylim(0, 1.0)
    ax.set_title(short(name, 48))
    ax.set_xlabel("similarity told (%)")
    ax.set_ylabel("probability of each claim")


def _no_claims() -> Any:
    """The figure of a similarity run without Traveler's Dilemma play: it says so."""
    fig, axes = figure(SINGLE, 1.2)
    ax = axes[0][0]
    ax.set_axis_off()
    ax.text(0.5, 0.5, "This run played no Traveler's Dilemma under similarity signals:\n"
            "no claim distribution to show.", ha="center", va="center",
            transform=ax.transAxes, gid="nothing_to_show")
    ax.set_title("Traveler's Dilemma claims (similarity signals Fig. 9)")
    return fig


def _travelers_claims(report: dict[str, Any]) -> list[Drawn]:
    """Figure 9's Traveler's Dilemma part: the claim distribution per agent over the
    similarity told, with its Base column (the ``travelers_claims`` section). A run that
    played the similarity mechanism without that game gets a figure saying so; any other
    run none."""
    value = report.get("travelers_claims")
    if not value:
        if not any(e.get("mechanism") == "similarity" for e in report.get("experiments") or []):
            return []
        return [Drawn(TRAVELERS_CLAIMS, "Traveler's Dilemma claim distribution: this run "
                      "played no Traveler's Dilemma under similarity signals", _no_claims())]
    from matplotlib import colormaps

    claims = value["claims"]
    shades = [colormaps["viridis"](k / max(len(claims) - 1, 1)) for k in range(len(claims))]
    panels = _claim_panels(value["rows"])
    ncols = min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    most = max(len(rows) for rows in panels.values())
    fig, axes = figure(DOUBLE if ncols > 1 or most > 6 else SINGLE, 2.2 * nrows + 0.5,
                       ncols=ncols, nrows=nrows, sharey=True)
    for k, (name, rows) in enumerate(panels.items()):
        _claim_bars(axes.flat[k], name, rows, claims, shades)
        if k % ncols:
            axes.flat[k].set_ylabel("")  # the row shares its axis
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], loc="outside right upper", fontsize=6, frameon=False)
    fig.suptitle("Traveler's Dilemma: the claim distribution over the similarity told", fontsize=8)
    return [Drawn(TRAVELERS_CLAIMS, "Traveler's Dilemma: mean probability each agent put on "
                  "each claim, per similarity told and for the Base control (no similarity "
                  "sentence); lowest claim (the equilibrium) at the bottom", fig)]


def draw(report: dict[str, Any]) -> list[Drawn]:
    return (_abstract_curves(report) + _travelers_claims(report) + _grounded_curves(report)
            + _matrices(report) + _matchups(report))


FAMILY = register(Family(key="similarity", title="The similarity signals paper: similarity", draw=draw, order=20))
