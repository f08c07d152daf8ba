"""The embedded model as a judge, offline, through the real CLI (kept tiny: two decisions).

The per-category protocol is used: the two answers of a 24-token player are shorter than
the 80 characters CoopEval's protocol (the default of ``justifications``) requires.

SmolLM2 judges the two play decisions of a one-shot Prisoner's Dilemma it played itself;
its answers are grammar-constrained, so every judgement is valid on the first attempt.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.judging.rubric import load_rubric

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args], capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
def test_smollm2_judges_every_play_decision_once_and_resume_asks_nothing(tmp_path: Path) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text("""
name = "tiny"
seed = 11
[agents.small]
model = "local/smollm2"
max_tokens = 24
seed = 3
[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = "self"
agents = ["small"]
""")
    db = tmp_path / "l.db"
    played = cli("--batch", str(sweep), "--db", str(db))
    assert played.returncode == 0, played.stdout + played.stderr

    first = cli("judge", "--judge", "local/smollm2", "--rubric", "justifications", "--db", str(db),
                "--protocol", "per-category")
    assert first.returncode == 0, first.stdout + first.stderr
    conn = sqlite3.connect(db)
    plays = conn.execute("select id from decisions where phase = 'play'").fetchall()
    assert len(plays) == 2
    judged = conn.execute(
        """select j.judged_decision_id, d.phase, d.kind, d.valid, d.constrained, d.attempts,
                  d.parsed, d.answer
           from judgements j join decisions d on d.id = j.judge_decision_id
           order by j.judged_decision_id""").fetchall()
    ids = load_rubric("justifications").ids
    assert [row[0] for row in judged] == [pid for (pid,) in plays]
    for _, phase, kind, valid, constrained, attempts, parsed, answer in judged:
        assert (phase, kind, valid, constrained, attempts) == ("judge", "judgement", 1, 1, 1)
        confidences = json.loads(parsed)
        assert list(confidences) == list(ids)
        assert all(0.0 <= v <= 1.0 for v in confidences.values())
        assert json.loads(answer) == confidences  # the grammar's output is the parsed answer
    n_labels = conn.execute("select count(*) from judgement_labels").fetchone()[0]
    assert n_labels == 2 * len(ids)
    judge_rows = conn.execute("select count(*) from decisions where phase = 'judge'").fetchone()[0]
    conn.close()

    again = cli("judge", "--judge", "local/smollm2", "--rubric", "justifications", "--db", str(db),
                "--resume", "--protocol", "per-category")
    assert again.returncode == 0, again.stderr
    assert "nothing to ask" in again.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from decisions where phase = 'judge'").fetchone()[0] == judge_rows
    conn.close()

    report = cli("report", "--db", str(db), "--json")  # the latest run is the judge pass
    assert report.returncode == 0, report.stderr
    section = json.loads(report.stdout)["judgements"]
    (freq,) = section["frequencies"]
    assert (freq["judge"], freq["agent"], freq["game"], freq["n"]) == ("local/smollm2", "small",
                                                                       "prisoners", 2)
    assert "Individual utility maximization" in freq["categories"] and "Reciprocity" in freq["categories"]
    assert all(v in (0.0, 0.5, 1.0) for v in freq["categories"].values())
