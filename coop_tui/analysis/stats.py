"""Small, dependency-free statistics used by reports and plots.

Cooperation rates are often sums of probabilities (expected cooperation) rather than
counts, so the Wilson interval accepts fractional successes; it stays well-behaved at
0 and 1, where the plain normal interval collapses to a point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from statistics import NormalDist

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


def t_quantile(df: float, level: float = 0.95) -> float:
    """The two-sided Student t quantile: P(|T| <= q) = level for T ~ t(df).

    Hill's approximation (CACM Algorithm 396, 1970), then, for whole df up to 1,000 (every
    df a count of trials gives), Newton steps on the exact t distribution. Written out here
    because importing scipy.special for one number costs a third of a second, and
    ``report`` must stay well under a second at a million decisions.
    """
    q = _hill_t_quantile(df, level)
    if float(df).is_integer() and df <= 1000:
        nu = int(df)
        log_norm = (math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2)
                    - 0.5 * math.log(nu * math.pi))
        for _ in range(3):
            density = math.exp(log_norm - (nu + 1) / 2 * math.log1p(q * q / nu))
            q -= (_t_central_mass(q, nu) - level) / (2.0 * density)
    return q


def _t_central_mass(t: float, nu: int) -> float:
    """P(|T| <= t) for T ~ t(nu), nu a whole number: the classical finite series in
    theta = atan(t / sqrt(nu))."""
    theta = math.atan(t / math.sqrt(nu))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if nu % 2 == 1:
        term, total = 1.0, 1.0 if nu > 1 else 0.0
        for k in range(1, (nu - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2.0 / math.pi * (theta + (s * math.cos(theta) * total if nu > 1 else 0.0))
    term, total = 1.0, 1.0
    for k in range(1, nu // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def _hill_t_quantile(df: float, level: float) -> float:

    if df <= 0 or not 0 < level < 1:
        raise ValueError("t_quantile needs df > 0 and 0 < level < 1")
    p = 1.0 - level  # two-tailed probability
    n = float(df)
    if n == 1:
        return math.cos(p * math.pi / 2) / math.sin(p * math.pi / 2)
    if n == 2:
        return math.sqrt(2.0 / (p * (2.0 - p)) - 2.0)
    a = 1.0 / (n - 0.5)
    b = 48.0 / (a * a)
    c = ((20700.0 * a / b - 98.0) * a - 16.0) * a + 96.36
    d = ((94.5 / (b + c) - 3.0) / b + 1.0) * math.sqrt(a * math.pi / 2.0) * n
    x = d * p
    y = x ** (2.0 / n)
    if y > 0.05 + a:
        x = NormalDist().inv_cdf(1.0 - p / 2.0)
        y = x * x
        if n < 5:
            c += 0.3 * (n - 4.5) * (x + 0.6)
        c = (((0.05 * d * x - 5.0) * x - 7.0) * x - 2.0) * x + b + c
        y = (((((0.4 * y + 6.3) * y + 36.0) * y + 94.5) / c - y - 3.0) / b + 1.0) * x
        y = math.expm1(a * y * y)
    else:
        y = ((1.0 / (((n + 6.0) / (n * y) - 0.089 * d - 0.822) * (n + 2.0) * 3.0)
              + 0.5 / (n + 4.0)) * y - 1.0) * (n + 1.0) / (n + 2.0) + 1.0 / y
    return math.sqrt(n * y)
