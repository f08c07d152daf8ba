"""Write ``data/tables/t_quantile_95.jsonl``: scipy's 95% two-sided Student t quantiles
for 1..4096 degrees of freedom, read by :func:`coop_tui.analysis.intervals.t_quantile`
so a report does not import scipy.special (0.3 s) for them. The values are exactly what
``scipy.special.stdtrit`` returns (``tests/test_t_table.py`` checks every one).

    .venv/bin/python benchmarks/make_t_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

import scipy
from scipy.special import stdtrit

N = 4096
LEVEL = 0.95


def main() -> None:
    p = 0.5 + LEVEL / 2.0
    values = [float(stdtrit(df, p)) for df in range(1, N + 1)]
    path = Path(__file__).resolve().parents[1] / "data" / "tables" / "t_quantile_95.jsonl"
    path.parent.mkdir(exist_ok=True)
    head = {"level": LEVEL, "p": p, "scipy": scipy.__version__, "first_df": 1}
    path.write_text(json.dumps(head) + "\n" + json.dumps(values) + "\n")
    print(path, len(values))


if __name__ == "__main__":
    main()
