"""Are two runs really different? (``coop-tui compare RUN_A RUN_B``)

Two runs (replicates, a changed agent, an import beside our own run, runs in two
databases) are set side by side per shared condition: the mechanism, the matchup, the
condition (game and its parameters, similarity, framing, mechanism parameters: the
match's ``condition_key``) and the agent. For each, the cooperation rate and the mean
payoff of both runs, the difference B − A with a 95% interval and a two-sided p-value,
then every p-value corrected with Holm's step-down method over all tests of the pair.

The unit of analysis is the match, not the decision: the rounds of one repeated match
answer one another (a tit-for-tat echoes its co-player), so they are not independent
draws, and counting them as such would make tiny differences look certain.

- Repeated matches: one value per match and agent (its mean cooperation probability over
  its play decisions; its mean payoff over its seats), compared with Welch's t-test
  (unequal variances) and its interval.
- One-shot matches: every decision is its own draw, so the sampled actions are counts;
  cooperation is compared with Fisher's exact test on the 2 × 2 table of cooperated /
  did not, the interval is Newcombe's (from the two Wilson intervals). Payoffs use Welch.

SQL does the aggregation (per match and agent, through the match and decision indexes),
so a run of a million decisions yields a few thousand rows; numpy and scipy do the rest.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text
from scipy import stats as sps

from coop_tui.analysis.paper_tables import has_trials
from coop_tui.analysis.stats import wilson_interval
from coop_tui.errors import database_message, fail
from coop_tui.store import Store
from coop_tui.terminal import terminal_data, terminal_text

__all__ = ["ALPHA", "compare_cells", "compare_command", "compare_runs", "correct_rows", "holm",
           "open_run", "render_latex", "render_text", "run_cells", "welch", "fisher_counts"]

ALPHA = 0.05
"""The family-wise error rate Holm's correction holds the pair's tests to."""

_COOP_SQL = """
    select m.mechanism, m.matchup, m.game, m.condition_key, d.agent, d.match_id,
           count(*), sum(d.coop_prob), coalesce(sum(d.cooperated), 0), count(d.cooperated),
           max(d.round)
    from matches m indexed by idx_matches_run_id_status join decisions d on d.match_id = m.id
    where m.run_id = ? and m.status = 'done' and d.phase = 'play' and d.coop_prob is not null
    group by d.match_id, d.agent"""
"""Per match and agent: play decisions with a cooperation probability, their sum, the
sampled cooperative actions and how many were sampled, and the last round."""

_PAY_SQL = """
    select m.mechanism, m.matchup, m.game, m.condition_key, s.agent, s.match_id, count(*), sum(s.payoff)
    from matches m indexed by idx_matches_run_id_status
    join seats s indexed by idx_seats_payoff on s.match_id = m.id
    where m.run_id = ? and m.status = 'done' and s.payoff is not null
    group by s.match_id, s.agent"""
"""Per match and agent: its seats with a payoff and their sum. Both queries name the
(run, status) index: left to itself, SQLite may walk every match of the database in id
order to spare the GROUP BY a sort."""

_COND_SQL = """
    select mechanism, matchup, game, condition_key, min(condition), count(*)
    from matches where run_id = ? and status = 'done'
    group by mechanism, matchup, game, condition_key"""

Key = tuple[str | None, str | None, str | None, str, str]
"""(mechanism, matchup, game, condition key, agent): what makes two rows the same
condition. The game is there for imports, whose condition key may not name it."""


@dataclass
class _Cell:
    """One agent in one condition of one run: its per-match values."""

    coop: list[float] = field(default_factory=list)
    """Per match: the mean cooperation probability of the agent's play decisions."""
    decisions: int = 0
    sampled: int = 0
    cooperated: int = 0
    last_round: int = 0
    payoff: list[float] = field(default_factory=list)
    """Per match: the agent's mean payoff over its seats."""


def _cells(store: Store, run_id: str) -> tuple[dict[Key, _Cell], dict[tuple[Any, ...], str | None]]:
    """The run's per-match values by condition and agent, and each condition's game and
    condition fields."""
    db = store.db
    cells: dict[Key, _Cell] = {}
    for mech, matchup, game, ckey, agent, _mid, n, total, coop, sampled, last in db.execute(
            _COOP_SQL, [run_id]):
        cell = cells.setdefault((mech, matchup, game, ckey, agent), _Cell())
        cell.coop.append(total / n)
        cell.decisions += n
        cell.cooperated += coop
        cell.sampled += sampled
        cell.last_round = max(cell.last_round, last or 0)
    for mech, matchup, game, ckey, agent, _mid, n, total in db.execute(_PAY_SQL, [run_id]):
        cells.setdefault((mech, matchup, game, ckey, agent), _Cell()).payoff.append(total / n)
    conds = {(m, mu, g, c): cond for m, mu, g, c, cond, _n in db.execute(_COND_SQL, [run_id])}
    if has_trials(store, run_id):
        _trial_cells(store, run_id, cells, conds)
    return cells, conds


_TRIALS_SQL = """
    select game, condition, matchup, rounds, seat, agent, own_coop, payoff from (
        select line, game, condition, matchup, rounds, 0 as seat, seat0 as agent,
               own_coop0 as own_coop, payoff0 as payoff
        from sp_trials where run_id = ? and superseded_by is null
        union all
        select line, game, condition, matchup, rounds, 1, seat1, own_coop1, payoff1
        from sp_trials where run_id = ? and superseded_by is null)
    where agent is not null and rounds > 0
    order by line, seat"""
"""Both seats of every kept trial of an imported strategic personalities trial table."""


def _trial_cells(store: Store, run_id: str, cells: dict[Key, _Cell],
                 conds: dict[tuple[Any, ...], str | None]) -> None:
    """The strategic personalities paper's imported trials as per-match values: a trial is a
    match, a seat's own cooperation (derived for the two-player games, see the importer)
    its cooperation rate, its total over the rounds its payoff per round. The condition is
    the trial's game and prompt condition; repeated trials count as Repetition, one-round
    trials as one-shot (the own cooperation of one round is then a count)."""
    for game, condition, matchup, rounds, _seat, agent, coop, payoff in store.db.execute(
            _TRIALS_SQL, [run_id, run_id]):
        mech = "repetition" if rounds > 1 else "none"
        ckey = f"condition={condition} game={game}"
        cell = cells.setdefault((mech, matchup, game, ckey, agent), _Cell())
        conds.setdefault((mech, matchup, game, ckey), json.dumps({"condition": condition, "game": game}))
        if coop is not None:
            cell.coop.append(coop)
            cell.decisions += rounds
            cell.last_round = max(cell.last_round, rounds)
            if rounds == 1 and coop in (0, 1):
                cell.sampled += 1
                cell.cooperated += int(coop)
        if payoff is not None:
            cell.payoff.append(payoff / rounds)


# ------------------------------------------------------------------ statistics
def welch(a: list[float], b: list[float]) -> dict[str, Any]:
    """Welch's t-test of mean(b) − mean(a) with its 95% interval.

    With fewer than two values on a side there is no variance: no p-value, no interval.
    When neither side varies at all (every match of both runs alike, as with fixed
    strategies), the t statistic is 0 / 0 or d / 0: the p-value is its limit, 1 for
    equal means and 0 for different ones, and the interval is the difference itself."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out: dict[str, Any] = {"test": "welch", "difference": None, "ci": None, "p": None}
    if len(xa) == 0 or len(xb) == 0:
        return out
    # exact sums: the same values in another order give the same mean, so two runs alike
    # differ by 0, not by a rounding error printed as "-2.22e-16"
    diff = math.fsum(xb) / len(xb) - math.fsum(xa) / len(xa)
    out["difference"] = diff
    if len(xa) < 2 or len(xb) < 2:
        out["note"] = "fewer than 2 matches in a run: no variance to test with"
        return out
    va, vb = xa.var(ddof=1) / len(xa), xb.var(ddof=1) / len(xb)
    se = math.sqrt(va + vb)
    if se <= 1e-12 * max(1.0, abs(xa.mean()), abs(xb.mean())):
        out["ci"] = [diff, diff]
        out["p"] = 1.0 if abs(diff) <= 1e-12 else 0.0
        out["note"] = "no variation within either run"
        return out
    df = (va + vb) ** 2 / (va * va / (len(xa) - 1) + vb * vb / (len(xb) - 1))  # Welch-Satterthwaite
    half = float(sps.t.ppf(0.975, df)) * se
    out["ci"] = [diff - half, diff + half]
    out["p"] = float(2 * sps.t.sf(abs(diff) / se, df))
    return out


def fisher_counts(ka: int, na: int, kb: int, nb: int) -> dict[str, Any]:
    """Fisher's exact test of two proportions of counts (kb/nb − ka/na) with Newcombe's
    hybrid score interval, built from the two Wilson intervals."""
    out: dict[str, Any] = {"test": "fisher", "difference": None, "ci": None, "p": None}
    if na == 0 or nb == 0:
        return out
    pa, pb = ka / na, kb / nb
    la, ua = wilson_interval(ka, na)
    lb, ub = wilson_interval(kb, nb)
    diff = pb - pa
    out["difference"] = diff
    out["ci"] = [diff - math.hypot(pb - lb, ua - pa), diff + math.hypot(ub - pb, pa - la)]
    out["p"] = float(sps.fisher_exact([[ka, na - ka], [kb, nb - kb]])[1])
    return out


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None and is not counted): the i-th
    smallest of m is multiplied by m − i + 1, and each adjusted value is at least the one
    before it, so rejecting where adjusted p < α holds the family-wise error to α."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


# ------------------------------------------------------------------ the comparison
def _coop_side(cell: _Cell, one_shot: bool) -> dict[str, Any]:
    if one_shot:
        rate = cell.cooperated / cell.sampled if cell.sampled else None
        return {"rate": rate, "n": cell.sampled, "matches": len(cell.coop)}
    rate = float(np.mean(cell.coop)) if cell.coop else None
    return {"rate": rate, "n": len(cell.coop), "matches": len(cell.coop)}


def _cooperation(a: _Cell, b: _Cell) -> dict[str, Any] | None:
    """Cooperation of one agent in one condition of both runs, tested with the unit that
    fits: sampled actions of one-shot matches (Fisher), else matches (Welch)."""
    if not a.coop or not b.coop:
        return None
    one_shot = max(a.last_round, b.last_round) <= 1 and a.sampled > 0 and b.sampled > 0
    if one_shot:
        result = fisher_counts(a.cooperated, a.sampled, b.cooperated, b.sampled)
        unit = "decision"
    else:
        result = welch(a.coop, b.coop)
        unit = "match"
    return {"unit": unit, "a": _coop_side(a, one_shot), "b": _coop_side(b, one_shot), **result}


def _payoff(a: _Cell, b: _Cell) -> dict[str, Any] | None:
    if not a.payoff or not b.payoff:
        return None
    result = welch(a.payoff, b.payoff)
    return {"unit": "match",
            "a": {"mean": float(np.mean(a.payoff)), "n": len(a.payoff)},
            "b": {"mean": float(np.mean(b.payoff)), "n": len(b.payoff)}, **result}


def _describe(key: Key, conds: dict[tuple[Any, ...], str | None]) -> dict[str, Any]:
    mech, matchup, game, ckey, agent = key
    cjson = conds.get((mech, matchup, game, ckey))
    try:
        condition = json.loads(cjson) if cjson else {}
    except ValueError:
        condition = {}
    return {"mechanism": mech, "matchup": matchup, "condition_key": ckey, "game": game,
            "condition": condition, "agent": agent}


def _order(key: Key) -> tuple[str, ...]:
    return tuple("" if part is None else str(part) for part in key)


def compare_cells(a: _Cell, b: _Cell) -> dict[str, Any]:
    """B against A for one agent in one condition: the cooperation and payoff tests (each
    None when a side has no values), before Holm's correction."""
    return {"cooperation": _cooperation(a, b), "payoff": _payoff(a, b)}


def correct_rows(rows: list[dict[str, Any]]) -> int:
    """Holm's correction over every test of ``rows`` (their ``cooperation`` and ``payoff``),
    in place: each test gets ``p_holm`` and ``different``, each row ``different``. Returns
    the number of tests with a p-value (what the correction counted)."""
    tests = [row[m] for row in rows for m in ("cooperation", "payoff") if row[m] is not None]
    for test, adjusted in zip(tests, holm([t["p"] for t in tests]), strict=True):
        test["p_holm"] = adjusted
        test["different"] = adjusted is not None and adjusted < ALPHA
    for row in rows:
        row["different"] = any((row[m] or {}).get("different") for m in ("cooperation", "payoff"))
    return sum(1 for t in tests if t["p"] is not None)


def run_cells(store: Store, run_id: str) -> tuple[dict[Key, _Cell], dict[tuple[Any, ...], str | None]]:
    """The run's per-match values by (mechanism, matchup, game, condition key, agent), and
    each condition's JSON fields by the first four (what :func:`compare_runs` reads)."""
    return _cells(store, run_id)


def compare_runs(store_a: Store, run_a: str, store_b: Store, run_b: str) -> dict[str, Any]:
    """Run B against run A per shared condition and agent: rates, differences B − A,
    intervals, p-values and Holm-adjusted p-values (see the module's docstring)."""
    cells_a, conds_a = _cells(store_a, run_a)
    cells_b, conds_b = _cells(store_b, run_b)
    shared = sorted(set(cells_a) & set(cells_b), key=_order)
    rows = []
    for key in shared:
        row = _describe(key, conds_a)
        row.update(compare_cells(cells_a[key], cells_b[key]))
        rows.append(row)
    n_tests = correct_rows(rows)
    out: dict[str, Any] = {
        "runs": {"a": _run_info(store_a, run_a), "b": _run_info(store_b, run_b)},
        "alpha": ALPHA,
        "correction": "holm",
        "tests": n_tests,
        "shared": rows,
        "only_a": [_describe(k, conds_a) for k in sorted(set(cells_a) - set(cells_b), key=_order)],
        "only_b": [_describe(k, conds_b) for k in sorted(set(cells_b) - set(cells_a), key=_order)],
    }
    if not rows:
        out["note"] = "the runs share no condition (mechanism, matchup, game, condition and agent)"
    return out


def _run_info(store: Store, run_id: str) -> dict[str, Any]:
    run = store.run(run_id) or {}
    return {"id": run_id, "name": run.get("name"), "kind": run.get("kind")}


# ------------------------------------------------------------------ output
def _label(row: dict[str, Any]) -> str:
    """Mechanism, condition key (with the game in front where the key does not name it)
    and matchup."""
    parts = [row["mechanism"] or "-"]
    if row.get("game") and f"game={row['game']}" not in row["condition_key"]:
        parts.append(f"game={row['game']}")
    if row["condition_key"] != "-":
        parts.append(row["condition_key"])
    if row.get("matchup"):
        parts.append(f"matchup={row['matchup']}")
    return " ".join(parts)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _p(x: float | None) -> str:
    if x is None:
        return "-"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def _interval(ci: list[float] | None, pct: bool) -> str:
    if ci is None:
        return "-"
    show = _pct if pct else _num
    return f"[{show(ci[0])}, {show(ci[1])}]"


def _cells_of(test: dict[str, Any] | None, what: str) -> list[str]:
    """One test's columns: A (n), B (n), B − A, 95% interval, p, Holm p, mark."""
    if test is None:
        return ["-"] * 7
    pct = what == "cooperation"
    value = "rate" if pct else "mean"
    show = _pct if pct else _num
    return [
        f"{show(test['a'][value])} ({test['a']['n']})", f"{show(test['b'][value])} ({test['b']['n']})",
        show(test["difference"]), _interval(test["ci"], pct), _p(test["p"]), _p(test.get("p_holm")),
        "*" if test.get("different") else "",
    ]


def render_text(result: dict[str, Any]) -> Any:
    """The comparison as Rich tables (names already made safe by the caller)."""
    a, b = result["runs"]["a"], result["runs"]["b"]
    parts: list[Any] = [
        Text(f"A: run {a['id']}  {a['name'] or ''}", style="bold"),
        Text(f"B: run {b['id']}  {b['name'] or ''}", style="bold"),
    ]
    if result.get("note"):
        parts.append(Text(result["note"]))
    for what, title in (("cooperation", "cooperation rate"), ("payoff", "mean payoff")):
        rows = [r for r in result["shared"] if r[what] is not None]
        if not rows:
            continue
        table = Table(title=f"{title}: B − A per shared condition", title_justify="left")
        # the numbers keep their width; a long condition (a repeated game's parameters)
        # wraps instead of squeezing them to "…" in a narrow terminal or screen
        table.add_column("condition", overflow="fold", min_width=16)
        table.add_column("agent", no_wrap=True)
        table.add_column("test", no_wrap=True)
        for col in ("A (n)", "B (n)", "B − A", "95% interval", "p", "Holm p", ""):
            table.add_column(col, justify="right", no_wrap=True)
        for r in rows:
            table.add_row(_label(r), r["agent"], f"{r[what]['test']} / {r[what]['unit']}",
                          *_cells_of(r[what], what))
        table.caption = (f"* different after Holm's correction over {result['tests']} tests "
                         f"(adjusted p < {result['alpha']:g}); n: matches, or decisions for "
                         "one-shot cooperation")
        parts.append(table)
    for side in ("a", "b"):
        only = result[f"only_{side}"]
        if only:
            table = Table(title=f"only in run {side.upper()} ({len(only)})", title_justify="left")
            table.add_column("condition", no_wrap=True)
            table.add_column("agent", no_wrap=True)
            for r in only:
                table.add_row(_label(r), r["agent"])
            parts.append(table)
    return Group(*parts)


def _tex(text: Any) -> str:
    """Text escaped for LaTeX, control characters shown as escapes (names come from
    files anyone can write, and the output may go to a terminal)."""
    out = terminal_text(str(text), markup=False).replace("\\", "\x00")  # restored last
    for ch, rep in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"),
                    ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"),
                    ("^", r"\textasciicircum{}")):
        out = out.replace(ch, rep)
    return out.replace("\x00", r"\textbackslash{}")


def render_latex(result: dict[str, Any]) -> str:
    """A booktabs table per measure: condition, agent, A, B, B − A [95%], Holm p."""
    a, b = result["runs"]["a"], result["runs"]["b"]
    lines = [f"% coop-tui compare: A = run {_tex(a['id'])}, B = run {_tex(b['id'])}; "
             f"Holm over {result['tests']} tests"]
    if result.get("note"):
        lines.append(f"% {result['note']}")
    for what, title in (("cooperation", "Cooperation rate"), ("payoff", "Mean payoff")):
        rows = [r for r in result["shared"] if r[what] is not None]
        if not rows:
            continue
        pct = what == "cooperation"
        value = "rate" if pct else "mean"
        show = _pct if pct else _num
        lines += [r"\begin{table}[t]", r"\centering", f"\\caption{{{title}, run B against run A}}",
                  r"\begin{tabular}{llrrrr}", r"\toprule",
                  r"Condition & Agent & A & B & B $-$ A [95\%] & Holm $p$ \\", r"\midrule"]
        for r in rows:
            t = r[what]
            mark = "$^{*}$" if t.get("different") else ""
            lines.append(
                f"{_tex(_label(r))} & {_tex(r['agent'])} & {_tex(show(t['a'][value]))} & "
                f"{_tex(show(t['b'][value]))} & {_tex(show(t['difference']))} "
                f"{_tex(_interval(t['ci'], pct))} & {_tex(_p(t.get('p_holm')))}{mark} \\\\"
            )
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def strict_json(result: dict[str, Any]) -> str:
    """Deterministic JSON (sorted keys; rows already in a fixed order); non-finite numbers
    are null."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(result), indent=2, sort_keys=True, allow_nan=False)


def open_run(path: Path, ref: str | None, flag: str) -> tuple[Store, str] | int:
    """The store and the resolved run id, or the exit code of a message naming the fix."""
    if not path.exists():
        return fail(f"{flag}: no database at {path}; run a sweep first or pass {flag} PATH")
    try:  # each database is opened here, so a failure names its own flag and file
        store = Store(path)
        run = store.resolve_run(ref)
    except (sqlite3.Error, OSError) as exc:
        return fail(f"{flag}: {database_message(exc, path, flag=flag)}")
    if run is None:
        which = f"no run {ref!r}" if ref else "no runs"
        return fail(f"{flag}: {which} in {path}; `coop-tui list runs --db {path}` lists them")
    return store, run["id"]


def compare_databases(db_a: Path, ref_a: str | None, ref_b: str, *,
                      db_b: Path | None = None) -> dict[str, Any] | int:
    """The comparison of run ``ref_a`` of ``db_a`` with run ``ref_b`` of ``db_b`` (else
    of ``db_a``), or the exit code (2) after the message naming what is missing."""
    opened_a = open_run(db_a, ref_a, "--db")
    if isinstance(opened_a, int):
        return opened_a
    opened_b = open_run(db_b or db_a, ref_b, "--db-b" if db_b else "--db")
    if isinstance(opened_b, int):
        return opened_b
    return compare_runs(*opened_a, *opened_b)


def compare_command(db_a: Path, ref_a: str, ref_b: str, *, db_b: Path | None = None,
                    fmt: str = "text", print_text: Callable[[Any], None]) -> int:
    """``coop-tui compare``: exit 0 with the comparison (also when nothing is shared: the
    output says so), 2 for a missing database or run. ``print_text`` prints a Rich
    renderable whole (the report's printer; the CLI passes it, the report being a layer
    above this one)."""
    result = compare_databases(db_a, ref_a, ref_b, db_b=db_b)
    if isinstance(result, int):
        return result
    print_comparison(result, fmt, render_text, render_latex, print_text, found=bool(result["shared"]))
    return 0


def print_comparison(result: dict[str, Any], fmt: str, text: Callable[[dict[str, Any]], Any],
                     latex: Callable[[dict[str, Any]], str], print_text: Callable[[Any], None],
                     *, found: bool) -> None:
    """A comparison in its format (JSON, LaTeX, or text through the report's printer), and
    its note on stderr when it found nothing to compare."""
    if fmt == "json":
        print(strict_json(result))
    elif fmt == "latex":
        print(latex(result), end="")
    else:
        print_text(text(terminal_data(result)))
    if not found:
        print(f"coop-tui: {result['note']}", file=sys.stderr)
