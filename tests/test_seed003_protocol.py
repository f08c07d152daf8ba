"""The strategic personalities paper's protocol: known horizons, one choice per decision, letter labels per trial,
its designs (model vs strategy, self-play, unordered cross-play pairs) and conditions.

Matches run through the real sweep runner and SQLite store with strategy agents; the
done-when match plays the embedded llama.cpp model against tit-for-tat.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from coop_tui.conditions import get_condition
from coop_tui.prompts import LETTER_PAIRS
from coop_tui.spec import SpecError, build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

AGENTS: dict[str, dict[str, Any]] = {
    "allc": {"strategy": "always_cooperate"},
    "alld": {"strategy": "always_defect"},
    "tft": {"strategy": "tit_for_tat"},
    "alt": {"strategy": "alternator"},
    "rnd": {"strategy": "random"},
}

# these tests read what each seat is shown, strategies included
pytestmark = pytest.mark.usefixtures("strategies_read_prompts")


def sweep(*experiments: dict[str, Any], agents: dict[str, Any] | None = None,
          samples: int = 1) -> dict[str, Any]:
    return {"name": "sp", "seed": 4, "samples": samples, "agents": agents or AGENTS,
            "experiments": list(experiments)}


async def run(tmp_path: Path, data: dict[str, Any]) -> tuple[Store, list[dict[str, Any]]]:
    store = Store(tmp_path / "sp.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    matches = store.matches(summary.run_id)
    assert matches and all(m["status"] == "done" for m in matches), [m["error"] for m in matches]
    return store, matches


def first_prompt(decision: Any) -> str:
    return next(m["content"] for m in decision.prompt if m["role"] == "user")


def spec_error(data: dict[str, Any]) -> SpecError:
    with pytest.raises(SpecError) as err:
        build_sweep(data, check_keys=False)
    return err.value


KNOWN_PD = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known",
            "rounds": 10, "answer": "choice"}


# ------------------------------------------------------------------ done when
@pytest.mark.slow
async def test_ten_round_known_horizon_pd_embedded_model_vs_tit_for_tat(tmp_path: Path) -> None:
    agents = {"local": {"model": "local/smollm2", "style": "direct", "temperature": 0.7},
              "tft": {"strategy": "tit_for_tat"}}
    data = sweep({**KNOWN_PD, "matchup": [["local", "tft"]], "randomize_labels": "trial"},
                 agents=agents)
    store, (match,) = await run(tmp_path, data)
    decisions = store.decisions(match["id"])
    assert sorted((d.round, d.seat) for d in decisions) == [
        (t, s) for t in range(1, 11) for s in (0, 1)
    ]
    model = sorted((d for d in decisions if d.seat == 0), key=lambda d: d.round)
    for d in decisions:  # one choice per decision, nothing else
        assert d.kind == "choice" and d.valid and d.parsed in d.labels
        played = d.label_to_action[d.labels.index(d.parsed)]
        assert d.action == played and d.distribution is not None
        assert sorted(d.distribution) == [0.0, 1.0]
    assert all(d.constrained for d in model)  # the grammar step answered
    letters = {frozenset(d.labels) for d in decisions}
    assert len(letters) == 1 and tuple(sorted(next(iter(letters)))) in {
        tuple(sorted(p)) for p in LETTER_PAIRS
    }
    for d in model:
        prompt = first_prompt(d)
        t = d.round
        assert f"This is round {t} of 10." in prompt
        assert "exactly 10 rounds" in prompt
        assert "chance" not in prompt.lower() and "%" not in prompt
        assert "probability" not in prompt.lower()
        shown = [int(r) for r in re.findall(r"^- Round (\d+):", prompt, re.M)]
        assert shown == list(range(1, t))  # the full history, oldest first
        for past in model[: t - 1]:  # each past round in this decision's letters
            own = d.labels[d.label_to_action.index(past.action)]
            assert re.search(rf"^- Round {past.round}: you chose {own},", prompt, re.M)
    tft = [d.action for d in sorted(decisions, key=lambda d: d.round) if d.seat == 1]
    assert tft == [0] + [d.action for d in model[:-1]]


# ------------------------------------------------------------------ horizon
async def test_known_horizon_shows_the_last_k_rounds_and_pays_the_total(tmp_path: Path) -> None:
    data = sweep({**KNOWN_PD, "rounds": 5, "history": 2, "matchup": [["alt", "tft"]]})
    store, (match,) = await run(tmp_path, data)
    for d in store.decisions(match["id"]):
        prompt = first_prompt(d)
        shown = [int(r) for r in re.findall(r"^- Round (\d+):", prompt, re.M)]
        assert shown == list(range(max(1, d.round - 2), d.round))
        if d.round >= 4:
            assert "The last 2 rounds (oldest first)" in prompt
        assert f"round {d.round} of 5" in prompt
    # alternator C D C D C vs tit-for-tat C C D C D on pd_canonical (3/0/5/1), summed
    assert [s["payoff"] for s in store.seats(match["id"])] == [3 + 5 + 0 + 5 + 0,
                                                               3 + 0 + 5 + 0 + 5]


async def test_continuation_one_no_longer_promises_another_round(tmp_path: Path) -> None:
    data = sweep({"game": "prisoners", "mechanism": "repetition", "rounds": 2,
                  "continuation": 1, "matchup": [["tft", "tft"]]})
    store, (match,) = await run(tmp_path, data)
    for d in store.decisions(match["id"]):
        prompt = first_prompt(d)
        assert "chance" not in prompt and "round after round" in prompt


@pytest.mark.parametrize("told", ["always", "two_by_two"])
async def test_rounds_told_only_in_two_by_two_games_as_the_code_states_them(
        tmp_path: Path, told: str) -> None:
    """The strategic personalities paper's code says "T rounds in total ... round t" in its 12 two-by-two matrix
    games and only "round t" in the other 26 (Diner's, El Farol, focal point and the
    move-by-move games); ``rounds_told = "two_by_two"`` does the same, "always" (the
    default) states T everywhere."""
    data = sweep(
        {**KNOWN_PD, "rounds": 2, "rounds_told": told, "matchup": [["tft", "alt"]]},
        {**KNOWN_PD, "game": "focal_point", "rounds": 2, "rounds_told": told,
         "matchup": [["rnd", "rnd"]]},
        {"game": "ultimatum", "game_params": {"rounds": 2}, "mechanism": "none",
         "rounds_told": told, "matchup": [["offer", "resp"]]},
        agents={**AGENTS, "offer": {"strategy": "fixed_number", "params": {"value": 40}},
                "resp": {"strategy": "threshold_responder", "params": {"threshold": 30}}})
    store, matches = await run(tmp_path, data)
    for m in matches:
        for d in store.decisions(m["id"]):
            prompt = first_prompt(d)
            stated = told == "always" or m["game"] == "pd_canonical"
            assert (f"round {d.round} of 2" in prompt) is stated, (m["game"], prompt)
            assert f"round {d.round}" in prompt.lower()
            assert ("2 rounds" in prompt or "2 round" in prompt) is stated


def test_horizon_errors_name_the_field() -> None:
    err = spec_error(sweep({**KNOWN_PD, "agents": ["tft"], "continuation": 0.9}))
    assert err.field == "experiments[0].continuation" and "horizon" in err.message
    err = spec_error(sweep({**KNOWN_PD, "agents": ["tft"], "horizon": "finite"}))
    assert err.field == "experiments[0].horizon" and "known" in err.message
    err = spec_error(sweep({**KNOWN_PD, "agents": ["tft"], "history": "some"}))
    assert err.field.startswith("experiments[0].history")


def test_known_horizon_keeps_existing_condition_keys() -> None:
    plain = build_sweep(sweep({"game": "prisoners", "mechanism": "repetition",
                               "agents": ["tft"]}), check_keys=False).cells[0]
    assert "horizon" not in plain.mechanism_params
    known = build_sweep(sweep({**KNOWN_PD, "agents": ["tft"]}), check_keys=False).cells[0]
    assert known.mechanism_params["horizon"] == "known"
    assert known.mechanism_params["history"] == "all" and known.mechanism_params["payoff"] == "total"
    assert "continuation" not in known.mechanism_params


# ------------------------------------------------------------------ labels
async def test_trial_labels_fix_the_letters_per_match_and_shuffle_the_order_per_round(
    tmp_path: Path,
) -> None:
    data = sweep({**KNOWN_PD, "rounds": 12, "matchup": [["rnd", "tft"]],
                  "randomize_labels": "trial"}, samples=6)
    store, matches = await run(tmp_path, data)
    pairs = set()
    for match in matches:
        decisions = store.decisions(match["id"])
        letters = {frozenset(d.labels) for d in decisions}
        assert len(letters) == 1  # one pair for the whole trial, both seats
        mapping = {d.labels[d.label_to_action.index(0)] for d in decisions}
        assert len(mapping) == 1  # the cooperative letter never changes in a trial
        orders = {d.labels for d in decisions}
        assert len(orders) == 2  # ... but the listed order does
        coop = mapping.pop()
        pairs.add(frozenset(next(iter(letters))))
        for d in decisions:
            prompt = first_prompt(d)
            actions = re.search(r"Actions you can choose from:\n- (\w)\n- (\w)", prompt)
            assert actions and (actions.group(1), actions.group(2)) == d.labels
            rules = re.findall(r"^- If you choose (\w) ", prompt, re.M)
            assert rules[0] == coop  # payoff rules keep action order, as the strategic personalities paper's code
    assert len(pairs) >= 2
    assert all(tuple(sorted(p)) in {tuple(sorted(q)) for q in LETTER_PAIRS} for p in pairs)


def test_bad_label_mode_names_the_field() -> None:
    err = spec_error(sweep({"game": "prisoners", "agents": ["tft"], "randomize_labels": "round"}))
    assert err.field == "experiments[0].randomize_labels" and "trial" in err.message


# ------------------------------------------------------------------ designs
def seatings(exp: dict[str, Any]) -> list[tuple[str, ...]]:
    return [c.seats for c in build_sweep(sweep(exp), check_keys=False).cells]


def test_pairs_are_unordered_and_cross_stays_ordered_with_replacement() -> None:
    base = {"game": "prisoners", "agents": ["allc", "alld", "tft"]}
    assert seatings({**base, "matchup": "pairs"}) == [
        ("allc", "alld"), ("allc", "tft"), ("alld", "tft"),
    ]
    assert len(seatings({**base, "matchup": "cross"})) == 9


def test_versus_puts_the_opponent_in_every_other_seat() -> None:
    exp = {"game": "prisoners", "matchup": "versus", "agents": ["allc", "alld"],
           "opponents": ["tft", "rnd"]}
    assert seatings(exp) == [("allc", "tft"), ("allc", "rnd"), ("alld", "tft"), ("alld", "rnd")]
    exp = {**exp, "game": "diners_dilemma", "agents": ["allc"], "opponents": ["tft"]}
    assert seatings(exp) == [("allc", "tft", "tft", "tft")]


def test_n_player_pairs_and_self_play_take_a_filler() -> None:
    exp = {"game": "el_farol_bar", "matchup": "pairs", "agents": ["allc", "alld"]}
    err = spec_error(sweep(exp))
    assert err.field == "experiments[0].filler" and "random" in err.message
    assert seatings({**exp, "filler": "rnd"}) == [("allc", "alld", "rnd", "rnd")]
    assert seatings({**exp, "matchup": "self", "filler": "rnd"}) == [
        ("allc", "allc", "rnd", "rnd"), ("alld", "alld", "rnd", "rnd"),
    ]


def test_design_errors_name_the_field() -> None:
    err = spec_error(sweep({"game": "prisoners", "matchup": "versus", "agents": ["tft"]}))
    assert err.field == "experiments[0].opponents"
    err = spec_error(sweep({"game": "prisoners", "agents": ["tft"], "opponents": ["alld"]}))
    assert err.field == "experiments[0].opponents" and "versus" in err.message
    err = spec_error(sweep({"game": "prisoners", "matchup": "versus", "agents": ["tft"],
                            "opponents": ["nobody"]}))
    assert err.field == "experiments[0].opponents" and "nobody" in err.message
    err = spec_error(sweep({"game": "prisoners", "matchup": "pairs", "agents": ["tft"]}))
    assert err.field == "experiments[0].agents"


# ------------------------------------------------------------------ conditions
async def test_conditions_are_a_grid_axis_scaling_or_framing_the_prompt(tmp_path: Path) -> None:
    data = sweep({**KNOWN_PD, "rounds": 2, "matchup": [["allc", "allc"]],
                  "condition": ["baseline", "payoff_10x", "goal_fair"]})
    store, matches = await run(tmp_path, data)
    by_condition: dict[str, dict[str, Any]] = {}
    for m in matches:
        cond = __import__("json").loads(m["condition"]).get("condition", "baseline")
        by_condition[cond] = m
    assert set(by_condition) == {"baseline", "payoff_10x", "goal_fair"}
    totals = {c: [s["payoff"] for s in store.seats(m["id"])] for c, m in by_condition.items()}
    assert totals["baseline"] == [6, 6] and totals["goal_fair"] == [6, 6]
    assert totals["payoff_10x"] == [60, 60]
    fair = get_condition("goal_fair").text
    prompts = {c: first_prompt(store.decisions(m["id"])[0]) for c, m in by_condition.items()}
    assert fair in prompts["goal_fair"] and fair not in prompts["baseline"]
    assert "you get 30 points" in prompts["payoff_10x"]


def test_condition_errors_name_the_field() -> None:
    err = spec_error(sweep({"game": "prisoners", "agents": ["tft"], "condition": "payoff_2x"}))
    assert err.field == "experiments[0].condition" and "payoff_10x" in err.message
    err = spec_error(sweep({"game": "prisoners", "agents": ["tft"], "condition": "temp_0"}))
    assert err.field == "experiments[0].condition" and "temperature" in err.message
    err = spec_error(sweep({"game": "prisoners", "agents": ["tft"], "condition": "payoff_10x",
                            "scale": 3}))
    assert err.field == "experiments[0].condition" and "scale" in err.message


# ------------------------------------------------------------------ CLI
BAD = {
    "horizon": ('horizon = "finite"\nrounds = 3\n', "experiments[0].horizon"),
    "answer": ('answer = "pure"\n', "experiments[0].answer"),
    "condition": ('condition = "cover_space"\n', "experiments[0].condition"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_new_fields_exit_2_and_write_nothing(case: str, tmp_path: Path) -> None:
    extra, field = BAD[case]
    text = textwrap.dedent("""
        name = "bad"
        [agents.tft]
        strategy = "tit_for_tat"
        [[experiments]]
        game = "pd_canonical"
        mechanism = "repetition"
        agents = ["tft"]
    """) + extra
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    db = tmp_path / "out.db"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(path),
                             "--db", str(db)], capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 2, result.stderr + result.stdout
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and field in lines[0], result.stderr
    assert not db.exists()


def test_list_games_shows_seed003_matrix_games() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-m", "coop_tui.cli", "list", "games"],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    for key in ("pd_harsh", "pd_harsh_paper", "stag_hunt_standard", "chicken_high_stakes",
                "bos_transposed", "repeated_trust", "diners_dilemma", "el_farol_bar",
                "focal_point", "chicken_sp"):
        assert re.search(rf"\b{key}\b", result.stdout), key
