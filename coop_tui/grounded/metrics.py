"""Exogenous similarity of two agents' answers, on a 0-1 scale, and random baselines.

Three metrics, one per kind of benchmark (similarity signals, App. F):

- ``agreement``: the share of common items answered identically (options, free numbers
  and texts, the die and coin controls);
- ``qwk``: Cohen's quadratic weighted kappa between the two sets of Likert ratings,
  rescaled from [-1, 1] to [0, 1] as (kappa + 1) / 2, so two independent raters sit near
  0.5 (CABIN, GGB);
- ``jsd``: chance-corrected Jensen-Shannon similarity of mixed strategies (the
  similarity game). Per item, s = 1 - JSD(p, q) with base-2 logarithms (in [0, 1]). The
  observed similarity is the mean over items; the chance similarity is the mean over
  pairs of *different* items (what two agents with these marginal habits share by
  accident), and kappa = (observed - chance) / (1 - chance), rescaled to [0, 1] like QWK.

A benchmark's random baseline is *computed* (:func:`random_baseline`) from its own
items: exactly for ``agreement`` (the mean chance of a match per item), and for ``qwk``
and ``jsd`` by averaging the metric over many vectorised draws of two uniformly random
policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from coop_tui.grounded.items import Item

METRICS = ("agreement", "qwk", "jsd")


def agreement(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """Share of the items both answered where the answers are equal (None: no overlap)."""
    common = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    if not common:
        return None
    return sum(1 for k in common if a[k] == b[k]) / len(common)


def quadratic_kappa(x: Sequence[int], y: Sequence[int], lo: int, hi: int) -> float:
    """Cohen's quadratic weighted kappa of two rating lists on the scale lo..hi."""
    k = hi - lo + 1
    xi = np.asarray(x, dtype=int) - lo
    yi = np.asarray(y, dtype=int) - lo
    n = len(xi)
    observed = np.zeros((k, k))
    np.add.at(observed, (xi, yi), 1.0)
    expected = np.outer(np.bincount(xi, minlength=k), np.bincount(yi, minlength=k)) / n
    idx = np.arange(k)
    weights = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    disagreement = float((weights * observed).sum())
    chance = float((weights * expected).sum())
    if chance == 0.0:  # both raters used one and the same point throughout
        return 1.0 if disagreement == 0.0 else 0.0
    return 1.0 - disagreement / chance


def qwk_similarity(a: Mapping[str, Any], b: Mapping[str, Any], scale: tuple[int, int]) -> float | None:
    common = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    if not common:
        return None
    kappa = quadratic_kappa([a[k] for k in common], [b[k] for k in common], *scale)
    return (kappa + 1.0) / 2.0


def js_similarity(p: Sequence[float], q: Sequence[float]) -> float:
    """1 - Jensen-Shannon divergence (base 2) of two distributions: 1 identical, 0 disjoint."""
    pa = np.asarray(p, dtype=float)
    qa = np.asarray(q, dtype=float)
    pa, qa = pa / pa.sum(), qa / qa.sum()
    m = (pa + qa) / 2.0

    def kl(x: np.ndarray) -> float:
        mask = x > 0
        return float((x[mask] * np.log2(x[mask] / m[mask])).sum())

    return 1.0 - (kl(pa) + kl(qa)) / 2.0


def jsd_similarity(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """Chance-corrected Jensen-Shannon similarity, rescaled to [0, 1] (module docstring)."""
    common = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    if not common:
        return None
    observed = float(np.mean([js_similarity(a[k], b[k]) for k in common]))
    if len(common) < 2:
        return observed  # no other item to estimate chance from: plain similarity
    chance = float(np.mean([
        js_similarity(a[i], b[j]) for i in common for j in common if i != j
    ]))
    if chance >= 1.0:  # both answered every item with one and the same distribution
        return 1.0 if observed >= 1.0 else 0.0
    kappa = (observed - chance) / (1.0 - chance)
    return (max(-1.0, min(1.0, kappa)) + 1.0) / 2.0


def similarity(metric: str, a: Mapping[str, Any], b: Mapping[str, Any],
               scale: tuple[int, int] | None = None) -> float | None:
    """The metric's similarity of two answer maps (item id -> answer value), 0..1."""
    if metric == "agreement":
        return agreement(a, b)
    if metric == "qwk":
        assert scale is not None
        return qwk_similarity(a, b, scale)
    if metric == "jsd":
        return jsd_similarity(a, b)
    raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")


def random_answer(item: Item, rng: np.random.Generator) -> Any:
    """What a uniformly random policy answers to one item (in answer-map form)."""
    if item.kind == "options":
        return int(rng.integers(len(item.options)))
    if item.kind == "likert":
        assert item.scale is not None
        return int(rng.integers(item.scale[0], item.scale[1] + 1))
    if item.kind == "mixed":
        return tuple(rng.dirichlet(np.ones(len(item.actions))))
    if item.kind == "number":
        if item.minimum is not None and item.maximum is not None:
            if item.step:
                n = int(round((item.maximum - item.minimum) / item.step)) + 1
                return item.minimum + item.step * int(rng.integers(n))
            return float(rng.uniform(item.minimum, item.maximum))
        return float(rng.standard_normal() * 1e6)
    if item.kind == "control":
        values = item.extra["values"]
        return values[int(rng.integers(len(values)))]
    return "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz0123456789"), 12))  # free text


def match_probability(item: Item) -> float:
    """Chance that two uniformly random policies give this item the same answer."""
    if item.kind == "options":
        return 1.0 / len(item.options)
    if item.kind == "likert":
        assert item.scale is not None
        return 1.0 / (item.scale[1] - item.scale[0] + 1)
    if item.kind == "control":
        return 1.0 / len(item.extra["values"])
    if item.kind == "number" and item.step and item.minimum is not None and item.maximum is not None:
        return 1.0 / (int(round((item.maximum - item.minimum) / item.step)) + 1)
    return 0.0  # a continuous number or a free text: two random answers never coincide


BASELINE_BATCH = 500
BASELINE_CELLS = 1_000_000
"""Draws per batch are capped so one batch's arrays stay near this many numbers."""
BASELINE_TRIALS = 20_000
BASELINE_MAX_TRIALS = 320_000
BASELINE_SE = 0.0005
"""Monte Carlo for the metrics without a closed form (QWK, chance-corrected JSD): at
least BASELINE_TRIALS draws, doubled until the standard error is at most 0.05
percentage points (or BASELINE_MAX_TRIALS), so the digit the report prints (0.1) does
not move with the seed."""


def random_baseline(items: Sequence[Item], metric: str, *, trials: int = BASELINE_TRIALS,
                    seed: int = 0) -> tuple[float, float]:
    """(mean, standard error) of the metric between two uniformly random policies.

    ``agreement`` is exact: the mean over items of the chance of a match (standard
    error 0, ``trials`` unused). ``qwk`` and ``jsd`` are the mean over ``trials``
    vectorised draws of both policies' answers to every item, doubled while the standard
    error is above BASELINE_SE (up to BASELINE_MAX_TRIALS)."""
    if metric == "agreement":
        return (float(np.mean([match_probability(i) for i in items])) if items else 0.0), 0.0
    rng = np.random.default_rng(seed)
    values: list[np.ndarray] = []
    done = 0
    per_trial = len(items) ** 2 * max((len(i.actions) for i in items), default=1) if metric == "jsd" else len(items)
    size = max(1, min(BASELINE_BATCH, BASELINE_CELLS // max(1, per_trial)))
    while done < trials:
        batch = min(size, trials - done)
        if metric == "qwk":
            values.append(_qwk_trials(items, batch, rng))
        elif metric == "jsd":
            values.append(_jsd_trials(items, batch, rng))
        else:
            raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
        done += batch
        if done == trials and trials < BASELINE_MAX_TRIALS:
            so_far = np.concatenate(values)
            if so_far.std(ddof=1) / np.sqrt(len(so_far)) > BASELINE_SE:
                trials = min(2 * trials, BASELINE_MAX_TRIALS)
    arr = np.concatenate(values)
    return float(arr.mean()), float(arr.std(ddof=1) / np.sqrt(len(arr))) if len(arr) > 1 else 0.0


def _qwk_trials(items: Sequence[Item], trials: int, rng: np.random.Generator) -> np.ndarray:
    """Rescaled QWK of ``trials`` pairs of random raters at once (as qwk_similarity)."""
    scale = next((i.scale for i in items if i.scale is not None), None)
    assert scale is not None
    lo, hi = scale
    k, n = hi - lo + 1, len(items)
    x = rng.integers(0, k, size=(trials, n))
    y = rng.integers(0, k, size=(trials, n))
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    disagreement = w[x, y].sum(axis=1)
    hx = (x[:, :, None] == idx).sum(axis=1).astype(float)
    hy = (y[:, :, None] == idx).sum(axis=1).astype(float)
    chance = np.einsum("ta,ab,tb->t", hx, w, hy) / n
    safe = np.where(chance == 0.0, 1.0, chance)
    kappa = np.where(chance == 0.0, np.where(disagreement == 0.0, 1.0, 0.0), 1.0 - disagreement / safe)
    return (kappa + 1.0) / 2.0


def _js_matrix(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """1 - JSD (base 2) of every p[t, i] against every q[t, j]: shape (t, i, j)."""
    a, b = p[:, :, None, :], q[:, None, :, :]
    m = (a + b) / 2.0

    def kl(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(x > 0, x * np.log2(np.where(x > 0, x, 1.0) / np.where(m > 0, m, 1.0)), 0.0)
        return terms.sum(axis=-1)

    return 1.0 - (kl(a) + kl(b)) / 2.0


def _jsd_trials(items: Sequence[Item], trials: int, rng: np.random.Generator) -> np.ndarray:
    """Chance-corrected JSD similarity of ``trials`` pairs of random policies at once
    (as jsd_similarity; items with fewer actions are padded with zero probabilities)."""
    n = len(items)
    width = max(len(i.actions) for i in items)

    def draw() -> np.ndarray:
        out = np.zeros((trials, n, width))
        for j, item in enumerate(items):
            out[:, j, : len(item.actions)] = rng.dirichlet(np.ones(len(item.actions)), size=trials)
        return out

    s = _js_matrix(draw(), draw())
    observed = np.einsum("tii->t", s) / n
    if n < 2:
        return observed
    chance = (s.sum(axis=(1, 2)) - np.einsum("tii->t", s)) / (n * (n - 1))
    safe = np.where(chance >= 1.0, 0.0, chance)
    kappa = np.where(chance >= 1.0, np.where(observed >= 1.0, 1.0, -1.0),
                     (observed - safe) / (1.0 - safe))
    return (np.clip(kappa, -1.0, 1.0) + 1.0) / 2.0
