"""The decision row codec: how a :class:`~coop_tui.decisions.Decision` becomes a row of the
``decisions`` table and back, and the answer rule every write path checks first.

Kept apart from the queries (:mod:`coop_tui.store.decisions`) and the event writer
(:mod:`coop_tui.store.writer`) because three kinds of writer share it: the engine's
events, a re-ask, and the importers, which build rows with :func:`decision_row` and insert
them with :func:`insert_decisions` inside their own transaction.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from coop_tui.decisions import Attempt, Decision
from coop_tui.events import DirectDecisions


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


class AnswerRuleError(ValueError):
    """A decision with answer text that is neither parsed nor invalid with its reason: the
    store refuses to write it (a valid decision must carry what was read from its answer,
    an invalid one why it is invalid). Raised by every decision write path, so no writer
    (the engine, a re-ask, an importer) can store one."""


def answer_problem(response: str | None, parsed: Any, valid: Any, error: str | None) -> str | None:
    """What is wrong with a decision under the answer rule, or None (the rule's SQL form
    is :func:`coop_tui.migrations.answer_rule_broken`)."""
    if not response:
        return None
    if valid and parsed is None:
        return ("the answer is stored valid but was not parsed; parse it or store it invalid "
                "(valid = False) with the reason in error")
    if not valid and not error:
        return "the answer is stored invalid without a reason; say why in error"
    return None


DISTRIBUTION_TOLERANCE = 1e-6
"""How far a stored mixed strategy's probabilities may sum from 1 (float rounding)."""


def distribution_problem(d: Decision) -> str | None:
    """What is wrong with a valid mixed answer's distribution, or None: its keys must be
    its labels, each a probability, summing to 1. An importer that misread a prompt's
    labels (CoopEval's retry prompts echo the rejected answer, whose words look like the
    prompt's) would otherwise store a valid decision no analysis can trust."""
    return mixed_answer_problem(d.kind, d.valid, d.parsed, d.labels)


def mixed_answer_problem(kind: Any, valid: Any, parsed: Any, labels: Any) -> str | None:
    """:func:`distribution_problem` on a decision's fields, so a row built without a
    :class:`Decision` (:func:`insert_decisions`) is held to the same rule."""
    if not valid or kind != "mixed" or type(parsed) is not dict:
        return None
    if labels and len(parsed) != len(labels):
        return (f"the distribution has {len(parsed)} entries for {len(labels)} labels; "
                "store it invalid with the reason in error")
    total = 0.0
    for value in parsed.values():
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0 + DISTRIBUTION_TOLERANCE:
            return f"the distribution holds {value!r}, not a probability"
        total += value
    if abs(total - 1.0) > DISTRIBUTION_TOLERANCE:
        return (f"the distribution sums to {total:g}, not 1, over its labels; store it "
                "invalid with the reason in error")
    return None


def _row_distribution_problem(row: dict[str, Any]) -> str | None:
    """:func:`mixed_answer_problem` on a column dict, whose ``parsed`` and ``labels`` are
    JSON text when it came from :func:`decision_row` (only valid mixed rows are decoded)."""
    if not row.get("valid") or row.get("kind") != "mixed":
        return None
    parsed, labels = row.get("parsed"), row.get("labels")
    try:
        parsed = json.loads(parsed) if isinstance(parsed, str) else parsed
        labels = json.loads(labels) if isinstance(labels, str) else labels
    except ValueError:
        return "its parsed answer or labels are not JSON"
    return mixed_answer_problem("mixed", True, parsed, labels)


def _where(d: Decision) -> str:
    return f"decision of {d.agent} in match {d.match_id}, round {d.round}, phase {d.phase}"


def decision_row(d: Decision) -> dict[str, Any]:
    if problem := answer_problem(d.response, d.parsed, d.valid, d.error) or distribution_problem(d):
        raise AnswerRuleError(f"{_where(d)}: {problem}")
    return {
        "match_id": d.match_id,
        "round": d.round,
        "phase": d.phase,
        "seat": d.seat,
        "kind": d.kind,
        "agent": d.agent,
        "prompt": _json(d.prompt),
        "response": d.response,
        "reasoning": d.reasoning,
        "answer": d.answer,
        "parsed": _json(d.parsed),
        "valid": int(d.valid),
        "attempts": d.attempts,
        "error": d.error,
        "normalisation": d.normalisation,
        "labels": _json(list(d.labels)),
        "label_map": _json(list(d.label_to_action)),
        "distribution": _json(list(d.distribution) if d.distribution is not None else None),
        "action": d.action,
        "coop_prob": d.coop_prob,
        "cooperated": None if d.cooperated is None else int(d.cooperated),
        "constrained": int(d.constrained),
        "latency_ms": d.latency_ms,
        "input_tokens": d.input_tokens,
        "output_tokens": d.output_tokens,
        "cost_usd": d.cost_usd,
        "transport_retries": d.transport_retries,
        "queue_ms": d.queue_ms,
        "retries": _json([a.__dict__ for a in d.retries]),
        "reused": int(d.reused),
        "cache_key": d.cache_key,
        "content_key": d.content_key,
        "created_at": d.created_at or time.time(),
        "options": _json(_stored_options(d)) if d.options else None,
    }


DECISION_COLUMNS: tuple[str, ...] = (
    "match_id", "round", "phase", "seat", "kind", "agent", "prompt", "response", "reasoning",
    "answer", "parsed", "valid", "attempts", "error", "normalisation", "labels", "label_map",
    "distribution", "action", "coop_prob", "cooperated", "constrained", "latency_ms",
    "input_tokens", "output_tokens", "cost_usd", "transport_retries", "retries", "reused",
    "cache_key", "content_key", "created_at", "prompt_hash", "queue_ms", "options",
)
PROMPT_AT = DECISION_COLUMNS.index("prompt")
HASH_AT = DECISION_COLUMNS.index("prompt_hash")
INSERT_DECISION = (
    f"insert or ignore into decisions ({', '.join(DECISION_COLUMNS)})"
    f" values ({', '.join('?' * len(DECISION_COLUMNS))})"
)
REPLACE_DECISION = (
    f"insert into decisions ({', '.join(DECISION_COLUMNS)})"
    f" values ({', '.join('?' * len(DECISION_COLUMNS))})"
    " on conflict(cache_key) where cache_key is not null do update set "
    + ", ".join(f"{c} = excluded.{c}" for c in DECISION_COLUMNS if c != "cache_key")
)
"""A decision asked again on resume (the stored one had no usable answer): the new
answer takes the old row's place, keeping its id (judgements and links stay valid)."""


_JSON_CACHE: dict[tuple[Any, ...], str] = {}


def _small_json(key: tuple[Any, ...], value: Any) -> str:
    """JSON of a small value that repeats across decisions (labels, a strategy's
    distribution), encoded once."""
    try:
        return _JSON_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable part: encode it every time
        return json.dumps(value, default=str)
    if len(_JSON_CACHE) > 4096:
        _JSON_CACHE.clear()
    text = _JSON_CACHE[key] = json.dumps(value, default=str)
    return text


def decision_values(d: Decision) -> list[Any]:
    """:func:`decision_row` as a list in :data:`DECISION_COLUMNS` order (the hot write
    path), the prompt still inline as JSON (None when there is none) and no hash yet."""
    dumps = json.dumps
    parsed = d.parsed
    if problem := answer_problem(d.response, parsed, d.valid, d.error) or distribution_problem(d):
        raise AnswerRuleError(f"{_where(d)}: {problem}")
    if parsed is None:
        parsed_json = None
    elif type(parsed) is dict and len(parsed) <= 8:
        parsed_json = _small_json(("p", *parsed.items()), parsed)
    else:
        parsed_json = dumps(parsed, default=str)
    return [
        d.match_id, d.round, d.phase, d.seat, d.kind, d.agent,
        dumps(d.prompt, default=str) if d.prompt else None,
        d.response, d.reasoning, d.answer, parsed_json,
        int(d.valid), d.attempts, d.error, d.normalisation,
        _small_json(("l", *d.labels), list(d.labels)),
        _small_json(("m", *d.label_to_action), list(d.label_to_action)),
        None if d.distribution is None else _small_json(("d", *d.distribution), list(d.distribution)),
        d.action, d.coop_prob, None if d.cooperated is None else int(d.cooperated),
        int(d.constrained), d.latency_ms, d.input_tokens, d.output_tokens, d.cost_usd,
        d.transport_retries,
        dumps([a.__dict__ for a in d.retries], default=str) if d.retries else "[]",
        int(d.reused), d.cache_key, d.content_key, d.created_at or time.time(), None,
        d.queue_ms,
        dumps(_stored_options(d), default=str) if d.options else None,
    ]


def _stored_options(d: Decision) -> dict[str, Any]:
    """The options column: the request's options, plus a combined move-and-leave
    answer's ``leave`` (super-additive cooperation), which has no column of its own."""
    return d.options if d.leave is None else {**d.options, "leave": d.leave}


def decision_from_row(row: dict[str, Any]) -> Decision:
    def load(key: str) -> Any:
        raw = row.get(key)
        return None if raw is None else json.loads(raw)

    dist = load("distribution")
    options = load("options") or {}
    leave = options.pop("leave", None) if options.get("ask_leave") else None
    return Decision(
        match_id=row["match_id"],
        round=row["round"],
        phase=row["phase"],
        seat=row["seat"],
        kind=row["kind"],
        agent=row["agent"],
        prompt=json.loads(row["prompt_text"]) if row.get("prompt_text") else (load("prompt") or []),
        response=row["response"] or "",
        reasoning=row["reasoning"] or "",
        parsed=load("parsed"),
        valid=bool(row["valid"]),
        attempts=row["attempts"],
        error=row["error"],
        cache_key=row["cache_key"],
        content_key=row["content_key"],
        labels=tuple(load("labels") or ()),
        label_to_action=tuple(load("label_map") or ()),
        distribution=None if dist is None else tuple(dist),
        action=row["action"],
        normalisation=row["normalisation"],
        answer=row["answer"],
        constrained=bool(row["constrained"]),
        latency_ms=row["latency_ms"] or 0.0,
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        transport_retries=row["transport_retries"] or 0,
        queue_ms=row.get("queue_ms"),
        retries=[Attempt(**a) for a in (load("retries") or [])],
        reused=bool(row["reused"]),
        coop_prob=row["coop_prob"],
        cooperated=None if row["cooperated"] is None else bool(row["cooperated"]),
        created_at=row["created_at"] or 0.0,
        options=options,
        leave=leave,
    )



def insert_decisions(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert decision rows given as column dicts (an importer's :func:`decision_row`
    rows, or its own), each checked first against the answer rule and, as
    :func:`decision_row` does, a valid mixed answer against :func:`distribution_problem`:
    nothing is written when one breaks either (raise inside the importer's transaction)."""
    if not rows:
        return
    for row in rows:
        if problem := answer_problem(row.get("response"), row.get("parsed"), row.get("valid"),
                                     row.get("error")) or _row_distribution_problem(row):
            raise AnswerRuleError(
                f"decision of {row.get('agent')} in match {row.get('match_id')}: {problem}")
    cols = list(rows[0])
    sql = f"insert into decisions ({', '.join(cols)}) values ({', '.join('?' for _ in cols)})"
    conn.executemany(sql, [[r[c] for c in cols] for r in rows])


DIRECT_COLUMNS: dict[str, str] = {
    "match_id": "?", "round": "?", "phase": "'play'", "seat": "?", "kind": "'mixed'",
    "agent": "?", "response": "?", "reasoning": "''", "parsed": "?", "valid": "1",
    "attempts": "1", "normalisation": "?", "labels": "?", "label_map": "?",
    "distribution": "?", "action": "?", "coop_prob": "?", "cooperated": "?",
    "constrained": "0", "latency_ms": "?", "input_tokens": "0", "output_tokens": "0",
    "cost_usd": "0.0", "transport_retries": "0", "retries": "'[]'", "reused": "0",
    "created_at": "?",
}
"""A strategy play decision's row (:class:`DirectDecisions`): the same values
:func:`decision_values` writes for it, the fixed ones as SQL literals (columns left out
are NULL there too: prompt, answer, error, keys, queue, options)."""
INSERT_DIRECT = (
    f"insert into decisions ({', '.join(DIRECT_COLUMNS)}) values ({', '.join(DIRECT_COLUMNS.values())})"
)


def direct_values(events: list[DirectDecisions]) -> list[tuple[Any, ...]]:
    """The ``?`` values of :data:`INSERT_DIRECT` for strategy rounds, in order; each
    distinct answer is encoded once (rows share their answer tuple)."""
    out: list[tuple[Any, ...]] = []
    append = out.append
    encoded: dict[int, tuple[Any, ...]] = {}  # by id: every answer is alive during the call
    for e in events:
        match_id, rnd, created = e.match_id, e.round, e.created_at
        for seat, agent, latency_ms, answer in e.rows:
            tail = encoded.get(id(answer))
            if tail is None:
                tail = encoded[id(answer)] = _direct_answer_values(answer)
            append((match_id, rnd, seat, agent, *tail, latency_ms, created))
    return out


def _direct_answer_values(answer: tuple[Any, ...]) -> tuple[Any, ...]:
    """response .. cooperated of :data:`INSERT_DIRECT`, encoded as :func:`decision_values`
    encodes them."""
    response, parsed, labels, mapping, dist, action, coop_prob, cooperated, note = answer
    # these rows are written valid: an answer text needs its parse (checked once per
    # distinct answer, as the encoding is)
    if problem := answer_problem(response, parsed, True, None):
        raise AnswerRuleError(f"a strategy's direct answer {response[:40]!r}: {problem}")
    if parsed is None:
        parsed_json = None
    elif type(parsed) is dict and len(parsed) <= 8:
        parsed_json = _small_json(("p", *parsed.items()), parsed)
    else:
        parsed_json = json.dumps(parsed, default=str)
    return (
        response, parsed_json, note, _small_json(("l", *labels), list(labels)),
        _small_json(("m", *mapping), list(mapping)),
        None if dist is None else _small_json(("d", *dist), list(dist)),
        action, coop_prob, None if cooperated is None else int(cooperated),
    )

