"""Reasoning fingerprints: TF-IDF -> SVD centroids, silhouettes by provider, lexical rates.

Three LLM agents answer through the real litellm client from the loopback server, each
with its own fixed wording: two "claude-…" models (provider anthropic, from the model
name) write about fairness and mutual benefit, one "gpt-…" model writes about exploiting
the Nash equilibrium. The numbers are checked against hand counts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from coop_tui.analysis.fingerprints import fingerprints, lexical_rates
from coop_tui.store import Store
from coop_tui.testing.server import LoopbackServer

RUN = "run-fingerprints"
WORDING = {
    "claude-fair": 'Fairness and mutual benefit matter; I trust the other player. '
                   '{"A0": 100, "A1": 0}',
    "claude-kind": 'Mutual trust is fair and builds long-term cooperation. {"A0": 100, "A1": 0}',
    "gpt-cold": 'Defecting exploits them; the Nash equilibrium says defect. {"A0": 0, "A1": 100}',
}


def answer(body: dict[str, Any]) -> str:
    return WORDING[body["model"]]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from coop_tui.spec import build_sweep
    from coop_tui.sweep import run_sweep

    path = tmp_path_factory.mktemp("fp") / "coop.db"
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        agents = {name: {"model": f"openai/{name}", "api_base": srv.url, "style": "direct"}
                  for name in WORDING}
        sweep = {"name": "fp", "seed": 1, "concurrency": 4, "samples": 2, "agents": agents,
                 "experiments": [{"game": "prisoners", "mechanism": "none", "matchup": "self",
                                  "agents": list(WORDING)}]}
        store = Store(path)
        asyncio.run(run_sweep(build_sweep(sweep), store, run_id=RUN))
        store.close()
    return path


def test_report_section_separates_providers_and_counts_terms(db: Path) -> None:
    from coop_tui.report import build_report

    store = Store(db)
    value = build_report(store, RUN)["reasoning_fingerprints"]
    store.close()
    assert value["traces"] == 12  # 3 agents x 2 samples x 2 seats
    agents = value["agents"]
    assert {a: v["provider"] for a, v in agents.items()} == {
        "claude-fair": "anthropic", "claude-kind": "anthropic", "gpt-cold": "openai"}
    assert all(v["traces"] == 4 for v in agents.values())
    names = value["cosine_distances"]["agents"]
    d = value["cosine_distances"]["matrix"]
    fair, kind, cold = (names.index(n) for n in ("claude-fair", "claude-kind", "gpt-cold"))
    assert d[fair][kind] < d[fair][cold] and d[fair][kind] < d[kind][cold]
    # paper's centroid silhouette: a = distance to the same provider, b = to the other one
    a, b = d[fair][kind], d[fair][cold]
    assert agents["claude-fair"]["silhouette"] == pytest.approx((b - a) / max(a, b), abs=1e-5)
    assert agents["claude-fair"]["silhouette"] > 0
    assert agents["gpt-cold"]["silhouette"] is None  # its provider's only model
    assert value["silhouette"]["overall"] > 0
    assert value["between_within_ratio"] > 1
    # "Defecting exploits them; the Nash equilibrium says defect." + 4 JSON words = 12 words
    gpt = value["lexical"]["gpt-cold"]
    assert gpt["words"] == 4 * 12
    assert gpt["per_1000_words"]["defect"] == pytest.approx(1000 * 2 / 12)
    assert gpt["per_1000_words"]["nash"] == pytest.approx(1000 / 12)
    assert gpt["per_1000_words"]["fairness"] == 0
    assert value["lexical"]["claude-fair"]["per_1000_words"]["fairness"] > 0


def test_lexicon_matches_inflections_and_multiword_terms() -> None:
    rates = lexical_rates(["Tit-for-tat and tit for tat; unfair, fairly; long term, short-term;"
                           " best responses; cooperation cooperative"])
    per = rates["per_1000_words"]
    words = rates["words"]  # Tit-for-tat counts as one word, "tit for tat" as three
    assert words == 14
    assert per["tit-for-tat"] == pytest.approx(2000 / 14)
    assert per["fairness"] == pytest.approx(2000 / 14)
    assert per["long-term"] == per["short-term"] == pytest.approx(1000 / 14)
    assert per["best response"] == pytest.approx(1000 / 14)
    assert per["cooperate"] == pytest.approx(2000 / 14)


def test_fewer_than_two_agents_have_no_fingerprint() -> None:
    assert fingerprints(["one text"], ["a"], {"a": "x"}) is None
