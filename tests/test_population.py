"""Population metrics: CoopEval's published numbers, solver and clone invariance, SQL path."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from coop_tui.analysis.population import (
    _deviation_matrix,
    deviation_ranks,
    deviation_ratings,
    expected_payoffs,
    mean_payoffs,
    normalise,
    replicator_dynamics,
    tensor_from_profiles,
)

SAMPLES = Path(__file__).parent / "data" / "coopeval_sample"
PD = "no_mechanism_prisoners_dilemma"
TRUST = "mediation_trust_game"


def _label(player: dict) -> str:
    return player["llm"]["model"] + ("(CoT)" if player["type"] == "CoTAgent" else "(IO)")


def _sample_tensor(name: str):
    """The tensor from CoopEval's own matchup_payoffs.json (not from our importer)."""
    data = json.loads((SAMPLES / name / "matchup_payoffs.json").read_text())
    d = data["discount"]
    observations = []
    for profile in data["profile"]:
        seating = [_label(p) for p in profile["players"]]
        for repeat in profile["payoffs"]:
            rounds = np.asarray(repeat, dtype=float)
            t = len(rounds)
            weights = np.array([(1 - d) * d**k for k in range(t - 1)] + [d ** (t - 1)])
            observations.append((seating, weights @ rounds))
    return tensor_from_profiles(observations)


def _published(name: str, file: str) -> dict:
    return json.loads((SAMPLES / name / file).read_text())


# ----------------------------------------------------------------------------- published numbers


@pytest.mark.parametrize("name", [PD, TRUST])
def test_fitness_and_final_population_match_coopeval(name: str) -> None:
    tensor = _sample_tensor(name)
    published = _published(name, "replicator_dynamics_fitness.json")
    result = replicator_dynamics(tensor.payoffs, steps=1000, lr=0.1)
    assert set(published) == set(tensor.agents)
    for i, agent in enumerate(tensor.agents):
        assert result.fitness[i] == pytest.approx(published[agent]["fitness"], abs=1e-6)
        # shares as small as 1e-203 agree to many digits: same update rule, same order
        assert result.population[i] == pytest.approx(published[agent]["final_population"], rel=1e-6)


@pytest.mark.parametrize("name", [PD, TRUST])
def test_mean_matches_coopeval_average_payoff(name: str) -> None:
    tensor = _sample_tensor(name)
    published = _published(name, "agent_average_payoff.json")
    mean = mean_payoffs(tensor.payoffs)
    for i, agent in enumerate(tensor.agents):
        assert mean[i] == pytest.approx(published[agent], abs=1e-9)


def test_prisoners_deviation_ratings_match_coopeval() -> None:
    tensor = _sample_tensor(PD)
    published = _published(PD, "deviation_ratings.json")
    ratings = deviation_ratings(tensor.payoffs)
    for i, agent in enumerate(tensor.agents):
        assert ratings[i] == pytest.approx(published[agent], abs=1e-9)


def test_trust_published_ratings_come_from_vertex_freezing() -> None:
    """CoopEval freezes every constraint tight at the vertex Gurobi returns. On the Trust
    sample that rates Qwen at the first level (-0.6) although an optimum exists where
    Qwen's deviation gain is lower; the unique ratings differ for four agents."""
    tensor = _sample_tensor(TRUST)
    published = _published(TRUST, "deviation_ratings.json")
    pub = np.array([published[a] for a in tensor.agents])
    vertex = deviation_ratings(tensor.payoffs, method="highs-ds", freeze="vertex")
    assert np.allclose(vertex, pub, atol=1e-9)
    unique = dict(zip(tensor.agents, deviation_ratings(tensor.payoffs), strict=True))
    assert unique == pytest.approx(
        {
            "anthropic/claude-sonnet-4.5(CoT)": -2.0,
            "google/gemini-3-flash-preview(CoT)": -0.6,
            "google/gemini-3-flash-preview(IO)": -0.6,
            "openai/gpt-4o-2024-05-13(CoT)": -2.1,
            "openai/gpt-5.2(CoT)": -1.5,
            "qwen/qwen3-30b-a3b-instruct-2507(CoT)": -0.9,
        },
        abs=1e-9,
    )
    # the strictest level (tight in every optimum) is the same in both
    for agent in ("google/gemini-3-flash-preview(CoT)", "google/gemini-3-flash-preview(IO)"):
        assert unique[agent] == pytest.approx(published[agent], abs=1e-9)


def test_ratings_are_a_coarse_correlated_equilibrium_certificate() -> None:
    """Some symmetric joint distribution has exactly these deviation gains, all <= 0."""
    from scipy.optimize import linprog

    tensor = _sample_tensor(TRUST)
    ratings = deviation_ratings(tensor.payoffs)
    dev = _deviation_matrix(tensor.payoffs)
    m = dev.shape[1]
    res = linprog(
        np.zeros(m),
        A_eq=np.vstack([dev, np.ones((1, m))]),
        b_eq=np.append(ratings, 1.0),
        bounds=[(0, None)] * m,
        method="highs",
    )
    assert res.status == 0
    assert np.all(ratings <= 1e-12)


# ----------------------------------------------------------------------------- invariance


def _permutations(n: int, count: int) -> list[list[int]]:
    perms = list(itertools.permutations(range(n)))
    return [list(p) for p in perms[:: max(1, len(perms) // count)]][:count]


@pytest.mark.parametrize("name", [PD, TRUST])
def test_ratings_identical_across_solver_methods(name: str) -> None:
    tensor = _sample_tensor(name)
    reference = deviation_ratings(tensor.payoffs, method="highs-ds")
    for method in ("highs-ipm", "highs"):
        assert np.allclose(deviation_ratings(tensor.payoffs, method=method), reference, atol=1e-9)
    assert np.allclose(deviation_ratings(tensor.payoffs, joint="full"), reference, atol=1e-9)


def test_vertex_freezing_depends_on_solver_and_order_unique_ratings_do_not() -> None:
    tensor = _sample_tensor(TRUST)
    unique, vertex = set(), set()
    for perm in _permutations(len(tensor.agents), 24):
        payoffs = tensor.payoffs[np.ix_(perm, perm)]
        back = np.argsort(perm)
        for method in ("highs-ds", "highs-ipm"):
            r = deviation_ratings(payoffs, method=method)[back]
            v = deviation_ratings(payoffs, method=method, freeze="vertex")[back]
            unique.add(tuple(np.round(r, 8)))
            vertex.add(tuple(np.round(v, 8)))
    assert len(unique) == 1
    assert len(vertex) > 1  # the degeneracy is real: the returned vertex decides


@pytest.mark.parametrize("name", [PD, TRUST])
def test_clone_invariance(name: str) -> None:
    tensor = _sample_tensor(name)
    base = deviation_ratings(tensor.payoffs)
    n = len(tensor.agents)
    for clone in range(n):
        idx = [*range(n), clone]
        cloned = deviation_ratings(tensor.payoffs[np.ix_(idx, idx)], method="highs-ipm")
        assert np.allclose(cloned[:n], base, atol=1e-9)
        assert cloned[n] == pytest.approx(base[clone], abs=1e-9)


# ----------------------------------------------------------------------------- construction


def test_tensor_pools_seats_and_repeats_like_coopeval() -> None:
    observations = [
        (["a", "b"], [3.0, 0.0]),
        (["a", "b"], [1.0, 1.0]),
        (["b", "a"], [0.0, 5.0]),
        (["a", "a"], [2.0, 4.0]),
        (["b", "b"], [1.0, 1.0]),
    ]
    t = tensor_from_profiles(observations)
    assert t.agents == ("a", "b")
    assert t.payoffs[0, 1] == pytest.approx((3 + 1 + 5) / 3)  # a against b, both seats pooled
    assert t.payoffs[1, 0] == pytest.approx((0 + 1 + 0) / 3)
    assert t.payoffs[0, 0] == pytest.approx(3.0)  # self-play: both seats are a's
    assert t.counts[0, 1] == 3 and t.counts[0, 0] == 2
    assert t.matrix()["a"]["b"] == pytest.approx(3.0)


def test_incomplete_tensor_is_reported_not_guessed() -> None:
    t = tensor_from_profiles([(["a", "b"], [1.0, 2.0]), (["a", "a"], [1.0, 1.0])])
    assert not t.complete
    assert t.missing() == [("b", "b")]
    with pytest.raises(ValueError, match="unobserved"):
        replicator_dynamics(t.payoffs)
    with pytest.raises(ValueError, match="unobserved"):
        deviation_ratings(t.payoffs)


def _public_good_metagame() -> tuple:
    """Three agents contributing with fixed probabilities in a 3-player public good."""
    contrib = {"saint": 1.0, "mixed": 0.5, "rider": 0.0}
    alpha, observations = 1.5, []
    for seating in itertools.product(contrib, repeat=3):
        k = sum(contrib[a] for a in seating)
        observations.append((list(seating), [alpha * k / 3 + 1 - contrib[a] for a in seating]))
    return tensor_from_profiles(observations), contrib


def test_three_player_tensor_metrics() -> None:
    t, contrib = _public_good_metagame()
    assert t.n_players == 3 and t.complete
    assert np.allclose(t.payoffs, np.swapaxes(t.payoffs, 1, 2))  # co-players are a multiset
    x = np.array([0.2, 0.3, 0.5])
    naive = np.einsum("ijk,j,k->i", t.payoffs, x, x)
    assert np.allclose(expected_payoffs(t.payoffs, x), naive)
    # naive multiplicative weights agree with the log-space implementation
    pop = np.full(3, 1 / 3)
    for _ in range(200):
        pop = pop * np.exp(0.1 * np.einsum("ijk,j,k->i", t.payoffs, pop, pop))
        pop /= pop.sum()
    result = replicator_dynamics(t.payoffs, steps=200, lr=0.1, tol=0.0)
    assert np.allclose(result.population, pop, rtol=1e-10)
    assert result.population[t.agents.index("rider")] > 0.99  # free riding takes over
    ratings = deviation_ratings(t.payoffs)
    assert np.allclose(deviation_ratings(t.payoffs, joint="full"), ratings, atol=1e-9)
    assert np.allclose(deviation_ratings(t.payoffs, method="highs-ipm"), ratings, atol=1e-9)
    # contributing is dominated by 0.5 per contribution unit: ratings are ordered by it
    order = sorted(t.agents, key=lambda a: ratings[t.agents.index(a)])
    assert order == ["saint", "mixed", "rider"]
    assert ratings[t.agents.index("rider")] == pytest.approx(0.0, abs=1e-9)


def test_sqrt_learning_rate_and_early_stop() -> None:
    t = tensor_from_profiles(
        [(["a", "b"], [1.0, 1.0]), (["a", "a"], [1.0, 1.0]), (["b", "b"], [1.0, 1.0])]
    )
    still = replicator_dynamics(t.payoffs)
    assert still.steps == 0 and np.allclose(still.population, [0.5, 0.5])
    pd = _sample_tensor(PD)
    slow = replicator_dynamics(pd.payoffs, steps=10, lr=0.1, lr_method="sqrt")
    fast = replicator_dynamics(pd.payoffs, steps=10, lr=0.1)
    i = pd.agents.index("openai/gpt-4o-2024-05-13(CoT)")
    assert fast.population[i] < slow.population[i] < 1 / len(pd.agents)


def test_normalise() -> None:
    assert normalise(1.0, 1.0, 2.0) == 0.0
    assert normalise(2.0, 1.0, 2.0) == 1.0
    assert normalise(1.5, 1.0, 2.0) == 0.5
    assert normalise(3.0, 2.0, 2.0) is None


# ----------------------------------------------------------------------------- from the store


def _insert_match(
    store,
    run_id: str,
    mid: str,
    experiment: int,
    matchup: str,
    condition: dict,
    seats: list[tuple[str, float]],
    game_spec: dict | None = None,
    status: str = "done",
) -> None:
    from coop_tui.store import condition_key

    store.db["matches"].insert(
        {
            "id": mid,
            "run_id": run_id,
            "match_key": mid,
            "experiment": experiment,
            "game": "prisoners",
            "game_spec": json.dumps(game_spec) if game_spec else None,
            "mechanism": "none",
            "condition": json.dumps(condition),
            "condition_key": condition_key(condition),
            "matchup": matchup,
            "sample": 0,
            "status": status,
            "payoffs": json.dumps([p for _, p in seats]),
        }
    )
    for seat, (agent, payoff) in enumerate(seats):
        store.db["seats"].insert({"match_id": mid, "seat": seat, "agent": agent, "payoff": payoff})


def test_tournament_metrics_from_sql_per_condition(tmp_path: Path) -> None:
    from coop_tui.analysis.tournament import tournament_metrics
    from coop_tui.games import get_game
    from coop_tui.store import Store
    from coop_tui.sweep import game_spec

    store = Store(tmp_path / "t.db")
    store.create_run("r1", "cross", kind="sweep", seed=1, sweep_hash="h", spec={})
    spec = game_spec(get_game("prisoners"))
    # PD actions: always-cooperate "c", always-defect "d"; condition 2 doubles payoffs
    table = {("c", "c"): (2, 2), ("c", "d"): (0, 3), ("d", "c"): (3, 0), ("d", "d"): (1, 1)}
    n = 0
    for scale in (1, 2):
        for (a, b), (pa, pb) in table.items():
            for _ in range(2):
                n += 1
                _insert_match(
                    store,
                    "r1",
                    f"m{n}",
                    0,
                    "cross",
                    {"scale": scale},
                    [(a, pa * scale), (b, pb * scale)],
                    spec,
                )
    _insert_match(
        store,
        "r1",
        "failed",
        0,
        "cross",
        {"scale": 1},
        [("c", 99.0), ("c", 99.0)],
        spec,
        status="failed",
    )
    _insert_match(store, "r1", "self", 1, "self", {}, [("c", 2.0), ("c", 2.0)], spec)

    assert tournament_metrics(store, "r1", 1) is None
    out = tournament_metrics(store, "r1", 0)
    assert out is not None
    assert set(out["tournaments"]) == {"scale=1", "scale=2"}
    assert "population" not in out  # two conditions: never pooled
    one = out["tournaments"]["scale=1"]
    assert one["matches"] == 8
    assert one["matchup_matrix"] == {"c": {"c": 2.0, "d": 0.0}, "d": {"c": 3.0, "d": 1.0}}
    pop = one["population"]
    assert pop["c"]["mean_payoff"] == pytest.approx(1.0)
    assert pop["d"]["mean_payoff"] == pytest.approx(2.0)
    assert pop["d"]["fitness"] == pytest.approx(1.0, abs=1e-6)  # defectors take over
    assert pop["d"]["deviation_rating"] == pytest.approx(0.0)
    assert pop["c"]["deviation_rating"] == pytest.approx(-1.0)
    assert one["normalised_welfare"] == pytest.approx(0.5)  # welfare 3 between 2 and 4
    assert one["normalised_welfare_final"] == pytest.approx(0.0, abs=1e-6)
    two = out["tournaments"]["scale=2"]["population"]
    assert two["c"]["mean_payoff"] == pytest.approx(2.0)
    store.close()


def test_tournament_metrics_single_condition_and_missing_matchups(tmp_path: Path) -> None:
    from coop_tui.analysis.tournament import tournament_metrics
    from coop_tui.store import Store

    store = Store(tmp_path / "t.db")
    store.create_run("r1", "cross", kind="sweep", seed=1, sweep_hash="h", spec={})
    _insert_match(store, "r1", "m1", 0, "cross", {}, [("x", 1.0), ("y", 2.0)])
    _insert_match(store, "r1", "m2", 0, "cross", {}, [("y", 0.0), ("x", 4.0)])
    _insert_match(store, "r1", "m3", 0, "cross", {}, [("x", 1.0), ("x", 3.0)])
    out = tournament_metrics(store, "r1", 0)
    assert out["matchup_matrix"] == {"x": {"x": 2.0, "y": 2.5}, "y": {"x": 1.0, "y": None}}
    assert out["population"] is None
    assert out["tournaments"]["-"]["missing"] == [["y", "y"]]
    store.close()


# ----------------------------------------------------------------------------- DevRank, trajectory


def test_deviation_ranks_share_tied_places() -> None:
    from coop_tui.analysis.population import deviation_ranks

    assert deviation_ranks([0.0, -1.0, 0.0, -2.0]) == [1.5, 3.0, 1.5, 4.0]
    assert deviation_ranks([-0.5] * 6) == [3.5] * 6
    # ratings from LPs that differ only in the last bits are one tie
    assert deviation_ranks([-1.0, -1.0 + 1e-12, -3.0]) == [1.5, 1.5, 3.0]
    assert deviation_ranks([-1.0, -1.001]) == [1.0, 2.0]


def test_replicator_trajectory_records_every_step() -> None:
    from coop_tui.analysis.population import replicator_dynamics

    # Prisoner's Dilemma metagame: the defector takes over step by step
    payoffs = np.array([[2.0, 0.0], [3.0, 1.0]])
    plain = replicator_dynamics(payoffs, steps=50)
    recorded = replicator_dynamics(payoffs, steps=50, record=True)
    assert plain.trajectory is None
    assert recorded.trajectory.shape == (recorded.steps + 1, 2)
    assert np.allclose(recorded.trajectory[0], [0.5, 0.5])
    assert np.allclose(recorded.trajectory[-1], plain.population)
    assert np.allclose(recorded.trajectory.sum(axis=1), 1.0)
    assert np.all(np.diff(recorded.trajectory[:, 1]) > 0)  # the defector's share only grows


def test_paper_tables_average_replicates_instead_of_pooling(tmp_path: Path) -> None:
    """A sweep's replicates give one Fitness each; the table shows their mean ± SE."""
    from coop_tui.analysis.coopeval_tables import paper_tables
    from coop_tui.analysis.tournament import tournament_metrics
    from coop_tui.games import get_game
    from coop_tui.store import Store
    from coop_tui.sweep import game_spec

    store = Store(tmp_path / "t.db")
    store.create_run("r1", "cross", kind="sweep", seed=1, sweep_hash="h", spec={})
    spec = game_spec(get_game("prisoners"))
    # replicate 0 is a Prisoner's Dilemma (d takes over), replicate 1 rewards mutual c
    # so well that c takes over: averaging the replicates and pooling them disagree
    tables = [
        {("c", "c"): (2, 2), ("c", "d"): (0, 3), ("d", "c"): (3, 0), ("d", "d"): (1, 1)},
        {("c", "c"): (6, 6), ("c", "d"): (0, 3), ("d", "c"): (3, 0), ("d", "d"): (1, 1)},
    ]
    n = 0
    for replicate, table in enumerate(tables):
        for (a, b), (pa, pb) in table.items():
            n += 1
            _insert_match(store, "r1", f"m{n}", 0, "cross", {}, [(a, pa), (b, pb)], spec)
            store.db.execute("update matches set replicate = ? where id = ?", [replicate, f"m{n}"])
    store.db.conn.commit()
    cells = {(c["table"], c["metric"], c["agent"]): c for c in paper_tables(store, "r1")["tables"]}
    mean_c = cells[("prisoners", "mean", "c")]
    assert (mean_c["value"], mean_c["n"]) == (pytest.approx((1.0 + 3.0) / 2), 2)
    assert mean_c["se"] == pytest.approx(1.0)  # |1 - 3| / 2
    fit = cells[("prisoners", "fitness", "average")]
    assert fit["value"] == pytest.approx((1.0 + 6.0) / 2, abs=1e-3)  # all-d, then all-c
    assert fit["se"] == pytest.approx(2.5, abs=1e-3)
    pooled = tournament_metrics(store, "r1", 0)["population"]
    pooled_avg = sum(v["final_share"] * v["fitness"] for v in pooled.values())
    assert abs(pooled_avg - fit["value"]) > 0.5  # pooling would tell another story
    store.close()


# ----------------------------------------------------------------------------- CoopEval's LP


@pytest.mark.parametrize(("name", "method", "reproduces"), [
    (PD, "highs-ipm", True), (PD, "highs-ds", True),
    (TRUST, "highs-ds", True), (TRUST, "highs-ipm", False),
])
def test_coopeval_lp_emulation_against_the_published_ratings(name: str, method: str, reproduces: bool) -> None:
    """CoopEval's own LP (ordered seatings, equal gains across seats, rated gains held
    equal, 1e-14 tolerance) gives the published deviation_ratings.json of the PD sample
    with either HiGHS method. On the degenerate Trust sample the published ratings are
    one vertex among several: HiGHS's dual simplex lands on it, its interior point +
    crossover (the default, nearest to CoopEval's Gurobi barrier) lands elsewhere and
    gives the solver-independent ratings instead; on the main study's Stag Hunt (run 1,
    tests/test_coopeval_tables.py) it is the other way round."""
    from coop_tui.analysis.coopeval_devrating import coopeval_deviation_ratings

    tensor = _sample_tensor(name)
    published = _published(name, "deviation_ratings.json")
    pub = np.array([published[a] for a in tensor.agents])
    ratings = coopeval_deviation_ratings(tensor.payoffs, method=method)
    assert np.allclose(ratings, pub, atol=1e-9) == reproduces
    if not reproduces:
        assert ratings == pytest.approx(deviation_ratings(tensor.payoffs), abs=1e-9)


def test_coopeval_lp_emulation_on_three_players_and_bad_input() -> None:
    from coop_tui.analysis.coopeval_devrating import coopeval_deviation_ratings

    t, _ = _public_good_metagame()
    ours = deviation_ratings(t.payoffs)
    emulated = coopeval_deviation_ratings(t.payoffs)
    # free riding is dominant: everyone ends at the riders' profile, rated by what
    # switching to each agent gains there; no degeneracy, so both LPs agree
    assert emulated == pytest.approx(ours, abs=1e-9)
    assert emulated.max() == pytest.approx(0.0, abs=1e-12)
    bad = t.payoffs.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="unobserved"):
        coopeval_deviation_ratings(bad)


def test_ratings_through_highspy_are_scipys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The solver-independent ratings solved by HiGHS through highspy (no scipy import)
    equal those of SciPy's linprog to the last bits and rank the agents the same."""
    from coop_tui.analysis import population

    rng = np.random.default_rng(3)
    tensors = [rng.integers(0, 6, size=(n,) * seats).astype(float)
               for n, seats in ((2, 2), (4, 2), (6, 2), (8, 2), (3, 3), (4, 3))]
    tensors += [rng.normal(size=(5, 5)), rng.normal(size=(3, 3, 3))]
    solved = population._highs_dual_simplex
    used = []

    def counted(*args: object) -> object:
        answer = solved(*args)  # type: ignore[arg-type]
        used.append(answer is not None)
        return answer

    for tensor in tensors:
        monkeypatch.setattr(population, "_highs_dual_simplex", counted)
        fast = deviation_ratings(tensor)
        monkeypatch.setattr(population, "_highs_dual_simplex", lambda *a: None)
        slow = deviation_ratings(tensor)
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-11)
        assert deviation_ranks(fast) == deviation_ranks(slow)
    assert used and all(used)  # highspy answered every LP
