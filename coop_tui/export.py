"""``coop-tui export``: a run's tables as CSV or Parquet files, through pandas.

Secrets never reach the database, so they cannot reach an export either; the agent
specs exported are the stored public ones.
"""

from __future__ import annotations

from pathlib import Path

TABLES = {
    "matches": "select * from matches where run_id = ?",
    "seats": "select s.* from seats s join matches m on m.id = s.match_id where m.run_id = ?",
    "decisions": "select d.* from decisions d join matches m on m.id = d.match_id where m.run_id = ?",
    "rounds": "select r.* from rounds r join matches m on m.id = r.match_id where m.run_id = ?",
    "phases": "select p.* from phases p join matches m on m.id = p.match_id where m.run_id = ?",
}


def export_run(db_path: Path, run_id: str, out: Path, fmt: str = "csv") -> list[Path]:
    import pandas as pd

    from coop_tui.store import Store

    store = Store(db_path)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, sql in TABLES.items():
        frame = pd.read_sql_query(sql, store.db.conn, params=[run_id])
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    store.close()
    return written


def export_command(db_path: Path, ref: str | None, *, fmt: str, out: Path) -> int:
    from coop_tui.errors import fail
    from coop_tui.store import Store

    if not db_path.exists():
        return fail(f"no database at {db_path}; pass --db")
    run = Store(db_path).resolve_run(ref)
    if run is None:
        return fail(f"no run {ref!r} in {db_path}" if ref else f"no runs in {db_path}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return fail("--format parquet needs pyarrow: pip install pyarrow")
    for path in export_run(db_path, run["id"], out, fmt):
        print(path)
    return 0
