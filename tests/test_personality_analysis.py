"""The strategic personalities paper's analytics on a strategy tournament whose answers are computed by hand.

Known strategies play as "models" against fixed opponents for a known horizon of six
rounds (prisoner's dilemma, the strategic personalities paper's canonical payoffs), so every number below follows
from the strategies' rules:

* opponents: always cooperate (C C C C C C), always defect (D D D D D D),
  alternator (C D C D C D);
* tit-for-tat plays C×6 / C D D D D D / C C D C D C;
* grim trigger plays C×6 / C D D D D D / C C D D D D;
* always defect plays D×6 everywhere;
* win-stay-lose-shift plays C×6 / C D C D C D / C C D D C C;
* tit-for-two-tats plays C×6 / C C D D D D / C×6;
* endgame tit-for-tat (against always cooperate and tit-for-tat) plays C C C C C D.

Round pairs (t-1 → t) per model: 5 after the co-player's C against always cooperate,
5 after D against always defect, and 3 after C (t = 2, 4, 6) plus 2 after D (t = 3, 5)
against the alternator: 8 after C and 7 after D in all.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from coop_tui.analysis.intervals import cluster_ratio_interval, t_interval
from coop_tui.analysis.personality import archetype, endgame_type, provider_of
from coop_tui.store import Store

RUN = "run-personality"


def sweep() -> dict:
    agents = {
        "tft": {"strategy": "tit_for_tat"}, "grim": {"strategy": "grim_trigger"},
        "alld": {"strategy": "always_defect"}, "wsls": {"strategy": "win_stay_lose_shift"},
        "tf2t": {"strategy": "tit_for_two_tats"}, "etft": {"strategy": "endgame_tit_for_tat"},
        "alt": {"strategy": "alternator"}, "allc": {"strategy": "always_cooperate"},
        "tft_self": {"strategy": "tit_for_tat"},
    }
    common = {"game": "pd_canonical", "mechanism": "repetition", "horizon": "known",
              "rounds": 6, "answer": "choice"}
    return {
        "name": "personality", "seed": 5, "concurrency": 1, "agents": agents,
        "experiments": [
            {**common, "matchup": "versus", "agents": ["tft", "grim", "alld", "wsls", "tf2t"],
             "opponents": ["allc", "alld", "alt"]},
            {**common, "matchup": "versus", "agents": ["etft"], "opponents": ["allc", "tft"]},
            {**common, "matchup": "self", "agents": ["tft_self"], "samples": 3},
        ],
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    path = tmp_path_factory.mktemp("personality") / "coop.db"
    store = Store(path)
    asyncio.run(run_sweep(build_sweep(sweep()), store, run_id=RUN))
    store.close()
    return path


@pytest.fixture(scope="module")
def full_report(db: Path) -> dict:
    from coop_tui.report import build_report

    store = Store(db)
    report = build_report(store, RUN)
    store.close()
    return json.loads(json.dumps(report))


@pytest.fixture(scope="module")
def profile(full_report: dict) -> dict:
    """The pooled profile (every seat of self-play): most tests below check its mechanics."""
    return full_report["strategic_personality_pooled"]


def test_the_default_profile_is_on_the_papers_sample(full_report: dict) -> None:
    paper = full_report["strategic_personality"]
    assert paper["sample"]["name"] == "table2"
    table2 = full_report["cooperation_by_model"]
    for agent, a in paper["agents"].items():
        rec = a["reciprocity"]
        # each 6-round Table 2 trial gives 5 round pairs of the agent in seat 0
        assert rec["n_after_c"] + rec["n_after_d"] == 5 * table2[agent]["n"]
        assert a["cooperation"]["trials"] == table2[agent]["n"]
    cell = next(c for c in paper["cells"] if c["agent"] == "tft_self")
    assert cell["decisions"] == 18  # 3 matches x 6 rounds, seat 0 only
    assert full_report["strategic_personality_pooled"]["sample"]["name"] == "pooled"


# (P(C|C) successes, P(C|D) successes, cooperations out of 18, archetype)
RECIPROCITY = {
    "tft": (8, 0, 11, "grudge-holder"),
    "grim": (6, 0, 9, "grudge-holder"),
    "alld": (0, 0, 0, "unconditional defector"),
    "wsls": (7, 3, 13, "moderate reciprocator"),
    "tf2t": (8, 3, 14, "moderate reciprocator"),
}


@pytest.mark.parametrize("agent", sorted(RECIPROCITY))
def test_reciprocity_numbers_and_archetypes_match_the_hand_count(profile: dict, agent: str) -> None:
    after_c, after_d, coop, kind = RECIPROCITY[agent]
    a = profile["agents"][agent]
    rec = a["reciprocity"]
    assert (rec["n_after_c"], rec["n_after_d"]) == (8, 7)
    assert rec["p_c_after_c"] == pytest.approx(after_c / 8)
    assert rec["p_c_after_d"] == pytest.approx(after_d / 7)
    assert rec["index"] == pytest.approx(after_c / 8 - after_d / 7)
    assert rec["archetype"] == kind
    assert a["cooperation"]["rate"] == pytest.approx(coop / 18)
    assert a["cooperation"]["decisions"] == 18 and a["cooperation"]["trials"] == 3
    assert a["provider"] == "strategy"


# per-round curve over the three opponents (thirds), and the endgame type
CURVES = {
    "tft": ([3, 2, 1, 2, 1, 2], "terminal-value cooperation"),
    "grim": ([3, 2, 1, 1, 1, 1], "other"),
    "alld": ([0, 0, 0, 0, 0, 0], "unconditional defection"),
    "wsls": ([3, 2, 2, 1, 3, 2], "terminal-value cooperation"),
    "tf2t": ([3, 3, 2, 2, 2, 2], "terminal-value cooperation"),
}


@pytest.mark.parametrize("agent", sorted(CURVES))
def test_round_curves_endgame_effect_and_type(profile: dict, agent: str) -> None:
    thirds, kind = CURVES[agent]
    a = profile["agents"][agent]
    assert a["curve"]["rounds"] == [1, 2, 3, 4, 5, 6]
    assert a["curve"]["rate"] == pytest.approx([k / 3 for k in thirds])
    end = a["endgame"]
    assert end["horizon"] == "known" and end["sequences"] == 3
    assert end["last"] == pytest.approx(thirds[5] / 3)
    assert end["before_last"] == pytest.approx(thirds[4] / 3)
    assert end["effect"] == pytest.approx((thirds[5] - thirds[4]) / 3)
    assert end["type"] == kind
    if agent == "wsls":  # per-match differences 0 (allc), -1 (alld), 0 (alt)
        half = 4.302652729911275 * math.sqrt(1 / 3) / math.sqrt(3)
        assert end["effect_interval"] == pytest.approx([-1 / 3 - half, -1 / 3 + half])


def test_a_model_that_defects_only_in_the_last_round_is_a_strategic_exploiter(profile: dict) -> None:
    a = profile["agents"]["etft"]
    assert a["curve"]["rate"] == [1, 1, 1, 1, 1, 0]
    assert a["endgame"]["type"] == "strategic exploitation"
    assert a["endgame"]["effect"] == -1
    rec = a["reciprocity"]  # never defected against: forgiveness is unknown, no archetype
    assert (rec["n_after_c"], rec["p_c_after_c"], rec["n_after_d"]) == (10, 0.8, 0)
    assert rec["p_c_after_d"] is None and rec["archetype"] is None


def test_cells_per_agent_game_opponent(profile: dict) -> None:
    cells = {(c["agent"], c["opponent"]): c for c in profile["cells"]}
    # the strategies are the yardstick in a versus design, never profiled themselves
    assert not any(agent in ("allc", "alt") for agent, _ in cells)
    wsls_alt = cells[("wsls", "alt")]  # C C D D C C against C D C D C D
    assert wsls_alt["rate"] == pytest.approx(4 / 6)
    assert wsls_alt["curve"] == [1, 1, 0, 0, 1, 1]
    assert wsls_alt["first_round"] == 1
    assert wsls_alt["joint"] == pytest.approx(2 / 6)  # rounds 1 and 5
    assert (wsls_alt["n_after_c"], wsls_alt["p_c_after_c"]) == (3, pytest.approx(2 / 3))
    assert (wsls_alt["n_after_d"], wsls_alt["p_c_after_d"]) == (2, 0.5)
    lo, hi = wsls_alt["wilson"]
    assert lo < 4 / 6 < hi
    assert wsls_alt["trials"] == 1 and wsls_alt["trial_interval"] is None
    grim_alld = cells[("grim", "alld")]
    assert grim_alld["rate"] == pytest.approx(1 / 6) and grim_alld["first_round"] == 1


def test_self_play_seats_form_one_trial_per_match(profile: dict) -> None:
    cell = next(c for c in profile["cells"] if c["agent"] == "tft_self")
    assert cell["opponent"] == "tft_self"
    assert cell["decisions"] == 36  # 3 matches x 6 rounds x 2 seats
    assert cell["trials"] == 3  # clustered by match, not 6 seat sequences
    assert cell["rate"] == 1 and cell["trial_interval"] == [1, 1]
    assert "clustered by match" in profile["methods"]["rate_trials"]


def test_cohens_h_matrix_uses_overall_rates(profile: dict) -> None:
    names = profile["cohens_h"]["agents"]
    matrix = profile["cohens_h"]["matrix"]
    i, j = names.index("tf2t"), names.index("alld")
    assert matrix[i][j] == pytest.approx(2 * math.asin(math.sqrt(14 / 18)))
    assert matrix[j][i] == pytest.approx(-matrix[i][j])
    assert all(matrix[k][k] == 0 for k in range(len(names)))


def test_intervals_by_hand() -> None:
    t = t_interval([0.2, 0.4, 0.6])
    half = 4.302652729911275 * 0.2 / math.sqrt(3)
    assert (t["mean"], t["sd"], t["n"]) == (pytest.approx(0.4), pytest.approx(0.2), 3)
    assert (t["lo"], t["hi"]) == (pytest.approx(0.4 - half), pytest.approx(0.4 + half))
    c = cluster_ratio_interval([(1, 2), (3, 4), (0, 4), (2, 5), (4, 5), (7, 0)])
    se = math.sqrt(5 / 4 * (0 + 1 + 4 + 0.25 + 2.25)) / 20  # the empty cluster is ignored
    assert (c["p"], c["se"], c["clusters"]) == (pytest.approx(0.5), pytest.approx(se), 5)
    half = 2.7764451051977987 * se
    assert (c["lo"], c["hi"]) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert cluster_ratio_interval([(0, 3)])["lo"] is None


# Supplementary Table 4 of the strategic personalities paper: (P(C|C), P(C|D)) in percent and the paper's label
PAPER_TABLE_4 = {
    "Claude Opus 4.6": (92.8, 4.5, "strict reciprocator"),
    "Claude Sonnet 4.6": (91.7, 4.1, "strict reciprocator"),
    "Claude Opus 4.5": (90.4, 4.1, "strict reciprocator"),
    "Claude Sonnet 4.5": (88.7, 8.8, "strict reciprocator"),
    "Gemini 3 Flash": (83.6, 0.3, "grudge-holder"),
    "Gemini 3 Pro": (77.5, 2.8, "grudge-holder"),
    "GPT-4.1": (72.2, 1.5, "strict reciprocator"),
    "Qwen 3.5 Flash": (70.7, 7.4, "strict reciprocator"),
    "Claude Haiku 4.5": (68.5, 5.1, "strict reciprocator"),
    "Claude Haiku 4.5 (Thinking)": (67.9, 3.7, "strict reciprocator"),
    "GPT-4o Mini": (67.2, 18.3, "moderate reciprocator"),
    "GPT-5.4": (64.8, 4.8, "strict reciprocator"),
    "GPT-4.1 Mini": (62.9, 5.6, "strict reciprocator"),
    "Gemini 3.1 Pro": (62.8, 0.4, "grudge-holder"),
    "DeepSeek V3": (54.8, 8.8, "moderate reciprocator"),
    "Gemini 2.5 Flash": (54.0, 11.1, "moderate reciprocator"),
    "DeepSeek R1": (50.7, 22.8, "moderate reciprocator"),
    "Gemini 2.5 Flash (Thinking)": (50.1, 6.6, "moderate reciprocator"),
    "Ministral 14B": (48.3, 24.1, "moderate reciprocator"),
    "GPT-4.1 Nano": (35.0, 5.9, "weak reciprocator"),
    "GPT-5.3": (34.0, 1.8, "weak reciprocator"),
    "LLaMA 3.3 70B": (14.3, 22.2, "anti-reciprocator"),
    "Gemini 2.0 Flash": (12.5, 6.1, "unconditional defector"),
    "GPT-5 Mini": (10.5, 2.8, "unconditional defector"),
    "GPT-5 Nano": (2.1, 1.0, "unconditional defector"),
}


def test_archetype_rules_reproduce_the_papers_table_except_its_gpt41_label() -> None:
    ours = {m: archetype(cc / 100, cd / 100) for m, (cc, cd, _) in PAPER_TABLE_4.items()}
    differ = {m for m, (_, _, label) in PAPER_TABLE_4.items() if ours[m] != label}
    assert differ == {"GPT-4.1"}  # 1.5% forgiveness meets the grudge rule; see personality.py
    assert ours["GPT-4.1"] == "grudge-holder"
    assert archetype(0.722, 0.015, grudge_first=False) == "strict reciprocator"
    assert archetype(1.0, 1.0) == "unclassified"  # always cooperate: no reciprocity at all


def test_endgame_types_follow_the_papers_thresholds() -> None:
    # Supplementary Table 3: Gemini 3 Pro 54.1 -> 0.0; Claude Opus 4.6 55.6 -> 56.9
    assert endgame_type(0.0, 0.541, [0.869, 0.541, 0.0]) == "strategic exploitation"
    assert endgame_type(0.569, 0.556, [1.0, 0.556, 0.569]) == "terminal-value cooperation"
    assert endgame_type(0.005, 0.013, [0.024, 0.027, 0.005]) == "unconditional defection"
    assert endgame_type(0.015, 0.471, [0.897, 0.471, 0.015]) == "other"  # GPT-4.1
    assert endgame_type(None, 0.5, [0.5]) is None


@pytest.mark.parametrize(("model", "provider"), [
    ("anthropic/claude-opus-4-6", "anthropic"), ("openrouter/google/gemini-3-pro", "google"),
    ("openai/gpt-4.1", "openai"), ("gpt-5-nano", "openai"), ("llama-3.3-70b", "meta"),
    ("ministral-14b", "mistral"), ("qwen3.5-flash", "alibaba"), ("deepseek-r1", "deepseek"),
    ("local/smollm2", "local"), ("hosted_vllm/mystery", "unknown"),
    ("together_ai/meta-llama/Llama-3.3-70B", "meta"),
])
def test_provider_from_model_string(model: str, provider: str) -> None:
    assert provider_of(model) == provider


async def test_the_analysis_screen_shows_archetype_map_endgame_curves_and_cohens_h(
        db: Path, tmp_path: Path) -> None:
    import shutil
    import time

    from textual.widgets import DataTable

    from coop_tui.analysis.personality_plots import ArchetypeMap, EndgameCurves
    from coop_tui.app import CoopApp
    from coop_tui.screens.analysis import AnalysisScreen

    path = tmp_path / "copy.db"
    shutil.copy(db, path)

    class App(CoopApp):
        def on_mount(self, event) -> None:  # open on the analysis screen only
            event.prevent_default()
            self.push_screen(AnalysisScreen(self.store, RUN, export_dir=tmp_path / "out"))

    app = App(path, replay_speed=0)
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        deadline = time.monotonic() + 30
        while not screen.query("#an-section-strategic_personality"):
            assert time.monotonic() < deadline, "the section panel never appeared"
            await pilot.pause(0.05)
        await pilot.pause()
        panel = screen.query_one("#an-section-strategic_personality")
        assert panel.border_title.startswith("Strategic personality")
        amap = panel.query_one(ArchetypeMap)
        points = {name: (x, y, kind) for name, x, y, kind in amap.points}
        assert points["wsls"] == (pytest.approx(300 / 7), pytest.approx(87.5),
                                  "moderate reciprocator")
        assert points["tft"] == (0, 100, "grudge-holder")
        assert "etft" not in points  # no P(C|D): not placed on the map
        curves = {name: ys for name, _, ys in panel.query_one(EndgameCurves).series}
        assert curves["etft"] == [100, 100, 100, 100, 100, 0]
        table = panel.query_one("#sp-cohens-h", DataTable)
        names = [str(c.label) for c in table.columns.values()][1:]
        assert names == sorted(["alld", "etft", "grim", "tf2t", "tft", "tft_self", "wsls"])
        row = names.index("tf2t")
        assert str(table.get_row_at(row)[names.index("alld") + 1]) == \
            f"{2 * math.asin(math.sqrt(14 / 18)):+.2f}"
        assert amap.size.height > 5 and amap.size.width > 20  # really drawn on screen


def test_the_text_report_prints_archetypes_and_endgame_types(db: Path) -> None:
    from rich.console import Console

    from coop_tui.report import build_report, render_text

    store = Store(db)
    report = build_report(store, RUN)
    store.close()
    console = Console(width=200, record=True, color_system=None)
    console.print(render_text(report))
    text = console.export_text()
    section = text.split("Reciprocity and endgame")[1]
    wsls = next(line for line in section.splitlines() if line.startswith("│ wsls "))
    assert "moderate reciprocator" in wsls and "87.5 (8)" in wsls and "42.9 (7)" in wsls
    assert "terminal-value cooperation" in wsls and "-33.3" in wsls
    assert "Cohen's h" in text and "Cooperation per agent × game × opponent" in text


def test_provider_tests_compare_per_match_rates_between_providers() -> None:
    from scipy.stats import kruskal, mannwhitneyu

    from coop_tui.analysis.personality_profile import SeatRun, _by_match, _provider_tests

    def seat(match: str, agent: str, coop: int) -> SeatRun:
        return SeatRun(match, 0, agent, "tft", "x", "pd", None, True, 10, coop, 1, 0, 0, 0,
                       0, 0, 0, 0)

    runs = {
        "claude-a": [seat("m1", "claude-a", 9), seat("m2", "claude-a", 8)],
        "claude-b": [seat("m3", "claude-b", 7)],
        "gpt-a": [seat("m4", "gpt-a", 1), seat("m5", "gpt-a", 2), seat("m6", "gpt-a", 0)],
    }
    providers = {"claude-a": "anthropic", "claude-b": "anthropic", "gpt-a": "openai"}
    out = _provider_tests({a: _by_match(v) for a, v in runs.items()}, providers)
    anthropic, openai = [0.9, 0.8, 0.7], [0.1, 0.2, 0.0]
    assert out["groups"] == {"anthropic": {"trials": 3, "rate": pytest.approx(0.8)},
                             "openai": {"trials": 3, "rate": pytest.approx(0.1)}}
    assert out["kruskal"]["p"] == pytest.approx(kruskal(anthropic, openai).pvalue)
    pair = out["pairwise"]["anthropic vs openai"]
    assert pair["U"] == 9.0
    assert pair["p"] == pytest.approx(mannwhitneyu(anthropic, openai).pvalue)
    assert pair["cohens_h"] == pytest.approx(2 * math.asin(math.sqrt(0.8)) - 2 * math.asin(math.sqrt(0.1)))
    assert pair["cohens_d"] == pytest.approx(0.7 / 0.1)  # both sds are 0.1
    assert _provider_tests({"gpt-a": _by_match(runs["gpt-a"])}, providers) is None


def test_a_round_without_recorded_cooperation_drops_only_its_own_pairs(
        db: Path, tmp_path: Path) -> None:
    import shutil

    from coop_tui.analysis.personality_profile import personality_profile

    path = tmp_path / "gap.db"
    shutil.copy(db, path)
    store = Store(path)
    mid = store.db.execute(
        """select m.id from matches m join seats a on a.match_id = m.id and a.seat = 0
           join seats b on b.match_id = m.id and b.seat = 1
           where m.run_id = ? and a.agent = 'wsls' and b.agent = 'alt'""", [RUN]).fetchone()[0]
    # wsls C C D D C C against alt C D C D C D; forget alt's round-4 move
    store.db.execute("update rounds set cooperated = null where match_id = ? and round = 4"
                     " and seat = 1", [mid])
    # as if the match had been recorded so: its stored moves are taken again from its rounds
    from coop_tui.summaries import fold_moves

    fold_moves(store.db.conn, [mid])
    store.db.conn.commit()
    cell = next(c for c in personality_profile(store.db, RUN)["cells"]
                if (c["agent"], c["opponent"]) == ("wsls", "alt"))
    store.close()
    assert cell["decisions"] == 5  # rounds 1, 2, 3, 5, 6
    assert cell["rate"] == pytest.approx(4 / 5)  # C C D . C C
    assert cell["curve"] == [1, 1, 0, 1, 1] and cell["curve_n"] == [1, 1, 1, 1, 1]
    # pairs (1,2), (2,3) and (5,6) survive: after C at t = 2 and 6, after D at t = 3
    assert (cell["n_after_c"], cell["p_c_after_c"]) == (2, 1.0)
    assert (cell["n_after_d"], cell["p_c_after_d"]) == (1, 0.0)


def test_own_runs_carry_cooperation_by_model_like_the_published_table(db: Path) -> None:
    from coop_tui.report import build_report

    store = Store(db)
    table = build_report(store, RUN)["cooperation_by_model"]
    store.close()
    # tft: 6/6, 1/6, 4/6 per trial (seat 0 against allc, alld, alt)
    tft = table["tft"]
    values = [100.0, 100 / 6, 400 / 6]
    mean = sum(values) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
    assert tft["n"] == 3 and tft["mean"] == pytest.approx(mean, abs=1e-3)
    assert tft["sd"] == pytest.approx(sd, abs=1e-3)
    assert table["tft_self"]["n"] == 3  # self-play: the seat-0 copy only, one per match
    assert "alt" not in table and "allc" not in table  # the yardstick strategies
