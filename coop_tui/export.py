"""``coop-tui export``: a run's tables as CSV or Parquet files, streamed in chunks.

Secrets never reach the database, so they cannot reach an export either; the agent
specs exported are the stored public ones.

A run can hold a million decisions, so no table is ever read whole: rows come from one
SQLite cursor ``CHUNK`` at a time and are appended to the file (csv module; a pyarrow
ParquetWriter with one row group per chunk), so memory stays bounded by one chunk.
Column types come from the table's declared SQLite types, so every chunk of a Parquet
file has the same schema even when a column is empty in some of them. A decision's
``prompt`` is exported as its text, whether stored content-addressed or inline.

Each file is written under a temporary name in the output folder and renamed when
complete: a failure, Ctrl-C or SIGTERM part-way leaves the earlier file (or none), never
half of one.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from coop_tui.database import shared_mode
from coop_tui.errors import fail
from coop_tui.store import Store, game_spec_sql

CHUNK = 20_000

TABLES = {
    "matches": ("matches", "select {cols} from matches t where t.run_id = ?"),
    "seats": ("seats", "select {cols} from seats t join matches m on m.id = t.match_id where m.run_id = ?"),
    "decisions": (
        "decisions",
        "select {cols} from decisions t join matches m on m.id = t.match_id where m.run_id = ?"
        " order by t.id",
    ),
    "rounds": ("rounds", "select {cols} from rounds t join matches m on m.id = t.match_id where m.run_id = ?"),
    "phases": ("phases", "select {cols} from phases t join matches m on m.id = t.match_id where m.run_id = ?"),
}

OPTIONAL_TABLES = {
    # an imported strategic personalities trial table (``import strategic-personalities``), when the run has one
    "trials": ("sp_trials", "select {cols} from sp_trials t where t.run_id = ? order by t.line"),
}


def _columns(conn: Any, table: str) -> list[tuple[str, str]]:
    """(name, declared type) of every column, as the table has them now."""
    return [(r[1], (r[2] or "").upper()) for r in conn.execute(f"pragma table_info({table})")]


def table_query(conn: Any, name: str) -> tuple[list[tuple[str, str]], str]:
    """The columns and the SQL that streams one exported table of a run."""
    table, template = TABLES[name] if name in TABLES else OPTIONAL_TABLES[name]
    columns = [c for c in _columns(conn, table) if not (table == "decisions" and c[0] == "prompt_hash")
               and not (table == "matches" and c[0] == "game_spec_hash")]
    exprs = []
    for col, _type in columns:
        if table == "matches" and col == "game_spec":  # stored once per spec (game_specs)
            exprs.append(f"{game_spec_sql('t')} as game_spec")
        elif table == "decisions" and col == "prompt":
            exprs.append(
                "coalesce((select x.text from texts x where x.hash = t.prompt_hash), t.prompt)"
                " as prompt"
            )
        else:
            exprs.append(f"t.{col}")
    return columns, template.format(cols=", ".join(exprs))


def iter_chunks(conn: Any, name: str, run_id: str, chunk: int = CHUNK) -> Iterator[list[tuple[Any, ...]]]:
    """A run's rows of one table, ``chunk`` rows at a time."""
    _columns_, sql = table_query(conn, name)
    cursor = conn.execute(sql, [run_id])
    while True:
        rows = cursor.fetchmany(chunk)
        if not rows:
            return
        yield rows


def _arrow_type(declared: str) -> Any:
    import pyarrow as pa

    if "INT" in declared:
        return pa.int64()
    if any(k in declared for k in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return pa.string()


def _write_csv(conn: Any, name: str, run_id: str, path: Path) -> None:
    columns, _sql = table_query(conn, name)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([c for c, _ in columns])
        for rows in iter_chunks(conn, name, run_id):
            writer.writerows(rows)


def _write_parquet(conn: Any, name: str, run_id: str, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, _sql = table_query(conn, name)
    schema = pa.schema([(c, _arrow_type(t)) for c, t in columns])
    with pq.ParquetWriter(str(path), schema) as writer:
        wrote = False
        for rows in iter_chunks(conn, name, run_id):
            arrays = [
                pa.array([r[i] for r in rows], type=schema.field(i).type)
                for i in range(len(columns))
            ]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            wrote = True
        if not wrote:
            writer.write_table(schema.empty_table())


class ExportError(RuntimeError):
    """An export that cannot be made, with a message that says what to do."""


def require_parquet_engine() -> None:
    """pyarrow is a dependency, but an environment can still lack it: say so plainly."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ExportError("Parquet export needs pyarrow, which this Python lacks: "
                          "pip install pyarrow (or export CSV)") from None


def _write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``path``, then rename it to ``path`` (one step on
    the same file system): readers see the old file or the whole new one. The file ends
    with the mode the user's umask gives any file they make (docs/storage.md)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    part = Path(name)
    try:
        write(part)
        os.chmod(part, shared_mode())  # born 0600 by mkstemp; an export is made to share
        os.replace(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            part.unlink()
        raise


def export_run(db_path: Path, run_id: str, out: Path, fmt: str = "csv",
               on_file: Callable[[Path], None] | None = None) -> list[Path]:
    """Write a run's tables into ``out``; ``on_file`` is told of each file once complete."""
    if fmt == "parquet":
        require_parquet_engine()  # before anything is written
    store = Store(db_path)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        tables = set(store.db.table_names())
        extra = [name for name, (table, _) in OPTIONAL_TABLES.items() if table in tables
                 and store.db.execute(f"select 1 from {table} where run_id = ? limit 1",
                                      [run_id]).fetchone()]
        for name in [*TABLES, *extra]:
            path = out / f"{name}.{fmt}"
            writer = _write_csv if fmt == "csv" else _write_parquet
            _write_atomically(path, lambda part, name=name, writer=writer:  # type: ignore[misc]
                              writer(store.db.conn, name, run_id, part))
            written.append(path)
            if on_file is not None:
                on_file(path)
    finally:
        store.close()
    return written


def export_command(db_path: Path, ref: str | None, *, fmt: str, out: Path) -> int:
    if not db_path.exists():
        return fail(f"no database at {db_path}; pass --db")
    run = Store(db_path).resolve_run(ref)
    if run is None:
        return fail(f"no run {ref!r} in {db_path}" if ref else f"no runs in {db_path}")
    if fmt == "parquet":
        try:
            require_parquet_engine()
        except ExportError as exc:
            return fail(f"--format parquet: {exc}")
    from coop_tui.runner import EXIT_SIGINT, EXIT_SIGTERM, stop_words

    try:
        with _sigterm_stops():
            export_run(db_path, run["id"], out, fmt, on_file=lambda path: print(path, flush=True))
    except (_Terminated, KeyboardInterrupt) as stop:
        code = EXIT_SIGTERM if isinstance(stop, _Terminated) else EXIT_SIGINT
        print(f"{stop_words(code)}: export of run {run['id']} stopped; the files listed are "
              f"complete, no other was left half-written; run it again for the rest",
              file=sys.stderr)
        return code
    return 0


class _Terminated(BaseException):
    """SIGTERM arrived during an export (a BaseException, like KeyboardInterrupt, so no
    ``except Exception`` on the way swallows it)."""


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """SIGTERM raises :class:`_Terminated` while the export runs, so the file being
    written is removed and the command ends with the stop line and 143 like a sweep."""

    def on_term(signum: int, frame: Any) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
