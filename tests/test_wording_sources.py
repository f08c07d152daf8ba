"""Wording from a paper's own code: ``[sources]``, ``--source``, ``wording`` and the engine hook.

The paper adapters live in ``coop_tui/sources/``; these tests check the wiring they all
share with a stand-in adapter of their own (``ToySource`` below) reading a stand-in clone
(``tests/data/sources/toy``, copied to a temporary folder so it is no git checkout and its
files' hash is its commit). Models are the loopback server's; strategies fill other seats.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from coop_tui import sources as paper_sources
from coop_tui.cli import main
from coop_tui.decisions import DecisionRequest, Message
from coop_tui.errors import SpecError
from coop_tui.sources.base import LoadedSource, Required, SourceWording
from coop_tui.sources.loading import check_required, git_commit, import_file
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

TOY_TREE = Path(__file__).parent / "data" / "sources" / "toy"
TOY_FILES = ("toy_prompts.py",)
MARK = "TOY WORDING"


class ToySource(SourceWording):
    """A stand-in adapter: words every request with the stand-in clone's two builders."""

    name = "toy"
    paper = "a stand-in paper"
    repository = "example/toy-paper"
    required: ClassVar[tuple[Required, ...]] = (
        Required("toy_prompts.py", "build_prompt", ("game_title", "seat", "round_number", "labels")),
        Required("toy_prompts.py", "build_retry", ("previous", "reason")),
    )

    def __init__(self, tested_commit: str) -> None:
        self.tested_commit = tested_commit  # type: ignore[misc]

    def serves(self, *, mechanism: str, prompt_protocol: str, game: str) -> bool:
        return mechanism in ("none", "repetition") and game == "prisoners"

    def load(self, root: Path) -> LoadedSource:
        check_required(root, self.name, self.required)
        module = import_file(root, "toy_prompts.py", "coop_tui_source.toy.toy_prompts", self.name)
        return LoadedSource(self, root, git_commit(root, TOY_FILES), {"module": module})

    def messages(self, source: LoadedSource, ctx: Any, request: DecisionRequest) -> tuple[Message, ...]:
        text = source.state["module"].build_prompt(
            game_title=ctx.game.title, seat=request.seat + 1, round_number=request.round,
            labels=list(request.labels))
        return ({"role": "user", "content": text},)

    def retry_messages(self, source: LoadedSource, ctx: Any, request: DecisionRequest,
                       sent: tuple[Message, ...], answer: str, reason: str) -> tuple[Message, ...]:
        again = source.state["module"].build_retry(previous=answer, reason=reason)
        return (*sent, {"role": "assistant", "content": answer}, {"role": "user", "content": again})


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A copy of the stand-in tree outside any git checkout."""
    root = tmp_path / "toy-clone"
    shutil.copytree(TOY_TREE, root)
    return root


@pytest.fixture
def toy(clone: Path) -> Iterator[ToySource]:
    """The stand-in adapter, registered, tested at the clone's own commit."""
    source = ToySource(git_commit(clone, TOY_FILES))
    unregister = paper_sources.register(source)
    yield source
    unregister()


def answer(body: dict[str, Any]) -> str:
    """A model that cannot read the stand-in's first question (so it is re-asked) and
    plays the first label otherwise."""
    text = last_user_message(body)
    if text.startswith(MARK + ":"):
        return "I would rather not say."
    if text.startswith(MARK + " RETRY"):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        labels = re.search(r"Choose among (.*);", first).group(1).split(" or ")  # type: ignore[union-attr]
    else:
        labels = re.findall(r"^- (A\d+)", text.split("Actions you can choose from:")[1], re.M)
    return json.dumps({label: 100 if i == 0 else 0 for i, label in enumerate(labels)})


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


def sweep_data(server_url: str, clone: Path | None, **experiment: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "wording",
        "seed": 5,
        "agents": {"m": {"model": "openai/m", "api_base": server_url, "api_key": "sk-test",
                         "style": "direct"},
                   "tft": {"strategy": "tit_for_tat"}},
        "experiments": [{"game": "prisoners", "mechanism": "repetition", "rounds": 2,
                         "continuation": 1.0, "agents": ["m"], "matchup": [["m", "tft"]],
                         **experiment}],
    }
    if clone is not None:
        data["sources"] = {"toy": str(clone)}
    return data


# ----------------------------------------------------------------- the sweep file
def test_wording_defaults_to_ours_and_keeps_keys_and_hash(toy: ToySource, clone: Path) -> None:
    plain = build_sweep(sweep_data("http://127.0.0.1:9/v1", None), check_keys=False)
    named = build_sweep(sweep_data("http://127.0.0.1:9/v1", clone, wording="ours"), check_keys=False)
    assert [c.wording for c in plain.cells] == ["ours"]
    # "ours" and a [sources] table change no key: runs from before this field resume
    assert named.hash == plain.hash
    assert [c.match_key(0) for c in named.cells] == [c.match_key(0) for c in plain.cells]
    assert named.wording_sources == {}  # nothing of the clone runs unless asked for


def test_a_list_of_wordings_is_a_grid_axis_and_a_condition(toy: ToySource, clone: Path) -> None:
    from coop_tui.sweep import _game_condition

    sweep = build_sweep(sweep_data("http://127.0.0.1:9/v1", clone, wording=["ours", "source"]),
                        check_keys=False)
    ours, source = sweep.cells
    assert (ours.wording, source.wording, source.wording_source) == ("ours", "source", "toy")
    assert ours.match_key(0) != source.match_key(0)
    assert "wording" not in _game_condition(ours)
    assert _game_condition(source)["wording"] == "source"
    assert set(sweep.wording_sources) == {"toy"}
    assert sweep.wording_sources["toy"].commit == toy.tested_commit
    assert sweep.warnings == []


def test_a_folder_wording_is_checked_and_handed_to_the_policy(tmp_path: Path) -> None:
    from coop_tui.spec import wording_folder

    folder = tmp_path / "my-words"
    folder.mkdir()
    sweep = build_sweep(sweep_data("http://127.0.0.1:9/v1", None, wording=str(folder)),
                        check_keys=False)
    assert wording_folder(sweep.cells[0], None) == folder
    with pytest.raises(SpecError) as err:
        build_sweep(sweep_data("http://127.0.0.1:9/v1", None, wording=str(tmp_path / "nope")),
                    check_keys=False)
    assert err.value.field == "experiments[0].wording" and "does not exist" in str(err.value)


def test_command_line_sources_override_the_file(toy: ToySource, clone: Path, tmp_path: Path) -> None:
    data = sweep_data("http://127.0.0.1:9/v1", clone, wording="source")
    data["sources"] = {"toy": str(tmp_path / "elsewhere")}
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False)
    assert err.value.field == "sources.toy" and "does not exist" in str(err.value)
    sweep = build_sweep(data, check_keys=False, sources={"toy": str(clone)})
    assert sweep.wording_sources["toy"].root == clone.resolve()


@pytest.mark.parametrize(("sources", "overrides", "field"), [
    ({"nosuch": "/tmp"}, None, "sources.nosuch"),
    ({}, {"nosuch": "/tmp"}, "--source"),
])
def test_unknown_source_names_list_the_known_ones(
    toy: ToySource, sources: dict[str, str], overrides: dict[str, str] | None, field: str,
) -> None:
    data = sweep_data("http://127.0.0.1:9/v1", None)
    data["sources"] = sources
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False, sources=overrides)
    assert err.value.field == field
    assert "'nosuch' is not a paper source" in str(err.value) and "toy" in str(err.value)


def test_source_wording_needs_a_serving_source_and_its_clone(toy: ToySource, clone: Path) -> None:
    with pytest.raises(SpecError) as err:
        build_sweep(sweep_data("http://127.0.0.1:9/v1", None, wording="source"), check_keys=False)
    assert err.value.field == "experiments[0].wording"
    assert "--source toy=PATH" in str(err.value) and "[sources]" in str(err.value)
    data = sweep_data("http://127.0.0.1:9/v1", clone, wording="source", game="chicken")
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False)
    assert err.value.field == "experiments[0].wording"
    assert "no paper source builds prompts" in str(err.value) and "'chicken'" in str(err.value)


def test_a_clone_at_another_commit_warns_naming_both(clone: Path) -> None:
    unregister = paper_sources.register(ToySource("0" * 40))
    try:
        sweep = build_sweep(sweep_data("http://127.0.0.1:9/v1", clone, wording="source"),
                            check_keys=False)
    finally:
        unregister()
    commit = git_commit(clone, TOY_FILES)
    assert len(sweep.warnings) == 1
    assert commit in sweep.warnings[0] and "0" * 40 in sweep.warnings[0]


# ----------------------------------------------------------------- broken clones: exit 2
def _break(clone: Path, how: str) -> None:
    path = clone / "toy_prompts.py"
    text = path.read_text()
    if how == "missing path":
        shutil.rmtree(clone)
    elif how == "missing module":
        path.unlink()
    elif how == "missing function":
        path.write_text(text.replace("def build_retry(", "def build_again("))
    elif how == "changed signature":
        path.write_text(text.replace("(game_title, seat, round_number, labels)",
                                     "(title, seat, round_number, labels)"))


@pytest.mark.parametrize(("how", "says"), [
    ("missing path", "does not exist"),
    ("missing module", "toy_prompts.py is missing"),
    ("missing function", "has no build_retry"),
    ("changed signature", "coop-tui expects (game_title, seat, round_number, labels)"),
])
def test_a_broken_clone_is_one_error_exit_2_nothing_written(
    toy: ToySource, clone: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    how: str, says: str,
) -> None:
    data = sweep_data("http://127.0.0.1:9/v1", None, wording="source")
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(_toml(data))
    _break(clone, how)
    db = tmp_path / "out.db"
    code = main(["--batch", str(sweep_file), "--db", str(db), "--source", f"toy={clone}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "sources.toy" in err and says in err and "Traceback" not in err
    assert not db.exists()


def test_a_malformed_source_option_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--batch", str(tmp_path / "x.toml"), "--source", "toy"])
    assert code == 2 and "--source" in capsys.readouterr().err


def _toml(data: dict[str, Any]) -> str:
    """The sweep as TOML (what a user writes)."""
    lines = [f"name = {json.dumps(data['name'])}", f"seed = {data['seed']}"]
    if "sources" in data:
        lines.append("[sources]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in data["sources"].items()]
    for name, agent in data["agents"].items():
        lines.append(f"[agents.{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in agent.items()]
    for exp in data["experiments"]:
        lines.append("[[experiments]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in exp.items()]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- end to end
async def test_a_sweep_over_both_wordings_sends_and_stores_the_sources_messages(
    toy: ToySource, clone: Path, tmp_path: Path, server: LoopbackServer,
) -> None:
    data = sweep_data(server.url, clone, wording=["ours", "source"])
    store = Store(tmp_path / "w.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    assert summary.status == "done", summary.errors
    matches = {json.loads(m["condition"]).get("wording", "ours"): m
               for m in store.matches(summary.run_id)}
    assert set(matches) == {"ours", "source"}  # conditions differ by wording

    worded = [d for d in store.decisions(matches["source"]["id"]) if d.seat == 0]
    assert [d.round for d in worded] == [1, 2]
    for d in worded:
        # the stored prompt of the re-asked decision: the source's first message, the
        # rejected answer, the source's re-ask; what the model received is the same
        first, rejected, again = d.prompt
        assert first == {"role": "user", "content": (
            f"{MARK}: seat 1 of Prisoner's Dilemma, round {d.round}.\n"
            "Choose among A0 or A1; answer with one JSON object of whole percentages.")}
        assert rejected == {"role": "assistant", "content": "I would rather not say."}
        assert again["role"] == "user" and again["content"].startswith(f"{MARK} RETRY: ")
        assert d.valid and d.attempts == 2 and d.retries[0].messages == [first]
    sent = [b["messages"] for b in (r.body for r in server.chat_requests) if b
            and b["messages"][0]["content"].startswith(MARK)]
    assert sent == [list(m) for d in worded for m in (d.prompt[:1], d.prompt)]

    for d in store.decisions(matches["ours"]["id"]):  # our own words, untouched
        assert MARK not in json.dumps(d.prompt) and d.attempts == 1

    from coop_tui.report import build_report

    [experiment] = build_report(store, summary.run_id)["experiments"]
    # the default wording is stored as no key; its label still names it
    assert sorted(c["label"] for c in experiment["conditions"]) == ["wording=ours", "wording=source"]

    run = store.run(summary.run_id)
    assert json.loads(run["sources"]) == {"toy": {
        "name": "toy", "path": str(clone.resolve()), "commit": toy.tested_commit,
        "tested_commit": toy.tested_commit}}


async def test_resume_refuses_a_source_whose_commit_changed(
    toy: ToySource, clone: Path, tmp_path: Path, server: LoopbackServer,
) -> None:
    data = sweep_data(server.url, clone, wording="source")
    store = Store(tmp_path / "r.db")
    first = await run_sweep(build_sweep(data, check_keys=False), store)
    before = git_commit(clone, TOY_FILES)
    path = clone / "toy_prompts.py"
    path.write_text(path.read_text() + "\n# edited after the run began\n")
    changed = build_sweep(data, check_keys=False)
    with pytest.raises(SpecError) as err:
        await run_sweep(changed, store, resume=True)
    message = str(err.value)
    assert err.value.field == "--resume" and first.run_id in message
    assert before in message and changed.wording_sources["toy"].commit in message
    # the same commit resumes
    path.write_text(path.read_text().replace("\n# edited after the run began\n", ""))
    again = await run_sweep(build_sweep(data, check_keys=False), store, resume=True)
    assert again.run_id == first.run_id and again.matches_skipped == 1


def test_the_report_shows_the_recorded_source(toy: ToySource, clone: Path, tmp_path: Path,
                                              server: LoopbackServer) -> None:
    import asyncio

    from rich.console import Console

    from coop_tui.report import build_report, render_text

    store = Store(tmp_path / "p.db")
    summary = asyncio.run(run_sweep(
        build_sweep(sweep_data(server.url, clone, wording="source"), check_keys=False), store))
    report = build_report(store, summary.run_id)
    assert report["run"]["sources"]["toy"]["commit"] == toy.tested_commit
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render_text(report))
    assert (f"wording from the toy source: {clone.resolve()} at commit {toy.tested_commit}\n"
            in console.export_text())
    plain = Store(tmp_path / "q.db")
    other = asyncio.run(run_sweep(build_sweep(sweep_data(server.url, None), check_keys=False), plain))
    assert "sources" not in build_report(plain, other.run_id)["run"]
    with sqlite3.connect(tmp_path / "q.db") as db:  # a run that read no source records none
        assert db.execute("select sources from runs").fetchone() == (None,)


def test_dry_run_prints_the_first_message_in_the_sources_wording(
    toy: ToySource, clone: Path, tmp_path: Path, server: LoopbackServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sweep_file = tmp_path / "dry.toml"
    sweep_file.write_text(_toml(sweep_data(server.url, clone, wording=["ours", "source"])))
    db = tmp_path / "dry.db"
    assert main(["--batch", str(sweep_file), "--db", str(db), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "first message of experiment 0: prisoners / repetition, seats m, tft (the toy source)" in out
    assert f"[user]\n{MARK}: seat 1 of Prisoner's Dilemma, round 1." in out
    assert out.count(MARK + ":") == 1  # our own wording is not printed
    assert not db.exists()


async def test_a_stored_answer_is_reused_only_for_the_same_words(
    toy: ToySource, clone: Path, tmp_path: Path, server: LoopbackServer,
) -> None:
    data = sweep_data(server.url, clone, wording="source")
    store = Store(tmp_path / "k.db")
    await run_sweep(build_sweep(data, check_keys=False), store)
    asked = len(server.chat_requests)
    same = await run_sweep(build_sweep(data, check_keys=False), store)  # a new run, same words
    assert len(server.chat_requests) == asked and same.reused == 2
    path = clone / "toy_prompts.py"  # the clone words its question differently now
    path.write_text(path.read_text().replace("answer with one JSON object", "reply with a JSON object"))
    changed = await run_sweep(build_sweep(data, check_keys=False), store)
    assert changed.reused == 0 and len(server.chat_requests) == asked + 4
    assert all("reply with a JSON object" in d.prompt[0]["content"]
               for m in store.matches(changed.run_id) for d in store.decisions(m["id"]) if d.seat == 0)


class FailingToySource(ToySource):
    """The stand-in adapter with a bug that shows from the second round on."""

    def messages(self, source: LoadedSource, ctx: Any, request: DecisionRequest) -> tuple[Message, ...]:
        if request.round > 1:
            raise KeyError("round_history")
        return super().messages(source, ctx, request)


def test_a_source_that_fails_mid_match_stops_before_any_model_call(
    clone: Path, tmp_path: Path, server: LoopbackServer, capsys: pytest.CaptureFixture[str],
) -> None:
    unregister = paper_sources.register(FailingToySource(git_commit(clone, TOY_FILES)))
    try:
        sweep_file = tmp_path / "fails.toml"
        sweep_file.write_text(_toml(sweep_data(server.url, clone, wording="source")))
        db = tmp_path / "fails.db"
        code = main(["--batch", str(sweep_file), "--db", str(db)])
    finally:
        unregister()
    err = capsys.readouterr().err
    assert code == 2 and not db.exists() and server.chat_requests == []
    assert "sources.toy: the paper's code failed to word the play request of round 2, seat 1: " \
        "KeyError: 'round_history'" in err


def test_slices_merge_with_their_source_and_only_at_one_commit(
    toy: ToySource, clone: Path, tmp_path: Path, server: LoopbackServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sweep_file = tmp_path / "sliced.toml"
    sweep_file.write_text(_toml(sweep_data(server.url, None, wording=["ours", "source"])))
    dbs = [tmp_path / f"slice{k}.db" for k in (1, 2)]
    for k, db in enumerate(dbs, start=1):
        assert main(["--batch", str(sweep_file), "--db", str(db), "--shard", f"{k}/2",
                     "--source", f"toy={clone}"]) == 0
    merged = tmp_path / "merged.db"
    assert main(["merge", *map(str, dbs), "--db", str(merged)]) == 0
    with sqlite3.connect(merged) as db:
        (recorded,) = db.execute("select sources from runs").fetchone()
    assert json.loads(recorded)["toy"]["commit"] == toy.tested_commit
    path = clone / "toy_prompts.py"  # slice 2 again, from another checkout
    path.write_text(path.read_text() + "\n# another checkout\n")
    other = tmp_path / "slice2-other.db"
    assert main(["--batch", str(sweep_file), "--db", str(other), "--shard", "2/2",
                 "--source", f"toy={clone}"]) == 0
    capsys.readouterr()
    assert main(["merge", str(dbs[0]), str(other), "--db", str(tmp_path / "refused.db")]) == 2
    err = capsys.readouterr().err
    assert "the toy source at commit" in err and toy.tested_commit in err
    assert not (tmp_path / "refused.db").exists()


def test_the_commit_warning_is_printed_before_the_estimate(
    clone: Path, tmp_path: Path, server: LoopbackServer, capsys: pytest.CaptureFixture[str],
) -> None:
    unregister = paper_sources.register(ToySource("1" * 40))
    try:
        sweep_file = tmp_path / "warn.toml"
        sweep_file.write_text(_toml(sweep_data(server.url, clone, wording="source")))
        assert main(["--batch", str(sweep_file), "--db", str(tmp_path / "w.db"), "--dry-run"]) == 0
    finally:
        unregister()
    out = capsys.readouterr().out
    warning = out.index(f"is at commit {git_commit(clone, TOY_FILES)}, but coop-tui was checked "
                        f"against {'1' * 40} of example/toy-paper")
    assert warning < out.index("matches, ~")
