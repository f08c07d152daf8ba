"""The super-additive cooperation paper's wording read from a clone of its code.

Against the synthetic stand-in tree ``tests/data/sources/superadditive/`` (our words, the
code's layout and signatures): a real team tournament is played by the Teams mechanism
with seats that record every request, and each request is rendered by the adapter. The
expected texts below are what the stand-in's own functions give for that moment of the
tournament, worked out from its templates.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import AgentReply, DecisionRequest
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.mechanisms.teams import Teams, TeamsParams
from coop_tui.sources import get
from coop_tui.sources.base import LoadedSource, SourceError
from coop_tui.sources.superadditive import SOURCE

STAND_IN = Path(__file__).parent / "data/sources/superadditive"
INSTRUCTIONS = "Answer in JSON with the keys move, reasoning, keep_playing."


class Recorder:
    """A seat that reads prompts: cooperates, leaves after round 2, writes a numbered plan
    and critique per call (its comprehension answers are left unusable: not asked here)."""

    kind = "llm"
    style = "cot"
    name = "recorder"
    spec: dict[str, Any] = {"model": "recorder"}
    reads_prompt = True

    def __init__(self) -> None:
        self.asked: list[DecisionRequest] = []

    async def reply(self, request: DecisionRequest, messages: Any, sink: Any) -> AgentReply:
        self.asked.append(request)
        if request.phase == "play":
            label = request.labels[request.label_to_action.index(0)]
            return AgentReply(text=json.dumps({"choice": label, "leave": request.view.round >= 2}))
        if request.phase in ("plan", "critique"):
            n = sum(r.phase == request.phase and r.seat == request.seat for r in self.asked)
            return AgentReply(text=f"{request.phase} {n} of seat {request.seat}")
        if request.phase == "exit":
            return AgentReply(text='{"leave": false}')
        return AgentReply(text="0")


async def tournament(**params: Any) -> tuple[MatchContext, list[DecisionRequest]]:
    """One team tournament (2 groups of 2 by default), every request recorded."""
    settings = {"structure": "SA", "teams": 2, "team_size": 2, "rounds": 3, "budget": 8, "check_budget": False,
                "plan_every": 2, "meta": "first_player", "schedule": "ordered",
                "winner_bonus": 1.0, **params}
    mech = Teams(TeamsParams(**settings))
    seat = Recorder()
    n = settings["teams"] * settings["team_size"]
    ctx = MatchContext(run_id="r", match_id="m", game=get_game("ipd"), agents=[seat] * n,
                       bus=EventBus(), seed=3,
                       policy=DecisionPolicy(answer="choice", style_message="user",
                                             on_invalid="uniform", max_attempts=1))
    await mech.play(ctx)
    return ctx, seat.asked


@pytest.fixture(scope="module")
def loaded() -> LoadedSource:
    return SOURCE.load(STAND_IN)


def text(loaded: LoadedSource, ctx: MatchContext, request: DecisionRequest) -> str:
    messages = loaded.messages(ctx, request)
    assert [m["role"] for m in messages] == ["user"]  # the code sends one prompt
    return messages[0]["content"]


def find(asked: list[DecisionRequest], phase: str, seat: int, pairing: int, n: int = 0) -> DecisionRequest:
    found = [r for r in asked if r.phase == phase and r.seat == seat
             and r.view.extra["pairing"] == pairing]
    return found[n]


# ------------------------------------------------------------------ loading
def test_loading_runs_only_the_scripts_definitions(loaded: LoadedSource) -> None:
    assert get("superadditive") is SOURCE
    assert "STANDIN_TRACE" not in os.environ  # the script's environment line never ran
    # the metrics file raises when imported; the stand-in library left no trace behind
    assert not any(k == "langchain_core" or k.startswith("langchain_core.") for k in sys.modules
                   if getattr(sys.modules[k], "__file__", "") and str(STAND_IN) in sys.modules[k].__file__)
    assert loaded.state["actions"] == ("action_a", "action_b")
    assert loaded.state["no_plan"] == "(none yet)"
    assert len(loaded.commit) == 40  # the stand-in sits in this repository's checkout


def test_a_copy_outside_git_is_recorded_by_the_hash_of_the_script(tmp_path: Path) -> None:
    copy = shutil.copytree(STAND_IN, tmp_path / "clone")
    commit = SOURCE.load(copy).commit
    assert commit.startswith("files:")
    (copy / "IPDv6.py").write_text((copy / "IPDv6.py").read_text() + "\n# changed\n")
    assert SOURCE.load(copy).commit != commit


def test_serves_the_team_tournament_on_the_papers_dilemma_only() -> None:
    assert SOURCE.serves(mechanism="teams", prompt_protocol="default", game="ipd")
    assert not SOURCE.serves(mechanism="teams", prompt_protocol="default", game="stag_hunt")
    assert not SOURCE.serves(mechanism="reputation", prompt_protocol="default", game="ipd")


# ------------------------------------------------------------------ the messages
async def test_first_round_meets_an_unknown_opponent_and_later_rounds_show_the_match(
    loaded: LoadedSource,
) -> None:
    ctx, asked = await tournament()
    first = text(loaded, ctx, find(asked, "play", 0, 0))
    assert first == (
        "Person: Seat 0 faces seat unknown.\nRules:\n"
        "* at most 3 rounds a match, 8 in all; played 0\n* round now: 1\n"
        "* aim: own and group score (+100.0% to the best group)\n"
        "groups: mine g0, theirs g?, rank 1/2\n"
        "Rounds:\n(nothing yet)\nPlan: (none yet)\nPick a move; stay or go.\n" + INSTRUCTIONS
    )
    second = text(loaded, ctx, find(asked, "play", 1, 0, 1))
    assert second.startswith("Person: Seat 1 faces seat 0.\n")
    assert "groups: mine g0, theirs g0, rank 1/2\n" in second
    assert "Rounds:\n#1 me action_a them action_a (3/3)\nPlan:" in second


async def test_group_scores_count_finished_matches_and_plans_carry_over(loaded: LoadedSource) -> None:
    ctx, asked = await tournament()
    # match 1 (seats 0 and 2) starts after match 0 (0 and 1, two rounds of 3/3) ended;
    # seat 0 planned before its third round, in match 1
    later = text(loaded, ctx, find(asked, "play", 2, 1, 1))
    assert "groups: mine g1, theirs g0, rank 2/2\n" in later
    seat0 = text(loaded, ctx, find(asked, "play", 0, 1, 0))
    assert "played 2\n" in seat0 and "Plan: plan 2 of seat 0\n" in seat0  # the revision


async def test_planner_and_critic_see_the_real_co_player_and_the_history(loaded: LoadedSource) -> None:
    ctx, asked = await tournament()
    draft = text(loaded, ctx, find(asked, "plan", 0, 1, 0))
    assert draft == (
        "Person: Draft a plan for seat 0 (against seat 2).\n"
        "* at most 3 rounds a match, 8 in all; played 2\n* round now: 1\n"
        "* aim: own and group score (+100.0% to the best group)\n"
        "Stats:\nme 0 (0 a), them 0 (0 a)\ngroups: mine g0, theirs g1, rank 1/2\n"
        "Earlier:\n[seat 0 g0 v seat 1 g0]\n#1 me action_a them action_a (3/3)\n"
        "#2 me action_a them action_a (3/3)\nOld plan: (none yet)\nReview: (no review yet)\n"
        "Say when to pick each move."
    )
    critique = text(loaded, ctx, find(asked, "critique", 0, 1))
    assert "Plan: plan 1 of seat 0\nSay what the plan misses. Mind the group." in critique
    revision = text(loaded, ctx, find(asked, "plan", 0, 1, 1))
    assert "Old plan: plan 1 of seat 0\nReview: critique 1 of seat 0\n" in revision


async def test_meta_prompt_names_coop_tuis_draws(loaded: LoadedSource) -> None:
    ctx, asked = await tournament()
    metas = [r for r in asked if r.phase == "meta" and r.view.extra["pairing"] == 0]
    assert len(metas) == 10 and {r.seat for r in metas} == {0}
    a1, a2, r1, r2 = metas[0].view.extra["tournament"]["asked"]["draws"]
    name = {0: "action_a", 1: "action_b"}
    prompt = text(loaded, ctx, metas[0])
    assert prompt.startswith("Person: Seat 0 after meeting seat 1.\n")
    assert "* round now: 3\n" in prompt and "played 4\n" in prompt  # as the code counts
    assert (f"Quiz: points for {name[a1]} against {name[a2]}? What did the other seat do in "
            f"round {r1}, and earn in round {r2}?\n") in prompt
    assert prompt.endswith("Answer in JSON with the keys lowest_highest, round.")
    assert {text(loaded, ctx, r) for r in metas} == {prompt}


@pytest.mark.parametrize(("structure", "goal", "groups"), [
    ("RI", "* aim: own score\n", False),
    ("GC", "* aim: group score (+100.0% to the best group)\n", True),
])
async def test_every_structure_states_its_goal(
    loaded: LoadedSource, structure: str, goal: str, groups: bool,
) -> None:
    ctx, asked = await tournament(structure=structure)
    prompt = text(loaded, ctx, [r for r in asked if r.phase == "play"][0])
    assert goal in prompt
    assert ("groups: " in prompt) is groups


async def test_without_planning_the_move_reads_the_whole_history(loaded: LoadedSource) -> None:
    ctx, asked = await tournament(planning=False)
    assert not [r for r in asked if r.phase in ("plan", "critique")]
    prompt = text(loaded, ctx, find(asked, "play", 0, 1, 0))
    assert "Rounds:\n[seat 0 g0 v seat 1 g0]\n#1 me action_a them action_a (3/3)\n" in prompt


async def test_a_separate_exit_keeps_our_wording_and_a_reask_repeats_the_prompt(
    loaded: LoadedSource,
) -> None:
    ctx, asked = await tournament(exit_timing="separate", meta="off", planning=False)
    exit_request = [r for r in asked if r.phase == "exit"][0]
    assert loaded.messages(ctx, exit_request) == exit_request.messages
    play = [r for r in asked if r.phase == "play"][0]
    sent = loaded.messages(ctx, play)
    assert loaded.retry_messages(ctx, play, sent, "no idea", "no move") == sent


# ------------------------------------------------------------------ errors
def test_a_missing_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        SOURCE.load(tmp_path / "nowhere")
    assert err.value.field == "sources.superadditive" and "does not exist" in str(err.value)


@pytest.mark.parametrize(("old", "new", "words"), [
    ("def critique_plan(", "def review_plan(", "has no critique_plan"),
    ("def generate_plan(player_id: int, state: MatchState, opponent_id: int,\n"
     "                  tournament_state: TournamentState, old_plan: str, critique: str)",
     "def generate_plan(player_id: int, state: MatchState, opponent_id: int,\n"
     "                  tournament_state: TournamentState, critique: str, old_plan: str)",
     "generate_plan takes (player_id, state, opponent_id, tournament_state, critique, old_plan)"),
    ("player_prompt = ", "play_prompt = ", "has no player_prompt"),
    ("from langchain_core.prompts import", "from langchain_core_gone.prompts import",
     "imports langchain_core_gone, which is not installed"),
])
def test_a_changed_script_is_refused_before_any_prompt(
    tmp_path: Path, old: str, new: str, words: str,
) -> None:
    copy = shutil.copytree(STAND_IN, tmp_path / "clone")
    script = copy / "IPDv6.py"
    assert old in script.read_text()
    script.write_text(script.read_text().replace(old, new))
    with pytest.raises(SourceError) as err:
        SOURCE.load(copy)
    assert words in str(err.value) and "IPDv6.py" in str(err.value)


async def test_a_builder_that_fails_names_the_phase(tmp_path: Path) -> None:
    copy = shutil.copytree(STAND_IN, tmp_path / "clone")
    script = copy / "IPDv6.py"
    script.write_text(script.read_text().replace(
        'return "Say when to pick each move."', 'return 1 / 0'))
    broken = SOURCE.load(copy)
    ctx, asked = await tournament()
    with pytest.raises(SourceError) as err:
        broken.messages(ctx, find(asked, "plan", 0, 1))
    assert "generate_plan failed building the plan prompt: ZeroDivisionError" in str(err.value)


def test_seats_that_read_no_prompt_carry_no_tournament_copy() -> None:
    """Strategy tournaments pay nothing for the source's facts; prompt readers get them."""
    from coop_tui.agents.strategies import get_strategy
    from coop_tui.agents.strategy_agent import StrategyAgent
    from coop_tui.mechanisms import teams

    mech = Teams(TeamsParams(structure="SA", teams=2, team_size=2, rounds=3, budget=8,
                             check_budget=False))
    agents = [StrategyAgent("tft", get_strategy("tit_for_tat")), Recorder()] * 2
    ctx = MatchContext(run_id="r", match_id="m", game=get_game("ipd"), agents=agents,
                       bus=EventBus(), seed=1)
    state = teams._State(4)
    log = teams.MatchLog(0, (0, 1))
    state.logs.append(log)
    strategy = mech._play_request(ctx, state, log, 0, 1, 1)
    model = mech._play_request(ctx, state, log, 1, 1, 1)
    assert "tournament" not in strategy.view.extra
    facts = model.view.extra["tournament"]
    assert facts["matches"] == (((0, 1), (), ""),) and facts["current"] == 0


async def test_answers_to_the_codes_prompt_are_read_by_the_codes_own_function(
    loaded: LoadedSource, capsys: pytest.CaptureFixture[str],
) -> None:
    ctx, asked = await tournament()
    play = find(asked, "play", 0, 0)
    defect = play.labels[play.label_to_action.index(1)]
    read = SOURCE.read_answer(loaded, ctx, play, '{"move": "action_b", "keep_playing": false}')
    assert json.loads(read) == {"choice": defect, "leave": True}
    cooperate = play.labels[play.label_to_action.index(0)]
    read = SOURCE.read_answer(loaded, ctx, play, '{"Move": "HELP", "Keep_Playing": true}'.lower())
    assert json.loads(read) == {"choice": cooperate, "leave": False}
    # where the code would play at random, nothing was read: coop-tui asks again
    assert SOURCE.read_answer(loaded, ctx, play, "I am not sure.") is None
    assert capsys.readouterr().out == ""  # the code's prints never reach the screen
    plan = find(asked, "plan", 0, 1)
    assert SOURCE.read_answer(loaded, ctx, plan, "  stay kind  \n") == "stay kind"
    meta = [r for r in asked if r.phase == "meta"][0]
    assert SOURCE.read_answer(loaded, ctx, meta, "{}") is None


class PaperFormat(Recorder):
    """A seat that follows the paper's own format instructions: its moves are the code's
    JSON (``move`` / ``keep_playing``), defecting in every pairing; seat 3 first writes
    something neither reader can use, then coop-tui's own form."""

    async def reply(self, request: DecisionRequest, messages: Any, sink: Any) -> AgentReply:
        if request.phase != "play":
            return await super().reply(request, messages, sink)
        self.asked.append(request)
        if request.seat == 3:
            key = (request.view.extra["pairing"], request.round)
            self.tries[key] = self.tries.get(key, 0) + 1
            if self.tries[key] == 1:
                return AgentReply(text="I am not sure.")
            label = request.labels[request.label_to_action.index(0)]
            return AgentReply(text=json.dumps({"choice": label, "leave": False}))
        return AgentReply(text='{"move": "action_b", "reasoning": "-", "keep_playing": true}')

    def __init__(self) -> None:
        super().__init__()
        self.tries: dict[tuple[int, int], int] = {}


async def test_the_engine_reads_replies_in_the_papers_format_with_the_codes_reader(
    loaded: LoadedSource,
) -> None:
    """Under source wording the code's reader reads first; where it reads nothing
    coop-tui's parser reads the reply, then a re-ask; each decision notes its reader."""
    mech = Teams(TeamsParams(structure="SA", teams=2, team_size=2, rounds=2, budget=8,
                             check_budget=False, meta="off", planning=False,
                             schedule="ordered", winner_bonus=1.0))
    seat = PaperFormat()
    ctx = MatchContext(run_id="r", match_id="m", game=get_game("ipd"), agents=[seat] * 4,
                       bus=EventBus(), seed=3,
                       policy=DecisionPolicy(answer="choice", style_message="user",
                                             on_invalid="uniform", max_attempts=2,
                                             source=loaded))
    await mech.play(ctx)
    plays = [d for d in ctx.decisions if d.phase == "play"]
    paper = [d for d in plays if d.seat != 3]
    ours = [d for d in plays if d.seat == 3]
    assert paper and ours
    for d in paper:  # read the paper's way at the first attempt: a defection, staying
        assert d.valid and d.attempts == 1 and d.action == 1 and d.leave is False
        assert d.normalisation.startswith("read by sources.superadditive's own reader")
    for d in ours:  # neither reader could use "I am not sure.": asked again, in our form
        assert d.valid and d.attempts == 2 and d.action == 0
        assert d.retries[0].response == "I am not sure."
        assert d.normalisation.startswith(
            "sources.superadditive's own reader read nothing; read by coop-tui's parser")


def test_a_source_without_a_reader_leaves_reading_to_coop_tui() -> None:
    """The hook is optional: an adapter that does not override it reads nothing."""
    coopeval = get("coopeval")
    assert not LoadedSource(coopeval, STAND_IN, "c").reads_answers
    assert LoadedSource(SOURCE, STAND_IN, "c").reads_answers


def test_a_clone_without_its_prompt_library_names_the_package_to_install(tmp_path: Path) -> None:
    """The clone's one dependency beyond coop-tui (docs/wording.md): the error says what
    to install, and where."""
    import importlib.util

    if importlib.util.find_spec("langchain_core") is not None:
        pytest.skip("langchain-core is installed here: nothing is missing")
    copy = shutil.copytree(STAND_IN, tmp_path / "clone")
    shutil.rmtree(copy / "langchain_core")  # the stand-in ships its own small copy
    with pytest.raises(SourceError) as err:
        SOURCE.load(copy)
    message = str(err.value)
    assert "imports langchain_core" in message and "IPDv6.py" in message
    assert "pip install langchain-core" in message and "pipx inject coop-tui langchain-core" in message
