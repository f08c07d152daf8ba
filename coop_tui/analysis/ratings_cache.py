"""Deviation ratings stored by their inputs, so a report solves each LP once.

The deviation-rating LPs need ``scipy.optimize``, whose import alone costs more than the
rest of a ``coop-tui report`` at a million decisions. A rating depends only on the payoff
tensor and the LP settings, so it is stored under a hash of exactly those
(``rating_results`` table): the batch command fills it when a run finishes, any report
fills it for what it had to solve, and later reports of the same tournament read it and
never import scipy. A tensor that changes (more matches played) has another key, so a
stored rating is never stale. A database that cannot be written (read-only) only loses
the saving.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

import numpy as np

from coop_tui.analysis.population import deviation_ratings as solve

VERSION = 1
"""Bump when the rating computation changes: older stored results are then ignored."""


def rating_key(payoffs: np.ndarray, settings: dict[str, Any]) -> str:
    tensor = np.ascontiguousarray(payoffs, dtype=np.float64)
    digest = hashlib.sha256()
    digest.update(json.dumps([VERSION, list(tensor.shape), settings], sort_keys=True).encode())
    digest.update(tensor.tobytes())
    return digest.hexdigest()


def deviation_ratings(db: Any, payoffs: np.ndarray, **settings: Any) -> np.ndarray:
    """:func:`coop_tui.analysis.population.deviation_ratings`, read from ``db`` when
    these inputs were rated before, else computed and stored."""
    key = rating_key(payoffs, settings)
    try:
        row = db.execute("select ratings from rating_results where key = ?", [key]).fetchone()
    except sqlite3.Error:
        row = None
    if row is not None:
        return np.asarray(json.loads(row[0]), dtype=float)
    ratings = solve(payoffs, **settings)
    try:
        with db.conn:
            db.conn.execute(
                "insert or replace into rating_results (key, ratings) values (?, ?)",
                [key, json.dumps([float(r) for r in ratings])],
            )
    except sqlite3.Error:
        pass  # read-only or busy: the next report solves it again
    return ratings
