"""The strategic personalities paper's numeric and sequential games: payoff rules and whole matches.

Payoff rules are checked on hand-picked cases worked out from the public code's payoff
functions (FelipeMAffonso/strategic-personalities, ``environments/games``). Every game is
then played through the real sweep runner, engine and SQLite store, by the numeric
strategies or by an LLM agent talking HTTP to the loopback server and answering from a
script keyed on its prompt, in the shapes real models write (JSON, ``<answer>`` tags,
prose); the stored payoffs must follow the rule from the stored moves.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coop_tui.games import game_keys, load_game
from coop_tui.games.auctions import all_pay_payoffs, first_price_payoffs, vickrey_payoffs
from coop_tui.games.bargaining import alternating_payoffs, multi_issue_payoffs, nash_demand_payoffs
from coop_tui.games.blotto import blotto_payoffs
from coop_tui.games.centipede import centipede_end, centipede_schedule
from coop_tui.games.commons import commons_payoffs
from coop_tui.games.contributions import contribution_payoffs
from coop_tui.games.eleven_twenty import eleven_twenty_payoffs
from coop_tui.games.fairness import dictator_payoffs, punishment_payoffs, ultimatum_payoffs
from coop_tui.games.guessing import beauty_contest_payoffs
from coop_tui.games.investment import gift_exchange_payoffs, trust_payoffs
from coop_tui.games.kinds import ProtocolGame
from coop_tui.games.signalling import cheap_talk_payoffs, signaling_payoffs
from coop_tui.session import prompt_text
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

SEED003_NUMERIC = [
    "pg_low_mpcr", "pg_med_mpcr", "pg_high_mpcr", "commons_dilemma", "ultimatum", "dictator",
    "third_party_punishment", "trust_berg", "gift_exchange", "beauty_contest_23",
    "beauty_contest_12", "centipede_6", "centipede_10", "auction_first_price",
    "auction_vickrey", "auction_all_pay", "colonel_blotto", "nash_demand",
    "alternating_offers", "multi_issue", "signaling", "cheap_talk", "eleven_twenty",
]


# ----------------------------------------------------------------- payoff rules
def test_payoff_rules_on_hand_picked_cases() -> None:
    # public goods: (10 - c) + mpcr * total; 0.5 with contributions 10, 0, 4, 6 (total 20)
    assert contribution_payoffs([10, 0, 4, 6], 10, 0.5) == (10, 20, 16, 14)
    assert contribution_payoffs([10, 10, 10, 10], 10, 0.3) == pytest.approx((12,) * 4)
    # commons: x * (1 - total/40); total 20 -> quality 0.5; total >= 40 -> 0
    assert commons_payoffs([10, 5, 5, 0], 40) == (5, 2.5, 2.5, 0)
    assert commons_payoffs([10, 10, 10, 10], 40) == (0, 0, 0, 0)
    # ultimatum / dictator / third-party punishment (endowment 100, observer 50, x3)
    assert ultimatum_payoffs(40, True) == (60, 40) and ultimatum_payoffs(40, False) == (0, 0)
    assert dictator_payoffs(25) == (75, 25)
    assert punishment_payoffs(10, 20) == (30, 10, 30)
    assert punishment_payoffs(0, 50) == (0, 0, 0)  # allocator floored at 0
    # trust: (10 - s + r, 3s - r); gift exchange: (10e - w, w - e^2)
    assert trust_payoffs(5, 8) == (13, 7) and trust_payoffs(10, 0) == (0, 30)
    assert gift_exchange_payoffs(30, 4) == (10, 14)
    # beauty contest p = 2/3: guesses 30 and 60 -> target 30 -> first wins 10; a tie splits
    assert beauty_contest_payoffs([30, 60], 2 / 3) == (10, 0)
    assert beauty_contest_payoffs([40, 40], 2 / 3) == (5, 5)
    assert beauty_contest_payoffs([0, 100], 1 / 2) == (10, 0)  # target 25: 0 is 25 away, 100 is 75
    # centipede schedules exactly as the code's tables
    assert centipede_schedule(6)[1:] == [(4, 1), (2, 8), (16, 4), (8, 32), (64, 16), (32, 64)]
    ten = centipede_schedule(10)
    assert ten[6] == (32, 128) and ten[9] == (1024, 256) and ten[10] == (512, 1024)
    # plans: P1 takes at 5, P2 at 4 -> ends at node 4 (P2's); nobody takes -> last node
    assert centipede_end((5, 4), 6) == 4 and centipede_end((7, 7), 6) == 6
    assert centipede_end((1, 7), 6) == 1 and centipede_end((3, 2), 6) == 2
    # auctions: first price winner pays own bid; Vickrey pays the other bid (tie: Player 1)
    assert first_price_payoffs([30, 20], [50, 70], winner=0) == (20, 0)
    assert vickrey_payoffs([30, 45], [50, 70]) == (0, 40)
    assert vickrey_payoffs([40, 40], [50, 70]) == (10, 0)
    assert all_pay_payoffs([30, 20], 50, winner=0) == (20, -20)
    # Blotto: fields won 2-1 -> 10 to the winner; (34,33,33) vs (33,34,33): 1.5 each -> split
    assert blotto_payoffs([[50, 50, 0], [30, 30, 40]]) == (10, 0)
    assert blotto_payoffs([[34, 33, 33], [33, 34, 33]]) == (5, 5)
    # bargaining
    assert nash_demand_payoffs([60, 40]) == (60, 40) and nash_demand_payoffs([60, 41]) == (0, 0)
    assert alternating_payoffs(60, True, 3) == pytest.approx((60 * 0.81, 40 * 0.81))
    assert alternating_payoffs(60, False, 1) == (0, 0)
    assert multi_issue_payoffs((80, 20), (20, 80)) == (2.6, 2.6)
    assert multi_issue_payoffs((50, 50), (50, 50)) == (2, 2)
    assert multi_issue_payoffs((100, 0), (1, 100)) == (0, 0)
    # signalling: cost 3 (high) / 12 (low); accept high -> 10 each; reject -> 3 for receiver
    assert signaling_payoffs(True, True, True) == (7, 10)
    assert signaling_payoffs(False, True, True) == (-2, -5)
    assert signaling_payoffs(False, False, False) == (0, 3)
    assert cheap_talk_payoffs(3, 4) == (0, -1) and cheap_talk_payoffs(2, 2) == (-1, 0)
    # 11-20: the request, +20 for exactly one below the other
    assert eleven_twenty_payoffs([19, 20]) == (39, 20) and eleven_twenty_payoffs([17, 17]) == (17, 17)


def test_every_seed003_numeric_game_is_registered_as_a_protocol_game() -> None:
    keys = set(game_keys())
    assert set(SEED003_NUMERIC) <= keys
    for key in SEED003_NUMERIC:
        game = load_game(key)
        assert isinstance(game, ProtocolGame) and game.rounds >= 1
        assert not game.symmetric and not game.has_cooperation  # no matrix theory for them
        with pytest.raises(TypeError, match="played move by move"):
            game.payoff((0,) * game.n_players)
        assert game.params["rounds"] == game.rounds
    assert load_game("pg_low_mpcr").n_players == 4 and load_game("third_party_punishment").n_players == 3
    assert load_game("auction_vickrey").rounds == 15 and load_game("centipede_6").rounds == 5


# ----------------------------------------------------------------- whole matches
def sweep(tmp_path: Any, game: str, matchup: list[str], agents: dict[str, Any],
          params: dict[str, Any] | None = None, **extra: Any) -> tuple[Store, dict[str, Any]]:
    data = {"name": "seed003", "seed": 11, "agents": agents, "experiments": [
        {"game": game, "game_params": {"rounds": 1, **(params or {})}, "mechanism": "none",
         "matchup": [matchup], **extra}]}
    return data, tmp_path / "s.db"  # type: ignore[return-value]


async def play(tmp_path: Any, game: str, matchup: list[str], agents: dict[str, Any],
               params: dict[str, Any] | None = None, **extra: Any):
    data, path = sweep(tmp_path, game, matchup, agents, params, **extra)
    store = Store(path)
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    [match] = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    rounds: dict[int, dict[str, Any]] = {}
    for row in store.rounds(match["id"]):
        rounds.setdefault(row["round"], json.loads(row["info"] or "{}"))
    payoffs = [s["payoff"] for s in store.seats(match["id"])]
    return store, match, rounds, payoffs


def strat(name: str, **params: Any) -> dict[str, Any]:
    return {"strategy": name, "params": params} if params else {"strategy": name}


STRATEGY_CASES = [
    # game, params, agents (seat order), expected payoffs of the one round
    ("pg_med_mpcr", {}, [strat("fixed_number", value=10), strat("fixed_number", value=0),
                         strat("fixed_number", value=4), strat("fixed_number", value=6)],
     [10, 20, 16, 14]),
    ("pg_low_mpcr", {}, [strat("fixed_number", value=10)] * 4, [12, 12, 12, 12]),
    ("pg_high_mpcr", {}, [strat("fixed_number", value=0)] * 3 + [strat("fixed_number", value=10)],
     [18, 18, 18, 8]),
    ("commons_dilemma", {}, [strat("fixed_number", value=10), strat("fixed_number", value=5),
                             strat("fixed_number", value=5), strat("fixed_number", value=0)],
     [5, 2.5, 2.5, 0]),
    ("ultimatum", {}, [strat("fixed_number", value=40), strat("threshold_responder", threshold=30)],
     [60, 40]),
    ("ultimatum", {}, [strat("fixed_number", value=20), strat("threshold_responder", threshold=30)],
     [0, 0]),
    ("dictator", {}, [strat("fixed_number", value=25), strat("fixed_number")], [75, 25]),
    ("third_party_punishment", {}, [strat("fixed_number", value=10), strat("fixed_number"),
                                    strat("fixed_number", value=20)], [30, 10, 30]),
    ("trust_berg", {}, [strat("trust_proportional"), strat("trust_proportional")], [12, 8]),
    ("gift_exchange", {}, [strat("fixed_number", value=30), strat("fixed_number", value=4)],
     [10, 14]),
    ("beauty_contest_23", {}, [strat("fixed_number", value=30), strat("fixed_number", value=60)],
     [10, 0]),
    ("beauty_contest_12", {}, [strat("fixed_number", value=40), strat("fixed_number", value=40)],
     [5, 5]),
    ("centipede_6", {}, [strat("fixed_number", value=5), strat("fixed_number", value=4)], [8, 32]),
    ("centipede_10", {}, [strat("fixed_number", value=11), strat("fixed_number", value=11)],
     [512, 1024]),
    ("nash_demand", {}, [strat("fixed_number", value=60), strat("fixed_number", value=40)], [60, 40]),
    ("nash_demand", {}, [strat("fixed_number", value=60), strat("fixed_number", value=41)], [0, 0]),
    ("alternating_offers", {"rounds": 2}, [strat("fixed_number", value=60),
                                           strat("threshold_responder", threshold=40)],
     [60 + 54, 40 + 36]),
    ("colonel_blotto", {}, [strat("fixed_number"), strat("fixed_number")], [5, 5]),
    ("multi_issue", {}, [strat("fixed_number"), strat("fixed_number")], [2, 2]),
    ("eleven_twenty", {}, [strat("fixed_number", value=18), strat("fixed_number", value=19)],
     [38, 19]),
    ("auction_all_pay", {}, [strat("truthful_bidder", default=30),
                             strat("truthful_bidder", default=20)], [20, -20]),
]


@pytest.mark.parametrize(("game", "params", "seats", "expected"), STRATEGY_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(STRATEGY_CASES)])
async def test_strategies_play_the_game_through_the_store(
    tmp_path: Any, game: str, params: dict[str, Any], seats: list[dict[str, Any]],
    expected: list[float],
) -> None:
    agents = {f"s{i}": spec for i, spec in enumerate(seats)}
    store, match, rounds, payoffs = await play(tmp_path, game, list(agents), agents, params)
    assert payoffs == pytest.approx(expected)
    decisions = store.decisions(match["id"])
    assert decisions and all(d.valid for d in decisions)
    assert all(d.phase != "play" for d in decisions)  # every move names its phase
    assert rounds[1]["moves"]


@pytest.mark.parametrize("rule", ["as_run", "intended", None])
async def test_signaling_is_played_as_run_by_default_and_as_described_on_request(
        tmp_path: Any, rule: str | None) -> None:
    """The strategic personalities paper's code matched "signal" inside "no_signal": the sender paid its signal cost
    every round and the receiver was always told a signal was sent (its data: against
    never_signal no total is above -105). That is the default; ``rule = "intended"`` plays
    the described rules. A receiver that accepts exactly the signalled senders shows it."""
    agents = {"never": strat("never_signal"), "receiver": strat("bayesian_receiver", as_run=False)}
    params = {"rounds": 6} | ({"rule": rule} if rule else {})
    store, match, rounds, payoffs = await play(tmp_path, "signaling", list(agents), agents, params)
    as_run = rule != "intended"
    expected = [0.0, 0.0]
    for r in range(1, 7):
        mv = rounds[r]["moves"]
        high = mv["type"] == "high"
        assert mv["signalled"] is False and mv["shown_signal"] is as_run
        assert mv["accepted"] is as_run
        expected[0] += (10 - (3 if high else 12)) if as_run else 0
        expected[1] += (10 if high else -5) if as_run else 3
    assert payoffs == pytest.approx(expected)
    told = [d for d in store.decisions(match["id"]) if d.phase == "respond"]
    assert len(told) == 6
    seen = "sent the signal" if as_run else "did not send the signal"
    assert all(seen in json.dumps(d.prompt) for d in told)


@pytest.mark.parametrize("hint", [None, False])
async def test_centipede_names_the_equilibrium_move_as_the_code_did(
        tmp_path: Any, hint: bool | None) -> None:
    """The strategic personalities paper's centipede prompt tells the players the equilibrium is to take at node 1;
    so does ours by default (in our words), and ``hint = false`` leaves it out."""
    agents = {"a": strat("fixed_number", value=3), "b": strat("fixed_number", value=7)}
    params = {} if hint is None else {"hint": hint}
    store, match, rounds, payoffs = await play(tmp_path, "centipede_6", list(agents), agents,
                                               params)
    asked = [json.dumps(d.prompt) for d in store.decisions(match["id"])]
    assert len(asked) == 2
    assert all(("takes at node 1" in a) is (hint is None) for a in asked)
    assert rounds[1]["moves"]["end_node"] == 3  # the hint changes what is said, not the game


async def test_auctions_draw_private_values_and_pay_by_the_rule(tmp_path: Any) -> None:
    agents = {"a": strat("truthful_bidder"), "b": strat("fixed_number", value=45)}
    for game, rule in (("auction_vickrey", "second"), ("auction_first_price", "first")):
        store, match, rounds, payoffs = await play(tmp_path / game, game, ["a", "b"], agents,
                                                   {"rounds": 3})
        total = [0.0, 0.0]
        for r in (1, 2, 3):
            moves = rounds[r]["moves"]
            values, bids = moves["values"], moves["bids"]
            assert all(20 <= v <= 80 for v in values) and bids[0] == values[0] and bids[1] == 45
            if rule == "second":
                pay = vickrey_payoffs(bids, values)
            else:
                winner = 0 if bids[0] > bids[1] else 1 if bids[1] > bids[0] else None
                pay = first_price_payoffs(bids, values, winner) if winner is not None else None
                if pay is None:  # a tie is broken by the seeded RNG: one of the two outcomes
                    continue
            total = [t + p for t, p in zip(total, pay, strict=True)]
        if rule == "second":
            assert payoffs == pytest.approx(total)
        prompts = [d for d in store.decisions(match["id"]) if d.seat == 0]
        assert f"value for the item this round is {rounds[1]['moves']['values'][0]:g}" in \
            prompt_text(prompts[0].prompt)
    # the same seed draws the same values again
    _, _, again, _ = await play(tmp_path / "again", "auction_vickrey", ["a", "b"], agents,
                                {"rounds": 3})
    _, _, first, _ = await play(tmp_path / "again2", "auction_vickrey", ["a", "b"], agents,
                                {"rounds": 3})
    assert [again[r]["moves"]["values"] for r in (1, 2, 3)] == \
        [first[r]["moves"]["values"] for r in (1, 2, 3)]


# ----------------------------------------------------------------- scripted model
def pick(text: str, meaning: str) -> str:
    """A choice of the option whose description has ``meaning``, after some reasoning."""
    options = re.findall(r"^- (\w+): (.*)$", text.split("Your options:")[1], re.M)
    label = next(lab for lab, desc in options if meaning in desc)
    return f"Weighing it up, {meaning} is best.\n" + json.dumps({"choice": label})


def scripted_model(body: dict[str, Any]) -> str:
    """Answers every strategic personalities move in a different real-model shape."""
    text = last_user_message(body)
    if "You are the Proposer. How many" in text:
        return "A fair split seems wise.\nI'll offer $45.\n"
    if "The Proposer offers you" in text:
        return "45 is fair, so I accept.\n" + pick(text, "accept")
    if "You are the Investor" in text:
        return "Sending half.\n<answer>6</answer>"
    if "You are the Trustee" in text:
        return 'I return a fair share.\n```json\n{"return": 9}\n```'
    if "You are the Sender. This round you are of" in text:
        return pick(text, "send the signal") if "high quality" in text else pick(text, "no signal")
    if "You are the Receiver. The Sender" in text and "signal" in text:
        return pick(text, "accept") if "sent the signal" in text else pick(text, "reject")
    if "You are the Sender. The state is" in text:
        state = int(re.search(r"The state is (\d)", text).group(1))  # type: ignore[union-attr]
        return f'{{"message": {state}}}'
    if "The Sender's message says" in text:
        msg = re.search(r"message says (\d)", text).group(1)  # type: ignore[union-attr]
        return f"ACTION: {msg}"
    if "soldiers do you send" in text:
        return "Spread them.\n{\"B1\": 40, \"B2\": 35, \"B3\": 25}"
    if "share of issue A" in text:
        return '{"A": 80, "B": 20}' if "issue A at 3" in text else '{"A": 20, "B": 80}'
    if "Which number from 0 to 100" in text:
        return "Level-2 reasoning gives about 22.\n\n**Final answer:** 22"
    if "Proposal" in text and "Do you accept" in text:
        return pick(text, "accept")
    if "Proposal" in text:
        return '{"share": 50}'
    if "The game is at node" in text:
        node = int(re.search(r"at node (\d+)", text).group(1))  # type: ignore[union-attr]
        return pick(text, "take") if node >= 3 else pick(text, "pass")
    return "I am not sure."


@pytest.fixture
def model() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=scripted_model) as server:
        yield server


def llm(server: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "api_base": server.url, "api_key": "sk-test",
            "style": "cot"}


@pytest.mark.parametrize("style", ["plain", "cot"])
async def test_the_plain_style_is_the_codes_baseline_and_cot_its_cot_condition(
        tmp_path: Any, model: LoopbackServer, style: str) -> None:
    """The strategic personalities paper's baseline prompt says nothing about reasoning and asks for the answer at the
    end; its ``cot`` condition adds a step-by-step instruction. ``style = "plain"`` (the
    study file's) and ``style = "cot"`` send exactly that difference, in one call each."""
    agents = {"m": {**llm(model), "style": style}}
    store, match, rounds, payoffs = await play(tmp_path, "ultimatum", ["m", "m"], agents)
    decisions = store.decisions(match["id"])
    assert decisions and all(d.valid for d in decisions)
    for d in decisions:
        text = json.dumps(d.prompt)
        assert ("step by step" in text) is (style == "cot")
        assert "Finish with one JSON object" in text and "nothing else" not in text.lower()


async def test_a_model_plays_ultimatum_trust_and_blotto_from_prose_tags_and_json(
    tmp_path: Any, model: LoopbackServer,
) -> None:
    agents = {"m": llm(model)}
    store, match, rounds, payoffs = await play(tmp_path / "u", "ultimatum", ["m", "m"], agents)
    assert rounds[1]["moves"] == {"offer": 45, "accepted": True} and payoffs == [55, 45]
    offer, respond = store.decisions(match["id"])
    assert (offer.phase, offer.kind, offer.parsed) == ("offer", "number", 45)
    assert respond.kind == "choice" and respond.parsed in respond.labels
    assert respond.distribution is not None and sorted(respond.distribution) == [0.0, 1.0]
    assert offer.normalisation == "read from the last sentence"
    assert respond.phase == "respond" and "offers you 45 of 100 points" in prompt_text(respond.prompt)
    assert "This is round 1 of 1" in prompt_text(offer.prompt)

    store, match, rounds, payoffs = await play(tmp_path / "t", "trust_berg", ["m", "m"], agents)
    assert rounds[1]["moves"] == {"sent": 6, "returned": 9} and payoffs == [13, 9]
    _, ret = store.decisions(match["id"])
    assert "arrived as 18" in prompt_text(ret.prompt) and ret.parsed == 9

    store, match, rounds, payoffs = await play(tmp_path / "b", "colonel_blotto", ["m", "m"], agents)
    assert rounds[1]["moves"]["allocations"] == [[40, 35, 25]] * 2 and payoffs == [5, 5]

    store, match, rounds, payoffs = await play(tmp_path / "c", "beauty_contest_23", ["m", "m"], agents)
    assert rounds[1]["moves"]["guesses"] == [22, 22] and payoffs == [5, 5]

    store, match, rounds, payoffs = await play(tmp_path / "mi", "multi_issue", ["m", "m"], agents)
    assert payoffs == pytest.approx([2.6, 2.6])


async def test_a_model_plays_the_message_games_and_the_turn_by_turn_versions(
    tmp_path: Any, model: LoopbackServer,
) -> None:
    agents = {"m": llm(model)}
    store, match, rounds, payoffs = await play(tmp_path / "s", "signaling", ["m", "m"], agents,
                                               {"rounds": 4, "rule": "intended"})
    total = [0.0, 0.0]
    for r in range(1, 5):
        mv = rounds[r]["moves"]
        assert mv["signalled"] == (mv["type"] == "high") and mv["accepted"] == mv["signalled"]
        pay = signaling_payoffs(mv["type"] == "high", mv["signalled"], mv["accepted"])
        total = [t + p for t, p in zip(total, pay, strict=True)]
    assert payoffs == pytest.approx(total)
    phases = [d.phase for d in store.decisions(match["id"])]
    assert phases == ["signal", "respond"] * 4

    store, match, rounds, payoffs = await play(tmp_path / "ct", "cheap_talk", ["m", "m"], agents,
                                               {"rounds": 3})
    for r in (1, 2, 3):
        mv = rounds[r]["moves"]
        assert mv["message"] == mv["state"] == mv["action"]
    assert payoffs == [-3, 0]  # truthful: the sender misses its bias of 1 every round

    store, match, rounds, payoffs = await play(tmp_path / "cp", "centipede_6_turns", ["m", "m"],
                                               agents)
    assert rounds[1]["moves"]["end_node"] == 3 and payoffs == [16, 4]
    assert [d.phase for d in store.decisions(match["id"])] == ["node1", "node2", "node3"]

    store, match, rounds, payoffs = await play(tmp_path / "ao", "alternating_offers_deadline",
                                               ["m", "m"], agents)
    assert payoffs == [50, 50] and rounds[1]["moves"]["offers"][0]["accepted"] is True


async def test_history_shows_earlier_rounds_and_bad_numbers_are_asked_again(
    tmp_path: Any,
) -> None:
    calls: list[str] = []

    def answer(body: dict[str, Any]) -> str:
        text = last_user_message(body)
        calls.append(text)
        if "could not be used" in text:
            return '{"demand": 50}'
        return "I demand 150 points." if len(calls) % 3 == 1 else '{"demand": 50}'

    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as server:
        agents = {"m": llm(server), "f": strat("fixed_number", value=50)}
        store, match, rounds, payoffs = await play(tmp_path, "nash_demand", ["m", "f"], agents,
                                                   {"rounds": 2})
    assert payoffs == [100, 100]
    first, *_ = [d for d in store.decisions(match["id"]) if d.seat == 0]
    assert first.attempts == 2 and first.retries and "above the maximum 100" in first.retries[0].error
    second = [d for d in store.decisions(match["id"]) if d.seat == 0][1]
    assert "Round 1: you received 50 points." in prompt_text(second.prompt)
    assert "This is round 2 of 2" in prompt_text(second.prompt)


# ----------------------------------------------------------------- sweep errors
@pytest.mark.parametrize(("params", "fragment"), [
    ({"rounds": 0}, "rounds must be at least 1"),
    ({"offer": 3}, "has no parameter 'offer'"),
    ({"scale": 2}, "apply to matrix games"),
])
def test_bad_game_params_name_the_field(params: dict[str, Any], fragment: str) -> None:
    data = {"name": "x", "agents": {"a": strat("fixed_number")}, "experiments": [
        {"game": "ultimatum", "game_params": params, "matchup": [["a", "a"]]}]}
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False)
    assert "game_params" in str(err.value) and fragment in str(err.value)


def test_protocol_games_refuse_other_mechanisms_and_matrix_strategies() -> None:
    data = {"name": "x", "agents": {"a": strat("fixed_number")}, "experiments": [
        {"game": "ultimatum", "mechanism": "repetition", "matchup": [["a", "a"]]}]}
    with pytest.raises(SpecError, match="runs under mechanism 'none' only") as err:
        build_sweep(data, check_keys=False)
    assert err.value.field == "experiments[0].mechanism"
    for name in ("tit_for_tat", "always_action"):
        data = {"name": "x", "agents": {"t": strat(name)}, "experiments": [
            {"game": "ultimatum", "matchup": [["t", "t"]]}]}
        with pytest.raises(SpecError, match="cannot play ultimatum") as err:
            build_sweep(data, check_keys=False)
        assert err.value.field == "agents.t"


# ----------------------------------------------------------------- study files
def test_the_full_study_plays_every_numeric_game_in_every_design() -> None:
    from collections import Counter
    from pathlib import Path

    from coop_tui.spec import load_sweep

    study = Path(__file__).parent.parent / "data" / "studies" / "strategic-personalities.toml"
    sweep = load_sweep(study, check_keys=False)
    cells = [c for c in sweep.cells if c.mechanism == "none"]
    assert {c.game for c in cells} == set(SEED003_NUMERIC)
    # the strategic personalities paper's opponents per game: its fairness / trust / bargaining / signalling sets
    # plus random, mirror and anti_mirror; the other 14 games get those three alone
    per_model = 3 * 6 + 2 * 6 + 3 * 7 + 1 * 6 + 14 * 3
    assert Counter(c.matchup for c in cells) == Counter(
        {"versus": per_model * (9 + 16), "self": 23 * (16 + 9), "pairs": 23 * 120})
    ultimatum = {c.seats[1] for c in cells if c.game == "ultimatum" and c.matchup == "versus"}
    assert ultimatum == {"reject_unfair", "accept_all", "fair_offer", "random", "mirror",
                         "anti_mirror"}
    for c in cells:
        assert c.game_params == {}  # the code's rounds per game
        assert c.mechanism_params == {"rounds_told": "two_by_two"}  # "round t", as the code
        if c.game == "pg_low_mpcr" and c.matchup == "pairs":
            assert c.seats[2:] == ("random", "random")


@pytest.mark.slow
async def test_the_offline_numeric_experiments_run_on_the_embedded_model(tmp_path: Any) -> None:
    from pathlib import Path

    from coop_tui.spec import read_sweep_file

    study = Path(__file__).parent.parent / "data" / "studies" / "strategic-personalities-offline.toml"
    data = read_sweep_file(study)
    data["experiments"] = [e for e in data["experiments"] if e.get("mechanism") == "none"]
    assert len(data["experiments"]) == 2
    for exp in data["experiments"]:  # shrunk: one round, the first game, one opponent
        exp["game_params"] = {"rounds": 1}
        exp["game"] = exp["game"][:1]
        if "opponents" in exp:
            exp["opponents"] = exp["opponents"][:1]
    store = Store(tmp_path / "offline.db")
    summary = await run_sweep(build_sweep(data, source=study), store)
    matches = store.matches(summary.run_id)
    assert [m["game"] for m in matches] == ["ultimatum", "nash_demand"]
    assert all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    local = [d for m in matches for d in store.decisions(m["id"]) if d.agent == "smollm2"]
    assert len(local) == 3 and all(d.valid and d.constrained for d in local)
    assert {d.kind for d in local} == {"number"}
    # as the code: these games say only "round t" (rounds_told = "two_by_two"), in the user
    # message after the rules' system message, and ask for the number in <answer> tags
    assert all([m["role"] for m in d.prompt] == ["system", "user"] for d in local)
    assert all("This is round 1." in d.prompt[1]["content"] for d in local)
    # the code's example number (the ultimatum offer: 40, the Nash demand: 50)
    examples = {m["id"]: "<answer>40</answer>" if m["game"] == "ultimatum" else "<answer>50</answer>"
                for m in matches}
    assert all(examples[d.match_id] in d.prompt[1]["content"] for d in local)
    assert all(re.fullmatch(r"<answer>\d+</answer>", d.answer or "") for d in local)


async def test_a_stored_offer_keeps_its_range_and_a_reask_checks_it(tmp_path: Any) -> None:
    from coop_tui.decisions import AgentReply
    from coop_tui.reask import reask

    agents = {"f": strat("fixed_number", value=40), "r": strat("threshold_responder")}
    store, match, _, _ = await play(tmp_path, "ultimatum", ["f", "r"], agents)
    offer = store.decisions(match["id"])[0]
    assert offer.options == {"name": "offer", "min": 0, "max": 100, "step": 1}

    class Greedy:
        name, kind, style, spec = "greedy", "llm", "direct", {"model": "test/greedy"}

        async def reply(self, request, messages, sink):  # type: ignore[no-untyped-def]
            return AgentReply(text='{"offer": 150}')

    decision_id = store.decision_id(offer.cache_key)
    result = await reask(store, decision_id, agent=Greedy(), max_attempts=1)
    assert not result.decision.valid and "above the maximum 100" in (result.decision.error or "")


async def test_a_stored_response_is_reasked_as_the_same_choice(tmp_path: Any) -> None:
    from coop_tui.decisions import AgentReply
    from coop_tui.reask import reask

    agents = {"f": strat("fixed_number", value=40), "r": strat("threshold_responder")}
    store, match, _, _ = await play(tmp_path, "ultimatum", ["f", "r"], agents)
    respond = store.decisions(match["id"])[1]
    assert respond.options["meanings"] and respond.action == 0  # 40 >= 30: accepted
    reject = respond.labels[respond.label_to_action.index(1)]

    class Refuser:
        name, kind, style, spec = "refuser", "llm", "direct", {"model": "test/refuser"}

        async def reply(self, request, messages, sink):  # type: ignore[no-untyped-def]
            return AgentReply(text=json.dumps({"choice": reject}))

    result = await reask(store, store.decision_id(respond.cache_key), agent=Refuser())
    assert result.decision.valid and result.decision.action == 1
    assert result.decision.distribution == (0.0, 1.0)
