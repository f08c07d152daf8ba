"""The Python API (coop_tui.api): DataFrames read what the store holds, prompts joined
from the ``texts`` table, and sweeps run through the same runner as ``--batch``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import coop_tui
from coop_tui.api import open_db, run_sweep
from coop_tui.spec import SpecError

SWEEP: dict[str, Any] = {
    "name": "api-similarity",
    "seed": 3,
    "samples": 2,
    "agents": {"tft": {"strategy": "tit_for_tat"}, "coin": {"strategy": "random", "params": {"p": 0.5}}},
    "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "cross",
                     "agents": ["tft", "coin"], "similarity": [0, 100]}],
}


@pytest.mark.usefixtures("strategies_read_prompts")
def test_decisions_carry_the_stored_prompt_text_and_parse(tmp_path: Path) -> None:
    db = open_db(tmp_path / "api.db")
    run_id = run_sweep(SWEEP, db)
    frame = db.decisions(run_id)
    stored = dict(db.store.db.execute(
        "select d.id, t.text from decisions d join texts t on t.hash = d.prompt_hash").fetchall())
    assert stored, "the sweep stored no prompt texts"
    with_prompt = frame[frame["prompt"].notna()]
    assert len(with_prompt) == len(stored) == len(frame)
    for _, row in with_prompt.iterrows():
        assert row["prompt"] == stored[row["decision_id"]]
        assert json.loads(row["prompt"])[0]["content"]  # the messages as sent
    assert set(frame["agent"]) == {"tft", "coin"}
    assert frame["distribution"].map(lambda d: isinstance(d, list | dict)).all()
    report = db.report(run_id)
    assert report["counts"]["decisions"] == len(frame)
    matches = db.matches(run_id)
    assert len(matches) == 2 * len(db.store.matches(run_id))  # one row per seat
    db.close()


def test_runs_by_name_progress_and_the_lazy_root_exports(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    run_id = coop_tui.run_sweep(SWEEP, tmp_path / "api.db",
                                progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (16, 16)  # 4 ordered pairs x 2 similarities x 2 samples
    with coop_tui.open_db(tmp_path / "api.db") as db:
        assert db.run_id("api-similarity") == run_id
        assert db.runs()["id"].tolist() == [run_id]
        rounds = db.rounds(run_id)
        assert set(rounds.columns) >= {"round", "agent", "action", "payoff", "cooperated"}


def test_bad_sweep_raises_before_anything_is_written(tmp_path: Path) -> None:
    bad = {**SWEEP, "experiments": [{**SWEEP["experiments"][0], "game": "no_such_game"}]}
    with pytest.raises(SpecError):
        run_sweep(bad, tmp_path / "api.db")
    assert not (tmp_path / "api.db").exists()


async def test_run_sweep_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    """A notebook already runs an event loop: the sweep then runs on a worker thread."""
    asyncio.get_running_loop()
    run_id = run_sweep(SWEEP, tmp_path / "api.db")
    with open_db(tmp_path / "api.db") as db:
        assert db.report(run_id)["counts"]["matches_done"] == 16
