"""Built-in games against the seeds' payoff tables, transforms, registry and user files."""

from __future__ import annotations

import itertools
import math
import textwrap
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from coop_tui.games import (
    GameError,
    game_family,
    game_keys,
    game_parameters,
    get_game,
    load_game,
    register_game,
)
from coop_tui.games.base import Game, bimatrix

C, D = "Cooperate", "Defect"

# Cell by cell, (seat 1 action, seat 2 action) -> (seat 1 payoff, seat 2 payoff).
SEED_TABLES: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    # the similarity signals paper's Table 3 / CoopEval Table 1
    "prisoners": {(C, C): (2, 2), (C, D): (0, 3), (D, C): (3, 0), (D, D): (1, 1)},
    "stag_hunt": {
        ("Stag", "Stag"): (5, 5),
        ("Stag", "Hare"): (0, 3),
        ("Hare", "Stag"): (3, 0),
        ("Hare", "Hare"): (3, 3),
    },
    "chicken": {
        ("Swerve", "Swerve"): (0, 0),
        ("Swerve", "Straight"): (-1, 1),
        ("Straight", "Swerve"): (1, -1),
        ("Straight", "Straight"): (-10, -10),
    },
    # CoopEval Table 1 and CoopEval's config (GG / GK / KG / KK)
    "trust": {
        ("Give", "Give"): (10, 10),
        ("Give", "Keep"): (0, 20),
        ("Keep", "Give"): (6, 2),
        ("Keep", "Keep"): (4, 4),
    },
    # the strategic personalities paper supplementary note 1 (its text; the as-run tables: test_seed003_games.py)
    "pd_canonical": {(C, C): (3, 3), (C, D): (0, 5), (D, C): (5, 0), (D, D): (1, 1)},
    "pd_harsh_paper": {(C, C): (3, 3), (C, D): (0, 7), (D, C): (7, 0), (D, D): (1, 1)},
    "pd_medium_paper": {(C, C): (3, 3), (C, D): (0, 6), (D, C): (6, 0), (D, D): (1, 1)},
    "pd_mild_paper": {(C, C): (3, 3), (C, D): (0, 4), (D, C): (4, 0), (D, D): (2, 2)},
    "stag_hunt_risky_paper": {
        ("Stag", "Stag"): (5, 5),
        ("Stag", "Hare"): (0, 4),
        ("Hare", "Stag"): (4, 0),
        ("Hare", "Hare"): (3, 3),
    },
    "battle_of_sexes": {
        ("Concert", "Concert"): (10, 7),
        ("Concert", "Stadium"): (0, 0),
        ("Stadium", "Concert"): (0, 0),
        ("Stadium", "Stadium"): (7, 10),
    },
    "matching_pennies": {
        ("Heads", "Heads"): (1, -1),
        ("Heads", "Tails"): (-1, 1),
        ("Tails", "Heads"): (-1, 1),
        ("Tails", "Tails"): (1, -1),
    },
    # the super-additive cooperation paper's Table 1
    "ipd": {(C, C): (3, 3), (C, D): (-1, 5), (D, C): (5, -1), (D, D): (0, 0)},
    # CoopEval Table 1(d), rows and columns are claims
    "travelers": {
        (f"Claim {r}", f"Claim {c}"): cell
        for (r, c), cell in {
            (2, 2): (2, 2),
            (2, 3): (4, 0),
            (2, 4): (4, 0),
            (2, 5): (4, 0),
            (3, 2): (0, 4),
            (3, 3): (3, 3),
            (3, 4): (5, 1),
            (3, 5): (5, 1),
            (4, 2): (0, 4),
            (4, 3): (1, 5),
            (4, 4): (4, 4),
            (4, 5): (6, 2),
            (5, 2): (0, 4),
            (5, 3): (1, 5),
            (5, 4): (2, 6),
            (5, 5): (5, 5),
        }.items()
    },
}

# the similarity signals paper's Table 3(d): 3-player PublicGood, alpha 3/2; (P1, P2, P3) -> payoffs
PUBLIC_GOOD_TABLE = {
    ("C", "C", "C"): (1.5, 1.5, 1.5),
    ("C", "D", "C"): (1, 2, 1),
    ("C", "C", "D"): (1, 1, 2),
    ("C", "D", "D"): (0.5, 1.5, 1.5),
    ("D", "C", "C"): (2, 1, 1),
    ("D", "D", "C"): (1.5, 1.5, 0.5),
    ("D", "C", "D"): (1.5, 0.5, 1.5),
    ("D", "D", "D"): (1, 1, 1),
}

SEED003_MATRIX_KEYS = [  # the strategic personalities paper's binary / small matrix games as run (test_seed003_games.py)
    "pd_harsh", "pd_medium", "pd_mild", "stag_hunt_standard", "stag_hunt_risky",
    "stag_hunt_standard_paper", "chicken_sp", "chicken_high_stakes", "bos_standard",
    "bos_transposed", "repeated_trust", "diners_dilemma", "diners_dilemma_paper",
    "el_farol_bar", "focal_point",
]
ALL_KEYS = sorted({*SEED_TABLES, "public_good", *SEED003_MATRIX_KEYS})


def cell(game: Game, names: tuple[str, ...]) -> tuple[float, ...]:
    return game.payoff([game.action_names[i].index(a) for i, a in enumerate(names)])


# --------------------------------------------------------------------------- built-ins
def test_registry_lists_exactly_the_built_in_games_sorted() -> None:
    from coop_tui.games.kinds import ProtocolGame  # move-by-move games: test_seed003_games

    assert [k for k in game_keys() if not isinstance(get_game(k), ProtocolGame)] == ALL_KEYS


@pytest.mark.parametrize("key", sorted(SEED_TABLES))
def test_two_player_tables_match_the_seeds_cell_by_cell(key: str) -> None:
    game = get_game(key)
    expected = SEED_TABLES[key]
    assert game.n_players == 2
    assert len(expected) == math.prod(game.action_counts)  # every cell is covered
    for names, payoff in expected.items():
        assert cell(game, names) == pytest.approx(payoff), names


def test_public_good_matches_seed_000_table_cell_by_cell() -> None:
    game = get_game("public_good")
    assert game.action_counts == (2, 2, 2)
    short = {"C": "Contribute", "D": "Keep"}
    for names, payoff in PUBLIC_GOOD_TABLE.items():
        assert cell(game, tuple(short[x] for x in names)) == pytest.approx(payoff)


def test_public_good_formula_for_other_sizes() -> None:
    game = load_game("public_good", players=5, alpha=2.0)
    assert game.params == {"players": 5, "alpha": 2}
    for profile in itertools.product((0, 1), repeat=5):
        k = profile.count(0)
        expected = [2.0 * k / 5 + (1 if a == 1 else 0) for a in profile]
        assert game.payoff(profile) == pytest.approx(expected)


@pytest.mark.parametrize("key", ALL_KEYS)
def test_every_game_is_complete_and_cooperation_is_action_zero(key: str) -> None:
    game = get_game(key)
    assert game.key == key
    assert game.title and len(game.description) > 40
    assert game_family(key).summary
    if game.has_cooperation:
        for seat in range(game.n_players):
            # Travelers numbers claims upwards as CoopEval does: the top claim cooperates
            top = game.action_counts[seat] - 1 if key == "travelers" else 0
            assert top in game.cooperative[seat]
            assert game.defect[seat] not in game.cooperative[seat]
    else:
        assert key in {"matching_pennies", "battle_of_sexes", "bos_standard", "bos_transposed",
                       "focal_point"}
        assert game.cooperative == (frozenset(),) * game.n_players


def test_symmetric_games_are_recognised() -> None:
    asymmetric = {"trust", "matching_pennies", "battle_of_sexes", "bos_standard",
                  "bos_transposed"}
    for key in ALL_KEYS:
        assert get_game(key).symmetric == (key not in asymmetric), key
    assert load_game("public_good", players=6).symmetric


def test_travelers_levels_low_high_and_reward() -> None:
    # CoopEval's order: A0 is the lowest claim, the highest claim cooperates
    game = load_game("travelers", levels=6)
    assert game.action_names[0] == tuple(f"Claim {c}" for c in range(2, 8))
    assert game.defect == (0, 0) and game.cooperative[0] == frozenset({5})
    assert game.action_notes is not None and game.action_notes[0][0] == "correspond to the number 2"
    # our earlier wording, as an option (a parameter only when not CoopEval's)
    claim = load_game("travelers", levels=6, wording="claim")
    assert claim.action_notes is not None and claim.action_notes[0][0] == "claim 2"
    assert claim.payoff_rule is not None and claim.payoff_rule.startswith("Suppose you claim X")
    assert claim.params["wording"] == "claim" and "wording" not in game.params
    with pytest.raises(ValueError, match="wording must be 'number' or 'claim'"):
        load_game("travelers", wording="price")
    assert load_game("travelers", low=10, high=12).action_names[0] == (
        "Claim 10",
        "Claim 11",
        "Claim 12",
    )
    # the earlier order stays available
    down = load_game("travelers", levels=6, order="descending")
    assert down.action_names[0] == tuple(f"Claim {c}" for c in range(7, 1, -1))
    assert down.defect == (5, 5) and down.cooperative[0] == frozenset({0})
    assert cell(down, ("Claim 7", "Claim 2")) == cell(game, ("Claim 7", "Claim 2")) == (0, 4)
    assert load_game("travelers", payoff_text="table").payoff_rule is None
    with pytest.raises(ValueError, match="order"):
        load_game("travelers", order="sideways")
    custom = load_game("travelers", levels=[1, 5, 3], reward=1)
    assert custom.action_names[0] == ("Claim 1", "Claim 3", "Claim 5")
    assert cell(custom, ("Claim 5", "Claim 1")) == (0, 2)  # low - 1, low + 1
    assert cell(custom, ("Claim 3", "Claim 3")) == (3, 3)
    with pytest.raises(ValueError, match="contradicts high"):
        load_game("travelers", levels=4, low=2, high=9)
    with pytest.raises(ValueError, match="levels"):
        load_game("travelers", levels=1)
    with pytest.raises(ValueError, match="distinct"):
        load_game("travelers", levels=[2, 2, 3])


def test_battle_of_sexes_transposed_swaps_preferences() -> None:
    game = load_game("battle_of_sexes", transposed=True)
    assert cell(game, ("Concert", "Concert")) == (7, 10)
    assert cell(game, ("Stadium", "Stadium")) == (10, 7)
    assert game.params == {"transposed": True}


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"players": 1}, ValueError, "players must be at least 2"),
        ({"players": 2.5}, ValueError, "whole number"),
        ({"players": "3"}, TypeError, "whole number"),
        ({"players": True}, TypeError, "whole number"),
        ({"alpha": 0}, ValueError, "alpha must be positive"),
        ({"alpha": float("inf")}, ValueError, "finite"),
        ({"alhpa": 2}, TypeError, "did you mean 'alpha'"),
    ],
)
def test_bad_family_params_name_the_parameter(kwargs: dict, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle) as info:
        load_game("public_good", **kwargs)
    assert not isinstance(info.value, GameError)  # a parameter problem, not a game problem


def test_params_round_trip_rebuilds_the_same_game() -> None:
    for ref, kwargs in [
        ("public_good", {"players": 4, "alpha": 2.5, "scale": 3}),
        ("travelers", {"levels": 5, "bonus": 1}),
        ("travelers", {"levels": [1, 4, 9]}),
        ("battle_of_sexes", {"transposed": True}),
        ("prisoners", {}),
    ]:
        game = load_game(ref, **kwargs)
        again = load_game(game.key, **game.params)
        np.testing.assert_allclose(again.payoffs, game.payoffs)
        assert again.params == game.params


def test_game_parameters_lists_family_params_and_transforms() -> None:
    assert game_parameters("public_good") == {
        "players": 3,
        "alpha": 1.5,
        "payoff_text": "rule",
        "scale": None,
        "bonus": None,
    }
    assert set(game_parameters("prisoners")) == {"scale", "bonus"}


# --------------------------------------------------------------------------- registry
def test_unknown_key_suggests_the_closest_and_lists_known_games() -> None:
    with pytest.raises(GameError) as info:
        load_game("prisoner")
    message = str(info.value)
    assert "did you mean 'prisoners'" in message
    assert "stag_hunt" in message and "public_good" in message
    assert isinstance(info.value, ValueError)
    with pytest.raises(GameError, match="unknown game 'zzz'"):
        get_game("zzz")


def test_registering_a_new_family_makes_it_loadable() -> None:
    from coop_tui import games

    @register_game("tiny_test_game")
    def tiny(gain: float = 1.0) -> Game:
        """A throwaway game for this test."""
        return bimatrix(
            "tiny_test_game",
            "Tiny",
            "test",
            ("X", "Y"),
            ("X", "Y"),
            [[[gain, gain], [0, 0]], [[0, 0], [0, 0]]],
            ([0], [0]),
            (1, 1),
        )

    try:
        assert "tiny_test_game" in game_keys()
        game = load_game("tiny_test_game", gain=4, scale=2)
        assert game.payoff((0, 0)) == (8, 8)
        assert game.params == {"gain": 4, "scale": 2}
        with pytest.raises(RuntimeError, match="needs a default"):
            register_game("broken_test_game")(lambda x: tiny())
        with pytest.raises(RuntimeError, match="reserved"):
            register_game("broken_test_game")(lambda scale=1: tiny())
    finally:
        games._REGISTRY.pop("tiny_test_game", None)


# --------------------------------------------------------------------------- transforms
def test_scale_multiplies_every_payoff_and_is_recorded() -> None:
    base = get_game("prisoners")
    for factor in (3, 10, 0.5):
        game = load_game("prisoners", scale=factor)
        np.testing.assert_allclose(game.payoffs, base.payoffs * factor)
        assert game.params == {"scale": factor}
        assert game.key == "prisoners"
    for bad in (0, -2):
        with pytest.raises(ValueError, match="scale must be positive"):
            load_game("prisoners", scale=bad)
    with pytest.raises(TypeError, match="scale must be a number"):
        load_game("prisoners", scale="x3")


def test_bonus_pays_per_cooperating_co_player() -> None:
    game = load_game("prisoners", bonus=1.5)
    assert cell(game, (C, C)) == (3.5, 3.5)
    assert cell(game, (C, D)) == (0, 4.5)
    assert cell(game, (D, C)) == (4.5, 0)
    assert cell(game, (D, D)) == (1, 1)
    assert game.params == {"bonus": 1.5}

    pg = load_game("public_good", bonus=1)
    short = {"C": "Contribute", "D": "Keep"}
    for names, payoff in PUBLIC_GOOD_TABLE.items():
        coop = [x == "C" for x in names]
        extra = [sum(coop) - own for own in coop]
        got = cell(pg, tuple(short[x] for x in names))
        assert got == pytest.approx([p + e for p, e in zip(payoff, extra, strict=True)])


def test_scale_applies_before_bonus_and_bonus_needs_cooperation() -> None:
    game = load_game("prisoners", scale=10, bonus=1)
    assert cell(game, (C, C)) == (21, 21)
    assert cell(game, (D, C)) == (31, 0)
    with pytest.raises(ValueError, match="no(ne)? .*cooperative|cooperative action"):
        load_game("matching_pennies", bonus=1)
    assert load_game("matching_pennies", bonus=0).params == {"bonus": 0}
    assert load_game("prisoners", scale=None, bonus=None).params == {}


# --------------------------------------------------------------------------- user files
EXAMPLES = resources.files("coop_tui.data") / "games"


def test_example_snowdrift_file() -> None:
    game = load_game(str(EXAMPLES / "example_snowdrift.toml"))
    assert game.key == "snowdrift" and game.title == "Snowdrift"
    assert game.action_names == (("Dig", "Wait"), ("Dig", "Wait"))
    assert cell(game, ("Dig", "Wait")) == (2, 4)
    assert cell(game, ("Wait", "Dig")) == (4, 2)
    assert cell(game, ("Wait", "Wait")) == (0, 0)
    assert game.cooperative == (frozenset({0}),) * 2 and game.defect == (1, 1)
    assert game.symmetric


def test_example_volunteer_file_with_transforms() -> None:
    path = str(EXAMPLES / "example_volunteer.toml")
    game = load_game(path)
    assert game.n_players == 3 and game.symmetric
    assert cell(game, ("Volunteer", "Abstain", "Abstain")) == (1, 2, 2)
    assert cell(game, ("Abstain",) * 3) == (0, 0, 0)
    transformed = load_game(path, scale=2, bonus=1)
    assert cell(transformed, ("Volunteer", "Abstain", "Abstain")) == (2, 5, 5)
    assert transformed.params == {"scale": 2, "bonus": 1}
    with pytest.raises(TypeError, match="no parameters other than scale and bonus"):
        load_game(path, players=4)


def write(tmp_path: Path, text: str, name: str = "g.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def test_yaml_file_with_per_seat_actions_and_a_full_tensor(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        key: lending
        actions: [[Lend, Refuse], [Repay, Default, Flee]]
        cooperative: [[Lend], [Repay]]
        defect: [Refuse, Default]
        payoffs:
          - [[2, 2], [-1, 3], [-2, 1]]
          - [[0, 0], [0, 0], [0, -1]]
        """,
        "lend.yaml",
    )
    game = load_game(path)
    assert game.action_counts == (2, 3)
    assert cell(game, ("Lend", "Default")) == (-1, 3)
    assert cell(game, ("Refuse", "Flee")) == (0, -1)
    assert game.cooperative == (frozenset({0}), frozenset({0}))
    assert game.defect == (1, 1)
    assert not game.symmetric


def test_profile_list_and_game_without_cooperation(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        players = 2
        actions = ["Left", "Right"]
        payoffs = [
          {profile = ["Left", "Left"], payoffs = [1, 1]},
          {profile = ["Left", "Right"], payoffs = [0, 0]},
          {profile = ["Right", "Left"], payoffs = [0, 0]},
          {profile = ["Right", "Right"], payoffs = [1, 1]},
        ]
        """,
        "coordination.toml",
    )
    game = load_game(path)
    assert game.key == "coordination"  # file stem by default
    assert not game.has_cooperation and game.defect == (None, None)


GOOD_HEAD = 'players = 2\nactions = ["Dig", "Wait"]\ncooperative = ["Dig"]\ndefect = "Wait"\n'
GOOD_TABLE = """
[payoffs.Dig]
Dig = [3, 3]
Wait = [2, 4]
[payoffs.Wait]
Dig = [4, 2]
Wait = [0, 0]
"""


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        ("players = 2\n" + GOOD_TABLE, "actions", "is missing"),
        (GOOD_HEAD, "payoffs", "is missing"),
        (GOOD_HEAD.replace("players = 2\n", "") + GOOD_TABLE, "players", "is missing"),
        (
            GOOD_HEAD + GOOD_TABLE.replace("Wait = [0, 0]", "Wiat = [0, 0]"),
            "payoffs.Wait.Wiat",
            "did you mean 'Wait'",
        ),
        (
            GOOD_HEAD + GOOD_TABLE.replace("Wait = [2, 4]\n", ""),
            "payoffs.Dig",
            "no entry for player 2's action 'Wait'",
        ),
        (
            GOOD_HEAD + GOOD_TABLE.replace("[2, 4]", "[2, 4, 5]"),
            "payoffs.Dig.Wait",
            "list of 2 numbers",
        ),
        (
            GOOD_HEAD + GOOD_TABLE.replace("[2, 4]", '[2, "x"]'),
            "payoffs.Dig.Wait",
            "list of 2 numbers",
        ),
        (GOOD_HEAD + "payoffs = [[[3, 3], [2, 4]]]\n", "payoffs", "must have 2 entries"),
        (
            GOOD_HEAD + "payoffs = [[[3, 3], [2, 4]], [[4, 2]]]\n",
            "payoffs[1]",
            "must have 2 entries",
        ),
        (
            GOOD_HEAD + 'payoffs = [{profile = ["Dig", "Dig"], payoffs = [1, 1]}]\n',
            "payoffs",
            "lists 1 of 4 outcomes",
        ),
        (
            GOOD_HEAD + 'payoffs = [{profile = ["Dig", "Dig"], payoffs = [1, 1]},'
            '{profile = ["Dig", "Dig"], payoffs = [1, 1]}]\n',
            "payoffs[1].profile",
            "repeats",
        ),
        (
            GOOD_HEAD + 'payoffs = [{profile = ["Dig", "Nap"], payoffs = [1, 1]}]\n',
            "payoffs[0].profile[1]",
            "'Nap' is not an action of player 2",
        ),
        (GOOD_HEAD.replace('defect = "Wait"\n', "") + GOOD_TABLE, "defect", "is missing"),
        (
            GOOD_HEAD.replace('defect = "Wait"', 'defect = "Dig"') + GOOD_TABLE,
            "defect",
            "also listed as cooperative",
        ),
        (GOOD_HEAD.replace('["Dig"]', '["Dgi"]') + GOOD_TABLE, "cooperative", "did you mean 'Dig'"),
        (GOOD_HEAD + "palyers = 3\n" + GOOD_TABLE, "palyers", "did you mean `players`"),
        (
            GOOD_HEAD.replace('["Dig", "Wait"]', '["Dig", "Dig"]') + GOOD_TABLE,
            "actions",
            "names 'Dig' twice",
        ),
        ('key = "prisoners"\n' + GOOD_HEAD + GOOD_TABLE, "key", "already a built-in"),
        (
            GOOD_HEAD.replace("players = 2", "players = 3") + GOOD_TABLE,
            "payoffs.Dig.Dig",
            "table keyed by player 3's actions",
        ),
    ],
)
def test_bad_user_files_name_the_field_and_the_fix(
    tmp_path: Path, text: str, field: str, needle: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(GameError) as info:
        load_game(path)
    message = str(info.value)
    assert f"field `{field}`" in message
    assert needle in message
    assert "Fix:" in message
    assert str(tmp_path) in message


def test_unreadable_user_files(tmp_path: Path) -> None:
    with pytest.raises(GameError, match="does not exist"):
        load_game(str(tmp_path / "missing.toml"))
    with pytest.raises(GameError, match="not valid TOML"):
        load_game(write(tmp_path, "players = = 2\n"))
    with pytest.raises(GameError, match="not valid YAML"):
        load_game(write(tmp_path, "actions: [a, b\n", "bad.yaml"))
    with pytest.raises(GameError, match="table of fields"):
        load_game(write(tmp_path, "- 1\n- 2\n", "list.yml"))
