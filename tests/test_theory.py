"""Equilibria, dominance, welfare and the b-similarity claims of similarity signals section 3.

Expected values are derived by hand in the comments. For a 2x2 dilemma with payoffs
R, S, T, P, a deviation from full cooperation that puts weight q on Defect, while the
co-player copies it with probability b, gains
    ((T - R) + b (S - R)) q + b (R - S - T + P) q^2,
so the slope at q = 0 and the curvature decide b*.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from coop_tui.analysis.theory import (
    b_star,
    is_b_similarity_equilibrium,
    is_nash,
    iterated_elimination,
    mixed_nash_equilibria,
    pure_nash_equilibria,
    satisfies_theorem1,
    similarity_gain,
    theorem1_bound,
    theory_summary,
    welfare_optimal_symmetric,
)
from coop_tui.games import game_keys, get_game, load_game
from coop_tui.games.base import bimatrix

SYMMETRIC = [k for k in game_keys() if get_game(k).symmetric]


def names(game, profiles):
    return {tuple(game.action_names[i][a] for i, a in enumerate(p)) for p in profiles}


# --------------------------------------------------------------------------- Nash
@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("prisoners", {("Defect", "Defect")}),
        ("stag_hunt", {("Stag", "Stag"), ("Hare", "Hare")}),
        ("chicken", {("Swerve", "Straight"), ("Straight", "Swerve")}),
        ("trust", {("Keep", "Keep")}),
        ("travelers", {("Claim 2", "Claim 2")}),
        ("battle_of_sexes", {("Concert", "Concert"), ("Stadium", "Stadium")}),
        ("matching_pennies", set()),
        ("public_good", {("Keep", "Keep", "Keep")}),
    ],
)
def test_pure_nash(key: str, expected: set) -> None:
    game = get_game(key)
    assert names(game, pure_nash_equilibria(game)) == expected


def test_pure_nash_of_public_good_with_alpha_above_n_is_full_contribution() -> None:
    game = load_game("public_good", players=4, alpha=5)  # alpha > n: contributing pays
    assert pure_nash_equilibria(game) == [(0, 0, 0, 0)]


@pytest.mark.parametrize("method", ["support", "vertex"])
def test_mixed_nash_equilibria(method: str) -> None:
    ((row, col),) = mixed_nash_equilibria(get_game("matching_pennies"), method)
    np.testing.assert_allclose(row, [0.5, 0.5])
    np.testing.assert_allclose(col, [0.5, 0.5])

    # Stag hunt: stag with p makes 5p = 3, so p = 3/5; plus the two pure equilibria
    found = mixed_nash_equilibria(get_game("stag_hunt"), method)
    stag = sorted(round(r[0], 9) for r, _ in found)
    assert stag == [0.0, 0.6, 1.0]

    # Chicken: swerve with p makes p - 1 = 11p - 10, so p = 0.9
    found = mixed_nash_equilibria(get_game("chicken"), method)
    assert any(np.allclose(r, [0.9, 0.1]) and np.allclose(c, [0.9, 0.1]) for r, c in found)
    assert len(found) == 3

    # Battle of the Sexes: player 1 on the concert with 10/17, player 2 with 7/17
    found = mixed_nash_equilibria(get_game("battle_of_sexes"), method)
    assert any(
        np.allclose(r, [10 / 17, 7 / 17]) and np.allclose(c, [7 / 17, 10 / 17]) for r, c in found
    )


def test_mixed_nash_rejects_more_than_two_players_and_checks_results() -> None:
    with pytest.raises(ValueError, match="two-player"):
        mixed_nash_equilibria(get_game("public_good"))
    with pytest.raises(ValueError, match="unknown method"):
        mixed_nash_equilibria(get_game("prisoners"), "magic")
    for key in ("prisoners", "trust", "travelers"):
        game = get_game(key)
        found = mixed_nash_equilibria(game)
        assert found and all(is_nash(game, [r, c]) for r, c in found)
    assert not is_nash(get_game("prisoners"), [0, 0])


# --------------------------------------------------------------------------- dominance
def test_iterated_strict_dominance() -> None:
    assert iterated_elimination(get_game("prisoners")) == ((1,), (1,))
    # Trust: player 2's Give is dominated first, then player 1's Give (CoopEval)
    assert iterated_elimination(get_game("trust")) == ((1,), (1,))
    assert iterated_elimination(get_game("public_good")) == ((1,), (1,), (1,))
    assert iterated_elimination(get_game("stag_hunt")) == ((0, 1), (0, 1))
    # Travelers: nothing is strictly dominated ...
    assert iterated_elimination(get_game("travelers")) == ((0, 1, 2, 3), (0, 1, 2, 3))


def test_iterated_weak_dominance_unravels_travelers_to_the_lowest_claim() -> None:
    game = get_game("travelers")
    assert iterated_elimination(game, weak=True) == ((0,), (0,))
    assert game.action_names[0][0] == "Claim 2"
    assert iterated_elimination(load_game("travelers", levels=7), weak=True) == ((0,), (0,))
    down = load_game("travelers", levels=7, order="descending")
    assert iterated_elimination(down, weak=True) == ((6,), (6,))


def test_mixed_dominance_removes_an_action_no_pure_action_dominates() -> None:
    # Row "Middle" pays 1 either way; an even mix of Top and Bottom pays 1.5 either way.
    game = bimatrix(
        "mix",
        "mix",
        "",
        ("Top", "Middle", "Bottom"),
        ("L", "R"),
        [[[3, 0], [0, 1]], [[1, 0], [1, 0]], [[0, 1], [3, 0]]],
        ((), ()),
        (None, None),
    )
    assert iterated_elimination(game) == ((0, 1, 2), (0, 1))
    assert iterated_elimination(game, mixed=True)[0] == (0, 2)
    with pytest.raises(ValueError, match="strict"):
        iterated_elimination(game, weak=True, mixed=True)


# --------------------------------------------------------------------------- welfare
@pytest.mark.parametrize(
    ("key", "action"),
    [
        ("prisoners", 0),
        ("stag_hunt", 0),
        ("chicken", 0),
        ("travelers", 3),
        ("public_good", 0),
        ("pd_harsh_paper", 0),
        ("battle_of_sexes", 0),
    ],
)
def test_welfare_optimal_symmetric_pure_profile(key: str, action: int) -> None:
    game = get_game(key)
    assert welfare_optimal_symmetric(game) == (action,) * game.n_players


# --------------------------------------------------------------------------- b-similarity
def test_prisoners_b_star_is_one_half_exactly() -> None:
    assert b_star(get_game("prisoners")) == 0.5


def test_prisoners_cooperation_is_not_nash_but_is_a_high_similarity_equilibrium() -> None:
    game = get_game("prisoners")
    assert not is_b_similarity_equilibrium(game, "Cooperate", 0.0)
    assert not is_b_similarity_equilibrium(game, "Cooperate", 0.49)
    for b in (0.5, 0.51, 0.75, 1.0):
        assert is_b_similarity_equilibrium(game, "Cooperate", b)
    # Gain of a deviation with weight q on Defect is q (1 - 2b): linear in q
    gain, dev = similarity_gain(game, 0, 0.25)
    assert gain == pytest.approx(0.5)
    np.testing.assert_allclose(dev, [0, 1])


def test_prisoners_cooperation_is_the_only_symmetric_equilibrium_above_one_half() -> None:
    # From Defect, a deviation with weight p on Cooperate gains p (2b - 1).
    game = get_game("prisoners")
    assert is_b_similarity_equilibrium(game, "Defect", 0.5)
    for b in (0.55, 0.7, 0.9, 1.0):
        equilibria = [
            p for p in np.linspace(0, 1, 21) if is_b_similarity_equilibrium(game, [p, 1 - p], b)
        ]
        assert equilibria == [1.0]


@pytest.mark.parametrize(
    ("key", "mixed", "pure"),
    [
        # dilemmas (see module doc): slope (T - R) + b (S - R), curvature b (R - S - T + P)
        ("prisoners", 1 / 2, 1 / 2),
        ("pd_canonical", 2 / 3, 1 / 2),  # slope 2 - 3b, curvature -b
        ("pd_medium_paper", 1.0, 3 / 5),  # slope 3 (1 - b): only exact copies cooperate
        ("pd_mild_paper", 1 / 2, 1 / 2),  # convex: the pure deviation 1 - 2b decides
        ("ipd", 1 / 2, 2 / 5),  # slope 2 - 4b; pure: 2 - 5b
        ("pd_harsh_paper", None, 2 / 3),  # T + S > 2R: mixing C/D beats CC even among copies
        ("stag_hunt", 0.0, 0.0),  # (Stag, Stag) is already Nash
        ("stag_hunt_risky_paper", 0.0, 0.0),
        ("chicken", 1.0, 1 / 11),  # slope 1 - b > 0 for any b < 1; pure: 1 - 11b
        ("travelers", 1 / 2, 1 / 2),  # undercut by one claim: 1 - 2b
        ("public_good", 1 / 2, 1 / 2),  # (n - alpha) / ((n - 1) alpha)
        ("trust", None, None),
        ("matching_pennies", None, None),
        ("battle_of_sexes", None, None),
    ],
)
def test_b_star_on_built_in_games(key: str, mixed: float | None, pure: float | None) -> None:
    game = get_game(key)
    for value, expected in ((b_star(game), mixed), (b_star(game, mixed=False), pure)):
        if expected is None:
            assert value is None
        else:
            assert value == pytest.approx(expected, abs=1e-9)


def test_chicken_small_mixed_deviations_pay_below_full_similarity() -> None:
    # gain(q) = q (1 - b) - 10 b q^2, maximal at q = (1 - b) / (20 b)
    game = get_game("chicken")
    gain, dev = similarity_gain(game, "Swerve", 0.5)
    assert dev[1] == pytest.approx(0.05, abs=1e-6)
    assert gain == pytest.approx(0.0125, abs=1e-9)
    assert similarity_gain(game, "Swerve", 0.5, mixed=False)[0] == 0.0
    assert is_b_similarity_equilibrium(game, "Swerve", 0.5, mixed=False)
    assert not is_b_similarity_equilibrium(game, "Swerve", 0.99)


@pytest.mark.parametrize(("players", "alpha"), [(3, 1.5), (4, 2.0), (5, 1.25), (6, 4.0)])
def test_public_good_b_star_matches_closed_form(players: int, alpha: float) -> None:
    # all contribute pays alpha; free-riding with prob q while each co-player follows
    # with prob b q gains q (1 - alpha/n - (n-1) b alpha/n)
    game = load_game("public_good", players=players, alpha=alpha)
    expected = (players - alpha) / ((players - 1) * alpha)
    assert b_star(game) == pytest.approx(expected, abs=1e-9)


def test_b_star_ignores_scale_and_falls_with_the_cooperation_bonus() -> None:
    # Prisoners with bonus c: slope 1 - b (2 + c), so b* = 1 / (2 + c)
    assert b_star(load_game("prisoners", scale=10)) == 0.5
    for c in (0.5, 1, 2, 4):
        assert b_star(load_game("prisoners", bonus=c)) == pytest.approx(1 / (2 + c), abs=1e-9)


def test_lemma2_zero_similarity_equilibria_are_the_symmetric_nash_equilibria() -> None:
    for key in SYMMETRIC:
        game = get_game(key)
        nash = set(pure_nash_equilibria(game))
        for a in range(game.action_counts[0]):
            profile = (a,) * game.n_players
            assert is_b_similarity_equilibrium(game, a, 0.0) == (profile in nash), (key, a)
    # mixed symmetric Nash equilibria too
    assert is_b_similarity_equilibrium(get_game("stag_hunt"), [0.6, 0.4], 0.0)
    assert is_b_similarity_equilibrium(get_game("chicken"), [0.9, 0.1], 0.0)
    assert not is_b_similarity_equilibrium(get_game("chicken"), [0.8, 0.2], 0.0)


def test_proposition3_full_similarity_picks_the_best_symmetric_profile() -> None:
    for key in SYMMETRIC:
        game = get_game(key)
        best = welfare_optimal_symmetric(game)[0]
        for a in range(game.action_counts[0]):
            if a != best and not np.isclose(
                sum(game.payoff((a,) * game.n_players)),
                sum(game.payoff((best,) * game.n_players)),
            ):
                assert not is_b_similarity_equilibrium(game, a, 1.0), (key, a)
    # harsh PD: the symmetric mix with 1/6 on Defect pays 3 + 1/12 > 3 among copies
    harsh = get_game("pd_harsh_paper")
    gain, dev = similarity_gain(harsh, "Cooperate", 1.0)
    assert gain == pytest.approx(1 / 12, abs=1e-9)
    assert dev[1] == pytest.approx(1 / 6, abs=1e-6)


def test_theorem1_holds_on_built_in_games() -> None:
    checked = 0
    for key in SYMMETRIC:
        game = get_game(key)
        k = game.action_counts[0]
        strategies = [*range(k), np.full(k, 1 / k)]
        for b in np.linspace(0, 1, 11):
            for s in strategies:
                assert satisfies_theorem1(game, s, b), (key, s, b)
                checked += is_b_similarity_equilibrium(game, s, b)
    assert checked > 50  # the check is not vacuous
    assert theorem1_bound(get_game("prisoners"), 0.5) == pytest.approx(2 * 3 * 0.5)
    assert theorem1_bound(get_game("public_good"), 0.0) == pytest.approx(4 * 2)


def test_per_co_player_similarities_and_input_checks() -> None:
    game = load_game("public_good")
    # free-riding gains q (1/2 - (b1 + b2) / 2): cooperation holds iff b1 + b2 >= 1
    assert is_b_similarity_equilibrium(game, 0, [0.5, 0.5])
    assert is_b_similarity_equilibrium(game, 0, [1.0, 0.0])
    assert not is_b_similarity_equilibrium(game, 0, [0.4, 0.4])
    with pytest.raises(ValueError, match="one value per co-player"):
        is_b_similarity_equilibrium(game, 0, [0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        is_b_similarity_equilibrium(game, 0, 1.5)
    with pytest.raises(ValueError, match="symmetric"):
        is_b_similarity_equilibrium(get_game("trust"), 0, 0.5)
    with pytest.raises(ValueError, match="sum to 1"):
        is_b_similarity_equilibrium(get_game("prisoners"), [0.5, 0.6], 0.5)


def test_user_game_b_star(tmp_path) -> None:
    from importlib import resources

    path = resources.files("coop_tui.data") / "games" / "example_snowdrift.toml"
    game = load_game(str(path))
    # Snowdrift R=3, S=2, T=4, P=0: slope (1 - b), so only copies keep digging together;
    # counting pure deviations only, 1 - 4b gives 1/4.
    assert b_star(game) == 1.0
    assert b_star(game, mixed=False) == pytest.approx(0.25)


def test_theory_summary_is_json_ready() -> None:
    summary = theory_summary(get_game("prisoners"))
    json.dumps(summary)
    assert summary["pure_nash"] == [["Defect", "Defect"]]
    assert summary["b_star"] == 0.5
    assert summary["welfare_optimal_symmetric"] == ["Cooperate", "Cooperate"]
    assert theory_summary(get_game("public_good"))["b_star"] == 0.5
