"""The embedded model end to end through the CLI, with no API key and no network."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.store import PROMPT_SQL

SWEEP = """
name = "local-similarity"
seed = 11

[agents.local]
model = "local/smollm2"
# a sentence of reasoning fits in 24 tokens; each token more costs every decision time
max_tokens = 24
seed = 5  # without one each run samples anew, and a 135M model sometimes writes two words

[[experiments]]
game = "prisoners"
mechanism = "similarity"
matchup = "self"
agents = ["local"]
similarity = [0, 100]
"""


@pytest.mark.slow
def test_similarity_sweep_on_the_embedded_model_stores_text_and_valid_answers(tmp_path: Path) -> None:
    sweep = tmp_path / "local.toml"
    sweep.write_text(SWEEP)
    db = tmp_path / "local.db"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "select response, answer, parsed, valid, constrained, action, output_tokens, cost_usd,"
        f" {PROMPT_SQL} from decisions d order by id"
    ).fetchall()
    conn.close()
    assert len(rows) == 4
    for response, answer, parsed, valid, constrained, action, out_tokens, cost, prompt in rows:
        assert len(response.split()) >= 5, response  # at least a sentence of reasoning
        assert valid == 1 and constrained == 1 and action in (0, 1)
        assert set(json.loads(answer)) == {"A0", "A1"}
        assert abs(sum(json.loads(parsed).values()) - 1.0) < 1e-9
        assert out_tokens > 0 and cost == 0.0
        messages = json.loads(prompt)  # the reasoning instruction, then the game (CoopEval's layout)
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "similar" in messages[-1]["content"]

