"""Population metrics of a cross-play tournament: Mean, Fitness, deviation ratings.

Everything here starts from the *matchup tensor* of a symmetric metagame in which each
seat picks an agent. For an N-player base game it has N axes of length n (agents):
``payoffs[i, j, k, ...]`` is agent i's mean payoff when its co-players are agents
j, k, ... — pooled over every seat i sat in and every repeat, which makes the tensor
symmetric in its co-player axes. For two players this is the familiar agent x agent
matrix, seat-symmetrised. It is CoopEval's construction, so the metrics below reproduce
their published numbers (see ``tests/test_population.py``).

* **Mean** — expected payoff against the uniform population of agents.
* **Fitness** — discrete replicator dynamics with exponential weights from the uniform
  population (default 1000 steps, learning rate 0.1), then the expected payoff against
  the final population.
* **Deviation rating** (Marris et al. 2025) — the deviation gains of the strictest coarse
  correlated equilibrium of the metagame, found by an iterated LP. The LP is degenerate
  on real tournaments, and freezing the constraints that happen to be tight at the
  vertex a solver returns makes the ratings depend on the solver. We freeze a
  constraint only when it is tight in *every* optimum (a positive dual value proves it;
  otherwise a second LP checks whether it can be slack), which makes the ratings
  unique: the same for every HiGHS method and unchanged when an agent is cloned.

Pure numpy/scipy: no database, no games module. ``tournament.py`` feeds it from SQL.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Literal

import numpy as np

__all__ = [
    "MatchupTensor",
    "ReplicatorResult",
    "deviation_ranks",
    "deviation_ratings",
    "expected_payoffs",
    "mean_payoffs",
    "normalise",
    "population_metrics",
    "replicator_dynamics",
    "tensor_from_profiles",
    "tensor_from_sums",
]

Freeze = Literal["every_optimum", "vertex"]


# ----------------------------------------------------------------------------- tensor


@dataclass(frozen=True)
class MatchupTensor:
    """The symmetric metagame: agents and the focal payoff tensor described above."""

    agents: tuple[str, ...]
    payoffs: np.ndarray
    """Shape ``(n,) * n_players``; NaN where a matchup was never observed."""
    counts: np.ndarray
    """Observations behind each cell (same shape), so callers can judge coverage."""

    @property
    def n_players(self) -> int:
        return self.payoffs.ndim

    @property
    def complete(self) -> bool:
        return bool(np.all(self.counts > 0))

    def missing(self) -> list[tuple[str, ...]]:
        """Focal agent + co-players of every cell with no observation (one per multiset)."""
        seen: set[tuple[int, ...]] = set()
        out = []
        for idx in zip(*np.nonzero(self.counts == 0), strict=True):
            key = (int(idx[0]), *sorted(int(i) for i in idx[1:]))
            if key not in seen:
                seen.add(key)
                out.append(tuple(self.agents[i] for i in key))
        return out

    def matrix(self) -> dict[str, dict[str, float | None]]:
        """Two players only: ``{row agent: {column agent: row agent's mean payoff}}``."""
        if self.n_players != 2:
            raise ValueError("the matchup matrix exists for 2-player games only")
        return {
            a: {
                b: None if math.isnan(self.payoffs[i, j]) else float(self.payoffs[i, j])
                for j, b in enumerate(self.agents)
            }
            for i, a in enumerate(self.agents)
        }


ProfileSums = Mapping[tuple[str, ...], tuple[Sequence[float], Sequence[int]]]


def tensor_from_sums(profiles: ProfileSums, agents: Sequence[str] | None = None) -> MatchupTensor:
    """Build the tensor from per-seating totals.

    ``profiles[(agent in seat 0, agent in seat 1, ...)] = (payoff sum per seat, count per
    seat)``. Each seat's observations are credited to (its agent, the multiset of the
    other seats' agents) and pooled, exactly as CoopEval does, so a seating played more
    often weighs more.
    """
    if not profiles:
        raise ValueError("no matches to build a matchup tensor from")
    names = tuple(agents) if agents is not None else tuple(sorted({a for p in profiles for a in p}))
    index = {a: i for i, a in enumerate(names)}
    n_players = len(next(iter(profiles)))
    sums: dict[tuple[int, ...], float] = defaultdict(float)
    counts: dict[tuple[int, ...], int] = defaultdict(int)
    for seating, (seat_sums, seat_counts) in profiles.items():
        if len(seating) != n_players:
            raise ValueError(f"seating {seating} has {len(seating)} seats, expected {n_players}")
        ids = [index[a] for a in seating]
        for seat, focal in enumerate(ids):
            key = (focal, *sorted(ids[:seat] + ids[seat + 1 :]))
            sums[key] += float(seat_sums[seat])
            counts[key] += int(seat_counts[seat])
    n = len(names)
    shape = (n,) * n_players
    total = np.zeros(shape)
    count = np.zeros(shape, dtype=np.int64)
    for (focal, *others), s in sums.items():
        for perm in set(itertools.permutations(others)):
            total[(focal, *perm)] = s
            count[(focal, *perm)] = counts[(focal, *others)]
    with np.errstate(invalid="ignore", divide="ignore"):
        payoffs = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return MatchupTensor(names, payoffs, count)


def tensor_from_profiles(
    observations: Iterable[tuple[Sequence[str], Sequence[float]]],
    agents: Sequence[str] | None = None,
) -> MatchupTensor:
    """Build the tensor from single matches: (agent per seat, payoff per seat) pairs."""
    sums: dict[tuple[str, ...], tuple[list[float], list[int]]] = {}
    for seating, payoffs in observations:
        key = tuple(seating)
        if key not in sums:
            sums[key] = ([0.0] * len(key), [0] * len(key))
        s, c = sums[key]
        for seat, p in enumerate(payoffs):
            s[seat] += float(p)
            c[seat] += 1
    return tensor_from_sums(sums, agents)


# ----------------------------------------------------------------------------- Mean, Fitness


def expected_payoffs(payoffs: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Each agent's expected payoff when every co-player is drawn from ``population``."""
    out = np.asarray(payoffs, dtype=float)
    pop = np.asarray(population, dtype=float)
    for _ in range(out.ndim - 1):
        out = out @ pop  # contracts the last co-player axis
    return out


def mean_payoffs(payoffs: np.ndarray) -> np.ndarray:
    """'Mean': expected payoff against the uniform population."""
    n = np.asarray(payoffs).shape[0]
    return expected_payoffs(payoffs, np.full(n, 1.0 / n))


@dataclass(frozen=True)
class ReplicatorResult:
    population: np.ndarray
    """The final population shares."""
    fitness: np.ndarray
    """Each agent's expected payoff against the final population."""
    steps: int
    """Updates applied (fewer than asked when the dynamics came to rest)."""
    trajectory: np.ndarray | None = None
    """Population shares before every update and after the last, shape ``(steps + 1, n)``;
    None unless asked for (``record=True``)."""


def replicator_dynamics(
    payoffs: np.ndarray,
    *,
    steps: int = 1000,
    lr: float = 0.1,
    lr_method: Literal["constant", "sqrt"] = "constant",
    tol: float = 1e-6,
    initial: np.ndarray | None = None,
    record: bool = False,
) -> ReplicatorResult:
    """Discrete replicator dynamics with exponential weights (multiplicative weights).

    Each step multiplies every share by ``exp(lr_t * fitness)`` (fitness against the
    current population) and renormalises; ``lr_t`` is ``lr`` or ``lr / sqrt(t)``. As in
    CoopEval, the dynamics stop early once every agent's fitness is within ``tol`` of
    the population average (nothing would move any more). The update is done in log
    space so shares that shrink to 1e-200 keep their exact ratios to one another.
    ``record=True`` keeps the whole trajectory (one row of shares per step), which is
    what the evolution plots show; it costs n floats per step.
    """
    tensor = np.ascontiguousarray(payoffs, dtype=float)
    if np.isnan(tensor).any():
        raise ValueError("the matchup tensor has unobserved cells; fitness needs every matchup")
    # A report runs the same tournament's dynamics twice (its population metrics, then the
    # per-replicate tables): the second time is read from this memo (read-only arrays).
    key = (tensor.tobytes(), tensor.shape, steps, lr, lr_method, tol,
           None if initial is None else np.asarray(initial, dtype=float).tobytes())
    known = _REPLICATOR_MEMO.get(key)
    if known is None:
        known = _replicate(tensor, steps, lr, lr_method, tol, initial)
        if len(_REPLICATOR_MEMO) >= 32:
            _REPLICATOR_MEMO.clear()
        _REPLICATOR_MEMO[key] = known
    return known if record else ReplicatorResult(known.population, known.fitness, known.steps)


_REPLICATOR_MEMO: dict[tuple[object, ...], ReplicatorResult] = {}


def _replicate(
    tensor: np.ndarray, steps: int, lr: float, lr_method: str, tol: float,
    initial: np.ndarray | None,
) -> ReplicatorResult:
    """:func:`replicator_dynamics`, its trajectory recorded."""
    record = True
    n = tensor.shape[0]
    pop = np.full(n, 1.0 / n) if initial is None else np.asarray(initial, dtype=float)
    if pop.shape != (n,) or np.any(pop <= 0):
        raise ValueError("the initial population must give every agent a positive share")
    pop = pop / pop.sum()
    log_pop = np.log(pop)
    done = 0
    history = [pop] if record else None
    for t in range(1, steps + 1):
        fitness = expected_payoffs(tensor, pop)
        if np.max(np.abs(fitness - pop @ fitness)) < tol:
            break
        rate = lr if lr_method == "constant" else lr / math.sqrt(t)
        log_pop = log_pop + rate * fitness
        top = log_pop.max()
        log_pop -= top + math.log(np.exp(log_pop - top).sum())
        pop = np.exp(log_pop)
        done = t
        if history is not None:
            history.append(pop)
    trajectory = np.vstack(history) if history is not None else None
    fitness = expected_payoffs(tensor, pop)
    for array in (pop, fitness, trajectory):
        if array is not None:
            array.setflags(write=False)
    return ReplicatorResult(pop, fitness, done, trajectory)


# ----------------------------------------------------------------------------- deviation ratings


def _multisets(n: int, size: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations_with_replacement(range(n), size))


def _deviation_matrix(tensor: np.ndarray) -> np.ndarray:
    """Deviation gains of a symmetric joint distribution, one column per multiset.

    A symmetric correlated distribution is a distribution over multisets of agents
    (who sits where is uniformly random). For a multiset S a player holds agent i with
    probability mult_S(i)/N; switching to agent j then gains
    ``T[j, S - i] - T[i, S - i]``. Restricting the LP to symmetric distributions loses
    nothing: the game is symmetric, so averaging any optimum over seat permutations
    gives a symmetric optimum with the same deviation gains.
    """
    n, n_players = tensor.shape[0], tensor.ndim
    cols = _multisets(n, n_players)
    dev = np.zeros((n, len(cols)))
    for c, multiset in enumerate(cols):
        for i in set(multiset):
            rest = list(multiset)
            rest.remove(i)
            weight = multiset.count(i) / n_players
            dev[:, c] += weight * (tensor[(slice(None), *rest)] - tensor[(i, *rest)])
    return dev


def _deviation_matrix_full(tensor: np.ndarray) -> np.ndarray:
    """Deviation gains over ordered seatings: row ``p * n + j`` is seat p switching to j.

    The textbook CCE LP (n**N variables, N*n constraints); kept to check that the
    symmetric formulation rates every agent the same way.
    """
    n, n_players = tensor.shape[0], tensor.ndim
    cols = list(itertools.product(range(n), repeat=n_players))
    dev = np.zeros((n_players * n, len(cols)))
    for c, seating in enumerate(cols):
        for p in range(n_players):
            others = seating[:p] + seating[p + 1 :]
            dev[p * n : (p + 1) * n, c] = (
                tensor[(slice(None), *others)] - tensor[(seating[p], *others)]
            )
    return dev


def _linprog(
    c: np.ndarray,
    a_ub: np.ndarray,
    b_ub: np.ndarray,
    a_eq: np.ndarray,
    b_eq: np.ndarray,
    bounds: list[tuple[float | None, float | None]],
    method: str,
    *,
    any_vertex: bool = False,
):
    """``scipy.optimize.linprog``'s answer (``x``, ``fun``, ``ineqlin.marginals``).

    With ``any_vertex`` (the caller reads nothing that depends on which optimal vertex
    comes back), HiGHS's dual simplex is asked through ``highspy`` when it is installed:
    the same solver as SciPy's ``highs-ds`` without importing ``scipy.optimize`` (a third
    of a second, the largest cost of rating a strategy tournament at the end of
    ``--batch``). Its HiGHS may be another version than SciPy's, so the values can differ
    in the last bits and a degenerate LP can end on another vertex: ``freeze="vertex"``
    ratings, which read the vertex, always go to SciPy."""
    if method == "highs-ds" and any_vertex:
        answer = _highs_dual_simplex(c, a_ub, b_ub, a_eq, b_eq, bounds)
        if answer is not None:
            return answer
    from scipy.optimize import linprog

    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method=method)
    if res.status != 0:
        raise RuntimeError(f"deviation-rating LP failed ({method}): {res.message}")
    return res


def _highs_dual_simplex(
    c: np.ndarray, a_ub: np.ndarray, b_ub: np.ndarray, a_eq: np.ndarray, b_eq: np.ndarray,
    bounds: list[tuple[float | None, float | None]],
) -> SimpleNamespace | None:
    """The LP ``min c x, a_ub x <= b_ub, a_eq x = b_eq`` by HiGHS's dual simplex through
    ``highspy``, answered in ``linprog``'s shape; None when highspy is not installed (or
    lacks the entry point used here) or the LP is not solved to optimality (SciPy then
    solves it and explains a failure)."""
    try:
        import highspy  # optional: SciPy's HiGHS answers without it

        # the core class: the public ``Highs`` prints a banner to the process's stdout
        highs = highspy._core._Highs()
    except (ImportError, AttributeError):
        return None
    inf = highspy.kHighsInf
    matrix = np.vstack([a_ub, a_eq]).astype(float)
    lp = highspy.HighsLp()
    lp.num_row_, lp.num_col_ = matrix.shape
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_ = np.array([-inf if lo is None else lo for lo, _hi in bounds], dtype=float)
    lp.col_upper_ = np.array([inf if hi is None else hi for _lo, hi in bounds], dtype=float)
    lp.row_lower_ = np.concatenate([np.full(len(b_ub), -inf), b_eq]).astype(float)
    lp.row_upper_ = np.concatenate([b_ub, b_eq]).astype(float)
    rows, cols = np.nonzero(matrix.T)  # column by column, as kColwise stores it
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(rows, np.arange(matrix.shape[1] + 1)).astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = matrix.T[rows, cols]
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("solver", "simplex")
    highs.setOptionValue("simplex_strategy", 1)  # dual, as SciPy's highs-ds sets it
    highs.passModel(lp)
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    x = np.array(solution.col_value)
    return SimpleNamespace(x=x, fun=float(np.asarray(c, dtype=float) @ x),
                           ineqlin=SimpleNamespace(marginals=np.array(solution.row_dual[:len(b_ub)])))


def _always_tight(
    dev: np.ndarray, j: int, bound: np.ndarray, eps: float, tol: float, method: str
) -> bool:
    """Is constraint j at ``eps`` in every optimum? Minimise its gain over the optimal face."""
    m = dev.shape[1]
    res = _linprog(dev[j], dev, bound + tol, np.ones((1, m)), np.ones(1), [(0, None)] * m, method,
                   any_vertex=True)
    return res.fun >= eps - 100 * tol


def deviation_ratings(
    payoffs: np.ndarray,
    *,
    method: str = "highs-ds",
    freeze: Freeze = "every_optimum",
    joint: Literal["symmetric", "full"] = "symmetric",
    tol: float = 1e-9,
) -> np.ndarray:
    """Deviation rating of every agent (Marris et al. 2025): <= 0, higher is better.

    Iterated LP: minimise the largest deviation gain ``eps`` over the still-unrated
    agents, keeping every rated agent's gain at or below its rating; rate at ``eps`` the
    agents whose constraint is tight in every optimum; repeat until all are rated.
    ``freeze="vertex"`` instead rates whatever is tight at the returned vertex (what
    CoopEval does); it is kept to reproduce their published numbers and to show that
    its answer depends on the solver. ``joint="full"`` solves over ordered seatings and
    rates each seat separately (returning seat 0's ratings) instead of over symmetric
    distributions; with ``every_optimum`` both give the same ratings. ``tol`` is
    relative to the payoff range.
    """
    tensor = np.asarray(payoffs, dtype=float)
    if np.isnan(tensor).any():
        raise ValueError("the matchup tensor has unobserved cells; ratings need every matchup")
    spread = float(tensor.max() - tensor.min())
    scale = spread if spread > 0 else 1.0
    unit = (tensor - tensor.min()) / scale
    dev = _deviation_matrix(unit) if joint == "symmetric" else _deviation_matrix_full(unit)
    n, m = dev.shape
    ratings = np.zeros(n)
    rated = np.zeros(n, dtype=bool)
    cost = np.zeros(m + 1)
    cost[-1] = 1.0
    a_eq = np.append(np.ones(m), 0.0)[None, :]
    bounds: list[tuple[float | None, float | None]] = [(0, None)] * m + [(None, None)]
    while not rated.all():
        a_ub = np.hstack([dev, -(~rated).astype(float)[:, None]])
        b_ub = np.where(rated, ratings, 0.0)
        res = _linprog(cost, a_ub, b_ub, a_eq, np.ones(1), bounds, method,
                       any_vertex=freeze != "vertex")
        eps = float(res.x[-1])
        gains = dev @ res.x[:m]
        duals = -np.asarray(res.ineqlin.marginals)
        new = np.zeros(n, dtype=bool)
        for j in np.flatnonzero(~rated):
            if freeze == "vertex":
                new[j] = abs(gains[j] - eps) <= tol
            elif duals[j] > 1e-7:
                new[j] = True  # a positive dual: tight in every optimum (complementary slackness)
            elif gains[j] >= eps - tol:
                bound = np.where(rated, ratings, eps)
                new[j] = _always_tight(dev, j, bound, eps, tol, method)
        if not new.any():
            # numerical corner: the largest dual is still a certificate of tightness
            new[np.flatnonzero(~rated)[np.argmax(duals[~rated])]] = True
        ratings[new] = eps
        rated |= new
    return ratings[: tensor.shape[0]] * scale + 0.0  # + 0.0 turns -0.0 into 0.0


def deviation_ranks(ratings: Sequence[float], *, tol: float = 1e-9) -> list[float]:
    """'DevRank': rank 1 for the highest deviation rating; tied agents share the mean rank.

    Ratings within ``tol`` (relative to the largest magnitude, at least absolute ``tol``)
    count as tied: our ratings come from LPs, so equal ratings can differ in the last
    bits. With six agents all tied, everyone gets rank 3.5.
    """
    values = [float(r) for r in ratings]
    scale = max([abs(v) for v in values] + [1.0])
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and values[order[start]] - values[order[end]] <= tol * scale:
            end += 1
        shared = (start + 1 + end) / 2  # mean of the ranks start+1 .. end
        for i in order[start:end]:
            ranks[i] = shared
        start = end
    return ranks


# ----------------------------------------------------------------------------- together


def normalise(value: float, defect_value: float, cooperate_value: float) -> float | None:
    """Map a payoff so all-defect is 0 and all-cooperate is 1 (None if they coincide)."""
    if math.isclose(defect_value, cooperate_value):
        return None
    return (value - defect_value) / (cooperate_value - defect_value)


def population_metrics(
    tensor: MatchupTensor,
    *,
    steps: int = 1000,
    lr: float = 0.1,
    method: str = "highs-ds",
    ratings: np.ndarray | None = None,
) -> dict[str, dict[str, float]]:
    """``{agent: {mean_payoff, fitness, final_share, deviation_rating}}`` of a complete tensor
    (``ratings``: the tensor's deviation ratings when the caller has them already)."""
    mean = mean_payoffs(tensor.payoffs)
    dyn = replicator_dynamics(tensor.payoffs, steps=steps, lr=lr)
    if ratings is None:
        ratings = deviation_ratings(tensor.payoffs, method=method)
    return {
        agent: {
            "mean_payoff": float(mean[i]),
            "fitness": float(dyn.fitness[i]),
            "final_share": float(dyn.population[i]),
            "deviation_rating": float(ratings[i]),
        }
        for i, agent in enumerate(tensor.agents)
    }
