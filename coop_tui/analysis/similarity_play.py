"""Outcomes of one-shot play under similarity signals: expected and realised payoffs,
welfare recovered, the similarity signals paper's Table 2 and cooperation over the figure each seat heard.

A one-shot match (mechanism ``similarity`` or ``none``) has one play decision per seat
with its stated mixed strategy. The *realised* payoff comes from the actions sampled from
those strategies; the *expected* payoff is what the stated strategies give on average,
sum over profiles of prod_j p_j(a_j) u_i(a) — the quantity the similarity signals paper's Table 2 and its
matchup figures report ("payoffs ... in expectation"). Sampling noise makes the two
differ match by match; they agree on average.

Welfare recovered (similarity signals, RQ6; CoopEval's normalised welfare) places the mean payoff
per player between everyone defecting (0: the all-defect profile, Prisoners' Nash
outcome, 1 point) and everyone cooperating (1: 2 points): in Prisoners
``(payoff - 1) / (2 - 1)``, so Table 2's 1.272 is 27% recovered.

Scale: one GROUP BY per condition over the matches' play decisions, keyed by the seats'
agents; the expected payoff of each match is computed in SQL (one term per action profile:
its payoff times the seats' stated probabilities), so Python sees one row per seating.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from coop_tui.analysis.theory import b_star
from coop_tui.games import game_from_spec
from coop_tui.games.transforms import TRANSFORM_PARAMS
from coop_tui.store import GAME_SPEC_MIN, GAME_SPEC_OF_GROUP, Store, condition_key

ONE_SHOT = ("similarity", "none")
"""Mechanisms whose matches are one round of the base game with one play decision per seat."""

METHOD_ORDER = ("abstract", "exogenous", "exogenous (runs)", "endogenous (both)", "endogenous (decisions)",
                "endogenous (explanations)")
"""Table 2's column order (the similarity signals paper: Exo., Endo. both / decision / explanation)."""

VIEW_NAMES = {"decision": "decisions", "decisions": "decisions", "explanation": "explanations",
              "explanations": "explanations", "both": "both"}


def source_of(condition: dict[str, Any]) -> str | None:
    """Where a condition's similarity figures came from: ``similarity_source`` (set when a
    sweep stage computed them) or ``similarity_label`` (given with the scores)."""
    for key in ("similarity_source", "similarity_label"):
        value = condition.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def benchmark_and_method(condition: dict[str, Any]) -> tuple[str, str] | None:
    """(benchmark, method) of a condition for Table 2 and the curves.

    ``exogenous:<bench>`` -> (bench, "exogenous"); ``exogenous:<bench>:runs`` -> (bench,
    "exogenous (runs)"); ``endogenous:<bench>:<view>`` ->
    (bench, "endogenous (<view>)"); scores without a label are ("unlabelled", "given
    scores"); an abstract X is (its benchmark in the benchmark prompt modes, else "no
    domain"; "abstract"); the ``base`` control has none.
    """
    source = source_of(condition)
    if source is not None:
        parts = source.split(":")
        if parts[0] == "exogenous" and len(parts) >= 2:
            # the run-to-run diagonal is a variant of ours, kept apart from the paper's
            return parts[1], "exogenous (runs)" if parts[2:] == ["runs"] else "exogenous"
        if parts[0] == "endogenous" and len(parts) >= 2:
            view = parts[2] if len(parts) > 2 else "both"
            return parts[1], f"endogenous ({VIEW_NAMES.get(view, view)})"
        return source, "given"
    if condition.get("prompt") == "base":
        return None
    if condition.get("similarity_scores") is not None:
        return "unlabelled", "given scores"
    if condition.get("similarity") is None and condition.get("seat_similarity") is None:
        return None
    bench = condition.get("benchmark") if str(condition.get("prompt", "")).startswith("benchmark") else None
    return bench or "no domain", "abstract"


@dataclass
class _Moments:
    n: float = 0.0
    total: float = 0.0
    squares: float = 0.0

    def add(self, value: float, count: float = 1.0, squares: float | None = None) -> None:
        """One value ``count`` times; or, with ``squares``, a sum of ``count`` values and
        the sum of their squares."""
        self.n += count
        self.total += value * count if squares is None else value
        self.squares += value * value * count if squares is None else squares

    def pool(self, other: _Moments) -> None:
        """Add another sample's counts and sums to these."""
        self.n += other.n
        self.total += other.total
        self.squares += other.squares

    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def se(self) -> float | None:
        if self.n < 2:
            return None
        mean = self.total / self.n
        var = max(self.squares / self.n - mean * mean, 0.0) * self.n / (self.n - 1)
        return (var / self.n) ** 0.5


@dataclass
class _Condition:
    experiment: int
    condition_key: str
    condition: dict[str, Any]
    game: Any
    n_players: int
    mechanism: str = "similarity"
    matches: int = 0
    expected: dict[str, _Moments] = field(default_factory=lambda: defaultdict(_Moments))
    realised: dict[str, _Moments] = field(default_factory=lambda: defaultdict(_Moments))
    expected_all: _Moments = field(default_factory=_Moments)
    realised_all: _Moments = field(default_factory=_Moments)
    pairs: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    coop_by_told: dict[tuple[str, float], _Moments] = field(default_factory=lambda: defaultdict(_Moments))


ANY_ONE_SHOT_SQL = (f"select 1 from matches where run_id = ? and mechanism in"
                   f" ({','.join('?' for _ in ONE_SHOT)}) limit 1")
"""Whether the run has a one-shot match at all: a few seeks in ``matches_run_mechanism``
(no status test, which would let the planner walk every match of the run by status)."""


def _conditions(store: Store, run_id: str) -> list[tuple[int, str, str, str, int, str]]:
    if store.db.execute(ANY_ONE_SHOT_SQL, [run_id, *ONE_SHOT]).fetchone() is None:
        return []
    marks = ",".join("?" for _ in ONE_SHOT)
    return store.db.execute(
        f"""select experiment, condition_key, cond, {GAME_SPEC_OF_GROUP}, n, mech from (
            select experiment, condition_key, min(condition) as cond, {GAME_SPEC_MIN},
                   count(*) as n, min(mechanism) as mech, min(rowid) as first
            from matches where run_id = ? and status = 'done' and mechanism in ({marks})
            group by experiment, condition_key) order by experiment, first""",
        [run_id, *ONE_SHOT],
    ).fetchall()


_CACHE: dict[str, Any] = {}


def one_shot_outcomes(store: Store, run_id: str) -> list[_Condition] | None:
    """Every one-shot condition of the run with its aggregates; None when there is none.

    The three report sections built from this share one computation per report (the
    last result is kept, keyed by the run and its finished one-shot matches).
    """
    conditions = _conditions(store, run_id)
    if not conditions:
        return None
    key = json.dumps([str(getattr(store, "path", id(store))), run_id, conditions])
    if _CACHE.get("key") == key:
        return _CACHE["value"]
    out = _merge_sources(
        [c for c in (_aggregate(store, run_id, *row) for row in conditions) if c is not None]
    )
    _CACHE.update(key=key, value=out or None)
    return out or None


def _merge_sources(conds: list[_Condition]) -> list[_Condition]:
    """Pool the conditions of one computed source that differ only in the scores handed to
    each seating (a stage may give every seating just its own pair of the matrix): they
    are one experimental condition, "play under the scores from <source>"."""
    merged: dict[tuple[int, str, str], _Condition] = {}
    out: list[_Condition] = []
    for c in conds:
        if not c.condition.get("similarity_source") or "similarity_scores" not in c.condition:
            out.append(c)
            continue
        shared = {k: v for k, v in c.condition.items() if k != "similarity_scores"}
        key = (c.experiment, c.game.key, condition_key(shared))
        into = merged.get(key)
        if into is None:
            c.condition, c.condition_key = shared, key[2]
            merged[key] = c
            out.append(c)
            continue
        into.matches += c.matches
        for mine, theirs in ((into.expected, c.expected), (into.realised, c.realised),
                             (into.coop_by_told, c.coop_by_told)):
            for k, m in theirs.items():
                mine[k].add(m.total, m.n, m.squares)
        for mine_m, theirs_m in ((into.expected_all, c.expected_all), (into.realised_all, c.realised_all)):
            mine_m.add(theirs_m.total, theirs_m.n, theirs_m.squares)
        into.pairs.update(c.pairs)  # one seating per stored condition: no overlap
    return out


MAX_PROFILES = 1024
"""Games with more action profiles than this get no expected payoffs (the SQL sum has one
term per profile)."""


def _aggregate(store: Store, run_id: str, experiment: int, ckey: str, cjson: str,
               gspec: str | None, n_matches: int, mechanism: str) -> _Condition | None:
    """One condition's sums per seating of agents, all computed in SQL: each match's
    expected payoffs are the payoff table's terms times the seats' stated probabilities,
    so Python sees one row per seating however many matches were played."""

    if not gspec:
        return None
    spec = json.loads(gspec)
    if spec.get("protocol"):  # move-by-move games have no payoff table to take expectations over
        return None
    game = game_from_spec(spec)
    n, counts = game.n_players, game.action_counts
    profiles = list(itertools.product(*(range(c) for c in counts)))
    if len(profiles) > MAX_PROFILES:
        return None
    cond = _Condition(experiment, ckey, json.loads(cjson or "{}"), game, n, mechanism)
    joins = " ".join(
        f"join seats s{k} on s{k}.match_id = m.id and s{k}.seat = {k} "
        f"join decisions d{k} on d{k}.match_id = m.id and d{k}.round = 1 and d{k}.seat = {k} "
        f"and d{k}.phase = 'play' and json_array_length(d{k}.distribution) = {counts[k]}"
        for k in range(n)
    )
    columns = ", ".join(
        [f"s{k}.agent as g{k}, s{k}.payoff as r{k}, d{k}.coop_prob as c{k}" for k in range(n)]
        + [f"json_extract(d{k}.distribution, '$[{a}]') as p{k}_{a}"
           for k in range(n) for a in range(counts[k])]
    )

    def expected(i: int) -> str:
        terms = [
            f"{float(game.payoffs[profile][i])!r} * " + " * ".join(
                f"p{k}_{a}" for k, a in enumerate(profile))
            for profile in profiles if float(game.payoffs[profile][i]) != 0.0
        ]
        return "(" + (" + ".join(terms) or "0.0") + ")"

    agents = ", ".join(f"g{k}" for k in range(n))
    sums = ", ".join(
        f"sum(r{k}), sum(r{k} * r{k}), sum({expected(k)}), sum({expected(k)} * {expected(k)}), "
        f"sum(c{k}), sum(c{k} * c{k}), count(c{k})"
        for k in range(n)
    )
    rows = store.db.execute(
        f"""with x as materialized (
                select {columns} from matches m {joins}
                where m.run_id = ? and m.experiment = ? and m.condition_key = ?
                  and m.status = 'done')
            select {agents}, count(*), {sums} from x group by {agents}""",
        [run_id, experiment, ckey],
    ).fetchall()
    for row in rows:
        seats, count = tuple(row[:n]), row[n]
        told = _told(cond.condition, seats)
        pair: dict[str, Any] = {"n": count, "expected": [], "realised": [], "coop": [], "told": told}
        cond.matches += count
        for k in range(n):
            r_sum, r_sq, e_sum, e_sq, c_sum, c_sq, c_n = row[n + 1 + 7 * k: n + 8 + 7 * k]
            for into in (cond.realised[seats[k]], cond.realised_all):
                into.add(float(r_sum or 0.0), count, float(r_sq or 0.0))
            for into in (cond.expected[seats[k]], cond.expected_all):
                into.add(float(e_sum), count, float(e_sq))
            pair["realised"].append(float(r_sum or 0.0) / count)
            pair["expected"].append(float(e_sum) / count)
            pair["coop"].append(float(c_sum) / c_n if c_n else None)
            if c_n and told[k] is not None:
                cond.coop_by_told[(seats[k], told[k])].add(float(c_sum), c_n, float(c_sq))
        if not game.has_cooperation:
            pair["coop"] = None
        cond.pairs[seats] = pair
    return cond if cond.matches else None


def _told(condition: dict[str, Any], seats: tuple[str, ...]) -> list[float | None]:
    """Per seat, the figure it heard (the mean over co-players in n-player games);
    None without a similarity sentence."""
    if condition.get("prompt") == "base" or not any(
        condition.get(k) is not None for k in ("similarity", "seat_similarity", "similarity_scores")
    ):
        return [None] * len(seats)
    from coop_tui.mechanisms.similarity import SimilarityParams, told_matrix

    try:
        params = SimilarityParams.model_validate({
            k: condition[k] for k in ("similarity", "seat_similarity", "similarity_scores",
                                      "framing", "prompt") if condition.get(k) is not None
        })
        m = told_matrix(params, len(seats), seats)
    except ValueError:
        return [None] * len(seats)
    out: list[float | None] = []
    for i, row in enumerate(m):
        values = [float(x) for j, x in enumerate(row) if j != i and x is not None]
        out.append(sum(values) / len(values) if values else None)
    return out


# ----------------------------------------------------------------------- results
def welfare_scale(game: Any) -> dict[str, float] | None:
    """Per-player payoffs at the two ends of the welfare scale, or None when the game has
    no cooperative / defect action."""
    if not game.has_cooperation or any(d is None for d in game.defect):
        return None
    n = game.n_players
    low = sum(game.payoff(game.all_defect_profile())) / n
    high = sum(game.payoff(game.all_cooperate_profile())) / n
    if abs(high - low) < 1e-12:
        return None
    return {"all_defect": low, "all_cooperate": high}


def recovered(game: Any, per_player: float | None) -> float | None:
    if per_player is None:
        return None
    return game.normalised_welfare(per_player * game.n_players)


def _label(c: _Condition) -> str:
    """A condition's row name, with whatever changes the game's payoffs (the +3 and +7
    cooperation bonus, a payoff scale): without it, the bonus variants of one X read as
    the same row."""
    return _setting(c) + "".join(f" · {p} {_signed(p, c.condition[p])}" for p in TRANSFORM_PARAMS
                                 if c.condition.get(p) not in (None, NEUTRAL.get(p)))


NEUTRAL = {"scale": 1, "bonus": 0}
"""A transform's value that leaves the game as it is: not worth a word in a row name."""


def _signed(param: str, value: Any) -> str:
    """A bonus as the paper writes it (+3); other values as they are."""
    return f"+{value:g}" if param == "bonus" and isinstance(value, int | float) and value > 0 \
        else _shown(value)


def _setting(c: _Condition) -> str:
    bm = benchmark_and_method(c.condition)
    if bm is None:
        return "no mechanism" if c.mechanism == "none" else "no similarity sentence"
    bench, method = bm
    if method == "abstract":
        x = c.condition.get("similarity")
        shown = f"X={x:g}" if isinstance(x, int | float) else "per-seat X"
        framing = c.condition.get("framing")
        extra = f" {framing}" if framing and framing != "similar" else ""
        return f"{shown}{extra}" + ("" if bench == "no domain" else f" ({bench})")
    return f"{bench} · {method}"


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def expected_section(conds: list[_Condition]) -> dict[str, Any]:
    """``report --json`` key ``expected``."""
    out = []
    for c in conds:
        # the seats of one match are not independent samples: one match has no SE
        several = c.matches > 1
        out.append({
            "experiment": c.experiment,
            "condition_key": c.condition_key,
            "label": _label(c),
            "game": c.game.key,
            "matches": c.matches,
            "per_player": {
                "expected": _round(c.expected_all.mean()),
                "expected_se": _round(c.expected_all.se()) if several else None,
                "realised": _round(c.realised_all.mean()),
                "realised_se": _round(c.realised_all.se()) if several else None,
            },
            "agents": {
                agent: {
                    "n": int(c.expected[agent].n),
                    "expected": _round(c.expected[agent].mean()),
                    "expected_se": _round(c.expected[agent].se()),
                    "realised": _round(c.realised[agent].mean()),
                    "realised_se": _round(c.realised[agent].se()),
                }
                for agent in sorted(c.expected)
            },
            "matchups": [
                {"seats": list(seats), "n": p["n"],
                 "expected": [_round(x) for x in p["expected"]],
                 "realised": [_round(x) for x in p["realised"]],
                 "coop": None if p["coop"] is None else [_round(x) for x in p["coop"]],
                 "told": p["told"]}
                for seats, p in sorted(c.pairs.items())
            ],
        })
    return {
        "definition": "expected: sum over action profiles of the stated probabilities' product "
        "times the payoff (one-shot matches); realised: the payoff of the sampled actions",
        "conditions": out,
    }


def welfare_section(conds: list[_Condition]) -> dict[str, Any] | None:
    """``report --json`` key ``welfare``: welfare recovered per condition."""
    rows = []
    for c in conds:
        scale = welfare_scale(c.game)
        if scale is None:
            continue
        e, r = c.expected_all.mean(), c.realised_all.mean()
        rows.append({
            "experiment": c.experiment,
            "condition_key": c.condition_key,
            "label": _label(c),
            "similarity": c.condition.get("similarity"),
            "source": source_of(c.condition),
            "game": c.game.key,
            "matches": c.matches,
            **scale,
            "expected_per_player": _round(e),
            "realised_per_player": _round(r),
            "recovered_expected": _round(recovered(c.game, e)),
            "recovered_realised": _round(recovered(c.game, r)),
        })
    if not rows:
        return None
    return {
        "definition": "welfare recovered = (mean payoff per player - all-defect payoff) / "
        "(all-cooperate payoff - all-defect payoff): 0 when everyone defects (Prisoners' Nash "
        "outcome), 1 when everyone cooperates (similarity signals, RQ6)",
        "conditions": rows,
    }


_Cells = dict[tuple[str, str, str], dict[str, Any]]
"""(game variant, benchmark, method) -> pooled expected and realised payoffs."""
_Curves = dict[str, dict[str, dict[float, _Moments]]]
"""benchmark -> series -> the figure told -> cooperation."""


def similarity_table(conds: list[_Condition]) -> dict[str, Any] | None:
    """``report --json`` key ``similarity_table``: the similarity signals paper's Table 2 (mean payoff per
    benchmark x method, over every seat of every match) and cooperation over the figure
    each seat heard, per benchmark.

    Each game variant (a game with its parameters, scale and cooperation bonus) is its
    own table and its own curves, with its own b*: plain, +3 and +7 Prisoner's Dilemma
    are three games, never pooled.
    """
    cells, curves, series_games = _pool(conds)
    if set(curves) == {"no domain"} and not cells:
        curves.clear()  # a plain X sweep: the experiment's own curve already shows it
    if not cells and not curves:
        return None
    stars = {
        bench: {series: _b_star(series_games[bench][series]) for series in sorted(by_series)}
        for bench, by_series in sorted(curves.items())
    }
    return {
        "definition": "mean payoff per player over every seat of every match whose scores came "
        "from that benchmark and method (expected from the stated strategies, realised from "
        "the sampled actions); rows benchmark, columns method, as the similarity signals paper's Table 2; one "
        "table and one curve per game variant (parameters, scale, cooperation bonus)",
        "tables": _tables(cells),
        "curves": {
            bench: {
                series: [{"told": told, "coop_rate": _round(m.mean()), "se": _round(m.se()),
                          "n": int(m.n)} for told, m in sorted(points.items())]
                for series, points in sorted(by_series.items())
            }
            for bench, by_series in sorted(curves.items())
        },
        # one b* per benchmark where all its curves share it (the line a figure draws),
        # else None; every curve's own b* beside it
        "b_star": {bench: _shared(by_series.values()) for bench, by_series in stars.items()},
        "b_star_by_series": stars,
    }


def _pool(conds: list[_Condition]) -> tuple[_Cells, _Curves, dict[str, dict[str, Any]]]:
    """The conditions of scored benchmarks pooled: payoffs per (game variant, benchmark,
    method), except the abstract method's; cooperation per benchmark, series and figure
    told; and each series' game (for its b*)."""
    cells: _Cells = {}
    curves: _Curves = defaultdict(lambda: defaultdict(dict))
    labels = variant_labels([c for c in conds if benchmark_and_method(c.condition)])
    several_games = len(labels) > 1
    series_games: dict[str, dict[str, Any]] = defaultdict(dict)
    for c in conds:
        bm = benchmark_and_method(c.condition)
        if bm is None:
            continue
        bench, method = bm
        game_label = labels[variant(c)]
        suffix = "".join(f" · {part}" for part in _series_parts(c, method, several_games, game_label))
        if method != "abstract":
            cell = cells.setdefault((game_label, bench, method), {
                "game": c.game, "expected": _Moments(), "realised": _Moments(), "matches": 0})
            cell["expected"].pool(c.expected_all)
            cell["realised"].pool(c.realised_all)
            cell["matches"] += c.matches
        for (agent, told), m in c.coop_by_told.items():
            series = agent + suffix
            series_games[bench].setdefault(series, c.game)
            curves[bench][series].setdefault(told, _Moments()).pool(m)
    return cells, curves, series_games


def _tables(cells: _Cells) -> dict[str, Any]:
    """One table per game variant: a row per benchmark, a column per method (in the
    paper's order), each cell's expected and realised payoffs with their SEs and what
    they recover on the game's welfare scale."""
    table: dict[str, Any] = {}
    for game_key in sorted({g for g, _, _ in cells}):
        methods = sorted({m for g, _, m in cells if g == game_key}, key=_method_rank)
        benches = sorted({b for g, b, _ in cells if g == game_key})
        rows: dict[str, dict[str, Any]] = {}
        for bench in benches:
            rows[bench] = {}
            for method in methods:
                cell = cells.get((game_key, bench, method))
                if cell is None:
                    continue
                e, r = cell["expected"].mean(), cell["realised"].mean()
                rows[bench][method] = {
                    "expected": _round(e), "expected_se": _round(cell["expected"].se()),
                    "realised": _round(r), "realised_se": _round(cell["realised"].se()),
                    "recovered_expected": _round(recovered(cell["game"], e)),
                    "recovered_realised": _round(recovered(cell["game"], r)),
                    "matches": cell["matches"],
                }
        table[game_key] = {"methods": methods, "benchmarks": benches, "rows": rows}
    return table


def variant(c: _Condition) -> tuple[str, str]:
    """A condition's game variant: the game key and what changes its payoffs (the game's
    parameters, then the payoff scale and cooperation bonus the sweep applied)."""
    changes = dict(c.game.params)
    changes.update({p: c.condition[p] for p in TRANSFORM_PARAMS if c.condition.get(p) is not None})
    return c.game.key, json.dumps(changes, sort_keys=True, default=str)


def variant_labels(conds: list[_Condition]) -> dict[tuple[str, str], str]:
    """A readable name per game variant: the game key, plus what sets it apart from the
    other variants of the same game (``prisoners``, ``prisoners (bonus 3)``)."""
    by_key: dict[str, set[str]] = defaultdict(set)
    for c in conds:
        key, changes = variant(c)
        by_key[key].add(changes)
    labels: dict[tuple[str, str], str] = {}
    for key, variants in by_key.items():
        parsed = {v: json.loads(v) for v in variants}
        names = {name for changes in parsed.values() for name in changes}
        differ = sorted(n for n in names if len({json.dumps(p.get(n)) for p in parsed.values()}) > 1)
        for v, changes in parsed.items():
            parts = [f"{n} {_shown(changes[n])}" for n in differ if n in changes]
            labels[(key, v)] = f"{key} ({', '.join(parts)})" if parts else key
    return labels


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def _shared(values: Any) -> float | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _b_star(game: Any) -> float | None:
    """The similarity above which full cooperation is a b-similarity equilibrium (seed
    000, Section 3) in one symmetric game variant."""
    if not game.has_cooperation or not game.symmetric:
        return None
    try:
        value = b_star(game)
    except Exception:  # noqa: BLE001 - theory is a bonus here, never a reason to fail
        return None
    return None if value is None else round(float(value), 6)


def _series_parts(c: _Condition, method: str, several_games: bool, game_label: str) -> list[str]:
    """What tells a condition's curve apart from others of the same benchmark: the
    method, a framing other than "similar", the prompt mode, the game variant."""
    parts = [] if method == "abstract" else [method]
    framing = c.condition.get("framing")
    if framing and framing != "similar":
        parts.append(str(framing))
    prompt = c.condition.get("prompt")
    if prompt and prompt not in ("percentage_updated", "benchmark"):
        parts.append(str(prompt))
    if several_games:
        parts.append(game_label)
    return parts


def _method_rank(method: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER), method)
