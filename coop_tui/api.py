"""The Python API: a database's runs, matches and decisions as pandas DataFrames, the
report as a dict, and sweeps run from a dict or a file.

This is the small, stable surface a notebook uses (docs/python.md). It reads the same
SQLite file the CLI and the TUI write, through :class:`coop_tui.store.Store`, and runs
sweeps with the same runner as ``coop-tui --batch`` (:func:`coop_tui.sweep.run_sweep`),
so a run started here is an ordinary run: ``coop-tui report`` and the TUI show it.

    >>> import coop_tui.api as ct
    >>> db = ct.open_db("runs.db")
    >>> run_id = ct.run_sweep({...}, db)
    >>> db.decisions(run_id)          # one row per decision, prompt and answer texts included
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.events import EventBus, RunProgress
from coop_tui.store import Store, default_db_path

if TYPE_CHECKING:
    import pandas as pd

    from coop_tui.sweep import RunSummary

__all__ = ["CoopDB", "open_db", "run_sweep"]

ProgressCallback = Callable[[int, int], None]
"""Called with (matches done, matches total) as a sweep plays."""

_DECISION_COLUMNS = (
    "d.id as decision_id, m.run_id, d.match_id, m.experiment, m.game, m.mechanism,"
    " m.condition_key, m.sample, d.round, d.phase, d.seat, d.agent, d.kind,"
    " coalesce(t.text, d.prompt) as prompt, d.response, d.reasoning, d.answer, d.parsed,"
    " d.valid, d.attempts, d.error, d.action, d.coop_prob, d.cooperated, d.distribution,"
    " d.latency_ms, d.input_tokens, d.output_tokens, d.cost_usd, d.reused"
)


class CoopDB:
    """One coop-tui database, read as DataFrames.

    Every method that takes ``run`` accepts a run id, an id prefix or a run name (the
    same lookup as ``coop-tui report RUN``); ``None`` means the latest run.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.store = Store(self.path)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> CoopDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CoopDB({str(self.path)!r})"

    # ------------------------------------------------------------------ lookups
    def run_id(self, run: str | None = None) -> str:
        """The id of a run given by id, id prefix or name (latest when ``None``)."""
        found = self.store.resolve_run(run)
        if found is None:
            raise KeyError(f"no run {run!r} in {self.path}" if run else f"no runs in {self.path}")
        return str(found["id"])

    def _frame(self, sql: str, params: list[Any]) -> pd.DataFrame:
        import pandas as pd

        cursor = self.store.db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return pd.DataFrame.from_records(cursor.fetchall(), columns=names)

    # ------------------------------------------------------------------ tables
    def runs(self) -> pd.DataFrame:
        """Every run, newest first: id, name, kind, status, seed, created_at, finished_at,
        error (the sweep spec, with secrets removed, is in ``spec`` as JSON)."""
        frame = self._frame("select * from runs order by created_at desc", [])
        for col in ("created_at", "finished_at"):
            frame[col] = _timestamps(frame[col])
        return frame

    def matches(self, run: str | None = None) -> pd.DataFrame:
        """One row per match and seat of a run: the match's game, mechanism, condition,
        sample and status with the seat's agent and total payoff."""
        frame = self._frame(
            "select m.id as match_id, m.run_id, m.experiment, m.game, m.mechanism,"
            " m.condition, m.condition_key, m.similarity, m.matchup, m.sample, m.seed,"
            " m.status, m.welfare, s.seat, s.agent, s.agent_kind, s.payoff"
            " from matches m left join seats s on s.match_id = m.id"
            " where m.run_id = ? order by m.rowid, s.seat",
            [self.run_id(run)],
        )
        frame["condition"] = frame["condition"].map(_loads)
        return frame

    def rounds(self, run: str | None = None) -> pd.DataFrame:
        """One row per round and seat of a run: the action played, its payoff and whether
        it cooperated (for games with a cooperative action)."""
        return self._frame(
            "select r.match_id, m.experiment, m.condition_key, m.sample, r.round, r.seat,"
            " s.agent, r.action, r.payoff, r.cooperated"
            " from rounds r join matches m on m.id = r.match_id"
            " left join seats s on s.match_id = r.match_id and s.seat = r.seat"
            " where m.run_id = ? order by m.rowid, r.round, r.seat",
            [self.run_id(run)],
        )

    def decisions(self, run: str | None = None, *, phase: str | None = None) -> pd.DataFrame:
        """One row per decision of a run, in the order they were stored.

        ``prompt`` is the exact messages sent (JSON text, read from the ``texts`` table
        where prompts are stored once by hash), ``response`` the raw answer, ``parsed``
        and ``distribution`` the parse result (decoded from JSON), ``valid`` whether it
        parsed. ``phase`` keeps one phase only (``"play"``, a mechanism's own phases).
        Strategy decisions have no prompt (``None``).
        """
        sql = (
            f"select {_DECISION_COLUMNS} from decisions d join matches m on m.id = d.match_id"
            " left join texts t on t.hash = d.prompt_hash where m.run_id = ?"
        )
        params: list[Any] = [self.run_id(run)]
        if phase is not None:
            sql += " and d.phase = ?"
            params.append(phase)
        frame = self._frame(sql + " order by d.id", params)
        for col in ("parsed", "distribution"):
            frame[col] = frame[col].map(_loads)
        frame["valid"] = frame["valid"].astype("boolean")
        frame["reused"] = frame["reused"].astype("boolean")
        return frame

    def report(self, run: str | None = None, *, devrank: str | None = None) -> dict[str, Any]:
        """The run's analysis, exactly what ``coop-tui report RUN --json`` prints."""
        from coop_tui.report import build_report, strict_json

        return json.loads(strict_json(build_report(self.store, self.run_id(run), devrank=devrank)))


def open_db(path: str | Path | None = None) -> CoopDB:
    """A database (created when missing); ``None`` is the CLI's default
    (``$COOP_TUI_DB`` or the user data directory)."""
    if path is None:
        path = default_db_path()
    return CoopDB(path)


def run_sweep(
    sweep: dict[str, Any] | str | Path,
    db: CoopDB | str | Path | None = None,
    *,
    progress: bool | ProgressCallback = False,
    resume: bool = False,
    concurrency: int | None = None,
) -> str:
    """Run a sweep and return its run id.

    ``sweep`` is a sweep file (TOML or YAML, see docs/sweeps.md) or the same content as
    a dict. ``progress=True`` shows the CLI's progress bars; a callable is called with
    (matches done, matches total). Bad input raises :class:`coop_tui.spec.SpecError`
    before anything is written. Works inside a running event loop (Jupyter) too: the
    sweep then runs on a worker thread and this call waits for it.
    """
    from coop_tui.spec import build_sweep, load_sweep

    built = build_sweep(sweep) if isinstance(sweep, dict) else load_sweep(Path(sweep))
    owned = not isinstance(db, CoopDB)
    handle = db if isinstance(db, CoopDB) else open_db(db)
    try:
        summary = _run_blocking(lambda: _play(built, handle, progress, resume, concurrency))
        if summary.run_id and summary.matches_done:
            from coop_tui.analysis.coopeval_tables import rate_run

            rate_run(handle.store, summary.run_id)  # as --batch does: `report` reads them
        return summary.run_id
    finally:
        if owned:
            handle.close()


async def _play(
    sweep: Any, db: CoopDB, progress: bool | ProgressCallback, resume: bool,
    concurrency: int | None,
) -> RunSummary:
    from coop_tui.sweep import run_sweep as play_sweep

    bus = EventBus()
    view: Any = None
    if progress is True:
        from rich.console import Console

        from coop_tui.runner import ProgressView

        view = ProgressView(sweep, Console())
        bus.subscribe(view)
    elif callable(progress):
        callback = progress

        def report_progress(event: Any) -> None:
            if isinstance(event, RunProgress):
                callback(event.matches_done, event.matches_total)

        report_progress.accepts_direct_decisions = True  # type: ignore[attr-defined]
        report_progress.accepts_direct_rounds = True  # type: ignore[attr-defined]
        bus.subscribe(report_progress)
    with view.progress if view is not None else contextlib.nullcontext():
        return await play_sweep(sweep, db.store, bus=bus, resume=resume, concurrency=concurrency)


def _run_blocking(make: Callable[[], Any]) -> Any:
    """``asyncio.run`` that also works where a loop is already running (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else value


def _timestamps(column: Any) -> Any:
    import pandas as pd

    return pd.to_datetime(column, unit="s", utc=True)
