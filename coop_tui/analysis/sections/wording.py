"""Report section ``wording``: each metric per wording, the difference and its interval, and
how much of the spread between conditions the wording makes.

Language models answer differently to different words, so a run that plays the same
games in two wordings (``wording = ["ours", "source"]`` or a folder of paraphrases) asks
how much the wording alone moves cooperation. Per condition (the other keys held fixed)
each wording is compared with the first (ours) exactly as ``coop-tui compare RUN --by
wording`` does; per agent and mechanism one line says what share of the variance of
cooperation between conditions the wording explains, beside the spread the other keys
make (:func:`coop_tui.analysis.compare_by.spread_by` defines both).

The section is written for any condition key (:func:`axis_section`); the report registers
it for ``wording``. It is there only when the run plays two or more wordings; for any
other run it has nothing to say and is left out (text, JSON, LaTeX and CSV alike).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store

_MEASURES = (("cooperation", "cooperation rate"), ("payoff", "mean payoff"))


def _mentions(store: Store, run_id: str, key: str) -> bool:
    """Whether any condition of the run names the key (one walk of the run's condition
    keys in their index): a key left at its default is not written, so a run that never
    sets it is ruled out without reading a decision."""
    rows = store.db.execute(
        "select distinct condition_key from matches where run_id = ?", [run_id]).fetchall()
    prefix = f"{key}="
    return any(part.startswith(prefix) for (ckey,) in rows for part in str(ckey).split(" "))


def build_axis(store: Store, run_id: str, key: str) -> dict[str, Any] | None:
    """The section's value for ``key``: the comparison of each value with the first, and
    the spread lines; None when the run does not vary the key."""
    if not _mentions(store, run_id, key):
        return None
    from coop_tui.analysis.compare import run_cells
    from coop_tui.analysis.compare_by import KeyNotVaried, compare_by, spread_by

    loaded = run_cells(store, run_id)  # read once for both
    try:
        comparison = compare_by(store, run_id, key, against="first", loaded=loaded)
    except KeyNotVaried:
        return None
    return {"key": key, "values": comparison["values"], "comparison": comparison,
            "spread": spread_by(store, run_id, key, loaded=loaded)}


def spread_line(key: str, entry: dict[str, Any]) -> str:
    """One agent and mechanism: the key's share of the spread, in plain words."""
    who = " · ".join(str(x) for x in (entry["agent"], entry["mechanism"], entry["matchup"]) if x)
    n = entry["conditions"]
    if entry["share"] is None:
        return f"{who}: cooperation is the same in all {n} conditions; nothing to share out"
    if entry["rests"] == 1:
        return (f"{who}: {key} is the only key varied, so all of the spread between its {n} "
                f"conditions is due to it ({entry['key_points']:.1f} points)")
    text = (f"{who}: {key} accounts for {100 * entry['share']:.0f}% of the variance of cooperation "
            f"between its {n} conditions ({100 * entry['main_share']:.0f}% by itself, the rest by "
            "changing how the other keys act)")
    if entry["key_points"] is not None:
        text += f"; it moves cooperation by {entry['key_points']:.1f} points within a condition"
    if entry["other_points"] is not None:
        text += f", the other keys by {entry['other_points']:.1f} points"
    return text


def render_axis(value: dict[str, Any]) -> list[Any]:
    from coop_tui.analysis.compare_by import measure_table

    comparison = value["comparison"]
    parts: list[Any] = [f"{value['key']}: {', '.join(value['values'])}; each against {comparison['base']}"]
    for what, title in _MEASURES:
        table = measure_table(comparison, what, title)
        if table is not None:
            parts.append(table)
    parts += [spread_line(value["key"], e) for e in value["spread"]]
    return parts


def latex_axis(value: dict[str, Any]) -> str:
    """The section as booktabs tables (per measure) and a tabular of the spread lines."""
    from coop_tui.analysis.compare import _tex
    from coop_tui.analysis.compare_by import latex_rows

    key = _tex(value["key"])
    comparison = value["comparison"]
    lines = [f"% {key}: {_tex(', '.join(value['values']))}; each against "
             f"{_tex(comparison['base'])}; Holm over {comparison['tests']} tests"]
    for what, title in (("cooperation", "Cooperation rate"), ("payoff", "Mean payoff")):
        lines += latex_rows(comparison, what, title, f"per {key}")
    if value["spread"]:
        lines += [r"\begin{table}[t]", r"\centering",
                  f"\\caption{{Share of the variance of cooperation between conditions due to {key}}}",
                  r"\begin{tabular}{lrrrrr}", r"\toprule",
                  f"Agent & Conditions & Share & Alone & {key} (points) & Other keys (points) \\\\",
                  r"\midrule"]
        for e in value["spread"]:
            who = " · ".join(str(x) for x in (e["agent"], e["mechanism"], e["matchup"]) if x)
            share, alone = (_share(e["share"]), _share(e["main_share"]))
            lines.append(f"{_tex(who)} & {e['conditions']} & {share} & {alone} & {_points(e['key_points'])} & "
                         f"{_points(e['other_points'])} \\\\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}\\%"


def _points(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def csv_axis(value: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for ``report --format csv``: one per condition, measure and pair of values
    (``table`` = the key), one per agent and mechanism for the spread (``<key>_spread``)."""
    key = value["key"]
    rows: list[dict[str, Any]] = []
    for r in value["comparison"]["rows"]:
        for what, _title in _MEASURES:
            t = r[what]
            if t is None:
                continue
            side = "rate" if what == "cooperation" else "mean"
            ci = t["ci"] or [None, None]
            rows.append({"table": key, "mechanism": r["mechanism"], "metric": what, "agent": r["agent"],
                         "condition": r["condition_key"], "matchup": r["matchup"],
                         "value_of_a": r["a"], "value_of_b": r["b"],
                         "a": t["a"][side], "b": t["b"][side], "n_a": t["a"]["n"], "n_b": t["b"]["n"],
                         "value": t["difference"], "low": ci[0], "high": ci[1],
                         "p": t["p"], "p_holm": t.get("p_holm"), "test": t["test"]})
    for e in value["spread"]:
        rows.append({"table": f"{key}_spread", "mechanism": e["mechanism"], "agent": e["agent"],
                     "matchup": e["matchup"], "metric": "share of the variance of cooperation",
                     "value": e["share"], "main_share": e["main_share"], "n": e["conditions"], "key_points": e["key_points"],
                     "other_points": e["other_points"]})
    return rows


def axis_section(key: str, *, order: int) -> Section:
    """A report section for one condition key (not registered: the caller decides)."""
    return Section(key=key, title=f"Per {key}: differences and the share of the spread",
                   build=lambda store, run_id, _report: build_axis(store, run_id, key),
                   render=render_axis, order=order, latex=latex_axis, csv=csv_axis)


SECTION = register(axis_section("wording", order=30))
