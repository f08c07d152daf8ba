"""The strategic personalities paper's analyses of the trial table, for an imported table and for our own runs.

The paper reports, besides per-model cooperation (Supplementary Table 2), a provider-level
table (Supplementary Table 5), Cohen's h between models with a few named pairs (the widest
gap, 1.77; the drift within OpenAI, 1.32, and within Google, 1.13), the coefficient of
variation and range of each behavioural domain across the 25 models (coordination 0.06),
the fold difference between the most and least cooperative model (48-fold) and the
generational drift inside two provider families (OpenAI 50.3 → 1.5, Google 8.3 → 56.8).

Every one of them starts from two per-model inputs, read here once per report:

* :func:`table2_trials`: each model's own cooperation per trial in the Table 2 sample —
  the four prisoner's dilemmas, baseline condition, 10 rounds, every trial number the
  code gives (the public code's analysis reads every trial file it finds; trials 6 and 9
  count; the test trials numbered 997 and above do not, :data:`TRIAL_NUMBERS`), the model
  in seat 0, superseded re-run copies and models outside the paper left out. On our own runs
  the same games and seat, no condition or ``baseline``, any horizon.
* :func:`coordination_trials`: each model's coordination rate per trial in the six
  coordination games, as the public code scores them (``_coordination_metrics``: the share
  of rounds in which both players picked the same option), over every trial of the model
  in seat 0 whatever the condition or opponent, as its per-model aggregates are made. From
  the table it is 1 − 2·mean + 2·joint of the pair for the two-option games and, for the
  four-option focal point, which has no cooperation columns, the seat-0 total over the
  rounds on the game's matched / unmatched payoffs (10 / 0); on our runs it is read from
  the rounds' actions.

The strategic-depth domain (beauty contest guesses, centipede take nodes) needs per-round
numbers the table does not hold; it is listed as not available rather than guessed.
"""

from __future__ import annotations

import math
from statistics import fmean, stdev
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.intervals import t_quantile
from coop_tui.analysis.personality import provider_of
from coop_tui.analysis.personality_profile import TABLE2_GAMES, load_seat_runs, table2_sample

if TYPE_CHECKING:
    from coop_tui.store import Store

COORDINATION_2X2 = ("bos_standard", "bos_transposed", "matching_pennies",
                    "stag_hunt_standard", "stag_hunt_risky")
"""The strategic personalities paper's coordination games with two options: same option = both on the first or
both on the second, 1 − 2·mean + 2·joint from the table's pair columns."""
FOCAL_POINT = "focal_point"
"""The coordination game with four options: the table leaves its pair columns empty, but
a matched round pays each player 10 and any other 0, so the seat-0 total gives the rate."""
COORDINATION_GAMES = (*COORDINATION_2X2, FOCAL_POINT)
"""Every game of the public code's coordination category (its six)."""
COORDINATION_METHOD = (
    "per trial, the share of rounds in which both players chose the same option (the public "
    "code's coordination_rate), in its six coordination games (Battle of the Sexes both ways, "
    "both stag hunts, matching pennies, focal point); per model the mean over every trial "
    "with the model in seat 0, all conditions and opponents")
Z95 = 1.959963984540054
INTERVAL_METHOD = ("normal 95%: mean ± 1.96·sd/√n over per-trial rates, clipped to 0..100 "
                   "(the bounds of the paper's Supplementary Table 2)")
T_INTERVAL_METHOD = ("t-interval over per-trial rates, n − 1 degrees of freedom, clipped to "
                     "0..100 (the public code's compute_all_stats)")
CV_METHOD = "sample sd (n − 1) over the models' means divided by their mean"
GENERATIONS = {
    "openai": ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5-mini", "gpt-5-nano"),
    "google": ("gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-flash-thinking",
               "gemini-3-flash"),
}
"""The generation chains of the paper's text (Results, 'Cooperation shifts unpredictably
across model generations'), oldest first."""
FRONTIER_VS_BUDGET = {"anthropic": (("claude-haiku-4.5", "claude-haiku-4.5-thinking"),
                                    ("claude-sonnet-4.5", "claude-sonnet-4.6",
                                     "claude-opus-4.5", "claude-opus-4.6"))}
"""Anthropic's budget and frontier tiers (the paper's 30-point tier gap)."""
NOT_IN_TABLE = {
    "strategic_depth": "beauty contest guesses and centipede take nodes are per-round "
                       "numbers the trial table does not hold",
    "trust": "amounts sent in the trust games are not in the trial table",
}


def has_trials(store: Store, run_id: str) -> bool:
    """Is ``run_id`` an imported strategic personalities trial table?"""
    if "sp_trials" not in store.db.table_names():
        return False
    return store.db.execute("select 1 from sp_trials where run_id = ? limit 1",
                            [run_id]).fetchone() is not None


TRIAL_NUMBERS = (1, 20)
"""The trial numbers the public code gives: ``range(1, num_trials + 1)`` per cell, and 20
is the most trials any of its designs or conditions runs. The published table also holds
test trials numbered far outside that range (998 and 999, dated 2026-03-06; 997 to 9999,
8888, 7777, 6666, 5555); two of them pass Table 2's filters and would give Claude Haiku
4.5 and Haiku 4.5 Thinking one trial too many. Every paper table leaves them out."""
TRIAL_RULE = (f"trial numbers {TRIAL_NUMBERS[0]} to {TRIAL_NUMBERS[1]} (the public code "
              "numbers a cell's trials from 1, at most 20 in any design or condition); "
              "the test trials numbered 997 and above are left out")
LOST_ROWS_RULE = (
    "each fragment row is the tail of a trial row that another row was written over: the "
    "collection's processes appended to the table at the same time (its lock serialises "
    "the threads of one process only), and a row written over a longer one leaves that "
    "row's last cells (cost, flag, timestamp) on a line of their own. The trial it ended "
    "is not in the table, so no rule over the table's rows can count it; the public code's "
    "analysis counts its trial files, so the paper's N can exceed the table's. At least one "
    "trial is lost per fragment; a row written over a shorter one leaves no trace")
"""Why the fragment rows of the published table are lost trials, and what that means for
the paper's N (the collection's CSV lock is a ``threading.Lock`` in
``experiment/runner.py``, while runs of the same task list in separate processes are seen
in the table as cells played two or three times within the same minutes)."""
_PAPER_ROWS = ("superseded_by is null and coalesce(in_paper, 1) = 1 "
               f"and trial between {TRIAL_NUMBERS[0]} and {TRIAL_NUMBERS[1]}")


def table2_trials(store: Store, run_id: str) -> dict[str, list[float]]:
    """Each model's own cooperation (0..1) per trial of the Table 2 sample."""
    out: dict[str, list[float]] = {}
    if has_trials(store, run_id):
        marks = ", ".join("?" * len(TABLE2_GAMES))
        rows = store.db.execute(
            f"""select model, own_coop0 from sp_trials
                where run_id = ? and game in ({marks}) and condition = 'baseline'
                  and rounds = 10 and seat0 = model and own_coop0 is not null
                  and {_PAPER_ROWS}
                order by model, line""", [run_id, *TABLE2_GAMES]).fetchall()
        for model, value in rows:
            out.setdefault(model, []).append(value)
        return out
    for r in table2_sample(load_seat_runs(store.db, run_id)):
        out.setdefault(r.agent, []).append(r.coop / r.rounds)
    return dict(sorted(out.items()))


def coordination_trials(store: Store, run_id: str) -> dict[str, list[float]]:
    """Each model's coordination rate (0..1) per trial of the coordination games
    (:data:`COORDINATION_METHOD`)."""
    out: dict[str, list[float]] = {}
    if has_trials(store, run_id):
        matched, unmatched = _focal_payoffs()
        marks = ", ".join("?" * len(COORDINATION_2X2))
        rows = store.db.execute(
            f"""select model, case when game = ?
                                   then (payoff0 / rounds - ?) / ?
                                   else 1 - 2 * coop_mean + 2 * joint end
                from sp_trials
                where run_id = ? and {_PAPER_ROWS}
                  and ((game in ({marks}) and coop_mean is not null and joint is not null)
                       or (game = ? and payoff0 is not null and rounds > 0))
                order by model, line""",
            [FOCAL_POINT, unmatched, matched - unmatched, run_id, *COORDINATION_2X2,
             FOCAL_POINT]).fetchall()
    else:
        # the six games list the same options in the same order for both seats: the same
        # action index is the same option
        marks = ", ".join("?" * len(COORDINATION_GAMES))
        rows = store.db.execute(
            f"""select s.agent, avg(r0.action = r1.action)
                from matches m
                join seats s on s.match_id = m.id and s.seat = 0
                join rounds r0 on r0.match_id = m.id and r0.seat = 0
                join rounds r1 on r1.match_id = m.id and r1.seat = 1 and r1.round = r0.round
                where m.run_id = ? and m.status = 'done' and m.game in ({marks})
                  and r0.action is not null and r1.action is not null
                group by m.id order by s.agent, m.id""", [run_id, *COORDINATION_GAMES]).fetchall()
    for model, value in rows:
        out.setdefault(model, []).append(min(max(value, 0.0), 1.0))
    return out


def _focal_payoffs() -> tuple[float, float]:
    """Seat 0's payoff in a matched and an unmatched round of the focal point game, from
    our game of the same id (the public code's 10 and 0)."""
    from coop_tui.games import load_game

    payoffs = load_game(FOCAL_POINT).payoffs
    return float(payoffs[0, 0, 0]), float(payoffs[0, 1, 0])


def provider(model: str) -> str:
    return provider_of(model)


# ------------------------------------------------------------------ the analyses


def _pct(x: float) -> float:
    return round(100 * x, 4)


def table2(trials: dict[str, list[float]]) -> dict[str, Any]:
    """Supplementary Table 2: mean, sd, N and the 95% interval per model (percent)."""
    out = {}
    for model, values in trials.items():
        n = len(values)
        mean = fmean(values)
        sd = stdev(values) if n > 1 else None
        row: dict[str, Any] = {"mean": _pct(mean), "sd": None if sd is None else _pct(sd),
                               "n": n, "ci": None, "ci_t": None,
                               "ci_method": "normal-1.96"}
        if sd is not None:
            for key, q in (("ci", Z95), ("ci_t", t_quantile(n - 1))):
                half = q * sd / math.sqrt(n)
                row[key] = [_pct(max(0.0, mean - half)), _pct(min(1.0, mean + half))]
        out[model] = row
    return out


def means(trials: dict[str, list[float]]) -> dict[str, float]:
    return {m: fmean(v) for m, v in trials.items() if v}


def cohens_h(p1: float, p2: float) -> float:
    """2·asin√p1 − 2·asin√p2."""
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


def _cv(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = fmean(values)
    return stdev(values) / mean if mean else None


def provider_summary(coop: dict[str, float], coord: dict[str, float]) -> dict[str, Any]:
    """Supplementary Table 5: per provider, its models, cooperation mean and range (of the
    models' Table 2 means, percent) and the coordination CV across its models."""
    groups: dict[str, list[str]] = {}
    for model in coop:
        groups.setdefault(provider(model), []).append(model)
    out = {}
    for prov, models in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        rates = [coop[m] for m in models]
        coord_values = [coord[m] for m in models if m in coord]
        out[prov] = {
            "models": models, "n_models": len(models),
            "cooperation_mean": _pct(fmean(rates)),
            "cooperation_range": [_pct(min(rates)), _pct(max(rates))] if len(rates) > 1 else None,
            "coordination_cv": None if (cv := _cv(coord_values)) is None else round(cv, 4),
        }
    return out


def cohens_h_models(coop: dict[str, float]) -> dict[str, Any]:
    """Cohen's h between every pair of models, and the paper's named pairs."""
    names = sorted(coop, key=lambda m: -coop[m])
    matrix = [[round(cohens_h(coop[a], coop[b]), 4) for b in names] for a in names]
    pairs = []
    if len(names) >= 2:
        hi, lo = names[0], names[-1]
        pairs.append({"name": "most vs least cooperative", "models": [hi, lo],
                      "rates": [_pct(coop[hi]), _pct(coop[lo])],
                      "h": round(cohens_h(coop[hi], coop[lo]), 4), "paper": 1.77})
    for prov, chain in GENERATIONS.items():
        present = [m for m in chain if m in coop]
        if len(present) >= 2:
            first, last = present[0], present[-1]
            whole = (first, last) == (chain[0], chain[-1])
            pairs.append({"name": f"{prov} oldest vs newest", "models": [first, last],
                          "rates": [_pct(coop[first]), _pct(coop[last])],
                          "h": round(abs(cohens_h(coop[first], coop[last])), 4),
                          "paper": {"openai": 1.32, "google": 1.13}[prov] if whole else None})
    return {"models": names, "matrix": matrix, "pairs": pairs,
            "formula": "h = 2·asin√p_row − 2·asin√p_col of the Table 2 means"}


def domain_spread(domains: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Per domain: models, mean, sd, coefficient of variation and range across models."""
    out: dict[str, Any] = {}
    for domain, scores in domains.items():
        values = list(scores.values())
        if not values:
            continue
        lo = min(scores, key=scores.__getitem__)
        hi = max(scores, key=scores.__getitem__)
        out[domain] = {
            "models": len(values), "mean": round(fmean(values), 4),
            "sd": round(stdev(values), 4) if len(values) > 1 else None,
            "cv": None if (cv := _cv(values)) is None else round(cv, 4),
            "range": [round(scores[lo], 4), round(scores[hi], 4)], "lowest": lo, "highest": hi,
        }
    return out


FOLD_EXACT = "the exact rates divided (fold)"
FOLD_PRINTED = ("the rates rounded to one decimal as the paper prints them, then divided "
                "(fold_of_printed_rates): how the paper gets its 48-fold and 33-fold")


def _folds(a: float, b: float) -> dict[str, Any]:
    """``a`` over ``b`` (rates 0..1) twice: exact, and as the paper computes its folds, from
    the rates it prints (one decimal), which moves the result by up to a whole fold when the
    lower rate is small (71.5 / 1.5 = 47.7, the paper's 48)."""
    printed_a, printed_b = round(100 * a, 1), round(100 * b, 1)
    return {"fold": round(a / b, 4) if b > 0 else None,
            "fold_of_printed_rates": (round(printed_a / printed_b, 4) if printed_b > 0
                                      else None),
            "fold_methods": {"fold": FOLD_EXACT, "fold_of_printed_rates": FOLD_PRINTED}}


def fold_difference(coop: dict[str, float]) -> dict[str, Any] | None:
    """The most cooperative model's Table 2 rate over the least cooperative's."""
    if len(coop) < 2:
        return None
    hi = max(coop, key=coop.__getitem__)
    lo = min(coop, key=coop.__getitem__)
    return {"most": hi, "most_rate": _pct(coop[hi]), "least": lo, "least_rate": _pct(coop[lo]),
            **_folds(coop[hi], coop[lo]),
            "difference_pp": _pct(coop[hi] - coop[lo]),
            "cohens_h": round(cohens_h(coop[hi], coop[lo]), 4)}


def generational_drift(coop: dict[str, float]) -> dict[str, Any]:
    """Each provider chain of the paper, oldest first: the Table 2 rates, the change from
    oldest to newest (points), its fold and Cohen's h; Anthropic's budget-to-frontier gap."""
    out: dict[str, Any] = {}
    for prov, chain in GENERATIONS.items():
        present = [m for m in chain if m in coop]
        if len(present) < 2:
            continue
        first, last = coop[present[0]], coop[present[-1]]
        out[prov] = {
            "chain": [{"model": m, "rate": _pct(coop[m])} for m in present],
            "from": _pct(first), "to": _pct(last), "change_pp": _pct(last - first),
            **_folds(max(first, last), min(first, last)),
            "direction": "down" if last < first else "up",
            "cohens_h": round(cohens_h(last, first), 4),
            "monotonic": all(
                (coop[b] <= coop[a]) if last < first else (coop[b] >= coop[a])
                for a, b in zip(present, present[1:], strict=False)),
        }
    for prov, (budget, frontier) in FRONTIER_VS_BUDGET.items():
        b = [coop[m] for m in budget if m in coop]
        f = [coop[m] for m in frontier if m in coop]
        if b and f:
            out[f"{prov}_tiers"] = {
                "budget": {m: _pct(coop[m]) for m in budget if m in coop},
                "frontier": {m: _pct(coop[m]) for m in frontier if m in coop},
                "gap_pp": _pct(fmean(f) - fmean(b)),
                "frontier_range_pp": _pct(max(f) - min(f)),
            }
    return out


# ------------------------------------------------------------------ one read per report

_KEPT: dict[str, Any] = {}


def inputs(store: Store, run_id: str) -> dict[str, Any]:
    """The per-model inputs of every analysis above, read once per run and database state
    (five report sections use them)."""
    conn = store.db.conn
    version = conn.execute("pragma data_version").fetchone()[0]
    key = (run_id, version, conn.total_changes)
    if _KEPT.get("conn") is not conn or _KEPT.get("key") != key:
        coop_trials = table2_trials(store, run_id)
        coord_trials = coordination_trials(store, run_id) if coop_trials else {}
        _KEPT.update(conn=conn, key=key, value={
            "imported": has_trials(store, run_id),
            "table2_trials": coop_trials,
            "cooperation": means(coop_trials),
            "coordination": means(coord_trials),
        })
    return _KEPT["value"]


def forget() -> None:
    _KEPT.clear()


def relevant(store: Store, run_id: str, report: dict[str, Any]) -> bool:
    """Cheap test before any read: an imported table, or a run that played a Table 2 game
    round by round."""
    if has_trials(store, run_id):
        return True
    games = {g.strip() for e in report.get("experiments", []) if e.get("per_round")
             for g in str(e.get("game") or "").split(",")}  # "pd_canonical, pd_harsh"
    return bool(games & set(TABLE2_GAMES))
