"""Game theory for any finite game: equilibria, dominance, welfare, similarity.

Classical tools (pure Nash for any number of players, mixed Nash for two players via
nashpy, iterated elimination of dominated actions, welfare-optimal profiles) sit next
to the b-similarity equilibrium of similarity signals section 3. There, a symmetric profile
(s, ..., s) is an equilibrium when no deviation s' pays for a player who expects each
co-player to copy the deviation with probability b (independently) and to keep
playing s otherwise. ``b_star`` finds the similarity above which full cooperation is
such an equilibrium, which is what the cooperation curves mark.

Deviations range over *mixed* strategies, as the definition asks. That matters: in
Chicken a small probability of going straight pays for every b < 1, although no pure
deviation does once b >= 1/11. The best deviation along every edge of the simplex is
found exactly (the gain is a polynomial of degree n in the mixing weight); for three
or more actions, interior points are searched from several starts with SLSQP.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from coop_tui.games.base import Game

Strategy = int | str | Sequence[float] | np.ndarray
"""An action index, an action name, or a probability vector over seat 0's actions."""


# --------------------------------------------------------------------------- helpers
def _tol(game: Game) -> float:
    """Numerical slack scaled to the game's payoffs (games may be scaled by 10 or more)."""
    return 1e-9 * max(1.0, float(np.abs(game.payoffs).max()))


def max_abs_payoff(game: Game) -> float:
    """u_max of Theorem 1: the largest absolute payoff of seat 0 over all profiles."""
    return float(np.abs(game.payoffs[..., 0]).max())


def as_strategy(game: Game, strategy: Strategy, seat: int = 0) -> np.ndarray:
    """A probability vector over ``seat``'s actions from an index, a name or a vector."""
    k = game.action_counts[seat]
    if isinstance(strategy, str):
        names = game.action_names[seat]
        if strategy not in names:
            raise ValueError(f"{strategy!r} is not an action of {game.key}; actions: {names}")
        strategy = names.index(strategy)
    if isinstance(strategy, int | np.integer) and not isinstance(strategy, bool):
        if not 0 <= strategy < k:
            raise ValueError(f"action index {strategy} is out of range for {k} actions")
        vec = np.zeros(k)
        vec[int(strategy)] = 1.0
        return vec
    vec = np.asarray(strategy, dtype=float)
    if vec.shape != (k,):
        raise ValueError(f"a strategy needs {k} probabilities, got shape {vec.shape}")
    if (vec < -1e-12).any() or not math.isclose(vec.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"a strategy must be non-negative and sum to 1, got {vec.tolist()}")
    vec = np.clip(vec, 0.0, None)
    return vec / vec.sum()


def _require_symmetric(game: Game, what: str) -> None:
    if not game.symmetric:
        raise ValueError(f"{what} is defined for symmetric games; {game.key} is not symmetric")


def welfare(game: Game, profile: Sequence[int]) -> float:
    """Sum of all seats' payoffs at a pure profile."""
    return float(sum(game.payoff(profile)))


# --------------------------------------------------------------------------- Nash
def pure_nash_equilibria(game: Game) -> list[tuple[int, ...]]:
    """Every pure profile where no seat gains by switching action alone (any n)."""
    tol = _tol(game)
    stable = np.ones(game.action_counts, dtype=bool)
    for i in range(game.n_players):
        own = game.payoffs[..., i]
        stable &= own >= own.max(axis=i, keepdims=True) - tol
    return [tuple(int(a) for a in p) for p in np.argwhere(stable)]


def is_nash(game: Game, strategies: Sequence[Strategy]) -> bool:
    """True when no seat has a better pure reply to the others' (mixed) strategies."""
    strats = [as_strategy(game, s, seat) for seat, s in enumerate(strategies)]
    values = game.expected_payoffs(strats)
    for i in range(game.n_players):
        replies = _contract_except(game.payoffs[..., i], strats, i)
        if replies.max() > values[i] + _tol(game):
            return False
    return True


def mixed_nash_equilibria(
    game: Game, method: str = "support"
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Nash equilibria of a two-player game (mixed included), via nashpy.

    ``method`` is ``"support"`` (support enumeration, every support size pair, so it
    also copes with degenerate games), ``"vertex"`` (vertex enumeration) or
    ``"lemke_howson"``. Results are checked, de-duplicated and sorted. Degenerate games
    can have infinitely many equilibria; the methods then return a finite selection.
    """
    if game.n_players != 2:
        raise ValueError(
            f"mixed equilibria need a two-player game; {game.key} has "
            f"{game.n_players} players (use pure_nash_equilibria)"
        )
    import nashpy

    nash_game = nashpy.Game(game.payoffs[..., 0], game.payoffs[..., 1])
    runners = {
        "support": lambda: nash_game.support_enumeration(non_degenerate=False),
        "vertex": nash_game.vertex_enumeration,
        "lemke_howson": nash_game.lemke_howson_enumeration,
    }
    if method not in runners:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(runners)}")
    found: dict[tuple[float, ...], tuple[np.ndarray, np.ndarray]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nashpy warns on degenerate games; we verify below
        for row, col in runners[method]():
            row, col = np.asarray(row, dtype=float), np.asarray(col, dtype=float)
            if not (np.isfinite(row).all() and np.isfinite(col).all()):
                continue
            if (row < -1e-9).any() or (col < -1e-9).any():
                continue
            row, col = np.clip(row, 0, None), np.clip(col, 0, None)
            if row.sum() <= 0 or col.sum() <= 0:
                continue
            row, col = row / row.sum(), col / col.sum()
            if not is_nash(game, [row, col]):
                continue
            found.setdefault(tuple(np.round(np.concatenate([row, col]), 9)), (row, col))
    return [found[k] for k in sorted(found, reverse=True)]


# --------------------------------------------------------------------------- dominance
def _dominated(rows: np.ndarray, weak: bool, mixed: bool, tol: float) -> list[int]:
    """Indices of rows (own actions x opponent profiles) dominated by another action."""
    m = rows.shape[0]
    out = []
    for a in range(m):
        others = [b for b in range(m) if b != a]
        by_pure = any(_beats(rows[b], rows[a], weak, tol) for b in others)
        if by_pure or (mixed and len(others) >= 2 and _mixed_dominated(rows[a], rows[others], tol)):
            out.append(a)
    return out


def _beats(better: np.ndarray, worse: np.ndarray, weak: bool, tol: float) -> bool:
    if (better > worse + tol).all():
        return True
    return weak and bool((better >= worse - tol).all() and (better > worse + tol).any())


def _mixed_dominated(row: np.ndarray, others: np.ndarray, tol: float) -> bool:
    """Is ``row`` strictly beaten everywhere by some mixture of ``others``? (an LP)"""
    from scipy.optimize import linprog

    m, cols = others.shape
    # variables: mixture weights (m) and the margin eps; maximise eps
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-others.T, np.ones((cols, 1))])  # eps - sum_j w_j U_j[c] <= -row[c]
    b_ub = -row
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0, None)] * m + [(None, None)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs")
    return bool(res.status == 0 and -res.fun > tol)


def iterated_elimination(
    game: Game, *, weak: bool = False, mixed: bool = False
) -> tuple[tuple[int, ...], ...]:
    """Actions of every seat that survive iterated elimination of dominated actions.

    Strict dominance by default; ``weak=True`` removes weakly dominated actions too
    (all dominated actions of all seats are removed together each round, so the result
    does not depend on an arbitrary order), ``mixed=True`` also lets mixtures of
    actions dominate (strict dominance only).
    """
    if weak and mixed:
        raise ValueError("mixed dominance is supported for strict elimination only")
    tol = _tol(game)
    alive = [list(range(c)) for c in game.action_counts]
    while True:
        sub = game.payoffs[np.ix_(*alive)]
        removals = []
        for i in range(game.n_players):
            rows = np.moveaxis(sub[..., i], i, 0).reshape(len(alive[i]), -1)
            removals.append(_dominated(rows, weak, mixed, tol))
        if not any(removals):
            return tuple(tuple(a) for a in alive)
        for i, gone in enumerate(removals):
            alive[i] = [a for j, a in enumerate(alive[i]) if j not in gone]


# --------------------------------------------------------------------------- welfare
def welfare_optimal_symmetric(game: Game) -> tuple[int, ...]:
    """The symmetric pure profile (a, ..., a) with the highest total payoff.

    Ties go to the lowest action index, i.e. to the cooperative action in built-ins.
    """
    counts = game.action_counts
    if len(set(counts)) != 1:
        raise ValueError(f"{game.key} gives seats different action sets; no symmetric profile")
    n = game.n_players
    best = max(range(counts[0]), key=lambda a: (welfare(game, (a,) * n), -a))
    return (best,) * n


def welfare_optimal_profiles(game: Game) -> list[tuple[int, ...]]:
    """Every pure profile with the highest total payoff (any game)."""
    totals = game.payoffs.sum(axis=-1)
    return [tuple(int(a) for a in p) for p in np.argwhere(totals >= totals.max() - _tol(game))]


# --------------------------------------------------------------------------- similarity
def _contract_except(tensor: np.ndarray, strategies: Sequence[np.ndarray], keep: int) -> np.ndarray:
    """Expected values over every seat's strategy except ``keep`` (a vector over its actions)."""
    res = tensor
    for idx in reversed(range(len(strategies))):
        if idx != keep:
            res = np.tensordot(res, strategies[idx], axes=([idx], [0]))
    return res


def _co_player_b(game: Game, b: float | Sequence[float]) -> np.ndarray:
    n_co = game.n_players - 1
    arr = np.full(n_co, b, dtype=float) if np.ndim(b) == 0 else np.asarray(b, dtype=float)
    if arr.shape != (n_co,):
        raise ValueError(f"b needs one value per co-player ({n_co}), got {np.ndim(b)}-d {b!r}")
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"similarity b must lie in [0, 1], got {b!r}")
    return arr


class _Deviation:
    """The gain g(x) = u_1(x, b_j x + (1 - b_j) s for each co-player j) - u_1(s, ..., s)."""

    def __init__(self, game: Game, strategy: np.ndarray, b: np.ndarray) -> None:
        self.u = game.payoffs[..., 0]
        self.s = strategy
        self.b = b
        self.base = float(self._value(strategy))

    def _profile(self, x: np.ndarray) -> list[np.ndarray]:
        return [x, *(bj * x + (1 - bj) * self.s for bj in self.b)]

    def _value(self, x: np.ndarray) -> float:
        return float(_contract_except(self.u, self._profile(x), -1))

    def gain(self, x: np.ndarray) -> float:
        return self._value(x) - self.base

    def gradient(self, x: np.ndarray) -> np.ndarray:
        profile = self._profile(x)
        grad = _contract_except(self.u, profile, 0)
        for j, bj in enumerate(self.b, start=1):
            grad = grad + bj * _contract_except(self.u, profile, j)
        return grad


def _best_on_edge(
    dev: _Deviation, e_i: np.ndarray, e_j: np.ndarray, degree: int
) -> tuple[float, np.ndarray]:
    """Exact maximum of the gain on the segment from e_j (t=0) to e_i (t=1)."""
    nodes = 0.5 - 0.5 * np.cos(np.pi * (np.arange(degree + 3) + 0.5) / (degree + 3))
    values = [dev.gain(t * e_i + (1 - t) * e_j) for t in nodes]
    coeffs = np.polynomial.polynomial.polyfit(nodes, values, degree)
    crit = (
        np.polynomial.polynomial.polyroots(np.polynomial.polynomial.polyder(coeffs))
        if degree > 1
        else np.array([])
    )
    candidates = [0.0, 1.0, *np.linspace(0, 1, 9)]
    candidates += [
        float(r.real) for r in np.atleast_1d(crit) if abs(r.imag) < 1e-7 and 0.0 < r.real < 1.0
    ]
    best = max(candidates, key=lambda t: dev.gain(t * e_i + (1 - t) * e_j))
    x = best * e_i + (1 - best) * e_j
    return dev.gain(x), x


def _best_interior(dev: _Deviation, k: int) -> tuple[float, np.ndarray]:
    """Local searches over the whole simplex from the centre and a few fixed points."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    starts = [np.full(k, 1.0 / k), *rng.dirichlet(np.ones(k), size=5)]
    best_gain, best_x = -math.inf, starts[0]
    for start in starts:
        res = minimize(
            lambda x: -dev.gain(x),
            start,
            jac=lambda x: -dev.gradient(x),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * k,
            constraints=[
                {"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)}
            ],
            options={"maxiter": 200, "ftol": 1e-13},
        )
        x = np.clip(res.x, 0.0, None)
        x = x / x.sum()
        g = dev.gain(x)
        if g > best_gain:
            best_gain, best_x = g, x
    return best_gain, best_x


def similarity_gain(
    game: Game, strategy: Strategy, b: float | Sequence[float], *, mixed: bool = True
) -> tuple[float, np.ndarray]:
    """The most a deviation gains against (s, ..., s) under similarity b, and that deviation.

    ``b`` is one similarity for every co-player or one per co-player. ``mixed=False``
    only tries pure deviations (the reasoning many model traces show). The gain is at
    least 0 (deviating to s itself gains nothing).
    """
    _require_symmetric(game, "the b-similarity equilibrium")
    s = as_strategy(game, strategy)
    dev = _Deviation(game, s, _co_player_b(game, b))
    k = game.action_counts[0]
    eye = np.eye(k)
    best_gain, best_x = 0.0, s
    for a in range(k):
        g = dev.gain(eye[a])
        if g > best_gain:
            best_gain, best_x = g, eye[a]
    if not mixed:
        return best_gain, best_x
    for i, j in itertools.combinations(range(k), 2):
        g, x = _best_on_edge(dev, eye[i], eye[j], game.n_players)
        if g > best_gain:
            best_gain, best_x = g, x
    if not np.isclose(s.max(), 1.0):
        # a mixed s: also try moving from s towards each action
        for a in range(k):
            g, x = _best_on_edge(dev, eye[a], s, game.n_players)
            if g > best_gain:
                best_gain, best_x = g, x
    if k >= 3:
        g, x = _best_interior(dev, k)
        if g > best_gain:
            best_gain, best_x = g, x
    return float(best_gain), best_x


def similarity_slope(game: Game, strategy: Strategy, b: float | Sequence[float]) -> float:
    """The steepest rate at which the gain rises when s is shifted a little towards
    some action. Positive means tiny mixed deviations already pay.

    The gain itself is only second-order small near such a threshold, so a tolerance
    on the gain alone would place b* off by about sqrt(tolerance); the slope crosses
    zero linearly and pins the threshold down.
    """
    _require_symmetric(game, "the b-similarity equilibrium")
    s = as_strategy(game, strategy)
    grad = _Deviation(game, s, _co_player_b(game, b)).gradient(s)
    return float((grad - grad @ s).max())


def is_b_similarity_equilibrium(
    game: Game, strategy: Strategy, b: float | Sequence[float], *, mixed: bool = True
) -> bool:
    """Definition 1 of the similarity signals paper: no deviation pays when co-players copy it with prob. b."""
    tol = _tol(game)
    if mixed and similarity_slope(game, strategy, b) > tol:
        return False
    return similarity_gain(game, strategy, b, mixed=mixed)[0] <= tol


def b_star(game: Game, *, mixed: bool = True) -> float | None:
    """The similarity above which full cooperation is a b-similarity equilibrium.

    Returns the smallest b such that all-cooperate is a b'-similarity equilibrium for
    every b' in [b, 1]; 0.0 if it is already a Nash equilibrium; ``None`` if the game is
    not symmetric, has no cooperative action, or all-cooperate is not even a
    1-similarity equilibrium (another symmetric profile, possibly mixed, pays more).
    Prisoners gives exactly 1/2.

    For two players the largest gain is a maximum of functions linear in b, hence
    convex, so the equilibrium set is an interval ending at 1 and bisection is exact.
    For more players it is scanned on a grid of step 1/40 first; the threshold is then
    refined by bisection and snapped to a simple fraction when one lies within 1e-7.
    ``mixed=False`` only considers pure deviations.
    """
    if not game.has_cooperation or not game.symmetric:
        return None
    coop = game.all_cooperate_profile()[0]
    cache_key = (game.payoffs.shape, game.payoffs.tobytes(), coop, mixed)
    if cache_key not in _B_STAR_CACHE:
        if len(_B_STAR_CACHE) >= 256:
            _B_STAR_CACHE.clear()
        _B_STAR_CACHE[cache_key] = _b_star(game, coop, mixed)
    return _B_STAR_CACHE[cache_key]


_B_STAR_CACHE: dict[tuple[Any, ...], float | None] = {}


def _b_star(game: Game, coop: int, mixed: bool) -> float | None:
    """The search behind :func:`b_star` (which caches it: reports ask once per cell)."""

    def fails(b: float) -> bool:
        return not is_b_similarity_equilibrium(game, coop, b, mixed=mixed)

    if fails(1.0):
        return None
    grid = np.linspace(0.0, 1.0, 41)
    if game.n_players == 2:
        if not fails(0.0):
            return 0.0
        lo, hi = 0.0, 1.0
    else:
        bad = [float(b) for b in grid[:-1] if fails(float(b))]
        if not bad:
            return 0.0
        lo = max(bad)
        hi = float(grid[grid > lo][0])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if fails(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    simple = Fraction(hi).limit_denominator(1000)
    return float(simple) if abs(float(simple) - hi) < 1e-7 else hi


def theorem1_bound(game: Game, b: float | Sequence[float]) -> float:
    """Theorem 1's per-player slack: 2**(n-1) * u_max * (1 - min b).

    A b-similarity equilibrium (s, ..., s) pays each player at least
    u(s', ..., s') minus this, for every s'. Multiply by n for the welfare version.
    """
    bs = _co_player_b(game, b)
    return 2 ** (game.n_players - 1) * max_abs_payoff(game) * (1.0 - float(bs.min()))


def satisfies_theorem1(game: Game, strategy: Strategy, b: float | Sequence[float]) -> bool:
    """Check Theorem 1 for one profile: if (s, ..., s) is a b-similarity equilibrium,
    no symmetric profile (s', ..., s') beats it by more than :func:`theorem1_bound`.

    The best symmetric profile is the best deviation under b = 1, where every
    co-player copies the deviation. Profiles that are not equilibria pass trivially.
    """
    if not is_b_similarity_equilibrium(game, strategy, b):
        return True
    best_symmetric_gain = similarity_gain(game, strategy, 1.0)[0]
    return best_symmetric_gain <= theorem1_bound(game, b) + _tol(game)


# --------------------------------------------------------------------------- summary
def theory_summary(game: Game) -> dict[str, Any]:
    """Everything above for one game, JSON-ready, with action names for people."""

    def named(profile: Sequence[int]) -> list[str]:
        return [game.action_names[i][a] for i, a in enumerate(profile)]

    out: dict[str, Any] = {
        "key": game.key,
        "players": game.n_players,
        "symmetric": game.symmetric,
        "pure_nash": [named(p) for p in pure_nash_equilibria(game)],
        "strictly_undominated": [
            [game.action_names[i][a] for a in alive]
            for i, alive in enumerate(iterated_elimination(game))
        ],
        "welfare_optimal": [named(p) for p in welfare_optimal_profiles(game)],
    }
    if game.n_players == 2:
        out["mixed_nash"] = [
            [np.round(r, 6).tolist(), np.round(c, 6).tolist()]
            for r, c in mixed_nash_equilibria(game)
        ]
    if len(set(game.action_counts)) == 1:
        out["welfare_optimal_symmetric"] = named(welfare_optimal_symmetric(game))
    out["b_star"] = b_star(game)
    out["b_star_pure_deviations"] = b_star(game, mixed=False)
    return out
