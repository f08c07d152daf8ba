"""Similarity (similarity signals): each player is told how alike its co-players decide.

One round of the base game; the only change is the twist sentence. Prompt modes:
``base`` (control, no sentence), ``percentage`` (a blunt figure),
``percentage_updated`` (default: the figure describes how alike the players reason,
each still plays for itself, everyone was told), ``benchmark`` (the figure came from a
named benchmark, described in the prompt with its random baseline) and
``benchmark_sweep`` (the whole battery is listed, one marked as the source).
The framing word flips the shown figure for "different"/"dissimilar" (100 - X), so the
same underlying similarity can be phrased as a commonality or a difference.

Where the figures come from: one X for everyone (``similarity``), a table per seat
(``seat_similarity``), or per agent pair (``similarity_scores``: what each agent is told
about each co-player agent, asymmetric, e.g. computed from benchmark answers). Every
seat is told its own row. As in the paper, the prompt says the co-players were told the
same (the paper: "the other agent is seeing this information as well") even when an
agent-pair table gives them other figures (``others_told = "same"``); ``others_told =
"as_given"`` says instead, when the figures differ, that each was given its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.grounded.stages import resolve_params
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism, MechanismParams, SeatingError
from coop_tui.prompts import PromptRenderer, benchmark_catalogue

if TYPE_CHECKING:
    from coop_tui.spec_models import Cell
    from coop_tui.store import Store

FRAMING_WORDS = {
    "similar": ("similar to", "similar"),
    "different": ("different from", "different"),
    "dissimilar": ("dissimilar to", "dissimilar"),
}
PromptMode = Literal["base", "percentage", "percentage_updated", "benchmark", "benchmark_sweep"]


def _pct_ok(value: float, field: str) -> float:
    if not 0 <= value <= 100:
        raise ValueError(f"{value:g} is outside 0-100; give {field} as a percentage from 0 to 100")
    return value


class SimilarityParams(MechanismParams):
    similarity: float | None = Field(
        default=None, description="the similarity X in percent (0-100) every co-player has"
    )
    seat_similarity: list[float] | dict[str, list[float]] | None = Field(
        default=None,
        description="multiplayer: one score per co-player (in seat order, skipping oneself); "
        "a plain list when every seat hears the same figures, else one row per seat: "
        "{ 1 = [...], 2 = [...], 3 = [...] }",
    )
    similarity_scores: dict[str, dict[str, float]] | None = Field(
        default=None,
        description="per agent: { agent = { co_player_agent = 0-100 } }, the score each agent "
        "is told for each co-player (asymmetric)",
        json_schema_extra={"form": False},
    )
    similarity_label: str | None = Field(
        default=None,
        description='where the scores come from, e.g. "exogenous:newcomb" or '
        '"endogenous:newcomb:both"; the report groups by it',
        json_schema_extra={"form": False},
    )
    framing: Literal["similar", "different", "dissimilar"] = "similar"
    others_told: Literal["same", "as_given"] = Field(
        default="same",
        description='"same": every seat hears that the others were told the same (the '
        'paper\'s sentence, also for asymmetric scores); "as_given": say when their figures differ',
    )
    prompt: PromptMode = "percentage_updated"
    # `shown_when`: the setup form shows a field only under these values of another field
    benchmark: str = Field(
        default="newcomb", description="benchmark / benchmark_sweep: the catalogue entry named",
        json_schema_extra={"shown_when": {"prompt": ["benchmark", "benchmark_sweep"]}},
    )
    battery: list[str] | None = Field(
        default=None, description="benchmark_sweep: which catalogue entries to list (default all)",
        json_schema_extra={"shown_when": {"prompt": ["benchmark_sweep"]}},
    )
    benchmarks_file: str | None = Field(
        default=None, description="a TOML catalogue of benchmarks to use instead of ours",
        json_schema_extra={"shown_when": {"prompt": ["benchmark", "benchmark_sweep"]}},
    )

    @field_validator("similarity")
    @classmethod
    def _check_similarity(cls, v: float | None) -> float | None:
        return None if v is None else _pct_ok(v, "similarity")

    @field_validator("seat_similarity")
    @classmethod
    def _check_seat(
        cls, v: list[float] | dict[str, list[float]] | None
    ) -> list[float] | dict[str, list[float]] | None:
        if isinstance(v, list):
            for x in v:
                _pct_ok(x, "seat_similarity")
        elif isinstance(v, dict):
            if not v:
                raise ValueError("is an empty table; give one row per seat: { 1 = [...], 2 = [...] }")
            for key, row in v.items():
                if not key.isdigit() or int(key) < 1:
                    raise ValueError(
                        f"row {key!r} is not a seat number; key each row by its seat: 1, 2, 3 ..."
                    )
                for x in row:
                    _pct_ok(x, f"seat_similarity.{key}")
        return v

    @field_validator("similarity_scores")
    @classmethod
    def _check_scores(cls, v: dict[str, dict[str, float]] | None) -> dict[str, dict[str, float]] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("is empty; give { agent = { co_player = score } } for the agents that play")
        for agent, row in v.items():
            if not row:
                raise ValueError(f"{agent!r} has no scores; give {{ co_player = 0-100 }} for it")
            for other, x in row.items():
                _pct_ok(x, f"similarity_scores.{agent}.{other}")
        return v

    @model_validator(mode="after")
    def _need_a_score(self) -> SimilarityParams:
        given = [name for name in ("similarity", "seat_similarity", "similarity_scores")
                 if getattr(self, name) is not None]
        if "similarity_scores" in given and len(given) > 1:
            raise ValueError(
                f"similarity_scores gives each agent pair its own score; remove {given[0]} "
                "(it would tell the same seats something else)"
            )
        if self.prompt != "base" and not given:
            raise ValueError(
                "similarity is missing; give a percentage (e.g. similarity = 80) "
                "or use prompt = \"base\" for the control without a similarity sentence"
            )
        catalogue = benchmark_catalogue(self.benchmarks_file)
        if self.prompt in ("benchmark", "benchmark_sweep") and self.benchmark not in catalogue:
            raise ValueError(
                f"benchmark {self.benchmark!r} is not in the catalogue; "
                f"choose one of {', '.join(catalogue)}"
            )
        for key in self.battery or []:
            if key not in catalogue:
                raise ValueError(f"battery entry {key!r} is not in the catalogue")
        return self


def shown_percentage(similarity: float, framing: str) -> float:
    return similarity if framing == "similar" else 100.0 - similarity


def _fmt_pct(x: float) -> str:
    return f"{x:g}"


def told_matrix(
    params: SimilarityParams, n_players: int, names: Sequence[str] | None = None
) -> list[list[float | None]]:
    """What each seat is told about each other seat: ``m[i][j]`` is seat i's figure for
    seat j (before framing flips it), ``None`` on the diagonal.

    ``names`` are the seats' agent names; ``similarity_scores`` needs them. Raises
    :class:`SeatingError` naming the field when the parameters do not fit the seats.
    """
    n = n_players
    m: list[list[float | None]] = [[None] * n for _ in range(n)]
    if params.similarity_scores is not None:
        if names is None or len(names) != n:
            raise SeatingError("similarity_scores", "needs the agent name of every seat")
        missing = _missing_pairs(params.similarity_scores, [names])
        if missing:
            raise SeatingError("similarity_scores", _missing_message(missing))
        for i in range(n):
            for j in range(n):
                if i != j:
                    m[i][j] = float(params.similarity_scores[names[i]][names[j]])
        return m
    seat = params.seat_similarity
    if isinstance(seat, dict):
        expected = {str(k) for k in range(1, n + 1)}
        if set(seat) != expected:
            raise SeatingError(
                "seat_similarity",
                f"has rows for seats {', '.join(sorted(seat, key=int))}; the game has seats "
                f"{', '.join(sorted(expected, key=int))}: give one row per seat",
            )
        for i in range(n):
            row = seat[str(i + 1)]
            if len(row) != n - 1:
                raise SeatingError(
                    "seat_similarity",
                    f"row {i + 1} has {len(row)} scores; each seat has {n - 1} co-players "
                    "(list them in seat order, skipping the seat itself)",
                )
            for k, j in enumerate(j for j in range(n) if j != i):
                m[i][j] = float(row[k])
        return m
    if isinstance(seat, list):
        if len(seat) != n - 1:
            raise SeatingError(
                "seat_similarity",
                f"has {len(seat)} scores, the game has {n - 1} co-players per seat",
            )
        if n > 2 and len(set(seat)) > 1:
            rows = ", ".join(f"{i} = [...]" for i in range(1, n + 1))
            raise SeatingError(
                "seat_similarity",
                "one list for every seat cannot say who is told what about whom (seat 3 would "
                "hear a different figure about seat 1 than seat 1 about seat 3); give one row "
                f"per seat instead: seat_similarity = {{ {rows} }}",
            )
        row_values = [float(x) for x in seat]
    else:
        row_values = [float(params.similarity)] * (n - 1)  # type: ignore[arg-type]
    for i in range(n):
        for k, j in enumerate(j for j in range(n) if j != i):
            m[i][j] = row_values[k]
    return m


def _missing_pairs(
    scores: Mapping[str, Mapping[str, float]], seatings: Sequence[Sequence[str]]
) -> list[tuple[str, str]]:
    missing: set[tuple[str, str]] = set()
    for seats in seatings:
        for i, a in enumerate(seats):
            row = scores.get(a, {})
            for j, b in enumerate(seats):
                if i != j and b not in row:
                    missing.add((a, b))
    return sorted(missing)


def _missing_message(missing: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{a} -> {b}" for a, b in missing[:6])
    more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
    a, b = missing[0]
    return (
        f"has no score for {len(missing)} pair(s) the matchup plays (agent told -> co-player): "
        f"{shown}{more}; add each, e.g. similarity_scores.{a}.{b} = <0-100>"
    )


def check_similarity_scores(
    scores: Mapping[str, Mapping[str, float]],
    seatings: Sequence[Sequence[str]],
    agents: Collection[str],
) -> None:
    """Every key is a defined agent and every (seat, co-seat) pair of every seating has a
    score; raises :class:`SeatingError` for ``similarity_scores`` otherwise. Used when the
    sweep is read and again when scores computed by an earlier stage are handed over."""
    known = list(agents)
    for agent, row in scores.items():
        for name, where in [(agent, "")] + [(other, f".{agent}") for other in row]:
            if name not in known:
                close = get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise SeatingError(
                    f"similarity_scores{where}",
                    f"unknown agent {name!r}; {hint}keys are agent names (defined: "
                    f"{', '.join(known)})",
                )
    missing = _missing_pairs(scores, seatings)
    if missing:
        raise SeatingError("similarity_scores", _missing_message(missing))


def _told_others(m: list[list[float | None]], seat: int) -> str:
    """What the prompt may truthfully say about the co-players' figures: ``same`` (every
    seat was told exactly what this one is), ``mutual`` (each co-player was told the same
    figure about this seat as this seat about it) or ``own`` (they may differ)."""
    values = {x for row in m for x in row if x is not None}
    if len(values) <= 1:
        return "same"
    if all(m[j][seat] == m[seat][j] for j in range(len(m)) if j != seat):
        return "mutual"
    return "own"


def similarity_twist(
    renderer: PromptRenderer,
    params: SimilarityParams,
    n_players: int,
    seat: int,
    names: Sequence[str] | None = None,
) -> str:
    """The sentence(s) one seat sees; empty for the ``base`` control. ``names`` are the
    seats' agent names (needed for ``similarity_scores``)."""
    if params.prompt == "base":
        return ""
    measure_word, relation_word = FRAMING_WORDS[params.framing]
    n_others = n_players - 1
    others = [j for j in range(n_players) if j != seat]
    m = told_matrix(params, n_players, names)
    scores = [float(m[seat][j]) for j in others]  # type: ignore[arg-type]
    shown = [_fmt_pct(shown_percentage(s, params.framing)) for s in scores]
    common = {
        "measure_word": measure_word, "relation_word": relation_word, "n_others": n_others,
        "told_others": "same" if params.others_told == "same" else _told_others(m, seat),
    }
    uniform = len(set(shown)) == 1
    if params.prompt in ("percentage", "percentage_updated") and uniform:
        return renderer.render(f"twist/similarity_{params.prompt}.j2", pct=shown[0], **common)
    per_player = [
        {"seat_number": j + 1, "pct": pct} for j, pct in zip(others, shown, strict=True)
    ]
    judged = params.prompt in ("benchmark", "benchmark_sweep")
    if n_others == 1:
        score_sentence = renderer.render(
            "twist/score_sentence_two.j2", pct=shown[0], judged=judged, **common
        )
    else:
        score_sentence = renderer.render(
            "twist/score_sentence_many.j2", per_player=per_player, judged=judged, **common
        )
    if not judged:
        return score_sentence
    catalogue = benchmark_catalogue(params.benchmarks_file)
    bench = catalogue[params.benchmark]
    battery = [catalogue[k] for k in (params.battery or list(catalogue))]
    return renderer.render(
        f"twist/similarity_{params.prompt}.j2",
        benchmark=bench,
        catalogue=battery,
        score_sentence=score_sentence,
        **common,
    )


def _seat_names(ctx: MatchContext) -> list[str]:
    return [str(getattr(agent, "name", "")) for agent in ctx.agents]


@register_mechanism
class Similarity(Mechanism):
    key = "similarity"
    title = "Similarity signal (one-shot)"
    Params = SimilarityParams

    def check_game(self, game: Game, n_seats: int) -> None:
        super().check_game(game, n_seats)
        assert isinstance(self.params, SimilarityParams)
        # agent-keyed scores are checked per seating (check_seatings); the base control
        # tells nothing
        if self.params.similarity_scores is None and self.params.prompt != "base":
            told_matrix(self.params, n_seats)

    def check_seatings(self, seatings: Sequence[Sequence[str]], agents: Collection[str]) -> None:
        assert isinstance(self.params, SimilarityParams)
        if self.params.similarity_scores is not None:
            check_similarity_scores(self.params.similarity_scores, seatings, agents)

    @classmethod
    def resolve_inputs(cls, cell: Cell, store: Store | None, run_id: str) -> dict[str, Any]:
        """Scores computed from earlier stages (``similarity_source``, grounded similarity):
        the per-pair matrix each seat is told, from
        :func:`coop_tui.grounded.stages.resolve_params`. A match told a fixed score plays
        with the cell's own parameters."""
        if cell.source is None:
            return super().resolve_inputs(cell, store, run_id)
        return resolve_params(cell, store, run_id)

    def condition(self) -> dict[str, Any]:
        p = self.params
        assert isinstance(p, SimilarityParams)
        cond: dict[str, Any] = {"similarity": p.similarity, "framing": p.framing, "prompt": p.prompt}
        if p.seat_similarity is not None:
            cond["seat_similarity"] = p.seat_similarity
        if p.similarity_scores is not None:
            cond["similarity_scores"] = p.similarity_scores
        if p.similarity_label is not None:
            cond["similarity_label"] = p.similarity_label
        if p.others_told != "same":
            cond["others_told"] = p.others_told
        if p.prompt in ("benchmark", "benchmark_sweep"):
            cond["benchmark"] = p.benchmark
        return cond

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        assert isinstance(self.params, SimilarityParams)
        n = ctx.game.n_players
        names = _seat_names(ctx)
        requests = [
            ctx.play_request(
                seat,
                1,
                twist=similarity_twist(ctx.renderer, self.params, n, seat, names),
                extra={"similarity": self.params.similarity},
            )
            for seat in range(ctx.n_seats)
        ]
        decisions = await ctx.ask_all(requests)
        actions = [ctx.require(d).action for d in decisions]
        payoffs = ctx.game.payoff(actions)  # type: ignore[arg-type]
        info: dict[str, Any] = {}
        if self.params.prompt != "base":
            m = told_matrix(self.params, n, names)
            # per seat: the figure it was told for each co-player seat (1-based), before
            # framing; the report groups seats by it
            info["told"] = [
                {str(j + 1): m[i][j] for j in range(n) if j != i} for i in range(n)
            ]
        ctx.finish_round(1, actions, payoffs, info=info)  # type: ignore[arg-type]
        return MatchOutcome(payoffs)
