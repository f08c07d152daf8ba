"""``coop-tui figures RUN_A --compare RUN_B``: the comparison of two runs as forest plots.

One figure per measure (cooperation, payoff): a row per shared condition and agent, the
difference B − A as a point with its 95% interval, a line at no difference, and the rows
different after Holm's correction drawn filled in the first colour of the palette, the
others hollow in grey. The numbers are :func:`coop_tui.analysis.compare.compare_runs`'s,
the same ``coop-tui compare --json`` prints. This module registers no family: it is drawn
only when ``--compare`` asks for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coop_tui.analysis.compare import compare_databases
from coop_tui.errors import fail
from coop_tui.figures import INSTALL_HINT, Drawn, save
from coop_tui.figures.style import DOUBLE, colour, figure, short

__all__ = ["comparison_command", "comparison_figures"]

_MEASURES = (("cooperation", "cooperation rate, B − A"), ("payoff", "mean payoff, B − A"))


def _plain(text: str) -> str:
    """Names as literal text: a ``$`` would start matplotlib's mathtext."""
    return text.replace("$", r"\$")


def _row_label(row: dict[str, Any]) -> str:
    """The agent, then the condition key (with the mechanism) cut to fit a tick label."""
    condition = f"{row['mechanism'] or '-'} {row['condition_key']}"
    return _plain(f"{short(row['agent'], 24)} · {short(condition, 48)}")


def _run(run: dict[str, Any]) -> str:
    return f"{run['name']} ({run['id']})" if run["name"] else run["id"]


def comparison_figures(result: dict[str, Any]) -> list[Drawn]:
    """The forest plots of a comparison; none for a pair that shares no condition."""
    out = []
    for what, axis in _MEASURES:
        rows = [r for r in result["shared"]
                if r[what] is not None and r[what]["difference"] is not None]
        if not rows:
            continue
        fig, axes = figure(DOUBLE, 0.6 + 0.22 * len(rows))
        ax = axes[0][0]
        for y, row in enumerate(reversed(rows)):
            test = row[what]
            lo, hi = test["ci"] if test["ci"] is not None else (test["difference"],) * 2
            marked = bool(test.get("different"))
            ink = colour(0) if marked else "0.45"
            ax.plot([lo, hi], [y, y], color=ink, linewidth=1.3)
            ax.plot([test["difference"]], [y], marker="o", color=ink,
                    markerfacecolor=ink if marked else "white")
        ax.axvline(0.0, color="0.2", linewidth=0.8, linestyle=":")
        ax.set_yticks(range(len(rows)), [_row_label(r) for r in reversed(rows)])
        ax.set_xlabel(f"{axis} (95% interval); filled: different after Holm over "
                      f"{result['tests']} tests")
        a, b = result["runs"]["a"], result["runs"]["b"]
        ax.set_title(_plain(f"A = {_run(a)}, B = {_run(b)}"))
        out.append(Drawn(f"compare_{what}",
                         f"{axis} per shared condition and agent, with 95% intervals", fig))
    return out


def comparison_command(db_a: Path, ref_a: str | None, ref_b: str, *, db_b: Path | None,
                       out: Path, fmt: str) -> int:
    """Draw the comparison of two runs into ``out``; exit 2 for a missing database, run or
    matplotlib, 0 otherwise (a pair with nothing shared draws nothing and says so)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return fail(INSTALL_HINT)
    result = compare_databases(db_a, ref_a, ref_b, db_b=db_b)
    if isinstance(result, int):
        return result
    drawn = comparison_figures(result)
    if not drawn:
        runs = result["runs"]
        print(f"runs {runs['a']['id']} and {runs['b']['id']}: {result['note']}; nothing to draw")
        return 0
    written = save(drawn, out, fmt)
    for path in written:
        print(path)
    print(f"{len(written)} comparison figure(s) in {out}")
    return 0
