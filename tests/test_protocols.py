"""The prompt protocol registry: every protocol is one module of ``coop_tui/protocols``, a
study names it by its name or an older alias, and what is stored is the protocol's key.

The strategic personalities protocol was called "seed003" before it had a name; runs
stored that value in their conditions, match keys and sweep hashes. The new name must
reach the very same keys, or a resumed database would ask every decision again. The
content keys pinned below were computed with the code before protocols were modules
(the engine's own ``seed003`` branches) and must never change.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from coop_tui import protocols
from coop_tui.cli import main
from coop_tui.decisions import AgentReply
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.errors import SpecError
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.prompts import RULES_END, PromptRenderer
from coop_tui.protocols.base import PromptProtocol
from coop_tui.spec import build_sweep
from coop_tui.sweep import _game_condition, build_agents, play_cell

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------ the registry


def test_the_registry_finds_every_protocol_module() -> None:
    modules = {p.stem for p in (ROOT / "coop_tui" / "protocols").glob("*.py")} - {"__init__", "base"}
    found = protocols.protocols()
    assert {type(p).__module__.rsplit(".", 1)[1] for p in found} == modules
    assert found[0].key == protocols.DEFAULT_KEY == "coop_tui"
    assert all(isinstance(p, PromptProtocol) for p in found)


def test_names_and_keys() -> None:
    sp = protocols.get("strategic_personalities")
    assert protocols.get("seed003") is sp  # the older name still works
    assert sp.key == "seed003"  # and stays what runs store
    assert protocols.storage_key("strategic_personalities") == "seed003"
    assert protocols.storage_key("coop_tui") == "coop_tui"
    names = protocols.names()
    assert names[0] == "coop_tui" and "strategic_personalities" in names
    assert names.index("seed003") > names.index("strategic_personalities")  # aliases last
    with pytest.raises(KeyError, match="'strategic_personalities'"):
        protocols.get("personalities")


def test_the_two_protocols_answer_differently() -> None:
    renderer = PromptRenderer()
    house, sp = protocols.get("coop_tui"), protocols.get("strategic_personalities")
    assert (house.rules_end(), sp.rules_end()) == ("", RULES_END)
    assert (house.goal(), sp.goal()) == (None, "")
    assert (house.option_words(), sp.option_words()) == (False, True)
    assert house.answer_template("choice", renderer) is None
    assert sp.answer_template("choice", renderer) == "answer/choice_tag.j2"
    assert sp.answer_template("mixed", renderer) is None  # no tag form: the house's JSON
    assert sp.answer_form("number", renderer) == {"form": "tag"}
    assert house.reasoning_as_system("system") and not house.reasoning_as_system("user")
    assert not sp.reasoning_as_system("system")
    assert sp.number_options(whole=True, names_a_thing=False, example=40) == {
        "decimals": True, "example": 40}
    assert sp.number_options(whole=True, names_a_thing=True, example=None) == {}
    assert house.number_options(whole=True, names_a_thing=False, example=40) == {}


def test_messages_split_at_the_rules_mark() -> None:
    sp = protocols.get("strategic_personalities")
    assert sp.messages(f"Rules here.{RULES_END}\n\nRound 1.", None) == (
        {"role": "system", "content": "Rules here."}, {"role": "user", "content": "Round 1."})
    house = protocols.get("coop_tui")
    assert house.messages("All of it.", "Think step by step.") == (
        {"role": "system", "content": "Think step by step."},
        {"role": "user", "content": "All of it."})
    assert house.messages("All of it.", None) == ({"role": "user", "content": "All of it."},)


def test_a_match_asks_its_protocol() -> None:
    def ctx(value: str) -> MatchContext:
        return MatchContext(run_id="r", match_id="m", game=get_game("prisoners"), agents=[],
                            bus=EventBus(), seed=0, policy=DecisionPolicy(prompt_protocol=value))

    assert ctx("seed003").protocol is ctx("strategic_personalities").protocol
    assert ctx("coop_tui").protocol.name == "coop_tui"


# ------------------------------------------------------------ study files


MATRIX = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known", "rounds": 2,
          "rounds_told": "two_by_two", "answer": "choice", "randomize_labels": "trial",
          "matchup": [["m", "tft"]]}
ULTIMATUM = {"game": "ultimatum", "game_params": {"rounds": 2}, "mechanism": "none",
             "rounds_told": "two_by_two", "answer": "choice", "matchup": [["m", "m"]]}


def _sweep(protocol: Any, experiment: dict[str, Any] = MATRIX) -> Any:
    exp = {**experiment, "prompt_protocol": protocol}
    return build_sweep({
        "name": "pp", "seed": 5, "max_attempts": 2, "on_invalid": "uniform",
        "agents": {"m": {"model": "openai/pinned", "api_key": "sk-test", "style": "plain"},
                   "tft": {"strategy": "tit_for_tat_sp"}},
        "experiments": [exp]}, check_keys=False)


def test_a_study_may_give_either_name_and_stores_the_key() -> None:
    new, old = _sweep("strategic_personalities"), _sweep("seed003")
    assert new.spec.experiments[0].prompt_protocol == "seed003"
    assert new.hash == old.hash
    assert [c.match_key(0) for c in new.cells] == [c.match_key(0) for c in old.cells]
    assert _game_condition(new.cells[0])["prompt_protocol"] == "seed003"
    assert "prompt_protocol" not in _game_condition(_sweep("coop_tui").cells[0])


def test_an_unknown_protocol_is_refused_by_name(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecError) as err:
        _sweep("personalities")
    assert "experiments[0].prompt_protocol" in str(err.value)
    assert '"strategic_personalities"' in str(err.value)
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[agents.a]\nstrategy = "tit_for_tat"\n'
                    '[[experiments]]\ngame = "prisoners"\nmatchup = "self"\nagents = ["a"]\n'
                    'prompt_protocol = "personalities"\n')
    assert main(["--batch", str(path), "--dry-run"]) == 2
    assert "prompt_protocol" in capsys.readouterr().err
    assert not (tmp_path / "bad.db").exists() and sorted(tmp_path.iterdir()) == [path]


# ------------------------------------------------------------ pinned content keys


class _Recorder:
    """A model seat that answers the first option (or the lowest number) and records
    nothing else: the content keys come from the engine's own decisions."""

    name, kind, style = "m", "llm", "plain"
    spec: dict[str, Any] = {"model": "openai/pinned"}

    async def reply(self, request: Any, messages: Any, sink: Any) -> AgentReply:
        if request.kind == "number":
            return AgentReply(text=json.dumps({request.options["name"]: request.options["min"]}))
        return AgentReply(text=json.dumps({"choice": request.labels[0]}))


def _content_keys(sweep: Any) -> list[str]:
    contexts: list[MatchContext] = []
    cell = sweep.cells[0]
    agents = {"m": _Recorder(), **build_agents(sweep, set(cell.seats) - {"m"})}
    status = asyncio.run(play_cell(
        cell, 0, run_id="pinned", sweep=sweep, agents=agents, bus=EventBus(), store=None,
        renderer=PromptRenderer(), on_context=contexts.append))
    assert status == "done"
    return [d.content_key for d in contexts[0].decisions if d.agent == "m"]


PINNED_MATRIX = ["ea4a9eded72adbe4c9e5801e9b5e33bfa9ed48780c2cd46b728da1114c29a069",
                 "5c02f8616fec1dd2e271ec18b50ea6eedd01cad1a10a2b15c13182a6a90668bf"]
"""The model's two rounds of a repeated Prisoner's Dilemma (known horizon, trial letters),
computed with the engine's own "seed003" branches before protocols were modules."""
PINNED_ULTIMATUM = ["91be9e549a6e363c4c3fc99980075cd5d3020caaa98b359b147219440cf7045c",
                    "473fa21da8ce5b676040ab5880ba548b77c14ab4a5a38bd53256b5a13a3cab3a",
                    "5afaa56a49c4cc534221e7c7c9a22f3d33c644dc2d9621bf96030673bac9cc96",
                    "c3d3274469deb223031eccf0c907dd2aa05cc87ea50294cccd5d9100cc0503dc"]
"""Offer and accept / reject of two ultimatum rounds, the same way (the tag form, answer
words, decimals and the example number all feed the messages these keys hash). Re-pinned
2026-12-07 when the rounds stopped saying "played over several rounds with the same
player", which the paper's code never says (issue #40); the matrix keys did not move."""


@pytest.mark.parametrize("value", ["strategic_personalities", "seed003"])
def test_a_strategic_personalities_cell_keeps_its_content_keys(value: str) -> None:
    assert _content_keys(_sweep(value)) == PINNED_MATRIX
    assert _content_keys(_sweep(value, ULTIMATUM)) == PINNED_ULTIMATUM


def test_a_person_reads_the_strategic_personalities_protocol_by_its_name_not_its_stored_key() -> None:
    """The protocol is stored as "seed003" (the match keys of runs made before it had a
    name), but the live title, the runs list, watch and the analysis screen name the paper."""
    from coop_tui.protocols import shown_key, shown_value
    from coop_tui.screens.live.title import condition_text
    from coop_tui.screens.runs import condition_labels
    from coop_tui.watch import condition_label

    assert shown_value("prompt_protocol", "seed003") == "strategic_personalities"
    assert shown_value("prompt_protocol", "default") == "default"
    assert shown_value("rounds", "seed003") == "seed003"  # only the protocol's key is named
    assert shown_key("prompt_protocol=seed003 rounds=3") == "prompt_protocol=strategic_personalities rounds=3"
    assert "seed003" not in condition_text({"prompt_protocol": "seed003", "rounds": 3})
    labels, common = condition_labels([
        {"condition": json.dumps({"prompt_protocol": "seed003", "rounds": r})} for r in (2, 3)])
    assert "prompt_protocol=strategic_personalities" in common and "seed003" not in " ".join(labels)
    assert "seed003" not in condition_label("prisoners", "repetition", "prompt_protocol=seed003 rounds=3")
