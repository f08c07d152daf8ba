"""Repetition (CoopEval): the same co-players for T rounds, told the continuation
probability and shown the last k rounds.

Match payoff ``discounted`` (CoopEval's published numbers): round t < T weighs
(1 - d) * d**(t - 1) and the last round d**(T - 1), crediting the unobserved tail to
the last round so the weights sum to one. ``mean`` is the plain per-round mean (as the
Axelrod library reports). With d = 1 (no chance the game ends) the discounted weights
would put everything on the last round, so they fall back to the mean.

Each round's info carries whether each seat's action was cooperative, so the rounds
table (and per-round cooperation curves) need not re-derive it from the game.

``horizon = "known"`` (the strategic personalities paper's protocol) tells the agents the number of rounds and
the current one ("round t of T"), shows the whole history (or the last ``history``
rounds when given) and never speaks of a continuation chance; its match payoff defaults
to the total over the rounds, as the strategic personalities paper reports it. ``"continuation"`` (the default)
is CoopEval's. With ``continuation = 1`` nothing can end the game, so the prompt says
the game goes on for further rounds without claiming a probability that would be false
in the last round; for endgame studies use the known horizon.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_serializer, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from coop_tui.decisions import Move
from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.mechanisms import register_mechanism
from coop_tui.mechanisms._talk import talk_step
from coop_tui.mechanisms.base import Mechanism, MechanismParams
from coop_tui.prompts import Labelling, PromptRenderer


class RepetitionParams(MechanismParams):
    rounds: int = Field(default=15, ge=1, le=10_000, description="rounds played (T)")
    continuation: float = Field(default=0.8, description="continuation probability told to agents")
    history: int = Field(default=3, ge=0, description="past rounds shown in each prompt")
    payoff: Literal["discounted", "mean"] = "discounted"
    history_payoffs: bool = Field(
        default=False,
        description="show the points of past rounds too (CoopEval shows actions only)",
    )

    @field_validator("continuation")
    @classmethod
    def _in_unit(cls, v: float) -> float:
        if not 0 < v <= 1:
            raise ValueError(f"continuation {v:g} is outside (0, 1]; give a probability such as 0.8")
        return v


class RepeatedGameParams(RepetitionParams):
    """Repetition's own parameters: the shared ones (Reputation inherits those) plus the
    horizon, the whole history and total payoffs of the strategic personalities paper's protocol."""

    history: int | Literal["all"] = Field(  # type: ignore[assignment]
        default=3, description='past rounds shown in each prompt ("all": every past round)'
    )
    payoff: Literal["discounted", "mean", "total"] = "discounted"  # type: ignore[assignment]
    horizon: Literal["continuation", "known"] = Field(
        default="continuation",
        description='"continuation": agents hear a continuation chance (CoopEval); '
        '"known": agents hear "round t of T" (strategic personalities)',
    )

    rounds_told: Literal["always", "two_by_two", "several"] = Field(
        default="always",
        description='with horizon = "known": "always" says "round t of T" in every game; '
        '"two_by_two" (the strategic personalities paper\'s code) only in two-player two-action games, the others '
        'hear "round t"; "several" as "two_by_two", the others also hearing that the game is '
        'played over several rounds with the same players (coop-tui\'s earlier wording)',
    )

    history_players: Literal["all", "one"] | None = Field(
        default=None,
        description='in games of more than two players, whom the history names: "all" '
        '(every co-player\'s move and points), "one" (the strategic personalities paper\'s '
        'code: "the other player" only, Player 2 for Player 1 and Player 1 for the others); '
        'left out: "one" under prompt_protocol = "strategic_personalities", else "all"',
    )

    @field_validator("history")
    @classmethod
    def _history_size(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 0:
            raise ValueError(f'history {v} is negative; give a number of rounds >= 0 or "all"')
        return v

    @model_validator(mode="after")
    def _known_horizon(self) -> RepeatedGameParams:
        if self.horizon != "known":
            return self
        if "continuation" in self.model_fields_set:
            # reported at the field itself, so a sweep error names "continuation"
            raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                type=PydanticCustomError("horizon_conflict", (
                    'is told only with horizon = "continuation"; with a known horizon the '
                    "agents hear the number of rounds instead: remove continuation"
                )),
                loc=("continuation",),
                input=self.continuation,
            )])
        if "history" not in self.model_fields_set:
            object.__setattr__(self, "history", "all")
        if "payoff" not in self.model_fields_set:
            object.__setattr__(self, "payoff", "total")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # The default horizon is left out, so every existing run keeps its condition and
        # match keys; a known horizon has no continuation chance to record.
        data = handler(self)
        if data.get("rounds_told") == "always":
            data.pop("rounds_told")
        if data.get("history_players") is None:
            data.pop("history_players", None)
        if data.get("horizon") == "continuation":
            data.pop("horizon")
        else:
            data.pop("continuation", None)
        return data


def round_weights(rounds: int, continuation: float, payoff: str) -> list[float]:
    if payoff == "total":
        return [1.0] * rounds
    if payoff == "mean" or continuation >= 1:
        return [1.0 / rounds] * rounds
    d = continuation
    weights = [(1 - d) * d ** (t - 1) for t in range(1, rounds)]
    weights.append(d ** (rounds - 1))
    return weights


def history_lines(
    moves: Sequence[Move], own: Labelling, game: Game, seat: int, n_players: int,
    others_seats: Sequence[int] | None = None, only: int | None = None,
) -> list[dict[str, Any]]:
    """Past rounds named in the labels of the current decision; ``only``: the one
    co-player named ("the other player"), the others left out."""
    others_seats = list(others_seats if others_seats is not None else [j for j in range(n_players) if j != seat])
    out = []
    for m in moves:
        others = []
        for k, (j, a) in enumerate(zip(others_seats, m.others, strict=False)):
            if only is not None and j != only:
                continue
            who = "the other player" if n_players == 2 or only is not None else f"Player {j + 1}"
            if game.action_counts[j] == game.action_counts[seat]:
                label = own.label_of(a)
            else:
                label = f"A{a}"
            pay = f"{m.others_payoffs[k]:g}" if k < len(m.others_payoffs) else None
            others.append({"who": who, "label": label, "payoff": pay})
        out.append({"round": m.round, "own": own.label_of(m.own), "others": others,
                    "payoff": f"{m.payoff:g}"})
    return out


def history_co_player(ctx: MatchContext, seat: int, choice: str | None) -> int | None:
    """The one co-player ``seat``'s history names, or None for every co-player.

    Why: the strategic personalities paper's code writes its history for two players
    (``1 - player``), so in its 4-player games the model in seat 1 reads only about seat 2
    (and seat 2 about seat 1); coop-tui's own prompt lists every co-player. Other seats
    read about seat 1 (the code's line would name no one there)."""
    one = choice == "one" or (choice is None and ctx.protocol.code_information())
    if not one or ctx.n_seats <= 2:
        return None
    return 1 if seat == 0 else 0


ROUND_LINE = "twist/repetition_round.j2"
"""One past round as the known-horizon prompt lists it."""
RECENT_LINE = "twist/repetition_recent_round.j2"
"""One past round as CoopEval's prompt (a continuation chance) lists it."""


class _Span:
    """A list of per-round items filled over one span of indices (``items[low:]``), the
    rest None: a prompt showing the last few rounds never formats the older ones."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.low = 0

    def cover(self, start: int, stop: int, make: Callable[[int, int], list[Any]]) -> list[Any]:
        """``items[start:stop]``, making the missing ones with ``make(i, j)`` (items i..j-1)."""
        items, end = self.items, len(self.items)
        if stop > end:
            if start > end:  # a gap: the rounds before start are not shown any more
                items.extend([None] * (start - end))
                self.low = end = start
            items.extend(make(end, stop))
        if start < self.low:
            items[start:self.low] = make(start, self.low)
            self.low = start
        return items[start:stop]


class RoundLines:
    """One seat's past rounds as a prompt shows them, each formatted once per naming of
    the seat's actions and kept for the rest of the match.

    Why: a known-horizon prompt shows the whole history, so formatting it afresh for
    every prompt costs the square of the rounds (a 1,400-round match, the strategic
    personalities paper's long games, took 25 s to size in a dry run). Past rounds never
    change, and their text depends only on which label names which action (a per-round
    shuffle of the same letters names them alike), so each round is formatted once per
    naming and a prompt joins the kept lines.
    """

    MAX_NAMINGS = 6
    """Namings kept at once, the least recently used one dropped beyond it: every naming
    of two or three actions (labels redrawn per decision), while labels redrawn over
    more actions do not keep a copy of the history for each of their many namings."""

    def __init__(self, renderer: PromptRenderer, ctx: MatchContext, seat: int,
                 only: int | None = None) -> None:
        self._renderer, self._ctx, self._seat = renderer, ctx, seat
        self._only = only
        """The one co-player named (:func:`history_co_player`), None: every one."""
        self._by_naming: dict[tuple[str, ...], tuple[_Span, dict[tuple[Any, ...], _Span]]] = {}

    def rows(self, past: Sequence[Move], own: Labelling, start: int) -> list[dict[str, Any]]:
        """What :func:`history_lines` gives for ``past[start:]`` (rows shared between
        prompts: read them, never change them)."""
        rows, _texts = self._entry(past, own)
        ctx, seat = self._ctx, self._seat
        return rows.cover(start, len(past), lambda i, j: history_lines(
            past[i:j], own, ctx.game, seat, ctx.n_seats, only=self._only))

    def text(self, past: Sequence[Move], own: Labelling, start: int, template: str,
             *, newest_first: bool = False, **values: Any) -> str:
        """The lines of ``past[start:]`` as ``template`` renders each row (as ``h``, with
        ``values``, the same all match), each ending in a newline."""
        rows = self.rows(past, own, start)
        _rows, texts = self._entry(past, own)
        span = texts.setdefault((template, *sorted(values.items())), _Span())
        render = self._renderer.bound(template)
        lines = span.cover(start, len(past), lambda i, j: [
            render(h=row, **values) + "\n" for row in rows[i - start:j - start]])
        return "".join(reversed(lines) if newest_first else lines)

    def _entry(self, past: Sequence[Move], own: Labelling) -> tuple[_Span, dict[tuple[Any, ...], _Span]]:
        naming = tuple(own.label_of(a) for a in range(len(own.labels)))
        kept = self._by_naming
        entry = kept.pop(naming, None)  # put back last: the dict's order is the use order
        if entry is None or not _extends(entry[0].items, past):
            if len(kept) >= self.MAX_NAMINGS:
                del kept[next(iter(kept))]
            entry = (_Span(), {})
        kept[naming] = entry
        return entry


def _extends(rows: list[dict[str, Any] | None], past: Sequence[Move]) -> bool:
    """Whether the kept rows belong to the start of ``past`` (a history only grows)."""
    if len(rows) > len(past):
        return False
    return not rows or rows[-1]["round"] == past[len(rows) - 1].round  # the last one is filled


def repetition_twist(
    renderer: PromptRenderer, ctx: MatchContext, seat: int, round_: int,
    params: RepeatedGameParams, lines: RoundLines | None = None,
) -> Callable[[Labelling], str]:
    """The twist of one seat's prompt in ``round_``; ``lines`` keeps the seat's formatted
    past rounds from one prompt to the next (a new one formats them all)."""
    kept = lines if lines is not None else RoundLines(
        renderer, ctx, seat, history_co_player(ctx, seat, params.history_players))

    def render(own: Labelling) -> str:
        past = ctx.histories[seat]
        if params.history == "all":
            start = 0
        else:
            start = max(len(past) - params.history, 0) if params.history else len(past)
        shown = kept.rows(past, own, start)
        if params.horizon == "known":
            two_by_two = ctx.n_seats == 2 and all(len(a) == 2 for a in ctx.game.action_names)
            return renderer.render(
                "twist/repetition_known.j2",
                tell_total=params.rounds_told == "always" or two_by_two,
                repeated=params.rounds_told == "several",
                n_others=ctx.n_seats - 1,
                round=round_,
                total_rounds=params.rounds,
                history=shown,
                history_text=kept.text(past, own, start, ROUND_LINE),
                whole_history=params.history == "all" or len(shown) == len(past),
            )
        return renderer.render(
            "twist/repetition.j2",
            n_others=ctx.n_seats - 1,
            continuation_pct=f"{100 * params.continuation:g}",
            endless=params.continuation >= 1,
            round=round_,
            played=round_ - 1,
            show_payoffs=params.history_payoffs,
            history=list(reversed(shown)),
            history_text=kept.text(past, own, start, RECENT_LINE, newest_first=True,
                                   show_payoffs=params.history_payoffs),
        )

    return render


@register_mechanism
class Repetition(Mechanism):
    key = "repetition"
    title = "Repeated game (same co-players)"
    Params = RepeatedGameParams
    talks = True

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        assert isinstance(self.params, RepeatedGameParams)
        return n_seats * self.params.rounds

    def condition(self) -> dict[str, Any]:
        return self.params.model_dump()

    def weights(self) -> list[float]:
        p = self.params
        assert isinstance(p, RepeatedGameParams)
        return round_weights(p.rounds, p.continuation, p.payoff)

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        p = self.params
        assert isinstance(p, RepeatedGameParams)
        weights = round_weights(p.rounds, p.continuation, p.payoff)
        totals = [0.0] * ctx.n_seats
        game = ctx.game
        if ctx.plays_directly():  # strategies only: no prompts to build, rounds in one loop
            played = await ctx.direct_rounds(p.rounds, lambda actions: (
                game.payoff(list(actions)),  # type: ignore[arg-type]
                [game.is_cooperative(i, a) for i, a in enumerate(actions)],
            ))
            for t, payoffs in enumerate(played, start=1):
                for seat, x in enumerate(payoffs):
                    totals[seat] += weights[t - 1] * x
            return MatchOutcome(tuple(totals), {"rounds": p.rounds, "payoff": p.payoff})
        # payoffs and cooperation per action profile: the game is fixed within a match
        outcomes: dict[tuple[int, ...], tuple[Any, list[bool | None]]] = {}
        lines = [RoundLines(ctx.renderer, ctx, seat,
                            history_co_player(ctx, seat, p.history_players))
                 for seat in range(ctx.n_seats)]
        # what the agents are told, for a paper's own wording (coop_tui.sources)
        told = {"continuation": p.continuation, "history": p.history, "horizon": p.horizon}
        for t in range(1, p.rounds + 1):
            await talk_step(ctx, t, lambda seat, t=t: repetition_twist(  # type: ignore[misc]
                ctx.renderer, ctx, seat, t, p, lines[seat]))
            requests = [
                ctx.play_request(
                    seat, t,
                    twist=repetition_twist(ctx.renderer, ctx, seat, t, p, lines[seat]),
                    total_rounds=p.rounds,
                    extra=told,
                )
                for seat in range(ctx.n_seats)
            ]
            decisions = await ctx.ask_all(requests)
            actions = [ctx.require(d).action for d in decisions]
            profile = tuple(actions)
            known = outcomes.get(profile)  # type: ignore[arg-type]
            if known is None:
                known = outcomes[profile] = (  # type: ignore[index]
                    game.payoff(actions),  # type: ignore[arg-type]
                    [game.is_cooperative(i, a) for i, a in enumerate(actions)],
                )
            payoffs = known[0]
            ctx.finish_round(t, actions, payoffs, info={  # type: ignore[arg-type]
                "cooperated": list(known[1]),
            })
            for seat, x in enumerate(payoffs):
                totals[seat] += weights[t - 1] * x
        return MatchOutcome(tuple(totals), {"rounds": p.rounds, "payoff": p.payoff})
