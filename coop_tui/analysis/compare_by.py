"""The values of one condition key within one run (``coop-tui compare RUN --by KEY``).

A sweep that lists several values of a field (``similarity = [20, 80]``, ``framing =
["similar", "different"]``, ``wording = ["ours", "mine/"]``) stores each value in the
match's condition. ``compare RUN_A RUN_B`` asks whether two runs differ; this asks
whether the values of one key differ *inside* one run, with the same statistics: the
other keys of the condition (and the mechanism, matchup and agent) are held fixed, and
for each such rest every pair of values of the key (or each value against ``--base``)
is compared exactly as two runs are (:func:`coop_tui.analysis.compare.compare_cells`:
Welch on per-match values for repeated play, Fisher's exact test and Newcombe's interval
on sampled actions for one-shot play), then Holm's correction over every test made.

A key that a condition leaves out stands for its default where one is known: a match
played in our own wording stores no ``wording`` (so runs before the field keep their
conditions), and a match without a framing condition stores no ``condition``. Comparing
"ours" with "source" therefore works although only one of them is written down.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from coop_tui.analysis.compare import (
    ALPHA,
    _cells_of,
    _interval,
    _label,
    _num,
    _p,
    _pct,
    _run_info,
    _tex,
    compare_cells,
    correct_rows,
    open_run,
    print_comparison,
    run_cells,
)
from coop_tui.errors import fail
from coop_tui.protocols import DEFAULT_KEY
from coop_tui.store import Store, condition_key
from coop_tui.talk import DEFAULT_TALK_CHARS

__all__ = ["DEFAULTS", "KeyNotVaried", "Loaded", "compare_by", "compare_by_command", "key_values", "render_latex", "render_text",
           "shown", "spread_by", "varied_keys"]

DEFAULTS: dict[str, Any] = {"wording": "ours", "condition": "baseline", "answer": "mixed",
                            "prompt_protocol": DEFAULT_KEY, "style_message": "system",
                            "talk": "none", "talk_turns": 1, "talk_chars": DEFAULT_TALK_CHARS}
"""What a condition that leaves a key out played under: the keys whose default is not
stored (``sweep._game_condition``), so that runs made before the key existed keep their
conditions."""

PART_OF: dict[str, tuple[str, ...]] = {"talk": ("talk_turns", "talk_chars")}
"""Keys that only describe a value of another key: a silent cell has no message bound,
so comparing by ``talk`` leaves the bounds out of the rest (else a talk cell with its
own bound would never meet its silent twin)."""

_MEASURES = (("cooperation", "cooperation rate"), ("payoff", "mean payoff"))

Loaded = tuple[dict[Any, Any], dict[tuple[Any, ...], str | None]]
"""A run's cells and condition fields, as :func:`coop_tui.analysis.compare.run_cells` reads
them once for both :func:`compare_by` and :func:`spread_by`."""


class KeyNotVaried(ValueError):
    """``--by KEY`` for a key the run holds at one value (or never sets)."""

    def __init__(self, key: str, varied: list[str]) -> None:
        self.key, self.varied = key, varied
        super().__init__(key)


def shown(value: Any) -> str:
    """A condition value as a person reads it: 80 for 80.0, JSON for lists and tables."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _value_of(condition: dict[str, Any], key: str) -> Any:
    return condition.get(key, DEFAULTS.get(key))


def _ident(value: Any) -> str:
    """A value's identity (lists and tables compared by content, 80 and 80.0 alike)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True)


def _sort_key(value: Any, key: str) -> tuple[Any, ...]:
    """The default first (our wording before the others), then numbers in order, then
    the rest by their text."""
    if key in DEFAULTS and value == DEFAULTS[key]:
        return (0, 0, "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, float(value), "")
    return (2, 0, shown(value))


def _conditions(conds: dict[tuple[Any, ...], str | None]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {}
    for where, text in conds.items():
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            parsed = {}
        out[where] = parsed if isinstance(parsed, dict) else {}
    return out


def varied_keys(conditions: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The condition keys that take two or more values across ``conditions`` (a key left
    out counts as its default, or as not set), each with its values in display order."""
    names = sorted({k for c in conditions for k in c})
    out = {}
    for name in names:
        values = {_ident(_value_of(c, name)): _value_of(c, name) for c in conditions}
        if len(values) > 1:
            out[name] = sorted(values.values(), key=lambda v, n=name: _sort_key(v, n))
    return out


def key_values(store: Store, run_id: str) -> dict[str, list[Any]]:
    """The keys a run varies and their values (see :func:`varied_keys`)."""
    return varied_keys(list(_conditions(run_cells(store, run_id)[1]).values()))


def _pairs(values: list[Any], base: Any, against: str) -> list[tuple[Any, Any]]:
    if against == "all":
        return [(a, b) for i, a in enumerate(values) for b in values[i + 1:]]
    return [(base, v) for v in values if _ident(v) != _ident(base)]


def _groups(cells: dict[Any, Any], parsed: dict[tuple[Any, ...], dict[str, Any]],
            key: str) -> dict[str, dict[str, Any]]:
    """Every cell grouped by its rest (what stays of the condition, the mechanism, matchup,
    game and agent when ``key`` is taken out), each group's cells by the key's value."""
    groups: dict[str, dict[str, Any]] = {}
    for (mech, matchup, game, ckey, agent), cell in cells.items():
        condition = parsed.get((mech, matchup, game, ckey), {})
        rest = {k: v for k, v in condition.items() if k != key and k not in PART_OF.get(key, ())}
        where = {"mechanism": None if key == "mechanism" else mech, "matchup": matchup,
                 "game": None if key == "game" else game, "agent": agent}
        ident = json.dumps([where, rest], sort_keys=True, default=str)
        group = groups.setdefault(ident, {**where, "rest": rest, "by_value": {}})
        group["by_value"][_ident(_value_of(condition, key))] = cell
    return groups


def spread_by(store: Store, run_id: str, key: str, *, loaded: Loaded | None = None) -> list[dict[str, Any]]:
    """How much of the spread of cooperation between conditions is due to ``key``: one
    entry per agent, mechanism and matchup (the other keys, the game included, vary
    inside it).

    Over the conditions c of the entry (one per combination of the key's value v and the
    rest r, the other keys), y_c is the cooperation rate (the mean over matches of the
    mean cooperation probability), ȳ their mean, ȳ_r the mean over the key's values
    at rest r and ȳ_v the mean over the rests at value v. With T = Σ_c (y_c − ȳ)²:

    - ``share`` = 1 − Σ_c (ȳ_r(c) − ȳ)² / T: the part of the between-condition variance
      the other keys alone do not explain. It is what the key adds, by itself or by
      changing how the other keys act (in a full grid, its main effect plus its
      interaction with the rest); 1 when the key is the only one varied.
    - ``main_share`` = Σ_c (ȳ_v(c) − ȳ)² / T: its main effect alone (eta squared).

    Both are None when the conditions do not differ (T = 0). Beside them, in points:
    ``key_points``, the key's own spread (highest minus lowest value) averaged over the
    rests that have two values, and ``other_points``, the spread the other keys make
    (highest minus lowest rest) averaged over the key's values."""
    cells, conds = loaded or run_cells(store, run_id)
    out: dict[str, dict[str, Any]] = {}
    for group in _groups(cells, _conditions(conds), key).values():
        rates = {v: math.fsum(c.coop) / len(c.coop) for v, c in group["by_value"].items() if c.coop}
        if not rates:
            continue
        ident = json.dumps([group["agent"], group["mechanism"], group["matchup"]], default=str)
        entry = out.setdefault(ident, {"agent": group["agent"], "mechanism": group["mechanism"],
                                       "matchup": group["matchup"], "rests": []})
        entry["rests"].append(rates)
    return [_spread(entry) for _ident_, entry in sorted(out.items())]


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _spread(entry: dict[str, Any]) -> dict[str, Any]:
    rests: list[dict[str, float]] = entry.pop("rests")
    ys = [(i, v, y) for i, rates in enumerate(rests) for v, y in rates.items()]
    grand = _mean([y for _i, _v, y in ys])
    by_value: dict[str, list[float]] = {}
    for _i, v, y in ys:
        by_value.setdefault(v, []).append(y)
    value_means = {v: _mean(vals) for v, vals in by_value.items()}
    rest_means = [_mean(list(rates.values())) for rates in rests]
    total = math.fsum((y - grand) ** 2 for _i, _v, y in ys)
    by_rest = math.fsum((rest_means[i] - grand) ** 2 for i, _v, _y in ys)
    main = math.fsum((value_means[v] - grand) ** 2 for _i, v, _y in ys)
    spans = [max(r.values()) - min(r.values()) for r in rests if len(r) > 1]
    other = [max(vals) - min(vals) for vals in by_value.values() if len(vals) > 1]
    varies = total > 1e-12
    return {**entry, "conditions": len(ys), "rests": len(rests), "values": len(by_value),
            "share": max(0.0, 1 - by_rest / total) if varies else None,
            "main_share": main / total if varies else None,
            "key_points": 100 * _mean(spans) if spans else None,
            "other_points": 100 * _mean(other) if other else None}


def compare_by(store: Store, run_id: str, key: str, *, base: str | None = None,
               against: str = "all", loaded: Loaded | None = None) -> dict[str, Any]:
    """Every pair of values of ``key`` (``against = "all"``), or each value against the
    first (``"first"``) or against ``base`` (its text as shown), per rest of the
    condition and agent: rates, differences B − A, intervals and Holm-adjusted p-values.

    :class:`KeyNotVaried` when the run holds ``key`` at one value; ``ValueError`` naming
    the values when ``base`` is none of them. ``loaded``: the run's cells as
    :func:`coop_tui.analysis.compare.run_cells` read them (read here when not given)."""
    cells, conds = loaded or run_cells(store, run_id)
    parsed = _conditions(conds)
    varied = varied_keys(list(parsed.values()))
    if key not in varied:
        raise KeyNotVaried(key, list(varied))
    values = varied[key]
    if base is not None:
        found = [v for v in values if shown(v) == base]
        if not found:
            raise ValueError(f"--base: {key} takes the values {', '.join(shown(v) for v in values)} "
                             f"in this run, not {base!r}; give one of them")
        against, base_value = "base", found[0]
    else:
        base_value = values[0]
    groups = _groups(cells, parsed, key)
    rows, alone = [], 0
    for ident in sorted(groups):
        group = groups[ident]
        found = [(a, b) for a, b in _pairs(values, base_value, against)
                 if _ident(a) in group["by_value"] and _ident(b) in group["by_value"]]
        if not found:
            alone += 1
        for a, b in found:
            rows.append({
                "mechanism": group["mechanism"], "matchup": group["matchup"], "game": group["game"],
                "agent": group["agent"], "condition": group["rest"],
                "condition_key": condition_key(group["rest"]),
                "a": shown(a), "b": shown(b), "a_value": a, "b_value": b,
                **compare_cells(group["by_value"][_ident(a)], group["by_value"][_ident(b)]),
            })
    out: dict[str, Any] = {
        "run": _run_info(store, run_id), "by": key, "values": [shown(v) for v in values],
        "against": against, "base": shown(base_value) if against != "all" else None,
        "alpha": ALPHA, "correction": "holm", "tests": correct_rows(rows), "rows": rows,
        "unpaired": alone,
        "varied": list(varied),
    }
    if not rows:
        out["note"] = (f"no two values of {key} share the rest of a condition (mechanism, "
                       "matchup, agent and the other keys): nothing to compare")
    return out


# ------------------------------------------------------------------ output
def measure_table(result: dict[str, Any], what: str, title: str) -> Table | None:
    """One measure's rows as a Rich table: the rest of the condition, the agent, the two
    values of the key, then A, B, B − A, its interval, p and Holm p."""
    rows = [r for r in result["rows"] if r[what] is not None]
    if not rows:
        return None
    key = result["by"]
    table = Table(title=f"{title}: {key} B − A per condition", title_justify="left")
    table.add_column("condition", overflow="fold", min_width=16)
    table.add_column("agent", no_wrap=True)
    table.add_column(f"{key} A", no_wrap=True)
    table.add_column(f"{key} B", no_wrap=True)
    table.add_column("test", no_wrap=True)
    for col in ("A (n)", "B (n)", "B − A", "95% interval", "p", "Holm p", ""):
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(_label(r), r["agent"], r["a"], r["b"], f"{r[what]['test']} / {r[what]['unit']}",
                      *_cells_of(r[what], what))
    table.caption = (f"* different after Holm's correction over {result['tests']} tests "
                     f"(adjusted p < {result['alpha']:g}); n: matches, or decisions for "
                     "one-shot cooperation")
    return table


def render_text(result: dict[str, Any]) -> Any:
    """The comparison as Rich tables (names already made safe by the caller)."""
    run = result["run"]
    pairs = ("every pair of values" if result["against"] == "all"
             else f"each value against {result['base']}")
    parts: list[Any] = [
        Text(f"run {run['id']}  {run['name'] or ''}", style="bold"),
        Text(f"by {result['by']}: {', '.join(result['values'])} ({pairs})"),
    ]
    if result.get("note"):
        parts.append(Text(result["note"]))
    for what, title in _MEASURES:
        table = measure_table(result, what, title)
        if table is not None:
            parts.append(table)
    return Group(*parts)


def latex_rows(result: dict[str, Any], what: str, title: str, caption: str) -> list[str]:
    """One measure as a booktabs table (no lines when the measure has no row)."""
    rows = [r for r in result["rows"] if r[what] is not None]
    if not rows:
        return []
    pct = what == "cooperation"
    value = "rate" if pct else "mean"
    show = _pct if pct else _num
    key = _tex(result["by"])
    lines = [r"\begin{table}[t]", r"\centering", f"\\caption{{{title}, {caption}}}",
             r"\begin{tabular}{llllrrrr}", r"\toprule",
             f"Condition & Agent & {key} A & {key} B & A & B & B $-$ A [95\\%] & Holm $p$ \\\\",
             r"\midrule"]
    for r in rows:
        t = r[what]
        mark = "$^{*}$" if t.get("different") else ""
        lines.append(
            f"{_tex(_label(r))} & {_tex(r['agent'])} & {_tex(r['a'])} & {_tex(r['b'])} & "
            f"{_tex(show(t['a'][value]))} & {_tex(show(t['b'][value]))} & "
            f"{_tex(show(t['difference']))} {_tex(_interval(t['ci'], pct))} & "
            f"{_tex(_p(t.get('p_holm')))}{mark} \\\\")
    return [*lines, r"\bottomrule", r"\end{tabular}", r"\end{table}"]


def render_latex(result: dict[str, Any]) -> str:
    """A booktabs table per measure: condition, agent, the two values, A, B, B − A [95%],
    Holm p."""
    lines = [f"% coop-tui compare: run {_tex(result['run']['id'])} by {_tex(result['by'])}; "
             f"Holm over {result['tests']} tests"]
    if result.get("note"):
        lines.append(f"% {_tex(result['note'])}")
    for what, title in (("cooperation", "Cooperation rate"), ("payoff", "Mean payoff")):
        lines += latex_rows(result, what, title, f"by {_tex(result['by'])}")
    return "\n".join(lines) + "\n"


def compare_by_command(db: Path, ref: str | None, key: str, *, base: str | None = None,
                       fmt: str = "text", print_text: Callable[[Any], None]) -> int:
    """``coop-tui compare RUN --by KEY``: exit 0 with the comparison, 2 (after one message
    naming the fix) for a missing database or run, a key the run does not vary or a
    ``--base`` that is none of its values."""
    opened = open_run(db, ref, "--db")
    if isinstance(opened, int):
        return opened
    store, run_id = opened
    try:
        result = compare_by(store, run_id, key, base=base)
    except KeyNotVaried as exc:
        varies = (f"it varies {', '.join(exc.varied)}" if exc.varied
                  else "it varies no condition key (every match has the same condition)")
        return fail(f"--by {key}: run {run_id} does not vary {key}; {varies}")
    except ValueError as exc:
        return fail(str(exc))
    print_comparison(result, fmt, render_text, render_latex, print_text, found=bool(result["rows"]))
    return 0
