"""Report sections of an imported seed-003 trial table (``import strategic-personalities``).

``cooperation_by_model``: ``{model: {"mean": %, "sd": %, "n": trials, "ci": [lo, hi]}}``,
the paper's Supplementary Table 2 recipe: each trial's cooperation of the model itself
(derived at import from the pair's mean, joint cooperation and the two totals), over the
four prisoner's dilemma variants, baseline condition, 10 rounds, trials 1-5, the model
in seat 0; mean and sample sd over trials, t-interval (n − 1 degrees of freedom)
clipped to 0..100 as the public code clips it.

A run of our own that plays those games gets the same key, computed the same way from
its stored rounds (each agent's cooperation per match, in seat 0), so a user's models
can be set beside the 25 published ones.

``published_trials``: what the import holds and what it cannot give (no per-round
choices, so no reciprocity or endgame; no reasoning, so no fingerprints).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store

TABLE2_GAMES = ("pd_canonical", "pd_harsh", "pd_medium", "pd_mild")
SELECTION = {
    "games": list(TABLE2_GAMES), "condition": "baseline", "rounds": 10, "max_trial": 5,
    "seat": "the model in seat 0 (its own cooperation, not the pair's mean)",
    "interval": "t-interval over per-trial rates, n - 1 degrees of freedom, clipped to 0..100",
}


def _has_trials(store: Store, run_id: str) -> bool:
    if "sp_trials" not in store.db.table_names():
        return False
    return store.db.execute("select 1 from sp_trials where run_id = ? limit 1",
                            [run_id]).fetchone() is not None


def cooperation_by_model(store: Store, run_id: str) -> dict[str, Any]:
    """Supplementary Table 2 from the imported rows (SQL sums; one row per model)."""
    from coop_tui.analysis.intervals import t_quantile

    marks = ", ".join("?" * len(TABLE2_GAMES))
    rows = store.db.execute(
        f"""select model, count(*), sum(own_coop0), sum(own_coop0 * own_coop0)
            from sp_trials
            where run_id = ? and game in ({marks}) and condition = 'baseline'
              and rounds = 10 and trial <= 5 and seat0 = model and own_coop0 is not null
            group by model order by model""",
        [run_id, *TABLE2_GAMES],
    ).fetchall()
    out: dict[str, Any] = {}
    for model, n, total, squares in rows:
        mean = total / n
        sd = math.sqrt(max(squares - n * mean * mean, 0.0) / (n - 1)) if n > 1 else None
        half = t_quantile(n - 1) * sd / math.sqrt(n) if sd is not None else None
        out[model] = {
            "mean": round(100 * mean, 4), "sd": None if sd is None else round(100 * sd, 4),
            "n": n,
            "ci": None if half is None else [round(100 * max(0.0, mean - half), 4),
                                             round(100 * min(1.0, mean + half), 4)],
        }
    return out


def own_cooperation_by_model(store: Store, run_id: str) -> dict[str, Any]:
    """The same recipe on one of our runs, so its models can be set beside the published
    ones: each agent's own cooperation per match seat 0 over the four PD variants, no
    condition or ``baseline``, every horizon (the paper's table has 10 rounds)."""
    from coop_tui.analysis.intervals import t_interval
    from coop_tui.analysis.personality_profile import load_seat_runs

    rates: dict[str, list[float]] = {}
    for r in load_seat_runs(store.db, run_id):
        if r.seat == 0 and r.game in TABLE2_GAMES and r.condition in (None, "baseline"):
            rates.setdefault(r.agent, []).append(r.coop / r.rounds)
    out = {}
    for agent, values in sorted(rates.items()):
        t = t_interval(values)
        out[agent] = {
            "mean": round(100 * t["mean"], 4),
            "sd": None if t["sd"] is None else round(100 * t["sd"], 4), "n": t["n"],
            "ci": None if t["lo"] is None else [round(100 * max(0.0, t["lo"]), 4),
                                                round(100 * min(1.0, t["hi"]), 4)],
        }
    return out


def build_cooperation(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if _has_trials(store, run_id):
        return cooperation_by_model(store, run_id) or None
    games = {e.get("game") for e in report.get("experiments", []) if e.get("per_round")}
    if not games & set(TABLE2_GAMES):
        return None
    return own_cooperation_by_model(store, run_id) or None


def build_summary(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    if not _has_trials(store, run_id):
        return None
    db = store.db
    n, models, games, derived = db.execute(
        """select count(*), count(distinct model), count(distinct game), count(own_coop0)
           from sp_trials where run_id = ?""", [run_id]).fetchone()
    matchups = dict(db.execute(
        "select matchup, count(*) from sp_trials where run_id = ? group by matchup",
        [run_id]).fetchall())
    conditions = dict(db.execute(
        "select condition, count(*) from sp_trials where run_id = ? group by condition",
        [run_id]).fetchall())
    return {
        "trials": n, "models": models, "games": games, "matchups": matchups,
        "conditions": conditions, "own_cooperation_derived": derived,
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

    table = Table("model", "mean %", "sd", "N", "95% CI",
                  title="Cooperation by model (seed 003, Supplementary Table 2 recipe)")
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
    lines += [f"not in the table: {x}" for x in value["not_recoverable"]]
    return lines


register(Section(key="cooperation_by_model",
                 title="Cooperation by model (published trial table)",
                 build=build_cooperation, render=render_cooperation, order=55))
register(Section(key="published_trials", title="Seed 003 published trial table",
                 build=build_summary, render=render_summary, order=54))
