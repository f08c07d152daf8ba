"""Basic statistics against published values and independent derivations."""

from __future__ import annotations

import math
import statistics

import pytest

from coop_tui.analysis.stats import cohens_h, mean_se, wilson_interval

Z = 1.959963984540054


def wilson_by_quadratic(successes: float, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson bounds as the roots in p of (p_hat - p)^2 = z^2 p (1 - p) / n.

    Written from the defining equation, not the closed form used in the module, so the
    two implementations can disagree if either is wrong.
    """
    p_hat = successes / n
    a = 1 + z * z / n
    b = -(2 * p_hat + z * z / n)
    c = p_hat * p_hat
    disc = math.sqrt(b * b - 4 * a * c)
    return (-b - disc) / (2 * a), (-b + disc) / (2 * a)


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # Published 95% Wilson intervals (e.g. Newcombe 1998 / common statistics tables).
        (0, 10, 0.0, 0.27753),
        (5, 10, 0.23659, 0.76341),
        (10, 10, 0.72247, 1.0),
        (1, 10, 0.01787, 0.40415),
    ],
)
def test_wilson_matches_published_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got[0] == pytest.approx(lo, abs=5e-5)
    assert got[1] == pytest.approx(hi, abs=5e-5)


@pytest.mark.parametrize("n", [1, 2, 7, 10, 50, 400])
def test_wilson_agrees_with_the_quadratic_roots(n: int) -> None:
    for step in range(0, 21):
        successes = n * step / 20  # fractional successes too
        got = wilson_interval(successes, n)
        want = wilson_by_quadratic(successes, n)
        assert got == pytest.approx(want, abs=1e-12)
        assert 0.0 <= got[0] <= successes / n <= got[1] <= 1.0


def test_wilson_edges_are_exact_and_z_matters() -> None:
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    narrow = wilson_interval(5, 10, z=1.0)
    wide = wilson_interval(5, 10)
    assert wide[0] < narrow[0] < 0.5 < narrow[1] < wide[1]
    # A sum of probabilities may overshoot n by float noise; that is clamped, not an error.
    overshoot = 0.1 * 3 * 10 / 3 * 10
    assert overshoot > 10
    assert wilson_interval(overshoot, 10) == wilson_interval(10, 10)


@pytest.mark.parametrize(("successes", "n"), [(1, 0), (0, -1), (-0.5, 10), (10.5, 10)])
def test_wilson_rejects_impossible_inputs(successes: float, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n)


def test_mean_se_known_values() -> None:
    mean, se = mean_se([1, 2, 3, 4])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)  # sample sd sqrt(5/3), n = 4
    data = [0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.7]
    mean, se = mean_se(iter(data))  # any iterable
    assert mean == pytest.approx(statistics.fmean(data))
    assert se == pytest.approx(statistics.stdev(data) / math.sqrt(len(data)))
    assert mean_se([3.0, 3.0, 3.0]) == (3.0, 0.0)


def test_mean_se_small_samples() -> None:
    mean, se = mean_se([0.75])
    assert mean == 0.75 and math.isnan(se)
    with pytest.raises(ValueError):
        mean_se([])


def test_cohens_h_known_values() -> None:
    assert cohens_h(0.5, 0.5) == 0.0
    assert cohens_h(1.0, 0.0) == pytest.approx(math.pi)
    assert cohens_h(0.0, 1.0) == pytest.approx(-math.pi)
    assert cohens_h(0.8, 0.5) == pytest.approx(0.6435011, abs=1e-7)
    # Cohen's benchmarks: 0.2 small, 0.5 medium, 0.8 large (e.g. 0.45 vs 0.55 is ~0.2).
    assert cohens_h(0.55, 0.45) == pytest.approx(0.2003348, abs=1e-7)
    with pytest.raises(ValueError):
        cohens_h(1.2, 0.5)
    with pytest.raises(ValueError):
        cohens_h(0.5, -0.1)


def test_t_quantile_without_scipy_equals_scipys() -> None:
    """The report's own t quantile (no scipy import) against scipy's, whole and fractional df."""
    from scipy.stats import t

    from coop_tui.analysis.stats import t_quantile

    for df in [*range(1, 120), 250, 999, 1000, 1001, 1500.5, 10**5]:
        for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
            assert t_quantile(df, level) == pytest.approx(t.ppf(0.5 + level / 2, df), rel=1e-6)
    with pytest.raises(ValueError):
        t_quantile(0)
