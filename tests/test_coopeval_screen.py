"""The analysis screen shows CoopEval's tables and the evolution of the population."""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_tui.importers.coopeval import import_command
from coop_tui.screens.analysis import AnalysisScreen
from coop_tui.store import Store
from tests.test_tui_screens import ScreenApp, static_text, until

STUDY = Path(__file__).parent / "data" / "coopeval_main_study"


@pytest.mark.slow
async def test_analysis_shows_paper_tables_and_evolution(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    assert import_command(STUDY, db) == 0
    store = Store(db)
    run_id = store.latest_run()["id"]
    store.close()
    app = ScreenApp(db, lambda s: AnalysisScreen(s, run_id, export_dir=tmp_path / "out"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        tables = screen.query_one("#an-paper-tables")
        assert tables.display
        text = static_text(tables)
        assert "CoopEval table: trust" in text and "4.556 ± 0.309" in text  # Table 6, Mean
        assert "Reputation-" in text and "Reputation+" in text
        # experiment 1 is the no-mechanism Stag Hunt: three replicates, one trajectory each
        e = screen.experiment
        assert (e["game"], e["mechanism"]) == ("stag_hunt", "none")
        evolution = screen.query_one("#an-evolution")
        assert evolution.display
        series = screen.evolution_series(e)
        assert [s["replicate"] for s in series] == [0, 1, 2]
        assert "replicate 1 of 3" in str(evolution.border_title)
        await pilot.press("e")
        await until(pilot, lambda: "replicate 2 of 3" in str(evolution.border_title))
        # a Reputation experiment has no metagame, so no evolution
        await pilot.press("right_square_bracket", "right_square_bracket")
        await until(pilot, lambda: screen.index == 2)
        assert screen.experiment["mechanism"] == "reputation"
        assert not evolution.display
        assert tables.display  # the tables cover the whole run, whatever the experiment


async def test_a_multi_game_experiment_shows_every_games_payoff_table(tmp_path: Path) -> None:
    """One experiment over two games: the payoff panel shows both tables, not the first."""
    from coop_tui.games import get_game
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    db = tmp_path / "multi.db"
    store = Store(db)
    sweep = build_sweep({
        "name": "multi", "seed": 4, "concurrency": 1,
        "agents": {"tft": {"strategy": "tit_for_tat"}, "alld": {"strategy": "always_defect"}},
        "experiments": [{"game": ["prisoners", "stag_hunt"], "mechanism": "none",
                         "matchup": "cross", "agents": ["tft", "alld"]}],
    })
    await run_sweep(sweep, store, run_id="run-multi")
    store.close()
    app = ScreenApp(db, lambda s: AnalysisScreen(s, "run-multi", export_dir=tmp_path / "out"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.loaded >= 1)
        e = screen.experiment
        assert sorted(spec["key"] for spec in e["game_specs"]) == ["prisoners", "stag_hunt"]
        payoff = screen.query_one("#an-payoff")
        text = static_text(payoff)
        pd, sh = get_game("prisoners"), get_game("stag_hunt")
        assert pd.title in text and sh.title in text
        # each table carries its own game's payoffs: Stag Hunt's 5 is no PD payoff
        i_pd, i_sh = text.index(pd.title), text.index(sh.title)
        pd_part = text[i_pd:i_sh] if i_pd < i_sh else text[i_pd:]
        sh_part = text[i_sh:i_pd] if i_sh < i_pd else text[i_sh:]
        assert "5" in sh_part and "5" not in pd_part
        assert payoff.border_title == "Payoff tables (2 games)"
