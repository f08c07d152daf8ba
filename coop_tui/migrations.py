"""The schema's history: an ordered list of small migration functions.

``Store`` applies the pending ones when it opens a database (:func:`apply_migrations`),
each once and in list order, and records it in ``_migrations``. A schema change is one new
function appended at the END of this module with ``@migration``; a migration that has
shipped is never edited (databases that applied it would not run it again). Each one gets
the real ``sqlite_utils.Database``; opening a current database runs none of them.

A new, empty database starts from ``data/schema.json`` instead: the schema (and any rows)
that every migration leaves in an empty file, written by ``python -m coop_tui.migrations``.
sqlite-utils imports pandas on the way in (about half a second), and a strategy sweep's
whole ``--batch`` command takes only a few; the migrations the snapshot does not name still
run as above, and ``tests/test_schema_snapshot.py`` checks that it equals the migrations'
result.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui import summaries
from coop_tui.database import Database, immediate
from coop_tui.errors import failure_reason
from coop_tui.hashing import text_hash
from coop_tui.redact import scrub
from coop_tui.shipped import data_dir

if TYPE_CHECKING:
    import sqlite_utils

# The strategic personalities paper's published trials (``sp_trials``, filled by importers/strategic_personalities.py):
PAPER_MODELS = (
    "claude-haiku-4.5", "claude-haiku-4.5-thinking", "claude-sonnet-4.5", "claude-sonnet-4.6",
    "claude-opus-4.5", "claude-opus-4.6", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini",
    "gpt-4.1-nano", "gpt-5-mini", "gpt-5-nano", "gpt-5.3", "gpt-5.4", "gemini-2.0-flash",
    "gemini-2.5-flash", "gemini-2.5-flash-thinking", "gemini-3-flash", "gemini-3-pro",
    "gemini-3.1-pro", "deepseek-v3", "deepseek-r1", "llama-3.3-70b", "ministral-14b",
    "qwen3.5-flash",
)
"""The 25 model keys of the paper (Supplementary Table 1)."""
DUPLICATE_KEY = ("game", "model", "opponent", "matchup", "condition", "trial")
"""Two rows with these equal are one trial run twice; the last copy counts."""


Migration = Callable[["sqlite_utils.Database"], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Append ``fn`` to the schema's history (its name is its key in ``_migrations``)."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


class NewerDatabaseError(sqlite3.DatabaseError):
    """The database records a migration this coop-tui does not know: a newer version
    made it, and writing to it with this one could damage what that version stored."""


def applied_migrations(conn: sqlite3.Connection) -> set[str] | None:
    """The names in ``_migrations``; None when the table does not exist yet."""
    try:
        return {row[0] for row in conn.execute("select name from _migrations")}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise


def check_not_newer(done: set[str] | None) -> None:
    """Raise :class:`NewerDatabaseError` when ``done`` names a migration we do not know."""
    unknown = sorted((done or set()) - {name for name, _ in MIGRATIONS})
    if unknown:
        shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise NewerDatabaseError(
            f"made by a newer coop-tui (its schema has {shown}, which this version does not "
            "know); upgrade coop-tui to open it (the file was left untouched)")


def apply_migrations(db: Database, *, snapshot: bool = True) -> list[str]:
    """Apply the pending migrations in list order (an empty file first takes the shipped
    snapshot, unless ``snapshot`` is False), each in its own ``BEGIN IMMEDIATE``
    transaction that first reads again what is applied; returns the names this call applied.

    Any number of processes may open a new or old database at once: the write lock makes
    them take turns, and each one skips what another applied while it waited (a plain
    check-then-create let two of three fail with "table _migrations already exists")."""
    # Plain SQL when nothing is pending, so opening a current database (every ``report``)
    # takes no write lock and never imports sqlite-utils; migrations themselves get the
    # real sqlite-utils object.
    done = applied_migrations(db.conn)
    check_not_newer(done)
    if done is not None and all(name in done for name, _ in MIGRATIONS):
        return []
    applied = start_from_snapshot(db.conn) if snapshot and done is None else []
    for name, fn in MIGRATIONS:
        with immediate(db.conn):
            db.conn.execute("create table if not exists _migrations"
                            " (name text primary key, applied_at float)")
            done = applied_migrations(db.conn) or set()
            check_not_newer(done)
            if name in done:
                continue
            fn(db.utils)
            db.conn.execute(
                "insert into _migrations (name, applied_at) values (?, ?)", [name, time.time()]
            )
        applied.append(name)
    return applied


def snapshot_path() -> Path:
    return data_dir() / "schema.json"


def schema_snapshot(conn: sqlite3.Connection) -> dict[str, Any]:
    """What a migrated database holds, as statements that rebuild it in an empty file:
    tables first, then indexes, triggers and views (each group in creation order), then
    any rows the migrations wrote (``_migrations`` itself is listed by name instead)."""
    objects = conn.execute(
        "select type, sql from sqlite_master where sql is not null"
        " order by type != 'table', rowid").fetchall()
    statements = [sql + ";" for _type, sql in objects]
    statements += [
        line for line in conn.iterdump()
        if line.startswith("INSERT INTO ") and not line.startswith('INSERT INTO "_migrations"')
    ]
    names = [r[0] for r in conn.execute("select name from _migrations order by rowid")]
    return {"migrations": names, "statements": statements}


def write_schema_snapshot(path: Path | None = None) -> Path:
    """Migrate an in-memory database and write its snapshot (run after appending a migration)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    apply_migrations(Database(conn), snapshot=False)
    target = path or snapshot_path()
    target.write_text(json.dumps(schema_snapshot(conn), indent=1) + "\n", encoding="utf-8")
    conn.close()
    return target


def _read_snapshot() -> dict[str, Any] | None:
    """The shipped snapshot, or None when it is missing, unreadable or names a migration
    this version does not have (the migrations alone then build the database)."""
    try:
        snapshot = json.loads(snapshot_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    known = {name for name, _ in MIGRATIONS}
    if not isinstance(snapshot, dict) or not set(snapshot.get("migrations", ())) <= known:
        return None
    return snapshot


def start_from_snapshot(conn: sqlite3.Connection) -> list[str]:
    """Build a database that has no tables at all from the shipped snapshot, recording its
    migrations as applied; returns their names (none when the file is not empty, another
    process got there first, or there is no usable snapshot)."""
    snapshot = _read_snapshot()
    if snapshot is None:
        return []
    with immediate(conn):
        if conn.execute("select count(*) from sqlite_master").fetchone()[0]:
            return []
        for statement in snapshot["statements"]:
            conn.execute(statement)
        now = time.time()
        conn.executemany("insert into _migrations (name, applied_at) values (?, ?)",
                         [(name, now) for name in snapshot["migrations"]])
    return list(snapshot["migrations"])


# ------------------------------------------------ the history, oldest first; append below


@migration
def m001_initial(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": str,
            "name": str,
            "kind": str,  # sweep / interactive / play / import
            "status": str,  # running / done / failed / stopped
            "seed": int,
            "sweep_hash": str,
            "spec": str,  # JSON, secrets removed
            "created_at": float,
            "finished_at": float,
            "error": str,
        },
        pk="id",
    )
    db["matches"].create(
        {
            "id": str,
            "run_id": str,
            "match_key": str,
            "experiment": int,
            "game": str,
            "game_spec": str,  # JSON: key + params + payoff tensor, so analysis never guesses
            "mechanism": str,
            "condition": str,  # JSON
            "condition_key": str,
            "similarity": float,
            "matchup": str,
            "sample": int,
            "seed": int,
            "status": str,  # running / done / failed / stopped
            "error": str,
            "payoffs": str,  # JSON per seat, as the mechanism scores the match
            "welfare": float,
            "info": str,
            "started_at": float,
            "finished_at": float,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["matches"].create_index(["run_id", "match_key"], unique=True)
    db["matches"].create_index(["run_id", "status"])
    db["seats"].create(
        {
            "match_id": str,
            "seat": int,
            "agent": str,
            "agent_kind": str,
            "agent_spec": str,
            "payoff": float,
        },
        pk=("match_id", "seat"),
        foreign_keys=[("match_id", "matches", "id")],
    )
    db["seats"].create_index(["agent"])
    db["decisions"].create(
        {
            "id": int,
            "match_id": str,
            "round": int,
            "phase": str,
            "seat": int,
            "kind": str,
            "agent": str,
            "prompt": str,  # JSON: the exact messages sent (the final attempt's)
            "response": str,
            "reasoning": str,
            "answer": str,  # constrained second-step answer, when there was one
            "parsed": str,  # JSON
            "valid": int,
            "attempts": int,
            "error": str,
            "normalisation": str,
            "labels": str,  # JSON list of shown labels
            "label_map": str,  # JSON: shown label index -> game action
            "distribution": str,  # JSON: probability per game action
            "action": int,
            "coop_prob": float,
            "cooperated": int,
            "constrained": int,
            "latency_ms": float,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "transport_retries": int,
            "retries": str,  # JSON list of rejected attempts
            "reused": int,
            "cache_key": str,
            "content_key": str,
            "created_at": float,
        },
        pk="id",
        foreign_keys=[("match_id", "matches", "id")],
    )
    db["decisions"].create_index(["cache_key"], unique=True)
    db["decisions"].create_index(["content_key"])
    db["decisions"].create_index(["match_id", "round", "seat"])
    db["rounds"].create(
        {
            "match_id": str,
            "round": int,
            "seat": int,
            "action": int,
            "payoff": float,
            "cooperated": int,
            "info": str,
        },
        pk=("match_id", "round", "seat"),
        foreign_keys=[("match_id", "matches", "id")],
    )
    db["phases"].create(
        {"match_id": str, "round": int, "phase": str, "info": str},
        pk=("match_id", "round", "phase"),
    )
    db["failures"].create(
        {"id": int, "match_id": str, "run_id": str, "error": str, "created_at": float}, pk="id"
    )


@migration
def m002_analysis_indexes(db: sqlite_utils.Database) -> None:
    # Keep the report and analysis screen in SQL at a million decisions.
    db["decisions"].create_index(["phase", "kind", "agent"], if_not_exists=True)
    db["seats"].create_index(["match_id", "agent"], if_not_exists=True)
    db["matches"].create_index(["run_id", "experiment", "condition_key"], if_not_exists=True)


@migration
def m003_replicates(db: sqlite_utils.Database) -> None:
    # A replicate is an independent copy of a whole tournament (CoopEval runs three);
    # population metrics are computed per replicate, then averaged.
    if "replicate" not in db["matches"].columns_dict:
        db["matches"].add_column("replicate", int, not_null_default=0)
    db["matches"].create_index(["run_id", "experiment", "replicate"], if_not_exists=True)


@migration
def m020_transport_queue(db: sqlite_utils.Database) -> None:
    # latency_ms is the provider's time; waiting for a concurrency slot is kept apart.
    # A match that failed because a decision gave up keeps that decision's retries.
    if "queue_ms" not in db["decisions"].columns_dict:
        db["decisions"].add_column("queue_ms", float)
    if "transport_retries" not in db["failures"].columns_dict:
        db["failures"].add_column("transport_retries", int)


@migration
def m030_run_lease_failure_reason(db: sqlite_utils.Database) -> None:
    # One run, one writer: the process playing a run holds its lease (pid, host,
    # heartbeat); failures carry a short reason so they can be grouped and counted.
    db["run_leases"].create(
        {"run_id": str, "pid": int, "host": str, "token": str, "heartbeat": float,
         "taken_at": float},
        pk="run_id",
        if_not_exists=True,
    )
    if "reason" not in db["failures"].columns_dict:
        db["failures"].add_column("reason", str)
    db["failures"].create_index(["run_id", "reason"], if_not_exists=True)


@migration
def m031_hardening_scrub_credentials(db: sqlite_utils.Database) -> None:
    # Databases written before redaction may hold "user:pass@" in api_base URLs (run and
    # seat specs) and echoed credentials in error texts: clean them once, in place. Only
    # rows containing "@" or an auth word are rewritten (a LIKE filter, then Python).
    db.conn.create_function("coop_scrub", 1, scrub, deterministic=True)
    before = db.conn.execute("pragma secure_delete").fetchone()[0]
    db.conn.execute("pragma secure_delete = on")  # overwrite the old text, do not just free it
    targets = [("runs", "spec"), ("runs", "error"), ("seats", "agent_spec"),
               ("matches", "error"), ("failures", "error"), ("decisions", "error")]
    for table, column in targets:
        if table not in db.table_names() or column not in db[table].columns_dict:
            continue
        db.conn.execute(
            f"update {table} set {column} = coop_scrub({column}) where ({column} like '%@%'"
            f" or {column} like '%bearer%' or {column} like '%basic%'"
            f" or {column} like '%authorization%') and {column} != coop_scrub({column})"
        )
    db.conn.execute(f"pragma secure_delete = {int(before)}")


@migration
def m010_content_addressed_prompts(db: sqlite_utils.Database) -> None:
    # A prompt is stored once in ``texts`` and referenced by its hash (rows written before
    # keep their inline ``prompt``, which readers still take). Strategy decisions carry no
    # prompt, cache key or content key: partial indexes leave them out, and the
    # phase/kind/agent index goes (the report reads summaries; it misled the planner).
    db.execute(
        "create table if not exists texts (hash text primary key, text text not null)"
    )
    if "prompt_hash" not in db["decisions"].columns_dict:
        db["decisions"].add_column("prompt_hash", str)
    db.execute("drop index if exists idx_decisions_phase_kind_agent")
    db.execute("drop index if exists idx_decisions_cache_key")
    db.execute("drop index if exists idx_decisions_content_key")
    db.execute(
        "create unique index idx_decisions_cache_key on decisions (cache_key)"
        " where cache_key is not null"
    )
    db.execute(
        "create index idx_decisions_content_key on decisions (content_key)"
        " where content_key is not null"
    )


@migration
def m011_match_summaries(db: sqlite_utils.Database) -> None:
    # Per-run aggregates of finished matches (see coop_tui.summaries), filled for the
    # matches an older database already holds.
    summaries.create_tables(db.conn)
    summaries.fold_pending(db.conn)


@migration
def m004_seed003_decision_options(db: sqlite_utils.Database) -> None:
    # Number and allocation answers (strategic personalities) are checked against a range, a step, keys
    # and a sum; the decision keeps them so a re-ask checks the same ones.
    if "options" not in db["decisions"].columns_dict:
        db["decisions"].add_column("options", str)


@migration
def m040_strategic_personalities(db: sqlite_utils.Database) -> None:
    # The strategic personalities paper's published trial table (coop-tui import strategic-personalities): one row
    # per trial with both seats' totals and cooperation, no per-round choices. Each
    # seat's own cooperation is derived once at import (see importers/strategic_personalities).
    db["sp_trials"].create(
        {
            "run_id": str, "line": int, "game": str, "game_name": str, "category": str,
            "game_type": str, "model": str, "opponent": str, "matchup": str,
            "condition": str, "trial": int, "rounds": int, "seat0": str, "seat1": str,
            "payoff0": float, "payoff1": float, "coop_mean": float, "joint": float,
            "modal0": str, "modal1": str, "tokens0": int, "tokens1": int, "cost_usd": float,
            "flag": str, "timestamp": str, "own_coop0": float, "own_coop1": float,
        },
        pk=("run_id", "line"),
        if_not_exists=True,
    )
    db["sp_trials"].create_index(["run_id", "game", "condition", "model"], if_not_exists=True)


@migration
def m070_judge_links(db: sqlite_utils.Database) -> None:
    # A reasoning judge (coop_tui.judging) stores each judgement as a decision of its own
    # run; these rows link it to the decision it judged, and hold its labels one per
    # category so the analysis aggregates in SQL over indexes.
    db.execute(
        """create table if not exists judgements (
               judge_run_id text not null, judged_decision_id integer not null,
               judge_decision_id integer, judged_run_id text not null, judge text not null,
               rubric text not null, rubric_version text not null, rubric_digest text,
               valid integer not null, created_at real,
               primary key (judge_run_id, judged_decision_id))"""
    )
    db.execute("create index if not exists idx_judgements_judged_run"
               " on judgements (judged_run_id, rubric)")
    db.execute("create index if not exists idx_judgements_judged_decision"
               " on judgements (judged_decision_id)")
    db.execute("create index if not exists idx_judgements_judge_decision"
               " on judgements (judge_decision_id)")
    db.execute(
        """create table if not exists judgement_labels (
               judge_decision_id integer not null, category text not null,
               confidence real not null, present integer not null,
               primary key (judge_decision_id, category))"""
    )


@migration
def m040_engine_speed_rating_results(db: sqlite_utils.Database) -> None:
    # Deviation ratings by a hash of their inputs (coop_tui.analysis.ratings_cache), so
    # a report reads them instead of importing scipy and solving the LPs again.
    db.execute(
        "create table if not exists rating_results (key text primary key, ratings text not null)"
    )


@migration
def m071_judge_present_mask(db: sqlite_utils.Database) -> None:
    # The categories a judgement found present, as bits in rubric order (bit i: the i-th
    # category of the judge run's rubric), so the judgements analysis aggregates one row
    # per judgement instead of one per category. Filled for judgements already stored.
    if "present_mask" not in db["judgements"].columns_dict:
        db["judgements"].add_column("present_mask", int)
    runs = db.execute("select distinct j.judge_run_id, r.spec from judgements j"
                      " join runs r on r.id = j.judge_run_id").fetchall()
    for run_id, spec in runs:
        try:
            ids = [c["id"] for c in json.loads(spec or "{}")["rubric"]["categories"]]
        except (ValueError, KeyError, TypeError):
            continue
        bits = " ".join(f"when ? then {1 << i}" for i in range(len(ids)))
        db.execute(
            f"update judgements set present_mask = (select coalesce(sum(case l.category {bits}"
            " else 0 end), 0) from judgement_labels l where l.judge_decision_id ="
            " judgements.judge_decision_id and l.present = 1) where judge_run_id = ?",
            [*ids, run_id],
        )


@migration
def m041_engine_speed_prompt_hash_index(db: sqlite_utils.Database) -> None:
    # Deleting a run deletes the prompt texts no other decision uses: finding whether one
    # still does needs an index (partial: strategy decisions have no prompt).
    db.execute(
        "create index if not exists idx_decisions_prompt_hash on decisions (prompt_hash)"
        " where prompt_hash is not null"
    )


@migration
def m050_grounded_similarity(db: sqlite_utils.Database) -> None:
    # The similarity signals paper's grounded similarity reads a run's benchmark answers and judgements by
    # mechanism (stage inputs, report sections); the report asks every run whether it has
    # any, which must stay one index probe at a million decisions.
    db.execute("create index if not exists matches_run_mechanism on matches (run_id, mechanism)")


@migration
def m080_report_sections_match_moves(db: sqlite_utils.Database) -> None:
    # Per-match move strings for the strategic personalities paper's profile (see coop_tui.summaries.fold_moves),
    # filled for the folded matches an older database holds in one statement.
    summaries.create_moves_table(db.conn)
    summaries.backfill_moves(db.conn)


@migration
def m090_report_covering_indexes(db: sqlite_utils.Database) -> None:
    # ``report`` joins every match's seats for their agents and payoffs (mean payoffs, the
    # cross-play tensors): with this covering index those joins never read a seat row. It
    # keeps the primary key's (match_id, seat) order, so sums add up in the same order.
    db.execute("create index if not exists idx_seats_payoff on seats (match_id, seat, agent, payoff)")


@migration
def m180_section_results(db: sqlite_utils.Database) -> None:
    # Slow report sections (the reasoning fingerprints) stored per run under a hash of
    # what they read (coop_tui.analysis.sections), so a report reads them back; one row
    # per section and run, replaced when the run's content changes.
    db.execute(
        "create table if not exists section_results (section text not null, run_id text not null,"
        " digest text not null, value text not null, created_at real,"
        " primary key (section, run_id))"
    )


@migration
def m150_sp_trials_duplicates_and_paper_models(db: sqlite_utils.Database) -> None:
    # The strategic personalities paper's table holds re-run duplicates (the last copy is the trial the authors
    # counted) and a model outside the paper's 25. Both are kept and marked, so the
    # paper's tables can leave them out; rows imported before are marked the same way.
    cols = db["sp_trials"].columns_dict
    if "superseded_by" not in cols:
        db["sp_trials"].add_column("superseded_by", int)
    if "in_paper" not in cols:
        db["sp_trials"].add_column("in_paper", int)
    marks = ", ".join("?" * len(PAPER_MODELS))
    db.execute(f"update sp_trials set in_paper = (model in ({marks}))", list(PAPER_MODELS))
    same = " and ".join(f"later.{c} is sp_trials.{c}" for c in DUPLICATE_KEY)
    db.execute(f"""update sp_trials set superseded_by = (
                       select max(later.line) from sp_trials later
                       where later.run_id = sp_trials.run_id and later.line > sp_trials.line
                         and {same})""")


@migration
def m130_run_input_fingerprints(db: sqlite_utils.Database) -> None:
    # The SHA-256 of every file a run read besides its sweep (game files, item files,
    # rubrics, templates), JSON {path: hash}: --resume refuses when one has changed.
    if "inputs" not in db["runs"].columns_dict:
        db["runs"].add_column("inputs", str)


@migration
def m130_content_addressed_game_specs(db: sqlite_utils.Database) -> None:
    # A match's game spec (key, params, payoff tensor) is stored once per distinct spec in
    # ``game_specs`` and referenced by hash: a 12-player table's tensor is 300 KB, and it
    # was repeated in every match row. Older rows are moved over here; readers take the
    # referenced spec and fall back to an inline one (GAME_SPEC_SQL).
    db.execute("create table if not exists game_specs (hash text primary key, spec text not null)")
    if "game_spec_hash" not in db["matches"].columns_dict:
        db["matches"].add_column("game_spec_hash", str)
    db.conn.create_function("coop_text_hash", 1, text_hash, deterministic=True)
    db.execute(
        "insert or ignore into game_specs (hash, spec) select distinct coop_text_hash(game_spec),"
        " game_spec from matches where game_spec is not null"
    )
    db.execute(
        "update matches set game_spec_hash = coop_text_hash(game_spec), game_spec = null"
        " where game_spec is not null"
    )


@migration
def m120_failure_reasons_by_cause(db: sqlite_utils.Database) -> None:
    # Failure reasons name the real cause now (a refused connection that litellm reported
    # as HTTP 500 is "connection refused"; DNS, TLS, connect timeouts, dropped connections
    # have their own): derive the stored reasons again from the stored error texts.
    rows = db.conn.execute("select id, error, reason from failures").fetchall()
    changed = [(failure_reason(error), key) for key, error, reason in rows
               if failure_reason(error) != reason]
    db.conn.executemany("update failures set reason = ? where id = ?", changed)


def answer_rule_broken(row: str = "") -> str:
    """SQL that is true for a decision row breaking the answer rule: a decision with answer
    text is either parsed (``parsed`` set) or invalid with its reason (``error`` set).

    ``row`` prefixes the columns (``"d."`` in a join). The store checks every row it writes
    against the same rule (:func:`coop_tui.store.answer_problem`); this is the SQL form, for
    the repair below and for checking a database.
    """
    return (
        f"(coalesce({row}response, '') != '' and ("
        f"({row}valid = 1 and {row}parsed is null)"
        f" or ({row}valid = 0 and coalesce({row}error, '') = '')))"
    )


REPAIRED_UNPARSED = "stored valid without a parse by an earlier coop-tui; re-import the run to parse it"
REPAIRED_NO_REASON = "stored invalid without a reason by an earlier coop-tui"


@migration
def m190_answers_parsed_or_invalid(db: sqlite_utils.Database) -> None:
    # An importer once stored answers it could not parse as valid decisions (CoopEval's
    # Mediation x Public Goods: 648 answers, none parsed), and the report counted them as
    # played. The store now refuses such a row on every write path; rows already stored
    # that way are marked invalid with a reason, and their runs' summaries and stored
    # sections rebuilt.
    runs = [r[0] for r in db.conn.execute(
        f"select distinct m.run_id from decisions d join matches m on m.id = d.match_id"
        f" where {answer_rule_broken('d.')}")]
    db.execute(
        "update decisions set valid = 0, error = coalesce(nullif(error, ''), ?)"
        " where valid = 1 and parsed is null and coalesce(response, '') != ''",
        [REPAIRED_UNPARSED],
    )
    db.execute(
        "update decisions set error = ?"
        " where valid = 0 and coalesce(error, '') = '' and coalesce(response, '') != ''",
        [REPAIRED_NO_REASON],
    )
    for run_id in runs:
        summaries.delete_run(db.conn, run_id)
        summaries.fold_pending(db.conn, run_id)
        db.execute("delete from section_results where run_id = ?", [run_id])


@migration
def m200_run_shards(db: sqlite_utils.Database) -> None:
    # A sweep can be split over processes (`--shard K/N`, one database each) and the
    # slices merged afterwards (`coop-tui merge`). A run records its slice ("K/N"; NULL:
    # the whole sweep), and a merged run what it was made of (run_merges), so it is
    # called done once every slice is in.
    if "shard" not in db["runs"].columns_dict:
        db["runs"].add_column("shard", str)
    # A match's place in its sweep's plan: a merge puts the slices' matches back in the
    # order one process plays them, so the report's sums add up in the same order.
    if "plan_index" not in db["matches"].columns_dict:
        db["matches"].add_column("plan_index", int)
    db.execute(
        "create table if not exists run_merges (run_id text not null, source_run_id text not null,"
        " source_db text, shard text, status text, matches integer, merged_at real,"
        " primary key (run_id, source_run_id))"
    )


@migration
def m210_batch_requests(db: sqlite_utils.Database) -> None:
    # Provider Batch APIs (batch = true on an agent): every batch sent and the ids and
    # content keys of its requests, committed before the run moves on, so a run killed
    # while batches are pending polls the same batches on --resume and sends nothing twice.
    db.execute(
        "create table if not exists batches (tag text primary key, batch_id text,"
        " provider text, agent text, model text, status text not null, requests integer,"
        " created_at real, finished_at real, error text)"
    )
    db.execute(
        "create table if not exists batch_requests (tag text not null references batches(tag),"
        " custom_id text not null, content_key text, attempt integer, result text, error text,"
        " primary key (tag, custom_id))"
    )
    db.execute("create index if not exists idx_batch_requests_custom_id on batch_requests (custom_id)")


@migration
def m220_run_lease_watch_channel(db: sqlite_utils.Database) -> None:
    # A headless sweep publishes its events on a local socket for `coop-tui watch`: the
    # lease row names it (``channel``, e.g. ``unix:/path``) with what a watcher needs to
    # show progress against (``plan``: matches per experiment, the estimated model calls).
    for column in ("channel", "plan"):
        if column not in db["run_leases"].columns_dict:
            db["run_leases"].add_column(column, str)


@migration
def m230_run_sources(db: sqlite_utils.Database) -> None:
    # A run whose prompts are worded by a paper's own code (wording = "source") records
    # each clone it read: {name: {name, path, commit, tested_commit}} as JSON (NULL: none).
    # The report shows it; --resume refuses when a commit changed since the run began.
    if "sources" not in db["runs"].columns_dict:
        db["runs"].add_column("sources", str)


if __name__ == "__main__":
    sys.stdout.write(f"wrote {write_schema_snapshot()}\n")
