"""Population metrics of a stored cross-play tournament, for the report and the TUI.

An experiment is a tournament when its matches were played cross-play (``matchup =
'cross'``: every ordered seating of the roster) — CoopEval imports are stored that way.
Matches of one experiment can differ in condition (a list-valued mechanism parameter,
a payoff transform) or even in game; pooling those would average different games, so
the metrics are computed per (game, condition): ``tournaments`` maps each condition key
to its metrics, and when the experiment has a single condition its metrics are also
given at the top level (``population``, ``matchup_matrix``, ``normalised_welfare``). The
matrix is not called ``matchup``: the report already uses that key for the matchup mode.

The aggregation is one SQL GROUP BY per condition over the seats table (one self-join
per seat, indexed by the seats primary key), so Python only sees one row per seating of
agents however many matches were played; :mod:`coop_tui.analysis.population` does the
rest on an agent-sized tensor.
"""

from __future__ import annotations

import json
from typing import Any

from coop_tui import read_cache
from coop_tui.analysis.population import MatchupTensor, population_metrics, tensor_from_sums
from coop_tui.analysis.ratings_cache import deviation_ratings
from coop_tui.games import game_from_spec
from coop_tui.store import Store, game_spec_sql

STEPS = 1000
LEARNING_RATE = 0.1
LP_METHOD = "highs-ds"

SETTINGS = {
    "mean": "expected payoff against the uniform population",
    "fitness": f"replicator dynamics, exponential weights, uniform start, {STEPS} steps, "
    f"learning rate {LEARNING_RATE}; payoff against the final population",
    "deviation_rating": "strictest coarse correlated equilibrium (Marris et al. 2025), "
    "constraints frozen only when tight in every optimum (HiGHS)",
}


def tournament_metrics(store: Store, run_id: str, experiment: int) -> dict[str, Any] | None:
    """Metrics of a cross-play experiment; None when the experiment is not one."""
    db = store.db
    groups = db.execute(
        """select game, condition_key, count(*), min(rowid)
           from matches
           where run_id = ? and experiment = ? and matchup = 'cross' and status = 'done'
           group by game, condition_key order by min(rowid)""",
        [run_id, experiment],
    ).fetchall()
    if not groups:
        return None
    several_games = len({g[0] for g in groups}) > 1
    tournaments: dict[str, dict[str, Any]] = {}
    for game, ckey, n_matches, first in groups:
        # a sweep's condition names its game already; an imported one may not
        named = f"game={game}" in ckey.split()
        key = f"game={game} {ckey}" if several_games and not named else ckey
        # one match's spec: reading the JSON of every match would dominate the query
        gspec = db.execute(f"select {game_spec_sql()} from matches where rowid = ?", [first]).fetchone()[0]
        spec = json.loads(gspec) if gspec else None
        tensor = _tensor(store, run_id, experiment, game, ckey)
        tournaments[key] = {
            "game": game,
            "condition_key": ckey,
            "matches": n_matches,
            **_metrics(tensor, spec, db),
        }
    out: dict[str, Any] = {"tournaments": tournaments, "population_settings": SETTINGS}
    if len(tournaments) == 1:
        only = next(iter(tournaments.values()))
        for field in (
            "population",
            "matchup_matrix",
            "normalised_welfare",
            "normalised_welfare_final",
        ):
            out[field] = only.get(field)
        published = _published(store, run_id)
        if published:
            out["published"] = published
    return out


# ----------------------------------------------------------------------------- SQL


def _tensor(store: Store, run_id: str, experiment: int, game: str, ckey: str) -> MatchupTensor:
    return cross_play_tensor(store.db, run_id, experiment, game, ckey)


def cross_play_tensor(
    db: Any, run_id: str, experiment: int, game: str, ckey: str, replicate: int | None = None
) -> MatchupTensor:
    """Per-seating payoff sums and counts, one GROUP BY over the seats of every match
    (of one replicate when ``replicate`` is given; all of them pooled otherwise)."""
    where = (
        "m.run_id = ? and m.experiment = ? and m.matchup = 'cross' and m.status = 'done' "
        "and m.game = ? and m.condition_key = ?"
    )
    args: list[Any] = [run_id, experiment, game, ckey]
    if replicate is not None:
        where += " and m.replicate = ?"
        args.append(replicate)
    conn = getattr(db, "conn", db)
    n_seats = read_cache.rows(  # every match of one game has the same seats: ask one of them
        conn,
        f"select max(seat) + 1 from seats where match_id = (select m.id from matches m where {where} limit 1)",
        args,
    )[0][0]
    seats = range(int(n_seats or 0))
    # the covering index (store migration m090): no seat row is read, one index probe each
    joins = " ".join(
        f"join seats s{k} indexed by idx_seats_payoff on s{k}.match_id = m.id and s{k}.seat = {k}"
        for k in seats
    )
    agents = ", ".join(f"s{k}.agent" for k in seats)
    totals = ", ".join(f"coalesce(sum(s{k}.payoff), 0), count(s{k}.payoff)" for k in seats)
    rows = read_cache.rows(  # the tournament metrics and CoopEval's tables both ask
        conn, f"select {agents}, {totals} from matches m {joins} where {where} group by {agents}", args
    )
    n = len(seats)
    sums = {
        tuple(row[:n]): ([row[n + 2 * k] for k in seats], [row[n + 2 * k + 1] for k in seats])
        for row in rows
    }
    return tensor_from_sums(sums)


def run_spec(store: Any, run_id: str) -> dict[str, Any]:
    """A run's stored spec as a dict (empty when it has none or it does not parse): the
    report's sections read their settings from it."""
    run = store.run(run_id) or {}
    try:
        spec = json.loads(run.get("spec") or "{}")
    except (TypeError, ValueError):
        return {}
    return spec if isinstance(spec, dict) else {}


def _published(store: Store, run_id: str) -> dict[str, Any] | None:
    """The metrics an imported run's source published, for side-by-side comparison."""
    run = store.run(run_id)
    if not run or run.get("kind") != "import" or not run.get("spec"):
        return None
    return json.loads(run["spec"]).get("published") or None


# ----------------------------------------------------------------------------- metrics


def _metrics(tensor: MatchupTensor, game_spec: dict[str, Any] | None, db: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "agents": list(tensor.agents),
        "n_players": tensor.n_players,
        "matchup_matrix": tensor.matrix() if tensor.n_players == 2 else None,
    }
    if not tensor.complete:
        out.update(
            population=None,
            normalised_welfare=None,
            normalised_welfare_final=None,
            missing=[list(m) for m in tensor.missing()],
            note="some matchups have no finished match; population metrics need them all",
        )
        return out
    ratings = None
    if db is not None:  # stored by their inputs: no LP (and no scipy) when solved before

        ratings = deviation_ratings(db, tensor.payoffs, method=LP_METHOD, freeze="every_optimum")
    population = population_metrics(
        tensor, steps=STEPS, lr=LEARNING_RATE, method=LP_METHOD, ratings=ratings
    )
    game = _game(game_spec)
    scale = tensor.n_players

    def norm(per_player: float) -> float | None:
        """Per-player payoff on the welfare scale: all defect = 0, all cooperate = 1."""
        return None if game is None else game.normalised_welfare(per_player * scale)

    for values in population.values():
        values["mean_normalised"] = norm(values["mean_payoff"])
        values["fitness_normalised"] = norm(values["fitness"])
    out["population"] = population
    rows = population.values()
    out["normalised_welfare"] = norm(sum(v["mean_payoff"] for v in rows) / len(rows))
    out["normalised_welfare_final"] = norm(sum(v["final_share"] * v["fitness"] for v in rows))
    return out


def _game(spec: dict[str, Any] | None):
    """The stored game, to place payoffs between all-defect (0) and all-cooperate (1)."""
    if not spec:
        return None
    try:
        game = game_from_spec(spec)
    except (KeyError, TypeError, ValueError):
        return None
    return game if game.has_cooperation else None
