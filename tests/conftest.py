"""Shared fixtures. Keep this small: module-specific helpers belong in their test files."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coop_tui.testing.server import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """An OpenAI-compatible server on 127.0.0.1 (free port) with fast default answers.

    Reconfigure it inside a test with ``loopback.configure(answer=..., fault_script=...)``.
    """
    with LoopbackServer(latency=0.05, chunks=5) as server:
        yield server


@pytest.fixture
def strategies_read_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strategies answer from the game state, so no prompt is rendered or stored for
    them; tests that read a mechanism's prompt text make them read it, as an LLM does."""
    from coop_tui.agents.strategy_agent import StrategyAgent

    monkeypatch.setattr(StrategyAgent, "reads_prompt", True)


@pytest.fixture(autouse=True)
def _database_outside_the_user_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command given no --db opens $COOP_TUI_DB, else the user's data directory: point it
    at a fresh file per test, so no test writes to the real one or shares it with a test
    running at the same time in another worker (subprocesses inherit the variable)."""
    monkeypatch.setenv("COOP_TUI_DB", str(tmp_path_factory.mktemp("userdata") / "coop-tui.db"))
