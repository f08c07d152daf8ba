"""Per-match move strings (``match_moves``) give the strategic personalities paper's sections what the rounds give.

One sweep is played through the real engine, sweep runner and SQLite store: strategy
matches of several lengths (their folds written many matches at a time), a self-play
experiment, a versus experiment, a public goods game (more than two seats) and one-shot
matches. The stored moves must equal what the query the profile ran before reads from
the rounds (kept below as the reference), the migration's backfill and every fold path
must write the same rows, and the two report sections computed from stored moves must
equal the same sections computed with no stored moves (every match read live from its
rounds, as the profile did before).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from coop_tui import summaries
from coop_tui.store import Store

RUN = "run-moves"
REFERENCE_SQL = """
    select m.id,
           (select min(round) || ' ' || max(round) || ' ' || count(*)
            from rounds where match_id = m.id),
           (select group_concat(coalesce(c, '.'), '') from (select cooperated as c
            from rounds where match_id = m.id order by round, seat))
    from matches m where m.run_id = ? and m.status = 'done' order by m.id"""
"""How the profile read every finished match's moves before they were stored."""

AGENTS = {
    "tft": {"strategy": "tit_for_tat"}, "grim": {"strategy": "grim_trigger"},
    "wsls": {"strategy": "win_stay_lose_shift"}, "alt": {"strategy": "alternator"},
    "rand": {"strategy": "random", "params": {"p": 0.4}},
    "gtft": {"strategy": "generous_tit_for_tat", "params": {"q": 0.3}},
    "allc": {"strategy": "always_cooperate"}, "alld": {"strategy": "always_defect"},
}
SWEEP = {
    "name": "moves", "seed": 3, "reuse": False, "agents": AGENTS,
    "experiments": [
        {"game": "pd_canonical", "mechanism": "repetition", "rounds": 9, "matchup": "cross",
         "samples": 2, "agents": ["tft", "grim", "wsls", "rand", "gtft"], "horizon": "known"},
        {"game": "pd_harsh", "mechanism": "repetition", "rounds": 4, "matchup": "versus",
         "agents": ["tft", "rand"], "opponents": ["allc", "alld", "alt"]},
        {"game": "pd_canonical", "mechanism": "repetition", "rounds": 5, "matchup": "self",
         "agents": ["gtft"], "samples": 3},
        {"game": "public_good", "mechanism": "repetition", "rounds": 3, "matchup": "self",
         "agents": ["tft", "alt"]},
        {"game": "stag_hunt", "mechanism": "none", "matchup": "cross", "samples": 2,
         "agents": ["tft", "rand"]},
    ],
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    path = tmp_path_factory.mktemp("moves") / "coop.db"
    store = Store(path)
    summary = asyncio.run(run_sweep(build_sweep(SWEEP), store, run_id=RUN))
    store.close()
    assert summary.status == "done", summary.errors
    return path


def stored(store: Store) -> list[tuple]:
    return store.db.execute(
        "select match_id, shape, moves from match_moves where run_id = ? order by match_id",
        [RUN]).fetchall()


def reference(store: Store) -> list[tuple]:
    return [tuple(r) for r in store.db.execute(REFERENCE_SQL, [RUN]).fetchall()]


def sections(store: Store) -> dict:
    from coop_tui.report import build_report

    report = build_report(store, RUN)
    return json.loads(json.dumps(
        {k: report.get(k) for k in ("strategic_personality", "cooperation_by_model")}))


def test_every_finished_match_stores_the_moves_its_rounds_hold(db: Path) -> None:
    store = Store(db)
    rows = stored(store)
    store_reference = reference(store)
    store.close()
    assert rows == store_reference
    assert len(rows) > 60
    # one-shot matches are kept as they are (the profile skips them): one round, two seats
    assert any(shape == "1 1 2" for _, shape, _moves in rows)
    assert any(shape == "1 9 18" and "0" in moves and "1" in moves for _, shape, moves in rows)


def copy(db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "copy.db"
    shutil.copy(db, path)
    return path


def test_sections_from_stored_moves_equal_sections_read_from_rounds(
        db: Path, tmp_path: Path) -> None:
    store = Store(copy(db, tmp_path))
    new = sections(store)
    assert new["strategic_personality"] and new["cooperation_by_model"]
    with store.db.conn:  # no stored moves: every match read live from its rounds
        store.db.conn.execute("delete from match_moves")
    old = sections(store)
    store.close()
    assert new == old


def test_the_migration_backfills_the_same_rows(db: Path, tmp_path: Path) -> None:
    path = copy(db, tmp_path)
    store = Store(path)
    before = stored(store)
    with store.db.conn:  # a database from before the migration
        store.db.conn.execute("drop table match_moves")
        store.db.conn.execute(
            "delete from _migrations where name = 'm080_report_sections_match_moves'")
    store.close()
    store = Store(path)
    after = stored(store)
    store.close()
    assert after == before


def test_folding_one_match_at_a_time_writes_the_same_rows(db: Path, tmp_path: Path) -> None:
    store = Store(copy(db, tmp_path))
    before = stored(store)
    with store.db.conn:  # every match done but not folded: fold_pending folds each alone
        summaries.delete_run(store.db.conn, RUN)
        assert stored(store) == []
        assert summaries.fold_pending(store.db.conn, RUN) == len(before)
    after = stored(store)
    store.close()
    assert after == before


def test_a_match_played_again_or_a_deleted_run_leaves_no_stale_moves(
        db: Path, tmp_path: Path) -> None:
    store = Store(copy(db, tmp_path))
    mid, = store.db.execute("select match_id from match_moves where run_id = ? limit 1",
                            [RUN]).fetchone()
    n = len(stored(store))
    with store.db.conn:
        summaries.unfold(store.db.conn, mid)
    assert mid not in {r[0] for r in stored(store)} and len(stored(store)) == n - 1
    store.delete_run(RUN)
    left = store.db.execute("select count(*) from match_moves").fetchone()[0]
    store.close()
    assert left == 0


def test_a_match_not_folded_yet_is_read_live(db: Path, tmp_path: Path) -> None:
    store = Store(copy(db, tmp_path))
    full = sections(store)
    mid, = store.db.execute(
        """select m.id from matches m join seats s on s.match_id = m.id and s.seat = 0
           where m.run_id = ? and m.game = 'pd_canonical' and s.agent = 'rand'
           limit 1""", [RUN]).fetchone()
    with store.db.conn:  # done, summaries not written (a crash between the two writes)
        store.db.conn.execute("delete from match_moves where match_id = ?", [mid])
    partial = sections(store)
    store.close()
    assert partial == full


def test_runs_without_one_shot_matches_learn_it_from_an_index(tmp_path: Path) -> None:
    """The similarity sections (expected, welfare, ...) ask whether a run has one-shot
    matches through an index, not a scan of the run's matches."""
    from coop_tui.analysis.similarity_play import ANY_ONE_SHOT_SQL, ONE_SHOT

    store = Store(tmp_path / "plan.db")
    plan = " ".join(str(r[-1]) for r in store.db.execute(
        "explain query plan " + ANY_ONE_SHOT_SQL, ["x", *ONE_SHOT]).fetchall())
    teams = " ".join(str(r[-1]) for r in store.db.execute(
        "explain query plan select 1 from matches where run_id = ? and mechanism = 'teams'"
        " limit 1", ["x"]).fetchall())
    store.close()
    assert "matches_run_mechanism" in plan and "SCAN" not in plan
    assert "matches_run_mechanism" in teams and "SCAN" not in teams


def reference_seat_runs(db: object, run_id: str) -> list[tuple]:
    """The profile's reader before moves were stored and seat runs cached by pattern:
    seats from their own query, every match's counts taken on its own, read live."""
    from coop_tui.analysis.personality import provider_from_spec
    from coop_tui.analysis.personality_profile import (
        _condition,
        _counts,
        _counts_with_gaps,
        _with_gaps,
    )

    providers = {agent: provider_from_spec(kind, spec) for agent, kind, spec in db.execute(
        """select distinct s.agent, s.agent_kind, s.agent_spec from seats s
           join matches m on m.id = s.match_id where m.run_id = ?""", [run_id]).fetchall()}
    seats: dict[str, dict[int, str]] = {}
    for mid, seat, agent in db.execute(
            """select s.match_id, s.seat, s.agent from matches m join seats s
               on s.match_id = m.id where m.run_id = ? and m.status = 'done'""", [run_id]):
        seats.setdefault(mid, {})[seat] = agent
    out = []
    rows = db.execute(
        """select m.id, m.game, m.condition, m.matchup,
                  (select min(round) || ' ' || max(round) || ' ' || count(*)
                   from rounds where match_id = m.id),
                  (select group_concat(coalesce(c, '.'), '') from (select cooperated as c
                   from rounds where match_id = m.id order by round, seat))
           from matches m where m.run_id = ? and m.status = 'done'""", [run_id]).fetchall()
    for mid, game, cond, matchup, shape, both in rows:
        pair = seats.get(mid, {})
        if not both or sorted(pair) != [0, 1]:
            continue
        first, last, n = map(int, shape.split(" "))
        if n == 2 * (last - first + 1) == len(both) and "." not in both:
            s0, s1 = both[0::2], both[1::2]
        else:
            fixed = _with_gaps(db, mid)
            if fixed is None:
                continue
            first, s0, s1 = fixed
        if len(s0) < 2:
            continue
        gaps = "." in s0 or "." in s1
        label, known = _condition(cond)
        for seat in (0, 1) if matchup != "versus" else (0,):
            mine, theirs = (s0, s1)[seat], (s0, s1)[1 - seat]
            counts = (_counts_with_gaps(mine, theirs) if gaps
                      else (*_counts(mine, theirs), len(mine)))
            coop, first_c, joint, last_c, before, ac, cac, ad, cad, used = counts
            if used < 2:
                continue
            if gaps:
                mine = "".join(c if o != "." else "." for c, o in zip(mine, theirs, strict=True))
            agent, opponent = pair[seat], pair[1 - seat]
            out.append((mid, seat, agent, opponent, providers[agent], game, label, known,
                        used, coop, first_c, joint, last_c, before, ac, cac, ad, cad,
                        first, mine))
    return out


def test_seat_runs_equal_the_reference_reader_with_and_without_gaps(
        db: Path, tmp_path: Path) -> None:
    from coop_tui.analysis.personality_profile import read_seat_runs

    store = Store(copy(db, tmp_path))
    assert [tuple(r) for r in read_seat_runs(store.db, RUN)] == reference_seat_runs(store.db, RUN)
    # a recorded gap (a move not recorded), stored as it is now in the rounds
    mid, = store.db.execute(
        """select m.id from matches m where m.run_id = ? and m.game = 'pd_canonical'
           and m.matchup = 'cross' limit 1""", [RUN]).fetchone()
    with store.db.conn:
        store.db.conn.execute("update rounds set cooperated = null where match_id = ?"
                              " and round = 3 and seat = 1", [mid])
        summaries.fold_moves(store.db.conn, [mid])
    runs = [tuple(r) for r in read_seat_runs(store.db, RUN)]
    expected = reference_seat_runs(store.db, RUN)
    store.close()
    assert runs == expected
    assert any(r[0] == mid and "." in r[-1] for r in runs)


def test_per_match_sums_equal_the_reference(db: Path) -> None:
    """The per-match sums behind every interval, against how they were taken before
    (fields by name, one tuple per seat run)."""
    from coop_tui.analysis.personality_profile import _by_match, read_seat_runs

    def reference(runs: list) -> list[list[float]]:
        acc: dict[str, list[float]] = {}
        for r in runs:
            ends = r.before_last is not None
            row = (r.coop, r.rounds, r.after_c, r.coop_after_c, r.after_d, r.coop_after_d,
                   r.joint, r.first, 1, r.last if ends else 0, r.before_last if ends else 0,
                   1 if ends else 0)
            a = acc.get(r.match_id)
            if a is None:
                acc[r.match_id] = list(row)
            else:
                for i, v in enumerate(row):
                    a[i] += v
        return list(acc.values())

    store = Store(db)
    runs = read_seat_runs(store.db, RUN)
    store.close()
    self_play = [r for r in runs if r.agent == r.opponent]
    assert self_play and _by_match(self_play) == reference(self_play)
    assert _by_match(runs) == reference(runs)


def test_the_shared_read_follows_writes_and_other_connections(db: Path, tmp_path: Path) -> None:
    """``cooperation_by_model`` and the profile share one read per database state."""
    from coop_tui.analysis.personality_profile import load_seat_runs, read_seat_runs

    path = copy(db, tmp_path)
    store = Store(path)
    first = load_seat_runs(store.db, RUN)
    assert load_seat_runs(store.db, RUN) is first  # nothing changed: read once
    other = Store(path)  # another connection changes a match's round 2 and its moves
    mid = first[0].match_id
    with other.db.conn:
        other.db.conn.execute("update rounds set cooperated = 1 - cooperated"
                              " where match_id = ? and round = 2", [mid])
        summaries.fold_moves(other.db.conn, [mid])
    other.close()
    again = load_seat_runs(store.db, RUN)
    assert again is not first and again == read_seat_runs(store.db, RUN) and again != first
    store.close()


def test_moves_taken_in_memory_equal_what_sql_reads_back(tmp_path: Path) -> None:
    """A replaced row counts once, unrecorded cooperation is ``.``, no rounds is no moves,
    and anything but 0/1/None is left to the SQL."""
    import sqlite3

    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("create table rounds (match_id text, round integer, seat integer,"
                 " action integer, payoff real, cooperated integer, info text,"
                 " primary key (match_id, round, seat))")
    rows = [("m", 2, 1, 0, 1.0, True, None), ("m", 1, 0, 0, 1.0, 1, None),
            ("m", 1, 1, 1, 0.0, 0, None), ("m", 2, 0, 1, 0.0, None, None),
            ("m", 1, 1, 0, 3.0, 1, None)]  # replaces round 1 seat 1
    conn.executemany("insert or replace into rounds values (?, ?, ?, ?, ?, ?, ?)", rows)
    read = conn.execute(f"select {summaries.MOVES_SHAPE.format(m=repr('m'))},"
                        f" {summaries.MOVES_STRING.format(m=repr('m'))}").fetchone()
    empty = conn.execute(f"select {summaries.MOVES_SHAPE.format(m=repr('x'))},"
                         f" {summaries.MOVES_STRING.format(m=repr('x'))}").fetchone()
    conn.close()
    assert summaries.moves_from_rounds(rows) == read == ("1 2 4", "11.1")
    assert summaries.moves_from_rounds([]) == empty == (None, None)
    assert summaries.moves_from_rounds([("m", 1, 0, 0, 1.0, 2, None)]) is None
