"""Hostile files and crowded databases (issue #31): what a reader opens, how much it reads,
and many processes writing one SQLite file.

The promises checked: a value naming a device or FIFO is refused (exit 2, the field named)
instead of read forever; YAML aliases cannot multiply a small file into billions of values;
a CoopEval ``config.json`` is bounded like its records before a byte is read; a ``.env``
that is not UTF-8 is named; any number of processes open, migrate and write one database;
a database made by a newer coop-tui is refused untouched.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coop_tui import inputs
from coop_tui.errors import SpecError
from coop_tui.games.base import GameError
from coop_tui.games.user import read_game_file
from coop_tui.grounded.items import load_items
from coop_tui.importers.coopeval import plan_import
from coop_tui.importers.coopeval_records import CoopEvalError
from coop_tui.spec import parse_config_text
from coop_tui.store import Store

DATA = Path(__file__).parent / "data"
STRATEGY_SWEEP = """
name = "{name}"
seed = 7
samples = 12

[agents.tft]
strategy = "tit_for_tat"

[agents.alld]
strategy = "always_defect"

[agents.coin]
strategy = "random"
params = {{ p = 0.5 }}

[[experiments]]
game = "prisoners"
mechanism = "similarity"
matchup = "cross"
agents = ["tft", "alld", "coin"]
similarity = [0, 50, 100]
framing = "similar"
"""


def cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process (a hang fails the test by the timeout)."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "coop_tui.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


# --------------------------------------------------------------- 1. regular files, bounded
@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_sweep_value_naming_a_device_or_fifo_is_refused_naming_the_field(
        tmp_path: Path, special: str) -> None:
    """Fingerprinting read every existing path a sweep names: ``name = "/dev/zero"`` read
    zeros forever, a FIFO waited forever for a writer."""
    if special == "fifo":
        special = str(tmp_path / "pipe")
        os.mkfifo(special)
    sweep = tmp_path / "s.toml"
    sweep.write_text(STRATEGY_SWEEP.format(name=special))
    db = tmp_path / "x.db"
    result = cli("--batch", str(sweep), "--db", str(db), timeout=60)
    assert result.returncode == 2, result.stderr
    assert "name:" in result.stderr and special in result.stderr
    assert "FIFO" in result.stderr or "character device" in result.stderr
    assert not db.exists()  # refused before the database was opened


def test_readers_refuse_a_fifo_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "items.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="FIFO"):
        load_items(fifo)
    with pytest.raises(inputs.NotRegularFile):
        inputs.read_regular(fifo)
    with pytest.raises(inputs.NotRegularFile, match="character device"):
        inputs.read_regular("/dev/zero")


LAUGHS = textwrap.dedent("""\
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
    """)


def test_a_billion_laughs_study_file_is_refused_before_it_is_walked(tmp_path: Path) -> None:
    """Nine levels of ten aliases stand for 10^9 strings: validating them ran forever."""
    sweep = tmp_path / "laughs.yaml"
    sweep.write_text(LAUGHS)
    result = cli("--batch", str(sweep), "--db", str(tmp_path / "x.db"), timeout=60)
    assert result.returncode == 2, result.stderr
    assert str(sweep) in result.stderr and "aliases" in result.stderr


def test_yaml_aliases_within_the_bound_still_load() -> None:
    text = "base: &b {strategy: tit_for_tat}\nagents: {x: *b, y: *b}\n"
    assert parse_config_text(text, Path("s.yaml"))["agents"]["y"] == {"strategy": "tit_for_tat"}


def test_a_yaml_alias_inside_itself_is_refused() -> None:
    with pytest.raises(SpecError, match="refers to the value that contains it"):
        parse_config_text("a: &x [1, *x]\n", Path("s.yaml"))


def test_a_billion_laughs_game_file_is_refused(tmp_path: Path) -> None:
    game = tmp_path / "laughs.yaml"
    game.write_text(LAUGHS)
    with pytest.raises(GameError, match="aliases"):
        read_game_file(game)


def _coopeval_copy(tmp_path: Path) -> Path:
    run = tmp_path / "tournament"
    shutil.copytree(DATA / "coopeval_sample" / "no_mechanism_prisoners_dilemma", run)
    return run


def test_a_coopeval_config_past_the_records_bound_is_refused_unread(tmp_path: Path) -> None:
    """A 400 MB config.json was parsed whole (2.1 GB resident); a sparse file past the
    bound costs no disk and must be refused by its size."""
    run = _coopeval_copy(tmp_path)
    with (run / "config.json").open("r+b") as fh:
        fh.truncate(inputs.MAX_DECOMPRESSED_BYTES + 1)
    db = tmp_path / "x.db"
    result = cli("import", "coopeval", str(run), "--db", str(db))
    assert result.returncode == 2, result.stderr
    assert "config.json" in result.stderr and "MiB" in result.stderr


def test_a_coopeval_config_is_bounded_like_its_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _coopeval_copy(tmp_path)
    config = run / "config.json"
    config.write_text(config.read_text() + " " * 4096)  # still valid JSON
    monkeypatch.setattr("coop_tui.importers.coopeval_records.MAX_DECOMPRESSED_BYTES", 4096)
    with pytest.raises(CoopEvalError, match=r"config\.json.*MiB"):
        plan_import(run)


def test_an_env_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"OPENAI_API_KEY=\xff\xfe\xfa\n")
    result = cli("list", "games", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert ".env" in result.stderr and "UTF-8" in result.stderr
    assert "unexpected" not in result.stderr


# --------------------------------------------------------------- 2. many processes, one database
def _open_store(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    store = Store(path)
    with store.transaction():
        store.db.execute("insert into game_specs (hash, spec) values (?, '{}')", [str(os.getpid())])
    store.close()


def test_wal_mode_waits_for_a_process_that_holds_a_new_file(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A journal-mode change fails at once with "database is locked" while another
    connection holds the file (SQLite skips its busy handler there): about 1 in 25 of 8
    processes opening one new database at once failed so. ``use_wal`` waits and asks again;
    here the holder lets go when it is first waited for (no clock involved)."""
    from coop_tui import database

    path = tmp_path / "new.db"
    holder = sqlite3.connect(path)
    holder.execute("begin exclusive")
    holder.execute("create table t (x)")
    waits: list[float] = []

    def let_go(delay: float) -> None:
        waits.append(delay)
        if holder.in_transaction:
            holder.commit()

    monkeypatch.setattr(database.time, "sleep", let_go)
    late = sqlite3.connect(path, timeout=0)  # refused at once, as in the race
    database.use_wal(late)
    assert waits and late.execute("pragma journal_mode").fetchone()[0] == "wal"
    # a lock that outlasts the busy timeout is still an error, named as SQLite names it
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.0)
    other = sqlite3.connect(tmp_path / "other.db", timeout=0)
    stuck = sqlite3.connect(tmp_path / "other.db")
    stuck.execute("begin exclusive")
    stuck.execute("create table t (x)")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        database.use_wal(other)
    for conn in (holder, late, other, stuck):
        conn.close()


def test_many_processes_open_a_fresh_database_at_once(tmp_path: Path) -> None:
    """Each checked for ``_migrations`` and created it: two of three failed with "table
    _migrations already exists". Migrations now run under ``BEGIN IMMEDIATE``, reading
    again what another process applied while this one waited."""
    db = tmp_path / "fresh.db"
    ctx = multiprocessing.get_context("fork")
    n = 8
    barrier = ctx.Barrier(n)
    procs = [ctx.Process(target=_open_store, args=(str(db), barrier)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * n
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("select count(*) from game_specs").fetchone()[0] == n
        names = [r[0] for r in conn.execute("select name from _migrations")]
    finally:
        conn.close()
    assert len(names) == len(set(names))  # every migration applied once


def test_a_group_commit_holds_the_write_lock_from_its_first_read(tmp_path: Path) -> None:
    """The group's transaction began deferred: its first statement (a read) took a
    snapshot, another process committed, and the group's first write then failed at
    once with "database is locked" (SQLite cannot wait there in WAL mode)."""
    db = tmp_path / "g.db"
    store = Store(db)
    other = sqlite3.connect(db, timeout=0, isolation_level=None)

    async def window() -> None:
        with store.grouped_commits(), store._event_write():
            store.db.execute("select count(*) from game_specs").fetchone()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("insert into game_specs (hash, spec) values ('other', '{}')")
            store.db.execute("insert into game_specs (hash, spec) values ('mine', '{}')")

    try:
        asyncio.run(window())
        rows = {r[0] for r in other.execute("select hash from game_specs")}
    finally:
        other.close()
        store.close()
    assert rows == {"mine"}


@pytest.mark.slow
def test_three_strategy_sweeps_on_one_new_database_all_finish(tmp_path: Path) -> None:
    """Serve tabs, the TUI and several ``--batch`` sweeps share a database: three sweeps
    started together all finish, every decision stored (as many as the same sweep alone)."""
    alone_db, shared = tmp_path / "alone.db", tmp_path / "shared.db"
    files = []
    for i in range(3):
        files.append(tmp_path / f"s{i}.toml")
        files[-1].write_text(STRATEGY_SWEEP.format(name=f"crowd-{i}"))
    assert cli("--batch", str(files[0]), "--db", str(alone_db)).returncode == 0
    env = {**os.environ, "COLUMNS": "200"}
    procs = [subprocess.Popen([sys.executable, "-m", "coop_tui.cli", "--batch", str(f), "--db",
                               str(shared)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    per_run = "select count(*) from decisions d join matches m on m.id = d.match_id " \
              "join runs r on r.id = m.run_id where r.name = ?"
    with sqlite3.connect(alone_db) as conn:
        expected = conn.execute(per_run, ["crowd-0"]).fetchone()[0]
    assert expected > 0
    conn = sqlite3.connect(shared)
    try:
        counts = [conn.execute(per_run, [f"crowd-{i}"]).fetchone()[0] for i in range(3)]
        statuses = {r[0] for r in conn.execute("select status from runs")}
    finally:
        conn.close()
    assert counts == [expected] * 3
    assert statuses == {"done"}


def test_a_database_made_by_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("insert into _migrations (name, applied_at) values ('m999_from_the_future', 0)")
    conn.close()
    before = db.read_bytes()
    for args in (["report", "--db", str(db)], ["list", "runs", "--db", str(db)]):
        result = cli(*args)
        assert result.returncode == 2, result.stderr
        assert "newer coop-tui" in result.stderr and "upgrade" in result.stderr
        assert "m999_from_the_future" in result.stderr
    assert db.read_bytes() == before


# --------------------------------------------------------------- 3. the small ones
def _db_with_run(path: Path, *, decisions: int = 0, bad_row: int | None = None) -> str:
    """A database holding one run of one match with ``decisions`` rows written by SQL (fast
    at any size); ``bad_row``: that decision's response is not UTF-8, which SQLite stores
    and Python cannot read back (a failure part-way through an export)."""
    store = Store(path)
    run_id = "20260101-000000-abcdef"
    store.create_run(run_id, "crowd", kind="sweep", seed=1, sweep_hash="h", spec={})
    with store.transaction():
        store.db.execute("insert into matches (id, run_id, status) values ('m1', ?, 'done')", [run_id])
        store.db.execute(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)"
            " insert into decisions (match_id, round, phase, seat, agent, response)"
            " select 'm1', i, 'move', 0, 'tft', case when i = ? then cast(x'c328ff' as text)"
            " else 'C' end from n", [decisions, bad_row or -1])
    store.close()
    return run_id


def test_a_run_id_prefix_takes_like_wildcards_literally(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    run_id = _db_with_run(db)
    store = Store(db)
    try:
        assert store.resolve_run("%") is None and store.resolve_run("2026_101") is None
        assert store.resolve_run(run_id[:8])["id"] == run_id  # a real prefix still works
    finally:
        store.close()
    result = cli("report", "%", "--db", str(db))
    assert result.returncode == 2 and "no run" in result.stderr, result.stderr


def test_an_export_failing_part_way_leaves_the_earlier_file_whole(tmp_path: Path) -> None:
    """The file was opened under its own name and written chunk by chunk: a failure after
    the first chunk left half a table where the last export's file had been."""
    from coop_tui.export import CHUNK

    db, out = tmp_path / "x.db", tmp_path / "out"
    _db_with_run(db, decisions=CHUNK + 10, bad_row=CHUNK + 5)
    out.mkdir()
    (out / "decisions.csv").write_text("the earlier export\n")
    result = cli("export", "--db", str(db), "--out", str(out))
    assert result.returncode != 0
    assert (out / "decisions.csv").read_text() == "the earlier export\n"
    assert sorted(p.name for p in out.iterdir()) == ["decisions.csv", "matches.csv", "seats.csv"]


@pytest.mark.slow
def test_sigterm_stops_an_export_with_the_stop_line_and_no_half_file(tmp_path: Path) -> None:
    db, out = tmp_path / "x.db", tmp_path / "out"
    _db_with_run(db, decisions=400_000)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "coop_tui.cli", "export", "--db", str(db),
                             "--out", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # matches.csv is complete: the decisions are next
    assert first.strip().endswith("matches.csv"), proc.stderr.read()
    proc.terminate()
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "stopped" in err
    listed = {Path(line).name for line in (first + rest).split()}
    present = {p.name for p in out.iterdir()}
    # every file listed is there; no .part file is left; the 400,000 decisions being
    # written when the signal came are not there at all (seats.csv, with none, may have
    # been renamed just before the signal, unlisted)
    assert listed <= present <= {"matches.csv", "seats.csv"}
    assert (out / "matches.csv").read_text().count("\n") == 2  # header and the one match


def test_an_imported_count_beyond_sqlite_integers_is_refused(tmp_path: Path) -> None:
    """``1e30`` trials was an OverflowError from the insert ("unexpected", exit 1)."""
    import gzip

    lines = gzip.decompress((DATA / "strategic_personalities.sample.csv.gz").read_bytes())
    header, row = lines.decode().splitlines()[:2]
    fields = row.split(",")
    fields[8] = "1e30"  # the trial number
    table = tmp_path / "trials.csv"
    table.write_text(header + "\n" + ",".join(fields) + "\n")
    db = tmp_path / "x.db"
    result = cli("import", "strategic-personalities", str(table), "--db", str(db))
    assert result.returncode == 2, result.stderr
    assert "line 2" in result.stderr and "2^63" in result.stderr and "unexpected" not in result.stderr
