"""Wording as an axis on the embedded model (issue #39): one offline sweep plays the same
cell in our words and in a paper's words (the CoopEval stand-in clone under
tests/data/sources/coopeval, sentences of our own), and `compare --by wording` sets the two
side by side per condition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coop_tui.cli import main
from coop_tui.store import Store

STAND_IN = Path(__file__).parent / "data" / "sources" / "coopeval"

pytestmark = pytest.mark.slow


def test_ours_against_source_on_the_embedded_model_and_compare_by_wording(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = tmp_path / "w.toml"
    sweep.write_text(f"""
name = "wording-local"
seed = 3
samples = 2

[sources]
coopeval = "{STAND_IN}"

[agents.local]
model = "local/smollm2"
max_tokens = 16

[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = "self"
agents = ["local"]
wording = ["ours", "source"]
""")
    db = tmp_path / "w.db"
    assert main(["--batch", str(sweep), "--db", str(db), "--yes"]) == 0
    capsys.readouterr()
    store = Store(db)
    try:
        rows = store.db.execute(
            "select m.condition, d.prompt_hash from decisions d join matches m on m.id = d.match_id"
        ).fetchall()
    finally:
        store.close()
    prompts: dict[str, set[str]] = {}
    for condition, prompt_hash in rows:
        prompts.setdefault(json.loads(condition).get("wording", "ours"), set()).add(prompt_hash)
    assert set(prompts) == {"ours", "source"} and len(rows) == 8  # 2 wordings x 2 samples x 2 seats
    assert not prompts["ours"] & prompts["source"]  # the stand-in's words, never ours
    assert main(["compare", "wording-local", "--by", "wording", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["compare", "wording-local", "--by", "wording", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "by wording: ours, source" in text and "matchup=self" in text
