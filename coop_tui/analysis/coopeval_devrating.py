"""Deviation ratings by CoopEval's own procedure, with its solver when it is installed.

Our own ratings (:func:`coop_tui.analysis.population.deviation_ratings`) freeze a
constraint only when it is tight in every optimum, so they do not depend on the solver.
CoopEval's published ratings come from one LP vertex, so reproducing its DevRank cells
needs its LP as written, not merely "the vertex rule":

* variables: a distribution over *ordered* seatings (n**N joint profiles) and ``eps``;
* equalities: the distribution sums to one; for every agent, switching to it gains the
  same in every seat as in seat 0; every agent already rated keeps its gain *equal* to
  its rating (not at most its rating);
* inequalities: every unrated agent's gain is at most ``eps``; minimise ``eps``;
* freezing: an unrated constraint is rated at ``eps`` when its gain is within
  ``1e-14`` times the payoff range of ``eps`` at the returned solution;
* ratings are seat 0's, rounded to 10 decimals (so ranks tie on exact equality).

Which vertex comes back is the solver's choice, so the solver matters. CoopEval asked
Gurobi for its barrier method (``Method=2``, with Gurobi's default crossover). With
``gurobipy`` installed (the ``gurobi`` extra; its pip wheel carries a free licence for
models of up to 2,000 variables and constraints, far more than these LPs need) the LP
below goes to Gurobi built in CoopEval's order: variables, then the sum, the seat
equalities (agent by agent) and one row per (seat, agent) constraint. Without it, or
when Gurobi refuses a model (a size-limited licence on a large roster), HiGHS's
interior point method with crossover (``highs-ipm``, the nearest HiGHS has) stands in:
an emulation that picks another vertex on some degenerate tournaments. Gurobi's optimum
also depends on the order of the agents in the LP: they come in the given tensor's order,
which :func:`coop_tui.analysis.coopeval_tables.replicate_metrics` makes CoopEval's (an
imported tournament's roster, from its evaluation files: on the published study 432 of
432 ratings, against 424 by name and 415 in config.json's order). The counts of each on
CoopEval's published data are in docs/reproducing-coopeval.md, "DevRank".
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from coop_tui.analysis.population import _deviation_matrix_full

FREEZE_TOLERANCE = 1e-14
"""Relative to the payoff range, as in CoopEval."""
DECIMALS = 10
"""CoopEval rounds ratings to this many decimals before ranking them."""
GUROBI = "gurobi"
"""The solver name of CoopEval's own solver (``method`` below)."""
FALLBACK_METHOD = "highs-ipm"
"""The HiGHS method that stands in for Gurobi's barrier when Gurobi cannot run."""
NOT_INSTALLED = "gurobipy is not installed (pip install 'coop-tui[gurobi]')"


@dataclass(frozen=True)
class CoopEvalRatings:
    """Seat 0's ratings and the solver that produced them.

    ``note`` says why HiGHS stood in for Gurobi (None when Gurobi ran)."""

    ratings: np.ndarray
    solver: str
    note: str | None = None


class SolverUnavailable(RuntimeError):
    """Gurobi cannot solve this LP here (not installed, or its licence refused the model)."""


def _gurobipy() -> ModuleType:
    """gurobipy, imported when first needed: it is a heavy optional library (the extra)."""
    try:
        import gurobipy
    except ImportError as exc:
        raise SolverUnavailable(NOT_INSTALLED) from exc
    return gurobipy


def gurobi_available() -> bool:
    """Whether ``gurobipy`` can be imported, so ``coopeval`` ratings would use Gurobi."""
    try:
        _gurobipy()
    except SolverUnavailable:
        return False
    return True


def coopeval_ratings(payoffs: np.ndarray) -> CoopEvalRatings:
    """CoopEval's ratings with Gurobi, or with HiGHS (and the reason) when Gurobi cannot run."""
    try:
        return CoopEvalRatings(coopeval_deviation_ratings(payoffs, method=GUROBI), GUROBI)
    except SolverUnavailable as exc:
        ratings = coopeval_deviation_ratings(payoffs, method=FALLBACK_METHOD)
        return CoopEvalRatings(ratings, FALLBACK_METHOD, str(exc))


def coopeval_deviation_ratings(payoffs: np.ndarray, *, method: str = GUROBI) -> np.ndarray:
    """Seat 0's deviation rating of every agent, from CoopEval's iterated LP.

    ``method`` is ``"gurobi"`` (CoopEval's solver; :class:`SolverUnavailable` when it
    cannot run) or a HiGHS method of :func:`scipy.optimize.linprog`. Raises
    ``RuntimeError`` when an LP fails or when no constraint is tight (CoopEval stops there
    too; HiGHS gets a looser ``1e-9`` of the payoff range, see :func:`_freeze`).
    """
    tensor = np.asarray(payoffs, dtype=float)
    if np.isnan(tensor).any():
        raise ValueError("the matchup tensor has unobserved cells; ratings need every matchup")
    n, seats = tensor.shape[0], tensor.ndim
    gains = _deviation_matrix_full(tensor)  # row p * n + j: seat p switching to agent j
    spread = float(tensor.max() - tensor.min())
    solve = _gurobi_solver(gains, n, seats) if method == GUROBI else _highs_solver(gains, n, seats, method)
    ratings = np.zeros(gains.shape[0])
    rated = np.zeros(gains.shape[0], dtype=bool)
    while not rated.all():
        dist, eps = solve(rated, ratings)
        new = _freeze(gains @ dist - eps, rated, spread, loose=method != GUROBI)
        ratings[new] = eps
        rated |= new
    return np.round(ratings[:n], DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0


def _freeze(slack: np.ndarray, rated: np.ndarray, spread: float, *, loose: bool) -> np.ndarray:
    """The unrated constraints tight at this solution, by CoopEval's tolerance.

    HiGHS's solution can miss CoopEval's 1e-14 by rounding where Gurobi's did not, so with
    ``loose`` the tightest one is taken if it is tight to 1e-9 of the payoff range."""
    slack = np.abs(slack)
    new = ~rated & (slack <= FREEZE_TOLERANCE * spread)
    if new.any():
        return new
    j = np.flatnonzero(~rated)[np.argmin(slack[~rated])]
    if not loose or slack[j] > 1e-9 * max(spread, 1.0):
        raise RuntimeError("no deviation constraint is tight: the LP answer is unusable")
    new[j] = True
    return new


def _gurobi_solver(gains: np.ndarray, n: int, seats: int):
    """One LP of the iteration per call, solved by Gurobi's barrier as CoopEval asks it.

    The model is built in CoopEval's order (a vertex can depend on it): the distribution's
    variables, ``eps``, the sum, the seat equalities agent by agent, then one row per
    (seat, agent) in row order, each a row of ``gains @ x``."""
    gp = _gurobipy()
    try:
        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
    except gp.GurobiError as exc:
        raise SolverUnavailable(f"Gurobi did not start: {exc}") from exc

    def solve(rated: np.ndarray, ratings: np.ndarray) -> tuple[np.ndarray, float]:
        model = gp.Model(env=env)
        try:
            model.setParam("Method", 2)  # barrier (then crossover, Gurobi's default)
            dist = model.addMVar(gains.shape[1], lb=0.0)
            eps = model.addVar(lb=-gp.GRB.INFINITY)
            model.addConstr(dist.sum() == 1.0)
            gain = gains @ dist
            for j in range(n):
                for p in range(1, seats):
                    model.addConstr(gain[p * n + j] == gain[j])
            for i in range(gains.shape[0]):
                model.addConstr(gain[i] == ratings[i] if rated[i] else gain[i] <= eps)
            model.setObjective(eps, gp.GRB.MINIMIZE)
            model.optimize()
        except gp.GurobiError as exc:  # e.g. the size-limited licence on a large roster
            model.dispose()
            raise SolverUnavailable(f"Gurobi refused the LP: {exc}") from exc
        if model.Status != gp.GRB.OPTIMAL:
            status = model.Status
            model.dispose()
            raise RuntimeError(f"CoopEval's deviation-rating LP failed (gurobi status {status})")
        answer = (np.asarray(dist.X, dtype=float), float(eps.X))
        model.dispose()
        return answer

    return solve


def _highs_solver(gains: np.ndarray, n: int, seats: int, method: str):
    """One LP of the iteration per call, solved by SciPy's HiGHS ``method``."""
    from scipy.optimize import linprog

    rows, cols = gains.shape
    seat_rows = [np.append(gains[p * n + j] - gains[j], 0.0) for j in range(n) for p in range(1, seats)]
    cost = np.zeros(cols + 1)
    cost[-1] = 1.0
    bounds = [(0.0, None)] * cols + [(None, None)]

    def solve(rated: np.ndarray, ratings: np.ndarray) -> tuple[np.ndarray, float]:
        a_eq = [np.append(np.ones(cols), 0.0), *seat_rows]
        b_eq = [1.0] + [0.0] * len(seat_rows)
        a_ub, b_ub = [], []
        for i in range(rows):
            if rated[i]:
                a_eq.append(np.append(gains[i], 0.0))
                b_eq.append(ratings[i])
            else:
                a_ub.append(np.append(gains[i], -1.0))
                b_ub.append(0.0)
        res = linprog(cost, A_ub=np.array(a_ub), b_ub=b_ub, A_eq=np.array(a_eq), b_eq=b_eq,
                      bounds=bounds, method=method)
        if res.status != 0:
            raise RuntimeError(f"CoopEval's deviation-rating LP failed ({method}): {res.message}")
        return res.x[:cols], float(res.x[-1])

    return solve
