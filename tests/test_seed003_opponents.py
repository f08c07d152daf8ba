"""The strategic personalities paper's opponents as its public code plays them: transcripts, Axelrod parity, aliases,
responders, numeric opponents, and seeded randomness through the real engine and store.

Transcripts read like the Axelrod library's tests: two letters per round, the strategy's
move then the co-player's ("CD DC" = it cooperated while the co-player defected, then
the reverse). C is the first option (the cooperative action), D the second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coop_tui.agents.strategies import (
    Strategy,
    StrategyError,
    get_strategy,
    strategy_aliases,
    strategy_class,
)
from coop_tui.agents.strategies.base import first_option, second_option
from coop_tui.decisions import Move, SeatView
from coop_tui.games import get_game, load_game
from coop_tui.games.kinds import options_game
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

AXELROD = json.loads(
    (Path(__file__).parent / "data" / "axelrod_seed003_transcripts.json").read_text())


# ---------------------------------------------------------------------- helpers
def make(spec: str | tuple[str, dict[str, Any]]) -> Strategy:
    if isinstance(spec, tuple):
        return get_strategy(spec[0], **spec[1])
    return get_strategy(spec)


def respond(strategy: Strategy, co_player: str, game: str = "pd_canonical", seat: int = 1,
            ) -> str:
    """The strategy's moves (as letters) against a fixed sequence of co-player letters.

    The strategy sits in ``seat`` of a two-player game; each move must be pure.
    """
    g = get_game(game)
    own: list[int] = []
    history: list[Move] = []
    for t, letter in enumerate(co_player, start=1):
        dist = strategy.distribution(SeatView(game=g, seat=seat, round=t, history=tuple(history)))
        assert max(dist) == 1.0, f"{strategy.name} is not pure in round {t}: {dist}"
        a = dist.index(1.0)
        own.append(a)
        theirs = "CD".index(letter)
        history.append(Move(t, a, (theirs,), 0.0, (0.0,)))
    return "".join("CD"[a] for a in own)


def transcript(spec: str | tuple[str, dict[str, Any]], co_player: str, **kw: Any) -> str:
    """"CC CD ..." for the strategy against the co-player's letters."""
    own = respond(make(spec), co_player, **kw)
    return " ".join(a + b for a, b in zip(own, co_player, strict=True))


# ---------------------------------------------------------------------- transcripts
@pytest.mark.parametrize(
    ("spec", "co_player", "expected"),
    [
        ("hard_tft", "CDCCCCC", "CC CD DC DC DC CC CC"),
        ("hard_tft", "DCDCCCC", "CD DC DD DC DC DC CC"),
        ("false_defector", "CCCCC", "CC DC DC CC CC"),
        ("false_defector", "CCCDCD", "CC DC DC CD DC CD"),
        ("defect_once", "DDDD", "DD CD CD CD"),
        ("defect_once", "CCCC", "DC CC CC CC"),
        ("suspicious_tft", "CCDC", "DC CC CD DC"),
        ("reverse_tft", "CCDD", "DC DC DD CD"),
        ("pavlov", "CDCDD", "CC CD DC DD CD"),
        ("tit_for_tat_sp", "CDDC", "CC CD DD DC"),
        ("stag_tft", "DC", "CD DC"),
        ("chicken_tft", "DC", "CD DC"),
        ("tit_for_two_tats_sp", "DDCDD", "CD CD DC CD CD"),
        ("grim_trigger_sp", "CDCC", "CC CD DC DC"),
        ("chicken_bully", "DDCC", "DD CD CC DC"),
        ("always_swerve", "DC", "CD CC"),
        ("always_straight", "DC", "DD DC"),
        (("noisy_tit_for_tat", {"noise": 0}), "CDCD", "CC CD DC CD"),
        (("noise_10", {"noise": 1.0}), "CCDC", "CC DC DD DC"),  # round 1 is never noisy
        (("mirror", {"opening": "cooperate"}), "DCD", "CD DC CD"),
        (("anti_mirror", {"opening": "cooperate"}), "DCD", "CD CC DD"),
    ],
)
def test_transcript(spec: Any, co_player: str, expected: str) -> None:
    assert transcript(spec, co_player) == expected


def test_alternate_opens_by_seat_and_follows_its_own_last_move() -> None:
    """The strategic personalities paper's BoS ``alternate``: seat 1 opens with its first option, any other seat with
    its second; then it switches (cycle, by contrast, follows the round number)."""
    bos = get_game("bos_standard")
    s = get_strategy("alternate")

    def run(seat: int, rounds: int) -> list[int]:
        hist: list[Move] = []
        out = []
        for t in range(1, rounds + 1):
            a = s.distribution(SeatView(game=bos, seat=seat, round=t, history=tuple(hist))).index(1.0)
            out.append(a)
            hist.append(Move(t, a, (0,), 0.0, (0.0,)))
        return out

    assert run(0, 4) == [0, 1, 0, 1]
    assert run(1, 4) == [1, 0, 1, 0]
    assert get_strategy("cycle").distribution(SeatView(game=bos, seat=1, round=1)) == [1.0, 0.0]


def test_the_seed003_twins_play_games_without_a_cooperative_action() -> None:
    """The code plays its PD strategies on Battle of the Sexes and the focal-point game with
    the first option as "cooperate"; our general tit for tat refuses such games."""
    bos = get_game("bos_standard")
    with pytest.raises(StrategyError):
        get_strategy("tit_for_tat").check(SeatView(game=bos, seat=1, round=1))
    assert respond(get_strategy("hard_tft"), "DCCCC", game="bos_standard") == "CDDDC"
    assert respond(get_strategy("always_ballet"), "DD", game="bos_standard") == "CC"
    assert respond(get_strategy("always_football"), "CC", game="bos_standard") == "DD"
    focal = get_game("focal_point")
    tft = get_strategy("tit_for_tat_sp")
    hist = (Move(1, 0, (2,), 0.0, (0.0,)),)
    assert tft.distribution(SeatView(game=focal, seat=1, round=2, history=hist)) == [0, 0, 1, 0]
    # its code's random and anti-mirror play uniformly on four options
    assert get_strategy("random").distribution(SeatView(game=focal, seat=1, round=1)) == [0.25] * 4
    assert get_strategy("anti_mirror").distribution(
        SeatView(game=focal, seat=1, round=2, history=hist)) == [0.25] * 4
    with pytest.raises(StrategyError):  # a bias needs a cooperative action
        get_strategy("random", p=0.8).distribution(SeatView(game=focal, seat=1, round=1))


def test_in_four_player_games_the_copies_watch_seat_one_only() -> None:
    """The code's copies react to the model (seat 1); ours of the general family react to
    every co-player. Round 2 of diners: the model cooperated, another copy defected."""
    diners = get_game("diners_dilemma")
    cheap, costly = 0, 1
    assert diners.cooperative[1] == frozenset({cheap})
    move = Move(1, cheap, (cheap, costly, cheap), 0.0, (0.0, 0.0, 0.0))
    view = SeatView(game=diners, seat=1, round=2, history=(move,))
    assert get_strategy("tit_for_tat_sp").distribution(view) == [1.0, 0.0]
    assert get_strategy("hard_tft").distribution(view) == [1.0, 0.0]
    assert get_strategy("tit_for_tat").distribution(view) == [0.0, 1.0]
    model_defected = Move(1, cheap, (costly, cheap, cheap), 0.0, (0.0, 0.0, 0.0))
    view = SeatView(game=diners, seat=2, round=2, history=(model_defected,))
    assert get_strategy("grim_trigger_sp").distribution(view) == [0.0, 1.0]
    assert get_strategy("mirror").distribution(view) == [0.0, 1.0]


def test_noisy_tit_for_tat_returns_its_mixture() -> None:
    pd = get_game("pd_canonical")
    after_c = (Move(1, 0, (0,), 3.0, (3.0,)),)
    after_d = (Move(1, 0, (1,), 0.0, (5.0,)),)
    noise20 = get_strategy("noise_20")
    assert noise20.classifier["stochastic"]
    assert noise20.distribution(SeatView(game=pd, seat=1, round=1)) == [1.0, 0.0]
    assert noise20.distribution(SeatView(game=pd, seat=1, round=2, history=after_c)) == \
        pytest.approx([0.8, 0.2])
    assert noise20.distribution(SeatView(game=pd, seat=1, round=2, history=after_d)) == [0.0, 1.0]
    assert get_strategy("noise_10").distribution(
        SeatView(game=pd, seat=1, round=2, history=after_c)) == pytest.approx([0.9, 0.1])


# ---------------------------------------------------------------------- Axelrod parity
PARITY = [(ours, probe) for ours, row in AXELROD["transcripts"].items() for probe in row["against"]]


@pytest.mark.parametrize(("ours", "probe"), PARITY)
def test_move_for_move_like_the_axelrod_library(ours: str, probe: str) -> None:
    row = AXELROD["transcripts"][ours]
    recorded = row["against"][probe]
    strategy = get_strategy(ours, **row["params"])
    assert respond(strategy, recorded["co_player"]) == recorded["own"], (ours, row["axelrod"])


def test_the_parity_data_covers_the_strategies_the_library_shares() -> None:
    covered = {ours for ours in AXELROD["transcripts"]}
    assert {"hard_tit_for_tat", "suspicious_tit_for_tat_sp", "win_stay_lose_shift_sp",
            "reverse_tit_for_tat_sp", "grim_trigger_sp", "tit_for_two_tats_sp"} <= covered
    assert AXELROD["transcripts"]["hard_tit_for_tat"]["axelrod"] == "HardTitForTat"
    assert all(len(r["own"]) == AXELROD["turns"]
               for row in AXELROD["transcripts"].values() for r in row["against"].values())


# ---------------------------------------------------------------------- names
PUBLIC_NAMES = {  # the code's registry keys -> our strategy
    "always_cooperate": "always_cooperate", "always_defect": "always_defect",
    "tit_for_tat": "tit_for_tat", "suspicious_tft": "suspicious_tit_for_tat_sp",
    "tit_for_two_tats": "tit_for_two_tats", "reverse_tft": "reverse_tit_for_tat_sp",
    "hard_tft": "hard_tit_for_tat", "grim_trigger": "grim_trigger",
    "pavlov": "win_stay_lose_shift_sp", "false_defector": "false_defector",
    "defect_once": "defect_once", "noise_10": "noisy_tit_for_tat",
    "noise_20": "noisy_tit_for_tat", "always_ballet": "always_cooperate_sp",
    "always_football": "always_defect_sp", "alternate": "alternate_options",
    "always_stag": "always_cooperate_sp", "always_hare": "always_defect_sp",
    "stag_tft": "tit_for_tat_sp", "always_swerve": "always_cooperate_sp",
    "always_straight": "always_defect_sp", "chicken_tft": "tit_for_tat_sp",
    "chicken_bully": "chicken_bully", "random": "random", "random_strategy": "random",
    "mirror": "mirror", "anti_mirror": "anti_mirror", "trust_full": "trust_full",
    "trust_none": "trust_none", "trust_proportional": "trust_proportional",
    "accept_fair": "accept_fair", "accept_generous": "accept_generous",
    "always_reject": "always_reject", "always_accept": "always_accept",
    "reject_unfair": "reject_unfair", "accept_all": "accept_all", "fair_offer": "fair_offer",
    "always_signal": "always_signal", "never_signal": "never_signal",
    "bayesian_receiver": "bayesian_receiver",
}


def test_every_public_code_name_resolves() -> None:
    for public, ours in PUBLIC_NAMES.items():
        assert strategy_class(public).name == ours, public
    assert get_strategy("noise_20").params == {"noise": 0.2}
    assert get_strategy("noise_10", noise=0.3).params == {"noise": 0.3}  # given params win
    assert set(strategy_aliases()) >= {"suspicious_tft", "reverse_tft", "pavlov", "hard_tft",
                                       "noise_10", "noise_20", "random_strategy", "alternate"}


def test_list_strategies_shows_the_aliases() -> None:
    out = subprocess.run([sys.executable, "-m", "coop_tui.cli", "list", "strategies", "--json"],
                         capture_output=True, text=True, check=True).stdout
    rows = {row["name"]: row["aliases"] for row in json.loads(out)}
    assert "noise_10 (noise = 0.1)" in rows["noisy_tit_for_tat"]
    assert "hard_tft" in rows["hard_tit_for_tat"]
    assert "pavlov" in rows["win_stay_lose_shift_sp"]
    assert "random_strategy" in rows["random"]
    # piped without --json: one tab-separated line per strategy, nothing cut
    piped = subprocess.run([sys.executable, "-m", "coop_tui.cli", "list", "strategies"],
                           capture_output=True, text=True, check=True).stdout
    line = next(x for x in piped.splitlines() if x.startswith("noisy_tit_for_tat\t"))
    assert "noise_10 (noise = 0.1)" in line


# ---------------------------------------------------------------------- responders
def option_view(game: str, seat: int, options: tuple[str, ...], facts: dict[str, Any]) -> SeatView:
    g = load_game(game)
    return SeatView(game=options_game(g.n_players, seat, options), seat=seat, round=1,
                    extra={"facts": facts, "past": [], "game_params": dict(g.params), "seed": 1})


def picks(name: str, game: str, facts: dict[str, Any], **params: Any) -> int:
    view = option_view(game, 1, ("accept", "reject"), facts)
    return get_strategy(name, **params).distribution(view).index(1.0)


@pytest.mark.parametrize(
    ("name", "accepted", "rejected"),
    [("reject_unfair", 30, 29), ("fair_offer", 45, 44), ("accept_all", 0, None),
     ("anti_mirror", 0, None)],
)
def test_ultimatum_responders(name: str, accepted: int, rejected: int | None) -> None:
    assert picks(name, "ultimatum", {"offer": accepted, "endowment": 100}) == 0
    if rejected is not None:
        assert picks(name, "ultimatum", {"offer": rejected, "endowment": 100}) == 1


def test_bargaining_and_signalling_responders() -> None:
    facts = {"demand": 60, "round": 1}  # leaves 40 of the pie of 100
    assert picks("accept_fair", "alternating_offers", facts) == 0
    assert picks("accept_fair", "alternating_offers", {"demand": 61}) == 1
    assert picks("accept_generous", "alternating_offers", {"demand": 80}) == 0
    assert picks("accept_generous", "alternating_offers", {"demand": 81}) == 1
    assert picks("always_reject", "alternating_offers", facts) == 1
    assert picks("always_accept", "alternating_offers", {"demand": 100}) == 0
    assert picks("always_signal", "signaling", {"signalled": False}) == 0
    assert picks("never_signal", "signaling", {"signalled": True}) == 1
    assert picks("bayesian_receiver", "signaling", {"signalled": False}) == 0  # as run
    assert picks("bayesian_receiver", "signaling", {"signalled": False}, as_run=False) == 1
    assert picks("bayesian_receiver", "signaling", {"signalled": True}, as_run=False) == 0


def number_view(game: str, seat: int, facts: dict[str, Any] | None = None,
                past: list[dict[str, Any]] | None = None, seed: int = 1) -> SeatView:
    g = load_game(game)
    return SeatView(game=g, seat=seat, round=len(past or []) + 1,
                    extra={"facts": facts or {}, "past": past or [],
                           "game_params": dict(g.params), "seed": seed})


def answer(name: str, view: SeatView, options: dict[str, Any], **params: Any) -> Any:
    return get_strategy(name, **params).numeric_answer(view, options)


RETURN = {"name": "return", "min": 0, "max": 15, "step": 1}  # 5 sent, 15 arrive


def test_trust_players_as_trustees() -> None:
    facts = {"sent": 5, "received": 15}
    view = number_view("trust_berg", 1, facts)
    assert answer("trust_full", view, RETURN) == 7  # 7.5 returned by the code, on our grid 7
    assert answer("trust_proportional", view, RETURN) == 7
    assert answer("trust_none", view, RETURN) == 0
    assert answer("mirror", view, RETURN) == 5  # the code's mirror returns what was sent
    assert answer("anti_mirror", view, RETURN) == 15  # 0 + 30 - 5, clamped to the 15 held
    effort = {"name": "effort", "min": 0, "max": 10, "step": 1}
    wage = number_view("gift_exchange", 1, {"wage": 4})
    assert answer("trust_full", wage, effort) == 6  # 1.5 x wage
    assert answer("trust_proportional", wage, effort) == 6
    assert answer("anti_mirror", wage, effort) == 10  # 100 - 4, clamped into 0-10


def test_third_party_observers_answer_their_rule_number() -> None:
    punish = {"name": "punishment", "min": 0, "max": 50, "step": 1}
    view = number_view("third_party_punishment", 2, {"gift": 10, "endowment": 100})
    assert answer("reject_unfair", view, punish) == 40
    assert answer("accept_all", view, punish) == 1
    assert answer("fair_offer", view, punish) == 50
    assert answer("mirror", view, punish) == 10


def test_numeric_mirror_and_anti_mirror_in_simultaneous_games() -> None:
    space = {"name": "contribution", "min": 0, "max": 10, "step": 1}
    first = number_view("pg_med_mpcr", 1)
    assert answer("mirror", first, space) == 5  # round 1: the middle of the range
    later = number_view("pg_med_mpcr", 2, past=[{"contributions": [7, 1, 1, 1]}])
    assert answer("mirror", later, space) == 7  # the model's (seat 1) last contribution
    assert answer("anti_mirror", later, space) == 3
    demand = {"name": "demand", "min": 0, "max": 100, "step": 1}
    nash = number_view("nash_demand", 1)
    assert [answer(n, nash, demand) for n in
            ("accept_fair", "accept_generous", "always_reject", "always_accept")] == [55, 60, 90, 50]
    blotto = {"keys": ["B1", "B2", "B3"], "min": 0, "max": 100, "total": 100, "step": 1}
    past = [{"allocations": [[50, 30, 20], [34, 33, 33]]}]
    assert answer("mirror", number_view("colonel_blotto", 1, past=past), blotto) == \
        {"B1": 50, "B2": 30, "B3": 20}
    assert answer("anti_mirror", number_view("colonel_blotto", 1, past=past), blotto) == \
        {"B1": 20, "B2": 30, "B3": 50}


def test_numeric_random_draws_from_the_codes_range_and_repeats_with_its_seed() -> None:
    effort = {"name": "effort", "min": 0, "max": 10, "step": 1}
    draws = [answer("random", number_view("gift_exchange", 1, {"wage": 4}, seed=s), effort)
             for s in range(300)]
    assert set(draws) <= set(range(11))
    # the code draws 0-100 and clamps effort to 10: about 90% of draws are 10
    assert 0.8 < draws.count(10) / len(draws) < 0.97
    space = {"name": "contribution", "min": 0, "max": 10, "step": 1}
    pg = [answer("random", number_view("pg_low_mpcr", 1, seed=s), space) for s in range(300)]
    assert max(pg.count(v) for v in range(11)) < 60  # uniform over 0-10 there
    assert answer("random", number_view("pg_low_mpcr", 1, seed=9), space) == \
        answer("random", number_view("pg_low_mpcr", 1, seed=9), space)
    blotto = {"keys": ["B1", "B2", "B3"], "min": 0, "max": 100, "total": 100, "step": 1}
    split = answer("random", number_view("colonel_blotto", 1, seed=4), blotto)
    assert sum(split.values()) == 100 and len({tuple(answer(
        "random", number_view("colonel_blotto", 1, seed=s), blotto).values())
        for s in range(5)}) > 1


# ---------------------------------------------------------------------- through the engine
async def run(tmp_path: Path, name: str, seed: int, experiment: dict[str, Any],
              agents: dict[str, Any]) -> list[tuple[int, int, Any]]:
    data = {"name": name, "seed": seed, "agents": agents, "experiments": [experiment]}
    store = Store(tmp_path / f"{name}-{seed}.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    out = []
    for match in store.matches(summary.run_id):
        assert match["status"] == "done", match["error"]
        out += [(d.round, d.seat, d.parsed if d.action is None else d.action)
                for d in store.decisions(match["id"])]
    store.close()
    return out


async def test_noisy_and_random_opening_opponents_repeat_with_the_match_seed(
        tmp_path: Path) -> None:
    agents = {"noisy": {"strategy": "noise_20"}, "mirror": {"strategy": "mirror"},
              "allc": {"strategy": "always_cooperate"}}
    exp = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known", "rounds": 40,
           "answer": "choice", "matchup": [["allc", "noisy"], ["mirror", "noisy"]]}
    a = await run(tmp_path, "noisy", 7, exp, agents)
    b = await run(tmp_path, "noisy-again", 7, exp, agents)
    assert a == b and len(a) == 2 * 2 * 40
    noisy = [act for _, seat, act in a if seat == 1]
    assert 0 < noisy.count(1) < len(noisy)  # some noise, not all defections
    c = await run(tmp_path, "noisy-other", 8, exp, agents)
    assert [x for x in c if x[1] == 1] != [x for x in a if x[1] == 1]


async def test_numeric_random_trustee_is_stored_and_repeats(tmp_path: Path) -> None:
    agents = {"investor": {"strategy": "fixed_number", "params": {"value": 5}},
              "rand": {"strategy": "random_strategy"}}
    exp = {"game": "trust_berg", "game_params": {"rounds": 6}, "mechanism": "none",
           "matchup": [["investor", "rand"]]}
    a = await run(tmp_path, "trust", 3, exp, agents)
    assert a == await run(tmp_path, "trust-again", 3, exp, agents)
    returns = [v for _, seat, v in a if seat == 1]
    assert len(returns) == 6 and all(0 <= r <= 15 for r in returns)
    assert len(set(returns)) > 1


async def test_an_ultimatum_against_reject_unfair_pays_the_codes_rule(tmp_path: Path) -> None:
    agents = {"p": {"strategy": "fixed_number", "params": {"value": 29}},
              "fair": {"strategy": "fixed_number", "params": {"value": 30}},
              "r": {"strategy": "reject_unfair"}}
    low = await run(tmp_path, "u-low", 1, {"game": "ultimatum", "game_params": {"rounds": 1},
                                           "mechanism": "none", "matchup": [["p", "r"]]}, agents)
    high = await run(tmp_path, "u-high", 1, {"game": "ultimatum", "game_params": {"rounds": 1},
                                             "mechanism": "none", "matchup": [["fair", "r"]]},
                     agents)
    assert [x[2] for x in low] == [29, 1] and [x[2] for x in high] == [30, 0]


def test_seeded_generator_is_the_match_seed_per_move() -> None:
    """``extra["seed"]`` comes from the match seed, the round, the seat and the move."""
    from coop_tui.engine import derived_seed

    assert derived_seed(3, "strategy", 1, 1, "return") == derived_seed(3, "strategy", 1, 1, "return")
    assert derived_seed(3, "strategy", 1, 1, "return") != derived_seed(3, "strategy", 2, 1, "return")
    assert np.random.default_rng(derived_seed(3, "strategy", 1, 1, "return")).integers(100) >= 0


# ---------------------------------------------------------------------- the published table
SAMPLE = Path(__file__).parent / "data" / "strategic_personalities.sample.csv.gz"
STUDY = Path(__file__).resolve().parent.parent / "data" / "studies" / "strategic-personalities.toml"
GAME_KEYS = {"chicken": "chicken_sp"}
FIXED = {"always_cooperate", "always_defect", "always_ballet", "always_football", "always_stag",
         "always_hare", "always_swerve", "always_straight", "defect_once", "alternate"}
"""Opponents whose moves do not depend on the model's: a published row then fixes how
often the model cooperated against each of their moves, and so both totals."""


def published_rows() -> list[list[str]]:
    import csv
    import gzip

    with gzip.open(SAMPLE, "rt") as fh:
        return [r for r in csv.reader(fh)
                if r[6] == "model_vs_strategy" and r[5] in FIXED and r[7] == "baseline"
                and r[14] and r[9].endswith(".0") and get_game(GAME_KEYS.get(r[0], r[0])).n_players == 2]


def test_the_study_opponents_reproduce_the_published_totals_of_fixed_opponents() -> None:
    """Against an opponent that ignores the model, a published row's cooperation columns
    fix the model's cooperation count (from the mean of both seats) and how many of those
    fell on the opponent's cooperative rounds (the joint rate); the totals then follow
    from the game's table. Played with the study file's strategy for that opponent name,
    every such row of the published sample comes out to the point."""
    from coop_tui.spec import load_sweep

    agents = load_sweep(STUDY, check_keys=False).spec.agents
    rows = published_rows()
    assert len(rows) >= 12
    for r in rows:
        game = get_game(GAME_KEYS.get(r[0], r[0]))
        rounds = int(float(r[9]))
        strategy = get_strategy(agents[r[5]].strategy, **agents[r[5]].params)
        own: list[int] = []
        history: list[Move] = []
        c0 = first_option(SeatView(game=game, seat=0, round=1))
        for t in range(1, rounds + 1):
            dist = strategy.distribution(SeatView(game=game, seat=1, round=t, history=tuple(history)))
            a = dist.index(1.0)
            own.append(a)
            history.append(Move(t, a, (c0,), 0.0, (0.0,)))
        c1 = first_option(SeatView(game=game, seat=1, round=1))
        d0 = second_option(SeatView(game=game, seat=0, round=1))
        strat_coop = sum(a == c1 for a in own)
        model_coop = round(2 * float(r[14]) * rounds) - strat_coop
        joint = round(float(r[15]) * rounds)
        on_coop, on_defect = joint, model_coop - joint  # model C against strategy C / D
        n_coop = strat_coop
        assert 0 <= on_coop <= n_coop and 0 <= on_defect <= rounds - n_coop, r
        cells = {(c0, c1): on_coop, (d0, c1): n_coop - on_coop,
                 (c0, 1 - c1): on_defect, (d0, 1 - c1): rounds - n_coop - on_defect}
        totals = [sum(k * game.payoff(p)[s] for p, k in cells.items()) for s in (0, 1)]
        assert totals == pytest.approx([float(r[12]), float(r[13])]), (r[0], r[4], r[5])


REACTIVE = {"tit_for_tat", "suspicious_tft", "tit_for_two_tats", "reverse_tft", "hard_tft",
            "grim_trigger", "pavlov", "false_defector", "stag_tft", "chicken_tft",
            "chicken_bully", "mirror", "anti_mirror"}


def outcomes(game: Any, strategy: Strategy, model: tuple[int, ...]) -> set[tuple[float, ...]]:
    """(model total, strategy total, cooperations of both, joint cooperations) for every way
    the strategy's random choices (mirror's opening) can fall against ``model``."""
    c0 = first_option(SeatView(game=game, seat=0, round=1))
    c1 = first_option(SeatView(game=game, seat=1, round=1))
    found = set()
    paths: list[list[Move]] = [[]]
    for t, m in enumerate(model, start=1):
        nxt = []
        for hist in paths:
            dist = strategy.distribution(SeatView(game=game, seat=1, round=t, history=tuple(hist)))
            for a, p in enumerate(dist):
                if p > 0:
                    nxt.append([*hist, Move(t, a, (m,), 0.0, (0.0,))])
        paths = nxt
    for hist in paths:
        pays = [game.payoff((mv.others[0], mv.own)) for mv in hist]
        found.add((sum(p[0] for p in pays), sum(p[1] for p in pays),
                   sum(mv.others[0] == c0 for mv in hist) + sum(mv.own == c1 for mv in hist),
                   sum(mv.others[0] == c0 and mv.own == c1 for mv in hist)))
    return found


def test_reactive_opponents_admit_the_published_rows() -> None:
    """Against a reactive opponent the model's moves are not in the table, but some
    sequence of them must give the published totals, cooperation and joint cooperation
    when the study's strategy answers it: every 10-round two-player row of the sample is
    checked against all 1,024 model sequences."""
    import csv
    import gzip
    import itertools

    from coop_tui.spec import load_sweep

    agents = load_sweep(STUDY, check_keys=False).spec.agents
    with gzip.open(SAMPLE, "rt") as fh:
        rows = [r for r in csv.reader(fh)
                if r[6] == "model_vs_strategy" and r[5] in REACTIVE and r[7] == "baseline"
                and r[14] and r[9] == "10.0"
                and get_game(GAME_KEYS.get(r[0], r[0])).n_players == 2]
    assert len(rows) >= 20
    for r in rows:
        game = get_game(GAME_KEYS.get(r[0], r[0]))
        strategy = get_strategy(agents[r[5]].strategy, **agents[r[5]].params)
        c0 = first_option(SeatView(game=game, seat=0, round=1))
        d0 = second_option(SeatView(game=game, seat=0, round=1))
        target = (float(r[12]), float(r[13]))
        reached = False
        for model in itertools.product((c0, d0), repeat=10):
            for total0, total1, coop, joint in outcomes(game, strategy, model):
                if ((total0, total1) == target and joint == round(float(r[15]) * 10)
                        and coop == round(2 * float(r[14]) * 10)):
                    reached = True
                    break
            if reached:
                break
        assert reached, (r[0], r[4], r[5], r[12:16])


def crowd_outcomes(game: Any, strategy: Strategy, model: tuple[int, ...]) -> set[tuple[float, ...]]:
    """:func:`outcomes` for a game whose seats 2.. are all copies of the strategy."""
    import itertools

    n = game.n_players
    coop = [first_option(SeatView(game=game, seat=j, round=1)) for j in range(n)]
    paths: list[list[list[Move]]] = [[[] for _ in range(n)]]
    for t, m in enumerate(model, start=1):
        nxt = []
        for hists in paths:
            choices = [[m]] + [
                [a for a, p in enumerate(strategy.distribution(
                    SeatView(game=game, seat=j, round=t, history=tuple(hists[j])))) if p > 0]
                for j in range(1, n)]
            for prof in itertools.product(*choices):
                pay = game.payoff(prof)
                nxt.append([h + [Move(t, prof[j], prof[:j] + prof[j + 1:], pay[j],
                                      pay[:j] + pay[j + 1:])] for j, h in enumerate(hists)])
        paths = nxt
    return {(sum(mv.payoff for mv in h[0]), sum(mv.payoff for mv in h[1]),
             sum(mv.own == coop[0] for mv in h[0]) + sum(mv.own == coop[1] for mv in h[1]),
             sum(a.own == coop[0] and b.own == coop[1] for a, b in zip(h[0], h[1], strict=True)))
            for h in paths}


def test_four_player_diners_rows_with_the_copies_in_every_other_seat() -> None:
    """Diner's dilemma rows of the sample (10 rounds, the opponent's copies in seats 2-4,
    each watching the model): some model sequence gives the published numbers."""
    import csv
    import gzip
    import itertools

    from coop_tui.spec import load_sweep

    agents = load_sweep(STUDY, check_keys=False).spec.agents
    game = get_game("diners_dilemma")
    c0 = first_option(SeatView(game=game, seat=0, round=1))
    d0 = second_option(SeatView(game=game, seat=0, round=1))
    with gzip.open(SAMPLE, "rt") as fh:
        rows = [r for r in csv.reader(fh) if r[0] == "diners_dilemma" and r[7] == "baseline"
                and r[6] == "model_vs_strategy" and r[5] in REACTIVE | FIXED]
    assert {r[5] for r in rows} >= {"hard_tft", "false_defector", "mirror", "defect_once"}
    for r in rows:
        strategy = get_strategy(agents[r[5]].strategy, **agents[r[5]].params)
        want = (float(r[12]), float(r[13]), round(2 * float(r[14]) * 10), round(float(r[15]) * 10))
        assert any(want in crowd_outcomes(game, strategy, model)
                   for model in itertools.product((c0, d0), repeat=10)), (r[4], r[5])
