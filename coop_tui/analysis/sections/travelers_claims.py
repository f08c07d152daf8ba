"""Report section ``travelers_claims``: how each agent spread its claims in the Traveler's
Dilemma under similarity signals, per similarity told and for the Base control (the
similarity signals paper's Figure 9: "For the many-action Travelers dilemma, the action
distribution over claims 2-5 is presented").

A cooperation rate says only how much weight went on the highest claim; in a game with
four claims an agent that never cooperates may still undercut by one step or fall to
the equilibrium claim, and the paper reads exactly that difference ("GPT is now playing
the most defective action only 50% - 70% of the time"). So each row is one agent in one
condition with the mean probability its stated strategies put on every claim (and, in
the JSON, the share of sampled actions).

Built from the core report alone (each experiment's conditions and the mechanisms'
``action_frequencies``): no query of its own. Present only when the run played the
Traveler's Dilemma under the ``similarity`` mechanism.
"""

from __future__ import annotations

import json
from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.similarity_play import source_of

GAME = "travelers"
MECHANISM = "similarity"
BASE = "Base"
"""What the ``told`` column says for the Base control (prompt "base": no similarity sentence)."""
TOLD_KEYS = ("game", "similarity", "similarity_source", "similarity_label", "seat_similarity",
             "similarity_scores")
"""Condition fields that say which game and what figure was told: the rest tells series apart."""


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def claim_of(name: str) -> str:
    """The claim an action's name stands for ("Claim 2" -> "2"); the name itself when the
    game names its actions otherwise."""
    return name.removeprefix("Claim ").strip() or name


def _claim_order(claim: str) -> tuple[int, float, str]:
    try:
        return 0, float(claim), claim
    except ValueError:
        return 1, 0.0, claim


def is_base(condition: dict[str, Any]) -> bool:
    return condition.get("prompt") == "base"


def told(condition: dict[str, Any]) -> tuple[str, float | None]:
    """The similarity a condition told the agents, as a column label and (abstract X only)
    as a number: "Base", the X ("50%"), the grounded source, or the seats' figures."""
    if is_base(condition):
        return BASE, None
    source = source_of(condition)
    if source is not None:
        return source, None
    x = condition.get("similarity")
    if isinstance(x, int | float):
        return f"{float(x):g}%", float(x)
    seats = condition.get("seat_similarity") or condition.get("similarity_scores")
    return ("seats " + json.dumps(seats, sort_keys=True)) if seats is not None else "-", None


def _fields(condition: dict[str, Any]) -> dict[str, Any]:
    """What tells a row's series apart: the condition without its game and told figure, and
    without the Base control's prompt (the Base belongs beside the sweep it controls)."""
    return {k: v for k, v in condition.items()
            if k not in TOLD_KEYS and not (k == "prompt" and is_base(condition))}


def _varying(fields: list[dict[str, Any]], base: list[bool]) -> list[str]:
    """The fields that differ between rows (a Base row's missing prompt is no difference)."""
    keys = sorted({k for f in fields for k in f})
    out = []
    for k in keys:
        seen = {json.dumps(f.get(k), sort_keys=True) for f, b in zip(fields, base, strict=True)
                if not (k == "prompt" and b)}
        if len(seen) > 1:
            out.append(k)
    return out


def claim_distribution(report: dict[str, Any]) -> dict[str, Any] | None:
    """The section's value from a built core report; None when the run played no
    Traveler's Dilemma under similarity signals."""
    conditions = {(e["experiment"], c["condition_key"]): c["condition"]
                  for e in report.get("experiments") or [] for c in e.get("conditions") or []}
    rows: dict[tuple[int, str, str], dict[str, Any]] = {}
    for f in (report.get("mechanisms") or {}).get("action_frequencies") or []:
        if f.get("mechanism") != MECHANISM or f.get("game") != GAME:
            continue
        key = (f["experiment"], f["condition"], f["agent"])
        row = rows.setdefault(key, {"decisions": f["decisions"], "mean_prob": {}, "sampled": {}})
        claim = claim_of(str(f["name"]))
        row["mean_prob"][claim] = f["mean_prob"]
        row["sampled"][claim] = f["sampled"]
    if not rows:
        return None
    claims = sorted({c for r in rows.values() for c in r["mean_prob"]}, key=_claim_order)
    keys = sorted(rows)
    conds = [conditions.get((exp, ckey), {}) for exp, ckey, _agent in keys]
    fields = [_fields(c) for c in conds]
    varying = _varying(fields, [is_base(c) for c in conds])
    out = []
    for (exp, ckey, agent), cond, f in zip(keys, conds, fields, strict=True):
        label, x = told(cond)
        setting = " ".join(f"{k}={_number(f[k])}" for k in varying if k in f)
        out.append({"experiment": exp, "condition_key": ckey, "agent": agent, "told": label,
                    "similarity": x, "base": is_base(cond), "setting": setting, **rows[(exp, ckey, agent)]})
    out.sort(key=lambda r: (r["agent"], r["setting"], not r["base"], r["similarity"] is None,
                            r["similarity"] or 0.0, r["told"], r["experiment"]))
    return {"claims": claims, "rows": out}


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    return claim_distribution(report)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    settings = any(r["setting"] for r in value["rows"])
    table = Table("agent", *(["setting"] if settings else []), "told", "exp", "n",
                  *(f"claim {c}" for c in value["claims"]),
                  caption="mean stated probability of each claim; sampled shares in --json")
    for r in value["rows"]:
        table.add_row(r["agent"], *([r["setting"] or "-"] if settings else []), r["told"],
                      str(r["experiment"]), str(r["decisions"]),
                      *(_pct(r["mean_prob"].get(c)) for c in value["claims"]))
    return [table]


SECTION = register(Section(
    key="travelers_claims",
    title="Traveler's Dilemma claims under similarity signals (the similarity signals paper's Figure 9)",
    build=build, render=render, order=62,
))
