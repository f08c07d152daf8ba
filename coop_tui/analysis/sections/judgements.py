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


def rubric_names(spec_json: str | None) -> dict[str, str]:
    """Category id -> display name, in rubric order (bit order of ``present_mask``),
    from a judge run's stored spec."""
    try:
        rubric = json.loads(spec_json or "{}").get("rubric") or {}
        return {c["id"]: c.get("name") or c["id"] for c in rubric.get("categories") or []}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
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


def _bits(n: int, template: str) -> str:
    """One SQL expression per category bit: ``template`` with {bit} = the mask's bit i."""
    return ", ".join(template.format(bit=f"((j.present_mask >> {i}) & 1)") for i in range(n))


def _frequencies(db: Any, judged: str, by_run: dict[str, Any],
                 names: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Share of validly judged decisions showing each category, per judge × agent ×
    mechanism × game (one row per judgement read: the categories are bits of a mask)."""
    out = []
    for jrun, cats in names.items():
        rows = db.execute(
            f"""select d.agent, m.mechanism, m.game, count(*), {_bits(len(cats), "sum({bit})")}
                from judgements j join decisions d on d.id = j.judged_decision_id
                join matches m on m.id = d.match_id
                where j.judge_run_id = ? and j.judged_run_id = ? and j.valid = 1
                group by 1, 2, 3 order by 1, 2, 3""", [jrun, judged]).fetchall()
        for agent, mech, game, n, *present in rows:
            out.append({
                "judge": by_run[jrun]["judge"], "rubric": by_run[jrun]["rubric"],
                "judge_run": jrun, "agent": agent, "mechanism": mech, "game": game, "n": n,
                "categories": {name: (k or 0) / n for name, k in zip(cats.values(), present,
                                                                      strict=True)},
            })
    return out


def _cooperation(db: Any, judged: str, by_run: dict[str, Any],
                 names: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Cooperation of the judged decisions that show each category (and of all of them):
    mean stated cooperation mass and share of sampled cooperative actions."""
    out = []
    for jrun, cats in names.items():
        k = len(cats)
        row = db.execute(
            f"""select count(*), avg(d.coop_prob), avg(d.cooperated),
                       {_bits(k, "sum({bit})")},
                       {_bits(k, "avg(case when {bit} then d.coop_prob end)")},
                       {_bits(k, "avg(case when {bit} then d.cooperated end)")}
                from judgements j join decisions d on d.id = j.judged_decision_id
                where j.judge_run_id = ? and j.judged_run_id = ? and j.valid = 1""",
            [jrun, judged]).fetchone()
        head = {"judge": by_run[jrun]["judge"], "rubric": by_run[jrun]["rubric"], "judge_run": jrun}
        if not row[0]:
            continue
        out.append({**head, "category": None, "n": row[0], "coop_rate": row[1],
                    "sampled_coop_rate": row[2]})
        counts, coop, sampled = row[3:3 + k], row[3 + k:3 + 2 * k], row[3 + 2 * k:]
        found = [(name, counts[i], coop[i], sampled[i]) for i, name in enumerate(cats.values())
                 if counts[i]]
        for name, n, c, s in sorted(found, key=lambda f: (-f[1], f[0])):
            out.append({**head, "category": name, "n": n, "coop_rate": c, "sampled_coop_rate": s})
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
    (name and version, so the same category bits), on the decisions both judged validly."""
    out = []
    for a, b in combinations(judges, 2):
        if (a["rubric"], a["version"]) != (b["rubric"], b["version"]):
            continue
        cats = names[a["judge_run"]]
        k = len(cats)
        pair = ("((ja.present_mask >> {i}) & 1)", "((jb.present_mask >> {i}) & 1)")
        cells = ", ".join(
            f"sum({x} * {y}), sum({x} * (1 - {y})), sum((1 - {x}) * {y})"
            for x, y in ((pair[0].format(i=i), pair[1].format(i=i)) for i in range(k)))
        row = db.execute(
            f"""select count(*), {cells}
                from judgements ja join judgements jb
                  on jb.judge_run_id = ? and jb.judged_decision_id = ja.judged_decision_id
                where ja.judge_run_id = ? and ja.judged_run_id = ? and ja.valid = 1
                  and jb.valid = 1""",
            [b["judge_run"], a["judge_run"], judged]).fetchone()
        n = row[0]
        if not n:
            continue
        kappa, agreement = {}, {}
        for i, name in enumerate(cats.values()):
            both, only_a, only_b = row[1 + 3 * i:4 + 3 * i]
            neither = n - both - only_a - only_b
            kappa[name] = cohen_kappa(both, only_a, only_b, neither)
            agreement[name] = (both + neither) / n
        out.append({"rubric": a["rubric"], "judges": [a["judge"], b["judge"]],
                    "judge_runs": [a["judge_run"], b["judge_run"]], "n": n,
                    "kappa": kappa, "agreement": agreement})
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
