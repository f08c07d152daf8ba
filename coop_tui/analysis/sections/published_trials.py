"""Report sections ``cooperation_by_model`` (the strategic personalities paper's Supplementary Table 2) and
``published_trials`` (what an imported trial table holds).

``cooperation_by_model``: ``{model: {"mean": %, "sd": %, "n": trials, "ci": [lo, hi],
"ci_method": "normal-1.96", "ci_t": [lo, hi]}}``: each trial's cooperation of the model
itself over the four prisoner's dilemma variants, baseline condition, 10 rounds, every
trial number, the model in seat 0 (:func:`coop_tui.analysis.paper_tables.table2_trials`); mean and
sample sd over trials; ``ci`` is the normal interval the paper's bounds are (mean ± 1.96
sd/√n), ``ci_t`` the public code's t-interval. Both clipped to 0..100.

A run of our own that plays those games gets the same key, computed the same way from
its stored rounds, so a user's models can be set beside the 25 published ones.

``published_trials`` (imports only): what the import holds, what it set aside (fragments,
superseded re-run copies, models outside the paper) and what it cannot give, including the
trials the table itself lost: each fragment row is the tail of a trial row another row was
written over (:data:`coop_tui.analysis.paper_tables.LOST_ROWS_RULE`), so the paper's N can
exceed the table's and no selection of rows recovers it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from coop_tui.analysis import paper_tables
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store

TABLE2_GAMES = paper_tables.TABLE2_GAMES
SELECTION = {
    "games": list(TABLE2_GAMES), "condition": "baseline", "rounds": 10,
    "trials": paper_tables.TRIAL_RULE,
    "seat": "the model in seat 0 (its own cooperation, not the pair's mean)",
    "rows": "the last copy of a re-run trial; the paper's 25 models",
    "lost_rows": paper_tables.LOST_ROWS_RULE,
    "interval": paper_tables.INTERVAL_METHOD,
    "interval_t": paper_tables.T_INTERVAL_METHOD,
}


def build_cooperation(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.relevant(store, run_id, report):
        return None
    return paper_tables.table2(paper_tables.inputs(store, run_id)["table2_trials"]) or None


def build_summary(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not paper_tables.has_trials(store, run_id):
        return None
    db = store.db
    n, models, games, derived, superseded, outside, sentinels = db.execute(
        """select count(*), count(distinct model), count(distinct game), count(own_coop0),
                  count(superseded_by), sum(coalesce(in_paper, 1) = 0),
                  sum(trial not between ? and ?)
           from sp_trials where run_id = ?""", [*paper_tables.TRIAL_NUMBERS, run_id]).fetchone()
    test_numbers = [t for (t,) in db.execute(
        "select distinct trial from sp_trials where run_id = ? and trial not between ? and ? "
        "order by trial", [run_id, *paper_tables.TRIAL_NUMBERS])]
    spec = json.loads((store.run(run_id) or {}).get("spec") or "{}")
    fragments = spec.get("fragments_skipped", [])
    matchups = dict(db.execute(
        "select matchup, count(*) from sp_trials where run_id = ? group by matchup",
        [run_id]).fetchall())
    conditions = dict(db.execute(
        "select condition, count(*) from sp_trials where run_id = ? group by condition",
        [run_id]).fetchall())
    return {
        "trials": n, "models": models, "games": games, "matchups": matchups,
        "conditions": conditions, "own_cooperation_derived": derived,
        "fragments_skipped": fragments,
        "lost_trials": {"at_least": len(fragments),
                        "fragment_lines": [f["line"] for f in fragments],
                        "rule": paper_tables.LOST_ROWS_RULE},
        "duplicates_superseded": superseded,
        "rows_outside_paper": outside or 0,
        "test_trials": {"rows": sentinels or 0, "trial_numbers": test_numbers,
                        "rule": paper_tables.TRIAL_RULE},
        "models_outside_paper": spec.get("models_outside_paper", {}),
        "cooperation_by_model_selection": SELECTION,
        "not_recoverable": [
            "per-round choices (the table holds per-trial totals): no reciprocity, "
            "archetypes, per-round curves or endgame effects",
            "reasoning text: no fingerprints or lexical features",
            "own cooperation in asymmetric and n-player games (only the pair's mean)",
        ],
    }


def render_cooperation(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("model", "mean %", "sd", "N", "95% CI (normal)",
                  title="Cooperation by model (strategic personalities, Supplementary Table 2)")
    ranked = sorted(value.items(), key=lambda kv: -kv[1]["mean"])
    for model, v in ranked:
        ci = "" if v["ci"] is None else f"{v['ci'][0]:.1f} – {v['ci'][1]:.1f}"
        sd = "" if v["sd"] is None else f"{v['sd']:.1f}"
        table.add_row(model, f"{v['mean']:.1f}", sd, str(v["n"]), ci)
    return [table]


def render_summary(value: dict[str, Any]) -> list[Any]:
    lines = [
        f"{value['trials']} trials, {value['models']} models, {value['games']} games; "
        f"own cooperation derived for {value['own_cooperation_derived']} trials",
        "by design: " + ", ".join(f"{k} {v}" for k, v in sorted(value["matchups"].items())),
        "by condition: " + ", ".join(f"{k} {v}" for k, v in sorted(value["conditions"].items())),
    ]
    fragments = value.get("fragments_skipped") or []
    if fragments:
        lines.append(f"skipped {len(fragments)} fragment rows (tails of trial rows another row "
                     "was written over: at least that many trials are not in the table, and "
                     "the paper's N can count them), lines "
                     + ", ".join(str(f["line"]) for f in fragments))
    if value.get("duplicates_superseded"):
        lines.append(f"{value['duplicates_superseded']} re-run copies superseded by the last "
                     "copy (kept, left out of the paper's tables)")
    tests = value.get("test_trials") or {}
    if tests.get("rows"):
        lines.append(f"{tests['rows']} test trials (trial numbers "
                     + ", ".join(str(t) for t in tests["trial_numbers"])
                     + ") left out of the paper's tables: " + tests["rule"])
    if value.get("models_outside_paper"):
        lines.append("outside the paper's 25 models (kept, left out of its tables): "
                     + ", ".join(f"{m} ({n})" for m, n in value["models_outside_paper"].items()))
    lines += [f"not in the table: {x}" for x in value["not_recoverable"]]
    return lines


register(Section(key="cooperation_by_model",
                 title="Cooperation by model (strategic personalities, Supplementary Table 2)",
                 build=build_cooperation, render=render_cooperation, order=55))
register(Section(key="published_trials", title="Published trial table (strategic personalities)",
                 build=build_summary, render=render_summary, order=54))
