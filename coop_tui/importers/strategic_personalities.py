"""``coop-tui import strategic-personalities FILE``: the strategic personalities paper's published trial table.

FILE is ``data/strategic_personalities.csv.gz`` of FelipeMAffonso/strategic-personalities
(gzip or plain CSV): one row per trial, 23 columns, no usable header — its first line is
a data row that pandas turned into column names (duplicates got ``.1``, empty cells
``Unnamed: k``); we read it back as the data row it was. Columns in order: game id, game
name, category, game type, model (seat 0), opponent, matchup type, condition, trial,
rounds, seat 0 id, seat 1 id, seat 0 total, seat 1 total, mean cooperation of both
seats, joint cooperation, seat 0 modal choice, seat 1 modal choice, two token counts,
cost in USD, a flag, timestamp.

Each seat's **own** cooperation is not in the table; for the symmetric 2 × 2 games it
follows from the totals: over T rounds, seat 0's total minus seat 1's is
T·(S − Tₑ)·(c₀ − c₁) (S the sucker's payoff, Tₑ the temptation, as the public code's
matrices have them — coop-tui's games of the same id), and c₀ + c₁ is twice the pair's
mean. Every derived pair is checked against the joint cooperation by recomputing seat 0's
total; a row that does not add up keeps no own cooperation (counted in the summary).

The published file holds three shapes besides trials, each handled the way the authors'
numbers were made and reported in the import summary (never silently):

* **fragments**: the tail of a trial row that another row was written over — the
  collection's processes appended to the table at the same time, and a row written over a
  longer one leaves that row's last cells (its cost, flag and timestamp) on a line of
  their own, the trial's fields empty. Skipped; their line numbers and cells are listed in
  the summary and the run's spec. The trial each one ended is not in the file
  (:data:`~coop_tui.analysis.paper_tables.LOST_ROWS_RULE`).
* **re-run duplicates**: the same game / model / opponent / design / condition / trial
  twice. The last copy is the trial (the authors' collection overwrote a trial's file on a
  re-run); earlier copies are stored with ``superseded_by`` = the line of the last one,
  so nothing is lost and the paper's tables leave them out.
* **models outside the paper's 25** (:data:`PAPER_MODELS`): stored with ``in_paper = 0``;
  the paper's tables leave them out.

The file is streamed twice: a first pass checks every row (bad input: one message naming
the line and column, exit 2, nothing written), a second writes the rows in one
transaction. The run (kind ``import``) has an id derived from the file's bytes, so
importing the same file again replaces it. Per-round choices and reasoning are not in
the table: reciprocity, endgame and fingerprints cannot be computed from it.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import math
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coop_tui.analysis.paper_tables import TRIAL_NUMBERS, TRIAL_RULE
from coop_tui.errors import fail
from coop_tui.inputs import InputTooLarge, open_bounded, open_regular

# the sp_trials table marks these (a migration backfills them), so the migrations define them
from coop_tui.migrations import DUPLICATE_KEY, PAPER_MODELS
from coop_tui.store import Store
from coop_tui.terminal import NAME_WIDTH, terminal_text

__all__ = ["COLUMNS", "PAPER_MODELS", "SymmetricGame", "TrialTableError", "import_command", "import_file",
           "read_rows"]

COLUMNS = (
    "game", "game_name", "category", "game_type", "model", "opponent", "matchup",
    "condition", "trial", "rounds", "seat0", "seat1", "payoff0", "payoff1", "coop_mean",
    "joint", "modal0", "modal1", "tokens0", "tokens1", "cost_usd", "flag", "timestamp",
)
_TITLES = {
    "trial": "trial number", "rounds": "rounds", "payoff0": "seat 0 total payoff",
    "payoff1": "seat 1 total payoff", "coop_mean": "mean cooperation",
    "joint": "joint cooperation", "tokens0": "token count", "tokens1": "token count",
    "cost_usd": "cost in USD",
}
_INTS = ("trial", "rounds", "tokens0", "tokens1")
_FLOATS = ("payoff0", "payoff1", "coop_mean", "joint", "cost_usd")
_REQUIRED = ("game", "model", "trial", "rounds", "payoff0", "payoff1")
_TRIAL_FIELDS = ("model", "opponent", "matchup", "trial", "rounds", "payoff0", "payoff1")
"""A row with all of these empty is a fragment (the tail of a row another row was written
over), not a trial."""
GAME_KEYS = {"chicken": "chicken_sp"}
"""Strategic personalities game ids whose coop-tui key differs (the rest are the same)."""
SYMMETRIC_2X2 = ("pd_canonical", "pd_harsh", "pd_medium", "pd_mild", "stag_hunt_standard",
                 "stag_hunt_risky", "chicken", "chicken_high_stakes", "repeated_trust")
"""Games whose own cooperation per seat can be derived from the two totals."""


class TrialTableError(ValueError):
    """The file is not the strategic personalities paper's trial table; the message names the line and the field."""


@dataclass(frozen=True)
class SymmetricGame:
    """Seat 0's payoffs of a symmetric 2 × 2 game, cooperative action first."""

    reward: float
    sucker: float
    temptation: float
    punishment: float

    def own_cooperation(self, rounds: int, total0: float, total1: float, mean: float,
                        joint: float) -> tuple[float, float] | None:
        """(c0, c1) from the totals and the pair's mean, or None if they do not add up."""
        spread = self.sucker - self.temptation
        if not rounds or spread == 0:
            return None
        diff = (total0 - total1) / (rounds * spread)
        c0, c1 = mean + diff / 2, mean - diff / 2
        tol = 1e-6
        if not (-tol <= c0 <= 1 + tol and -tol <= c1 <= 1 + tol):
            return None
        c0, c1 = min(max(c0, 0.0), 1.0), min(max(c1, 0.0), 1.0)
        expected = rounds * (self.reward * joint + self.sucker * (c0 - joint)
                             + self.temptation * (c1 - joint)
                             + self.punishment * (1 - c0 - c1 + joint))
        if abs(expected - total0) > 1e-6 * max(1.0, abs(total0)) + 1e-6:
            return None
        return c0, c1


def symmetric_games() -> dict[str, SymmetricGame]:
    """The as-run matrices of the strategic personalities paper's symmetric 2 × 2 games, from our game registry."""
    from coop_tui.games import load_game

    out = {}
    for game_id in SYMMETRIC_2X2:
        p = load_game(GAME_KEYS.get(game_id, game_id)).payoffs
        out[game_id] = SymmetricGame(float(p[0][0][0]), float(p[0][1][0]),
                                     float(p[1][0][0]), float(p[1][1][0]))
    return out


# ----------------------------------------------------------------------------- reading

_DEDUP = re.compile(r"^(?P<base>.*)\.(?P<k>\d+)$")


def _decode_header(names: list[str]) -> list[str]:
    """Undo pandas' renaming of the first data row: ``Unnamed: k`` was an empty cell,
    ``x.1`` a second ``x`` in the same row."""
    out: list[str] = []
    for name in names:
        if name.startswith("Unnamed: "):
            out.append("")
            continue
        m = _DEDUP.match(name)
        out.append(m["base"] if m and m["base"] in out else name)
    return out


def _open_text(path: Path) -> io.TextIOBase:
    """The table as text, inflated when gzip, bounded (:func:`coop_tui.inputs.open_bounded`)."""
    return io.TextIOWrapper(open_bounded(path), encoding="utf-8", newline="")


SQLITE_INT_LIMIT = 2**63
"""SQLite stores integers in 64 bits: a larger count from the table would crash the
insert (OverflowError), so it is refused with the line and column."""


def _number(value: str, line: int, column: str, path: Path, *, whole: bool) -> float | int | None:
    if value == "":
        return None
    try:
        x = float(value)
    except ValueError:
        raise TrialTableError(
            f"{path}: line {line}: column {COLUMNS.index(column) + 1} ({_TITLES[column]}) is "
            f"{value!r}, not a number; is this the strategic personalities paper's data/strategic_personalities.csv.gz?"
        ) from None
    if whole:
        if not math.isfinite(x) or abs(x) >= SQLITE_INT_LIMIT:
            raise TrialTableError(
                f"{path}: line {line}: column {COLUMNS.index(column) + 1} ({_TITLES[column]}) is "
                f"{value[:40]!r}, not a whole number within ±2^63 (what a database column "
                "holds); give the count the table means")
        if x != int(x):
            raise TrialTableError(f"{path}: line {line}: column {COLUMNS.index(column) + 1} "
                                  f"({_TITLES[column]}) is {value!r}, not a whole number")
        return int(x)
    return x


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the table as dicts keyed by :data:`COLUMNS`, checking every field."""
    try:
        fh = _open_text(path)
    except FileNotFoundError:
        raise TrialTableError(f"{path}: no such file; give the path of "
                              "data/strategic_personalities.csv.gz") from None
    with fh:
        reader = csv.reader(fh)
        try:
            for line, raw in enumerate(reader, 1):
                if not raw or raw == [""]:
                    continue
                if len(raw) <= len(COLUMNS) and _is_fragment(raw):
                    yield {"fragment": True, "line": line,
                           "cells": [v.strip() for v in raw if v.strip()]}
                    continue
                if len(raw) != len(COLUMNS):
                    raise TrialTableError(
                        f"{path}: line {line}: {len(raw)} columns, expected {len(COLUMNS)}; "
                        "this is not the strategic personalities paper's trial table (data/strategic_personalities.csv.gz)")
                if line == 1:
                    try:
                        float(raw[COLUMNS.index("trial")])
                    except ValueError:
                        continue  # a real header line (not the published file's): skip it
                    raw = _decode_header(raw)
                row: dict[str, Any] = dict(zip(COLUMNS, (v.strip() for v in raw), strict=True))
                for col, value in row.items():  # an empty cell is a missing value
                    if value == "" and col not in _INTS and col not in _FLOATS:
                        row[col] = None
                for col in _INTS:
                    row[col] = _number(row[col], line, col, path, whole=True)
                for col in _FLOATS:
                    row[col] = _number(row[col], line, col, path, whole=False)
                for col in _REQUIRED:
                    if row[col] in ("", None):
                        raise TrialTableError(f"{path}: line {line}: column "
                                              f"{COLUMNS.index(col) + 1} ({col}) is empty")
                for col in ("coop_mean", "joint"):
                    if row[col] is not None and not 0 <= row[col] <= 1:
                        raise TrialTableError(f"{path}: line {line}: column "
                                              f"{COLUMNS.index(col) + 1} ({_TITLES[col]}) is "
                                              f"{row[col]}, outside 0..1")
                if row["rounds"] < 1:
                    raise TrialTableError(f"{path}: line {line}: rounds is {row['rounds']}; "
                                          "a trial has at least one round")
                row["line"] = line
                yield row
        except InputTooLarge as exc:
            raise TrialTableError(str(exc)) from None
        except (csv.Error, UnicodeDecodeError, EOFError, OSError) as exc:
            raise TrialTableError(f"{path}: cannot be read as a (gzipped) CSV table: {exc}") from None


def _is_fragment(raw: list[str]) -> bool:
    """The tail of a row another row was written over: every trial field empty (at most a
    few leading cells, the lost row's last ones such as its cost, flag and timestamp, hold
    anything)."""
    cells = dict(zip(COLUMNS, (v.strip() for v in raw), strict=False))
    return all(not cells.get(col) for col in _TRIAL_FIELDS)


@dataclass
class Summary:
    rows: int = 0
    derived: int = 0
    inconsistent: int = 0
    games: Counter = field(default_factory=Counter)
    models: set = field(default_factory=set)
    conditions: Counter = field(default_factory=Counter)
    fragments: list = field(default_factory=list)
    """``{"line": n, "cells": [...]}`` of each skipped fragment row."""
    last_copy: dict = field(default_factory=dict)
    """:data:`DUPLICATE_KEY` values → line of the last copy."""
    earlier_copies: dict = field(default_factory=dict)
    """:data:`DUPLICATE_KEY` values → lines of the copies before the last."""
    superseded_by_model: Counter = field(default_factory=Counter)
    outside_paper: Counter = field(default_factory=Counter)
    test_trials: Counter = field(default_factory=Counter)
    """Trial number → rows, for the test trials outside the code's numbering."""

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "own_cooperation_derived": self.derived,
                "own_cooperation_inconsistent": self.inconsistent,
                "games": len(self.games), "models": len(self.models),
                "conditions": dict(self.conditions),
                "fragments_skipped": self.fragments,
                "duplicates_superseded": {
                    "rows": len(self.superseded), "by_model": dict(self.superseded_by_model),
                    "rule": "the last copy of a game / model / opponent / design / condition"
                            " / trial counts; earlier copies are kept with superseded_by"},
                "models_outside_paper": dict(self.outside_paper),
                "test_trials": {"rows": sum(self.test_trials.values()),
                                "trial_numbers": sorted(self.test_trials),
                                "rule": TRIAL_RULE}}

    def note(self, row: dict[str, Any]) -> None:
        """Count one trial row (first pass): duplicates and models outside the paper."""
        key = tuple(row[c] for c in DUPLICATE_KEY)
        earlier = self.last_copy.get(key)
        if earlier is not None:  # constant work per row: the mapping is built once, at the end
            self.superseded_by_model[row["model"]] += 1
            self.earlier_copies.setdefault(key, []).append(earlier)
        self.last_copy[key] = row["line"]
        if row["model"] not in PAPER_MODELS:
            self.outside_paper[row["model"]] += 1
        low, high = TRIAL_NUMBERS
        if not low <= row["trial"] <= high:
            self.test_trials[row["trial"]] += 1

    @functools.cached_property
    def superseded(self) -> dict[int, int]:
        """line of an earlier copy → line of the last copy (read once the file is checked)."""
        return {line: self.last_copy[key]
                for key, lines in self.earlier_copies.items() for line in lines}

    def lines(self) -> list[str]:
        """What the import set aside, for the command's output."""
        out = []
        if self.fragments:
            out.append(f"skipped {len(self.fragments)} fragment rows (tails of trial rows "
                       "another row was written over: no model, trial or totals; those trials "
                       "are not in the file), lines "
                       + ", ".join(str(f["line"]) for f in self.fragments))
        if self.superseded:
            out.append(f"{len(self.superseded)} re-run duplicates superseded by their last "
                       "copy (kept, left out of the paper's tables): "
                       + ", ".join(f"{_shown(m)} {n}" for m, n in sorted(self.superseded_by_model.items())))
        if self.test_trials:
            out.append(f"{sum(self.test_trials.values())} test trials (trial numbers "
                       + ", ".join(str(t) for t in sorted(self.test_trials))
                       + ") kept, left out of the paper's tables: " + TRIAL_RULE)
        if self.outside_paper:
            out.append("models outside the paper's 25 (kept, left out of the paper's tables): "
                       + ", ".join(f"{_shown(m)} ({n} rows)" for m, n in sorted(self.outside_paper.items())))
        return out


def _shown(model: str) -> str:
    """A model name from the table as the summary prints it: escapes shown, cut to a width
    (the database keeps it whole)."""
    return terminal_text(model, markup=False, limit=NAME_WIDTH)


def _with_own(row: dict[str, Any], games: dict[str, SymmetricGame], summary: Summary) -> None:
    row["own_coop0"] = row["own_coop1"] = None
    game = games.get(row["game"])
    if game is None or row["coop_mean"] is None or row["joint"] is None:
        return
    own = game.own_cooperation(row["rounds"], row["payoff0"], row["payoff1"],
                               row["coop_mean"], row["joint"])
    if own is None:
        summary.inconsistent += 1
        return
    row["own_coop0"], row["own_coop1"] = own
    summary.derived += 1


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open_regular(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_file(path: Path) -> Summary:
    """First pass: every row checked, nothing kept but counts."""
    games = symmetric_games()
    summary = Summary()
    for row in read_rows(path):
        if row.get("fragment"):
            summary.fragments.append({"line": row["line"], "cells": row["cells"]})
            continue
        summary.rows += 1
        summary.note(row)
        summary.games[row["game"]] += 1
        summary.models.add(row["model"])
        summary.conditions[row["condition"]] += 1
        _with_own(row, games, summary)
    if not summary.rows:
        raise TrialTableError(f"{path}: no trials in the file")
    return summary


def import_file(store: Any, path: Path, summary: Summary | None = None) -> tuple[str, bool, Summary]:
    """Check then write ``path`` as a run; returns (run id, replaced?, summary)."""
    summary = summary or check_file(path)
    digest = _file_hash(path)
    run_id = f"sp-{digest[:12]}"
    replaced = store.run(run_id) is not None
    if replaced:
        store.delete_run(run_id)
    store.create_run(
        run_id, "strategic-personalities", kind="import", seed=0, sweep_hash=digest,
        spec={"source": "strategic-personalities", "file": path.name, "sha256": digest,
              **summary.as_dict()},
    )
    games = symmetric_games()
    cols = ["run_id", "line", *COLUMNS, "own_coop0", "own_coop1", "superseded_by", "in_paper"]
    sql = (f"insert into sp_trials ({', '.join(cols)}) "
           f"values ({', '.join('?' * len(cols))})")
    scratch = Summary()
    batch: list[list[Any]] = []
    with store.transaction():
        for row in read_rows(path):
            if row.get("fragment"):
                continue
            _with_own(row, games, scratch)
            row["run_id"] = run_id
            row["superseded_by"] = summary.superseded.get(row["line"])
            row["in_paper"] = int(row["model"] in PAPER_MODELS)
            batch.append([row[c] for c in cols])
            if len(batch) >= 5000:
                store.db.conn.executemany(sql, batch)
                batch.clear()
        if batch:
            store.db.conn.executemany(sql, batch)
        store.db.execute("update runs set status = 'done', finished_at = created_at "
                         "where id = ?", [run_id])
    return run_id, replaced, summary


def import_command(path: Path, db_path: Path) -> int:
    """CLI entry point: exit 0 on success, 2 (nothing written) on a bad file."""
    if not path.is_file():
        return fail(f"{path}: no such file; give the path of data/strategic_personalities.csv.gz")
    try:
        summary = check_file(path)
    except TrialTableError as exc:
        return fail(str(exc))
    store = Store(db_path)
    try:
        run_id, replaced, summary = import_file(store, path, summary)
    finally:
        store.close()
    verb = "replaced" if replaced else "imported"
    print(f"{verb} run {run_id} (strategic-personalities): {summary.rows} trials of "
          f"{len(summary.models)} models in {len(summary.games)} games; own cooperation "
          f"derived for {summary.derived} two-player trials"
          + (f", {summary.inconsistent} whose totals do not add up left without"
             if summary.inconsistent else ""), file=sys.stdout)
    for line in summary.lines():
        print(line)
    print(f"database: {db_path}")
    return 0
