"""Moran dynamics over a finite population, from the payoffs a tournament already stored.

CoopEval's population metric is replicator dynamics: an infinite population, shares
moving smoothly. A finite population drifts: a better agent can die out, a worse one can
take over by chance. The Moran process asks how often. A population of ``N`` players,
``k`` of them agent *i* and the rest agent *j*, plays the stored game among itself; each
step one player is born, with probability proportional to its fitness, and one dies,
uniformly at random; the newborn copies its parent. Fitness comes from the payoffs each
player would expect against co-players drawn from the rest of the population, read from
the tournament's matchup tensor (no model is asked anything again). Axelrod's
``ApproximateMoranProcess`` is the same process fed cached match outcomes; its
simulated fixation frequencies are this module's reference (tests/test_moran.py).

What is computed, exactly:

* ``fixation[i][j]`` — the probability that one *i* placed among ``N - 1`` *j* takes the
  whole population. With ``f_i(k)``, ``f_j(k)`` the fitness of each type when *i* has ``k``
  copies, the birth–death chain gives ``1 / (1 + sum_m prod_{k<=m} f_j(k) / f_i(k))``
  (Nowak 2006, ch. 6); ``1/N`` is the neutral benchmark.
* ``stationary`` — the long-run share of time the population spends all-*i*, when
  mutations are rare: the embedded chain between uniform populations moves from *j* to *i*
  with probability ``fixation[i][j] / (n - 1)`` (Fudenberg and Imhof 2006), and its
  stationary distribution is solved exactly.
* ``simulate_fixation`` — the same fixation probabilities by seeded simulation, for
  checking the closed form (and for anyone who wants to see the process run).

In an n-player game a player meets ``n - 1`` co-players drawn without replacement from
the other ``N - 1``; the expected payoff sums over the hypergeometric compositions, so a
three-player Public Goods tournament works like a two-player one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_POPULATION = 10
"""Axelrod's examples and the issue that asked for this section use populations of ten."""
DEFAULT_SELECTION = 1.0
"""Selection intensity ``w``: fitness ``1 - w + w * payoff`` (linear) or
``exp(w * payoff)`` (exponential). ``w = 1`` with linear fitness is fitness = payoff,
Axelrod's default."""
FITNESS_MAPS = ("linear", "exponential")


class MoranError(ValueError):
    """A population the process cannot run on (a fitness that is not positive, a tensor
    with unplayed matchups, a population smaller than the game)."""


@dataclass(frozen=True)
class MoranSettings:
    population: int = DEFAULT_POPULATION
    selection: float = DEFAULT_SELECTION
    fitness: str = "linear"

    def check(self, n_players: int) -> None:
        if self.population < max(2, n_players):
            raise MoranError(f"a population of {self.population} cannot fill a game of "
                             f"{n_players} players; give at least {max(2, n_players)}")
        if self.fitness not in FITNESS_MAPS:
            raise MoranError(f"fitness {self.fitness!r} is not one of {', '.join(FITNESS_MAPS)}")
        if not self.selection > 0:
            raise MoranError(f"selection intensity {self.selection} must be positive")


def _fitness(payoff: float, settings: MoranSettings) -> float:
    if settings.fitness == "exponential":
        try:
            return math.exp(settings.selection * payoff)
        except OverflowError:
            return math.inf
    return 1.0 - settings.selection + settings.selection * payoff


def expected_payoff(payoffs: np.ndarray, focal: int, other: int, k: int, population: int) -> float:
    """Mean payoff of one ``focal`` player when the population holds ``k`` focal players
    and ``population - k`` players of ``other``; co-players are drawn without replacement
    from the rest."""
    co = payoffs.ndim - 1
    same, different = k - 1, population - k
    total = math.comb(population - 1, co)
    value = 0.0
    for m in range(max(0, co - different), min(co, same) + 1):
        weight = math.comb(same, m) * math.comb(different, co - m) / total
        if weight:
            value += weight * float(payoffs[(focal, *([focal] * m), *([other] * (co - m)))])
    return value


def fixation_probability(payoffs: np.ndarray, mutant: int, resident: int,
                         settings: MoranSettings) -> float:
    """Probability that one ``mutant`` among ``N - 1`` ``resident`` players fixes."""
    n = settings.population
    ratios = []
    for k in range(1, n):
        f_mutant = _fitness(expected_payoff(payoffs, mutant, resident, k, n), settings)
        f_resident = _fitness(expected_payoff(payoffs, resident, mutant, n - k, n), settings)
        if f_mutant < 0 or f_resident < 0:
            raise MoranError(
                "a fitness is negative (payoffs below 1 - 1/w under linear fitness); use "
                "fitness = \"exponential\" or a smaller selection intensity")
        if f_mutant == 0 == f_resident:
            raise MoranError("every player has fitness 0 in some population, so nobody is "
                             "ever born; use fitness = \"exponential\"")
        if f_mutant == 0:  # the mutants never reproduce there: they cannot fix
            return 0.0
        ratios.append(f_resident / f_mutant)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(np.cumprod(ratios)))
    if math.isnan(total) or not all(map(math.isfinite, ratios)):
        raise MoranError("the fitness ratios overflow (payoffs too large for this selection "
                         "intensity); use a smaller selection intensity")
    return 1.0 / (1.0 + total)  # an infinite sum fixes nothing: 0


def fixation_matrix(payoffs: np.ndarray, settings: MoranSettings) -> np.ndarray:
    """``out[i, j]``: one *i* invading a population of *j* (the diagonal is ``1/N``)."""
    if np.isnan(payoffs).any():
        raise MoranError("some matchups have no finished match; the process needs them all")
    if not np.isfinite(payoffs).all():
        raise MoranError("some payoffs are not finite numbers; the process needs finite ones")
    settings.check(payoffs.ndim)
    n = payoffs.shape[0]
    out = np.full((n, n), 1.0 / settings.population)
    for i in range(n):
        for j in range(n):
            if i != j:
                out[i, j] = fixation_probability(payoffs, i, j, settings)
    return out


def stationary_distribution(fixation: np.ndarray) -> np.ndarray:
    """Long-run shares of the uniform populations under rare mutation (each mutant type
    equally likely): the stationary distribution of the embedded chain, solved exactly."""
    n = fixation.shape[0]
    if n == 1:
        return np.ones(1)
    move = fixation.T / (n - 1)  # move[j, i]: from all-j to all-i
    np.fill_diagonal(move, 0.0)
    np.fill_diagonal(move, 1.0 - move.sum(axis=1))
    # pi (M - I) = 0 with sum(pi) = 1, as a least-squares system (exact when it has a solution)
    system = np.vstack([(move - np.eye(n)).T, np.ones(n)])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    try:
        pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    except np.linalg.LinAlgError as exc:
        raise MoranError(f"the stationary distribution has no solution here ({exc})") from None
    pi = np.clip(pi, 0.0, None)
    if not np.isfinite(pi).all() or pi.sum() <= 0:
        raise MoranError("the stationary distribution has no solution here")
    return pi / pi.sum()


def simulate_fixation(payoffs: np.ndarray, mutant: int, resident: int, settings: MoranSettings,
                      *, runs: int, seed: int) -> float:
    """The share of ``runs`` seeded Moran processes, each from one ``mutant`` among
    ``N - 1`` ``resident`` players, that end with the mutant fixed."""
    n = settings.population
    rng = np.random.default_rng(seed)
    f_mutant = [_fitness(expected_payoff(payoffs, mutant, resident, k, n), settings) if k else 0.0
                for k in range(n + 1)]
    f_resident = [_fitness(expected_payoff(payoffs, resident, mutant, n - k, n), settings)
                  if k < n else 0.0 for k in range(n + 1)]
    fixed = 0
    for _ in range(runs):
        k = 1
        while 0 < k < n:
            weight_mutant = k * f_mutant[k]
            born_mutant = rng.random() * (weight_mutant + (n - k) * f_resident[k]) < weight_mutant
            dies_mutant = rng.random() * n < k
            k += int(born_mutant) - int(dies_mutant)
        fixed += k == n
    return fixed / runs


def moran_summary(agents: Sequence[str], payoffs: np.ndarray, settings: MoranSettings) -> dict[str, Any]:
    """The section's numbers for one tournament: fixation of each agent invading each
    other, each agent's mean fixation probability against the others beside the neutral
    ``1/N``, and the stationary shares."""
    fixation = fixation_matrix(payoffs, settings)
    stationary = stationary_distribution(fixation)
    n = len(agents)
    return {
        "population": settings.population,
        "selection": settings.selection,
        "fitness": settings.fitness,
        "neutral": 1.0 / settings.population,
        "fixation": {a: {b: float(fixation[i, j]) for j, b in enumerate(agents) if j != i}
                     for i, a in enumerate(agents)},
        "mean_fixation": {a: (float((fixation[i].sum() - fixation[i, i]) / (n - 1)) if n > 1 else None)
                          for i, a in enumerate(agents)},
        "stationary": {a: float(stationary[i]) for i, a in enumerate(agents)},
    }
