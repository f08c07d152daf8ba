"""Intervals that respect how repeated-game data were collected.

Rounds of one match are not independent draws: a tit-for-tat co-player makes round t
depend on round t-1, and the two seats of a self-play match share one history. Pooling
rounds into one binomial (the plain Wilson interval) therefore understates uncertainty.
The strategic personalities paper reports two things this module reproduces and one it adds:

* ``wilson``: Wilson score interval over pooled decisions (the paper's "binomial" CI);
  kept for comparison, labelled as assuming independent decisions;
* ``t_over_trials``: mean of per-trial (per-match) rates ± t·sd/√n, the interval of the
  paper's Supplementary Table 2;
* ``cluster_ratio``: the pooled rate Σy/Σn with a cluster-robust (CR1) standard error,
  clusters = matches, t quantile with clusters − 1 degrees of freedom. It is what we use
  for conditional rates (P(C|C), P(C|D)), where matches contribute unequal numbers of
  round pairs and a per-match mean would weigh a single pair like a hundred.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from coop_tui.analysis.stats import t_quantile as quantile

__all__ = ["cluster_ratio_interval", "t_interval", "t_quantile"]


def t_quantile(df: int, level: float = 0.95) -> float:
    """Two-sided Student t quantile, without importing scipy (see analysis.stats)."""
    return quantile(df, level)


def t_interval(values: Sequence[float], level: float = 0.95) -> dict[str, float | int | None]:
    """Mean, sample sd (ddof 1), n and the t-interval of the mean; bounds None below n=2."""
    n = len(values)
    if n == 0:
        raise ValueError("t_interval needs at least one value")
    mean = math.fsum(values) / n
    if n < 2:
        return {"mean": mean, "sd": None, "n": n, "lo": None, "hi": None}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1, level) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "n": n, "lo": mean - half, "hi": mean + half}


def cluster_ratio_interval(
    clusters: Sequence[tuple[float, float]], level: float = 0.95
) -> dict[str, float | int | None]:
    """Pooled proportion Σy/Σn over ``(successes, trials)`` clusters, with a CR1
    cluster-robust SE and a t-interval clipped to [0, 1]. Clusters with no trials are
    ignored; bounds are None with fewer than two informative clusters."""
    used = [(y, n) for y, n in clusters if n > 0]
    total = math.fsum(n for _, n in used)
    if total == 0:
        return {"p": None, "se": None, "clusters": 0, "lo": None, "hi": None}
    p = math.fsum(y for y, _ in used) / total
    k = len(used)
    if k < 2:
        return {"p": p, "se": None, "clusters": k, "lo": None, "hi": None}
    resid = math.fsum((y - p * n) ** 2 for y, n in used)
    se = math.sqrt(k / (k - 1) * resid) / total
    half = t_quantile(k - 1, level) * se
    return {"p": p, "se": se, "clusters": k, "lo": max(0.0, p - half), "hi": min(1.0, p + half)}
