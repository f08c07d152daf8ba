"""Aggregates of finished matches, kept so the report never scans every decision.

A run of a million decisions holds a few thousand matches. When a match finishes
("done"), the store *folds* it: one small GROUP BY over that match's own decisions and
rounds (found through the match index) adds its counts and sums to four narrow tables,
keyed by run, experiment, condition and agent. The report then reads a few thousand
summary rows instead of a million decisions, and gets the same numbers: every column is
a count or a sum, and a sum of per-match sums is the sum.

``match_totals`` has one row per folded match and is what marks it folded. A match that
is done but not folded (a database written by an older version, an import, a crash
between the two writes) is aggregated live by :func:`read`, so the report stays exact
without writing; :func:`fold_pending` folds such matches for good.

Folding also stores the match's moves (``match_moves``: its rounds' cooperation as one
string, :func:`fold_moves`), which the strategic personalities paper's profile reads instead of every round.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain, pairwise, repeat
from operator import attrgetter, itemgetter
from typing import Any

from coop_tui import read_cache


@dataclass(frozen=True)
class Summary:
    table: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    select: str
    """One match's rows (keys then values), for ``?`` = the match id."""


SUMMARIES: tuple[Summary, ...] = (
    Summary(
        "coop_rounds",
        ("run_id", "experiment", "condition_key", "agent", "round"),
        ("n", "coop_sum", "coop_sq", "cooperated", "sampled_n"),
        """select m.run_id, m.experiment, m.condition_key, d.agent, d.round,
                  count(*), sum(d.coop_prob), sum(d.coop_prob * d.coop_prob),
                  coalesce(sum(d.cooperated), 0), count(d.cooperated)
           from decisions d join matches m on m.id = d.match_id
           where d.match_id = ? and d.phase = 'play' and d.coop_prob is not null
           group by d.agent, d.round""",
    ),
    Summary(
        "action_counts",
        ("run_id", "experiment", "condition_key", "phase", "agent", "action"),
        ("n", "prob_sum", "sampled"),
        """select m.run_id, m.experiment, m.condition_key, d.phase, d.agent,
                  cast(j.key as integer) as act, count(*), sum(j.value),
                  sum(case when d.action = cast(j.key as integer) then 1 else 0 end)
           from decisions d join matches m on m.id = d.match_id,
                json_each(d.distribution) j
           where d.match_id = ? and d.kind in ('mixed', 'choice') and d.distribution is not null
           group by d.phase, d.agent, act""",
    ),
    Summary(
        "conditional_counts",
        ("run_id", "experiment", "condition_key", "agent", "previous", "action"),
        ("n",),
        """select m.run_id, m.experiment, m.condition_key, st.agent, prev.action, r.action,
                  count(*)
           from rounds r
           join matches m on m.id = r.match_id
           join seats st on st.match_id = r.match_id and st.seat = r.seat
           join rounds co on co.match_id = r.match_id and co.round = r.round
                and co.seat != r.seat
                and coalesce(json_extract(co.info, '$.group'), -1)
                    = coalesce(json_extract(r.info, '$.group'), -1)
           join rounds prev on prev.match_id = co.match_id and prev.round = r.round - 1
                and prev.seat = co.seat
           where r.match_id = ?
           group by st.agent, prev.action, r.action""",
    ),
)
BY_TABLE = {s.table: s for s in SUMMARIES}

TOTALS = ("decisions", "invalid", "reasks", "transport_retries", "reused", "cost_usd",
          "input_tokens", "output_tokens", "tokens_unknown")
_TOTALS_SELECT = """
    count(d.id), coalesce(sum(d.valid = 0), 0),
    coalesce(sum(case when d.reused = 0 and d.attempts > 1 then d.attempts - 1 end), 0),
    coalesce(sum(d.transport_retries), 0), coalesce(sum(d.reused), 0),
    coalesce(sum(d.cost_usd), 0), coalesce(sum(d.input_tokens), 0),
    coalesce(sum(d.output_tokens), 0),
    coalesce(sum(d.id is not null and (d.input_tokens is null or d.output_tokens is null)), 0)"""


def create_tables(conn: Any) -> None:
    conn.execute(
        "create table if not exists match_totals (match_id text primary key, run_id text, "
        + ", ".join(f"{c} {'real' if c == 'cost_usd' else 'integer'}" for c in TOTALS)
        + ")"
    )
    conn.execute("create index if not exists idx_match_totals_run on match_totals (run_id)")
    create_moves_table(conn)
    for s in SUMMARIES:
        # untyped columns: counts stay integers, sums stay floats
        cols = ", ".join([*s.keys, *s.values])
        conn.execute(
            f"create table if not exists {s.table} ({cols}, primary key ({', '.join(s.keys)}))"
        )


def _upsert_sql(s: Summary) -> str:
    cols = [*s.keys, *s.values]
    adds = ", ".join(f"{v} = {v} + excluded.{v}" for v in s.values)
    return (
        f"insert into {s.table} ({', '.join(cols)}) values ({', '.join('?' * len(cols))}) "
        f"on conflict ({', '.join(s.keys)}) do update set {adds}"
    )


def is_folded(conn: Any, match_id: str) -> bool:
    return conn.execute("select 1 from match_totals where match_id = ?", [match_id]).fetchone() is not None


def fold(conn: Any, match_id: str) -> None:
    """Add one finished match to the summaries, once (the caller holds the transaction)."""
    if is_folded(conn, match_id):
        return
    conn.execute(
        f"insert into match_totals select m.id, m.run_id, {_TOTALS_SELECT} "
        "from matches m left join decisions d on d.match_id = m.id where m.id = ?",
        [match_id],
    )
    for s in SUMMARIES:
        rows = conn.execute(s.select, [match_id]).fetchall()
        if rows:
            conn.executemany(_upsert_sql(s), rows)
    fold_moves(conn, [match_id])


def fold_rows(
    conn: Any,
    match: tuple[str, str, int, str],
    agents: list[str],
    decisions: list[list[Any]],
    rounds: list[tuple[Any, ...]],
    columns: tuple[str, ...],
) -> None:
    """:func:`fold` for a match whose rows the store still holds in memory (a batched
    strategy match): the same sums computed in Python, which costs a fraction of running
    the GROUP BYs over rows just written. ``match`` is (match id, run id, experiment,
    condition key); ``decisions`` are rows in ``columns`` order; ``rounds`` are rounds
    table rows (match, round, seat, action, payoff, cooperated, info)."""
    match_id, run_id, experiment, ckey = match
    if is_folded(conn, match_id):
        return
    at = {c: i for i, c in enumerate(columns)}
    if not decisions:
        totals = [0] * len(TOTALS)
        coop: dict[tuple[Any, ...], list[Any]] = {}
        acts: dict[tuple[Any, ...], list[Any]] = {}
    else:
        cols = list(zip(*decisions, strict=True))  # column-wise: the sums run in C
        totals = _row_totals(cols, at, len(decisions))
        coop = _row_coop_rounds(cols, at)
        acts = _row_action_counts(cols, at)
    conn.execute(
        f"insert into match_totals (match_id, run_id, {', '.join(TOTALS)}) values "
        f"({', '.join('?' * (len(TOTALS) + 2))})",
        [match_id, run_id, *totals],
    )
    head = (run_id, experiment, ckey)
    conn.executemany(_upsert_sql(BY_TABLE["coop_rounds"]), [(*head, *k, *v) for k, v in coop.items()])
    conn.executemany(_upsert_sql(BY_TABLE["action_counts"]), [(*head, *k, *v) for k, v in acts.items()])
    conn.executemany(
        _upsert_sql(BY_TABLE["conditional_counts"]),
        [(*head, *k, n) for k, n in _conditional(agents, rounds).items()],
    )
    fold_moves(conn, [match_id])


def _row_totals(cols: list[tuple[Any, ...]], at: dict[str, int], n: int) -> list[Any]:
    """A match's ``match_totals`` values (in ``TOTALS`` order) from the columns of its
    ``n`` decisions."""
    # re-asks count as in the batch summary: attempts - 1 of decisions asked in this run
    reasks = sum(
        a - 1 for a, reused in zip(cols[at["attempts"]], cols[at["reused"]], strict=True)
        if not reused and a and a > 1
    )
    unknown = sum(
        i is None or o is None
        for i, o in zip(cols[at["input_tokens"]], cols[at["output_tokens"]], strict=True)
    )
    return [
        n, cols[at["valid"]].count(0), reasks,
        *(sum(filter(None, cols[at[c]])) for c in
          ("transport_retries", "reused", "cost_usd", "input_tokens", "output_tokens")),
        unknown,
    ]


def _row_coop_rounds(cols: list[tuple[Any, ...]], at: dict[str, int]) -> dict[tuple[Any, ...], list[Any]]:
    """A match's ``coop_rounds`` sums per (agent, round) over its play decisions with a
    cooperation probability, added in row order."""
    coop: dict[tuple[Any, ...], list[Any]] = {}
    for phase, agent, rnd, prob, cooperated in zip(
        cols[at["phase"]], cols[at["agent"]], cols[at["round"]], cols[at["coop_prob"]],
        cols[at["cooperated"]], strict=True
    ):
        if prob is None or phase != "play":
            continue
        acc = coop.get((agent, rnd))
        if acc is None:
            acc = coop[(agent, rnd)] = [0, 0.0, 0.0, 0, 0]
        acc[0] += 1
        acc[1] += prob
        acc[2] += prob * prob
        if cooperated is not None:
            acc[3] += cooperated
            acc[4] += 1
    return coop


def _row_action_counts(
    cols: list[tuple[Any, ...]], at: dict[str, int]
) -> dict[tuple[Any, ...], list[Any]]:
    """A match's ``action_counts`` sums per (phase, agent, action) over its decisions with
    a distribution."""
    # identical answers are frequent (a strategy's few distributions): count them, then
    # spread each distinct one over the actions once
    seen = Counter(
        (phase, agent, raw, played)
        for phase, agent, raw, played, kind in zip(
            cols[at["phase"]], cols[at["agent"]], cols[at["distribution"]], cols[at["action"]],
            cols[at["kind"]], strict=True
        )
        if raw is not None and kind in ("mixed", "choice")
    )
    acts: dict[tuple[Any, ...], list[Any]] = {}
    for (phase, agent, raw, played), times in seen.items():
        for act, p in enumerate(json.loads(raw)):
            acc = acts.get((phase, agent, act))
            if acc is None:
                acc = acts[(phase, agent, act)] = [0, 0.0, 0]
            acc[0] += times
            acc[1] += p * times
            acc[2] += times if played == act else 0
    return acts


class DirectFolds:
    """Finished strategy-only matches (:class:`coop_tui.events.DirectDecisions`) whose
    summary sums are written many matches at a time by :meth:`write`: a tournament's
    matches share summary keys, so a write costs one upsert per key rather than one per
    key and match. Each match's sums are taken as :func:`fold_rows` takes them and added
    to the stored ones match by match, in the same order, so every float is the one
    folding each match on its own gives. Their decisions are play decisions, valid, asked
    once, with no tokens or cost: a match's totals are its decision count and zeros.

    The per-round sums (``coop_rounds``, a key per agent and round: most of a
    tournament's keys) are held as arrays and added with NumPy, whose element-wise
    additions are the same IEEE additions, in the same order, as the loop over rows."""

    def __init__(self) -> None:
        self.matches: dict[str, tuple[Any, ...]] = {}
        self.moves: dict[str, tuple[str | None, str | None] | None] = {}

    def __len__(self) -> int:
        return len(self.matches)

    def __contains__(self, match_id: object) -> bool:
        return match_id in self.matches

    def add(
        self, match: tuple[str, str, int, str], agents: list[str], events: list[Any],
        rounds: list[tuple[Any, ...]],
    ) -> None:
        """One match: (match id, run id, experiment, condition key), its seats' agents,
        its DirectDecisions and its rounds rows."""
        rows = list(chain.from_iterable(map(_EVENT_ROWS, events)))
        names = list(map(_ROW_AGENT, rows))
        answers = list(map(_ROW_ANSWER, rows))
        cond = {k: [v] for k, v in _conditional(agents, rounds).items()}
        self.moves[match[0]] = moves_from_rounds(rounds)
        self.matches[match[0]] = (
            match, len(rows),
            (names, answers, list(map(_EVENT_ROUND, events)), list(map(len, map(_EVENT_ROWS, events)))),
            {"action_counts": _action_sums(names, answers), "conditional_counts": cond},
        )

    def write(self, conn: Any) -> None:
        """Add the held matches to the summary tables (the caller holds the transaction).
        A match folded meanwhile (by :func:`fold_pending`) is not added twice: then each
        held match is folded from its stored rows instead."""
        if not self.matches:
            return
        if any(is_folded(conn, mid) for mid in self.matches):
            for mid in self.matches:
                fold(conn, mid)
            return
        conn.executemany(
            f"insert into match_totals (match_id, run_id, {', '.join(TOTALS)}) values "
            f"({', '.join('?' * (len(TOTALS) + 2))})",
            [(m[0], m[1], n, 0, 0, 0, 0, 0, 0, 0, 0) for m, n, _coop, _sums in self.matches.values()],
        )
        held = {mid: self.moves.get(mid) for mid in self.matches}
        fold_moves(conn, [mid for mid, moves in held.items() if moves is None])
        conn.executemany(
            "insert or replace into match_moves (match_id, run_id, shape, moves)"
            " values (?, ?, ?, ?)",
            [(mid, self.matches[mid][0][1], *moves) for mid, moves in held.items()
             if moves is not None],
        )
        runs = {m[1] for m, _n, _coop, _sums in self.matches.values()}
        self._write_coop_rounds(conn, runs)
        for s in SUMMARIES[1:]:
            cols = [*s.keys, *s.values]
            width = len(s.keys)
            totals: dict[tuple[Any, ...], list[Any]] = {}
            for run_id in runs:
                for row in conn.execute(
                    f"select {', '.join(cols)} from {s.table} where run_id = ?", [run_id]
                ):
                    totals[tuple(row[:width])] = list(row[width:])
            touched: dict[tuple[Any, ...], list[Any]] = {}
            for (_mid, run_id, experiment, ckey), _n, _coop, sums in self.matches.values():
                for key, values in sums[s.table].items():
                    full = (run_id, experiment, ckey, *key)
                    acc = totals.get(full)
                    if acc is None:
                        totals[full] = list(values)
                    else:  # the stored sum plus this match's, as the upsert adds them
                        for i, v in enumerate(values):
                            acc[i] = acc[i] + v
                    touched[full] = totals[full]
            conn.executemany(_set_sql(s), [(*k, *v) for k, v in touched.items()])

    def _write_coop_rounds(self, conn: Any, runs: set[str]) -> None:
        """``coop_rounds`` of the held matches, with NumPy over all their rows at once:
        each match's sums per (agent, round) as :func:`fold_rows` takes them (from 0.0,
        its rows in order: ``bincount`` adds its weights one by one), then added to the
        stored sums of their runs match by match, in order (``add.at`` adds repeated
        indices one by one), and written back for every key a match touched."""
        import numpy as np  # heavy: only a strategy sweep's store folds this way

        s = BY_TABLE["coop_rounds"]
        groups: dict[tuple[Any, ...], int] = {}  # (run, experiment, condition, agent) -> id
        stored_keys: list[int] = []
        stored: list[tuple[Any, ...]] = []
        for run_id in runs:
            for row in conn.execute(
                f"select {', '.join([*s.keys, *s.values])} from {s.table} where run_id = ?",
                [run_id],
            ):
                group = groups.setdefault(row[:4], len(groups))
                stored_keys.append(_round_key(group, row[4]))
                stored.append(row[5:])
        held = list(self.matches.values())
        names = {name: i for i, name in enumerate(dict.fromkeys(
            chain.from_iterable(coop[0] for _m, _n, coop, _s in held)))}
        group_of = np.zeros((len(held), max(len(names), 1)), dtype=np.int64)
        for i, ((_mid, run_id, experiment, ckey), _n, coop, _s) in enumerate(held):
            for name in dict.fromkeys(coop[0]):
                group_of[i, names[name]] = groups.setdefault((run_id, experiment, ckey, name), len(groups))
        rows_of = [len(coop[0]) for _m, _n, coop, _s in held]
        match = np.repeat(np.arange(len(held)), rows_of)
        agent = np.fromiter(map(names.__getitem__, chain.from_iterable(c[0] for _m, _n, c, _s in held)),
                            dtype=np.int64, count=len(match))
        rnd = np.repeat(np.fromiter(chain.from_iterable(c[2] for _m, _n, c, _s in held), dtype=np.int64),
                        list(chain.from_iterable(c[3] for _m, _n, c, _s in held)))
        answers = list(chain.from_iterable(c[1] for _m, _n, c, _s in held))
        prob = np.array(list(map(_ANSWER_PROB, answers)), dtype=float)  # None -> NaN
        cooperated = np.array(list(map(_ANSWER_COOPERATED, answers)), dtype=float)
        kept = ~np.isnan(prob)  # rows without a cooperation probability add nothing
        match, prob, cooperated = match[kept], prob[kept], cooperated[kept]
        keys = _round_keys(group_of[match, agent[kept]], rnd[kept])
        every, key_at = np.unique(np.concatenate([np.array(stored_keys, dtype=np.int64), keys]),
                                  return_inverse=True)
        stored_at, key_at = key_at[:len(stored_keys)], key_at[len(stored_keys):]
        # each match's own sum per key: (match, key) pairs, match-major, rows in order
        pair, pair_at = np.unique(match * len(every) + key_at, return_inverse=True)
        sampled = ~np.isnan(cooperated)
        width = len(pair)
        per_match = (
            np.bincount(pair_at, minlength=width),
            np.bincount(pair_at, weights=prob, minlength=width),
            np.bincount(pair_at, weights=prob * prob, minlength=width),
            np.bincount(pair_at[sampled], weights=cooperated[sampled], minlength=width).astype(np.int64),
            np.bincount(pair_at[sampled], minlength=width),
        )
        target = pair % len(every)
        counts = np.zeros((3, len(every)), dtype=np.int64)  # n, cooperated, sampled_n
        sums = np.zeros((2, len(every)))  # coop_sum, coop_sq
        if stored:
            n, coop_sum, coop_sq, coop_n, sampled_n = zip(*stored, strict=True)
            counts[:, stored_at] = np.array([n, coop_n, sampled_n], dtype=np.int64)
            sums[:, stored_at] = np.array([coop_sum, coop_sq], dtype=float)
        for row, values in ((0, per_match[0]), (1, per_match[3]), (2, per_match[4])):
            np.add.at(counts[row], target, values)
        for row, values in ((0, per_match[1]), (1, per_match[2])):
            np.add.at(sums[row], target, values)  # the stored sum (or 0.0), then match by match
        touched = np.zeros(len(every), dtype=bool)
        touched[target] = True
        heads = list(groups)
        group_at, round_at = np.divmod(every[touched], ROUND_SPAN)
        n, coop_n, sampled_n = counts[:, touched].tolist()
        coop_sum, coop_sq = sums[:, touched].tolist()
        conn.executemany(_set_sql(s), [
            (*heads[g], r - ROUND_OFFSET, *values) for g, r, *values in zip(
                group_at.tolist(), round_at.tolist(), n, coop_sum, coop_sq, coop_n, sampled_n,
                strict=True)
        ])


_EVENT_ROWS = attrgetter("rows")
_EVENT_ROUND = attrgetter("round")
_ROW_AGENT = itemgetter(1)
_ROW_ANSWER = itemgetter(3)
_ANSWER_PROB = itemgetter(6)
_ANSWER_COOPERATED = itemgetter(7)
ROUND_SPAN = 1 << 32
ROUND_OFFSET = 1 << 31
"""A ``coop_rounds`` key of a write is group * ROUND_SPAN + round + ROUND_OFFSET (one
int64: rounds are sorted and found as numbers)."""


def _round_key(group: int, round_: Any) -> int:
    if type(round_) is not int or not -ROUND_OFFSET <= round_ < ROUND_OFFSET:
        raise ValueError(f"coop_rounds: round {round_!r} is not a round number")
    return group * ROUND_SPAN + round_ + ROUND_OFFSET


def _round_keys(groups: Any, rounds: Any) -> Any:
    if len(rounds) and not (rounds.min() >= -ROUND_OFFSET and rounds.max() < ROUND_OFFSET):
        raise ValueError("coop_rounds: a round number out of range")
    return groups * ROUND_SPAN + rounds + ROUND_OFFSET


def _set_sql(s: Summary) -> str:
    """An upsert that sets a key's values (sums already added to the stored ones)."""
    cols = [*s.keys, *s.values]
    sets = ", ".join(f"{v} = excluded.{v}" for v in s.values)
    return (f"insert into {s.table} ({', '.join(cols)}) values ({', '.join('?' * len(cols))})"
            f" on conflict ({', '.join(s.keys)}) do update set {sets}")


def _action_sums(names: list[str], answers: list[Any]) -> dict[tuple[Any, ...], list[Any]]:
    """One match's ``action_counts`` sums: identical answers counted first, then each
    distinct (agent, distribution, action) spread over the actions once, in the order
    they first appear (as :func:`fold_rows` does)."""
    by_answer = Counter(zip(names, map(id, answers), strict=True))
    answer_of = dict(zip(map(id, answers), answers, strict=True))
    seen: dict[tuple[Any, ...], int] = {}
    for (agent, ident), times in by_answer.items():
        answer = answer_of[ident]
        if answer[4] is not None:
            key = (agent, answer[4], answer[5])
            seen[key] = seen.get(key, 0) + times
    acts: dict[tuple[Any, ...], list[Any]] = {}
    for (agent, dist, played), times in seen.items():
        for act, p in enumerate(dist):
            acc = acts.get(("play", agent, act))
            if acc is None:
                acc = acts[("play", agent, act)] = [0, 0.0, 0]
            acc[0] += times
            acc[1] += p * times
            acc[2] += times if played == act else 0
    return acts


def _conditional(agents: list[str], rounds: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    """The ``conditional_counts`` SELECT for one match's rounds rows, in Python."""
    pair = _pair_conditional(agents, rounds)
    if pair is not None:
        return pair
    groups: dict[str, Any] = {}
    by_round: dict[int, list[tuple[int, int, Any]]] = {}
    for _match, rnd, seat, action, _payoff, _coop, info in rounds:
        group = groups.get(info)
        if group is None and info not in groups:
            group = groups[info] = (json.loads(info) or {}).get("group") if info else None
        by_round.setdefault(rnd, []).append((seat, action, -1 if group is None else group))
    actions = {rnd: {seat: action for seat, action, _g in rows} for rnd, rows in by_round.items()}
    out: dict[tuple[Any, ...], int] = {}
    n_agents = len(agents)
    for rnd, rows in by_round.items():
        before = actions.get(rnd - 1)
        if before is None:  # no co-player action the round before: nothing to count
            continue
        for seat, action, group in rows:
            if seat >= n_agents:
                continue
            for co_seat, _co_action, co_group in rows:
                if co_seat == seat or co_group != group:
                    continue
                prev = before.get(co_seat)
                if prev is None:
                    continue
                key = (agents[seat], prev, action)
                out[key] = out.get(key, 0) + 1
    return out


def _pair_conditional(
    agents: list[str], rounds: list[tuple[Any, ...]]
) -> dict[tuple[Any, ...], int] | None:
    """:func:`_conditional` of a two-seat match whose rows are seat 1 then seat 2 of
    consecutive rounds, all with one info (every strategy pairing): the same counts in the
    same order, without grouping rows per round. None for any other match."""
    if (len(agents) < 2 or len(set(map(_ROUND_INFO, rounds))) != 1
            or not _in_pair_order(list(map(_ROUND_NUMBER, rounds)), list(map(_ROUND_SEAT, rounds)))):
        return None
    actions = list(map(_ROUND_ACTION, rounds))
    a0, a1 = actions[0::2], actions[1::2]
    # each seat after the co-player's move of the round before, seat 1 then seat 2 of a
    # round: the keys counted in the order the rows give them
    # (the inner zips end with the shorter list, one round less than the match)
    return dict(Counter(chain.from_iterable(zip(
        zip(repeat(agents[0]), a1, a0[1:], strict=False),
        zip(repeat(agents[1]), a0, a1[1:], strict=False), strict=True,
    ))))


def _in_pair_order(numbers: list[Any], seats: list[Any]) -> bool:
    """Whether a match's rounds rows (their round numbers and seats, in row order) are
    seat 1 then seat 2 of consecutive rounds, each once (how the engine writes every
    two-seat match)."""
    n = len(numbers)
    if n < 2 or n % 2:
        return False
    first = numbers[0::2]
    return (type(first[0]) is int and first == numbers[1::2]
            and first == list(range(first[0], first[0] + n // 2)) and seats == [0, 1] * (n // 2))


def unfold(conn: Any, match_id: str) -> None:
    """Take a match out of the summaries (it is being played again): its run's sums are
    rebuilt from the matches still folded, so no floating-point subtraction creeps in."""
    row = conn.execute("select run_id from match_totals where match_id = ?", [match_id]).fetchone()
    if row is None:
        return
    run_id = row[0]
    conn.execute("delete from match_totals where match_id = ?", [match_id])
    kept = [r[0] for r in conn.execute(
        "select match_id from match_totals where run_id = ? order by rowid", [run_id])]
    delete_run(conn, run_id)
    for mid in kept:
        fold(conn, mid)


def delete_run(conn: Any, run_id: str) -> None:
    conn.execute("delete from match_totals where run_id = ?", [run_id])
    for s in SUMMARIES:
        conn.execute(f"delete from {s.table} where run_id = ?", [run_id])
    conn.execute("delete from match_moves where run_id = ?", [run_id])


_PENDING = """select m.id from matches m where m.status = 'done' {run}
              and not exists (select 1 from match_totals t where t.match_id = m.id)
              order by m.rowid"""


_UNFOLDED = """select m.id, m.status from matches m where m.run_id = ?
                and not exists (select 1 from match_totals t where t.match_id = m.id)
                order by m.rowid"""


def _unfolded(conn: Any, run_id: str) -> list[tuple[str, str]]:
    """(id, status) of a run's matches without totals yet, in match order: one read that
    both :func:`pending` and :func:`totals` take their part of."""
    return read_cache.rows(conn, _UNFOLDED, [run_id])


def pending(conn: Any, run_id: str | None = None) -> list[str]:
    """Done matches that are not folded yet (of one run, or of every run)."""
    if run_id is None:
        return [r[0] for r in conn.execute(_PENDING.format(run=""))]
    return [mid for mid, status in _unfolded(conn, run_id) if status == "done"]


def fold_pending(conn: Any, run_id: str | None = None) -> int:
    """Fold every done match that is not folded yet; returns how many were."""
    ids = pending(conn, run_id)
    for mid in ids:
        fold(conn, mid)
    return len(ids)


# ----------------------------------------------------------------- moves
MOVES_SHAPE = "(select min(round) || ' ' || max(round) || ' ' || count(*) from rounds where match_id = {m})"
"""A match's rounds as ``"first last rows"`` (``{m}``: the match id expression)."""
MOVES_STRING = ("(select group_concat(coalesce(c, '.'), '') from (select cooperated as c"
                " from rounds where match_id = {m} order by round, seat))")
"""Every seat's cooperation in (round, seat) order as one string: ``1`` cooperated, ``0``
not, ``.`` not recorded (``{m}``: the match id expression)."""


def create_moves_table(conn: Any) -> None:
    """``match_moves``: per folded match, its rounds' cooperation as one short string, so
    the strategic personalities paper's profile reads one row per match instead of every stored round."""
    conn.execute("create table if not exists match_moves (match_id text primary key, "
                 "run_id text, shape text, moves text)")
    conn.execute("create index if not exists idx_match_moves_run on match_moves (run_id)")


def fold_moves(conn: Any, match_ids: list[str]) -> None:
    """Store the moves of finished matches (their rounds are written; the caller holds
    the transaction): the same two expressions the profile would run live."""
    conn.executemany(
        "insert or replace into match_moves (match_id, run_id, shape, moves) select m.id,"
        f" m.run_id, {MOVES_SHAPE.format(m='m.id')}, {MOVES_STRING.format(m='m.id')}"
        " from matches m where m.id = ?",
        [(mid,) for mid in match_ids],
    )


def moves_from_rounds(rounds: list[tuple[Any, ...]]) -> tuple[str | None, str | None] | None:
    """(shape, moves) as :data:`MOVES_SHAPE` and :data:`MOVES_STRING` read them back, from
    a match's rounds rows still in memory (the rows as inserted, a later one replacing an
    earlier one of the same round and seat), or None when a value is not a plain round
    number or 0/1/None (then the SQL reads the stored rows)."""
    numbers = list(map(_ROUND_NUMBER, rounds))
    seats = list(map(_ROUND_SEAT, rounds))
    try:
        moves = "".join(map(_MOVE_CHAR.__getitem__, map(_ROUND_COOPERATED, rounds)))
    except (KeyError, TypeError):  # not 0/1/None (TypeError: unhashable)
        return None
    if not rounds:
        return None, None
    if {*map(type, numbers), *map(type, seats)} == {int} and (
        _in_pair_order(numbers, seats) or all(a < b for a, b in pairwise(zip(numbers, seats, strict=True)))
    ):  # written in order, each round and seat once (every match the engine plays)
        return f"{numbers[0]} {numbers[-1]} {len(rounds)}", moves
    return _moves_of_cells(rounds)


def _moves_of_cells(rounds: list[tuple[Any, ...]]) -> tuple[str | None, str | None] | None:
    """:func:`moves_from_rounds` for rows in any order, a later row of a round and seat
    replacing an earlier one."""
    cells: dict[tuple[int, int], Any] = {}
    for row in rounds:
        rnd, seat, coop = row[1], row[2], row[5]
        if type(rnd) is not int or type(seat) is not int or coop not in (None, 0, 1):
            return None
        cells[(rnd, seat)] = coop
    first = min(r for r, _ in cells)
    last = max(r for r, _ in cells)
    moves = "".join("." if cells[k] is None else "1" if cells[k] else "0" for k in sorted(cells))
    return f"{first} {last} {len(cells)}", moves


_ROUND_NUMBER = itemgetter(1)
_ROUND_SEAT = itemgetter(2)
_ROUND_ACTION = itemgetter(3)
_ROUND_COOPERATED = itemgetter(5)
_ROUND_INFO = itemgetter(6)
_MOVE_CHAR = {None: ".", 0: "0", 1: "1"}
"""A round's cooperation as a character of the moves string (True and 1.0 are 1)."""


def backfill_moves(conn: Any) -> int:
    """Moves of every folded match that has none (a database from before the table):
    one statement, each match read through the rounds primary key."""
    cur = conn.execute(
        "insert into match_moves (match_id, run_id, shape, moves) select m.id, m.run_id,"
        f" {MOVES_SHAPE.format(m='m.id')}, {MOVES_STRING.format(m='m.id')}"
        " from match_totals t join matches m on m.id = t.match_id"
        " where not exists (select 1 from match_moves v where v.match_id = t.match_id)"
    )
    return cur.rowcount


# ----------------------------------------------------------------- reading
def read(conn: Any, run_id: str, table: str) -> dict[tuple[Any, ...], list[float]]:
    """A run's rows of one summary table as {keys without run_id: value sums}, including
    done matches not folded yet (aggregated live from their own decisions)."""
    s = BY_TABLE[table]
    n_keys = len(s.keys)
    out: dict[tuple[Any, ...], list[float]] = {}
    _add(out, conn.execute(
        f"select {', '.join([*s.keys, *s.values])} from {table} where run_id = ?", [run_id]
    ), n_keys)
    for mid in pending(conn, run_id):
        _add(out, conn.execute(s.select, [mid]), n_keys)
    return out


def _add(out: dict[tuple[Any, ...], list[float]], rows: Iterable[Any], n_keys: int) -> None:
    for row in rows:
        key = tuple(row[1:n_keys])
        values = row[n_keys:]
        acc = out.get(key)
        if acc is None:
            out[key] = [v or 0 for v in values]
        else:
            for i, v in enumerate(values):
                acc[i] += v or 0


def totals(conn: Any, run_id: str) -> dict[str, float]:
    """Decision counts of a whole run: folded matches from ``match_totals``, every other
    match (running, failed, stopped, not folded yet) from its own decisions."""
    folded = conn.execute(
        f"select count(*), {', '.join(f'coalesce(sum({c}), 0)' for c in TOTALS)} "
        "from match_totals where run_id = ?",
        [run_id],
    ).fetchone()
    # every match folded (a finished run): nothing to add, what the query below gives then
    live = (0,) * len(TOTALS) if not _unfolded(conn, run_id) else conn.execute(
        f"select {_TOTALS_SELECT} from decisions d where d.match_id in ("
        "select m.id from matches m where m.run_id = ? and not exists "
        "(select 1 from match_totals t where t.match_id = m.id))",
        [run_id],
    ).fetchone()
    return {c: folded[i + 1] + live[i] for i, c in enumerate(TOTALS)}
