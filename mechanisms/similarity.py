"""Similarity (seed 000): each player is told how alike its co-players decide.

One round of the base game; the only change is the twist sentence. Prompt modes:
``base`` (control, no sentence), ``percentage`` (a blunt figure),
``percentage_updated`` (default: the figure describes how alike the players reason,
each still plays for itself, everyone was told), ``benchmark`` (the figure came from a
named benchmark, described in the prompt with its random baseline) and
``benchmark_sweep`` (the whole battery is listed, one marked as the source).
The framing word flips the shown figure for "different"/"dissimilar" (100 - X), so the
same underlying similarity can be phrased as a commonality or a difference.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from coop_tui.engine import MatchContext, MatchOutcome, one_shot_payoffs
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.prompts import PromptRenderer, benchmark_catalogue

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
    seat_similarity: list[float] | None = Field(
        default=None,
        description="multiplayer: one score per co-player (in seat order, skipping oneself)",
    )
    framing: Literal["similar", "different", "dissimilar"] = "similar"
    prompt: PromptMode = "percentage_updated"
    benchmark: str = "newcomb"
    battery: list[str] | None = Field(
        default=None, description="benchmark_sweep: which catalogue entries to list (default all)"
    )
    benchmarks_file: str | None = Field(
        default=None, description="a TOML catalogue of benchmarks to use instead of ours"
    )

    @field_validator("similarity")
    @classmethod
    def _check_similarity(cls, v: float | None) -> float | None:
        return None if v is None else _pct_ok(v, "similarity")

    @field_validator("seat_similarity")
    @classmethod
    def _check_seat(cls, v: list[float] | None) -> list[float] | None:
        if v is not None:
            for x in v:
                _pct_ok(x, "seat_similarity")
        return v

    @model_validator(mode="after")
    def _need_a_score(self) -> SimilarityParams:
        if self.prompt != "base" and self.similarity is None and self.seat_similarity is None:
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


def similarity_twist(
    renderer: PromptRenderer, params: SimilarityParams, n_players: int, seat: int
) -> str:
    """The sentence(s) one seat sees; empty for the ``base`` control."""
    if params.prompt == "base":
        return ""
    measure_word, relation_word = FRAMING_WORDS[params.framing]
    n_others = n_players - 1
    others = [j for j in range(n_players) if j != seat]
    if params.seat_similarity is not None:
        if len(params.seat_similarity) != n_others:
            raise ValueError(
                f"seat_similarity has {len(params.seat_similarity)} scores, "
                f"the game has {n_others} co-players per seat"
            )
        scores = list(params.seat_similarity)
    else:
        scores = [float(params.similarity)] * n_others  # type: ignore[arg-type]
    shown = [_fmt_pct(shown_percentage(s, params.framing)) for s in scores]
    common = {"measure_word": measure_word, "relation_word": relation_word, "n_others": n_others}
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


@register_mechanism
class Similarity(Mechanism):
    key = "similarity"
    title = "Similarity signal (one-shot)"
    Params = SimilarityParams

    def check_game(self, game: Game, n_seats: int) -> None:
        super().check_game(game, n_seats)
        assert isinstance(self.params, SimilarityParams)
        if self.params.seat_similarity is not None and len(self.params.seat_similarity) != n_seats - 1:
            raise ValueError(
                f"seat_similarity needs {n_seats - 1} scores (one per co-player) for {game.key}"
            )

    def condition(self) -> dict[str, Any]:
        p = self.params
        assert isinstance(p, SimilarityParams)
        cond: dict[str, Any] = {"similarity": p.similarity, "framing": p.framing, "prompt": p.prompt}
        if p.seat_similarity is not None:
            cond["seat_similarity"] = p.seat_similarity
        if p.prompt in ("benchmark", "benchmark_sweep"):
            cond["benchmark"] = p.benchmark
        return cond

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        assert isinstance(self.params, SimilarityParams)
        requests = [
            ctx.play_request(
                seat,
                1,
                twist=similarity_twist(ctx.renderer, self.params, ctx.game.n_players, seat),
                extra={"similarity": self.params.similarity},
            )
            for seat in range(ctx.n_seats)
        ]
        decisions = await ctx.ask_all(requests)
        return MatchOutcome(one_shot_payoffs(ctx, decisions))
