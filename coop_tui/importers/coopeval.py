"""``coop-tui import coopeval PATH``: CoopEval results as a coop-tui run.

PATH is one tournament directory, a run directory of tournaments or a study directory
of runs (CoopEval's ``data/main_study``: ``run*/<mechanism>_<game>/``). A run or study
becomes one coop-tui run: one experiment per tournament name, the n-th run giving
replicate n-1 (``matches.replicate``), so the report averages metrics over runs as the
paper does. All six games and every mechanism (both Reputation orders) are read; a
tournament known only by ``config.json`` + ``matchup_payoffs.json`` (and every
Reputation tournament) goes through :mod:`coop_tui.importers.coopeval_payoffs`.

A CoopEval directory holds ``config.json`` (game, mechanism, agents, evaluation),
``records.jsonl`` (one line per match: the moves of every round, plus votes, the chosen
mediator or contract and signatures for the proposal mechanisms), ``matchup_payoffs.json``
(the payoffs behind their metrics), optionally ``game_log.txt`` (every prompt and
response, keyed by trace id) and their published metrics (``replicator_dynamics_fitness
.json``, ``deviation_ratings.json``, ``agent_average_payoff.json``).

How it maps onto our schema:

* one run (kind ``import``) whose id is a hash of ``config.json`` + ``records.jsonl``,
  so importing the same tournament again **replaces** it (never duplicates it); its
  spec keeps the config and the published metrics;
* one experiment, played cross-play (``matchup = 'cross'``), so the report computes
  Mean / Fitness / deviation ratings from the imported matches;
* one match per record line; seats carry CoopEval's agent labels (``<model>(CoT)`` or
  ``<model>(IO)``, the ``#P1`` seat suffix becomes the seat number) and the match payoff
  as CoopEval scores it (δ-weighted over rounds for Repetition);
* one decision per trace id — play, vote, propose (a mediator or contract design is
  stored once, on the first match its author played), sign — with the prompt and
  response from the game log; failed attempts CoopEval re-asked are linked back to the
  decision through the retry prompt, which quotes the rejected answer.

Everything is parsed and checked before the database is opened, then written in one
transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui import summaries
from coop_tui.analysis.coopeval_tables import rate_run
from coop_tui.analysis.sections import store_sections
from coop_tui.errors import fail
from coop_tui.games.base import Game
from coop_tui.importers.coopeval_payoffs import plan_from_payoffs
from coop_tui.importers.coopeval_records import (
    MECHANISMS,
    REPUTATION_ORDER,
    CoopEvalError,
    DecisionBuilder,
    ImportPlan,
    _Match,
    _parse_match,
    _read_json,
    _records,
    _rounds_of,
    action_keys,
    agent_label,
    build_game,
    import_run_row,
    log_entries,
    read_input_bytes,
    records_file,
    round_weights,
)
from coop_tui.store import (
    Store,
    condition_key,
    decision_row,
    delete_judged_links,
    insert_decisions,
    intern_game_specs,
)
from coop_tui.terminal import NAME_WIDTH, terminal_text


def _content_hash(directory: Path) -> str:
    digest = hashlib.sha256()
    records = records_file(directory)
    for name, path in (("config.json", directory / "config.json"),
                       ("records.jsonl", records or directory / "records.jsonl")):
        digest.update(name.encode())
        digest.update(read_input_bytes(path))
    return digest.hexdigest()


def _matchup_check(directory: Path, matches: list[_Match], discount: float) -> dict[str, Any]:
    """Do our per-match payoffs give CoopEval's ``matchup_payoffs.json`` seating means?"""
    path = directory / "matchup_payoffs.json"
    if not path.is_file():
        return {"matchup_payoffs": "absent"}
    data = _read_json(path, "matchup_payoffs.json")
    try:
        published: dict[tuple[str, ...], list[np.ndarray]] = {}
        for prof in data["profile"]:
            seating = tuple(agent_label(p) for p in prof["players"])
            published[seating] = [np.asarray(r, dtype=float) for r in prof["payoffs"]]
    except (KeyError, TypeError) as exc:
        raise CoopEvalError(f"{path}: unexpected layout ({exc})") from None
    pub_disc = float(data.get("discount", discount))
    ours: dict[tuple[str, ...], list[np.ndarray]] = {}
    for m in matches:
        ours.setdefault(tuple(m.agents), []).append(
            np.asarray([[mv.points for mv in r] for r in m.rounds], dtype=float)
        )
    worst = 0.0
    for seating in set(published) | set(ours):
        if seating not in published or seating not in ours:
            return {
                "matchup_payoffs": "disagree",
                "reason": f"seating {list(seating)} only on one side",
            }
        a = [np.asarray(round_weights(len(x), pub_disc)) @ x for x in published[seating]]
        b = [np.asarray(round_weights(len(x), discount)) @ x for x in ours[seating]]
        if len(a) != len(b):
            return {
                "matchup_payoffs": "disagree",
                "reason": f"seating {list(seating)}: repeat counts differ",
            }
        worst = max(worst, float(np.max(np.abs(np.mean(a, axis=0) - np.mean(b, axis=0)))))
    agree = worst <= 1e-9
    return {"matchup_payoffs": "agree" if agree else "disagree", "max_abs_difference": worst}


def plan_import(
    directory: Path, *, run_id: str | None = None, experiment: int = 0, replicate: int = 0
) -> ImportPlan:
    """Read and check a CoopEval directory; build every row without touching a database.

    ``run_id`` / ``experiment`` / ``replicate`` place the tournament inside a study
    import (:func:`plan_path`); alone, a tournament is its own run.
    """
    directory = Path(directory)
    config, mech_type = _read_config(directory)
    records_path = records_file(directory)
    payoffs_only = records_path is None or mech_type in REPUTATION_ORDER
    if payoffs_only:
        return plan_from_payoffs(
            directory, config, run_id=run_id, experiment=experiment, replicate=replicate
        )
    assert records_path is not None
    records = _records(records_path)
    mechanism = MECHANISMS[mech_type]
    mech_kwargs = (config.get("mechanism") or {}).get("kwargs") or {}
    specs = _agent_specs(config)
    game, letters, matches = _parse_matches(config, records, specs)
    discount = _discount(directory, mech_kwargs)
    condition = _condition(mechanism, mech_kwargs, matches, discount)

    content = _content_hash(directory)
    place = _Placement(run_id or f"coopeval-{content[:12]}", experiment, replicate,
                       single=run_id is None)
    log = log_entries(directory / "game_log.txt")
    designs = _designs(directory, mechanism)
    check = _matchup_check(directory, matches, discount)
    now = time.time()
    name = str(config.get("name") or directory.name)
    plan = ImportPlan(run=import_run_row(place.run_id, name, content, directory, config, check, now))
    rows = _MatchRows(plan, place, game, mechanism, condition, specs, discount, now)
    seen_seating: Counter[tuple[str, ...]] = Counter()
    referenced: set[str] = set()
    builder = DecisionBuilder(
        plan, place.tag, game, letters, log, referenced, delegate=mechanism == "mediation"
    )
    proposed: set[str] = set()
    for number, m in enumerate(matches):
        match_id = place.match_id(number)
        sample = seen_seating[tuple(m.agents)]
        seen_seating[tuple(m.agents)] += 1
        rows.add(match_id, m, sample, builder)
        builder.proposals(match_id, m, designs, proposed)
        builder.votes(match_id, m)
        builder.signatures(match_id, m)
    builder.attach_retries()
    plan.decisions = [decision_row(d) for d in builder.decisions]
    _summarise(plan, name, sorted(set(log) - referenced - builder.used), len(builder.used), check)
    return plan


def _read_config(directory: Path) -> tuple[dict[str, Any], str]:
    """A tournament's ``config.json`` and its mechanism type, one the importer supports."""
    if not directory.is_dir():
        raise CoopEvalError(f"{directory}: not a directory; pass a CoopEval run directory")
    config = _read_json(directory / "config.json", "config.json (game, mechanism, agents)")
    if not isinstance(config, dict):
        raise CoopEvalError(f"{directory / 'config.json'}: expected a JSON object")
    mech_cfg = config.get("mechanism") or {}
    mech_type = mech_cfg.get("type")
    if mech_type not in MECHANISMS:
        raise CoopEvalError(
            f"config.json: mechanism.type {mech_type!r} is not supported by the importer; "
            f"supported: {', '.join(MECHANISMS)}"
        )
    return config, mech_type


def _agent_specs(config: dict[str, Any]) -> dict[str, Any]:
    """config.json's agents by CoopEval label (``<model>(CoT)`` / ``<model>(IO)``)."""
    agents_cfg = config.get("agents")
    if not isinstance(agents_cfg, list) or not agents_cfg:
        raise CoopEvalError("config.json: 'agents' must be a non-empty list")
    try:
        return {agent_label(a): a for a in agents_cfg}
    except (KeyError, TypeError):
        raise CoopEvalError("config.json: every agent needs llm.model and type") from None


def _parse_matches(
    config: dict[str, Any], records: list[tuple[int, Any]], specs: dict[str, Any]
) -> tuple[Game, dict[str, int], list[_Match]]:
    """The game (its actions named by the moves played), the action letters and every
    record line as a match, each checked against config.json's agents and the game."""
    action_names = [
        mv["action"]
        for lineno, rec in records
        for rnd in _rounds_of(rec, f"records.jsonl:{lineno}")[0]
        for mv in rnd
        if isinstance(mv, dict) and isinstance(mv.get("action"), str)
    ]
    game = build_game(config, action_names)
    letters = action_keys(config, game)
    matches = [_parse_match(lineno, rec, letters) for lineno, rec in records]
    for m in matches:
        for agent in m.agents:
            if agent not in specs:
                raise CoopEvalError(
                    f"records.jsonl:{m.line}: agent {agent!r} is not among config.json's agents"
                )
        if len(m.agents) != game.n_players:
            raise CoopEvalError(
                f"records.jsonl:{m.line}: {len(m.agents)} players, the game has {game.n_players}"
            )
    return game, letters, matches


def _discount(directory: Path, mech_kwargs: dict[str, Any]) -> float:
    """The round discount: ``matchup_payoffs.json``'s when it names one, else the
    mechanism's (1.0 when neither does)."""
    discount = float(mech_kwargs.get("discount", 1.0))
    mp_path = directory / "matchup_payoffs.json"
    if mp_path.is_file():
        mp = _read_json(mp_path, "matchup_payoffs.json")
        if isinstance(mp, dict) and isinstance(mp.get("discount"), int | float):
            discount = float(mp["discount"])
    return discount


def _condition(
    mechanism: str, mech_kwargs: dict[str, Any], matches: list[_Match], discount: float
) -> dict[str, Any]:
    """The experiment's condition: Repetition's rounds, continuation and history; none
    for the one-shot mechanisms."""
    if mechanism != "repetition":
        return {}
    return {
        "rounds": int(mech_kwargs.get("num_rounds", max(len(m.rounds) for m in matches))),
        "continuation": discount,
        "history": int(mech_kwargs.get("lookup_depth", 5)),
    }


@dataclass(frozen=True)
class _Placement:
    """Where a tournament's rows go: a run of its own (``single``), or one experiment and
    replicate of a study's run; its match ids, match keys and decision tags say which."""

    run_id: str
    experiment: int
    replicate: int
    single: bool

    @property
    def tag(self) -> str:
        return self.run_id if self.single else f"{self.run_id}:{self.experiment}:{self.replicate}"

    def match_id(self, number: int) -> str:
        if self.single:
            return f"{self.run_id}-{number:05d}"
        return f"{self.run_id}-{self.experiment}-{self.replicate}-{number:05d}"

    def match_key(self, line: int) -> str:
        if self.single:
            return f"coopeval:{line}"
        return f"coopeval:{self.experiment}:{self.replicate}:{line}"


class _MatchRows:
    """The ``matches``, ``seats`` and ``rounds`` rows of a tournament's record lines (its
    play decisions go to the :class:`DecisionBuilder`, move by move)."""

    def __init__(
        self, plan: ImportPlan, place: _Placement, game: Game, mechanism: str,
        condition: dict[str, Any], specs: dict[str, Any], discount: float, now: float,
    ) -> None:
        from coop_tui.sweep import game_spec

        self.plan, self.place, self.game, self.mechanism = plan, place, game, mechanism
        self.condition, self.specs, self.discount, self.now = condition, specs, discount, now
        self.spec_json = json.dumps(game_spec(game))
        self.ckey = condition_key(condition)

    def add(self, match_id: str, m: _Match, sample: int, builder: DecisionBuilder) -> None:
        """One record line: its match (payoffs δ-weighted over rounds, as CoopEval scores
        them), its seats and its rounds."""
        weights = round_weights(len(m.rounds), self.discount)
        payoffs = [
            float(sum(w * r[s].points for w, r in zip(weights, m.rounds, strict=True)))
            for s in range(len(m.agents))
        ]
        self.plan.matches.append(self._match_row(match_id, m, sample, payoffs))
        for seat, agent in enumerate(m.agents):
            self.plan.seats.append(
                {
                    "match_id": match_id,
                    "seat": seat,
                    "agent": agent,
                    "agent_kind": "llm",
                    "agent_spec": json.dumps(
                        {"source": "coopeval", **self.specs[agent]}, sort_keys=True
                    ),
                    "payoff": payoffs[seat],
                }
            )
        self._rounds(match_id, m, builder)

    def _match_row(
        self, match_id: str, m: _Match, sample: int, payoffs: list[float]
    ) -> dict[str, Any]:
        info = {"source": "coopeval", "line": m.line, "rounds": len(m.rounds)}
        info.update({k: v for k, v in m.extra.items() if k != "votes"})
        return {
            "id": match_id,
            "run_id": self.place.run_id,
            "match_key": self.place.match_key(m.line),
            "experiment": self.place.experiment,
            "replicate": self.place.replicate,
            "game": self.game.key,
            "game_spec": self.spec_json,
            "mechanism": self.mechanism,
            "condition": json.dumps(self.condition, sort_keys=True),
            "condition_key": self.ckey,
            "similarity": None,
            "matchup": "cross",
            "sample": sample,
            "seed": 0,
            "status": "done",
            "error": None,
            "payoffs": json.dumps(payoffs),
            "welfare": sum(payoffs),
            "info": json.dumps(info, default=str),
            "started_at": self.now,
            "finished_at": self.now,
        }

    def _rounds(self, match_id: str, m: _Match, builder: DecisionBuilder) -> None:
        for t, moves in enumerate(m.rounds, 1):
            # Like our own Mediation: one round info shared by the seats, a flag per seat.
            by_seat = {mv.seat: mv.mediated for mv in moves}
            flags = [by_seat.get(seat) for seat in range(len(m.agents))]
            round_info = (
                json.dumps({"delegated": [bool(f) for f in flags]})
                if any(f is not None for f in flags) else None
            )
            for mv in moves:
                self.plan.rounds.append(
                    {
                        "match_id": match_id,
                        "round": t,
                        "seat": mv.seat,
                        "action": mv.action,
                        "payoff": mv.points,
                        "cooperated": int(bool(self.game.is_cooperative(mv.seat, mv.action))),
                        "info": round_info,
                    }
                )
                builder.play(match_id, t, mv)


def _summarise(
    plan: ImportPlan, name: str, unlinked: list[str], failed_attempts: int,
    check: dict[str, Any],
) -> None:
    """The import's summary, printed and kept in the run's spec (with the first trace ids
    of the game log that no decision took)."""
    plan.summary = {
        "run_id": plan.run["id"],
        "name": name,
        "matches": len(plan.matches),
        "decisions": len(plan.decisions),
        "decisions_with_log": sum(1 for d in plan.decisions if d["prompt"] != "[]"),
        "failed_attempts": failed_attempts,
        "unlinked_log_entries": len(unlinked),
        "matchup_payoffs": check["matchup_payoffs"],
    }
    spec = json.loads(plan.run["spec"])
    spec["import"] = {**plan.summary, "unlinked_trace_ids": unlinked[:100]}
    plan.run["spec"] = json.dumps(spec, default=str)


def _designs(directory: Path, mechanism: str) -> dict[str, dict[str, Any]]:
    """Mediator / contract designs per player label (``<agent>#P<seat>``)."""
    name = {"mediation": "mediator_design.json", "contracting": "contract_design.json"}.get(
        mechanism
    )
    if name is None or not (directory / name).is_file():
        return {}
    data = _read_json(directory / name, name)
    if not isinstance(data, dict):
        raise CoopEvalError(f"{directory / name}: expected an object keyed by player")
    return data


_DELETE = [
    "delete from decisions where match_id in (select id from matches where run_id = ?)",
    "delete from rounds where match_id in (select id from matches where run_id = ?)",
    "delete from seats where match_id in (select id from matches where run_id = ?)",
    "delete from phases where match_id in (select id from matches where run_id = ?)",
    "delete from failures where run_id = ?",
    "delete from matches where run_id = ?",
    "delete from runs where id = ?",
]


def _insert(conn: Any, table: str, rows: list[dict[str, Any]]) -> None:
    if table == "decisions":  # through the store, which holds every answer to its rule
        insert_decisions(conn, rows)
        return
    if not rows:
        return
    cols = list(rows[0])
    sql = f"insert into {table} ({', '.join(cols)}) values ({', '.join('?' for _ in cols)})"
    conn.executemany(sql, [[r[c] for c in cols] for r in rows])


def write_plan(store: Any, plan: ImportPlan) -> bool:
    """Write a plan in one transaction; an earlier import of the same run is replaced.

    Returns True when a previous import was replaced.
    """
    conn = store.db.conn
    run_id = plan.run["id"]
    with conn:
        replaced = conn.execute("select 1 from runs where id = ?", [run_id]).fetchone() is not None
        delete_judged_links(conn, run_id)  # the judged decisions are replaced below
        for sql in _DELETE:
            conn.execute(sql, [run_id])
        _insert(conn, "runs", [plan.run])
        intern_game_specs(conn, plan.matches)  # one stored spec per game, not per match
        _insert(conn, "matches", plan.matches)
        _insert(conn, "seats", plan.seats)
        _insert(conn, "rounds", plan.rounds)
        _insert(conn, "phases", plan.phases)
        _insert(conn, "decisions", plan.decisions)
        # the report reads per-run summaries: drop a replaced import's, add this one's
        summaries.delete_run(conn, run_id)
        summaries.fold_pending(conn, run_id)
    return replaced


def import_coopeval(directory: Path, store: Any) -> dict[str, Any]:
    """Import a CoopEval tournament, run or study into an open store; returns the summary."""
    plan = plan_path(directory)
    replaced = write_plan(store, plan)
    return {**plan.summary, "replaced": replaced}


# ----------------------------------------------------------------------------- runs, studies


def _is_tournament(path: Path) -> bool:
    return (path / "config.json").is_file()


def _tournaments(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.iterdir() if p.is_dir() and _is_tournament(p))


def layout(path: Path) -> tuple[str, list[list[Path]]]:
    """What ``path`` is: ``tournament``, ``run`` (of tournaments) or ``study`` (of runs).

    Returns the kind and the tournament directories grouped by run, runs in name order
    (CoopEval names them ``run1_<date>``, ``run2_<date>`` ...), so the n-th run gives
    replicate n-1 of every tournament it holds.
    """
    path = Path(path)
    if not path.is_dir():
        raise CoopEvalError(f"{path}: not a directory; pass a CoopEval tournament, run or study")
    if _is_tournament(path):
        return "tournament", [[path]]
    own = _tournaments(path)
    if own:
        return "run", [own]
    runs = [p for p in sorted(path.iterdir()) if p.is_dir() and _tournaments(p)]
    if runs:
        return "study", [_tournaments(r) for r in runs]
    raise CoopEvalError(
        f"{path}: no CoopEval tournament here (a tournament directory holds config.json; "
        f"a run holds tournament directories; a study holds runs)"
    )


def _study_hash(groups: list[list[Path]]) -> str:
    digest = hashlib.sha256()
    for run in groups:
        for t in run:
            digest.update(f"{t.parent.name}/{t.name}".encode())
            for name in ("config.json", "matchup_payoffs.json", "matchup_payoffs.json.gz"):
                if (t / name).is_file():
                    digest.update(read_input_bytes(t / name))
            if (t / "records.jsonl").is_file():
                digest.update(str((t / "records.jsonl").stat().st_size).encode())
    return digest.hexdigest()


_ROWS = ("matches", "seats", "rounds", "phases", "decisions")


def _study_plans(groups: list[list[Path]], run_id: str) -> Iterable[tuple[Path, int, int, ImportPlan]]:
    """Each tournament's plan in turn: (directory, experiment, replicate, plan)."""
    names = sorted({t.name for run in groups for t in run})
    experiments = {name: i for i, name in enumerate(names)}
    for replicate, run in enumerate(groups):
        for t in run:
            try:
                plan = plan_import(
                    t, run_id=run_id, experiment=experiments[t.name], replicate=replicate
                )
            except CoopEvalError as exc:
                raise CoopEvalError(f"{t}: {exc}") from None
            yield t, experiments[t.name], replicate, plan


def plan_path(path: Path, *, keep_rows: bool = True) -> ImportPlan:
    """A plan for a tournament, or one run holding every tournament of a run or study.

    The same tournament name in different runs is one experiment with one replicate per
    run (``matches.replicate``), so the report averages its metrics over the runs.
    ``keep_rows=False`` checks every tournament and counts its rows without keeping
    them (a whole study with its game logs does not fit in memory at once):
    :func:`write_path` then writes tournament after tournament.
    """
    kind, groups = layout(Path(path))
    if kind == "tournament":
        return plan_import(groups[0][0])
    content = _study_hash(groups)
    run_id = f"coopeval-{kind}-{content[:12]}"
    experiments = {t.name for run in groups for t in run}
    now = time.time()
    merged = ImportPlan(run={})
    tournaments = []
    counts = Counter()
    for t, experiment, replicate, plan in _study_plans(groups, run_id):
        counts.update({rows: len(getattr(plan, rows)) for rows in _ROWS})
        counts["decisions_with_log"] += sum(1 for d in plan.decisions if d["prompt"] != "[]")
        if keep_rows:
            for rows in _ROWS:
                getattr(merged, rows).extend(getattr(plan, rows))
        spec = json.loads(plan.run["spec"])
        tournaments.append({
            "name": t.name,
            "run": t.parent.name if kind == "study" else Path(path).name,
            "directory": str(t.resolve()),
            "experiment": experiment,
            "replicate": replicate,
            "mechanism": (spec.get("config", {}).get("mechanism") or {}).get("type"),
            "game": (spec.get("config", {}).get("game") or {}).get("type"),
            "roster": spec.get("roster"),
            "published": spec.get("published"),
            "checks": spec.get("checks"),
            "summary": plan.summary,
        })
    root = Path(path)
    merged.run = {
        "id": run_id,
        "name": root.resolve().name,
        "kind": "import",
        "status": "done",
        "seed": 0,
        "sweep_hash": content,
        "spec": json.dumps(
            {"source": "coopeval", "layout": kind, "directory": str(root.resolve()),
             "runs": len(groups), "tournaments": tournaments},
            default=str,
        ),
        "created_at": now,
        "finished_at": now,
        "error": None,
    }
    merged.summary = {
        "run_id": run_id,
        "name": merged.run["name"],
        "layout": kind,
        "runs": len(groups),
        "tournaments": len(tournaments),
        "experiments": len(experiments),
        "matches": counts["matches"],
        "decisions": counts["decisions"],
        "decisions_with_log": counts["decisions_with_log"],
        "failed_attempts": sum(t["summary"].get("failed_attempts", 0) for t in tournaments),
        "matchup_payoffs": "; ".join(
            sorted({str(t["summary"].get("matchup_payoffs")) for t in tournaments})
        ),
    }
    return merged


def write_path(store: Any, path: Path, header: ImportPlan) -> bool:
    """Write a checked run or study (``plan_path(..., keep_rows=False)``) in one transaction,
    one tournament's rows at a time; an earlier import of the same run is replaced."""
    conn = store.db.conn
    run_id = header.run["id"]
    _, groups = layout(Path(path))
    with conn:
        replaced = conn.execute("select 1 from runs where id = ?", [run_id]).fetchone() is not None
        for sql in _DELETE:
            conn.execute(sql, [run_id])
        _insert(conn, "runs", [header.run])
        for _t, _experiment, _replicate, plan in _study_plans(groups, run_id):
            for rows in _ROWS:
                _insert(conn, rows, getattr(plan, rows))
        # as for one tournament: without the summaries every report would aggregate each
        # match live from its decisions (seconds at CoopEval's 16,000 matches)
        summaries.delete_run(conn, run_id)
        summaries.fold_pending(conn, run_id)
    return replaced


def _analyse(store: Any, run_id: str) -> None:
    """What ``--batch`` does when a run finishes: the deviation ratings solved and the slow
    report sections built now, once, so ``report`` and the analysis screen read them."""
    with contextlib.suppress(sqlite3.Error):
        rate_run(store, run_id)
    with contextlib.suppress(sqlite3.Error):
        store_sections(store, run_id)


def import_command(directory: Path, db_path: Path) -> int:
    """CLI entry point: exit 0 on success, 2 (nothing written) on a bad directory."""
    try:
        plan = plan_path(directory, keep_rows=False)
    except CoopEvalError as exc:
        return fail(str(exc))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a layout we did not foresee
        return fail(f"{directory}: unexpected CoopEval layout ({type(exc).__name__}: {exc})")
    store = Store(db_path)
    try:
        study = "layout" in plan.summary
        replaced = write_path(store, directory, plan) if study else write_plan(store, plan)
        _analyse(store, plan.summary["run_id"])
    finally:
        store.close()
    s = plan.summary
    verb = "replaced" if replaced else "imported"
    name = terminal_text(s["name"], markup=False, limit=NAME_WIDTH)  # from the run's config.json
    if "layout" in s:
        print(
            f"{verb} run {s['run_id']} ({name}): a CoopEval {s['layout']} of {s['runs']} "
            f"run(s), {s['tournaments']} tournaments as {s['experiments']} experiments, "
            f"{s['matches']} matches, {s['decisions']} decisions"
        )
        print(f"database: {db_path}")
        return 0
    print(
        f"{verb} run {s['run_id']} ({name}): {s['matches']} matches, {s['decisions']} "
        f"decisions ({s['decisions_with_log']} with prompts from the game log, "
        f"{s['failed_attempts']} failed attempts linked), matchup payoffs vs CoopEval: "
        f"{s['matchup_payoffs']}",
        file=sys.stdout,
    )
    print(f"database: {db_path}")
    return 0
