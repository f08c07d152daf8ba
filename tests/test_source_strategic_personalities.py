"""The strategic personalities paper's own wording, read from a clone of its code (issue #39).

The adapter (``coop_tui/sources/strategic_personalities.py``) hands coop-tui's state to the
code's ``GameEngine.build_prompt``. These tests run it against the synthetic stand-in
tree in ``tests/data/sources/strategic-personalities`` (the code's module layout and
signatures, our own invented sentences, marked STAND-IN), so each assertion checks the
plumbing: the letters and their per-round order coop-tui drew, the history and its number
types, the second mover's view, the chance draws, the condition, the layout and the
re-ask; and the clear errors for a missing path, function or changed signature.

Matches are played in process by seats that read their prompt and answer in the tag form
asked for; the adapter is then asked for every request the seats received.
"""

from __future__ import annotations

import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.conditions import CONDITIONS
from coop_tui.decisions import AgentReply, DecisionRequest
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.events import EventBus
from coop_tui.games import load_game
from coop_tui.games.kinds import ProtocolGame
from coop_tui.mechanisms import mechanism_class
from coop_tui.sources import SourceError, get
from coop_tui.sources.strategic_personalities import GAME_IDS, SOURCE

STAND_IN = Path(__file__).resolve().parent / "data" / "sources" / "strategic-personalities"


class Reader:
    """A seat that reads its prompt (as a model does) and answers in the tag form asked
    for, at random from a seeded generator; keeps every request."""

    kind = "llm"
    style = "plain"
    reads_prompt = True

    def __init__(self, name: str, seed: int) -> None:
        self.name, self.spec, self.rng = name, {"name": name}, random.Random(seed)
        self.seen: list[DecisionRequest] = []

    async def reply(self, request: DecisionRequest, messages: Any, sink: Any) -> AgentReply:
        self.seen.append(request)
        o = request.options
        if request.kind == "choice":
            label = self.rng.choice(request.labels)
            return AgentReply(text=f"<answer>{label}</answer>" if o.get("words")
                              else f"<answer>Option {label}</answer>")
        if request.kind == "number":
            return AgentReply(text=f"<answer>{self.rng.randint(int(o['min']), int(o['max']))}</answer>")
        parts = [self.rng.randint(0, 40) for _ in o["keys"]]
        if "total" in o:
            parts[-1] = int(o["total"]) - sum(parts[:-1])
        return AgentReply(text="<answer>" + ", ".join(map(str, parts)) + "</answer>")


async def play(game_key: str, *, rounds: int = 3, seed: int = 1, condition: str = "baseline",
               told: dict[str, Any] | None = None, **params: Any) -> tuple[MatchContext, list[DecisionRequest]]:
    """One match under the study's settings; (context, every request, by round and seat)."""
    game = load_game(game_key, **params)
    if isinstance(game, ProtocolGame):
        game = load_game(game_key, **params, rounds=rounds)
        mechanism = mechanism_class("none")(mechanism_class("none").Params(rounds_told="two_by_two"))
    else:
        cls = mechanism_class("repetition")
        mechanism = cls(cls.Params(rounds=rounds, horizon="known", history="all",
                                   rounds_told="two_by_two", payoff="total"))
    seats = [Reader(f"m{i}", seed * 10 + i) for i in range(game.n_players)]
    ctx = MatchContext(
        run_id="r", match_id=f"{game_key}-{seed}", game=game, agents=seats, bus=EventBus(),
        seed=seed, policy=DecisionPolicy(
            randomize_labels="trial", answer="choice", prompt_protocol="strategic_personalities",
            condition_text=CONDITIONS[condition].text, max_attempts=1, **(told or {})))
    await mechanism.play(ctx)
    return ctx, sorted((r for s in seats for r in s.seen), key=lambda r: (r.round, r.seat))


@pytest.fixture(scope="module")
def source() -> Any:
    return SOURCE.load(STAND_IN)


def texts(source: Any, ctx: MatchContext, request: DecisionRequest) -> tuple[str, str]:
    """(system, user) of the adapter's messages, checking the code's two-message layout."""
    system, user = source.messages(ctx, request)
    assert (system["role"], user["role"]) == ("system", "user")
    return system["content"], user["content"]


def letter(request: DecisionRequest, action: int) -> str:
    return request.labels[request.label_to_action.index(action)]


# ------------------------------------------------------------------ the contract


def test_the_source_is_registered_and_serves_exactly_the_papers_cells() -> None:
    assert get("strategic_personalities") is SOURCE
    assert len(GAME_IDS) == 38
    for protocol in ("strategic_personalities", "seed003"):
        assert SOURCE.serves(mechanism="repetition", prompt_protocol=protocol, game="pd_canonical")
        assert SOURCE.serves(mechanism="none", prompt_protocol=protocol, game="ultimatum")
    assert SOURCE.serves(mechanism="repetition", prompt_protocol="seed003", game="chicken_sp")
    assert not SOURCE.serves(mechanism="repetition", prompt_protocol="seed003", game="chicken")
    assert not SOURCE.serves(mechanism="repetition", prompt_protocol="coop_tui", game="pd_canonical")
    assert not SOURCE.serves(mechanism="mediation", prompt_protocol="seed003", game="pd_canonical")
    assert not SOURCE.serves(mechanism="none", prompt_protocol="seed003", game="centipede_6_turns")


def test_loading_records_the_files_hash_outside_git_and_imports_no_environments_package(
        tmp_path: Path) -> None:
    copy = shutil.copytree(STAND_IN, tmp_path / "sp")
    loaded = SOURCE.load(copy)
    assert loaded.commit.startswith("files:") and loaded.root == copy
    assert "environments" not in sys.modules and "environments.prompts" not in sys.modules
    (copy / "environments" / "games" / "risk.py").write_text(
        (copy / "environments" / "games" / "risk.py").read_text() + "\n# changed\n")
    assert SOURCE.load(copy).commit != loaded.commit  # the hash covers the files used


# ------------------------------------------------------------------ matrix games


async def test_a_two_by_two_round_is_the_codes_rules_history_and_question_in_coop_tuis_labels(
        source: Any) -> None:
    ctx, requests = await play("pd_canonical", rounds=3)
    for r in requests:
        a, b = letter(r, 0), letter(r, 1)
        system, user = texts(source, ctx, r)
        assert system == (f"STAND-IN MATRIX for 3 turns: pick {a} or {b}.\n"
                          f"* {a} vs {a} -> me 3, them 3\n* {a} vs {b} -> me 0, them 5\n"
                          f"* {b} vs {a} -> me 5, them 0\n* {b} vs {b} -> me 1, them 1")
        past = [f"Turn {m.round}: me {letter(r, m.own)}, them {letter(r, m.others[0])}; "
                f"scores {int(m.payoff)} / {int(m.others_payoffs[0])}." for m in r.view.history]
        shown = r.labels  # the order coop-tui drew for this round, not the code's own draw
        ask = f"Turn {r.round} now. Say {shown[0]} or {shown[1]} inside <answer></answer>."
        assert user == ("\n".join(past) + "\n\n" + ask if past else ask)
    assert len({r.labels for r in requests}) == 2, "both orders occur, so the order is coop-tui's"


@pytest.mark.parametrize("key", ["bos_standard", "repeated_trust", "chicken_sp"])
async def test_every_two_by_two_family_reads_its_own_matrix(source: Any, key: str) -> None:
    ctx, requests = await play(key, rounds=2)
    game = ctx.game
    for r in requests:
        system, _ = texts(source, ctx, r)
        for mine in (0, 1):
            for theirs in (0, 1):
                profile = (mine, theirs) if r.seat == 0 else (theirs, mine)
                pay = game.payoff(profile)
                assert (f"* {letter(r, mine)} vs {letter(r, theirs)} -> me {int(pay[r.seat])}, "
                        f"them {int(pay[1 - r.seat])}") in system


async def test_payoff_10x_scales_the_codes_engine_as_the_condition_scales_the_game(
        source: Any) -> None:
    ctx, requests = await play("pd_canonical", rounds=1, scale=10)
    system, _ = texts(source, ctx, requests[0])
    a, b = letter(requests[0], 0), letter(requests[0], 1)
    assert f"* {b} vs {a} -> me 50, them 0" in system and f"* {a} vs {a} -> me 30, them 30" in system


async def test_a_four_player_game_asks_with_the_labels_and_keeps_the_codes_history_of_seat_one(
        source: Any) -> None:
    ctx, requests = await play("diners_dilemma", rounds=2)
    for r in (q for q in requests if q.round == 2):
        cheap, costly = letter(r, 0), letter(r, 1)
        system, user = texts(source, ctx, r)
        assert system == "STAND-IN DINNER: four guests split one bill."
        [m] = r.view.history
        # the code's history names "the other player" as seat 1 - id: "?" for seats 2 and 3
        other = letter(r, m.others[0]) if r.seat in (0, 1) else "?"
        them = f"{m.others_payoffs[0]}" if r.seat in (0, 1) else "0"
        assert user == (f"Turn 1: me {letter(r, m.own)}, them {other}; scores {m.payoff} / {them}."
                        f"\n\nMeal 2: {cheap} is the small plate, {costly} the big one. Tag it.")


async def test_four_options_are_listed_in_the_codes_option_order_with_coop_tuis_letters(
        source: Any) -> None:
    ctx, requests = await play("focal_point", rounds=1)
    for r in requests:
        _, user = texts(source, ctx, r)
        assert user == f"Match turn 1: one of {'/'.join(letter(r, a) for a in range(4))}, same as your partner. Tag it."


# ------------------------------------------------------------------ games played move by move


async def test_the_responder_sees_the_offer_as_the_codes_parser_records_it(source: Any) -> None:
    ctx, requests = await play("ultimatum", rounds=3)
    offers = [r for r in requests if r.phase == "offer"]
    responses = [r for r in requests if r.phase == "respond"]
    assert len(offers) == len(responses) == 3
    for r in offers:
        system, user = texts(source, ctx, r)
        assert system == "STAND-IN SPLIT: one offers, the other takes it or not."
        # the code's payoff type: a float share when accepted, its integer 0 when rejected
        past = [f"Turn {m.round}: scored {m.payoff if moves['accepted'] else 0}."
                for m, moves in zip(r.view.history, r.view.extra["past"], strict=True)]
        ask = f"Split {r.round}: name the share you hand over. Tag it."
        assert user == ("\n".join(past) + "\n\n" + ask if past else ask)
    for r in responses:
        offer = r.view.extra["facts"]["offer"]
        shown = "0" if offer == 0 else str(float(offer))  # the code's clamp keeps an int 0
        assert texts(source, ctx, r)[1].endswith(
            f"Split {r.round}: you were handed {shown}. Take it? Tag it.")


async def test_the_third_party_judge_is_seat_three_and_sees_the_gift(source: Any) -> None:
    ctx, requests = await play("third_party_punishment", rounds=2)
    assert {r.seat for r in requests} == {0, 2}
    for r in requests:
        _, user = texts(source, ctx, r)
        if r.seat == 2:
            gift = r.view.extra["facts"]["gift"]
            assert user.endswith(f"the sharer gave {'0' if gift == 0 else float(gift)}. Fine them? Tag it.")
        else:
            assert user.endswith(f"Share {r.round}: how much for the bystander? Tag it.")


@pytest.mark.parametrize(("key", "phase", "ask"), [
    ("trust_berg", "return", "Loan {t}: {x} was lent to you, tripled. Repay? Tag it."),
    ("alternating_offers", "respond", "Haggle {t}: they ask {x}. Deal? Tag it."),
    ("cheap_talk", "act", "Hint {t}: you were told {x}. Act? Tag it."),
])
async def test_every_second_mover_sees_the_first_move_through_the_codes_state_update(
        source: Any, key: str, phase: str, ask: str) -> None:
    ctx, requests = await play(key, rounds=3)
    low = 1 if key == "cheap_talk" else 0
    fact = {"trust_berg": "sent", "alternating_offers": "demand", "cheap_talk": "message"}[key]
    movers = [r for r in requests if r.phase == phase]
    assert len(movers) == 3
    for r in movers:
        x = r.view.extra["facts"][fact]
        shown = str(low) if x == low else str(float(x))
        assert texts(source, ctx, r)[1].endswith(ask.format(t=r.round, x=shown))


async def test_chance_draws_are_coop_tuis_the_senders_type_and_the_hidden_state(source: Any) -> None:
    ctx, requests = await play("signaling", rounds=4)
    for r in requests:
        _, user = texts(source, ctx, r)
        if r.phase == "signal":
            assert user.endswith(f"Flag {r.round}: you are {r.view.extra['facts']['type']}. "
                                 "Raise it? Tag it.")
        else:  # as run, the receiver is always told of a signal
            assert user.endswith(f"Flag {r.round}: the flag is up. Take them? Tag it.")
    ctx, requests = await play("cheap_talk", rounds=2)
    for r in (q for q in requests if q.phase == "message"):
        assert texts(source, ctx, r)[1].endswith(
            f"the hidden number is {r.view.extra['facts']['state']}. Say? Tag it.")


async def test_a_bidder_is_told_its_own_value_as_a_whole_number(source: Any) -> None:
    ctx, requests = await play("auction_first_price", rounds=2)
    for r in requests:
        value = r.view.extra["facts"]["value"]
        assert texts(source, ctx, r)[1].endswith(
            f"Turn {r.round} now. It is worth {int(value)} to you. Bid inside <answer></answer>.")


@pytest.mark.parametrize(("key", "phase", "ask"), [
    ("pg_med_mpcr", "contribute", "Pot turn {t}: you hold 10, the pot returns 0.5 a unit. How much goes in? Tag it."),
    ("centipede_6", "plan", "Ladder {t}: on which rung do you stop? Tag it."),
    ("beauty_contest_23", "guess", "Guess {t}: two thirds of the mean wins. Your number? Tag it."),
    ("multi_issue", "demand", "Two items {t}: your share of each? Tag it."),
    ("colonel_blotto", "allocate", "Fields {t}: spread your 100 over three hills. Tag it."),
])
async def test_every_simultaneous_number_family_asks_the_codes_question_after_its_history(
        source: Any, key: str, phase: str, ask: str) -> None:
    ctx, requests = await play(key, rounds=2)
    assert {r.phase for r in requests} == {phase}
    for r in requests:
        system, user = texts(source, ctx, r)
        assert system.startswith("STAND-IN")
        assert user.endswith(ask.format(t=r.round))
        assert user.startswith("Turn 1: scored ") == (r.round == 2)


async def test_history_payoffs_take_the_codes_number_type(source: Any) -> None:
    ctx, requests = await play("pg_med_mpcr", rounds=2)
    for r in (q for q in requests if q.round == 2):
        [m] = r.view.history
        assert texts(source, ctx, r)[1].startswith(f"Turn 1: scored {float(m.payoff)}.\n\n")


async def test_a_split_game_tells_the_codes_payoffs_for_the_codes_reading_of_the_reply(
        source: Any) -> None:
    ctx, requests = await play("colonel_blotto", rounds=2)
    first = {d.seat: int(re.search(r"\d+", d.response).group())  # type: ignore[union-attr]
             for d in ctx.decisions if d.round == 1}
    # the code reads one number of a split (the stand-in's parser: the first), so its
    # payoff function sees (x, 0, 0): a tie unless one side read 0
    for r in (q for q in requests if q.round == 2):
        mine, theirs = first[r.seat], first[1 - r.seat]
        won = 10 if mine > 0 and theirs == 0 else 0
        assert texts(source, ctx, r)[1].startswith(f"Turn 1: scored {won}.\n\n")


# ------------------------------------------------------------------ conditions and re-asks


@pytest.mark.parametrize("key", ["pd_canonical", "trust_berg"])
async def test_a_named_condition_is_the_codes_framing(source: Any, key: str) -> None:
    ctx, requests = await play(key, rounds=1, condition="goal_win")
    base_ctx, base = await play(key, rounds=1)
    for r, b in zip(requests, base, strict=True):
        system, user = texts(source, ctx, r)
        base_system, base_user = texts(source, base_ctx, b)
        assert system == "STAND-IN GOAL: finish ahead.\n" + base_system
        assert user == base_user + " [framed]"
    ctx, requests = await play(key, rounds=1, condition="cover_cooking")
    assert texts(source, ctx, requests[0])[0].startswith("STAND-IN STORY: two cooks.\n")


async def test_the_cells_condition_and_payoff_scale_are_read_from_the_policy(source: Any) -> None:
    """A sweep tells the policy the cell's condition and payoff scale; the adapter reads
    them as told (here deliberately unlike the sentences and the matrix, which the
    inference alone would read), and infers only when it is not told."""
    ctx, requests = await play("pd_canonical", rounds=1,
                               told={"condition": "goal_win", "payoff_scale": 10.0})
    system, _ = texts(source, ctx, requests[0])
    a, b = letter(requests[0], 0), letter(requests[0], 1)
    assert system.startswith("STAND-IN GOAL: finish ahead.\n")  # no sentences on the policy
    assert f"* {b} vs {a} -> me 50, them 0" in system  # an unscaled game, scaled as told
    ctx, requests = await play("pd_canonical", rounds=1, condition="goal_win")
    system, _ = texts(source, ctx, requests[0])
    assert system.startswith("STAND-IN GOAL") and f"* {b} vs {a} -> me 5, them 0" in system


async def test_a_re_ask_sends_the_codes_messages_again(source: Any) -> None:
    ctx, requests = await play("ultimatum", rounds=1)
    for r in requests:
        sent = source.messages(ctx, r)
        assert source.retry_messages(ctx, r, sent, "no idea", "no <answer> tag") == sent


# ------------------------------------------------------------------ errors


def _copy(tmp_path: Path) -> Path:
    return shutil.copytree(STAND_IN, tmp_path / "clone")


def test_a_missing_path_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        SOURCE.load(tmp_path / "nowhere")
    assert "environments/engine.py is missing" in str(err.value)
    assert "sources.strategic_personalities" in str(err.value)


def test_a_removed_function_names_the_file_and_the_function(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    engine = root / "environments" / "engine.py"
    engine.write_text(engine.read_text().replace("def build_prompt(", "def build_prompts("))
    with pytest.raises(SourceError) as err:
        SOURCE.load(root)
    assert f"{engine} has no GameEngine.build_prompt" in str(err.value)


def test_a_changed_signature_names_both_signatures(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    engine = root / "environments" / "engine.py"
    engine.write_text(engine.read_text().replace(
        "def build_prompt(self, player_id: int, round_num: int,",
        "def build_prompt(self, round_num: int, player_id: int,"))
    with pytest.raises(SourceError) as err:
        SOURCE.load(root)
    assert "build_prompt takes (round_num, player_id" in str(err.value)
    assert "expects (player_id, round_num, history, framing, game_state)" in str(err.value)


def test_a_missing_game_list_names_its_file(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "environments" / "games" / "risk.py").unlink()
    with pytest.raises(SourceError, match=r"games/risk\.py is missing"):
        SOURCE.load(root)


async def test_a_game_the_clone_lacks_is_an_error_naming_it(source: Any) -> None:
    ctx, requests = await play("pd_harsh", rounds=1)  # not in the stand-in
    with pytest.raises(SourceError, match="has no game 'pd_harsh'"):
        source.messages(ctx, requests[0])
