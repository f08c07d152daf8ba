"""The stored 95% t quantiles are scipy's, bit for bit, so intervals do not change."""

from __future__ import annotations

from scipy.special import stdtrit

from coop_tui.analysis import intervals


def test_every_stored_quantile_is_what_scipy_returns() -> None:
    table = intervals._table_95()
    assert len(table) == 4096
    for df in range(1, 4097):
        assert intervals.t_quantile(df) == float(stdtrit(df, 0.5 + 0.95 / 2.0)), df


def test_other_levels_and_larger_samples_still_ask_scipy() -> None:
    assert intervals.t_quantile(5000) == float(stdtrit(5000, 0.975))
    assert intervals.t_quantile(10, 0.9) == float(stdtrit(10, 0.95))
    assert 1.959 < intervals.t_quantile(4096) < 1.962
