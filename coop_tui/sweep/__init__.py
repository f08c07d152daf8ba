"""Runs a sweep: expands matches, schedules them under limits, resumes what is missing.

Resume works at decision granularity. Matches have stable keys inside a run and
decisions have content keys, so replaying an unfinished match re-uses every stored
decision (no request is sent) and the per-decision seeded RNG draws the same
actions: the database after ``kill -9`` + ``--resume`` equals an uninterrupted run.

The package, stage by stage (``from coop_tui.sweep import ...`` reaches every name):

- :mod:`~coop_tui.sweep.run`: :func:`run_sweep` and its stages (open the run, open its
  agents, play the stages with a pool of workers, close);
- :mod:`~coop_tui.sweep.cell`: :func:`play_cell`, one match of the grid;
- :mod:`~coop_tui.sweep.run_agents`: the run's agents and their shared limits;
- :mod:`~coop_tui.sweep.lease`: :class:`RunLease`, one writer per run;
- :mod:`~coop_tui.sweep.summary`: :class:`RunSummary`, tallied from the bus.

The sweep knows no paper: a pipeline stage's inputs are asked of its mechanism
(``Mechanism.resolve_inputs``) and the stage order is read from the checked
:class:`~coop_tui.spec.Sweep` (an import-linter contract keeps it so).
"""

from __future__ import annotations

from coop_tui.spec import estimate_decisions
from coop_tui.sweep.cell import (
    MatchPlace,
    _game_condition,
    _templates,
    build_context,
    cell_renderer,
    decision_policy,
    game_spec,
    match_id_for,
    match_started,
    play_cell,
    play_match,
)
from coop_tui.sweep.lease import LEASE_HEARTBEAT_S, RunLease
from coop_tui.sweep.run import (
    MatchPool,
    OpenRun,
    check_resumable,
    close_run,
    new_run_id,
    open_agents,
    open_run,
    play_stages,
    run_sweep,
    source_records,
)
from coop_tui.sweep.run_agents import (
    Limiter,
    build_agents,
    close_agents,
    prepare_agents,
    start_batches,
)
from coop_tui.sweep.summary import RunSummary, SummaryCounter, reasks

__all__ = [
    "LEASE_HEARTBEAT_S",
    "Limiter",
    "MatchPlace",
    "MatchPool",
    "OpenRun",
    "RunLease",
    "RunSummary",
    "SummaryCounter",
    "_game_condition",
    "_templates",
    "build_agents",
    "build_context",
    "cell_renderer",
    "check_resumable",
    "close_agents",
    "close_run",
    "decision_policy",
    "estimate_decisions",
    "game_spec",
    "match_id_for",
    "match_started",
    "new_run_id",
    "open_agents",
    "open_run",
    "play_cell",
    "play_match",
    "play_stages",
    "prepare_agents",
    "reasks",
    "run_sweep",
    "source_records",
    "start_batches",
]
