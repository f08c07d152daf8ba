"""CoopEval tournaments known only by their payoffs (``config.json`` + ``matchup_payoffs.json``).

CoopEval's published study keeps, for every tournament, the payoffs its metrics are
computed from. A directory holding just those two files (or the whole directory minus
the big transcripts) is enough to recompute Mean, Fitness and deviation ratings, and it
is the only form in which Reputation tournaments are read:

* a matchup mechanism (none, Repetition, Mediation, Contracting) lists every ordered
  seating of agents with the per-round payoffs of each repeat: one match per repeat,
  its payoff the δ-weighted sum over rounds, exactly as CoopEval scores a match;
* Reputation lists, for every agent *in every seat* (CoopEval's population of 12 or
  18 players), the points it earned in each round against whoever it was drawn with
  (read from ``records.jsonl`` when the payoff file is absent: the same points, in
  play order).
  There is no matchup to rebuild, so each such player becomes one ``matchup =
  'reputation'`` match with a single seat whose payoff is its δ-weighted average; the
  report's Mean for Reputation is the mean over an agent's seats, as in the paper.

Either file may be gzip-compressed (``matchup_payoffs.json.gz``).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui.games.base import Game
from coop_tui.games.user import MAX_PAYOFF
from coop_tui.importers.coopeval_records import (
    MECHANISMS,
    REPUTATION_ORDER,
    CoopEvalError,
    DecisionBuilder,
    ImportPlan,
    Move,
    action_keys,
    agent_label,
    build_game,
    finite_payoff,
    import_run_row,
    log_entries,
    member_letter,
    read_input_bytes,
    records_file,
    round_weights,
    split_player,
)
from coop_tui.inputs import InputTooLarge, read_bounded
from coop_tui.store import condition_key, decision_row

PAYOFFS = "matchup_payoffs.json"


def payoffs_file(directory: Path) -> Path | None:
    """The tournament's payoff file, plain or gzip-compressed; None when absent."""
    for name in (PAYOFFS, PAYOFFS + ".gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def read_payoffs(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bounded(path))  # gzip or plain, inflated size bounded
    except InputTooLarge as exc:
        raise CoopEvalError(str(exc)) from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CoopEvalError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("profile"), list):
        raise CoopEvalError(f"{path}: expected an object with a 'profile' list")
    return data


def reputation_from_records(path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """A Reputation ``records.jsonl`` as the per-player points CoopEval's payoffs keep.

    The records list every game of the tournament in play order (nested by round); each
    move names its player ``<agent>#P<seat>``. Collecting every player's points in that
    order gives exactly the per-round points ``matchup_payoffs.json`` would hold.
    """
    specs = {agent_label(a): a for a in config.get("agents") or []}
    discount = float(((config.get("mechanism") or {}).get("kwargs") or {}).get("discount", 1.0))
    points: dict[str, list[float]] = {}

    def walk(node: Any, where: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, where)
        elif isinstance(node, dict) and "player" in node:
            if "points" not in node:
                raise CoopEvalError(f"{where}: a move needs numeric points")
            value = finite_payoff(node["points"], where)
            split_player(node["player"], where)  # checks the '<agent>#P<seat>' form
            points.setdefault(node["player"], []).append(value)
        else:
            raise CoopEvalError(f"{where}: expected games of moves")

    try:
        lines = read_bounded(path).decode("utf-8").splitlines()  # plain or .gz, bounded
    except InputTooLarge as exc:
        raise CoopEvalError(str(exc)) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise CoopEvalError(f"{path}: cannot be read ({exc})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            walk(json.loads(line), f"{path}:{lineno}")
        except json.JSONDecodeError as exc:
            raise CoopEvalError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    if not points:
        raise CoopEvalError(f"{path}: no moves recorded")
    profile = []
    for player, pts in points.items():
        agent, seat = split_player(player, str(path))
        if agent not in specs:
            raise CoopEvalError(f"{path}: agent {agent!r} is not among config.json's agents")
        profile.append({"player": {**specs[agent], "player_id": seat + 1}, "points": pts})
    return {"discount": discount, "profile": profile}


def _label(spec: Any, where: str) -> str:
    try:
        return agent_label(spec)
    except (KeyError, TypeError):
        raise CoopEvalError(f"{where}: a player needs llm.model and type") from None


def plan_from_payoffs(
    directory: Path,
    config: dict[str, Any],
    *,
    run_id: str | None = None,
    experiment: int = 0,
    replicate: int = 0,
) -> ImportPlan:
    """Every match row of a payoffs-only tournament, checked before anything is written."""
    mech_cfg = config.get("mechanism") or {}
    mech_type = mech_cfg.get("type")
    path, data = _payoffs_source(directory, config, mech_type)
    mechanism = MECHANISMS[mech_type]
    kwargs = mech_cfg.get("kwargs") or {}
    game = build_game(config, [])
    discount = float(data.get("discount", kwargs.get("discount", 1.0)) or 1.0)
    content = hashlib.sha256(
        read_input_bytes(directory / "config.json") + read_input_bytes(path)).hexdigest()
    single = run_id is None
    run_id = run_id or f"coopeval-{content[:12]}"
    prefix = run_id if single else f"{run_id}-{experiment}-{replicate}"
    base_key = "coopeval" if single else f"coopeval:{experiment}:{replicate}"
    now = time.time()
    condition = _condition(mechanism, mech_type, kwargs, discount)
    base = _match_base(run_id, experiment, replicate, game, mechanism, condition, now)
    name = str(config.get("name") or directory.name)
    plan = ImportPlan(
        run=import_run_row(
            run_id, name, content, directory, config, {"matchup_payoffs": "only source"}, now
        )
    )
    specs = {agent_label(a): a for a in config.get("agents") or []}
    if mech_type in REPUTATION_ORDER:
        players = _reputation_rows(plan, data, path, base, (prefix, base_key), discount, specs)
        tag = run_id if single else f"{run_id}:{experiment}:{replicate}"
        _reputation_decisions(plan, directory, config, game, players, tag)
    else:
        _matchup_rows(plan, data, path, base, (prefix, base_key), discount, game.n_players, specs)
    plan.summary = {
        "run_id": run_id,
        "name": name,
        "matches": len(plan.matches),
        "decisions": len(plan.decisions),
        "decisions_with_log": sum(1 for d in plan.decisions if d["prompt"] != "[]"),
        "failed_attempts": 0,
        "unlinked_log_entries": 0,
        "matchup_payoffs": "only source",
    }
    return plan


def _payoffs_source(
    directory: Path, config: dict[str, Any], mech_type: Any
) -> tuple[Path, dict[str, Any]]:
    """Where the tournament's payoffs come from, read: its payoffs file, else (for a
    Reputation tournament) its records; a tournament with neither cannot be imported."""
    path = payoffs_file(directory)
    if path is None and mech_type in REPUTATION_ORDER and records_file(directory) is not None:
        path = records_file(directory)
        assert path is not None
        return path, reputation_from_records(path, config)
    if path is None:
        raise CoopEvalError(
            f"{directory}: no records.jsonl and no {PAYOFFS}; a CoopEval tournament needs "
            f"one of them"
        )
    return path, read_payoffs(path)


def _condition(
    mechanism: str, mech_type: Any, kwargs: dict[str, Any], discount: float
) -> dict[str, Any]:
    """The experiment's condition: rounds, continuation and history for the repeated
    mechanisms (15 rounds unless the config says), and Reputation's order."""
    condition: dict[str, Any] = {}
    if mechanism in ("repetition", "reputation"):
        condition = {
            "rounds": int(kwargs.get("num_rounds", 15)),
            "continuation": discount,
            "history": int(kwargs.get("lookup_depth", 5)),
        }
    if mech_type in REPUTATION_ORDER:
        condition["order"] = REPUTATION_ORDER[mech_type]
    return condition


def _match_base(
    run_id: str, experiment: int, replicate: int, game: Game, mechanism: str,
    condition: dict[str, Any], now: float,
) -> dict[str, Any]:
    """The fields every match row of the tournament shares."""
    from coop_tui.sweep import game_spec

    return {
        "run_id": run_id,
        "experiment": experiment,
        "replicate": replicate,
        "game": game.key,
        "game_spec": json.dumps(game_spec(game)),
        "mechanism": mechanism,
        "condition": json.dumps(condition, sort_keys=True),
        "condition_key": condition_key(condition),
        "similarity": None,
        "seed": 0,
        "status": "done",
        "error": None,
        "started_at": now,
        "finished_at": now,
    }


def _seat_row(match_id: str, seat: int, agent: str, payoff: float, specs: dict[str, Any]) -> dict:
    return {
        "match_id": match_id,
        "seat": seat,
        "agent": agent,
        "agent_kind": "llm",
        "agent_spec": json.dumps({"source": "coopeval", **specs.get(agent, {})}, sort_keys=True),
        "payoff": payoff,
    }


def _matchup_rows(
    plan: ImportPlan,
    data: dict[str, Any],
    path: Path,
    base: dict[str, Any],
    ids: tuple[str, str],
    discount: float,
    n_players: int,
    specs: dict[str, Any],
) -> None:
    prefix, key = ids
    number = 0
    for k, prof in enumerate(data["profile"]):
        where = f"{path}: profile {k}"
        players = prof.get("players") if isinstance(prof, dict) else None
        repeats = prof.get("payoffs") if isinstance(prof, dict) else None
        if not isinstance(players, list) or len(players) != n_players:
            raise CoopEvalError(f"{where}: needs 'players', one per seat ({n_players})")
        if not isinstance(repeats, list) or not repeats:
            raise CoopEvalError(f"{where}: needs 'payoffs', a list of repeats")
        agents = [_label(p, where) for p in players]
        for sample, rounds in enumerate(repeats):
            try:
                table = np.asarray(rounds, dtype=float)
            except (TypeError, ValueError):
                raise CoopEvalError(f"{where}: payoffs must be rounds of numbers") from None
            if table.ndim != 2 or table.shape[1] != n_players:
                raise CoopEvalError(f"{where}: each round needs {n_players} payoffs")
            if not np.isfinite(table).all() or (np.abs(table) > MAX_PAYOFF).any():
                bad = next(v for v in table.ravel().tolist()
                           if not math.isfinite(v) or abs(v) > MAX_PAYOFF)
                finite_payoff(bad, where)  # raises, naming the value
            payoffs = [float(x) for x in np.asarray(round_weights(len(table), discount)) @ table]
            match_id = f"{prefix}-{number:05d}"
            number += 1
            plan.matches.append({
                **base,
                "id": match_id,
                "match_key": f"{key}:profile:{k}:{sample}",
                "matchup": "cross",
                "sample": sample,
                "payoffs": json.dumps(payoffs),
                "welfare": sum(payoffs),
                "info": json.dumps({"source": "coopeval", "profile": k, "rounds": len(table)}),
            })
            for seat, agent in enumerate(agents):
                plan.seats.append(_seat_row(match_id, seat, agent, payoffs[seat], specs))


def _reputation_rows(
    plan: ImportPlan,
    data: dict[str, Any],
    path: Path,
    base: dict[str, Any],
    ids: tuple[str, str],
    discount: float,
    specs: dict[str, Any],
) -> dict[str, str]:
    """One single-seat match per Reputation player; returns player label -> match id."""
    prefix, key = ids
    players: dict[str, str] = {}
    for k, entry in enumerate(data["profile"]):
        where = f"{path}: profile {k}"
        if not isinstance(entry, dict) or "player" not in entry or "points" not in entry:
            raise CoopEvalError(f"{where}: a Reputation entry needs 'player' and 'points'")
        agent = _label(entry["player"], where)
        try:
            points = np.asarray(entry["points"], dtype=float)
        except (TypeError, ValueError):
            raise CoopEvalError(f"{where}: points must be numbers, one per round") from None
        if points.ndim != 1 or not len(points):
            raise CoopEvalError(f"{where}: points must be a non-empty list, one per round")
        if not np.isfinite(points).all() or (np.abs(points) > MAX_PAYOFF).any():
            for value in points.tolist():
                finite_payoff(value, where)  # raises at the first bad value, naming it
        payoff = float(np.asarray(round_weights(len(points), discount)) @ points)
        player_id = entry["player"].get("player_id")
        match_id = f"{prefix}-{k:05d}"
        plan.matches.append({
            **base,
            "id": match_id,
            "match_key": f"{key}:player:{k}",
            "matchup": "reputation",
            "sample": 0,
            "payoffs": json.dumps([payoff]),
            "welfare": payoff,
            "info": json.dumps({
                "source": "coopeval",
                "player_id": player_id,
                "points": points.tolist(),
                "note": "one Reputation player: its points per round against drawn co-players",
            }),
        })
        plan.seats.append(_seat_row(match_id, 0, agent, payoff, specs))
        if isinstance(player_id, int):
            players[f"{agent}#P{player_id}"] = match_id
    return players


def _reputation_games(path: Path) -> list[list[dict[str, Any]]]:
    """Every game of a Reputation ``records.jsonl`` in play order.

    CoopEval writes the whole tournament as one line: a list of games, each the list of
    its players' moves (``player``, ``action``, ``points``, ``trace_id``); a round is
    one game per player of each seat, so the n-th game a player appears in is its round n.
    """
    games: list[list[dict[str, Any]]] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, list) and node and all(
            isinstance(m, dict) and "player" in m for m in node
        ):
            games.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item, where)
        else:
            raise CoopEvalError(f"{where}: expected games of moves")

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CoopEvalError(f"{path}: cannot be read ({exc})") from None
    for lineno, line in enumerate(lines, 1):
        if line.strip():
            try:
                walk(json.loads(line), f"{path}:{lineno}")
            except json.JSONDecodeError as exc:
                raise CoopEvalError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    return games


def _reputation_decisions(
    plan: ImportPlan,
    directory: Path,
    config: dict[str, Any],
    game: Any,
    players: dict[str, str],
    tag: str,
) -> None:
    """Every Reputation move as a play decision and a round of its player's match.

    Read from ``records.jsonl`` (the moves, in play order) and ``game_log.txt`` (each
    move's prompt and answer, by trace id), when present: the decision keeps the prompt,
    the answer and its parsed distribution, as for every other mechanism. A player's
    match has one seat, so the decision's seat is 0; the game position (which decides
    what cooperating means in an asymmetric game) and the co-players are in the round's
    info.
    """
    path = directory / "records.jsonl"
    if not path.is_file() or not players:
        return
    letters = action_keys(config, game)
    log = log_entries(directory / "game_log.txt")
    builder = DecisionBuilder(plan, tag, game, letters, log, set())
    played: dict[str, int] = {}
    for number, raw in enumerate(_reputation_games(path), 1):
        where = f"{path}: game {number}"
        moves = []
        for m in raw:
            if not {"player", "action", "points"} <= m.keys():
                raise CoopEvalError(f"{where}: a move needs player, action and points")
            agent, seat = split_player(m["player"], where)
            letter = member_letter(m["action"], where)
            if letter not in letters:
                raise CoopEvalError(f"{where}: action {m['action']!r} is not an action of the game")
            if not isinstance(m["points"], int | float):
                raise CoopEvalError(f"{where}: points {m['points']!r} is not a number")
            moves.append(Move(seat, agent, letters[letter], float(m["points"]),
                               m.get("trace_id"), m.get("response"), m.get("mediated")))
        for mv in moves:
            player = f"{mv.agent}#P{mv.seat + 1}"
            match_id = players.get(player)
            if match_id is None:
                raise CoopEvalError(f"{where}: player {player!r} has no payoffs in this tournament")
            played[player] = round_ = played.get(player, 0) + 1
            plan.rounds.append({
                "match_id": match_id,
                "round": round_,
                "seat": 0,
                "action": mv.action,
                "payoff": mv.points,
                "cooperated": int(bool(game.is_cooperative(mv.seat, mv.action))),
                "info": json.dumps({
                    "position": mv.seat + 1,
                    "co_players": [f"{o.agent}#P{o.seat + 1}" for o in moves if o is not mv],
                    "game": number,
                }),
            })
            builder.play(match_id, round_, mv, stored_seat=0)
    builder.attach_retries()
    plan.decisions.extend(decision_row(d) for d in builder.decisions)
