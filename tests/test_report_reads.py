"""The report's shared reads give exactly what the separate queries they replaced gave.

``report`` now reads a run's match rows once per (experiment, condition) and merges the
rows per experiment in Python, shares cross-play sums between the tournament metrics and
CoopEval's tables, and joins seats through a covering index. Each test runs the old
query on a small mixed run (several experiments, games, mechanisms, answer rules,
replicates, a stag hunt with fractional payoffs) and compares it with the new path.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis import actions, coopeval_tables
from coop_tui.analysis.tournament import cross_play_tensor
from coop_tui.report import _conditions, _experiment_rows, build_report
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STRATEGIES = {
    "tft": {"strategy": "tit_for_tat"},
    "alld": {"strategy": "always_defect"},
    "rnd": {"strategy": "random"},
    "grim": {"strategy": "grim_trigger"},
}


def mixed_sweep() -> dict[str, Any]:
    return {
        "name": "mixed", "seed": 7, "concurrency": 1, "agents": STRATEGIES,
        "experiments": [
            {"game": "prisoners", "mechanism": "similarity", "matchup": "self",
             "agents": ["tft", "alld", "rnd"], "similarity": [0, 100], "answers": "strict"},
            {"game": ["prisoners", "stag_hunt"], "mechanism": "repetition", "matchup": "cross",
             "agents": ["tft", "alld", "grim", "rnd"], "rounds": 3},
            {"game": "prisoners", "mechanism": "repetition", "matchup": "cross",
             "agents": ["tft", "rnd", "grim"], "rounds": 2, "replicates": 2},
        ],
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    path = tmp_path_factory.mktemp("reads") / "mixed.db"
    store = Store(path)
    asyncio.run(run_sweep(build_sweep(mixed_sweep()), store, run_id="mixed"))
    return store


def old_rows(store: Store, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.db.execute(sql, ["mixed"]).fetchall()]


SPEC = "min(coalesce((select g.spec from game_specs g where g.hash = game_spec_hash), game_spec))"
"""A match's game spec, stored once per spec since m130 (inline before)."""


def test_experiment_rows_equal_the_group_by_experiment_they_replace(store: Store) -> None:
    old = old_rows(store, """select experiment, group_concat(distinct game),
        group_concat(distinct mechanism), min(coalesce((select g.spec from game_specs g where g.hash = game_spec_hash), game_spec)),
        min(matchup), count(*)
        from matches where run_id = ? group by experiment order by experiment""")
    new = _experiment_rows(store.db, "mixed")
    assert len(new) == 3 and {r[0] for r in new} == {0, 1, 2}
    assert [r[0] for r in new] == [r[0] for r in old]
    for (e, g, m, spec, mu, n), (e2, g2, m2, spec2, mu2, n2) in zip(new, old, strict=True):
        assert (e, spec, mu, n) == (e2, spec2, mu2, n2)
        assert sorted(set(g.split(","))) == sorted(set(g2.split(",")))  # read as sets
        assert sorted(set(m.split(","))) == sorted(set(m2.split(",")))
    assert sorted(set(new[1][1].split(","))) == ["prisoners", "stag_hunt"]


def test_condition_reads_equal_their_own_queries(store: Store) -> None:
    old_cond = old_rows(store, """select experiment, condition_key, min(game), min(mechanism),
        min(condition), min(similarity) from matches where run_id = ?
        group by experiment, condition_key""")
    assert _conditions(store.db, "mixed") == {(r[0], r[1]): r[2:] for r in old_cond}
    assert len(old_cond) >= 5
    old_meta = old_rows(store, """select experiment, condition_key, min(game), min(mechanism)
        from matches where run_id = ? group by experiment, condition_key""")
    assert actions._condition_meta(store.db, "mixed") == {(r[0], r[1]): r[2:] for r in old_meta}
    old_specs = old_rows(store, f"""select experiment, condition_key, {SPEC} from matches
        where run_id = ? group by experiment, condition_key""")
    import json

    assert actions._specs(store.db, "mixed") == {
        (e, c): json.loads(s) if s else {} for e, c, s in old_specs
    }


def test_answer_rules_equal_the_group_by_experiment_they_replace(store: Store) -> None:
    old = old_rows(store, """select experiment,
        group_concat(distinct coalesce(json_extract(info, '$.answers'), 'lenient'))
        from matches where run_id = ? group by experiment""")
    report = build_report(store, "mixed")
    got = {e["experiment"]: e["answers"] for e in report["experiments"]}
    assert got == {e: ",".join(sorted(r.split(","))) for e, r in old}
    assert got[0] == "strict" and got[1] == "lenient"


def test_payoffs_through_the_covering_index_are_bit_identical(store: Store) -> None:
    plan = " ".join(str(r) for r in store.db.execute(
        "explain query plan select s.agent, s.payoff from seats s indexed by idx_seats_payoff"
        " join matches m on m.id = s.match_id where m.run_id = ?", ["mixed"]))
    assert "COVERING INDEX idx_seats_payoff" in plan
    old = old_rows(store, """select m.experiment, m.condition_key, s.agent, count(*),
        sum(s.payoff), sum(s.payoff * s.payoff) from seats s join matches m on m.id = s.match_id
        where m.run_id = ? and m.status = 'done' and s.payoff is not null
        group by m.experiment, m.condition_key, s.agent""")
    report = build_report(store, "mixed")
    for exp, ckey, agent, n, total, _sq in old:
        e = next(x for x in report["experiments"] if x["experiment"] == exp)
        cond = next(c for c in e["conditions"] if c["condition_key"] == ckey)
        assert cond["agents"][agent]["mean_payoff"] == total / n  # exact, not approximate


def old_tensor(store: Store, exp: int, game: str, ckey: str, replicate: int | None):
    """The cross-play sums as the old code read them: the primary-key seat joins."""
    where = ("m.run_id = ? and m.experiment = ? and m.matchup = 'cross' and m.status = 'done'"
             " and m.game = ? and m.condition_key = ?")
    args: list[Any] = ["mixed", exp, game, ckey]
    if replicate is not None:
        where += " and m.replicate = ?"
        args.append(replicate)
    rows = store.db.execute(
        "select s0.agent, s1.agent, coalesce(sum(s0.payoff), 0), count(s0.payoff),"
        " coalesce(sum(s1.payoff), 0), count(s1.payoff) from matches m"
        " join seats s0 on s0.match_id = m.id and s0.seat = 0"
        f" join seats s1 on s1.match_id = m.id and s1.seat = 1 where {where}"
        " group by s0.agent, s1.agent", args).fetchall()
    return {(a, b): ([t0, t1], [n0, n1]) for a, b, t0, n0, t1, n1 in rows}


def tensor_sums(tensor: Any) -> Any:
    return (tensor.agents, tensor.payoffs.tolist(), tensor.counts.tolist())


def test_cross_play_tensors_equal_the_old_reads_and_replicates_stay_apart(store: Store) -> None:
    groups = coopeval_tables._groups(store.db, "mixed")
    assert {len(g["replicates"]) for g in groups} == {1, 2}
    from coop_tui.analysis.population import tensor_from_sums

    for g in groups:
        for r in g["replicates"]:
            new = coopeval_tables._tensor(store.db, "mixed", g, r)
            old = tensor_from_sums(old_tensor(store, g["experiment"], g["game"],
                                              g["condition_key"], r))
            assert tensor_sums(new) == tensor_sums(old)
        pooled = cross_play_tensor(store.db, "mixed", g["experiment"], g["game"], g["condition_key"])
        old_pooled = tensor_from_sums(old_tensor(store, g["experiment"], g["game"],
                                                 g["condition_key"], None))
        assert tensor_sums(pooled) == tensor_sums(old_pooled)
        if len(g["replicates"]) == 2:  # each replicate has its own sums, half the pooled counts
            one = coopeval_tables._tensor(store.db, "mixed", g, 0)
            assert one.counts.sum() * 2 == pooled.counts.sum()


def test_report_is_the_same_after_a_write_between_two_reads(tmp_path: Path) -> None:
    """Remembered rows never outlive a write: a second run in the same database changes
    what the report of the whole database shows for it, not the first run's report."""
    store = Store(tmp_path / "two.db")
    sweep = mixed_sweep()
    asyncio.run(run_sweep(build_sweep(sweep), store, run_id="one"))
    first = build_report(store, "one")
    sweep["experiments"] = sweep["experiments"][:1]
    asyncio.run(run_sweep(build_sweep(sweep), store, run_id="two"))
    assert build_report(store, "one") == first
    assert len(build_report(store, "two")["experiments"]) == 1
