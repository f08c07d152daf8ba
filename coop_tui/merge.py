"""``coop-tui merge A.sqlite B.sqlite ... --db OUT.sqlite``: slices of a sweep made one run.

The slices of a sweep (``--shard K/N``, :mod:`coop_tui.shards`) are played by separate
processes into separate databases. Merging copies each source's sweep runs into OUT,
one run per sweep file: the runs of one sweep (the same sweep hash and the same
fingerprints of the files it reads) become one run whose matches and decisions are those
one process playing the whole sweep would have stored (the same match keys, seeds,
content keys, prompts, answers, sampled actions, timing, tokens and cost). Runs of
other sweeps become runs of their own.

Match ids and cache keys are derived from the run id (see :func:`coop_tui.sweep.match_id_for`
and the engine's keys): they are derived again for the merged run, so a resume of it
finds every stored decision. A match the merged run already holds finished is left
alone, so merging the same slice twice adds nothing; one it holds unfinished is replaced
by a finished copy.

Everything is SQL over attached databases (``INSERT ... SELECT``): nothing is held in
memory but one row per match being copied, so a million decisions merge in one pass.
Each source is one transaction taken with ``BEGIN IMMEDIATE`` (the store's write lock):
a merge that fails leaves OUT as it was before that source.

Judge runs (``coop-tui judge``) are not merged: judge the merged run instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from coop_tui import summaries
from coop_tui.analysis.coopeval_tables import rate_run
from coop_tui.analysis.sections import store_sections
from coop_tui.database import BUSY_TIMEOUT, check_database_path
from coop_tui.errors import SpecError, database_message
from coop_tui.hashing import stable_hash
from coop_tui.migrations import MIGRATIONS, NewerDatabaseError, applied_migrations, check_not_newer
from coop_tui.runner import open_store
from coop_tui.shards import Shard, parse_shard, slice_plan
from coop_tui.spec import build_sweep
from coop_tui.store import CHEAP_KINDS, DECISION_COLUMNS, SPILL_ROWS, Store
from coop_tui.sweep import match_id_for, new_run_id
from coop_tui.terminal import terminal_text

SWEEP_RUNS = (
    "select id, name, sweep_hash, inputs, shard, status, seed, spec, finished_at from runs"
    " where kind = 'sweep' and coalesce(sweep_hash, '') != '' order by created_at, id"
)
"""The runs a merge copies: sweeps (not imports, judge passes, re-asks or played games)."""
MATCH_TABLES = ("seats", "rounds", "phases")
"""Tables whose rows hang off a match id and are copied as they are."""


@dataclass
class SourceRun:
    """One sweep run of one source database."""

    id: str
    name: str
    sweep_hash: str
    inputs: str | None
    shard: str | None
    status: str
    seed: int
    spec: str
    finished_at: float | None


@dataclass
class Source:
    path: Path
    runs: list[SourceRun]
    skipped: int = 0
    """Runs that are not sweeps (imports, judge passes, ...): not merged."""


@dataclass
class MergeResult:
    """What one source brought to one merged run."""

    source: Path
    run_id: str
    target: str
    name: str
    shard: str | None
    matches: int
    decisions: int


@dataclass
class MergePlan:
    sources: list[Source]
    results: list[MergeResult] = field(default_factory=list)


# ----------------------------------------------------------------- checks (nothing written)
def read_source(path: Path, *, target: bool = False) -> Source:
    """A source database's sweep runs, read-only; a SpecError naming the file and the fix
    when it is missing, not SQLite, not ours, or made by another version. ``target``: the
    database merged into, which may be older (opening it upgrades it)."""
    where = str(path)
    if not path.is_file():
        raise SpecError(where, "does not exist or is not a file; give the databases the "
                               "slices were played into (--db of each --shard run)")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
    except sqlite3.Error as exc:
        raise SpecError(where, database_message(exc, path)) from None
    try:
        done = applied_migrations(conn)
        if done is None and target:
            return Source(path, [])  # an empty file: the store makes it a database
        if done is None:
            raise SpecError(where, "is not a coop-tui database (it has no schema history); give "
                                   "a database a --batch run wrote")
        check_not_newer(done)
        missing = [name for name, _ in MIGRATIONS if name not in done]
        if missing and target:
            return Source(path, [])  # upgraded when opened; its runs checked against then
        if missing:
            raise SpecError(where, "was written by an older coop-tui; open it once with this "
                                   f"version to upgrade it (coop-tui list runs --db {path}), then merge")
        rows = conn.execute(SWEEP_RUNS).fetchall()
        others = conn.execute("select count(*) from runs").fetchone()[0] - len(rows)
        if not target:
            for row in rows:
                check_run_fits(conn, SourceRun(*row), where)
    except NewerDatabaseError as exc:
        raise SpecError(where, f"was {exc}") from None
    except sqlite3.Error as exc:
        raise SpecError(where, database_message(exc, path)) from None
    finally:
        conn.close()
    return Source(path, [SourceRun(*row) for row in rows], skipped=others)


def check_run_fits(conn: sqlite3.Connection, run: SourceRun, where: str) -> None:
    """A source run is what it says: every match has its key, its slice label is K/N, and
    its matches are those of that slice of the sweep's plan (the plan rebuilt from the
    stored sweep; skipped when it cannot be, e.g. files it reads are elsewhere). A slice
    relabelled as another would otherwise be merged as the slice it is not."""
    unkeyed = conn.execute("select id from matches where run_id = ? and coalesce(match_key, '')"
                           " = '' limit 1", [run.id]).fetchone()
    if unkeyed is not None:
        raise SpecError(where, f"run {run.id} has a match without a match_key ({unkeyed[0]}): it "
                               "was not written by a sweep, or was edited since; merge the "
                               "database the slice was played into")
    shard = None
    if run.shard is not None:
        try:
            shard = parse_shard(run.shard)
        except SpecError:
            raise SpecError(where, f"run {run.id} is labelled slice {run.shard!r}, which is not "
                                   "K/N; merge the database the slice was played into") from None
    planned = _planned_keys(run, shard, where)
    if planned is None:
        return
    part = f"slice {shard}" if shard else "the whole sweep"
    held = 0
    for (key,) in conn.execute("select match_key from matches where run_id = ?", [run.id]):
        held += 1
        if key not in planned:
            raise SpecError(where, f"run {run.id} says it is {part} of sweep {run.name!r}, but "
                                   f"its match {key!r} is not in {part}'s plan: it was "
                                   "relabelled or edited; merge the database the slice was "
                                   "played into")
    if run.status == "done" and held < len(planned):
        raise SpecError(where, f"run {run.id} says it finished {part} of sweep {run.name!r}, "
                               f"but holds {held} of its {len(planned)} matches: it was "
                               "relabelled or edited; merge the database the slice was played "
                               "into")


def _planned_keys(run: SourceRun, shard: Shard | None, where: str) -> set[str] | None:
    """The match keys of ``run``'s slice (or whole sweep) by the plan of its stored sweep,
    or None when that sweep cannot be rebuilt here (it reads files not at hand). A stored
    sweep that rebuilds to another hash than the run's was edited: refused."""
    try:
        sweep = build_sweep(json.loads(run.spec), check_keys=False)
    except Exception:  # noqa: BLE001 - a sweep reading files not at hand: not checked
        return None
    if sweep.hash != run.sweep_hash:
        raise SpecError(where, f"run {run.id}'s stored sweep is not the sweep of its hash "
                               f"({sweep.hash} against {run.sweep_hash}): it was edited; merge "
                               "the database the slice was played into")
    try:
        plan = slice_plan(sweep, shard) if shard is not None else sweep.whole_plan()
        return {cell.match_key(slot) for cell, slot in plan}
    except Exception:  # noqa: BLE001 - as above
        return None


def check_compatible(sources: list[Source], existing: list[SourceRun], out: Path) -> None:
    """One sweep name, one sweep: two runs named alike but made from different sweep files
    (or from one file whose game, item or template files changed in between) cannot be
    one run, and two runs of one name in one database would be ambiguous to every command."""
    merging = {r.name for s in sources for r in s.runs}
    for run in existing:
        if run.shard is not None and run.name in merging:
            raise SpecError(str(out), f"holds slice {run.shard} of sweep {run.name!r} (run "
                            f"{run.id}) itself: merging beside it would leave two runs named "
                            f"{run.name!r}; merge every slice, this one too, into a new database "
                            f"(coop-tui merge {out} ... --db merged.sqlite)")
    seen: dict[str, tuple[SourceRun, Path]] = {}
    for path, run in [(out, r) for r in existing] + [(s.path, r) for s in sources for r in s.runs]:
        first = seen.setdefault(run.name, (run, path))
        other, other_path = first
        if other.sweep_hash != run.sweep_hash:
            raise SpecError(str(path), f"run {run.id} of sweep {run.name!r} was made from a "
                            f"different sweep file than run {other.id} in {other_path} (sweep "
                            f"hash {run.sweep_hash} against {other.sweep_hash}); merge each "
                            "into its own database, or give one sweep another name")
        changed = _changed_input(other.inputs, run.inputs)
        if changed is not None:
            raise SpecError(str(path), f"run {run.id} of sweep {run.name!r} read another version "
                            f"of {changed} than run {other.id} in {other_path}: the slices "
                            "did not play one experiment; play them again from the same files")


def _changed_input(a: str | None, b: str | None) -> str | None:
    """The first file whose fingerprint differs between two runs' ``inputs``, or None."""
    left, right = json.loads(a or "{}"), json.loads(b or "{}")
    for path in sorted(set(left) | set(right)):
        if left.get(path) != right.get(path):
            return path
    return None


def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode (one file under every name, hard links included)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def check_paths(paths: list[Path], out: Path) -> None:
    """The sources are distinct files, and OUT is none of them: compared by inode, so a
    hard link or a symlink to OUT is OUT (SQLite would wait on its own lock, then fail)."""
    check_database_path(out)
    target = _identity(out)
    seen: dict[tuple[int, int], Path] = {}
    for path in paths:
        same = _identity(path)
        if same is None:
            continue  # read_source says it is missing
        if same == target:
            linked = "" if path.resolve() == out.resolve() else " (the same file under another name)"
            raise SpecError(str(path), f"is the --db the merge writes to{linked}; give another "
                                       "--db (a new file is made) or leave this one out")
        if same in seen:
            raise SpecError(str(path), f"is given twice (also as {seen[same]}); give each "
                                       "database once")
        seen[same] = path


def existing_runs(out: Path) -> list[SourceRun]:
    """OUT's sweep runs (read-only), which merged runs join; none when OUT is new."""
    if not out.exists():
        return []
    return read_source(out, target=True).runs if out.is_file() else []


# ----------------------------------------------------------------- the merge
def _rekey_decision(old: str | None, old_run: str, old_match: str, content: str | None,
                    new_run: str, new_match: str) -> str | None:
    """A decision's cache key in the merged run. The engine's key of a match's own decision
    is ``stable_hash([run, match, content key])``; it is derived again from the new ids.
    A design shared by a tournament has another form: it gets a new key as unique as the
    old one (a finished tournament never looks it up again)."""
    if old is None:
        return None
    if content is not None and old == stable_hash([old_run, old_match, content]):
        return stable_hash([new_run, new_match, content])
    return stable_hash([new_run, "merged", old])


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"pragma main.table_info({table})")]


def target_run(conn: sqlite3.Connection, run: SourceRun) -> tuple[str, bool]:
    """The merged run of ``run``'s sweep in OUT, created when there is none: (id, new)."""
    row = conn.execute(
        "select id from runs where kind = 'sweep' and name = ? and sweep_hash = ? and shard is null"
        " order by created_at, id limit 1", [run.name, run.sweep_hash],
    ).fetchone()
    if row is not None:
        return row[0], False
    run_id = new_run_id()
    conn.execute(
        "insert into runs (id, name, kind, status, seed, sweep_hash, spec, created_at,"
        " finished_at, error, inputs, shard) values (?, ?, 'sweep', 'running', ?, ?, ?, ?, null,"
        " null, ?, null)",
        [run_id, run.name, run.seed, run.sweep_hash, run.spec, time.time(), run.inputs],
    )
    return run_id, True


def map_matches(conn: sqlite3.Connection, run: SourceRun, target: str) -> None:
    """``temp.merge_map``: the source run's matches to copy, with their ids in ``target``.
    A match the target holds finished is skipped (merged before, or played there); one it
    holds unfinished is taken when the source's copy finished."""
    conn.execute("create temp table if not exists merge_map (old_id text primary key,"
                 " new_id text not null, replaces integer not null)")
    conn.execute("delete from temp.merge_map")
    conn.execute(
        "insert into temp.merge_map (old_id, new_id, replaces)"
        " select m.id, coop_match_id(?, m.match_key),"
        "  exists (select 1 from main.matches t where t.run_id = ? and t.match_key = m.match_key)"
        " from src.matches m where m.run_id = ? and not exists (select 1 from main.matches t"
        "  where t.run_id = ? and t.match_key = m.match_key"
        "  and (t.status = 'done' or m.status != 'done'))"
        " order by m.rowid",
        [target, target, run.id, target],
    )


def drop_replaced(conn: sqlite3.Connection, target: str) -> None:
    """Remove the target's unfinished copies of matches about to be copied finished.

    The run's summaries go with them: until :func:`fold_in_plan_order` builds them again
    the report adds every match up from its own rows, so it is never wrong in between."""
    replaced = [r[0] for r in conn.execute("select new_id from temp.merge_map where replaces")]
    if replaced:
        summaries.delete_run(conn, target)
    for match_id in replaced:
        for table in ("decisions", *MATCH_TABLES, "failures"):
            conn.execute(f"delete from main.{table} where match_id = ?", [match_id])
        conn.execute("delete from main.matches where id = ?", [match_id])


def copy_run(conn: sqlite3.Connection, run: SourceRun, target: str) -> tuple[int, int]:
    """Copy the mapped matches with everything hanging off them; (matches, decisions)."""
    conn.execute(
        "insert or ignore into main.game_specs (hash, spec) select g.hash, g.spec from"
        " src.game_specs g where g.hash in (select m.game_spec_hash from src.matches m"
        " join temp.merge_map x on x.old_id = m.id)"
    )
    cols = _columns(conn, "matches")
    exprs = ["x.new_id" if c == "id" else "?" if c == "run_id" else f"m.{c}" for c in cols]
    n_matches = conn.execute(
        f"insert into main.matches ({', '.join(cols)}) select {', '.join(exprs)} from"
        " src.matches m join temp.merge_map x on x.old_id = m.id order by m.rowid", [target],
    ).rowcount
    for table in MATCH_TABLES:
        cols = _columns(conn, table)
        exprs = ["x.new_id" if c == "match_id" else f"s.{c}" for c in cols]
        conn.execute(
            f"insert into main.{table} ({', '.join(cols)}) select {', '.join(exprs)} from"
            f" src.{table} s join temp.merge_map x on x.old_id = s.match_id order by s.rowid"
        )
    conn.execute(  # prompts are content-addressed: each text once, whoever brought it
        "insert or ignore into main.texts (hash, text) select t.hash, t.text from src.texts t"
        " where t.hash in (select d.prompt_hash from src.decisions d join temp.merge_map x"
        " on x.old_id = d.match_id where d.prompt_hash is not null)"
    )
    cols = [c for c in _columns(conn, "decisions") if c != "id"]
    exprs = [
        "x.new_id" if c == "match_id"
        else "coop_rekey(d.cache_key, ?, d.match_id, d.content_key, ?, x.new_id)" if c == "cache_key"
        else f"d.{c}"
        for c in cols
    ]
    n_decisions = conn.execute(
        f"insert into main.decisions ({', '.join(cols)}) select {', '.join(exprs)} from"
        " src.decisions d join temp.merge_map x on x.old_id = d.match_id order by d.id",
        [run.id, target],
    ).rowcount
    conn.execute(
        "insert into main.failures (match_id, run_id, error, reason, transport_retries,"
        " created_at) select x.new_id, ?, f.error, f.reason, f.transport_retries, f.created_at"
        " from src.failures f join temp.merge_map x on x.old_id = f.match_id order by f.id",
        [target],
    )
    return n_matches, n_decisions


def settle_status(conn: sqlite3.Connection, target: str) -> None:
    """The merged run's status after a copy: done when the merged slices cover the sweep
    (every K of one N, or a whole run) and each finished; otherwise stopped, naming the
    slices still missing."""
    rows = conn.execute(
        "select shard, status, merged_at from main.run_merges where run_id = ?", [target]
    ).fetchall()
    status, error = coverage(rows)
    current = conn.execute("select status from main.runs where id = ?", [target]).fetchone()[0]
    if current == "done" and status != "done":
        return  # a run that was complete before (played whole) stays so
    finished = max((r[2] for r in rows if r[2] is not None), default=None)  # the last merge
    conn.execute("update main.runs set status = ?, error = ?, finished_at = ? where id = ?",
                 [status, error, finished, target])


def coverage(rows: list[tuple[str | None, str, float | None]]) -> tuple[str, str | None]:
    """(status, error) of a merged run from its sources' (shard, status, merged_at)."""
    if any(shard is None and status == "done" for shard, status, _ in rows):
        return "done", None
    slices: dict[int, set[int]] = {}
    failed = any(status == "failed" for _, status, _ in rows)
    for shard, status, _ in rows:
        if shard is None or status not in ("done", "failed"):
            continue
        k, n = (int(part) for part in shard.split("/"))
        slices.setdefault(n, set()).add(k)
    for n, ks in slices.items():
        if len(ks) == n:
            return ("failed", "a merged slice had failed matches") if failed else ("done", None)
    if not slices:
        return "stopped", "no merged slice has finished; resume the slices, then merge again"
    n, ks = max(slices.items(), key=lambda kv: len(kv[1]))
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in ks]
    shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    return "stopped", f"slices still to merge (or finish): {shown}"


def merge_source(store: Store, source: Source) -> list[MergeResult]:
    """Copy one source database's sweep runs into the store, in one transaction."""
    conn = store.db.conn
    store.commit_pending()
    # a plain path: the store's connection takes no URIs (a "file:" name would be a file)
    conn.execute("attach database ? as src", [str(source.path.resolve())])
    results = []
    try:
        with store.transaction():  # BEGIN IMMEDIATE under the store's write lock
            for run in source.runs:
                target, _new = target_run(conn, run)
                map_matches(conn, run, target)
                drop_replaced(conn, target)
                matches, decisions = copy_run(conn, run, target)
                conn.execute(
                    "insert or replace into main.run_merges (run_id, source_run_id, source_db,"
                    " shard, status, matches, merged_at) values (?, ?, ?, ?, ?, ?, ?)",
                    [target, run.id, str(source.path), run.shard, run.status,
                     conn.execute("select count(*) from src.matches where run_id = ?",
                                  [run.id]).fetchone()[0], time.time()],
                )
                settle_status(conn, target)
                results.append(MergeResult(source.path, run.id, target, run.name, run.shard,
                                           matches, decisions))
    finally:
        conn.execute("detach database src")
    return results


def in_plan_order(conn: sqlite3.Connection, target: str) -> None:
    """Give the run's matches rowids in the order of the sweep's plan (``plan_index``).

    One process stores a strategy sweep's matches in plan order, and the report adds
    floats up in stored order; slices merged one after the other would add the same
    numbers in another order and differ in the last digits. Only rowids change: ids, and
    every row that points at a match, stay as they are."""
    unordered = conn.execute(
        "select count(*) from (select plan_index as i, lag(plan_index) over (order by rowid)"
        " as before from main.matches where run_id = ?) where i < before", [target],
    ).fetchone()[0]
    unknown = conn.execute("select count(*) from main.matches where run_id = ? and plan_index"
                           " is null", [target]).fetchone()[0]
    if not unordered or unknown:  # in order already, or run by a coop-tui without the index
        return
    conn.execute("create temp table if not exists merge_order (id text primary key,"
                 " new_rowid integer not null)")
    conn.execute("delete from temp.merge_order")
    conn.execute(  # past every rowid in use, in plan order
        "insert into temp.merge_order (id, new_rowid) select id, (select max(rowid) from"
        " main.matches) + row_number() over (order by plan_index, rowid) from main.matches"
        " where run_id = ?", [target],
    )
    conn.execute("update main.matches set rowid = (select o.new_rowid from temp.merge_order o"
                 " where o.id = matches.id) where run_id = ?", [target])


def fold_in_plan_order(conn: sqlite3.Connection, target: str) -> None:
    """Build the run's summaries again, match by match in stored (plan) order, each the
    way the store folds it while a sweep plays: a strategy-only match from its rows in
    Python (:func:`summaries.fold_rows`), any other in SQL. Same sums, same order, same
    floats. One match's rows in memory at a time."""
    summaries.delete_run(conn, target)
    done = conn.execute(
        "select m.id, m.run_id, m.experiment, m.condition_key from main.matches m"
        " where m.run_id = ? and m.status = 'done' order by m.rowid", [target],
    ).fetchall()
    select = f"select {', '.join(DECISION_COLUMNS)} from main.decisions where match_id = ? order by id"
    for match in done:
        seats = conn.execute("select agent, agent_kind from main.seats where match_id = ?"
                             " order by seat", [match[0]]).fetchall()
        size = conn.execute(
            "select (select count(*) from main.decisions where match_id = ?1) + (select count(*)"
            " from main.rounds where match_id = ?1) + (select count(*) from main.phases"
            " where match_id = ?1)", [match[0]]).fetchone()[0]
        if not seats or any(kind not in CHEAP_KINDS for _, kind in seats) or size >= SPILL_ROWS:
            summaries.fold(conn, match[0])
            continue
        decisions = [list(row) for row in conn.execute(select, [match[0]])]
        rounds = conn.execute(
            "select match_id, round, seat, action, payoff, cooperated, info from main.rounds"
            " where match_id = ? order by rowid", [match[0]]).fetchall()
        summaries.fold_rows(conn, tuple(match), [a for a, _ in seats], decisions, rounds,
                            DECISION_COLUMNS)
    conn.execute("delete from main.section_results where run_id = ?", [target])


def settle_order(store: Store, targets: list[str]) -> None:
    """After the copies: each merged run that gained matches in plan order, its summaries
    folded again (one transaction per run); then, as ``--batch`` does when a run ends,
    its deviation ratings solved and its slow report sections stored, so ``report``
    reads them."""
    conn = store.db.conn
    for target in targets:
        with store.transaction():
            in_plan_order(conn, target)
            fold_in_plan_order(conn, target)
        with contextlib.suppress(sqlite3.Error):
            rate_run(store, target)
        with contextlib.suppress(sqlite3.Error):
            store_sections(store, target)


def merge(paths: list[Path], out: Path) -> MergePlan:
    """Check every source (nothing written when one is refused), then merge them in order."""
    check_paths(paths, out)
    sources = [read_source(path) for path in paths]
    check_compatible(sources, existing_runs(out), out)
    plan = MergePlan(sources)
    created = not out.exists()
    store = open_store(out)
    try:
        conn = store.db.conn
        # a colleague's database is untrusted: its schema may call no function of ours
        conn.execute("pragma trusted_schema = off")
        conn.create_function("coop_match_id", 2, match_id_for, deterministic=True)
        conn.create_function("coop_rekey", 6, _rekey_decision, deterministic=True)
        for n, source in enumerate(sources):
            try:
                plan.results.extend(merge_source(store, source))
            except sqlite3.Error as exc:  # a source whose tables are not what they claim
                raise SpecError(str(source.path), f"could not be merged ({exc}); nothing of it "
                                f"was written ({n} source(s) before it were merged)") from None
        grown = [r.target for r in plan.results if r.matches]
        settle_order(store, list(dict.fromkeys(grown)))
    except BaseException:
        store.close()
        if created and not plan.results:  # a database this merge made and filled with nothing
            for leftover in (out, Path(f"{out}-wal"), Path(f"{out}-shm")):
                leftover.unlink(missing_ok=True)
        raise
    store.close()
    return plan


def merge_command(paths: list[Path], out: Path) -> int:
    """The CLI's ``merge``: merge, then one line per source run and one per merged run."""
    plan = merge(paths, out)
    for result in plan.results:
        part = f"slice {result.shard}" if result.shard else "whole sweep"
        print(f"{terminal_text(str(result.source))}: run {terminal_text(result.run_id)} "
              f"({terminal_text(result.name)}, {part}) -> run {result.target}: "
              f"{result.matches} matches, {result.decisions} decisions added")
    for source in plan.sources:
        if source.skipped:
            print(f"{terminal_text(str(source.path))}: {source.skipped} run(s) that are not "
                  "sweeps (imports, judge passes, games played) left out", file=sys.stderr)
        if not source.runs:
            print(f"{terminal_text(str(source.path))}: no sweep run to merge", file=sys.stderr)
    conn = sqlite3.connect(f"{out.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
    try:
        for target in dict.fromkeys(r.target for r in plan.results):
            name, status, error = conn.execute(
                "select name, status, error from runs where id = ?", [target]).fetchone()
            n = conn.execute("select count(*) from matches where run_id = ?", [target]).fetchone()[0]
            tail = f" ({terminal_text(error)})" if error else ""
            print(f"run {target} ({terminal_text(name)}): {n} matches, {status}{tail}; "
                  f"report: coop-tui report {target} --db {os.fspath(out)}")
    finally:
        conn.close()
    return 0
