"""Talk phases in the report: per condition, cooperation, payoffs, the messages' length
and "said it would cooperate, then did".

A message counts as a promise to cooperate when a ``promises`` judgement found
``promise_cooperate`` in it (``coop-tui judge --rubric promises``), else by a fixed
phrase rule (:func:`promises_to_cooperate`), so an offline run gets the number without a
judge. A promise is kept when the sender's move of the same round was cooperative. The
conditions are those of every experiment with a talk cell, silent cells included, so the
table sets talk against no talk.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from coop_tui.talk import TALK_PHASE

if TYPE_CHECKING:
    from coop_tui.store import Store

_SUBJECT = r"(?:i|we)"
_FUTURE = r"(?:\s+will|'ll|\s+am going to|\s+are going to|\s+shall|\s+promise to|\s+plan to|\s+intend to)"
_ADVERB = r"(?:\s+(?:also|always|definitely|fully|still|again|surely))?"
_COOPERATE = (r"(?:cooperate|co-operate|contribute|collaborate|play fair|keep (?:my|our) promise|"
              r"choose (?:the )?cooperat\w*|pick (?:the )?cooperat\w*|share)")
PROMISE = re.compile(
    rf"\b{_SUBJECT}{_FUTURE}{_ADVERB}\s+{_COOPERATE}\b"
    rf"|\blet(?:'s| us)(?:\s+(?:all|both))?\s+{_COOPERATE}\b",
    re.IGNORECASE,
)
"""The phrase rule: a first-person statement that the sender will cooperate ("I will
cooperate", "we'll contribute", "I promise to cooperate") or a "let's cooperate" that
includes the sender. "I will not cooperate" does not match: the verb must follow."""

JUDGED_CATEGORY = "promise_cooperate"
RUBRIC = "promises"


def promises_to_cooperate(message: str) -> bool:
    """The offline rule: does the message say its sender will cooperate?"""
    return bool(PROMISE.search(message or ""))


def talk_conditions(store: Store, run_id: str) -> list[dict[str, Any]] | None:
    """One row per condition of the experiments that talk; None when nothing talked."""
    db = store.db
    experiments = [r[0] for r in db.execute(
        "select distinct m.experiment from decisions d join matches m on m.id = d.match_id "
        "where m.run_id = ? and d.phase = ?", [run_id, TALK_PHASE]).fetchall()]
    if not experiments:
        return None
    marks = ",".join("?" * len(experiments))
    matches = db.execute(
        f"select id, experiment, game, condition_key, condition, payoffs from matches "
        f"where run_id = ? and status = 'done' and experiment in ({marks}) order by id",
        [run_id, *experiments]).fetchall()
    groups: dict[tuple[int, str, str], dict[str, Any]] = {}
    of_match: dict[str, dict[str, Any]] = {}
    for mid, exp, game, ckey, condition, payoffs in matches:
        cond = json.loads(condition or "{}")
        row = groups.setdefault((exp, game, ckey or ""), _empty(exp, game, cond))
        row["matches"] += 1
        row["_payoffs"].extend(float(x) for x in json.loads(payoffs or "[]"))
        of_match[mid] = row
    _add_moves(store, run_id, of_match)
    _add_messages(store, run_id, of_match)
    order = {"none": 0, "public": 1, "private": 2}
    rows = sorted(groups.values(), key=lambda r: (r["experiment"], r["game"],
                                                  order.get(r["talk"], 3), r["talk"]))
    return [_finish(row) for row in rows]


def _empty(exp: int, game: str, cond: dict[str, Any]) -> dict[str, Any]:
    return {"experiment": exp, "game": game, "talk": cond.get("talk", "none"),
            "talk_turns": cond.get("talk_turns", 1) if "talk" in cond else None, "matches": 0, "_payoffs": [],
            "_moves": [], "messages": 0, "_chars": [], "promises": 0, "kept": 0,
            "judged": 0, "cut": 0}


def _add_moves(store: Store, run_id: str, of_match: dict[str, dict[str, Any]]) -> None:
    for mid, cooperated in store.db.execute(
        "select d.match_id, d.cooperated from decisions d join matches m on m.id = d.match_id "
        "where m.run_id = ? and d.phase = 'play' and d.cooperated is not null", [run_id]
    ).fetchall():
        if mid in of_match:
            of_match[mid]["_moves"].append(int(cooperated))


def _add_messages(store: Store, run_id: str, of_match: dict[str, dict[str, Any]]) -> None:
    """Each valid message: its length, whether it promised (judge first, else the rule),
    and whether the sender's move of that round then cooperated."""
    rows = store.db.execute(
        "select d.match_id, d.round, d.seat, d.parsed, d.normalisation, "
        " (select p.cooperated from decisions p where p.match_id = d.match_id "
        "  and p.round = d.round and p.seat = d.seat and p.phase = 'play' limit 1), "
        " (select max(l.present) from judgements j join judgement_labels l "
        "  on l.judge_decision_id = j.judge_decision_id where j.judged_decision_id = d.id "
        "  and j.rubric = ? and j.valid = 1 and l.category = ?) "
        "from decisions d join matches m on m.id = d.match_id "
        "where m.run_id = ? and d.phase = ? and d.valid = 1",
        [RUBRIC, JUDGED_CATEGORY, run_id, TALK_PHASE]).fetchall()
    for mid, _round, _seat, parsed, note, cooperated, judged in rows:
        row = of_match.get(mid)
        message = (json.loads(parsed or "{}") or {}).get("message") or ""
        if row is None or not message:
            continue
        row["messages"] += 1
        row["_chars"].append(len(message))
        row["cut"] += bool(note and "message cut" in note)
        promised = bool(judged) if judged is not None else promises_to_cooperate(message)
        row["judged"] += judged is not None
        if promised:
            row["promises"] += 1
            row["kept"] += bool(cooperated)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if not k.startswith("_")}
    out["cooperation"] = _mean(row["_moves"])
    out["payoff"] = _mean(row["_payoffs"])
    out["mean_chars"] = _mean(row["_chars"])
    out["max_chars"] = max(row["_chars"], default=None)
    out["kept_rate"] = row["kept"] / row["promises"] if row["promises"] else None
    out["promise_source"] = ("judge" if row["judged"] == row["messages"] and row["messages"]
                             else "rule" if not row["judged"] else "judge + rule")
    return out


__all__ = ["PROMISE", "promises_to_cooperate", "talk_conditions"]
