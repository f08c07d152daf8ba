"""Slice labels (``K/N``) and which slices a run holds: light enough for the report.

Why apart from :mod:`coop_tui.shards`: that module builds slices from a sweep (it imports
the sweep's models and stages); the report only needs to read the labels a run carries
to say which slices it lacks, and must not load the sweep machinery to do so.
"""

from __future__ import annotations

import re
from typing import Any

SHARD_PATTERN = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
MAX_SHARDS = 100_000
"""More slices than any cluster's array job (SLURM's MaxArraySize is 1001 by default)."""


def missing_slices(present: list[str | None]) -> tuple[int, list[str]] | None:
    """(N, the slices K/N not among ``present``) for a run made of slices, or None when
    one of them is the whole sweep. ``present``: the ``K/N`` labels a run holds (its own
    shard, or the slices merged into it); of several N, the one most slices share."""
    if any(label is None for label in present):
        return None
    slices: dict[int, set[int]] = {}
    for label in present:
        found = SHARD_PATTERN.fullmatch(label or "")
        if found is None:
            continue
        k, n = int(found.group(1)), int(found.group(2))
        if 1 <= k <= n <= MAX_SHARDS:  # else no slice of anything
            slices.setdefault(n, set()).add(k)
    if not slices:
        return None
    n, ks = max(slices.items(), key=lambda kv: (len(kv[1]) == kv[0], len(kv[1])))
    return n, [f"{k}/{n}" for k in range(1, n + 1) if k not in ks]


def run_coverage(conn: Any, run: dict[str, Any]) -> dict[str, Any] | None:
    """Which slices of its sweep a run holds and which it lacks, for the report: a slice
    played alone, or a merge of some slices. None for a run of the whole sweep."""
    merged = conn.execute("select shard, status from run_merges where run_id = ?",
                          [run["id"]]).fetchall()
    if merged:
        present = [shard for shard, status in merged if status in ("done", "failed")]
        unfinished = sorted({s for s, status in merged if status not in ("done", "failed") and s})
    elif run.get("shard"):
        present, unfinished = [run["shard"]], []
    else:
        return None
    found = missing_slices(present)
    if found is None or (not found[1] and not unfinished):
        return None
    n, missing = found
    return {"slices": n, "held": sorted({s for s in present if s}), "missing": missing,
            "unfinished": unfinished}
