"""Strategies as expected transcripts (Axelrod-library style), and the agent that seats them.

Each transcript lists the rounds as two letters, the first strategy's move then the
second's: "CC CD DC" means both cooperated, then the second defected, then the first did.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from coop_tui.agents.strategies import Strategy, StrategyError, get_strategy, strategy_names
from coop_tui.agents.strategy_agent import StrategyAgent, percentages
from coop_tui.decisions import DecisionRequest, Move, SeatView
from coop_tui.games import get_game
from coop_tui.games.base import Game
from coop_tui.mechanisms.mediation import mediated_game
from coop_tui.parsing import parse_answer

# ---------------------------------------------------------------------- play helper
Spec = str | tuple[str, dict[str, Any]] | Strategy


def _make(spec: Spec) -> Strategy:
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, tuple):
        return get_strategy(spec[0], **spec[1])
    return get_strategy(spec)


def play(
    s1: Spec, s2: Spec, rounds: int, game: str = "prisoners", *,
    total_rounds: int | None = None, seed: int = 0,
) -> list[tuple[str, str]]:
    """Play two strategies directly against each other; moves as ("C"|"D", "C"|"D")."""
    g = get_game(game)
    players = [_make(s1), _make(s2)]
    histories: list[list[Move]] = [[], []]
    rng = np.random.default_rng(seed)
    out = []
    for t in range(1, rounds + 1):
        actions = []
        for seat, strategy in enumerate(players):
            view = SeatView(game=g, seat=seat, round=t, history=tuple(histories[seat]),
                            total_rounds=total_rounds)
            dist = strategy.distribution(view)
            assert len(dist) == g.action_counts[seat] and abs(sum(dist) - 1) < 1e-9
            if not strategy.classifier["stochastic"]:
                assert sorted(dist)[-1] == 1.0, f"{strategy.name} is deterministic: {dist}"
            actions.append(int(rng.choice(len(dist), p=dist)))
        payoffs = g.payoff(actions)
        for seat in (0, 1):
            histories[seat].append(
                Move(t, actions[seat], (actions[1 - seat],), payoffs[seat], (payoffs[1 - seat],))
            )
        out.append(tuple("C" if g.is_cooperative(s, a) else "D" for s, a in enumerate(actions)))
    return out  # type: ignore[return-value]


def moves(s1: Spec, s2: Spec, rounds: int, **kwargs: Any) -> str:
    return " ".join(a + b for a, b in play(s1, s2, rounds, **kwargs))


# ---------------------------------------------------------------------- transcripts
@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("tit_for_tat", "alternator", "CC CD DC CD DC CD"),
        ("tit_for_tat", "always_defect", "CD DD DD DD"),
        ("tit_for_tat", "always_cooperate", "CC CC CC CC"),
        ("suspicious_tit_for_tat", "tit_for_tat", "DC CD DC CD DC"),
        ("suspicious_tit_for_tat", "suspicious_tit_for_tat", "DD DD DD"),
        ("tit_for_two_tats", "always_defect", "CD CD DD DD"),
        ("tit_for_two_tats", "alternator", "CC CD CC CD CC CD"),
        ("two_tits_for_tat", "alternator", "CC CD DC DD DC DD"),
        ("grim_trigger", "alternator", "CC CD DC DD DC DD"),
        ("grim_trigger", ("cycle", {"actions": [0, 1, 0, 0, 0, 0]}), "CC CD DC DC DC DC"),
        (("forgiving_grim", {"punish": 2}), ("cycle", {"actions": [0, 1, 0, 0, 0, 0]}),
         "CC CD DC DC CC CC"),
        ("win_stay_lose_shift", "always_defect", "CD DD CD DD CD"),
        ("win_stay_lose_shift", "tit_for_tat", "CC CC CC"),
        ("win_stay_lose_shift", "alternator", "CC CD DC DD CC CD"),
        ("win_stay_lose_shift", "suspicious_tit_for_tat", "CD DC DD CD DC DD"),
        ("alternator", "always_cooperate", "CC DC CC DC CC"),
        ("reverse_tit_for_tat", "always_cooperate", "DC DC DC"),
        ("reverse_tit_for_tat", "always_defect", "DD CD CD"),
        ("gradual", "always_defect", "CD DD CD CD DD DD DD DD CD CD DD"),
        ("gradual", "tit_for_tat", "CC CC CC CC"),
        ("soft_majority", "alternator", "CC CD CC CD CC"),
        ("hard_majority", "alternator", "DC CD DC CD DC"),
        ("prober", "always_cooperate", "DC CC CC DC DC"),
        ("prober", "tit_for_tat", "DC CD CC CC CC"),
        (("mirror", {"opening": "cooperate"}), "alternator", "CC CD DC CD DC CD"),
        (("anti_mirror", {"opening": "cooperate"}), "always_cooperate", "CC DC DC"),
        (("anti_mirror", {"opening": "cooperate"}), "always_defect", "CD CD CD"),
        (("cycle", {"actions": [0, 0, 1]}), "always_cooperate", "CC CC DC CC CC DC"),
        (("always_action", {"action": 1}), "tit_for_tat", "DC DD DD"),
        (("random", {"p": 1}), "always_defect", "CD CD CD"),
        (("random", {"p": 0}), "always_cooperate", "DC DC DC"),
        (("mixed", {"probs": [0, 1]}), "tit_for_tat", "DC DD DD"),
    ],
)
def test_transcript(first: Spec, second: Spec, expected: str) -> None:
    assert moves(first, second, len(expected.split())) == expected


def test_endgame_tit_for_tat_defects_when_punishment_is_impossible() -> None:
    assert moves("endgame_tit_for_tat", "tit_for_tat", 4, total_rounds=4) == "CC CC CC DC"
    assert moves(("endgame_tit_for_tat", {"last": 2}), "tit_for_tat", 4, total_rounds=4) == (
        "CC CC DC DD"
    )
    # Without a known length it cannot count down: plain tit for tat.
    assert moves("endgame_tit_for_tat", "tit_for_tat", 4) == "CC CC CC CC"


# ---------------------------------------------------------------------- stochastic
def _view(game: Game, history: list[tuple[int, int]], seat: int = 0, **kw: Any) -> SeatView:
    moves_ = tuple(
        Move(t, own, (other,), game.payoff((own, other))[0])
        for t, (own, other) in enumerate(history, start=1)
    )
    return SeatView(game=game, seat=seat, round=len(history) + 1, history=moves_, **kw)


def test_stochastic_strategies_return_their_mixture() -> None:
    g = get_game("prisoners")
    assert get_strategy("random").distribution(_view(g, [])) == [0.5, 0.5]
    assert get_strategy("random", p=0.8).distribution(_view(g, [])) == pytest.approx([0.8, 0.2])
    gtft = get_strategy("generous_tit_for_tat")
    assert gtft.distribution(_view(g, [(0, 0)])) == [1.0, 0.0]
    assert gtft.distribution(_view(g, [(0, 1)])) == pytest.approx([0.1, 0.9])
    assert get_strategy("generous_tit_for_tat", q=0.3).distribution(
        _view(g, [(0, 1)])
    ) == pytest.approx([0.3, 0.7])
    assert get_strategy("mixed", probs=[0.25, 0.75]).distribution(_view(g, [])) == [0.25, 0.75]
    assert get_strategy("mixed").distribution(_view(g, [])) == [0.5, 0.5]


def test_stochastic_play_is_reproducible_with_a_seed() -> None:
    a = moves("random", "generous_tit_for_tat", 30, seed=7)
    assert a == moves("random", "generous_tit_for_tat", 30, seed=7)
    assert "C" in a.replace(" ", "")[::2] and "D" in a.replace(" ", "")[::2]


def test_strategies_are_stateless_functions_of_the_history() -> None:
    g = get_game("prisoners")
    history = [(0, 1), (1, 1), (0, 0), (0, 1), (1, 0)]
    for name in strategy_names():
        s = get_strategy(name)
        first = s.distribution(_view(g, history))
        s.distribution(_view(g, []))  # an unrelated call in between changes nothing
        assert s.distribution(_view(g, history)) == first, name


# ---------------------------------------------------------------------- other games
def test_n_player_opponent_cooperated_means_every_co_player() -> None:
    g = get_game("public_good")
    tft, grim = get_strategy("tit_for_tat"), get_strategy("grim_trigger")

    def view(history: list[tuple[int, int, int]]) -> SeatView:
        ms = tuple(Move(t, h[0], h[1:], 0.0) for t, h in enumerate(history, start=1))
        return SeatView(game=g, seat=0, round=len(history) + 1, history=ms)

    assert tft.distribution(view([(0, 0, 0)])) == [1.0, 0.0]
    assert tft.distribution(view([(0, 0, 1)])) == [0.0, 1.0]  # one free rider is enough
    assert tft.distribution(view([(0, 1, 1), (1, 0, 0)])) == [1.0, 0.0]
    assert grim.distribution(view([(0, 1, 0), (0, 0, 0)])) == [0.0, 1.0]


def test_games_without_cooperation_get_a_clear_error_or_index_strategies() -> None:
    g = get_game("matching_pennies")
    with pytest.raises(StrategyError, match="no cooperative and defect action.*always_action"):
        get_strategy("tit_for_tat").check(_view(g, []))
    with pytest.raises(StrategyError, match="matching_pennies"):
        get_strategy("tit_for_tat").distribution(_view(g, [(0, 1)]))
    mirror = get_strategy("mirror")
    assert mirror.distribution(_view(g, [])) == [0.5, 0.5]  # the strategic personalities paper's random opening
    assert get_strategy("mirror", opening="cooperate").distribution(_view(g, [])) == [1.0, 0.0]
    assert mirror.distribution(_view(g, [(0, 1)])) == [0.0, 1.0]
    assert get_strategy("anti_mirror").distribution(_view(g, [(0, 1)])) == [1.0, 0.0]
    assert get_strategy("always_action", action=1).distribution(_view(g, [])) == [0.0, 1.0]
    with pytest.raises(StrategyError, match="action 2.*only has actions 0..1"):
        get_strategy("always_action", action=2).distribution(_view(g, []))


# ---------------------------------------------------------------------- registry
def test_registry_lists_documented_classified_strategies() -> None:
    names = strategy_names()
    assert names == sorted(names)
    required = {
        "always_cooperate", "always_defect", "tit_for_tat", "suspicious_tit_for_tat",
        "tit_for_two_tats", "grim_trigger", "win_stay_lose_shift", "alternator", "random",
        "mixed",
    }
    assert required <= set(names)
    for name in names:
        s = get_strategy(name)
        assert s.name == name
        assert type(s).__doc__ and s.summary(), name
        assert set(s.classifier) >= {"memory_depth", "stochastic"}, name
        json.dumps(s.params)  # stored in the agent spec


def test_unknown_strategy_suggests_and_lists_names() -> None:
    with pytest.raises(StrategyError) as err:
        get_strategy("tit_for_tatt")
    text = str(err.value)
    assert "unknown strategy 'tit_for_tatt'" in text
    assert "did you mean 'tit_for_tat'" in text
    assert "grim_trigger" in text and "win_stay_lose_shift" in text
    assert isinstance(err.value, ValueError)
    with pytest.raises(StrategyError, match="known: accept_all, accept_fair"):
        get_strategy("zzzz")
    assert get_strategy("Tit-For-Tat").name == "tit_for_tat"


@pytest.mark.parametrize(
    ("name", "params", "error", "message"),
    [
        ("random", {"p": 1.5}, ValueError, "p = 1.5 is outside [0, 1]; give a probability"),
        ("random", {"p": "half"}, TypeError, "p must be a number"),
        ("random", {"q": 0.2}, TypeError, "no parameter 'q'; it takes p (default 0.5)"),
        ("tit_for_tat", {"p": 0.2}, TypeError, "it takes no parameters"),
        ("generous_tit_for_tat", {"q": -0.1}, ValueError, "q = -0.1 is outside [0, 1]"),
        ("mixed", {"probs": [0.5, 0.6]}, ValueError, "probs sums to 1.1, not 1"),
        ("mixed", {"probs": [1.5, -0.5]}, ValueError, "probs[1] = -0.5 is negative"),
        ("mixed", {"probs": "0.5,0.5"}, TypeError, "list of probabilities"),
        ("forgiving_grim", {"punish": 0}, ValueError, "punish = 0 must be at least 1"),
        ("cycle", {"actions": []}, TypeError, "non-empty list"),
        ("always_action", {"action": 0.5}, TypeError, "action must be a whole number"),
    ],
)
def test_bad_parameters_are_explained(
    name: str, params: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        get_strategy(name, **params)


def test_mixed_checks_its_length_against_the_game() -> None:
    g = get_game("prisoners")
    with pytest.raises(StrategyError, match="probs has 3 entries but player 1 .* has 2 actions"):
        get_strategy("mixed", probs=[0.2, 0.3, 0.5]).distribution(_view(g, []))


# ---------------------------------------------------------------------- the agent
class RecordingSink:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasonings: list[str] = []

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def reasoning(self, delta: str) -> None:
        self.reasonings.append(delta)


def _request(
    game: Game, *, kind: str = "mixed", history: list[tuple[int, int]] | None = None,
    labels: tuple[str, ...] | None = None, label_to_action: tuple[int, ...] | None = None,
    options: dict[str, Any] | None = None, phase: str = "play",
    extra: dict[str, Any] | None = None,
) -> DecisionRequest:
    n = game.action_counts[0]
    labels = labels if labels is not None else tuple(f"A{i}" for i in range(n))
    return DecisionRequest(
        seat=0, round=len(history or []) + 1, phase=phase, kind=kind,  # type: ignore[arg-type]
        messages=({"role": "user", "content": "prompt"},),
        view=_view(game, history or [], extra=extra or {}),
        labels=labels,
        label_to_action=label_to_action if label_to_action is not None else tuple(range(n)),
        options=options or {},
    )


async def _answer(strategy: Strategy, request: DecisionRequest) -> Any:
    agent = StrategyAgent("bot", strategy)
    sink = RecordingSink()
    reply = await agent.reply(request, [dict(m) for m in request.messages], sink)
    assert sink.texts == [reply.text] and not sink.reasonings
    assert (reply.input_tokens, reply.output_tokens, reply.cost_usd) == (0, 0, 0.0)
    assert reply.latency_ms >= 0
    # The project's parser reads it cleanly, without any repair.
    parsed, note = parse_answer(
        request.kind, reply.text, labels=request.labels, options=request.options
    )
    assert note is None, note
    if request.kind == "mixed":
        shown = json.loads(reply.text)
        assert list(shown) == list(request.labels) and sum(shown.values()) == 100
        assert parsed.probabilities == pytest.approx([shown[k] / 100 for k in request.labels])
        return shown
    if request.kind in ("score", "text"):
        assert parsed == (int(reply.text.split(":")[1]) if request.kind == "score" else reply.text)
        return reply.text
    if request.kind == "mediator":
        assert parsed == {int(k): v for k, v in json.loads(reply.text).items()}
    elif request.kind == "sign":
        assert parsed is True
    else:
        assert parsed == json.loads(reply.text)
    return json.loads(reply.text)


def test_agent_describes_itself() -> None:
    agent = StrategyAgent("gen", get_strategy("generous_tit_for_tat", q=0.25))
    assert (agent.name, agent.kind, agent.style) == ("gen", "strategy", "direct")
    assert agent.spec == {"strategy": "generous_tit_for_tat", "params": {"q": 0.25}}


async def test_mixed_answer_uses_the_shown_labels() -> None:
    g = get_game("prisoners")
    tft = get_strategy("tit_for_tat")
    # After a defection TFT defects (game action 1); label A0 stands for action 1 here.
    assert await _answer(tft, _request(g, history=[(0, 1)], label_to_action=(1, 0))) == {
        "A0": 100, "A1": 0,
    }
    assert await _answer(tft, _request(g, history=[(0, 1)])) == {"A0": 0, "A1": 100}
    mix = get_strategy("mixed", probs=[0.3, 0.7])
    assert await _answer(mix, _request(g, labels=("X", "Y"), label_to_action=(1, 0))) == {
        "X": 70, "Y": 30,
    }


async def test_mixed_answer_percentages_sum_to_exactly_100() -> None:
    g = Game(
        key="three", title="three", description="",
        action_names=(("a", "b", "c"),) * 2, payoffs=np.zeros((3, 3, 2)),
        cooperative=(frozenset(), frozenset()), defect=(None, None),
    )
    third = get_strategy("mixed", probs=[1 / 3, 1 / 3, 1 / 3])
    answer = await _answer(third, _request(g, label_to_action=(2, 0, 1)))
    assert answer == {"A0": 33, "A1": 34, "A2": 33}  # the leftover point goes to action 0
    assert percentages([0.125] * 8) == [13, 13, 13, 13, 12, 12, 12, 12]
    assert percentages([0.005, 0.995]) == [1, 99]
    assert percentages([0.29, 0.71]) == [29, 71]
    assert sum(percentages([0.1] * 7 + [0.3])) == 100


async def test_extra_mechanism_action_gets_zero() -> None:
    g = mediated_game(get_game("prisoners"), {0: 0, 1: 0, 2: 0})  # action 2 is "Delegate"
    tft = get_strategy("tit_for_tat")
    assert await _answer(tft, _request(g, history=[(0, 0)], label_to_action=(2, 0, 1))) == {
        "A0": 0, "A1": 100, "A2": 0,
    }
    mix = get_strategy("mixed", probs=[0.4, 0.6])  # knows the two base actions only
    assert await _answer(mix, _request(g)) == {"A0": 40, "A1": 60, "A2": 0}
    assert await _answer(get_strategy("mixed"), _request(g)) == {"A0": 50, "A1": 50, "A2": 0}
    # The mechanism's own marker works whatever the extra action is called.
    assert await _answer(
        get_strategy("mixed"), _request(get_game("travelers"), extra={"delegate_action": 3})
    ) == {"A0": 34, "A1": 33, "A2": 33, "A3": 0}
    with pytest.raises(StrategyError, match="has 2 actions"):
        get_strategy("mixed", probs=[0.2, 0.3, 0.5]).distribution(_view(g, []))


async def test_non_play_answers_follow_the_documented_defaults() -> None:
    g = get_game("prisoners")
    grim = get_strategy("grim_trigger")
    assert await _answer(grim, _request(g, kind="approvals", labels=("M1", "M2", "M3"))) == {
        "M1": True, "M2": True, "M3": True,
    }
    assert await _answer(grim, _request(g, kind="sign", labels=())) == {"sign": True}
    assert await _answer(grim, _request(g, kind="score", labels=())) == "SIMILARITY SCORE: 50"
    assert await _answer(
        grim, _request(g, kind="score", labels=(), options={"min": 60, "max": 90})
    ) == "SIMILARITY SCORE: 60"
    assert await _answer(grim, _request(g, kind="mediator", options={"n_players": 2})) == {
        "1": "A0", "2": "A0",
    }
    # The cooperative action under shuffled labels, for every number of delegators.
    assert await _answer(
        grim, _request(g, kind="mediator", label_to_action=(1, 0), options={"n_players": 3})
    ) == {"1": "A1", "2": "A1", "3": "A1"}
    assert await _answer(grim, _request(g, kind="contract")) == {"A0": 0, "A1": 0}
    text = await _answer(grim, _request(g, kind="text", labels=(), phase="plan"))
    assert text.startswith("I play the fixed strategy grim_trigger: it cooperates until")
    assert text.count(".") == 1 and text.endswith(".")
    gtft = get_strategy("generous_tit_for_tat", q=0.25)
    assert (await _answer(gtft, _request(g, kind="text", labels=()))).startswith(
        "I play the fixed strategy generous_tit_for_tat (q = 0.25): it plays tit for tat"
    )


async def test_mediator_without_cooperative_action_proposes_the_strategys_move() -> None:
    g = get_game("matching_pennies")
    always_tails = get_strategy("always_action", action=1)
    assert await _answer(always_tails, _request(
        g, kind="mediator", options={"n_players": 2}
    )) == {"1": "A1", "2": "A1"}


async def test_strategy_errors_surface_from_the_agent() -> None:
    g = get_game("matching_pennies")
    with pytest.raises(StrategyError, match="strategy 'tit_for_tat' plays cooperate/defect"):
        await _answer(get_strategy("tit_for_tat"), _request(g))
