"""The strategic personalities paper's binary and small matrix games as its public code runs them.

Each payoff rule of FelipeMAffonso/strategic-personalities (``environments/games``) is
restated here independently (a table or a few lines) and compared cell by cell with our
games; then every game is played through the real sweep runner and store with
strategies, the strategic personalities paper's known-horizon choice protocol and, where the published trial
table holds a row whose moves are determined, that row's totals.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from coop_tui.games import game_keys, get_game, load_game
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep

# (row action, column action) -> (row payoff, column payoff); action 0 is listed first
# in the strategic personalities paper's options (cooperate, stag, swerve, ballet, trust).
AS_RUN: dict[str, dict[tuple[int, int], tuple[float, float]]] = {
    "pd_canonical": {(0, 0): (3, 3), (0, 1): (0, 5), (1, 0): (5, 0), (1, 1): (1, 1)},
    "pd_harsh": {(0, 0): (8, 8), (0, 1): (0, 10), (1, 0): (10, 0), (1, 1): (5, 5)},
    "pd_medium": {(0, 0): (6, 6), (0, 1): (0, 10), (1, 0): (10, 0), (1, 1): (2, 2)},
    "pd_mild": {(0, 0): (8, 8), (0, 1): (0, 10), (1, 0): (10, 0), (1, 1): (2, 2)},
    "stag_hunt_standard": {(0, 0): (10, 10), (0, 1): (0, 7), (1, 0): (7, 0), (1, 1): (7, 7)},
    "stag_hunt_risky": {(0, 0): (15, 15), (0, 1): (0, 7), (1, 0): (7, 0), (1, 1): (7, 7)},
    "chicken_sp": {(0, 0): (3, 3), (0, 1): (1, 5), (1, 0): (5, 1), (1, 1): (-10, -10)},
    "chicken_high_stakes": {(0, 0): (3, 3), (0, 1): (1, 5), (1, 0): (5, 1), (1, 1): (-50, -50)},
    "bos_standard": {(0, 0): (7, 10), (0, 1): (0, 0), (1, 0): (0, 0), (1, 1): (10, 7)},
    "bos_transposed": {(0, 0): (10, 7), (0, 1): (0, 0), (1, 0): (0, 0), (1, 1): (7, 10)},
    "repeated_trust": {(0, 0): (8, 8), (0, 1): (0, 12), (1, 0): (12, 0), (1, 1): (3, 3)},
    "matching_pennies": {(0, 0): (1, -1), (0, 1): (-1, 1), (1, 0): (-1, 1), (1, 1): (1, -1)},
}
PAPER_TEXT: dict[str, dict[tuple[int, int], tuple[float, float]]] = {
    "pd_harsh_paper": {(0, 0): (3, 3), (0, 1): (0, 7), (1, 0): (7, 0), (1, 1): (1, 1)},
    "pd_medium_paper": {(0, 0): (3, 3), (0, 1): (0, 6), (1, 0): (6, 0), (1, 1): (1, 1)},
    "pd_mild_paper": {(0, 0): (3, 3), (0, 1): (0, 4), (1, 0): (4, 0), (1, 1): (2, 2)},
    "stag_hunt_standard_paper": {(0, 0): (4, 4), (0, 1): (0, 3), (1, 0): (3, 0), (1, 1): (2, 2)},
    "stag_hunt_risky_paper": {(0, 0): (5, 5), (0, 1): (0, 4), (1, 0): (4, 0), (1, 1): (3, 3)},
}


@pytest.mark.parametrize("key", [*AS_RUN, *PAPER_TEXT])
def test_two_player_tables_match_cell_by_cell(key: str) -> None:
    table = {**AS_RUN, **PAPER_TEXT}[key]
    game = get_game(key)
    assert game.action_counts == (2, 2)
    for profile, expected in table.items():
        assert game.payoff(profile) == expected, (key, profile)


def diners_rule(orders: tuple[str, ...]) -> list[float]:
    """The strategic personalities paper's code: enjoyment 15 (cheap) / 20 (costly) minus the bill (10 / 20 per
    dish) split over all diners."""
    bill = sum(20 if o == "costly" else 10 for o in orders)
    return [(20 if o == "costly" else 15) - bill / len(orders) for o in orders]


def el_farol_rule(choices: tuple[str, ...]) -> list[float]:
    """The strategic personalities paper's code: goers get 10 if the share going is at most 0.6, else 0; stayers 5."""
    share = sum(c == "go" for c in choices) / len(choices)
    return [(10 if share <= 0.6 else 0) if c == "go" else 5 for c in choices]


def test_diners_dilemma_is_the_code_rule_for_every_order_profile() -> None:
    game = get_game("diners_dilemma")
    assert game.n_players == 4 and game.action_names[0] == ("Cheap", "Costly")
    for profile in itertools.product((0, 1), repeat=4):
        names = tuple("costly" if a else "cheap" for a in profile)
        assert list(game.payoff(profile)) == pytest.approx(diners_rule(names))
    # hand-picked: one costly diner among three cheap ones
    assert game.payoff((1, 0, 0, 0)) == (7.5, 2.5, 2.5, 2.5)
    assert game.payoff((0, 0, 0, 0)) == (5, 5, 5, 5)
    assert game.payoff((1, 1, 1, 1)) == (0, 0, 0, 0)


def test_diners_dilemma_paper_text_numbers() -> None:
    game = get_game("diners_dilemma_paper")
    assert game.payoff((0, 0, 0, 0)) == (0, 0, 0, 0)  # value 5 - cost 5
    assert game.payoff((1, 1, 1, 1)) == (-3, -3, -3, -3)  # value 12 - cost 15
    assert game.payoff((1, 0, 0, 0)) == (12 - 30 / 4, 5 - 30 / 4, 5 - 30 / 4, 5 - 30 / 4)


def test_el_farol_is_the_code_rule_for_every_attendance() -> None:
    game = get_game("el_farol_bar")
    assert game.n_players == 4 and game.action_names[0] == ("Go", "Stay")
    for profile in itertools.product((0, 1), repeat=4):
        names = tuple("stay" if a else "go" for a in profile)
        assert list(game.payoff(profile)) == pytest.approx(el_farol_rule(names))
    assert game.payoff((0, 0, 1, 1)) == (10, 10, 5, 5)  # 2 of 4 go: not crowded
    assert game.payoff((0, 0, 0, 1)) == (0, 0, 0, 5)  # 3 of 4: crowded


def test_focal_point_pays_only_a_match() -> None:
    game = get_game("focal_point")
    assert game.action_counts == (4, 4)
    for a, b in itertools.product(range(4), repeat=2):
        assert game.payoff((a, b)) == ((10, 10) if a == b else (0, 0))
    assert not game.has_cooperation


def test_bad_parameters_name_the_field() -> None:
    with pytest.raises(ValueError, match="threshold"):
        load_game("el_farol_bar", threshold=1.5)
    with pytest.raises(ValueError, match="players"):
        load_game("diners_dilemma", players=1)


def test_every_seed003_matrix_game_is_registered() -> None:
    keys = set(game_keys())
    wanted = {*AS_RUN, *PAPER_TEXT, "diners_dilemma", "diners_dilemma_paper",
              "el_farol_bar", "focal_point"}
    assert wanted <= keys


# ------------------------------------------------------------------ played
STRATEGIES: dict[str, dict[str, Any]] = {
    "allc": {"strategy": "always_cooperate"},
    "alld": {"strategy": "always_defect"},
    "tft": {"strategy": "tit_for_tat"},
    "alt": {"strategy": "alternator"},
    "mirror": {"strategy": "mirror", "params": {"opening": "cooperate"}},
    "cycle": {"strategy": "cycle"},
    "first": {"strategy": "mixed", "params": {"probs": [1, 0, 0, 0]}},
    "uniform": {"strategy": "mixed"},
}


async def play(tmp_path: Any, game: str, seats: list[str], rounds: int = 10,
               **extra: Any) -> tuple[Store, dict[str, Any]]:
    data = {
        "name": f"sp-{game}", "seed": 11, "agents": STRATEGIES,
        "experiments": [{
            "game": game, "mechanism": "repetition", "horizon": "known", "rounds": rounds,
            "answer": "choice", "randomize_labels": "trial", "matchup": [seats], **extra,
        }],
    }
    store = Store(tmp_path / f"{game}.db")
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    (match,) = store.matches(summary.run_id)
    assert match["status"] == "done", match["error"]
    return store, match


def seat_totals(store: Store, match: dict[str, Any]) -> list[float]:
    return [s["payoff"] for s in store.seats(match["id"])]


@pytest.mark.parametrize("key", list(AS_RUN))
async def test_mirror_against_a_cycle_pays_the_table(tmp_path: Any, key: str) -> None:
    store, match = await play(tmp_path, key, ["mirror", "cycle"], rounds=6)
    # cycle: action 0, 1, 0, 1 ...; mirror: action 0, then the cycle's previous move
    alt = [0, 1, 0, 1, 0, 1]
    tft = [0, *alt[:-1]]
    table = AS_RUN[key]
    expected = [sum(table[(a, b)][i] for a, b in zip(tft, alt, strict=True)) for i in (0, 1)]
    assert seat_totals(store, match) == pytest.approx(expected)
    played = sorted(store.rounds(match["id"]), key=lambda r: (r["round"], r["seat"]))
    assert [r["action"] for r in played if r["seat"] == 0] == tft


async def test_diners_row_of_the_published_table(tmp_path: Any) -> None:
    """Published: gpt-4.1-mini vs always_cooperate, 10 rounds, the model ordering costly
    every round: totals 75 and 25 (the strategy fills the other three seats)."""
    store, match = await play(tmp_path, "diners_dilemma", [], matchup="versus",
                              agents=["alld"], opponents=["allc"])
    totals = seat_totals(store, match)
    assert totals == [75, 25, 25, 25]


async def test_el_farol_one_goer_among_stayers(tmp_path: Any) -> None:
    store, match = await play(tmp_path, "el_farol_bar", ["allc", "alld", "alld", "alld"])
    assert seat_totals(store, match) == [100, 50, 50, 50]


async def test_stag_hunt_risky_mirror_row_of_the_published_table(tmp_path: Any) -> None:
    """Published: claude-haiku-4.5 vs mirror, all stag for 10 rounds: 150 and 150."""
    store, match = await play(tmp_path, "stag_hunt_risky", ["allc", "tft"])
    assert seat_totals(store, match) == [150, 150]


async def test_focal_point_played_with_four_letters(tmp_path: Any) -> None:
    store, match = await play(tmp_path, "focal_point", ["first", "first"], rounds=3)
    assert seat_totals(store, match) == [30, 30]
    for d in store.decisions(match["id"]):
        assert len(d.labels) == 4 and len(set(d.labels)) == 4
        assert all(len(label) == 1 and label.isupper() for label in d.labels)
    store, match = await play(tmp_path, "focal_point", ["first", "uniform"], rounds=8)
    for r in store.rounds(match["id"]):
        assert r["payoff"] in (0, 10)
