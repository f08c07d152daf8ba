"""Transcripts of the strategic personalities protocol, one per game family of the paper's code.

The paper's public code (FelipeMAffonso/strategic-personalities, ``environments/games/``)
sorts its games into eight categories: cooperation, coordination, fairness, depth, trust,
competition, negotiation and risk. Each category is one game family here: ``FAMILIES``
lists the study's games by category, and every family has a transcript test that plays a
real match over the loopback server into a real database and checks the stored messages
against the information of the code (``environments/engine.py`` builds the rules as the
system message and the round as the user message; the category files hold each game's
rules text and its query with the example answer):

- roles: the rules in the system message, the round and the question in the user message;
- the game's name where our prompt gives one, and its role;
- the answer format: ``<answer>`` tags, option letters or the code's words, the example;
- the horizon: "round t of T" in the two-by-two games (the code states the rounds in their
  rules), "round t" in the others (the code says only "It is round t");
- the goal: none at baseline (the code states one only in its goal_* conditions).

Families whose transcripts are pinned elsewhere are named in ``PINNED_ELSEWHERE``.
``CODE_NAMES`` pins, per numeric game, the name the code's rules give it and the example
answer its question shows; the default protocol states neither (its prompts are
unchanged by them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import AgentReply, Decision
from coop_tui.games import load_game
from coop_tui.games.transforms import scale_payoffs
from coop_tui.parsing import parse_answer
from coop_tui.reask import reask
from coop_tui.schemas import answer_grammar, answer_schema, tag_gbnf
from coop_tui.spec import build_sweep, load_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

ROOT = Path(__file__).resolve().parent.parent

FAMILIES: dict[str, set[str]] = {
    "cooperation": {"pd_canonical", "pd_harsh", "pd_medium", "pd_mild", "diners_dilemma",
                    "el_farol_bar", "pg_low_mpcr", "pg_med_mpcr", "pg_high_mpcr",
                    "commons_dilemma"},
    "coordination": {"bos_standard", "bos_transposed", "stag_hunt_standard", "stag_hunt_risky",
                     "matching_pennies", "focal_point"},
    "fairness": {"ultimatum", "dictator", "third_party_punishment"},
    "depth": {"beauty_contest_23", "beauty_contest_12", "centipede_6", "centipede_10",
              "eleven_twenty"},
    "trust": {"trust_berg", "gift_exchange", "repeated_trust"},
    "competition": {"auction_first_price", "auction_vickrey", "auction_all_pay",
                    "colonel_blotto"},
    "negotiation": {"nash_demand", "alternating_offers", "multi_issue"},
    "risk": {"chicken_sp", "chicken_high_stakes", "signaling", "cheap_talk"},
}
"""The code's categories (``category`` of every game config), by our game keys."""

PINNED_ELSEWHERE = {
    "cooperation": "test_seed003_messages.py::test_matrix_game_states_no_goal_at_baseline_and_the_conditions_goal",
    "fairness": "test_seed003_messages.py::test_accept_or_reject_is_asked_and_read_as_the_word",
    "trust": "test_seed003_messages.py::test_numeric_moves_name_the_game_the_role_and_the_codes_example",
    "depth": "test_seed003_messages.py::test_centipede_tells_the_codes_payoff_description_unless_exact_is_asked",
}
"""Families with a transcript test in another file (besides the ones below)."""

GOAL_WORDS = re.compile(r"\bgoal\b|as many points|\baim\b", re.IGNORECASE)


def scripted(body: dict[str, Any]) -> str:
    """Answers in the form the message asks for: a word, an offered letter, the example
    split, or 4 (a JSON object when the message asks for one)."""
    text = last_user_message(body)
    if "JSON object" in text:
        return '{"demand": 4}'
    split = re.search(r"for example: (<answer>\d+(, \d+)+</answer>)", text)
    if split:
        return split.group(1)
    if re.search(r"one word[:,] accept or reject", text):  # or a counter-demand
        return "<answer>accept</answer>"
    offered = re.search(r"one option: Option (\w+)", text)
    if offered:
        return f"<answer>Option {offered.group(1)}</answer>"
    return "<answer>4</answer>"


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted) as server:
        yield server


def seats(server: LoopbackServer, **others: Any) -> dict[str, Any]:
    return {"m": {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
                  "style": "plain"}, **others}


MATRIX = {"mechanism": "repetition", "horizon": "known", "rounds_told": "two_by_two",
          "rounds": 2, "answer": "choice", "randomize_labels": "trial"}
"""The study's settings for a two-by-two game (design G), two rounds long."""
MOVES = {"mechanism": "none", "rounds_told": "two_by_two", "answer": "choice"}
"""The study's settings for a game played move by move."""


async def transcript(tmp_path: Path, experiment: dict[str, Any],
                     agents: dict[str, Any]) -> list[tuple[Decision, str, str]]:
    """Play one experiment under the protocol, by its name; (decision, system, user) of
    the model's stored decisions, each sent as exactly a system and a user message."""
    data = {"name": "sp", "seed": 3, "max_attempts": 2, "on_invalid": "abort",
            "agents": agents, "experiments": [
                {"prompt_protocol": "strategic_personalities", **experiment}]}
    store = Store(tmp_path / "sp.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    out = []
    for d in store.decisions(match["id"]):
        if d.agent != "m":
            continue
        system, user = d.prompt
        assert (system["role"], user["role"]) == ("system", "user")
        assert d.valid and d.attempts == 1 and d.normalisation == "from the <answer> tag"
        out.append((d, system["content"], user["content"]))
    return out


def no_goal(system: str, user: str) -> None:
    assert not GOAL_WORDS.search(system + user), "the code's baseline states no goal"


def rules_then_round(system: str, user: str) -> None:
    """The code's split: the rules (and the payoffs) only in the system message; the
    round and the answer request only in the user message."""
    assert "This is round" not in system and "<answer>" not in system
    assert "This is round" in user and "Wrap your final answer in <answer> tags" in user


# ------------------------------------------------------------ the families


def test_every_game_of_the_study_is_in_one_family() -> None:
    games = {c.game for c in load_sweep(ROOT / "data/studies/strategic-personalities.toml",
                                        check_keys=False).cells}
    listed = [g for family in FAMILIES.values() for g in family]
    assert len(listed) == len(set(listed)) and set(listed) == games


def test_every_family_has_a_transcript_test() -> None:
    here = {node.name for node in ast.parse(Path(__file__).read_text()).body
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)}
    for family in FAMILIES:
        own = [n for n in here if n.startswith(f"test_{family}_")]
        where = PINNED_ELSEWHERE.get(family)
        assert own or where, f"no transcript test for the {family} family"
        if where:
            file, name = where.split("::")
            tree = ast.parse((ROOT / "tests" / file).read_text())
            assert name in {n.name for n in tree.body if hasattr(n, "name")}, where


async def test_cooperation_public_goods_is_a_number_in_tags_with_round_only(
        tmp_path: Path, model: LoopbackServer) -> None:
    moves = await transcript(tmp_path, {**MOVES, "game": "pg_med_mpcr",
                                        "game_params": {"rounds": 1},
                                        "matchup": [["m", "m", "m", "m"]]}, seats(model))
    assert len(moves) == 4  # every seat a model, each asked once
    for d, system, user in moves:
        rules_then_round(system, user)
        no_goal(system, user)
        assert "3 other players" in system and "10" in system and "0.5" in system
        assert "This is round 1." in user and "round 1 of" not in user
        assert "decimals allowed" in user and d.parsed == 4


async def test_coordination_battle_of_the_sexes_states_the_rounds_and_asks_a_letter(
        tmp_path: Path, model: LoopbackServer) -> None:
    rounds = await transcript(tmp_path, {**MATRIX, "game": "bos_standard",
                                         "matchup": [["m", "tft"]]},
                              seats(model, tft={"strategy": "tit_for_tat_sp"}))
    assert [d.round for d, _, _ in rounds] == [1, 2]
    letters = set()
    for d, system, user in rounds:
        rules_then_round(system, user)
        no_goal(system, user)
        assert "Payoff description" in system and "10 points" in system and "7 points" in system
        assert f"This is round {d.round} of 2." in user  # the code states the rounds
        offered = re.findall(r"Option (\w)\b", user.split("What to answer")[1])
        assert re.search(r"for example: <answer>Option \w</answer>", user)
        letters |= set(offered)
    assert len(letters) == 2  # one pair of letters for the whole match, as the code draws
    assert "Round 1" in rounds[1][2] or "round 1" in rounds[1][2].lower()  # the history


async def test_depth_beauty_contest_shows_the_codes_example(
        tmp_path: Path, model: LoopbackServer) -> None:
    [(d, system, user), _] = await transcript(tmp_path, {
        **MOVES, "game": "beauty_contest_23", "game_params": {"rounds": 1},
        "matchup": [["m", "m"]]}, seats(model))
    rules_then_round(system, user)
    no_goal(system, user)
    assert "2/3 of the average" in system
    assert "for example: <answer>33</answer>" in user and "This is round 1." in user


async def test_competition_auction_tells_the_private_value_and_asks_a_bid(
        tmp_path: Path, model: LoopbackServer) -> None:
    [(d, system, user), _] = await transcript(tmp_path, {
        **MOVES, "game": "auction_first_price", "game_params": {"rounds": 1},
        "matchup": [["m", "m"]]}, seats(model))
    rules_then_round(system, user)
    no_goal(system, user)
    assert "pays its own bid" in system and "private value" in system
    assert re.search(r"Your private value for the item is \d+", user)  # not redrawn, as told
    assert "decimals allowed" in user and d.parsed == 4


async def test_negotiation_nash_demand_asks_a_demand_in_tags(
        tmp_path: Path, model: LoopbackServer) -> None:
    [(d, system, user), _] = await transcript(tmp_path, {
        **MOVES, "game": "nash_demand", "game_params": {"rounds": 1},
        "matchup": [["m", "m"]]}, seats(model))
    rules_then_round(system, user)
    no_goal(system, user)
    assert "100 points" in system and "both get 0" in system
    assert "This is round 1." in user and d.parsed == 4


async def test_risk_chicken_states_the_rounds_and_asks_a_letter(
        tmp_path: Path, model: LoopbackServer) -> None:
    rounds = await transcript(tmp_path, {**MATRIX, "game": "chicken_sp",
                                         "matchup": [["m", "tft"]]},
                              seats(model, tft={"strategy": "tit_for_tat_sp"}))
    for d, system, user in rounds:
        rules_then_round(system, user)
        no_goal(system, user)
        assert "-10 points" in system  # the crash
        assert f"This is round {d.round} of 2." in user
        assert re.search(r"for example: <answer>Option \w</answer>", user)


# ------------------------------------------------------------ the code's names and examples

CODE_NAMES = [
    pytest.param("nash_demand", "the Nash Demand Game", "<answer>50</answer>", id="nash_demand"),
    pytest.param("pg_med_mpcr", "the Public Goods Game", "<answer>5</answer>", id="public_goods"),
    pytest.param("commons_dilemma", "the Commons Dilemma", "<answer>5</answer>", id="commons"),
    pytest.param("auction_first_price", "You are playing a first-price sealed-bid auction",
                 "<answer>42</answer>", id="first_price"),
    pytest.param("auction_vickrey", "You are playing a second-price sealed-bid auction",
                 "<answer>42</answer>", id="vickrey"),
    pytest.param("auction_all_pay", "You are playing an all-pay auction", "<answer>25</answer>",
                 id="all_pay"),
    pytest.param("alternating_offers", "the Alternating Offers Game", "<answer>55</answer>",
                 id="alternating_offers"),
    pytest.param("colonel_blotto", "You are playing Colonel Blotto",
                 "<answer>40, 30, 30</answer>", id="blotto"),
    pytest.param("multi_issue", "You are playing a game", "<answer>80, 20</answer>",
                 id="multi_issue"),  # the code's rules give this one no name
]
"""Per game: the name the code's rules give it, as our first line says it, and the example
answer of the code's question (a split as numbers separated by commas)."""


@pytest.mark.parametrize(("game", "name", "example"), CODE_NAMES)
async def test_the_codes_name_and_example_reach_the_prompt(
        tmp_path: Path, model: LoopbackServer, game: str, name: str, example: str) -> None:
    players = 4 if game.startswith(("pg_", "commons")) else 2
    moves = await transcript(tmp_path, {
        **MOVES, "game": game, "game_params": {"rounds": 1},
        "matchup": [["m"] * players]}, seats(model))
    first = [m for m in moves if m[0].phase != "respond"]  # the responder answers a word
    assert first
    for d, system, user in first:
        rules_then_round(system, user)
        no_goal(system, user)
        assert name in system and f"for example: {example}" in user
        if d.kind == "allocation":
            assert "numbers separated by commas" in user and "JSON" not in user
            assert list(d.parsed.values()) == [int(x) for x in example[8:-9].split(", ")]


async def test_the_default_protocol_names_none_of_these_games_and_shows_no_example(
        tmp_path: Path, model: LoopbackServer) -> None:
    """The names and examples are the code's: coop-tui's own prompts stay as they were."""
    data = {"name": "own", "seed": 3, "max_attempts": 2, "on_invalid": "abort",
            "agents": seats(model), "experiments": [
                {**MOVES, "game": "nash_demand", "game_params": {"rounds": 1},
                 "matchup": [["m", "m"]]}]}
    store = Store(tmp_path / "own.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    for d in store.decisions(match["id"]):
        text = d.prompt[0]["content"]
        assert "You are playing a game with 1 other player" in text
        assert "Nash Demand" not in text and "<answer>" not in text


def test_a_split_in_tags_has_a_tag_grammar_in_key_order() -> None:
    """The embedded model writes a split as the prompt asks for it (numbers separated by
    commas in <answer> tags), adding up to the total where there is one."""
    blotto = {"keys": ["B1", "B2", "B3"], "min": 0, "max": 100, "step": 1, "total": 100,
              "form": "tag"}
    kind, grammar = answer_grammar("allocation", (), answer_schema("allocation", (), blotto),
                                   blotto)
    assert kind == "gbnf" and grammar.startswith('root ::= "<answer>" f0-100 "</answer>"')
    assert '"40" ", " f1-60' in grammar and "{" not in grammar
    issues = {"keys": ["A", "B"], "min": 0, "max": 100, "step": 1, "form": "tag"}
    free = tag_gbnf("allocation", (), issues) or ""
    assert free.startswith('root ::= "<answer>" value ", " value "</answer>"')
    assert parse_answer("allocation", "<answer>80, 20</answer>", options=issues)[0] == {
        "A": 80, "B": 20}


# ------------------------------------------------------------ re-asks

RETRY = "Your previous answer could not be used"


def unsure_first(body: dict[str, Any]) -> str:
    """Nothing readable at first; after a re-ask, the form the first message asked for."""
    if RETRY in last_user_message(body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return scripted({"messages": [{"role": "user", "content": first}]})
    return "I am not sure yet."


async def test_a_reask_in_the_match_asks_for_the_tag_again(tmp_path: Path) -> None:
    """The re-ask after an unreadable reply asks for the <answer> tag the prompt asked for
    (with the move's example), never for a JSON object."""
    with LoopbackServer(latency=0.0, chunks=1, answer=unsure_first) as server:
        data = {"name": "sp", "seed": 3, "max_attempts": 2, "on_invalid": "abort",
                "agents": seats(server), "experiments": [
                    {**MOVES, "prompt_protocol": "strategic_personalities", "game": "ultimatum",
                     "game_params": {"rounds": 1}, "matchup": [["m", "m"]]}]}
        store = Store(tmp_path / "retry.db")
        summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    offer, respond = store.decisions(match["id"])
    for d, shown in ((offer, "<answer>40</answer>"), (respond, "<answer>accept</answer>")):
        assert d.valid and d.attempts == 2
        retry = d.prompt[-1]["content"]
        assert retry.startswith(RETRY) and f"in <answer> tags as described above ({shown})" in retry
        assert "JSON" not in retry


async def test_reasking_a_stored_decision_keeps_the_matchs_protocol(
        tmp_path: Path, model: LoopbackServer) -> None:
    """A re-ask from the inspector runs under the match's protocol (read from its stored
    condition): its own re-ask asks for the tag, as the match's would."""
    await transcript(tmp_path, {**MOVES, "game": "nash_demand", "game_params": {"rounds": 1},
                                "matchup": [["m", "m"]]}, seats(model))
    store = Store(tmp_path / "sp.db")
    [run] = store.runs()
    [match] = store.matches(run["id"])
    first = store.decisions(match["id"])[0]

    class Unsure:
        name, kind, style, spec = "unsure", "llm", "plain", {"model": "test/unsure"}
        sent: list[list[dict[str, str]]] = []

        async def reply(self, request: Any, messages: Any, sink: Any) -> AgentReply:
            self.sent.append([dict(m) for m in messages])
            return AgentReply(text="I am not sure yet." if len(self.sent) == 1
                              else "<answer>50</answer>")

    agent = Unsure()
    result = await reask(store, store.decision_id(first.cache_key), agent=agent, max_attempts=2)
    assert result.decision.valid and result.decision.parsed == 50
    retry = agent.sent[1][-1]["content"]
    assert "in <answer> tags as described above (<answer>50</answer>)" in retry
    assert "JSON" not in retry


# ------------------------------------------------------------ Diner's Dilemma and El Farol

FOUR = {**MATRIX, "matchup": [["m", "m", "m", "m"]], "rounds": 1}
"""A four-player matrix game, every seat the model, one round."""


def seated(game: str) -> dict[str, Any]:
    """The settings of ``game`` with the model in every seat (two for the focal point)."""
    return {**FOUR, "matchup": [["m", "m"]]} if game == "focal_point" else FOUR

RULES = {
    "diners_dilemma": ("the Diner's Dilemma", r"(\w) is the cheap dish \(it costs 10 and gives "
                       r"15 enjoyment\), (\w) the costly dish \(it costs 20 and gives 20 "
                       r"enjoyment\)", "split equally"),
    "el_farol_bar": ("the El Farol Bar Game", r"(\w) is going to the bar, (\w) staying home",
                     "If at most 60% of the 4 players go (2 or fewer), each player who goes "
                     "gets 10 points"),
    "focal_point": ("a coordination game", None,
                    "If you pick the same option, each of you gets 10 points; if you pick "
                    "different options, both get 0."),
}
"""The code's information per game: its name, which label is which option (as the code's
question says it) and the rule (as its rules text says it)."""


@pytest.mark.parametrize("game", sorted(RULES))
async def test_cooperation_four_player_games_are_told_by_name_and_rule(
        tmp_path: Path, model: LoopbackServer, game: str) -> None:
    name, options, rule = RULES[game]
    moves = await transcript(tmp_path, {**seated(game), "game": game}, seats(model))
    assert len(moves) == (2 if game == "focal_point" else 4)
    for d, system, user in moves:
        rules_then_round(system, user)
        no_goal(system, user)
        others = "1 other player," if game == "focal_point" else "3 other players,"
        assert f"You are playing {name} with {others}" in system
        if options:
            told = re.search(options, system)
            assert told and set(told.groups()) == set(d.labels)  # each label's meaning
        assert rule in system and "If you choose" not in system  # no outcome list
        assert "This is round 1." in user


@pytest.mark.parametrize("game", sorted(RULES))
async def test_the_outcome_list_is_a_named_option(
        tmp_path: Path, model: LoopbackServer, game: str) -> None:
    """game_params payoff_text = "table" keeps coop-tui's list of every outcome (16 rows);
    the game is still named as the code names it."""
    moves = await transcript(tmp_path, {**seated(game), "game": game,
                                        "game_params": {"payoff_text": "table"}}, seats(model))
    for _, system, _ in moves:
        assert system.count("- If you choose") == 16 and RULES[game][0] in system


@pytest.mark.parametrize("game", sorted(RULES))
async def test_the_default_protocol_still_lists_every_outcome(
        tmp_path: Path, model: LoopbackServer, game: str) -> None:
    data = {"name": "own", "seed": 3, "max_attempts": 2, "on_invalid": "abort",
            "agents": seats(model), "experiments": [{**seated(game), "game": game}]}
    store = Store(tmp_path / "own.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    for d in store.decisions(match["id"]):
        text = "\n".join(m["content"] for m in d.prompt)
        assert text.count("- If you choose") == 16 and RULES[game][0] not in text


def test_a_scaled_game_drops_the_codes_rule() -> None:
    """The rule's numbers would be wrong after a payoff transform: the list is told. A
    payoff_text other than "rule" / "table" is refused naming the field."""
    scaled = scale_payoffs(load_game("diners_dilemma"), 10)
    assert load_game("diners_dilemma").code_payoff_rule and scaled.code_payoff_rule is None
    with pytest.raises(ValueError, match="payoff_text must be 'rule' or 'table'"):
        load_game("el_farol_bar", payoff_text="words")
