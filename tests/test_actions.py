"""Action frequencies, reciprocity given the co-player's last move, votes and designs.

Runs are played through the real sweep runner and store (strategies, plus an LLM agent on
the loopback server where a mechanism needs proposals the strategies never make), then
analysed from the database only.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coop_tui.analysis.actions import (
    action_frequencies,
    actions_report,
    conditional_frequencies,
    contract_sustains_cooperation,
    design_stability,
    mediator_sustains_cooperation,
    vote_statistics,
)
from coop_tui.games import get_game
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

C, D = 0, 1
AGENTS: dict[str, dict[str, Any]] = {
    "tft": {"strategy": "tit_for_tat"},
    "alld": {"strategy": "always_defect"},
    "allc": {"strategy": "always_cooperate"},
    "alt": {"strategy": "alternator"},
}


async def play(tmp_path: Any, *experiments: dict[str, Any],
               agents: dict[str, Any] | None = None) -> tuple[Store, str]:
    store = Store(tmp_path / "actions.db")
    data = {"name": "actions", "seed": 11, "agents": agents or AGENTS,
            "experiments": list(experiments)}
    summary = await run_sweep(build_sweep(data, check_keys=False), store)
    assert summary.matches_failed == 0, summary.errors
    return store, summary.run_id


def pick(rows: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


async def test_action_frequencies_per_agent(tmp_path: Any) -> None:
    store, run_id = await play(tmp_path, {
        "game": "prisoners", "mechanism": "repetition", "matchup": [["tft", "alld"]], "rounds": 3,
    })
    rows = action_frequencies(store, run_id)
    [tft_c] = pick(rows, agent="tft", action=C)
    [tft_d] = pick(rows, agent="tft", action=D)
    # tit for tat: C in round 1, then D twice against always-defect
    assert (tft_c["name"], tft_c["decisions"]) == ("Cooperate", 3)
    assert tft_c["mean_prob"] == pytest.approx(1 / 3) and tft_c["sampled"] == pytest.approx(1 / 3)
    assert tft_d["mean_prob"] == pytest.approx(2 / 3)
    [alld_d] = pick(rows, agent="alld", action=D)
    assert alld_d["mean_prob"] == 1.0 and alld_d["sampled"] == 1.0 and alld_d["name"] == "Defect"


async def test_conditional_frequencies_repetition_and_reputation(tmp_path: Any) -> None:
    store, run_id = await play(
        tmp_path,
        {"game": "prisoners", "mechanism": "repetition", "matchup": [["tft", "alt"]], "rounds": 5},
        {"game": "prisoners", "mechanism": "reputation", "matchup": [["alld", "allc", "alld", "allc"]],
         "population": 4, "rounds": 3},
    )
    rows = conditional_frequencies(store, run_id)
    tft = pick(rows, agent="tft", mechanism="repetition")
    # the alternator played C, D, C, D in rounds 1-4; tit for tat echoed each in rounds 2-5
    assert {(r["co_previous_name"], r["name"]): (r["count"], r["rate"]) for r in tft} == {
        ("Cooperate", "Cooperate"): (2, 1.0),
        ("Defect", "Defect"): (2, 1.0),
    }
    rep = pick(rows, mechanism="reputation")
    # rounds 2 and 3, four agents, one co-player each: 8 observations
    assert sum(r["count"] for r in rep) == 8
    assert all(r["name"] == "Cooperate" and r["rate"] == 1.0 for r in pick(rep, agent="allc"))
    assert all(r["name"] == "Defect" and r["rate"] == 1.0 for r in pick(rep, agent="alld"))
    # the co-player's previous action is looked up for this round's co-player
    matches = store.matches(run_id)
    rep_match = next(m for m in matches if m["mechanism"] == "reputation")
    actions = {(r["round"], r["seat"]): r["action"] for r in store.rounds(rep_match["id"])}
    assert all(actions[(t, s)] == (D if s in (0, 2) else C) for t in (1, 2, 3) for s in range(4))
    # one-shot matches add nothing
    store2, run2 = await play(tmp_path / "x", {"game": "prisoners", "mechanism": "none",
                                               "agents": ["tft"]})
    assert conditional_frequencies(store2, run2) == []


def test_mediator_design_stability() -> None:
    pd = get_game("prisoners")
    assert mediator_sustains_cooperation(pd, {1: D, 2: C})  # punish a lone delegator's partner
    assert not mediator_sustains_cooperation(pd, {1: C, 2: C})  # defecting on a delegator pays 3
    assert not mediator_sustains_cooperation(pd, {1: D, 2: D})  # does not cooperate at all
    trust = get_game("trust")
    assert mediator_sustains_cooperation(trust, {1: 1, 2: 0})
    assert not mediator_sustains_cooperation(trust, {1: 0, 2: 0})
    pg = get_game("public_good")
    assert not mediator_sustains_cooperation(pg, {1: 0, 2: 0, 3: 0})
    assert mediator_sustains_cooperation(pg, {1: 1, 2: 1, 3: 0})


def test_contract_design_stability() -> None:
    pd = get_game("prisoners")
    assert not contract_sustains_cooperation(pd, {C: 0, D: 0})
    assert contract_sustains_cooperation(pd, {C: 0, D: -3})
    assert contract_sustains_cooperation(pd, {C: 0, D: -1})  # indifferent: still an equilibrium
    assert not contract_sustains_cooperation(pd, {C: -1, D: 0})  # defecting now earns 3 + 1
    pg = get_game("public_good")  # free riding gains 0.5; a fine of 1 deters it
    assert contract_sustains_cooperation(pg, {0: 0, 1: -1})
    assert not contract_sustains_cooperation(pg, {0: 0, 1: 0})
    assert not contract_sustains_cooperation(pg, {0: -1, 1: 0})  # contributors pay the rider


def model_answer(body: dict[str, Any]) -> str:
    """Proposes the stable mediator / a fine on defection, approves its own, delegates."""
    text = last_user_message(body)
    me = int(re.search(r"you are Player (\d+)", text).group(1))  # type: ignore[union-attr]
    if "your job right now is to design one" in text:
        twist = text.split("Here is the twist:")[1]
        return '{"1": "A1", "2": "A0"}' if "mediator" in twist else '{"A0": 0, "A1": -3}'
    if "Your job right now is to vote" in text:
        ids = re.findall(r"^([MC]\d+) \(designed by Player (\d+)\)", text, re.M)
        return json.dumps({pid: int(p) == me for pid, p in ids})
    if "decide whether to sign" in text:
        return '{"sign": true}'
    delegate = re.search(r'(A\d) stands for "delegate', text)
    labels = re.findall(r"^- (A\d)$", text, re.M)
    target = delegate.group(1) if delegate else "A0"
    return json.dumps({label: 100 if label == target else 0 for label in labels})


async def test_votes_adoption_and_designs(tmp_path: Any) -> None:
    with LoopbackServer(latency=0.0, chunks=1, answer=model_answer) as server:
        agents = {**AGENTS, "m": {"model": "openai/loopback", "api_base": server.url,
                                  "api_key": "sk-test", "style": "direct"}}
        store, run_id = await play(
            tmp_path,
            {"game": "prisoners", "mechanism": "mediation", "matchup": [["m", "allc"], ["allc", "m"]],
             "payoff_view": "resolved"},
            {"game": "prisoners", "mechanism": "contracting", "matchup": [["m", "alld"]]},
            agents=agents,
        )
    votes = vote_statistics(store, run_id)
    [m_med] = pick(votes, agent="m", mechanism="mediation")
    [c_med] = pick(votes, agent="allc", mechanism="mediation")
    assert (m_med["matches"], m_med["proposals"], m_med["adopted"]) == (2, 2, 2)
    assert m_med["adoption_rate"] == 1.0 and m_med["approval_share"] == 1.0
    assert m_med["approve_rate"] == 0.5 and m_med["own_approved_rate"] == 1.0
    assert m_med["delegate_rate"] == 1.0
    assert c_med["adoption_rate"] == 0.0 and c_med["approval_share"] == 0.5
    assert c_med["approve_rate"] == 1.0 and c_med["delegate_rate"] == 0.0
    [m_con] = pick(votes, agent="m", mechanism="contracting")
    [d_con] = pick(votes, agent="alld", mechanism="contracting")
    assert m_con["sign_rate"] == 1.0 and d_con["sign_rate"] == 1.0 and m_con["active_rate"] == 1.0
    assert "delegate_rate" not in m_con and "sign_rate" not in m_med

    designs = design_stability(store, run_id)
    assert len(designs) == 6
    assert all(d["stable"] and d["won"] for d in pick(designs, agent="m"))
    assert not any(d["stable"] or d["won"] for d in designs if d["agent"] != "m")
    [med_m] = pick(designs, agent="m", mechanism="mediation", seat=0)
    assert med_m["design"] == {"1": D, "2": C}

    freq = pick(action_frequencies(store, run_id), agent="m", mechanism="mediation")
    assert {r["name"]: r["mean_prob"] for r in freq} == {"Cooperate": 0.0, "Defect": 0.0,
                                                          "Delegate": 1.0}
    report = actions_report(store, run_id)
    [summary] = pick(report["design_stability"], agent="m", mechanism="contracting")
    assert (summary["proposals"], summary["stable_rate"], summary["adopted_stable_rate"]) == (1, 1.0, 1.0)
    assert report["votes"] == votes
