"""Strategy rounds sent as one event (DirectDecisions) store exactly what one
DecisionDone per seat stores.

The same sweep is played through the real engine, sweep runner and SQLite store: as a
headless sweep plays it (every listener reads DirectRounds, so a strategy-only match's
rounds arrive as one event per match and are written as narrow rows, their summaries
folded many matches at a time), with a listener that reads DirectDecisions but not
DirectRounds (one event per round and one per round's result), and with a listener that
reads neither, which makes the engine send one DecisionDone per seat, written through
the general path. Every stored column of
every decision, round and summary, the exported CSV and Parquet files, the decisions as
the inspector reads them and the report must be the same; only what differs between any
two runs (ids, clock times) is left out of the comparison.
"""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from coop_tui.agents.strategies import get_strategy
from coop_tui.agents.strategy_agent import StrategyAgent
from coop_tui.engine import MatchContext
from coop_tui.events import (
    DecisionDone,
    DirectDecisions,
    DirectRounds,
    Event,
    EventBus,
    RoundDone,
)
from coop_tui.export import export_run
from coop_tui.games import get_game
from coop_tui.report import build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

AGENTS = {
    "tft": {"strategy": "tit_for_tat"},
    "grim": {"strategy": "grim_trigger"},
    "alt": {"strategy": "alternator"},
    "gtft": {"strategy": "generous_tit_for_tat", "params": {"q": 0.4}},  # draws actions
    "rand": {"strategy": "random", "params": {"p": 0.3}},
}
SWEEP = {
    "name": "direct", "seed": 11, "reuse": False, "agents": AGENTS,
    "experiments": [
        {"game": "prisoners", "mechanism": "repetition", "rounds": 7, "matchup": "cross",
         "samples": 2, "agents": list(AGENTS), "payoff": "mean"},
        {"game": "stag_hunt", "mechanism": "repetition", "rounds": 4, "matchup": "cross",
         "agents": ["tft", "rand"], "randomize_labels": True},
        {"game": "public_good", "mechanism": "repetition", "rounds": 3, "matchup": "self",
         "agents": ["tft", "alt"]},
        {"game": "stag_hunt", "mechanism": "none", "matchup": "cross", "samples": 2,
         "agents": ["tft", "rand"]},
    ],
}
VARYING = {"id", "match_id", "run_id", "created_at", "latency_ms", "started_at", "finished_at"}


class PerDecision:
    """A listener that reads DecisionDone only: its presence turns batching off."""

    def __init__(self) -> None:
        self.decisions = 0
        self.batches = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, DecisionDone):
            self.decisions += 1
        elif isinstance(event, DirectDecisions):
            self.batches += 1


class PerRound:
    """A listener that reads DirectDecisions but not DirectRounds: its presence makes a
    strategy-only match send two events per round again (the path before DirectRounds)."""

    accepts_direct_decisions = True

    def __init__(self) -> None:
        self.seen: dict[type, int] = {}

    def __call__(self, event: Event) -> None:
        self.seen[type(event)] = self.seen.get(type(event), 0) + 1


class WholeMatch(PerRound):
    """Reads DirectRounds too: what a headless sweep's listeners are."""

    accepts_direct_rounds = True


async def play(db: Path, *, batched: bool, per_round: bool = False) -> tuple[Store, str, int]:
    store = Store(db)
    bus = EventBus()
    probe = PerDecision()
    rounds_probe = PerRound() if per_round else WholeMatch()
    if batched:
        bus.subscribe(rounds_probe)
    else:
        bus.subscribe(probe)
    summary = await run_sweep(build_sweep(SWEEP, check_keys=False), store, bus=bus)
    assert summary.status == "done", summary.errors
    assert probe.batches == 0  # a listener that does not read them never gets them
    if not batched:
        assert probe.decisions == summary.decisions > 0
    elif per_round:
        assert DirectRounds not in rounds_probe.seen and rounds_probe.seen[RoundDone] > 0
    else:  # a strategy-only repeated match: one event for all its rounds, none per round
        assert rounds_probe.seen[DirectRounds] == 56  # the repeated experiments' matches
        assert DirectDecisions not in rounds_probe.seen
        assert rounds_probe.seen[RoundDone] == 8  # the one-shot matches' (not played directly)
    return store, summary.run_id, summary.decisions


def rows(conn: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cursor = conn.execute(sql)
    names = [c[0] for c in cursor.description]
    return [{k: v for k, v in zip(names, r, strict=True) if k not in VARYING} for r in cursor]


def stored(store: Store) -> dict[str, list[dict[str, Any]]]:
    conn = store.db.conn
    key = "(select match_key from matches m where m.id = t.match_id)"
    out = {
        "decisions": rows(conn, f"select {key} as mk, t.* from decisions t order by mk, t.round, t.phase, t.seat"),
        "rounds": rows(conn, f"select {key} as mk, t.* from rounds t order by mk, t.round, t.seat"),
        "matches": rows(conn, "select * from matches order by match_key"),
        "totals": rows(conn, "select (select match_key from matches m where m.id = t.match_id) as mk,"
                             " t.* from match_totals t order by mk"),
    }
    for table in ("coop_rounds", "action_counts", "conditional_counts"):
        out[table] = rows(conn, f"select * from {table} order by 2, 3, 4, 5, 6")
    return out


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Equal, field by field (NaN equal to NaN), with the path of the first difference.

    Floats may differ in the last bits only: a strategy sweep yields to the event loop on a
    clock (so signals are handled at any speed), which can change the order in which
    concurrent matches are folded into the running sums."""
    if isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) or (a != a and b != b), path
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def export_rows(path: Path, run_id: str, out: Path, fmt: str) -> dict[str, list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    tables = {}
    for f in export_run(path, run_id, out, fmt):
        if fmt == "csv":
            with f.open() as fh:
                found = list(csv.DictReader(fh))
        else:
            found = pq.read_table(f).to_pylist()
        keyed = []
        for r in found:
            mk = r.get("match_key") or r.get("match_id")
            keyed.append({k: v for k, v in r.items() if k not in VARYING} | {"_n": mk is not None})
        tables[f.stem] = keyed
    return tables


async def test_batched_strategy_rounds_store_what_one_event_per_decision_stores(tmp_path: Path) -> None:
    fast, fast_run, n_fast = await play(tmp_path / "fast.db", batched=True)
    slow, slow_run, n_slow = await play(tmp_path / "slow.db", batched=False)
    rounds, _run, n_rounds = await play(tmp_path / "rounds.db", batched=True, per_round=True)
    assert n_fast == n_slow == n_rounds > 0
    a, b, c = stored(fast), stored(slow), stored(rounds)
    rounds.close()
    assert len(a["decisions"]) == n_fast
    for table in a:
        assert len(a[table]) == len(b[table]) == len(c[table]) > 0, table
        assert_same(a[table], b[table])
        assert_same(c[table], b[table])

    # the inspector's view of every decision, field for field
    def decisions(store: Store) -> list[dict[str, Any]]:
        out = []
        for m in store.db.execute("select id from matches order by match_key").fetchall():
            for d in store.decisions(m[0]):
                out.append({k: v for k, v in d.__dict__.items() if k not in VARYING})
        return out

    assert decisions(fast) == decisions(slow)

    # the report, whole
    rep_a, rep_b = build_report(fast, fast_run), build_report(slow, slow_run)
    for rep in (rep_a, rep_b):
        rep.pop("run")
    assert_same(json.loads(json.dumps(rep_a, default=str)), json.loads(json.dumps(rep_b, default=str)))
    fast.close()
    slow.close()

    # the exported files, every column but ids and clock times
    for fmt in ("csv", "parquet"):
        ea = export_rows(tmp_path / "fast.db", fast_run, tmp_path / f"a-{fmt}", fmt)
        eb = export_rows(tmp_path / "slow.db", slow_run, tmp_path / f"b-{fmt}", fmt)
        assert ea.keys() == eb.keys() and "decisions" in ea
        for name in ea:
            # the same rows; matches may finish (and so be exported) in another order,
            # since a strategy sweep yields to the event loop on a clock
            assert sorted(map(repr, ea[name])) == sorted(map(repr, eb[name])), (fmt, name)


async def test_a_listener_that_reads_only_decision_events_sees_every_decision(tmp_path: Path) -> None:
    """The TUI's live screen and any script's listener never lose a decision to batching."""
    store = Store(tmp_path / "l.db")
    bus = EventBus()
    seen: list[tuple[int, int]] = []
    bus.subscribe(lambda e: seen.append((e.decision.round, e.decision.seat))
                  if isinstance(e, DecisionDone) else None)
    summary = await run_sweep(build_sweep(SWEEP, check_keys=False), store, bus=bus)
    assert summary.status == "done"
    assert len(seen) == summary.decisions == store.db.execute("select count(*) from decisions").fetchone()[0]
    store.close()


def test_direct_decisions_rebuild_the_decisions_they_carry() -> None:
    answer = ('{"A0": 100, "A1": 0}', {"A0": 1.0, "A1": 0.0}, ("A0", "A1"), (0, 1), (1.0, 0.0),
              0, 1.0, True, None)
    event = DirectDecisions("m", 3, 12.5, ((0, "tft", 0.01, answer), (1, "grim", 0.02, answer)))
    first, second = event.decisions()
    assert (first.seat, first.agent, first.round, first.action, first.latency_ms) == (0, "tft", 3, 0, 0.01)
    assert (second.seat, second.agent, second.created_at) == (1, "grim", 12.5)
    assert first.parsed == {"A0": 1.0, "A1": 0.0} and first.parsed is not second.parsed
    assert first.valid and first.attempts == 1 and first.prompt == [] and first.cost_usd == 0.0
    assert first.kind == "mixed" and first.phase == "play" and first.cooperated is True


def test_a_strategy_match_played_again_before_its_fold_is_written_counts_once(tmp_path: Path) -> None:
    """Summaries of finished strategy matches are held back and written many at a time;
    a match started again meanwhile (a replay in the same process) must leave them
    exactly as if only its last play had happened, as must closing the store early."""
    from coop_tui.events import MatchDone, MatchStarted, RoundDone
    from coop_tui.summaries import pending

    def play_once(bus: EventBus, actions: tuple[int, int]) -> None:
        bus.emit(MatchStarted("r", "m", 0, "prisoners", "repetition", ("tft", "alld"),
                              info={"agent_kinds": ["strategy", "strategy"]}))
        for rnd in (1, 2):
            rows = tuple(
                (seat, agent, 0.01, (f"answer {a}", {"A0": 1.0 - a, "A1": float(a)}, ("A0", "A1"),
                                     (0, 1), (1.0 - a, float(a)), a, 1.0 - a, a == 0, None))
                for seat, (agent, a) in enumerate(zip(("tft", "alld"), actions, strict=True))
            )
            bus.emit(DirectDecisions("m", rnd, 5.0, rows))
            bus.emit(RoundDone("m", rnd, actions, (1.0, 1.0), (0, 1), {}))
        bus.emit(MatchDone("m", (1.0, 1.0)))

    db = tmp_path / "again.db"
    store = Store(db)
    store.create_run("r", "again", kind="sweep", seed=1, sweep_hash="h", spec={})
    bus = EventBus()
    bus.subscribe(store, critical=True)
    assert bus.direct_batches
    play_once(bus, (0, 1))
    assert pending(store.db.conn, "r") == ["m"]  # held back: read live meanwhile
    play_once(bus, (1, 1))
    store.close()  # no RunDone: closing writes what was held back
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*), sum(action) from decisions").fetchone() == (4, 4)
    assert conn.execute("select decisions from match_totals").fetchall() == [(4,)]
    coop = conn.execute("select agent, round, n, coop_sum, cooperated from coop_rounds"
                        " order by agent, round").fetchall()
    assert coop == [("alld", 1, 1, 0.0, 0), ("alld", 2, 1, 0.0, 0),
                    ("tft", 1, 1, 0.0, 0), ("tft", 2, 1, 0.0, 0)]
    acts = conn.execute("select agent, action, n, sampled from action_counts order by 1, 2").fetchall()
    assert acts == [("alld", 0, 2, 0), ("alld", 1, 2, 2), ("tft", 0, 2, 0), ("tft", 1, 2, 2)]
    conn.close()


def test_a_two_seat_round_is_recorded_as_the_general_path_records_it() -> None:
    """Two-seat rounds take a written-out path (every round of a strategy pairing): the
    histories, cooperation records and RoundDone events must be the ones the general
    loop gives, which it takes when the seats are named."""
    def played(name_seats: bool) -> tuple[Any, ...]:
        bus, events = EventBus(), []
        bus.subscribe(events.append)
        agent = StrategyAgent("tft", get_strategy("tit_for_tat"))
        ctx = MatchContext(run_id="r", match_id="m", game=get_game("prisoners"),
                           agents=[agent, agent], bus=bus, seed=3)
        profiles = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 0)]
        for t, actions in enumerate(profiles, start=1):
            payoffs = ctx.game.payoff(list(actions))
            ctx.finish_round(t, list(actions), list(payoffs), seats=(0, 1) if name_seats else None,
                             info={"cooperated": [a == 0 for a in actions]})
        rounds = [e for e in events if isinstance(e, RoundDone)]
        return ctx.histories, ctx._records, rounds

    fast, general = played(name_seats=False), played(name_seats=True)
    assert fast == general
    histories, records, rounds = fast
    assert [m.others for m in histories[0]] == [(0,), (1,), (0,), (1,), (0,)]
    assert records == [[True, False, True, False, True], [True, True, False, False, False]]
    assert all(type(m.own) is int and type(m.payoff) is float for h in histories for m in h)
    assert rounds[1].actions == (0, 1) and rounds[1].seats == (0, 1)


def test_a_pairings_conditional_counts_are_the_general_ones_in_the_same_order() -> None:
    """Two-seat matches count "what a seat did after its co-player's move" on a written-out
    path; the general one (rows grouped per round) must give the same counts in the same
    order. A different info per seat (same group) sends the rows down the general path."""
    import random

    from coop_tui.summaries import _conditional, _pair_conditional

    rng = random.Random(4)
    for n_rounds in (1, 2, 7, 60):
        rows, general = [], []
        for rnd in range(3, 3 + n_rounds):
            for seat in (0, 1):
                action = rng.randrange(2)
                rows.append(("m", rnd, seat, action, 1.0, 1, "{}"))
                general.append(("m", rnd, seat, action, 1.0, 1, "{}" if seat == 0 else '{"x": 1}'))
        agents = ["tft", "grim"]
        assert _pair_conditional(agents, general) is None
        fast = _pair_conditional(agents, rows)
        assert fast is not None
        assert list(fast.items()) == list(_conditional(agents, general).items())
        assert sum(fast.values()) == 2 * (n_rounds - 1)
    # rows that are not seat 1 then seat 2 of consecutive rounds take the general path
    assert _pair_conditional(["a", "b"], [("m", 1, 1, 0, 0.0, 1, "{}"), ("m", 1, 0, 0, 0.0, 1, "{}")]) is None
    assert _pair_conditional(["a", "b"], [("m", 1, 0, 0, 0.0, 1, "{}"), ("m", 1, 1, 0, 0.0, 1, "{}"),
                                          ("m", 3, 0, 0, 0.0, 1, "{}"), ("m", 3, 1, 0, 0.0, 1, "{}")]) is None


class _Recorder:
    """A listener that records the event types it is called with, ignoring some."""

    def __init__(self, ignores: tuple[type[Event], ...] = ()) -> None:
        self.ignores = ignores
        self.kinds: list[str] = []

    def __call__(self, event: Event) -> None:
        self.kinds.append(type(event).__name__)


def test_a_listener_is_not_called_for_the_event_types_it_ignores() -> None:
    """The progress view and the counters ignore rounds: the bus skips them there (a
    strategy tournament emits one per round), and still hands every other event on."""
    from coop_tui.events import PER_ROUND_EVENTS, MatchDone, TextDelta

    bus = EventBus()
    everything, counts = _Recorder(), _Recorder(ignores=PER_ROUND_EVENTS)
    bus.subscribe(everything)
    unsubscribe = bus.subscribe(counts)
    round_done = RoundDone("m", 1, (0, 1), (0.0, 5.0), (0, 1), {})
    for event in (round_done, TextDelta("m", 0, "x"), MatchDone("m", (0.0, 5.0)), round_done):
        bus.emit(event)
    assert everything.kinds == ["RoundDone", "TextDelta", "MatchDone", "RoundDone"]
    assert counts.kinds == ["MatchDone"]
    unsubscribe()
    bus.emit(MatchDone("m2", (1.0, 1.0)))
    assert counts.kinds == ["MatchDone"] and everything.kinds[-1] == "MatchDone"
    late = _Recorder(ignores=(MatchDone,))  # a listener added later: the routes are rebuilt
    bus.subscribe(late)
    bus.emit(round_done)
    bus.emit(MatchDone("m3", (1.0, 1.0)))
    assert late.kinds == ["RoundDone"]


def test_a_strategy_match_played_again_keeps_only_the_rounds_of_its_last_play(tmp_path: Path) -> None:
    """A strategy match's rounds are written with a plain insert: its earlier rounds go
    when it starts again, as its decisions do, so an attempt that got further leaves none
    behind (the store used to overwrite only the rounds the new play reached)."""
    from coop_tui.events import MatchDone, MatchStarted

    def play(bus: EventBus, rounds: int) -> None:
        bus.emit(MatchStarted("r", "m", 0, "prisoners", "repetition", ("tft", "alld"),
                              info={"agent_kinds": ["strategy", "strategy"]}))
        for rnd in range(1, rounds + 1):
            answer = ("answer 0", {"A0": 1.0, "A1": 0.0}, ("A0", "A1"), (0, 1), (1.0, 0.0),
                      0, 1.0, True, None)
            bus.emit(DirectDecisions("m", rnd, 5.0, ((0, "tft", 0.01, answer),
                                                     (1, "alld", 0.01, answer))))
            bus.emit(RoundDone("m", rnd, (0, 0), (3.0, 3.0), (0, 1), {"cooperated": [True, True]}))
        bus.emit(MatchDone("m", (3.0, 3.0)))

    store = Store(tmp_path / "again.db")
    store.create_run("r", "again", kind="sweep", seed=1, sweep_hash="h", spec={})
    bus = EventBus()
    bus.subscribe(store, critical=True)
    play(bus, 3)
    play(bus, 2)
    store.close()
    with sqlite3.connect(tmp_path / "again.db") as conn:
        rounds = conn.execute("select round, seat from rounds order by round, seat").fetchall()
        decisions = conn.execute("select count(*) from decisions").fetchone()[0]
    assert rounds == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert decisions == 4


async def test_a_long_match_sends_its_rounds_in_chunks(tmp_path: Path, monkeypatch: Any) -> None:
    """A strategy match of many rounds is not held in memory whole: its rounds go in
    chunks of DIRECT_ROUNDS_CHUNK, and the rows are those of the one-event-per-match path."""
    import coop_tui.engine.direct as direct  # the module whose rounds read the chunk size

    sweep = {**SWEEP, "experiments": [SWEEP["experiments"][0]]}
    whole = Store(tmp_path / "whole.db")
    await run_sweep(build_sweep(sweep, check_keys=False), whole, bus=EventBus())
    monkeypatch.setattr(direct, "DIRECT_ROUNDS_CHUNK", 2)  # 7 rounds: 4 events a match
    store, bus, probe = Store(tmp_path / "chunks.db"), EventBus(), WholeMatch()
    bus.subscribe(probe)
    summary = await run_sweep(build_sweep(sweep, check_keys=False), store, bus=bus)
    assert summary.status == "done"
    matches = store.db.execute("select count(*) from matches").fetchone()[0]
    assert probe.seen[DirectRounds] == 4 * matches
    a, b = stored(store), stored(whole)
    for table in a:
        assert_same(a[table], b[table])
    store.close()
    whole.close()


def test_a_strategy_sweep_does_not_import_scipy(tmp_path: Path) -> None:
    """``coop-tui --batch`` of a strategy tournament solves its deviation ratings without
    importing scipy (a third of a second of a strategy sweep's start-up), in a real process."""
    import subprocess
    import sys

    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'name = "no-scipy"\nseed = 1\nreuse = false\n\n[agents]\n'
        'tft = { strategy = "tit_for_tat" }\nalt = { strategy = "alternator" }\n\n'
        '[[experiments]]\ngame = "prisoners"\nmechanism = "repetition"\nrounds = 5\n'
        'matchup = "cross"\nagents = ["tft", "alt"]\n'
    )
    db = tmp_path / "s.db"
    code = (  # counts the events the bus carries: the whole command's listeners (the
        # store, the progress view, the watch channel ...) keep the whole-match path
        "import sys\nfrom coop_tui import events\nfrom coop_tui.cli import main\n"
        "kinds = []\nemit = events.EventBus.emit\n"
        "events.EventBus.emit = lambda bus, e: (kinds.append(type(e).__name__), emit(bus, e))[1]\n"
        f"code = main(['--db', {str(db)!r}, '--batch', {str(sweep)!r}, '--yes'])\n"
        "print('EXIT', code, 'SCIPY', 'scipy' in sys.modules, 'WHOLE', kinds.count('DirectRounds'),"
        " 'ROUNDS', kinds.count('RoundDone'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SCIPY False" in out.stdout and "EXIT 0" in out.stdout.replace("None", "0"), out.stdout[-2000:]
    # cross play of two agents: four matches, each one DirectRounds, no per-round events
    assert "WHOLE 4 ROUNDS 0" in out.stdout, out.stdout[-2000:]
    with sqlite3.connect(db) as conn:  # and the ratings were stored, for `report`
        assert conn.execute("select count(*) from rating_results").fetchone()[0] > 0


def _random_direct_match(rng: Any, match_id: str, agents: tuple[str, str], n_rounds: int) -> tuple[list[Any], list[Any]]:
    """A strategy match's DirectDecisions and rounds rows with mixed answers: fractional
    probabilities, answers with no cooperation probability or no sampled cooperation,
    answer tuples shared between rows as the engine shares them."""
    answers = []
    for _ in range(4):
        p = rng.choice([0.0, 1.0, rng.random(), 0.1, 1 / 3])
        cooperated = rng.choice([True, False, None])
        action = 0 if cooperated else 1
        answers.append((f"answer {p}", {"A0": p, "A1": 1.0 - p}, ("A0", "A1"), (0, 1), (p, 1.0 - p), action,
                        rng.choice([p, p, None]), cooperated, None))
    events, rounds = [], []
    for rnd in range(1, n_rounds + 1):
        rows = tuple((seat, agents[seat], 0.01, rng.choice(answers)) for seat in (0, 1))
        events.append(DirectDecisions(match_id, rnd, 1.0, rows))
        for seat, (_s, _a, _l, answer) in enumerate(rows):
            rounds.append((match_id, rnd, seat, answer[5], 1.0, answer[7], "{}"))
    return events, rounds


def test_array_folds_add_every_float_as_folding_match_by_match_does(tmp_path: Path) -> None:
    """DirectFolds adds the per-round sums with NumPy: each match's sums (self-play puts
    two rows on a key), added to the stored ones match by match, over two writes, must be
    bit for bit what :func:`fold_rows` gives folding each match alone, in the same order."""
    import random

    from coop_tui.store import DECISION_COLUMNS, decision_values
    from coop_tui.summaries import DirectFolds, fold_rows

    rng = random.Random(7)
    plan = [(f"m{i}", "r1" if i % 3 else "r2", i % 2, "c=1",
             rng.choice([("tft", "grim"), ("tft", "tft"), ("alt", "grim")]), rng.randrange(1, 30))
            for i in range(24)]
    direct = Store(tmp_path / "direct.db").db.conn
    one_by_one = Store(tmp_path / "rows.db").db.conn
    for batch in (plan[:10], plan[10:]):
        folds = DirectFolds()
        for mid, run, experiment, ckey, agents, n_rounds in batch:
            events, rounds = _random_direct_match(rng, mid, agents, n_rounds)
            folds.add((mid, run, experiment, ckey), list(agents), events, rounds)
            decisions = [decision_values(d) for e in events for d in e.decisions()]
            fold_rows(one_by_one, (mid, run, experiment, ckey), list(agents), decisions, rounds,
                      DECISION_COLUMNS)
        folds.write(direct)
    for table in ("coop_rounds", "action_counts", "conditional_counts", "match_totals"):
        query = f"select * from {table} order by 1, 2, 3, 4, 5"
        got, want = direct.execute(query).fetchall(), one_by_one.execute(query).fetchall()
        assert got == want and want, table
        assert [tuple(map(type, r)) for r in got] == [tuple(map(type, r)) for r in want], table


def test_moves_of_rows_in_order_are_the_moves_of_any_order() -> None:
    """moves_from_rounds reads rows written in round and seat order in one pass; rows in
    another order, repeated or with values it cannot read take the general path."""
    from coop_tui.summaries import _moves_of_cells, moves_from_rounds

    rows = [("m", rnd, seat, 0, 1.0, coop, "{}")
            for rnd, coops in enumerate([(1, 0), (True, None), (0, 0), (1.0, 1)], start=2)
            for seat, coop in enumerate(coops)]
    assert moves_from_rounds(rows) == _moves_of_cells(rows) == ("2 5 8", "101.0011")
    again = ("m", 3, 1, 0, 1.0, 1, "{}")  # round 3, seat 2 written again: the later row counts
    shuffled = [rows[3], rows[0], rows[1], rows[2], *rows[4:], again]
    assert moves_from_rounds(shuffled) == _moves_of_cells(shuffled) == ("2 5 8", "10110011")
    assert moves_from_rounds([("m", 1, 0, 0, 1.0, 0.5, "{}")]) is None
    assert moves_from_rounds([("m", 1.0, 0, 0, 1.0, 1, "{}")]) is None
    assert moves_from_rounds([]) == (None, None)


def test_a_pairings_round_rows_are_the_general_rows() -> None:
    """Two-seat rounds are turned into rows on a written-out path: the same rows as the
    general one (three seats, or seats re-matched), for every kind of cooperation info."""
    from coop_tui.store import _round_rows

    for coop in ([True, False], [None, 1], [0, None]):
        for info in ({"cooperated": coop}, {"cooperated": coop, "group": 2}):
            pair = RoundDone("m", 4, (1, 0), (0.5, 3.0), (3, 1), info)
            trio = RoundDone("m", 4, (1, 0, 1), (0.5, 3.0, 1.0), (3, 1, 0),
                             {**info, "cooperated": [*coop, None]})
            assert _round_rows(pair) == _round_rows(trio)[:2]
            assert _round_rows(pair)[1] == ("m", 4, 1, 0, 3.0, None if coop[1] is None else int(coop[1]),
                                            "{}" if "group" not in info else '{"group": 2}')
