"""Deviation ratings built the way CoopEval's code builds its LP (an emulation).

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

CoopEval asks Gurobi for its barrier method (``Method=2``), whose crossover returns a
vertex; the nearest solver here is HiGHS's interior point method with its crossover
(``highs-ipm``), the default below. Which vertex comes back still depends on the
solver, so this is an emulation, measured on every published rating we can read: it
gives the published ratings of CoopEval's Prisoner's Dilemma sample and of the main
study's run-1 Stag Hunt but not of its Trust sample (HiGHS's dual simplex gives that
one and misses the Stag Hunt), and 9 of the 14 reachable DevRank cells of Tables 6-7
(see docs/reproducing-coopeval.md, "DevRank").
"""

from __future__ import annotations

import numpy as np

from coop_tui.analysis.population import _deviation_matrix_full

FREEZE_TOLERANCE = 1e-14
"""Relative to the payoff range, as in CoopEval."""
DECIMALS = 10
"""CoopEval rounds ratings to this many decimals before ranking them."""


def coopeval_deviation_ratings(payoffs: np.ndarray, *, method: str = "highs-ipm") -> np.ndarray:
    """Seat 0's deviation rating of every agent, from CoopEval's iterated LP.

    Raises ``RuntimeError`` when an LP fails or when no constraint is tight within a
    looser ``1e-9`` of the payoff range (CoopEval stops there too).
    """
    from scipy.optimize import linprog

    tensor = np.asarray(payoffs, dtype=float)
    if np.isnan(tensor).any():
        raise ValueError("the matchup tensor has unobserved cells; ratings need every matchup")
    n, seats = tensor.shape[0], tensor.ndim
    gains = _deviation_matrix_full(tensor)  # row p * n + j: seat p switching to agent j
    rows, cols = gains.shape
    spread = float(tensor.max() - tensor.min())
    tol = FREEZE_TOLERANCE * spread
    seat_rows = [np.append(gains[p * n + j] - gains[j], 0.0) for j in range(n) for p in range(1, seats)]
    ratings = np.zeros(rows)
    rated = np.zeros(rows, dtype=bool)
    cost = np.zeros(cols + 1)
    cost[-1] = 1.0
    bounds = [(0.0, None)] * cols + [(None, None)]
    while not rated.all():
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
        eps = float(res.x[-1])
        slack = np.abs(gains @ res.x[:cols] - eps)
        new = ~rated & (slack <= tol)
        if not new.any():
            # HiGHS's solution can miss CoopEval's 1e-14 by rounding where Gurobi's did not:
            # take the tightest constraint if it is tight to the solver's own precision
            j = np.flatnonzero(~rated)[np.argmin(slack[~rated])]
            if slack[j] > 1e-9 * max(spread, 1.0):
                raise RuntimeError("no deviation constraint is tight: the LP answer is unusable")
            new[j] = True
        ratings[new] = eps
        rated |= new
    return np.round(ratings[:n], DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
