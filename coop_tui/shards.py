"""Slices of a sweep for cluster array jobs: ``coop-tui --batch FILE --shard K/N``.

A sweep's match plan (its cells in order, each cell's slots in order) is cut into N
disjoint slices, and one process plays one slice into its own database;
``coop-tui merge`` brings the slices back together (:mod:`coop_tui.merge`).

Most matches stand alone: their seed derives from the match key and their decisions'
content keys from what was asked, so which process plays a match changes nothing in it.
Two things tie matches together, and each tie is kept inside one slice as one *unit*:

- the stages of grounded similarity (the similarity signals paper): a judgement reads a
  benchmark administration, a similarity match the scores computed from them
  (:mod:`coop_tui.grounded.stages`). Every experiment of such a pipeline is one unit, so
  its slice computes the later stages' inputs from its own earlier stages, as one
  process playing the whole sweep would;
- designs shared per tournament (CoopEval's mediation and contracting with
  ``design_scope = "tournament"``): every match of one tournament is one unit, so its
  designs are asked once, as in one process.

Every other match is a unit of its own. Units are dealt round-robin in plan order (the
i-th unit to the slice i mod N), which keeps slices within one unit of each other in
size and needs no memory beyond the shared units seen so far.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from coop_tui.errors import SpecError
from coop_tui.slices import MAX_SHARDS, SHARD_PATTERN
from coop_tui.spec import Cell, Sweep

PIPELINE_UNIT = "pipeline"
"""The unit key of every staged experiment of a sweep (they share one slice)."""


@dataclass(frozen=True)
class Shard:
    """The K-th of N slices, 1-based as a person counts them (``--shard 1/4`` .. ``4/4``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 <= K <= N, or a SpecError on ``--shard`` naming the fix (exit 2)."""
    found = SHARD_PATTERN.fullmatch(text or "")
    if found is None:
        raise SpecError("--shard", f"{text!r} is not K/N; give the slice and the number of "
                                   "slices, e.g. --shard 2/8 (slices count from 1)")
    k, n = int(found.group(1)), int(found.group(2))
    if n < 1 or n > MAX_SHARDS:
        raise SpecError("--shard", f"{text!r}: N = {n} slices; give 1 to {MAX_SHARDS:,}")
    if k < 1 or k > n:
        raise SpecError("--shard", f"{text!r}: slice {k} of {n} does not exist; K runs from 1 "
                                   f"to N (with a SLURM array from 0: $((SLURM_ARRAY_TASK_ID+1)))")
    return Shard(k, n)


def staged_experiments(sweep: Sweep) -> frozenset[int]:
    """The experiments of the sweep's stage pipeline: every experiment of a later stage
    and every administration or judgement (the stages they read). Empty when no
    experiment depends on another of this sweep (a ``source_run`` reads a stored run)."""
    stages = sweep.stages  # worked out when the sweep was checked (coop_tui.spec)
    if not any(stages):
        return frozenset()
    staged = {i for i, stage in enumerate(stages) if stage > 0}
    for i, exp in enumerate(sweep.spec.experiments):
        mechanisms = exp.mechanism if isinstance(exp.mechanism, list) else [exp.mechanism]
        if {"benchmark", "score"} & set(mechanisms):
            staged.add(i)
    return frozenset(staged)


def unit_key(cell: Cell, slot: int, staged: frozenset[int]) -> str | None:
    """The shared unit a match belongs to, or None when it stands alone."""
    if cell.experiment in staged:
        return PIPELINE_UNIT
    if cell.mechanism_params.get("design_scope") == "tournament":
        return "tournament:" + cell.tournament_key(slot)
    return None


def slice_plan(sweep: Sweep, shard: Shard, staged: frozenset[int] | None = None,
               ) -> Iterator[tuple[Cell, int]]:
    """The matches of ``shard``, in plan order: the same on every call and every machine
    (it depends on the sweep file alone). ``staged``: :func:`staged_experiments`, when
    already known."""
    if staged is None:
        staged = staged_experiments(sweep)
    owner_of: dict[str, int] = {}  # shared units seen so far: pipelines and tournaments
    units = 0
    mine = shard.index - 1
    for cell, slot in sweep.whole_plan():
        key = unit_key(cell, slot, staged)
        owner = owner_of.get(key) if key is not None else None
        if owner is None:
            owner = units % shard.count
            units += 1
            if key is not None:
                owner_of[key] = owner
        if owner == mine:
            yield cell, slot


def apply_shard(sweep: Sweep, shard: Shard | None) -> Sweep:
    """Narrow ``sweep`` to one slice (in place; returned for chaining): its matches,
    totals and estimates are the slice's from then on, its hash stays the whole sweep's
    (the slices of one sweep file merge)."""
    if shard is None:
        return sweep
    staged = staged_experiments(sweep)  # once: the slice plan walks the grid many times
    sweep.shard = str(shard)
    sweep.plan = lambda s: slice_plan(s, shard, staged)
    return sweep



