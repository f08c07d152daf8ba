"""A new database starts from the shipped schema snapshot (``data/schema.json``), and a
strategy sweep's ``--batch`` never imports sqlite-utils or pandas.

sqlite-utils imports pandas on the way in, about half a second of a strategy tournament's
whole command; the migrations that build an empty file were its only user on that path.
The snapshot must therefore say exactly what the migrations build, and a database built
from a stale snapshot must still get the migrations it lacks.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coop_tui import migrations
from coop_tui.database import Database
from coop_tui.store import Store

STRATEGY_SWEEP = """\
name = "snapshot-strategies"
seed = 3
reuse = false

[agents]
tft = { strategy = "tit_for_tat" }
grim = { strategy = "grim_trigger" }

[[experiments]]
game = "pd_canonical"
mechanism = "repetition"
rounds = 5
matchup = "cross"
agents = ["tft", "grim"]
"""


def migrated(path: str = ":memory:") -> sqlite3.Connection:
    """A database built by running every migration (no snapshot)."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.apply_migrations(Database(conn), snapshot=False)
    return conn


def schema_of(conn: sqlite3.Connection) -> set[tuple[str, str, str, str]]:
    return set(conn.execute("select type, name, tbl_name, sql from sqlite_master"))


def test_the_shipped_snapshot_is_what_the_migrations_build() -> None:
    shipped = json.loads(migrations.snapshot_path().read_text(encoding="utf-8"))
    built = migrations.schema_snapshot(migrated())
    assert shipped == built, (
        "data/schema.json is out of date: run `python -m coop_tui.migrations` after "
        "appending a migration"
    )


def test_a_new_database_from_the_snapshot_equals_a_migrated_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "new.db")
    names = [r[0] for r in store.db.execute("select name from _migrations order by rowid")]
    fresh = schema_of(store.db.conn)
    store.close()
    reference = migrated(str(tmp_path / "old.db"))
    assert fresh == schema_of(reference)
    assert names == [name for name, _ in migrations.MIGRATIONS]


def test_a_stale_snapshot_still_gets_the_later_migrations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot written before the last migration: the store applies that one itself."""
    last, _fn = migrations.MIGRATIONS[-1]
    conn = migrated()
    snapshot = migrations.schema_snapshot(conn)
    assert last in snapshot["migrations"]
    # the snapshot of a database that has every migration but the last one
    older = sqlite3.connect(":memory:", isolation_level=None)
    saved = list(migrations.MIGRATIONS)
    try:
        migrations.MIGRATIONS[:] = saved[:-1]
        migrations.apply_migrations(Database(older), snapshot=False)
        stale = migrations.schema_snapshot(older)
    finally:
        migrations.MIGRATIONS[:] = saved
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(stale), encoding="utf-8")
    monkeypatch.setattr(migrations, "snapshot_path", lambda: path)

    store = Store(tmp_path / "new.db")
    applied = {r[0] for r in store.db.execute("select name from _migrations")}
    assert schema_of(store.db.conn) == schema_of(conn)
    store.close()
    assert applied == {name for name, _ in saved}


def test_a_file_with_tables_of_its_own_is_not_overwritten_by_the_snapshot(tmp_path: Path) -> None:
    """Only a database with no tables at all starts from the snapshot."""
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table notes (body text)")
        conn.execute("insert into notes values ('kept')")
    conn.close()
    assert migrations.start_from_snapshot(sqlite3.connect(path, isolation_level=None)) == []
    store = Store(path)
    assert store.db.execute("select body from notes").fetchall() == [("kept",)]
    assert store.db.execute("select count(*) from decisions").fetchone()[0] == 0
    store.close()


def test_a_strategy_batch_imports_neither_sqlite_utils_nor_pandas(tmp_path: Path) -> None:
    """The whole ``--batch`` command of a strategy sweep, in a real process: what it
    imports is listed at exit. The TUI, litellm and the HTTP clients stay out too."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(STRATEGY_SWEEP, encoding="utf-8")
    db = tmp_path / "run.db"
    probe = textwrap.dedent(f"""
        import json, sys
        from coop_tui.cli import main
        try:
            main(["--db", {str(db)!r}, "--batch", {str(sweep)!r}, "--yes"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert not loaded & {"sqlite_utils", "pandas", "pyarrow", "textual", "litellm", "aiohttp",
                         "openai", "httpx", "matplotlib", "llama_cpp"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from decisions").fetchone()[0] == 4 * 5 * 2
