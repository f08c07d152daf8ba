"""A large strategy sweep's deviation ratings are solved by a child process that imported
scipy while the matches played (:mod:`coop_tui.analysis.rate_worker`): the batch command
itself never imports scipy, and the stored ratings are those the command solved itself
before. A worker that fails or is not needed changes nothing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from coop_tui.analysis.coopeval_tables import rate_run
from coop_tui.runner import RATE_AHEAD_DECISIONS, RatingWorker
from coop_tui.store import Store

ROUNDS, SAMPLES = 250, 5  # 2 agents cross: 4 pairings x 2 seats x 250 rounds x 5 samples

LARGE_SWEEP = f"""\
name = "rated-ahead"
seed = 5
reuse = false

[agents]
tft = {{ strategy = "tit_for_tat" }}
alld = {{ strategy = "always_defect" }}

[[experiments]]
game = "pd_canonical"
mechanism = "repetition"
rounds = {ROUNDS}
samples = {SAMPLES}
matchup = "cross"
agents = ["tft", "alld"]
"""


def run_batch_process(sweep: Path, db: Path) -> set[str]:
    """``coop-tui --batch`` in a real process; the top-level modules it imported."""
    probe = textwrap.dedent(f"""
        import json, sys
        from coop_tui.cli import main
        try:
            main(["--db", {str(db)!r}, "--batch", {str(sweep)!r}, "--yes"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=db.parent)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_large_strategy_batch_is_rated_by_the_worker_without_importing_scipy(
    tmp_path: Path,
) -> None:
    assert 4 * 2 * ROUNDS * SAMPLES >= RATE_AHEAD_DECISIONS
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(LARGE_SWEEP, encoding="utf-8")
    db = tmp_path / "run.db"
    loaded = run_batch_process(sweep, db)
    assert "scipy" not in loaded
    with sqlite3.connect(db) as conn:
        stored = conn.execute("select key, ratings from rating_results").fetchall()
        run_id = conn.execute("select id from runs").fetchone()[0]
        conn.execute("delete from rating_results")
    assert len(stored) == 1
    store = Store(db)  # the same run rated in this process, as the command did before
    try:
        assert rate_run(store, run_id) == 1
        again = store.db.execute("select key, ratings from rating_results").fetchall()
    finally:
        store.close()
    assert again == stored


def test_a_failed_worker_leaves_the_rating_to_the_caller(tmp_path: Path) -> None:
    store = Store(tmp_path / "run.db")
    try:
        broken = RatingWorker(tmp_path / "run.db", [sys.executable, "-c", "raise SystemExit(3)"])
        assert broken.rate(store, "some-run") is False
        assert broken.rate(store, "some-run") is False  # asked once only
        broken.close()
    finally:
        store.close()


def test_a_worker_not_asked_ends_at_the_end_of_its_input(tmp_path: Path) -> None:
    Store(tmp_path / "run.db").close()
    worker = RatingWorker(tmp_path / "run.db")
    proc = worker.proc
    assert proc is not None
    worker.close()
    assert proc.returncode == 0
    worker.close()  # twice is harmless
