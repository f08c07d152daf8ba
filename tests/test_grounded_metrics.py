"""Grounded similarity (similarity signals, §4): metrics on hand-computed cases, Monte-Carlo random
baselines against the paper's reference values, the item loader's errors, redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coop_tui.grounded.domains import load_benchmark
from coop_tui.grounded.dossier import REDACTED, build_dossier, redact
from coop_tui.grounded.items import Item, load_items
from coop_tui.grounded.metrics import (
    agreement,
    js_similarity,
    jsd_similarity,
    quadratic_kappa,
    qwk_similarity,
    random_baseline,
)
from coop_tui.spec import SpecError


# ----------------------------------------------------------------- metrics by hand
def test_agreement_counts_identical_answers_over_common_items() -> None:
    a = {"q1": 0, "q2": 1, "q3": 2, "q4": 3}
    b = {"q1": 0, "q2": 2, "q3": 2, "q5": 1}  # q4 / q5 answered by one agent only
    assert agreement(a, b) == pytest.approx(2 / 3)
    assert agreement({"q1": None}, {"q1": 0}) is None  # no valid common answer


def test_quadratic_weighted_kappa_hand_computed() -> None:
    # ratings 1,2,3 against 1,2,2 on 1..3: weighted disagreement 1/4, chance 3/4
    assert quadratic_kappa([1, 2, 3], [1, 2, 2], 1, 3) == pytest.approx(2 / 3)
    # perfectly reversed on a two-point scale: kappa -1, rescaled to 0
    assert quadratic_kappa([1, 1, 2, 2], [2, 2, 1, 1], 1, 2) == pytest.approx(-1.0)
    a = {"x": 1, "y": 2, "z": 3}
    assert qwk_similarity(a, {"x": 1, "y": 2, "z": 2}, (1, 3)) == pytest.approx(5 / 6)
    assert qwk_similarity(a, a, (1, 3)) == pytest.approx(1.0)
    assert qwk_similarity({"x": 1, "y": 1, "z": 2, "w": 2}, {"x": 2, "y": 2, "z": 1, "w": 1},
                          (1, 2)) == pytest.approx(0.0)


def test_jensen_shannon_similarity_hand_computed() -> None:
    assert js_similarity([1, 0], [1, 0]) == pytest.approx(1.0)
    assert js_similarity([1, 0], [0, 1]) == pytest.approx(0.0)
    # M = (.75, .25); KL(p|M) = .5 log2(2/3) + .5 log2(2) ; KL(q|M) = log2(4/3)
    assert js_similarity([0.5, 0.5], [1, 0]) == pytest.approx(1 - 0.311278, abs=1e-6)


def test_chance_corrected_jsd_compares_items_against_other_items() -> None:
    same = {"x0": (1.0, 0.0), "x1": (0.0, 1.0)}
    assert jsd_similarity(same, same) == pytest.approx(1.0)  # observed 1, chance 0
    swapped = {"x0": (0.0, 1.0), "x1": (1.0, 0.0)}
    assert jsd_similarity(same, swapped) == pytest.approx(0.0)  # observed 0, chance 1
    # observed (1 + .688722) / 2 equals chance (1 + .688722) / 2: kappa 0, rescaled 0.5
    a = {"x0": (1.0, 0.0), "x1": (0.5, 0.5)}
    b = {"x0": (1.0, 0.0), "x1": (1.0, 0.0)}
    assert jsd_similarity(a, b) == pytest.approx(0.5)


# ----------------------------------------------------------------- random baselines
def _options(n: int, k: int) -> list[Item]:
    return [Item(id=f"q{i}", prompt="q", kind="options", options=tuple(f"o{j}" for j in range(k)))
            for i in range(n)]


def _likert(n: int, hi: int) -> list[Item]:
    return [Item(id=f"q{i}", prompt="q", kind="likert", scale=(1, hi)) for i in range(n)]


# Benchmarks we do not ship are checked on synthetic items of the same shape (App. F):
# TRAIT four options; Newcomb mostly three options, some two; CABIN 164 items on 1-5;
# GGB 90 items on 1-7; HLE free answers.
NEWCOMB_SHAPE = [Item(id=f"q{i}", prompt="q", kind="options",
                      options=("a", "b", "c") if i % 20 else ("a", "b")) for i in range(150)]


@pytest.mark.parametrize(("name", "items", "metric", "paper", "tolerance"), [
    ("trait", _options(150, 4), "agreement", 24.9, 1.0),
    ("newcomb", NEWCOMB_SHAPE, "agreement", 34.1, 1.0),
    ("cabin", _likert(164, 5), "qwk", 49.3, 1.5),
    ("ggb", _likert(90, 7), "qwk", 49.5, 1.5),
    ("hle", [Item(id=f"q{i}", prompt="q", kind="text") for i in range(150)], "agreement", 0.0, 0.1),
])
def test_monte_carlo_baseline_of_benchmark_shapes_matches_the_paper(
    name: str, items: list[Item], metric: str, paper: float, tolerance: float
) -> None:
    mean, se = random_baseline(items, metric, trials=300, seed=1)
    assert abs(100 * mean - paper) <= tolerance, (name, 100 * mean)


@pytest.mark.parametrize(("ref", "paper", "tolerance"), [
    ("die", 17.2, 1.0), ("coin", 49.4, 1.5), ("similarity_game", 50.7, 3.0),
])
def test_monte_carlo_baseline_of_built_in_domains_matches_the_paper(
    ref: str, paper: float, tolerance: float
) -> None:
    bench = load_benchmark(ref)
    mean, _ = random_baseline(bench.items, bench.metric, trials=600, seed=2)
    assert abs(100 * mean - paper) <= tolerance, (ref, 100 * mean)


def test_baselines_are_computed_from_the_items_not_typed_in() -> None:
    two = random_baseline(_options(60, 2), "agreement", trials=200, seed=3)[0]
    five = random_baseline(_options(60, 5), "agreement", trials=200, seed=3)[0]
    assert two == pytest.approx(0.5, abs=0.02)
    assert five == pytest.approx(0.2, abs=0.02)


# ----------------------------------------------------------------- item files
def test_shipped_demo_sets_cover_every_kind() -> None:
    kinds = set()
    for name in ("demo_choices", "demo_ratings", "demo_answers", "demo_strategies"):
        bench = load_benchmark(name)
        kinds |= {i.kind for i in bench.items}
        assert len(bench.items) >= 3
    assert kinds == {"options", "likert", "number", "text", "mixed"}
    assert load_benchmark("demo_ratings").metric == "qwk"
    assert load_benchmark("demo_strategies").metric == "jsd"
    assert load_benchmark("demo_answers").metric == "agreement"


@pytest.mark.parametrize(("line", "field", "words"), [
    ('{"id": "a", "prompt": "p"}', "items.jsonl:2.kind", "missing"),
    ('{"id": "a", "prompt": "p", "kind": "poll"}', "items.jsonl:2.kind", "options, likert"),
    ('{"id": "a", "prompt": "p", "kind": "likert", "scale": [5, 1]}', "items.jsonl:2.scale", "low < high"),
    ('{"id": "a", "prompt": "p", "kind": "options", "options": ["x"]}', "items.jsonl:2.options", "2 to 26"),
    ('{"id": "a", "prompt": "p", "kind": "text", "choices": []}', "items.jsonl:2.choices", "not a field"),
    ('{"id": "q1", "prompt": "p", "kind": "text"}', "items.jsonl:2.id", "already used"),
    ('{"id": "a", "prompt": "p", "kind": "mixed", "actions": ["A", "A"]}', "items.jsonl:2.actions", "distinct"),
    ('{"id": "a", "prompt": ', "items.jsonl:2", "not valid JSON"),
])
def test_item_loader_names_file_line_and_field(tmp_path: Path, line: str, field: str, words: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "q1", "prompt": "first", "kind": "text"}\n' + line + "\n")
    with pytest.raises(SpecError) as err:
        load_items(path)
    assert err.value.field == field
    assert words in err.value.message


def test_a_benchmark_mixing_likert_with_options_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [{"id": "a", "prompt": "p", "kind": "likert", "scale": [1, 5]},
            {"id": "b", "prompt": "p", "kind": "options", "options": ["x", "y"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(SpecError, match="Likert items cannot share"):
        load_items(path)


# ----------------------------------------------------------------- redaction
def test_redaction_removes_the_chosen_option_from_an_explanation() -> None:
    item = Item(id="q", prompt="Which button?", kind="options", options=("Green", "Red"))
    text = 'Pressing red pays more, so B) Red it is. Final answer: B\n{"choice": "B"}'
    out = redact(text, item, 1)
    assert "red" not in out.lower()
    assert "B)" not in out and '"choice"' not in out and "Final answer" not in out
    assert REDACTED in out
    assert "pays more" in out  # the reasoning itself stays


def test_redaction_removes_ratings_numbers_and_text_answers() -> None:
    likert = Item(id="l", prompt="Garden?", kind="likert", scale=(1, 5), anchors={"4": "Like"})
    out = redact('Gardens are calm; I would give it a 4 (Like).\n{"rating": 4}', likert, 4)
    assert "4" not in out and "Like" not in out and "calm" in out
    text = Item(id="t", prompt="Capital?", kind="text")
    out = redact("It is not Sydney; it is Canberra.\nANSWER: Canberra", text, "canberra")
    assert "canberra" not in out.lower() and "Sydney" in out


def test_dossier_views_show_answers_reasoning_or_both() -> None:
    item = Item(id="q", prompt="Which button?", kind="options", options=("Green", "Red"))
    records = [(item, 0, 'Cooperation helps both, so A) Green.\n{"choice": "A"}')]
    decision = build_dossier(records, "decision")
    explanation = build_dossier(records, "explanation")
    both = build_dossier(records, "both")
    assert "Their answer: A) Green" in decision and "reasoning" not in decision
    assert "Cooperation helps both" in explanation and "Their answer" not in explanation
    assert "Green" in item.shown() and explanation.count("Green") == item.shown().count("Green")
    assert "Their answer: A) Green" in both and "Cooperation helps both" in both


def test_agreement_baselines_are_exact() -> None:
    """Closed form: the mean over items of the chance that two random answers match."""
    from coop_tui.grounded.metrics import match_probability

    assert random_baseline(_options(150, 4), "agreement") == (0.25, 0.0)
    mean, se = random_baseline(NEWCOMB_SHAPE, "agreement")
    assert se == 0.0 and mean == pytest.approx((8 * 1 / 2 + 142 * 1 / 3) / 150)  # 8 two-option items
    die = load_benchmark("die")
    assert random_baseline(die.items, die.metric) == (pytest.approx(1 / 6), 0.0)
    assert match_probability(Item(id="t", prompt="q", kind="text")) == 0.0
    assert match_probability(Item(id="n", prompt="q", kind="number", minimum=0, maximum=10, step=1)) == 1 / 11


@pytest.mark.parametrize("ref", ["similarity_game"])
def test_monte_carlo_baselines_are_precise_to_the_printed_digit(ref: str) -> None:
    """QWK and JSD have no closed form: enough vectorised draws that the standard error
    is at most 0.05 percentage points (the report prints one decimal)."""
    from coop_tui.grounded.metrics import BASELINE_SE

    bench = load_benchmark(ref)
    mean, se = random_baseline(bench.items, bench.metric, seed=0)
    assert se <= BASELINE_SE
    assert random_baseline(bench.items, bench.metric, seed=0) == (mean, se)  # seeded
    qwk_mean, qwk_se = random_baseline(_likert(90, 7), "qwk", seed=0)
    assert qwk_se <= BASELINE_SE and abs(qwk_mean - 0.5) < 0.005
