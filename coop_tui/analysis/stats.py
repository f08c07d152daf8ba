"""Small, dependency-free statistics used by reports and plots.

Cooperation rates are often sums of probabilities (expected cooperation) rather than
counts, so the Wilson interval accepts fractional successes; it stays well-behaved at
0 and 1, where the plain normal interval collapses to a point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["cohens_h", "mean_se", "wilson_interval"]

Z95 = 1.959963984540054
"""The two-sided 95% standard normal quantile."""


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n``.

    ``successes`` may be fractional (a sum of probabilities). Raises ValueError when
    ``n`` is not positive or ``successes`` lies outside ``[0, n]`` (tiny float excess
    from summing probabilities is clamped).
    """
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    tol = 1e-9 * max(1.0, n)
    if successes < -tol or successes > n + tol:
        raise ValueError(f"successes {successes} outside [0, {n}]")
    p = min(max(successes / n, 0.0), 1.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    lo = 0.0 if p == 0.0 else max(0.0, centre - half)
    hi = 1.0 if p == 1.0 else min(1.0, centre + half)
    return lo, hi


def mean_se(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample standard deviation / sqrt(n)).

    One value has no spread estimate: its SE is NaN. No values raises ValueError.
    """
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        raise ValueError("mean_se needs at least one value")
    mean = math.fsum(xs) / n
    if n == 1:
        return mean, math.nan
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, math.sqrt(var / n)


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h effect size between two proportions: 2·asin(√p1) − 2·asin(√p2)."""
    for p in (p1, p2):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"proportion {p} outside [0, 1]")
    return 2.0 * math.asin(math.sqrt(p1)) - 2.0 * math.asin(math.sqrt(p2))
