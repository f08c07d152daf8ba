"""A folder of one's own wording (``wording = "PATH"``) for the similarity signals paper.

The paper has no public code, so a reader who wants its exact words pastes them into a
folder of templates named after our slots (docs/reproducing-similarity.md). The stand-in
folder ``tests/data/wording_similarity`` is written in our own words with a marker in each
file; a similarity sweep over the loopback server must send its words (the wrapper, the
twist, the answer instructions), keep ours for the slots it leaves out, and store exactly
what was sent. Bad folders stop before anything runs, naming the file and the fix.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.errors import SpecError
from coop_tui.prompts import PromptRenderer, check_wording_folder, template_slots, wording_path
from coop_tui.spec import build_sweep
from coop_tui.spec_models import Cell
from coop_tui.store import Store
from coop_tui.sweep import cell_renderer, run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

FOLDER = Path(__file__).parent / "data" / "wording_similarity"


def answer(body: dict[str, Any]) -> str:
    text = last_user_message(body)
    labels = ["A0", "A1"] if "A0" in text else []
    return json.dumps(dict(zip(labels, (60, 40), strict=True)))


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


def _sweep(server: LoopbackServer, folder: Path, *, style: str = "direct", prompt: str = "percentage_updated",
           players: int = 2) -> Any:
    """A similarity sweep played in ``folder``'s wording. Once the experiment field
    ``wording`` exists the folder is given there; until then it is set on the cells, where
    the field puts it (:func:`coop_tui.sweep.cell_renderer` reads it from the cell)."""
    experiment: dict[str, Any] = {
        "game": "public_good" if players > 2 else "prisoners", "mechanism": "similarity",
        "matchup": "self", "agents": ["m"], "similarity": 70, "prompt": prompt}
    field = "wording" in {f.name for f in dataclasses.fields(Cell)}
    if field:
        experiment["wording"] = str(folder)
    data = {"name": "own-wording", "seed": 2, "agents": {"m": {
        "model": "openai/loopback", "api_base": server.url, "api_key": "sk-test", "style": style}},
        "experiments": [experiment]}
    sweep = build_sweep(data, check_keys=False)
    if not field:
        for cell in sweep.cells:  # cells are frozen; this stands in for the field's value
            object.__setattr__(cell, "wording", str(folder))
    return sweep


async def _sent(tmp_path: Path, server: LoopbackServer, **kwargs: Any) -> tuple[list[Any], list[Any]]:
    """The stored decisions of one match, and the requests the server received for it."""
    server.reset()
    store = Store(tmp_path / "w.db")
    summary = await run_sweep(_sweep(server, FOLDER, **kwargs), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    return store.decisions(match["id"]), server.chat_requests


async def test_the_folder_words_the_wrapper_the_twist_and_the_answer(
        tmp_path: Path, server: LoopbackServer) -> None:
    decisions, requests = await _sent(tmp_path, server)
    assert len(decisions) == 2 and all(d.valid for d in decisions)
    for d in decisions:
        user = d.prompt[-1]["content"]
        # the folder's wrapper (game.j2), twist (percentage_updated) and instructions
        assert user.startswith("Stand-in wording: a one-round game between 2 players.")
        assert "What you also know:\nStand-in signal: the way your co-player thinks through a " \
               "choice is 70% similar to yours (similar in how you both reason)." in user
        assert "They were given this same figure." in user
        assert "Answer with a JSON object only: one whole-number percentage per option (A0, A1)" in user
        # none of our own wording of those slots is left
        for ours in ("Setup:", "Here is the twist:", "What to answer:", "How the other player reaches"):
            assert ours not in user
        assert d.action is not None
    # what the model received is what is stored
    sent = [r.body["messages"][-1]["content"] for r in requests]
    assert sorted(sent) == sorted(d.prompt[-1]["content"] for d in decisions)


async def test_slots_the_folder_leaves_out_keep_our_wording(
        tmp_path: Path, server: LoopbackServer) -> None:
    """The folder has no system message: a cot agent's reasoning instruction is ours, the
    user message the folder's; three players get the folder's plural."""
    decisions, _ = await _sent(tmp_path, server, style="cot", prompt="percentage", players=3)
    assert len(decisions) == 3
    for d in decisions:
        system, user = (m["content"] for m in d.prompt)
        assert "step by step" in system  # ours: system/cot.j2
        assert user.startswith("Stand-in wording: a one-round game between 3 players.")
        assert "Stand-in signal: your co-players are rated 70% similar to you, and knows it too." in user
        assert "Answer with a JSON object only: one whole-number percentage per option" in user
        assert "step by step" not in user and "What to answer:" not in user


def test_the_overlay_sits_over_the_sweeps_templates(tmp_path: Path) -> None:
    """Search order: the wording folder, then the sweep's templates folder, then ours."""
    sweep_templates = tmp_path / "sweep_templates"
    (sweep_templates / "twist").mkdir(parents=True)
    (sweep_templates / "retry.j2").write_text("sweep retry")
    (sweep_templates / "twist" / "similarity_percentage.j2").write_text("sweep twist")
    renderer = PromptRenderer(sweep_templates)
    mine = renderer.overlaid(FOLDER)
    assert renderer.overlaid(FOLDER) is mine  # one renderer per folder and run
    assert mine.render("twist/similarity_percentage.j2", n_others=1, pct="70",
                       measure_word="similar to").startswith("Stand-in signal:")
    assert mine.render("retry.j2") == "sweep retry"
    assert renderer.render("twist/similarity_percentage.j2") == "sweep twist"


def test_which_wording_values_name_a_folder(tmp_path: Path) -> None:
    assert wording_path("ours") is None and wording_path("source") is None
    assert wording_path(None) is None
    assert wording_path("mine", tmp_path) == tmp_path / "mine"
    assert wording_path(str(FOLDER), tmp_path) == FOLDER
    cell = Cell(experiment=0, game="prisoners", game_params={}, mechanism="none",
                mechanism_params={}, seats=("a", "b"), matchup="self", samples=1,
                randomize_labels=False, max_attempts=3, on_invalid="fail")
    base = PromptRenderer()
    assert cell_renderer(base, cell, tmp_path) is base  # no wording: the run's renderer


def test_the_slots_are_the_shipped_templates() -> None:
    slots = template_slots()
    assert {"game.j2", "twist/similarity_percentage.j2", "twist/similarity_percentage_updated.j2",
            "twist/similarity_benchmark.j2", "twist/similarity_benchmark_sweep.j2",
            "twist/score_sentence_two.j2", "twist/score_sentence_many.j2",
            "answer/mixed_plain.j2", "system/cot.j2"} <= set(slots)
    assert check_wording_folder(FOLDER) == ["answer/mixed_plain.j2", "game.j2",
                                            "twist/similarity_percentage.j2",
                                            "twist/similarity_percentage_updated.j2"]


def test_every_slot_of_the_similarity_page_exists() -> None:
    """docs/reproducing-similarity.md's slot table names real slots only."""
    page = (Path(__file__).parent.parent / "docs" / "reproducing-similarity.md").read_text()
    table = page.split("## Your own wording", 1)[1].split("\n## ", 1)[0]
    named = {name for line in table.splitlines() if line.startswith("| `")
             for name in re.findall(r"`([^`]+)`", line.split("|")[1])}
    assert named and named <= set(template_slots()), named - set(template_slots())


@pytest.mark.parametrize("case", ["typo", "top_level", "fifo", "empty", "missing"])
def test_a_bad_folder_is_one_clear_error(case: str, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    if case == "typo":
        (folder / "twist").mkdir()
        (folder / "twist" / "similarity_percentage_update.j2").write_text("x")
        expected = "similarity_percentage_update.j2: names no template slot"
    elif case == "top_level":
        (folder / "similarity_percentage.j2").write_text("x")
        expected = "did you mean twist/similarity_percentage.j2?"
    elif case == "fifo":
        os.mkfifo(folder / "game.j2")
        expected = "game.j2: is not a regular file"
    elif case == "empty":
        (folder / "notes.txt").write_text("x")
        expected = "holds no template (.j2 file)"
    else:
        folder = tmp_path / "absent"
        expected = "is not a folder"
    with pytest.raises(SpecError) as err:
        PromptRenderer().overlaid(folder)
    assert err.value.field == "wording" and expected in err.value.message


async def test_a_bad_folder_stops_the_sweep_before_anything_is_sent(
        tmp_path: Path, server: LoopbackServer) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "gmae.j2").write_text("x")
    server.reset()
    with pytest.raises(SpecError, match="gmae.j2: names no template slot"):
        await run_sweep(_sweep(server, folder), Store(tmp_path / "bad.db"))
    assert server.chat_requests == []


def test_the_folder_is_fingerprinted_so_resume_notices_an_edit() -> None:
    """Every file of the folder is among the sweep's inputs (``--resume`` refuses a run
    whose inputs changed since it began), when the value reads as a path: with a slash,
    as for the sweep's ``templates`` (a bare word is not taken for a file name)."""
    from coop_tui.inputs import fingerprints

    data = {"experiments": [{"wording": f"{FOLDER.name}/"}]}
    found = {Path(p).relative_to(FOLDER).as_posix() for p in fingerprints(data, FOLDER.parent)
             if Path(p).is_relative_to(FOLDER)}
    assert {"game.j2", "answer/mixed_plain.j2", "twist/similarity_percentage.j2",
            "twist/similarity_percentage_updated.j2"} <= found


HAS_FIELD = "wording" in {f.name for f in dataclasses.fields(Cell)}


def _worded_answer(body: dict[str, Any]) -> str:
    """Under the stand-in wording the model always cooperates; under ours only when told
    the other is at least 50% similar."""
    text = last_user_message(body)
    told = re.search(r"(\d+)% similar to", text)
    coop = 100 if "Stand-in" in text or (told and int(told.group(1)) >= 50) else 0
    return json.dumps({"A0": coop, "A1": 100 - coop})


@pytest.mark.skipif(not HAS_FIELD, reason="the experiment field `wording` is another branch's; "
                    "this runs once both are merged")
def test_wording_as_an_axis_compared_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``wording = ["ours", FOLDER]`` is a grid axis: ``compare --by wording`` prints the
    per-condition differences and the report's section shares out the spread."""
    from coop_tui.api import run_sweep as run_sweep_sync
    from coop_tui.cli import main

    db = tmp_path / "axis.db"
    with LoopbackServer(latency=0.0, chunks=1, answer=_worded_answer) as s:
        run_id = run_sweep_sync({
            "name": "wording-axis", "seed": 4, "samples": 6,
            "agents": {"m": {"model": "openai/loopback", "api_base": s.url, "api_key": "sk-test",
                             "style": "direct"}},
            "experiments": [{"game": "prisoners", "mechanism": "similarity", "matchup": "self",
                             "agents": ["m"], "similarity": [20, 80],
                             "wording": ["ours", str(FOLDER)]}]}, db)
    capsys.readouterr()
    assert main(["compare", run_id, "--by", "wording", "--db", str(db), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["values"] == ["ours", str(FOLDER)]
    by_sim = {r["condition"]["similarity"]: r["cooperation"] for r in result["rows"]}
    assert by_sim[20.0]["difference"] == 1.0 and by_sim[20.0]["different"]
    assert by_sim[80.0]["difference"] == 0.0
    assert main(["report", run_id, "--db", str(db), "--json"]) == 0
    (spread,) = json.loads(capsys.readouterr().out)["wording"]["spread"]
    assert spread["share"] == pytest.approx(2 / 3) and spread["main_share"] == pytest.approx(1 / 3)
