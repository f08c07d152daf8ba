"""CoopEval fidelity, round four (issue #40): imported decisions are read from the
prompt's own text, and no valid mixed answer is stored unless it is a distribution over
its labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_tui.decisions import Decision
from coop_tui.importers.coopeval_log import classify_prompt, iter_log_entries, own_text
from coop_tui.store import AnswerRuleError, decision_row, decision_values

MEDIATION_LOG = Path(__file__).parent / "data" / "coopeval_sample" / "mediation_trust_game" / "game_log.txt"


def _mediation_play_prompt() -> str:
    """A real Mediation play prompt of the sample (it offers the delegate action A2)."""
    for entry in iter_log_entries(MEDIATION_LOG):
        info = classify_prompt(entry.prompt)
        if info.kind == "mixed" and len(info.labels) == 3 and "Your previous response" not in entry.prompt:
            return entry.prompt
    raise AssertionError("the sample has no Mediation play prompt")


def test_a_corrupted_imported_decision_retry_echo_is_not_read_as_the_prompt() -> None:
    """A re-ask repeats the rejected answer; an answer that names extra actions in the
    prompt's own phrasing (eight times, as in the published run) must not add labels."""
    prompt = _mediation_play_prompt()
    labels = classify_prompt(prompt).labels
    echoed = "\n".join(f"Consider A{k} as an additional action, I said." for k in range(3, 11))
    retry = (f"{prompt}\n\nYour previous response was:\n{echoed}\n\n"
             "That response is INVALID because: no JSON object\n\nPlease answer again.")
    assert own_text(retry).rstrip() == prompt.rstrip()
    assert classify_prompt(retry).labels == labels == ("A0", "A1", "A2")


def _mixed(parsed: dict[str, float], labels: tuple[str, ...]) -> Decision:
    return Decision(match_id="m", round=1, phase="play", seat=0, kind="mixed", agent="a",
                    prompt=[], response='{"A0": 50, "A1": 50}', reasoning="", parsed=parsed,
                    valid=True, attempts=1, error=None, cache_key="k", content_key="c",
                    labels=labels)


@pytest.mark.parametrize("parsed, labels, why", [
    ({f"A{i}": 7 / 11 / 11 for i in range(11)} | {"A0": 0.6}, tuple(f"A{i}" for i in range(11)), "sums to"),
    ({"A0": 0.5}, ("A0", "A1"), "1 entries for 2 labels"),
    ({"A0": 1.5, "A1": -0.5}, ("A0", "A1"), "not a probability"),
])
def test_a_corrupted_imported_decision_store_refuses_a_distribution_off_one(
    parsed: dict[str, float], labels: tuple[str, ...], why: str
) -> None:
    """The store refuses a valid mixed answer that is no distribution over its labels, on
    the importers' path (decision_row) and the engine's (decision_values, the event
    writer's rows)."""
    with pytest.raises(AnswerRuleError, match=why):
        decision_row(_mixed(parsed, labels))
    with pytest.raises(AnswerRuleError, match=why):
        decision_values(_mixed(parsed, labels))


def test_a_distribution_summing_to_one_and_an_invalid_answer_are_stored() -> None:
    """The rule refuses nothing else: a distribution over its labels, and an answer stored
    invalid with its reason whatever its numbers."""
    assert decision_row(_mixed({"A0": 0.3, "A1": 0.7}, ("A0", "A1")))["valid"] == 1
    bad = _mixed({"A0": 7.0}, ("A0", "A1"))
    bad.valid, bad.error = False, "the percentages sum to 700"
    assert decision_row(bad)["valid"] == 0


def _tournament_without_log(folder: Path, name: str) -> Path:
    """A copy of the sample's Prisoner's Dilemma tournament with no game log: each move
    carries its answer in records.jsonl (as some published tournaments do), no prompt."""
    import json
    import shutil

    source = MEDIATION_LOG.parent.parent / "no_mechanism_prisoners_dilemma"
    target = folder / name
    shutil.copytree(source, target)
    (target / "game_log.txt").unlink()
    lines = []
    for line in (target / "records.jsonl").read_text().splitlines():
        moves = json.loads(line)
        for move in moves:
            move["response"] = (f"Move {move['trace_id']}: I weigh the one-shot game; defecting "
                                "pays more whatever the other player does, so I defect. "
                                '{"A0": 0, "A1": 100}')
        lines.append(json.dumps(moves))
    (target / "records.jsonl").write_text("\n".join(lines) + "\n")
    return target


def test_judge_selection_skips_tournaments_without_a_prompt_log_under_coopevals_protocol(
        tmp_path: Path) -> None:
    """CoopEval's judge script reads its answers from the game logs, so a tournament
    imported without one is not judged under its protocol; `--selection all` (ours)
    judges its answers too."""
    from coop_tui.cli import main
    from coop_tui.judging.rubric import load_rubric
    from coop_tui.judging.run import judge_run_id, pending_counts
    from coop_tui.store import Store

    for logged, folder in ((True, MEDIATION_LOG.parent.parent / "no_mechanism_prisoners_dilemma"),
                           (False, _tournament_without_log(tmp_path, "unlogged"))):
        db = tmp_path / f"{'logged' if logged else 'unlogged'}.db"
        assert main(["import", "coopeval", str(folder), "--db", str(db)]) == 0
        store = Store(db)
        try:
            run_id = store.db.execute("select id from runs").fetchone()[0]
            counts = {}
            for selection in (None, "all"):
                rubric = load_rubric("justifications").with_selection(selection)
                assert rubric.coopeval
                judge = judge_run_id(run_id, rubric, {}, "play")
                counts[selection] = pending_counts(store, run_id, judge, "play", rubric)["eligible"]
        finally:
            store.close()
        assert counts["all"] > 0
        assert counts[None] == (counts["all"] if logged else 0)
    with pytest.raises(Exception, match="--selection"):
        load_rubric("justifications").with_selection("some")


def test_a_corrupted_imported_decision_bulk_insert_refuses_a_row_off_one(tmp_path: Path) -> None:
    """The importers' bulk path (insert_decisions) holds a row built without decision_row
    to the same rule: a valid mixed answer over 11 labels summing to 7 (the published run's
    corrupted decision) is refused and nothing of the batch is written; the same row
    stored invalid with its reason, and a distribution over its labels, are written."""
    import json

    from coop_tui.store import Store, insert_decisions

    good = decision_row(_mixed({"A0": 0.3, "A1": 0.7}, ("A0", "A1")))
    labels = tuple(f"A{i}" for i in range(11))
    corrupted = {**good, "cache_key": "k2", "labels": json.dumps(list(labels)),
                 "parsed": json.dumps(dict.fromkeys(labels, 7 / 11))}
    store = Store(tmp_path / "s.db")
    try:
        conn = store.db.conn
        conn.execute("pragma foreign_keys = off")  # rows of a match this test does not store
        with pytest.raises(AnswerRuleError, match="sums to 7, not 1"):
            insert_decisions(conn, [good, corrupted])
        assert conn.execute("select count(*) from decisions").fetchone()[0] == 0
        with pytest.raises(AnswerRuleError, match="1 entries for 2 labels"):
            insert_decisions(conn, [{**good, "parsed": {"A0": 1.0}}])  # a dict, not JSON text
        invalid = {**corrupted, "valid": 0, "error": "the percentages sum to 700"}
        insert_decisions(conn, [good, invalid])
        stored = conn.execute("select valid from decisions order by id").fetchall()
        assert [v for (v,) in stored] == [1, 0]
    finally:
        store.close()
