"""Judgements in the database: which judge decision judged which decision, with what labels.

A judgement is an ordinary stored decision (phase ``judge``, kind ``judgement``) of a
judge run; the tables of migration ``m070_judge_links`` link it to the judged decision
(``judgements``) and spread its answer into one row per category (``judgement_labels``:
confidence and whether it reaches the rubric's threshold). The engine writes the
decision; :func:`link` writes the rest in one transaction afterwards, so a kill between
the two leaves a decision that a rerun finds by its cache key (nothing is asked twice)
and then links.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

# the report section reads the same names; it sits below judging, so the reader lives there
from coop_tui.analysis.sections.judgements import rubric_names

if TYPE_CHECKING:
    from coop_tui.decisions import Decision
    from coop_tui.judging.rubric import Rubric
    from coop_tui.store import Store

JUDGE_KIND = "judge"
"""Run kind (and decision phase) of a judge pass."""

MAX_TEXT_CHARS = 24_000
"""A judged text longer than this is cut (head and tail kept, the cut said in the text)."""


def judged_text(response: str | None, reasoning: str | None) -> str:
    """What the judge reads: the provider's reasoning (if any), then the visible text."""
    parts = []
    if reasoning and reasoning.strip():
        parts.append("[private reasoning]\n" + reasoning.strip())
    if response and response.strip():
        parts.append(response.strip())
    text = "\n\n".join(parts)
    if len(text) > MAX_TEXT_CHARS:
        half = MAX_TEXT_CHARS // 2
        text = f"{text[:half]}\n[... {len(text) - MAX_TEXT_CHARS} characters left out ...]\n{text[-half:]}"
    return text


def context_line(match: dict[str, Any], row: dict[str, Any]) -> str:
    """One line of context for the judge: game, mechanism, condition, round and the answer
    the agent gave (its labels as the agent saw them)."""
    condition = json.loads(match.get("condition") or "{}")
    shown = ", ".join(f"{k}={v}" for k, v in sorted(condition.items())
                      if isinstance(v, str | int | float | bool))[:200]
    answer = row.get("answer") or row.get("parsed") or "none"
    return (f"game {match.get('game')}, mechanism {match.get('mechanism')}"
            f"{' (' + shown + ')' if shown else ''}, round {row.get('round')}, "
            f"{row.get('phase')} decision; the agent's final answer: {str(answer)[:300]}")


def link(
    store: Store, *, judge_run_id: str, judged_run_id: str, judged_decision_id: int,
    decision: Decision, judge: str, rubric: Rubric,
) -> int | None:
    """Write the link and labels of one judgement; the judge decision's row id."""
    judge_id = store.decision_id(decision.cache_key)
    parsed = decision.parsed if decision.valid and isinstance(decision.parsed, dict) else None
    mask = None if parsed is None else present_mask(rubric, parsed)
    with store.db.conn:
        store.db.conn.execute(
            "insert or replace into judgements (judge_run_id, judged_decision_id,"
            " judge_decision_id, judged_run_id, judge, rubric, rubric_version, rubric_digest,"
            " valid, created_at, present_mask) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [judge_run_id, judged_decision_id, judge_id, judged_run_id, judge, rubric.name,
             rubric.version, rubric.digest, int(parsed is not None), time.time(), mask],
        )
        if parsed is not None and judge_id is not None:
            store.db.conn.executemany(
                "insert or replace into judgement_labels (judge_decision_id, category,"
                " confidence, present) values (?, ?, ?, ?)",
                [(judge_id, cid, conf, int(present))
                 for cid, (conf, present) in rubric.present(parsed).items()],
            )
    return judge_id


def present_mask(rubric: Rubric, parsed: dict[str, Any]) -> int:
    """Bit i set when the rubric's i-th category is present (at most 60 bits): its
    confidence reaches the threshold, or (protocol ``coopeval``) the judge listed it."""
    present = rubric.present(parsed)
    return sum(1 << i for i, cid in enumerate(rubric.ids) if present.get(cid, (0.0, False))[1])


def judgements_of(store: Store, decision_id: int) -> list[dict[str, Any]]:
    """Every judgement of one decision (for the inspector): judge, rubric, validity and
    the labels with their confidence, category names from the judge run's rubric."""
    rows = store.db.execute(
        """select j.judge_run_id, j.judge, j.rubric, j.rubric_version, j.valid,
                  j.judge_decision_id, r.spec
           from judgements j left join runs r on r.id = j.judge_run_id
           where j.judged_decision_id = ? order by j.created_at""",
        [decision_id],
    ).fetchall()
    out = []
    for run_id, judge, rubric, version, valid, judge_decision, spec in rows:
        names = rubric_names(spec)
        labels = store.db.execute(
            "select category, confidence, present from judgement_labels"
            " where judge_decision_id = ? order by confidence desc, category",
            [judge_decision],
        ).fetchall()
        out.append({
            "judge_run": run_id, "judge": judge, "rubric": rubric, "version": version,
            "valid": bool(valid), "judge_decision": judge_decision,
            "labels": [{"category": names.get(c, c), "confidence": conf, "present": bool(p)}
                       for c, conf, p in labels],
        })
    return out


def judged_by(store: Store, judge_decision_id: int) -> int | None:
    """The decision a judge decision judged (the first, when one answer served several)."""
    row = store.db.execute(
        "select judged_decision_id from judgements where judge_decision_id = ? limit 1",
        [judge_decision_id],
    ).fetchone()
    return None if row is None else int(row[0])


__all__ = [
    "JUDGE_KIND",
    "context_line",
    "judged_by",
    "judged_text",
    "judgements_of",
    "link",
    "present_mask",
    "rubric_names",
]
