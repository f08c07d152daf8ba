"""Hostile input on ``merge``, ``--db`` paths and run references (issue #41).

Slices of a small strategy sweep are played in this process (no model, no network) into
real SQLite files, then handed to ``merge``, ``report`` and ``export`` the way a careless
or hostile user could: a slice's own database as the output, an output hard-linked to a
source, a device, FIFO or folder as ``--db``, a slice relabelled as another, a match
stripped of its key. Each is refused with one line naming the file and the fix, exit 2,
and nothing written; files get the modes docs/storage.md promises.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coop_tui.cli import main
from coop_tui.errors import SpecError
from coop_tui.merge import read_source
from coop_tui.slices import missing_slices

SWEEP = """
name = "hostile"
seed = 3
samples = 3

[agents.tft]
strategy = "tit_for_tat"

[agents.alld]
strategy = "always_defect"

[[experiments]]
name = "repeated"
game = "prisoners"
mechanism = "repetition"
rounds = 2
matchup = "cross"
agents = ["tft", "alld"]
"""


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def edit(db: Path, sql: str) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


def said(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    return " ".join((out.err + out.out).split())


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sweep's two slices, each in its own database (copied by each test)."""
    base = tmp_path_factory.mktemp("played")
    sweep = base / "s.toml"
    sweep.write_text(SWEEP)
    out = {"sweep": sweep}
    for k in (1, 2):
        db = base / f"slice{k}.sqlite"
        assert main(["--batch", str(sweep), "--db", str(db), "--shard", f"{k}/2"]) == 0
        out[f"slice{k}"] = db
    return out


@pytest.fixture
def slices(played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
           ) -> tuple[Path, Path]:
    copies = []
    for k in (1, 2):
        copy = tmp_path / f"slice{k}.sqlite"
        shutil.copyfile(played[f"slice{k}"], copy)
        copies.append(copy)
    capsys.readouterr()
    return copies[0], copies[1]


# ----------------------------------------------------------------- merge
def test_merge_into_a_slices_own_database_is_refused(
    slices: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to leave two runs named "hostile" (one a slice, one 'stopped') in one file,
    and ``report hostile`` picked one silently."""
    first, second = slices
    before = first.read_bytes()
    assert main(["merge", str(second), "--db", str(first)]) == 2
    text = said(capsys)
    assert str(first) in text and "holds slice 1/2" in text and "new database" in text
    assert first.read_bytes() == before
    assert rows(first, "select count(*) from runs where name = 'hostile'") == [(1,)]


def test_merge_output_hard_linked_to_a_source_is_refused_at_once(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same inode under two names: SQLite waited 31 s on its own lock, then said
    "database is locked"."""
    first, second = slices
    out = tmp_path / "merged.sqlite"
    assert main(["merge", str(first), "--db", str(out)]) == 0
    link = tmp_path / "link.sqlite"
    os.link(out, link)
    capsys.readouterr()
    assert main(["merge", str(second), str(link), "--db", str(out)]) == 2
    text = said(capsys)
    assert str(link) in text and "the same file under another name" in text


def test_a_slice_relabelled_as_another_is_refused(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = slices
    edit(first, "update runs set shard = '2/2'")
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(first), "--db", str(out)]) == 2
    text = said(capsys)
    assert str(first) in text and "is not in slice 2/2's plan" in text
    assert not out.exists()


def test_a_match_without_its_key_is_refused(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, second = slices
    edit(second, "update matches set match_key = '' where rowid = (select min(rowid) from matches)")
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(second), "--db", str(out)]) == 2
    assert "without a match_key" in said(capsys) and not out.exists()


LABELS = st.one_of(st.none(), st.text(max_size=8),
                   st.builds(lambda k, n: f"{k}/{n}", st.integers(-2, 5), st.integers(-1, 5)))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=LABELS, keys=st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=3))
def test_a_tampered_slice_is_refused_or_fits_its_plan(
    played: dict[str, Path], tmp_path: Path, label: str | None, keys: list[str | None]
) -> None:
    """Any shard label and any match keys written into a finished slice: reading it as a
    merge source raises SpecError, unless it is still the honest slice it was."""
    db = tmp_path / "tampered.sqlite"
    shutil.copyfile(played["slice1"], db)
    conn = sqlite3.connect(db)
    try:
        conn.execute("update runs set shard = ?", [label])
        ids = [r[0] for r in conn.execute("select id from matches order by rowid")]
        for match_id, key in zip(ids, keys, strict=False):
            conn.execute("update or ignore matches set match_key = ? where id = ?", [key, match_id])
        conn.commit()
    except sqlite3.IntegrityError:
        return  # the schema itself refuses it (NOT NULL)
    finally:
        conn.close()
    try:
        source = read_source(db)
    except SpecError:
        return
    honest = {r[0] for r in rows(played["slice1"], "select match_key from matches")}
    (run,) = source.runs
    held = {r[0] for r in rows(db, "select match_key from matches")}
    assert run.shard == "1/2" and held == honest


@given(st.lists(LABELS, max_size=6))
def test_missing_slices_never_raises_and_never_names_a_held_one(labels: list[str | None]) -> None:
    found = missing_slices(labels)
    if found is None:
        return
    n, missing = found
    assert n >= 1 and not set(missing) & set(labels)
    assert all(m.endswith(f"/{n}") for m in missing)


# ----------------------------------------------------------------- coverage in reports
def test_reports_say_which_slices_a_run_lacks(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slice's report said ``[done] 6/6`` and a partial merge ``[stopped] 6/6 done``
    as if the sweep were complete."""
    first, second = slices
    assert main(["report", "--db", str(first), "--json"]) == 0
    cover = json.loads(capsys.readouterr().out)["coverage"]
    assert cover == {"slices": 2, "held": ["1/2"], "missing": ["2/2"], "unfinished": []}
    merged = tmp_path / "partial.sqlite"
    assert main(["merge", str(second), "--db", str(merged)]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(merged)]) == 0
    assert "this run holds 2/2; missing 1/2" in said(capsys)
    assert main(["merge", str(first), "--db", str(merged)]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(merged), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["coverage"] is None


# ----------------------------------------------------------------- --db paths and modes
def non_regular(kind: str, tmp_path: Path) -> Path:
    if kind == "device":
        return Path("/dev/null")
    if kind == "fifo":
        path = tmp_path / "pipe.sqlite"
        os.mkfifo(path)
        return path
    path = tmp_path / "folder.sqlite"
    path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
@pytest.mark.parametrize("command", ["batch", "dry-run", "report", "list", "export", "merge"])
def test_a_db_path_that_is_not_a_regular_file_is_refused_by_every_command(
    played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    kind: str, command: str,
) -> None:
    """SQLite left ``/dev/null-journal`` behind, blocked on a FIFO, or blamed a folder for
    something else; now every command refuses before it opens the path."""
    path = non_regular(kind, tmp_path)
    argv = {
        "batch": ["--batch", str(played["sweep"])],
        "dry-run": ["--batch", str(played["sweep"]), "--dry-run"],
        "report": ["report"],
        "list": ["list", "runs"],
        "export": ["export", "--out", str(tmp_path / "out")],
        "merge": ["merge", str(played["slice1"])],
    }[command]
    journal_before = Path(f"{path}-journal").exists()
    assert main([*argv, "--db", str(path)]) == 2
    text = said(capsys)
    assert str(path) in text and "not a database file" in text, text
    assert Path(f"{path}-journal").exists() == journal_before
    assert not (tmp_path / "out").exists()


@pytest.fixture
def umask() -> Any:
    def set_mask(mask: int) -> None:
        os.umask(mask)

    old = os.umask(0o022)
    yield set_mask
    os.umask(old)


def test_a_new_database_is_private_and_an_existing_one_keeps_its_mode(
    played: dict[str, Path], tmp_path: Path, umask: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    umask(0o022)
    db = tmp_path / "new.sqlite"
    assert main(["--batch", str(played["sweep"]), "--db", str(db), "--shard", "1/2"]) == 0
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for extra in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        if extra.exists():
            assert stat.S_IMODE(extra.stat().st_mode) & 0o077 == 0
    shared = tmp_path / "shared.sqlite"
    shared.touch(mode=0o640)
    shared.chmod(0o640)
    assert main(["--batch", str(played["sweep"]), "--db", str(shared), "--shard", "1/2"]) == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_exports_follow_the_users_umask(
    played: dict[str, Path], tmp_path: Path, umask: Any, mask: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Files made to share: 0644 under umask 0022 (they were 0600, born of mkstemp)."""
    umask(mask)
    out = tmp_path / "export"
    assert main(["export", "--db", str(played["slice1"]), "--out", str(out)]) == 0
    files = list(out.iterdir())
    assert files and {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o666 & ~mask}


# ----------------------------------------------------------------- run references
def test_an_ambiguous_run_id_prefix_lists_the_candidates(
    played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "two.sqlite"
    shutil.copyfile(played["slice1"], db)
    assert main(["--batch", str(played["sweep"]), "--db", str(db), "--shard", "2/2"]) == 0
    ids = [r[0] for r in rows(db, "select id from runs order by id")]
    prefix = os.path.commonprefix(ids)
    assert len(ids) == 2 and prefix
    capsys.readouterr()
    assert main(["report", prefix, "--db", str(db)]) == 2
    text = said(capsys)
    assert "start of several run ids" in text and all(i in text for i in ids)


# ----------------------------------------------------------------- study files
def test_a_sweep_file_past_the_cap_is_refused_before_it_is_parsed(
    played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 200 MB TOML was parsed for 27 s before being refused; now its size is checked
    first, as for every other input (here 5 MiB of a valid sweep padded with comments)."""
    big = tmp_path / "big.toml"
    pad = "# padding\n" * (5 * 1024 * 1024 // 10)
    big.write_text(played["sweep"].read_text() + pad)
    db = tmp_path / "big.sqlite"
    assert main(["--batch", str(big), "--dry-run", "--db", str(db)]) == 2
    text = said(capsys)
    assert str(big) in text and "more than the 4 MiB" in text and not db.exists()


def test_a_slice_label_past_the_largest_slice_count_is_refused(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = slices
    edit(first, "update runs set shard = '1/99999999999999999999'")
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(first), "--db", str(out)]) == 2
    assert "which is not K/N" in said(capsys) and not out.exists()


def test_a_slice_status_merge_does_not_know_counts_as_unfinished(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A status written by a later coop-tui (or by hand): the slice is merged but not
    counted as finished, so the merged run is not called done."""
    first, second = slices
    edit(second, "update runs set status = 'exploded'")
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(first), str(second), "--db", str(out)]) == 0
    [(status, error)] = rows(out, "select status, error from runs")
    assert status == "stopped" and "2/2" in error
    capsys.readouterr()
    assert main(["report", "--db", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["coverage"]["unfinished"] == ["2/2"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_source_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    source = non_regular(kind, tmp_path)
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(source), "--db", str(out)]) == 2
    assert str(source) in said(capsys) and not out.exists()


def test_a_slice_whose_stored_sweep_was_edited_is_refused(
    slices: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Editing the stored sweep to fit a relabelled slice's plan changes its hash."""
    first, _ = slices
    (spec,) = rows(first, "select spec from runs")[0]
    data = json.loads(spec)
    data["seed"] = data.get("seed", 0) + 1
    conn = sqlite3.connect(first)
    conn.execute("update runs set spec = ?", [json.dumps(data)])
    conn.commit()
    conn.close()
    out = tmp_path / "m.sqlite"
    assert main(["merge", str(first), "--db", str(out)]) == 2
    assert "stored sweep is not the sweep of its hash" in said(capsys) and not out.exists()
