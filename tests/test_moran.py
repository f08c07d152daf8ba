"""The Moran section (issue #43, part 3): fixation and stationary shares from the payoffs a
run stored, checked against the Axelrod library's Moran process fed the same payoffs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coop_tui.analysis.moran import (
    MoranError,
    MoranSettings,
    expected_payoff,
    fixation_matrix,
    fixation_probability,
    simulate_fixation,
    stationary_distribution,
)
from coop_tui.api import run_sweep
from coop_tui.cli import main

DATA = Path(__file__).parent / "data"
REFERENCE = json.loads((DATA / "axelrod_moran_reference.json").read_text())


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The strategies tournament of tests/data/moran_strategies.toml, played and reported."""
    db = tmp_path_factory.mktemp("moran") / "m.db"
    run_id = run_sweep(DATA / "moran_strategies.toml", db)
    return {"db": db, "id": run_id}


def _report(tournament: dict[str, Any], capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["report", tournament["id"], "--db", str(tournament["db"]), "--sections", "moran",
                 *args]) == 0
    return capsys.readouterr().out


def test_fixation_matches_axelrods_moran_process_fed_the_stored_payoffs(
        tournament: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Axelrod's ApproximateMoranProcess, fed the mean payoffs this run stores (the
    reference file keeps them; they must still be what the run stores), fixed each invader
    in a share of 10,000 runs within 0.02 of the section's exact probability (defection,
    reciprocity and a cycle against each other: six ordered pairs)."""
    section = json.loads(_report(tournament, capsys, "--json"))["moran"]
    (row,) = section["tournaments"]
    assert row["agents"] == REFERENCE["agents"] and section["settings"]["population"] == REFERENCE["population"]
    from coop_tui.analysis.tournament import cross_play_tensor
    from coop_tui.store import Store

    store = Store(tournament["db"])
    try:
        tensor = cross_play_tensor(store.db, tournament["id"], 0, "prisoners", row["condition"])
    finally:
        store.close()
    assert tensor.payoffs == pytest.approx(np.array(REFERENCE["payoffs"]), abs=1e-12)
    assert REFERENCE["runs"] == 10_000
    far = {(a, b): (row["fixation"][a][b], share)
           for a, against in REFERENCE["fixation"].items() for b, share in against.items()
           if abs(row["fixation"][a][b] - share) > 0.02}
    assert far == {}
    checked = ("alld", "tft", "alt")  # benchmarks/axelrod_moran_reference.py, CHECKED
    assert {(a, b) for a, against in REFERENCE["fixation"].items() for b in against} == {
        (a, b) for a in checked for b in checked if a != b}


def test_the_moran_section_shows_in_text_and_json(tournament: dict[str, Any],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = _report(tournament, capsys)
    assert "Moran process: fixation from the stored payoffs" in text
    assert "neutral fixation 1/N = 0.100" in text and "stationary" in text
    data = json.loads(_report(tournament, capsys, "--json"))["moran"]
    (row,) = data["tournaments"]
    assert sum(row["stationary"].values()) == pytest.approx(1.0)
    assert row["neutral"] == pytest.approx(0.1)
    # always-defect invades always-cooperate (it earns 3 where they earn 2 and 0)
    assert row["fixation"]["alld"]["allc"] > row["neutral"] > row["fixation"]["allc"]["alld"]


async def test_the_analysis_screen_shows_the_moran_panel(tournament: dict[str, Any]) -> None:
    from textual.widgets import Static

    from tests.analysis_screen import loaded_analysis

    async with loaded_analysis(tournament["db"], tournament["id"]) as screen:
        panel = screen.query_one("#an-section-moran")
        assert panel.border_title == "Moran process: fixation from the stored payoffs"
        assert panel.query(Static)


def test_neutral_payoffs_fix_at_one_over_n_and_share_the_long_run_evenly() -> None:
    payoffs = np.full((3, 3), 2.0)
    settings = MoranSettings(population=8)
    fixation = fixation_matrix(payoffs, settings)
    assert fixation == pytest.approx(np.full((3, 3), 1 / 8))
    assert stationary_distribution(fixation) == pytest.approx(np.full(3, 1 / 3))


def test_the_closed_form_is_the_simulated_process_in_a_three_player_game() -> None:
    """Public goods for three (contribute = 0, free ride = 1; multiplier 1.5): co-players
    are drawn without replacement, and the seeded simulation agrees with the closed form."""
    payoffs = np.zeros((2, 2, 2))
    for focal in (0, 1):
        for a in (0, 1):
            for b in (0, 1):
                contributors = [focal, a, b].count(0)
                payoffs[focal, a, b] = 1.5 * contributors / 3 + (focal == 1)
    settings = MoranSettings(population=6)
    # one contributor among five free riders meets two free riders for sure
    assert expected_payoff(payoffs, 0, 1, 1, 6) == pytest.approx(0.5)
    # a free rider beside one contributor meets it in 2 of the C(5,2) = 10 pairs... 4 of 10
    assert expected_payoff(payoffs, 1, 0, 5, 6) == pytest.approx(1 + 0.5 * 0.4)
    exact = fixation_probability(payoffs, 1, 0, settings)
    simulated = simulate_fixation(payoffs, 1, 0, settings, runs=4000, seed=3)
    assert simulated == pytest.approx(exact, abs=0.03)
    assert exact > 1 / 6 > fixation_probability(payoffs, 0, 1, settings)


def test_exponential_fitness_takes_negative_payoffs_that_linear_fitness_refuses() -> None:
    chicken = np.array([[0.0, -1.0], [1.0, -10.0]])
    with pytest.raises(MoranError, match="negative"):
        fixation_matrix(chicken, MoranSettings(population=5))
    fixation = fixation_matrix(chicken, MoranSettings(population=5, selection=0.1, fitness="exponential"))
    assert 0 < fixation[0, 1] < 1 and 0 < fixation[1, 0] < 1


def test_moran_settings_come_from_the_sweep_and_bad_ones_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = (DATA / "moran_strategies.toml").read_text()
    good = tmp_path / "good.toml"
    good.write_text(sweep.replace('seed = 11\n', 'seed = 11\n\n[moran]\npopulation = 4\n', 1))
    db = tmp_path / "m.db"
    run_id = run_sweep(good, db)
    assert main(["report", run_id, "--db", str(db), "--sections", "moran", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["moran"]["settings"]["population"] == 4
    bad = tmp_path / "bad.toml"
    bad.write_text(sweep.replace('seed = 11\n', 'seed = 11\n\n[moran]\npopulation = 1\n', 1))
    assert main(["--batch", str(bad), "--db", str(tmp_path / "bad.db")]) == 2
    assert "moran.population" in capsys.readouterr().err
    assert not (tmp_path / "bad.db").exists()
