"""CoopEval's judging protocol, the default of the ``justifications`` rubric.

Through the real CLI and the loopback server: only the play answers of chain-of-thought
agents that are at least 80 characters long are judged, at temperature 0; the judge is
shown the game and the answer and gives one overall confidence and a list of types
(16, "Others" included); a listed type is present. The report's judgements section
reads these judgements as it reads per-category ones, and both protocols can judge the
same run side by side.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

LONG = ("TEXT-{n}: The other player cooperated before, so I return the favour and keep "
        "cooperating; trust pays off here.")
SHORT = "TEXT-{n}: cooperate."


class Script:
    def __init__(self) -> None:
        self.plays = {"alpha": 0, "beta": 0}
        self.judge_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        model = body.get("model", "")
        if model in self.plays:
            n = self.plays[model]
            self.plays[model] += 1
            # alpha (chain of thought): one long answer, one short; beta answers directly
            text = (LONG if model == "beta" or n % 2 == 0 else SHORT).format(n=f"{model}{n}")
            return f'{text}\n{{"A0": 100, "A1": 0}}'
        self.judge_bodies.append(body)
        prompt = body["messages"][0]["content"]
        if '"justification_type"' in prompt:  # CoopEval's keys, its types in one string
            return ('{"Reasoning_behind_classification": "returns cooperation", "Confidence": 0.7, '
                    '"justification_type": "Reciprocity, Trust evaluation"}')
        ids = re.findall(r"^- ([a-z_]+): ", prompt, re.M)
        return json.dumps({cid: 0.9 if cid == "reciprocity" else 0.0 for cid in ids})


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_coopeval_protocol_judges_long_chain_of_thought_answers_at_temperature_zero(tmp_path: Path) -> None:
    script = Script()
    with LoopbackServer(latency=0.0, chunks=1, answer=script) as server:
        sweep = tmp_path / "s.toml"
        sweep.write_text(f"""
name = "judged"
seed = 5
concurrency = 1
[agents.alpha]
model = "openai/alpha"
api_base = "{server.url}"
style = "cot"
[agents.beta]
model = "openai/beta"
api_base = "{server.url}"
style = "direct"
[agents.judge]
model = "openai/judge"
api_base = "{server.url}"
temperature = 0.7
[[experiments]]
game = "prisoners"
mechanism = "none"
matchup = "self"
agents = ["alpha", "beta"]
""")
        db = tmp_path / "j.db"
        assert cli("--batch", str(sweep), "--db", str(db)).returncode == 0
        done = cli("judge", "--judge", "judge", "--agents", str(sweep), "--rubric",
                   "justifications", "--db", str(db))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "protocol coopeval" in done.stdout
        # the same run under the per-category protocol: every decision with text
        per = cli("judge", "--judge", "judge", "--agents", str(sweep), "--rubric",
                  "justifications", "--db", str(db), "--protocol", "per-category")
        assert per.returncode == 0, per.stdout + per.stderr
    coopeval_bodies = [b for b in script.judge_bodies
                       if '"justification_type"' in b["messages"][0]["content"]]
    # alpha's one long answer only: not its short one, not beta's (answer-only) ones
    assert len(coopeval_bodies) == 1
    body = coopeval_bodies[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 500  # CoopEval's judge call
    prompt = body["messages"][0]["content"]
    assert "TEXT-alpha0: The other player cooperated before" in prompt
    assert "- Others: " in prompt
    # the input lines as the CoopEval paper prints its example: Game, Mechanism, Run, Player
    assert ("Game: PrisonersDilemma\nMechanism: NoMechanism\nRun: no_mechanism_prisoners_dilemma\n"
            "Player: alpha\nThe response to classify") in prompt
    assert len(script.judge_bodies) == 1 + 4  # the per-category pass judged all four
    assert all(b.get("temperature") == 0.7 for b in script.judge_bodies if b is not body)

    conn = sqlite3.connect(db)
    (judge_run,) = conn.execute(
        "select id from runs where kind = 'judge' and spec like '%\"protocol\": \"coopeval\"%'"
    ).fetchone()
    labels = dict(conn.execute(
        """select l.category, l.confidence from judgement_labels l
           join judgements j on j.judge_decision_id = l.judge_decision_id
           where j.judge_run_id = ? and l.present = 1""", [judge_run]).fetchall())
    assert labels == {"reciprocity": 0.7, "trust_evaluation": 0.7}
    parsed = json.loads(conn.execute(
        "select d.parsed from decisions d join judgements j on j.judge_decision_id = d.id"
        " where j.judge_run_id = ?", [judge_run]).fetchone()[0])
    assert parsed == {"reasoning": "returns cooperation", "confidence": 0.7,
                      "types": ["reciprocity", "trust_evaluation"]}
    judged_run = conn.execute("select id from runs where kind != 'judge'").fetchone()[0]
    conn.close()

    report = json.loads(cli("report", "--json", "--db", str(db), judged_run).stdout)["judgements"]
    rows = {(r["judge_run"] == judge_run, r["agent"]): r for r in report["frequencies"]}
    coop_row = rows[(True, "alpha")]
    assert coop_row["n"] == 1 and set(rows) == {(True, "alpha"), (False, "alpha"), (False, "beta")}
    assert coop_row["categories"]["Reciprocity"] == 1.0 and coop_row["categories"]["Others"] == 0.0
    assert len(coop_row["categories"]) == 16
    assert rows[(False, "beta")]["n"] == 2 and rows[(False, "beta")]["categories"]["Reciprocity"] == 1.0
    # both passes share the rubric's categories, so their agreement is computed
    (agreement,) = report["agreement"]
    assert agreement["n"] == 1 and agreement["kappa"]["Reciprocity"] is None  # both constant
    text = cli("report", "--db", str(db), judged_run).stdout
    assert "justifications v2 by judge" in text and "Reciprocity" in text


@pytest.mark.parametrize("mechanism, condition, expected", [
    ("none", {}, "Mechanism: NoMechanism\nRun: no_mechanism_trust_game"),
    ("reputation", {"order": "first"}, "Mechanism: ReputationFirstOrder\nRun: reputation_first_order_trust_game"),
    ("reputation", {"order": "higher"}, "Mechanism: Reputation\nRun: reputation_trust_game"),
    ("contracting", {}, "Mechanism: Contracting\nRun: contracting_trust_game"),
])
def test_judge_input_lines_follow_the_papers_printed_example(
    mechanism: str, condition: dict[str, Any], expected: str
) -> None:
    """Game, Mechanism, Run (CoopEval's tournament folder name, as in the bundled study:
    reputation_first_order_trust_game) and Player, one per line."""
    from coop_tui.judging.run import coopeval_lines

    match = {"game": "trust", "mechanism": mechanism, "condition": json.dumps(condition)}
    assert coopeval_lines(match, {"agent": "gpt-4o-CoT", "seat": 1}) == (
        f"Game: TrustGame\n{expected}\nPlayer: gpt-4o-CoT")
