"""A second process that solves a run's deviation ratings, started before the run plays.

The ratings' linear programs need ``scipy.optimize``, whose import takes longer than the
programs themselves and, for a strategy tournament of a hundred thousand decisions, about
an eighth of the whole ``--batch`` command. The batch command therefore starts this
module as a child process when a large strategy sweep begins: the child imports scipy on
the other core while the matches play, then waits. When the run is done the parent
commits everything and writes the run id on the child's standard input; the child rates
the run (:func:`~coop_tui.analysis.coopeval_tables.rate_run`, which stores the ratings
in the database as the parent would) and prints ``rated N``. End of input without a run
id (the run stopped or failed) ends it without doing anything; the parent rates the run
itself whenever the child did not say it had.

    python -m coop_tui.analysis.rate_worker DATABASE
"""

from __future__ import annotations

import sys
from pathlib import Path

from coop_tui.analysis.coopeval_tables import rate_run
from coop_tui.analysis.population import load_solver
from coop_tui.store import Store


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m coop_tui.analysis.rate_worker DATABASE\n")
        return 2
    load_solver()  # the import the parent is spared, done while its matches play
    run_id = sys.stdin.readline().strip()
    if not run_id:
        return 0
    store = Store(Path(argv[0]), create=False)
    try:
        rated = rate_run(store, run_id)
    finally:
        store.close()
    sys.stdout.write(f"rated {rated}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
