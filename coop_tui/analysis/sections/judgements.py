"""Report section ``judgements``: what reasoning judges found in a run's decisions.

For each judge pass over the run (``coop-tui judge``): how often each rubric category is
present, by agent × mechanism × game; the cooperation rate of the decisions given each
category (stated cooperation mass and sampled action); and, for two judges that used the
same rubric on the same decisions, Cohen's kappa per category, so a cheap judge can be
checked against an expensive one. Opened on a judge run, the section shows its judged
run. Everything is SQL over the ``judgements`` / ``judgement_labels`` indexes; a run
without judgements costs one indexed lookup.
"""

from __future__ import annotations

import json
from itertools import combinations
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store


def _judged_run(store: Store, run_id: str) -> str | None:
    """The run whose judgements to show: itself, or the run a judge run judged."""
    if "judgements" not in store.db.table_names():
        return None
    if store.db.execute("select 1 from judgements where judged_run_id = ? limit 1",
                        [run_id]).fetchone():
        return run_id
    row = store.db.execute("select spec from runs where id = ? and kind = 'judge'",
                           [run_id]).fetchone()
    if row is None:
        return None
    judged = json.loads(row[0] or "{}").get("judge_of_run")
    return judged if isinstance(judged, str) else None


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    from coop_tui.judging.links import rubric_names

    judged = _judged_run(store, run_id)
    if judged is None:
        return None
    db = store.db
    passes = db.execute(
        """select j.judge_run_id, j.judge, j.rubric, j.rubric_version, count(*),
                  sum(j.valid), r.spec
           from judgements j join runs r on r.id = j.judge_run_id
           where j.judged_run_id = ? group by j.judge_run_id order by r.created_at""",
        [judged],
    ).fetchall()
    if not passes:
        return None
    judges, names = [], {}
    for jrun, judge, rubric, version, n, valid, spec in passes:
        names[jrun] = rubric_names(spec)
        judges.append({"judge_run": jrun, "judge": judge, "rubric": rubric, "version": version,
                       "judged": n, "valid": valid or 0, "invalid": n - (valid or 0)})
    by_run = {j["judge_run"]: j for j in judges}
    return {
        "judged_run": judged,
        "judges": judges,
        "frequencies": _frequencies(db, judged, by_run, names),
        "cooperation_given_category": _cooperation(db, judged, by_run, names),
        "agreement": _agreement(db, judged, judges, names),
    }


def _frequencies(db: Any, judged: str, by_run: dict[str, Any],
                 names: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Share of validly judged decisions showing each category, per judge × agent ×
    mechanism × game."""
    totals = db.execute(
        """select j.judge_run_id, d.agent, m.mechanism, m.game, count(*)
           from judgements j join decisions d on d.id = j.judged_decision_id
           join matches m on m.id = d.match_id
           where j.judged_run_id = ? and j.valid = 1
           group by 1, 2, 3, 4""", [judged]).fetchall()
    present = db.execute(
        """select j.judge_run_id, d.agent, m.mechanism, m.game, l.category, sum(l.present),
                  avg(l.confidence)
           from judgements j join decisions d on d.id = j.judged_decision_id
           join matches m on m.id = d.match_id
           join judgement_labels l on l.judge_decision_id = j.judge_decision_id
           where j.judged_run_id = ? and j.valid = 1
           group by 1, 2, 3, 4, 5""", [judged]).fetchall()
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for jrun, agent, mech, game, n in totals:
        rows[(jrun, agent, mech, game)] = {
            "judge": by_run[jrun]["judge"], "rubric": by_run[jrun]["rubric"],
            "judge_run": jrun, "agent": agent, "mechanism": mech, "game": game, "n": n,
            "categories": {name: 0.0 for name in names[jrun].values()},
            "mean_confidence": {},
        }
    for jrun, agent, mech, game, cat, k, conf in present:
        row = rows[(jrun, agent, mech, game)]
        name = names[jrun].get(cat, cat)
        row["categories"][name] = (k or 0) / row["n"]
        row["mean_confidence"][name] = conf
    return list(rows.values())


def _cooperation(db: Any, judged: str, by_run: dict[str, Any],
                 names: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Cooperation of the judged decisions that show each category (and of all of them):
    mean stated cooperation mass and share of sampled cooperative actions."""
    out = []
    base = db.execute(
        """select j.judge_run_id, count(*), avg(d.coop_prob), avg(d.cooperated)
           from judgements j join decisions d on d.id = j.judged_decision_id
           where j.judged_run_id = ? and j.valid = 1 group by 1""", [judged]).fetchall()
    for jrun, n, coop, sampled in base:
        out.append({"judge": by_run[jrun]["judge"], "rubric": by_run[jrun]["rubric"],
                    "judge_run": jrun, "category": None, "n": n, "coop_rate": coop,
                    "sampled_coop_rate": sampled})
    rows = db.execute(
        """select j.judge_run_id, l.category, count(*), avg(d.coop_prob), avg(d.cooperated)
           from judgements j join decisions d on d.id = j.judged_decision_id
           join judgement_labels l on l.judge_decision_id = j.judge_decision_id
           where j.judged_run_id = ? and j.valid = 1 and l.present = 1
           group by 1, 2 order by 1, 3 desc, 2""", [judged]).fetchall()
    for jrun, cat, n, coop, sampled in rows:
        out.append({"judge": by_run[jrun]["judge"], "rubric": by_run[jrun]["rubric"],
                    "judge_run": jrun, "category": names[jrun].get(cat, cat), "n": n,
                    "coop_rate": coop, "sampled_coop_rate": sampled})
    return out


def cohen_kappa(both: int, only_a: int, only_b: int, neither: int) -> float | None:
    """Cohen's kappa of two raters on a yes/no label from their 2×2 table; None when
    chance agreement is total (both raters constant and equal: kappa is undefined)."""
    n = both + only_a + only_b + neither
    if n == 0:
        return None
    observed = (both + neither) / n
    a_yes, b_yes = (both + only_a) / n, (both + only_b) / n
    chance = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def _agreement(db: Any, judged: str, judges: list[dict[str, Any]],
               names: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Cohen's kappa per category for every pair of judge passes with the same rubric
    (name and version), on the decisions both judged validly."""
    out = []
    for a, b in combinations(judges, 2):
        if (a["rubric"], a["version"]) != (b["rubric"], b["version"]):
            continue
        rows = db.execute(
            """select la.category, sum(la.present * lb.present),
                      sum(la.present * (1 - lb.present)), sum((1 - la.present) * lb.present),
                      sum((1 - la.present) * (1 - lb.present))
               from judgements ja join judgements jb
                 on jb.judged_decision_id = ja.judged_decision_id and jb.judge_run_id = ?
               join judgement_labels la on la.judge_decision_id = ja.judge_decision_id
               join judgement_labels lb on lb.judge_decision_id = jb.judge_decision_id
                                       and lb.category = la.category
               where ja.judge_run_id = ? and ja.judged_run_id = ? and ja.valid = 1
                 and jb.valid = 1
               group by la.category""",
            [b["judge_run"], a["judge_run"], judged]).fetchall()
        if not rows:
            continue
        n = sum(rows[0][1:])
        label = names[a["judge_run"]]
        out.append({
            "rubric": a["rubric"], "judges": [a["judge"], b["judge"]],
            "judge_runs": [a["judge_run"], b["judge_run"]], "n": n,
            "kappa": {label.get(cat, cat): cohen_kappa(*counts) for cat, *counts in rows},
            "agreement": {label.get(cat, cat): (counts[0] + counts[3]) / n
                          for cat, *counts in rows},
        })
    return out


# ----------------------------------------------------------------- rendering
def _heat(x: float) -> str:
    """A background from dark to bright green as the frequency grows."""
    level = max(0, min(5, int(round(x * 5))))
    return ["", "on #1c3d1c", "on #245224", "on #2e6b2e", "on #3a873a", "on #48a548"][level]


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for judge in value["judges"]:
        jrun = judge["judge_run"]
        rows = [r for r in value["frequencies"] if r["judge_run"] == jrun]
        title = (f"{judge['rubric']} v{judge['version']} by {judge['judge']}: "
                 f"{judge['valid']} judged, {judge['invalid']} invalid — share of decisions per category")
        table = Table(title=title, title_justify="left")
        table.add_column("category")
        for r in rows:
            table.add_column(f"{r['agent']}\n{r['mechanism']} · {r['game']}\nn={r['n']}",
                             justify="right")
        categories = list(rows[0]["categories"]) if rows else []
        for cat in categories:
            cells = [Text(f"{100 * r['categories'].get(cat, 0.0):.0f}%",
                          style=_heat(r["categories"].get(cat, 0.0))) for r in rows]
            table.add_row(cat, *cells)
        out.append(table)
        coop = [r for r in value["cooperation_given_category"] if r["judge_run"] == jrun]
        if coop:
            ctab = Table(title=f"cooperation given category ({judge['judge']})", title_justify="left")
            for col in ("category", "n", "coop", "sampled"):
                ctab.add_column(col, justify="left" if col == "category" else "right")
            for r in coop:
                ctab.add_row(r["category"] or "(all judged)", str(r["n"]), _pct(r["coop_rate"]),
                             _pct(r["sampled_coop_rate"]))
            out.append(ctab)
    for agreement in value["agreement"]:
        a, b = agreement["judges"]
        ktab = Table(title=f"agreement {a} vs {b} ({agreement['rubric']}, n={agreement['n']})",
                     title_justify="left")
        for col in ("category", "kappa", "agreement"):
            ktab.add_column(col, justify="left" if col == "category" else "right")
        for cat, kappa in agreement["kappa"].items():
            ktab.add_row(cat, "-" if kappa is None else f"{kappa:.3f}",
                         _pct(agreement["agreement"][cat]))
        out.append(ktab)
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


SECTION = register(Section(
    key="judgements", title="Reasoning judgements", build=build, render=render, order=80,
))
