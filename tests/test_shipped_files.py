"""Every sweep and study file we ship loads: a user who opens one never meets a crash.

Study files that name published benchmark files the user must bring (the similarity signals paper's item sets)
are loaded with stand-in paths only where those files are absent; API keys are not checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_tui.spec import load_sweep

DATA = Path(__file__).resolve().parents[1] / "data"
SHIPPED = sorted([*DATA.glob("sweeps/*.toml"), *DATA.glob("studies/*.toml")])


def test_there_are_shipped_files() -> None:
    names = {p.name for p in SHIPPED}
    assert {"quickstart.toml", "similarity-prisoners.toml", "coopeval.toml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_file_loads(path: Path) -> None:
    try:
        sweep = load_sweep(path, check_keys=False)
    except Exception as exc:  # a user-bring file missing is the only acceptable refusal
        message = str(exc)
        assert "benchmarks/" in message and ".jsonl" in message, message
        return
    assert sweep.cells, f"{path.name} plays nothing"
