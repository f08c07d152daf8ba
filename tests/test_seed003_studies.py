"""The strategic personalities paper's study files: the full design validates (keys not checked), and the offline
variant runs end to end on the embedded model and strategies at a small size."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from coop_tui.spec import build_sweep, load_sweep, read_sweep_file
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

STUDIES = Path(__file__).resolve().parent.parent / "data" / "studies"
FULL = STUDIES / "strategic-personalities.toml"
OFFLINE = STUDIES / "strategic-personalities-offline.toml"

MATRIX_GAMES = {
    "pd_canonical", "pd_harsh", "pd_medium", "pd_mild", "repeated_trust", "stag_hunt_standard",
    "stag_hunt_risky", "chicken_sp", "chicken_high_stakes", "diners_dilemma", "el_farol_bar",
    "bos_standard", "bos_transposed", "focal_point", "matching_pennies",
}


def test_the_full_study_is_the_papers_design() -> None:
    sweep = load_sweep(FULL, check_keys=False)
    models = {name: a for name, a in sweep.spec.agents.items() if a.model}
    assert len(models) == 25
    assert all("/" in a.model and a.temperature == 1.0 for a in models.values())
    # (the move-by-move games under mechanism "none": test_seed003_numeric_games.py)
    assert {c.game for c in sweep.cells if c.mechanism != "none"} == MATRIX_GAMES
    # the code's messages, <answer> tags and decimals in every experiment of both files
    offline = load_sweep(OFFLINE)
    assert {e.prompt_protocol for e in sweep.spec.experiments} == {"seed003"}
    assert {e.prompt_protocol for e in offline.spec.experiments} == {"seed003"}
    assert {c.prompt_protocol for c in sweep.cells} == {"seed003"}
    for exp in sweep.spec.experiments:
        if exp.mechanism == "none":
            continue
        extra = exp.model_extra or {}
        assert extra["horizon"] == "known" and exp.answer == "choice"
        assert exp.randomize_labels == "trial"
        long_games = {"el_farol_bar", "matching_pennies"}
        games = set(exp.game if isinstance(exp.game, list) else [exp.game])
        assert extra["rounds"] == (20 if games <= long_games else 10)
    by_name = {e.name: e for e in sweep.spec.experiments}
    design_g = set(by_name["G strategy play, cooperation games"].agents)
    design_f = set(by_name["F strategy play, cooperation games"].agents)
    assert len(design_g) == 9 and len(design_f) == 16 and not design_g & design_f
    assert by_name["G strategy play, cooperation games"].samples == 1
    assert by_name["F strategy play, cooperation games"].samples == 5
    # cross-play: every unordered pair of the 16 once per game (C(16, 2) = 120)
    pairs = [c for c in sweep.cells if c.matchup == "pairs" and c.game == "pd_harsh"]
    assert len(pairs) == 120
    assert {frozenset(c.seats) for c in pairs} == {
        frozenset(p) for p in itertools.combinations(sorted(design_f), 2)
    }
    # 4-player games: the strategy in every other seat; random fills self/cross seats 3-4
    versus = [c for c in sweep.cells if c.matchup == "versus" and c.game == "diners_dilemma"]
    assert versus and all(len(set(c.seats[1:])) == 1 for c in versus)
    crowd = [c for c in sweep.cells if c.matchup == "pairs" and c.game == "el_farol_bar"]
    assert crowd and all(c.seats[2:] == ("random", "random") for c in crowd)
    counts = Counter(c.matchup for c in sweep.cells)
    assert set(counts) == {"versus", "self", "pairs"}


PD_SET = {"always_cooperate", "always_defect", "tit_for_tat", "suspicious_tft",
          "tit_for_two_tats", "reverse_tft", "hard_tft", "grim_trigger", "pavlov",
          "false_defector", "defect_once", "noise_10", "noise_20", "random", "mirror",
          "anti_mirror"}
EXTRA = {"bos_standard": {"always_ballet", "always_football", "alternate"},
         "bos_transposed": {"always_ballet", "always_football", "alternate"},
         "stag_hunt_standard": {"always_stag", "always_hare", "stag_tft"},
         "stag_hunt_risky": {"always_stag", "always_hare", "stag_tft"},
         "chicken_sp": {"always_swerve", "always_straight", "chicken_tft", "chicken_bully"},
         "chicken_high_stakes": {"always_swerve", "always_straight", "chicken_tft",
                                 "chicken_bully"}}


def test_the_full_study_plays_each_game_against_the_codes_opponents() -> None:
    """The strategic personalities paper's code plays, per binary game, its 13 prisoner's-dilemma strategies plus
    random / mirror / anti_mirror, and the game family's own strategies; every agent key is
    the code's name and resolves to a strategy that plays that game."""
    from coop_tui.agents.strategies import get_strategy

    sweep = load_sweep(FULL, check_keys=False)
    for game in MATRIX_GAMES:
        for design, n in (("G", 1), ("F", 5)):
            cells = [c for c in sweep.cells if c.matchup == "versus" and c.game == game
                     and c.samples == n]
            assert {c.seats[1] for c in cells} == PD_SET | EXTRA.get(game, set()), (game, design)
    agents = sweep.spec.agents
    assert agents["pavlov"].strategy == "pavlov"
    assert get_strategy(agents["noise_20"].strategy).params == {"noise": 0.2}
    assert agents["tit_for_tat"].strategy == "tit_for_tat_sp"  # plays BoS and focal point too


@pytest.mark.slow
async def test_the_offline_study_runs_end_to_end_at_a_small_size(tmp_path: Path) -> None:
    """Every experiment (design) of the offline study, shrunk: one round, at most one
    opponent, and per experiment its first game plus any 4-player game."""
    data: dict[str, Any] = read_sweep_file(OFFLINE)
    # the move-by-move games have their own offline test (test_seed003_numeric_games.py)
    data["experiments"] = [e for e in data["experiments"] if e.get("mechanism") != "none"]
    for exp in data["experiments"]:
        exp["rounds"] = 1
        games = exp["game"] if isinstance(exp["game"], list) else [exp["game"]]
        exp["game"] = [g for i, g in enumerate(games)
                       if i == 0 or g in ("diners_dilemma", "el_farol_bar")]
        if "opponents" in exp:
            exp["opponents"] = exp["opponents"][:1]
    sweep = build_sweep(data, source=OFFLINE)
    store = Store(tmp_path / "offline.db")
    summary = await run_sweep(sweep, store)
    matches = store.matches(summary.run_id)
    assert len(matches) == len(sweep.cells) == 7
    assert all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    assert Counter(m["matchup"] for m in matches) == {"versus": 4, "self": 2, "pairs": 1}
    local = 0
    for m in matches:
        decisions = store.decisions(m["id"])
        seats = store.seats(m["id"])
        assert len(decisions) == len(seats)  # one decision per seat in the one round
        for d in decisions:
            assert d.kind == "choice" and d.action is not None
            if d.agent.startswith("smollm2"):
                local += 1
                assert d.constrained and d.valid
                # the code states the number of rounds in its 2 x 2 games only
                told = m["game"] not in ("diners_dilemma", "el_farol_bar", "focal_point")
                # the code's messages: the rules as the system message, the round after
                system, user = d.prompt
                assert (system["role"], user["role"]) == ("system", "user")
                assert ("round 1 of 1" in user["content"]) is told
                assert "round 1" in user["content"] and "<answer>" in user["content"]
                # the grammar writes the code's tag form, and the tag is what is read
                assert d.answer.startswith("<answer>Option ") and d.parsed in d.labels
                assert d.normalisation == "from the <answer> tag"
        cond = json.loads(m["condition"])
        assert cond["horizon"] == "known" and cond["answer"] == "choice"
    assert local == 4 + 2 * 2 + 2


DESIGN_G = {"claude-sonnet-4.5", "claude-sonnet-4.6", "claude-opus-4.5", "claude-opus-4.6",
            "gpt-4.1", "gpt-5.3", "gpt-5.4", "gemini-3-pro", "gemini-3.1-pro"}


def test_design_g_is_as_the_published_data_has_it() -> None:
    """Design G: one strategy-play and one self-play trial per cell, so each frontier model
    has 4 games x 16 opponents + 4 self-play = 68 Table 2 trials (the data: 56-90)."""
    sweep = load_sweep(FULL, check_keys=False)
    table2 = {"pd_canonical", "pd_harsh", "pd_medium", "pd_mild"}
    for model in DESIGN_G:
        cells = [c for c in sweep.cells if c.game in table2 and c.seats[0] == model]
        assert sum(c.samples for c in cells) == 68, model
        assert {c.matchup for c in cells} == {"versus", "self"}
    self_play = [c for c in sweep.cells if c.matchup == "self" and c.seats[0] in DESIGN_G]
    assert self_play and all(c.samples == 1 for c in self_play)
    assert len({c.game for c in self_play}) == 38


def test_each_model_thinks_as_the_code_ran_it() -> None:
    """The code's model registry and callers: Claude Haiku 4.5 Thinking with a 4,096-token
    thinking budget (max_tokens 8,192), Gemini 3 / 3.1 Pro at thinking level high, Gemini
    2.5 Flash Thinking sent exactly as Gemini 2.5 Flash (its registry entry has thinking
    off and OpenRouter gets no reasoning setting); every other model without a setting."""
    agents = load_sweep(FULL, check_keys=False).spec.agents
    thinking = {name: (a.reasoning_effort, a.max_tokens) for name, a in agents.items()
                if a.model and (a.reasoning_effort or a.max_tokens)}
    assert thinking == {"claude-haiku-4.5-thinking": ("high", 8192),
                        "gemini-3-pro": ("high", 16384), "gemini-3.1-pro": ("high", 16384)}
    same = ("model", "temperature", "reasoning_effort", "max_tokens", "style")
    flash, flash_thinking = agents["gemini-2.5-flash"], agents["gemini-2.5-flash-thinking"]
    assert all(getattr(flash, k) == getattr(flash_thinking, k) for k in same)


async def test_the_offline_study_profiles_the_table2_trials_and_its_estimate_holds(
        tmp_path: Path) -> None:
    """The whole offline study, every experiment at its size, with the two embedded-model
    agents played by strategies (the same seats, moves and decisions; no model calls): the
    default profile is the paper's sample, the Table 2 prisoner's dilemma trials with the
    agent in seat 0, and the estimate's count of model decisions is the count made."""
    from coop_tui.report import build_report
    from coop_tui.runner import estimate

    data: dict[str, Any] = read_sweep_file(OFFLINE)
    predicted = estimate(build_sweep(data, source=OFFLINE))["model_calls"]
    data["agents"]["smollm2"] = {"strategy": "mirror"}
    data["agents"]["smollm2-hot"] = {"strategy": "random"}
    sweep = build_sweep(data, source=OFFLINE)
    store = Store(tmp_path / "offline.db")
    summary = await run_sweep(sweep, store)
    matches = store.matches(summary.run_id)
    assert all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    made = sum(1 for m in matches for d in store.decisions(m["id"])
               if d.agent in ("smollm2", "smollm2-hot"))
    assert abs(predicted - made) <= 0.1 * made, (predicted, made)

    report = build_report(store, summary.run_id)
    store.close()
    profile = report["strategic_personality"]
    assert profile["sample"]["name"] == "table2"
    table2 = report["cooperation_by_model"]
    pd_games = {"pd_canonical", "pd_harsh", "pd_medium", "pd_mild"}
    assert {c["game"] for c in profile["cells"]} <= pd_games
    # smollm2: 1 PD variant x 2 opponents + self-play (seat 0) + cross-play (seat 0);
    # smollm2-hot: its one strategy-play trial, so the comparisons have two models
    assert table2["smollm2"]["n"] == 2 + 1 + 1 and table2["smollm2-hot"]["n"] == 1
    for agent, a in profile["agents"].items():
        rec = a["reciprocity"]
        # 3-round trials: 2 round pairs of the agent in seat 0 per Table 2 trial
        assert rec["n_after_c"] + rec["n_after_d"] == 2 * table2[agent]["n"], agent
    pooled = report["strategic_personality_pooled"]
    # the wider sample is kept: both seats of self-play and cross-play
    assert pooled["sample"]["seat_runs"] > profile["sample"]["seat_runs"]


async def test_the_progress_counts_model_calls_as_the_estimate_does(tmp_path: Path) -> None:
    """The batch progress line used to count every strategy move as a call, so a run
    looked like it made far more model calls than estimated (the offline study: over 419
    'calls' against an estimate of 292 after 15 of 36 matches). Strategy moves are now
    counted apart; a strategy-only run makes no model call."""
    from rich.console import Console

    from coop_tui.events import EventBus
    from coop_tui.runner import ProgressView, estimate

    data: dict[str, Any] = read_sweep_file(OFFLINE)
    data["agents"]["smollm2"] = {"strategy": "mirror"}
    data["agents"]["smollm2-hot"] = {"strategy": "random"}
    data["experiments"] = data["experiments"][:1]
    sweep = build_sweep(data, source=OFFLINE)
    bus = EventBus()
    view = ProgressView(sweep, Console(file=None, quiet=True))
    bus.subscribe(view)
    store = Store(tmp_path / "p.db")
    summary = await run_sweep(sweep, store, bus=bus)
    moves = sum(len(store.decisions(m["id"])) for m in store.matches(summary.run_id))
    store.close()
    assert estimate(sweep)["model_calls"] == view.stats["all"]["calls"] == 0
    assert view.stats["all"]["moves"] == moves == 1 * 2 * 3 * 2  # 1 game, 2 opponents, 3 rounds
