"""Sweeps that go wrong in the ways real ones do: failing seats, changed files, repeats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

GOOD = "sk-good"


def sweep_data(url: str, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "robust",
        "seed": 2,
        "agents": {
            "good": {"model": "openai/loop", "api_base": url, "api_key": GOOD},
            "bad": {"model": "openai/loop", "api_base": url, "api_key": "sk-wrong"},
            "tft": {"strategy": "tit_for_tat"},
        },
        "experiments": [{"game": "prisoners", "matchup": [["bad", "good"]]}],
    }
    data.update(overrides)
    return data


@pytest.fixture
def server() -> Any:
    with LoopbackServer(latency=0.05, chunks=3, answer='{"A0": 40, "A1": 60}', api_key=GOOD,
                        echo_key_in_errors=False) as srv:
        yield srv


def count(store: Store, sql: str) -> int:
    return store.db.execute(sql).fetchone()[0]


async def test_a_failing_seat_does_not_lose_the_other_seats_answer(server: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    summary = await run_sweep(build_sweep(sweep_data(server.url)), store)
    assert summary.status == "failed" and summary.matches_failed == 1
    rows = store.db.execute("select seat, agent, valid from decisions").fetchall()
    assert rows == [(1, "good", 1)]  # paid for, so stored
    assert count(store, "select count(*) from failures") == 1
    # resuming asks the good seat nothing new and records the failure once
    asked = len(server.chat_requests)
    await run_sweep(build_sweep(sweep_data(server.url)), store, resume=True)
    good_requests = [r for r in server.chat_requests[asked:]
                     if r.headers.get("authorization") == f"Bearer {GOOD}"]
    assert good_requests == []
    assert count(store, "select count(*) from failures") == 1
    assert count(store, "select count(*) from decisions") == 1
    store.close()


async def test_resume_refuses_a_sweep_that_changed(server: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    strategies = {"experiments": [{"game": "prisoners", "agents": ["tft"]}]}
    await run_sweep(build_sweep(sweep_data(server.url, **strategies)), store)
    changed = sweep_data(server.url, **strategies)
    changed["agents"]["tft"] = {"strategy": "always_defect"}
    with pytest.raises(SpecError, match="has changed since run"):
        await run_sweep(build_sweep(changed), store, resume=True)
    # settings that cannot change an answer do not count as a change
    tuned = sweep_data(server.url, concurrency=3, **strategies)
    tuned["agents"]["good"]["timeout"] = 5.0
    summary = await run_sweep(build_sweep(tuned), store, resume=True)
    assert summary.matches_skipped == 1
    assert count(store, "select count(*) from runs") == 1
    store.close()


async def test_decisions_reused_from_another_run_cost_nothing_in_this_one(server: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "u.db")
    data = sweep_data(server.url, experiments=[{"game": "prisoners", "agents": ["good"]}])
    await run_sweep(build_sweep(data), store)
    first = store.db.execute("select id from runs").fetchone()[0]
    asked = len(server.chat_requests)
    second = await run_sweep(build_sweep(data), store)
    assert len(server.chat_requests) == asked  # reused, not asked
    assert second.reused == 2
    assert store.run_cost(second.run_id) == 0.0
    rows = store.db.execute(
        """select d.reused, d.cost_usd, d.transport_retries from decisions d
           join matches m on m.id = d.match_id where m.run_id = ?""", [second.run_id]
    ).fetchall()
    assert all(r[0] == 1 and not r[1] and r[2] == 0 for r in rows) and len(rows) == 2
    assert second.run_id != first
    store.close()


async def test_a_fallback_answer_has_no_cooperation_mass(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, answer="I refuse to answer in JSON.") as srv:
        data = sweep_data(srv.url, on_invalid="uniform", max_attempts=2,
                          experiments=[{"game": "prisoners", "agents": ["good"]}])
        data["agents"]["good"]["api_key"] = "anything"
        store = Store(tmp_path / "f.db")
        summary = await run_sweep(build_sweep(data), store)
    assert summary.status == "done"
    rows = store.db.execute("select valid, coop_prob, action, attempts from decisions").fetchall()
    assert len(rows) == 2
    assert all(v == 0 and c is None and a in (0, 1) and n == 2 for v, c, a, n in rows)
    store.close()


def test_bad_command_line_values_exit_2(tmp_path: Path) -> None:
    sweep = Path(__file__).resolve().parents[1] / "data" / "sweeps" / "strategies-prisoners.toml"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args],
                              capture_output=True, text=True, timeout=120)

    zero = cli("--batch", str(sweep), "--db", str(tmp_path / "z.db"), "--concurrency", "0")
    assert zero.returncode == 2 and "--concurrency" in zero.stderr
    folder = cli("--batch", str(sweep), "--db", str(tmp_path))
    assert folder.returncode == 2 and "--db" in folder.stderr and "Traceback" not in folder.stderr
    not_a_file = cli("--batch", str(tmp_path), "--db", str(tmp_path / "n.db"))
    assert not_a_file.returncode == 2 and "not a file" in not_a_file.stderr
    assert not (tmp_path / "z.db").exists() and not (tmp_path / "n.db").exists()


async def test_the_report_never_pools_different_games_or_bonuses(tmp_path: Path) -> None:
    from coop_tui.report import build_report

    data = {
        "name": "two-games",
        "agents": {"c": {"strategy": "always_cooperate"}},
        "experiments": [{"game": ["prisoners", "chicken"], "mechanism": "similarity",
                         "agents": ["c"], "similarity": [0, 100], "bonus": [0, 1]}],
    }
    store = Store(tmp_path / "g.db")
    summary = await run_sweep(build_sweep(data), store)
    e = build_report(store, summary.run_id)["experiments"][0]
    store.close()
    assert e["b_star"] is None  # it differs between conditions
    by_label = {c["label"]: c for c in e["conditions"]}
    assert len(by_label) == 8
    assert by_label["bonus=0 game=prisoners similarity=0"]["agents"]["c"]["mean_payoff"] == 2
    assert by_label["bonus=0 game=chicken similarity=0"]["agents"]["c"]["mean_payoff"] == 0
    assert by_label["bonus=1 game=prisoners similarity=100"]["agents"]["c"]["mean_payoff"] == 3
    assert by_label["bonus=0 game=prisoners similarity=0"]["b_star"] == pytest.approx(0.5)
    assert by_label["bonus=0 game=chicken similarity=0"]["b_star"] == pytest.approx(1.0)
    assert by_label["bonus=1 game=prisoners similarity=0"]["b_star"] == pytest.approx(1 / 3)
    assert sorted(e["curve"]) == [
        "c / bonus=0 game=chicken", "c / bonus=0 game=prisoners",
        "c / bonus=1 game=chicken", "c / bonus=1 game=prisoners",
    ]
    assert all(len(points) == 2 for points in e["curve"].values())
