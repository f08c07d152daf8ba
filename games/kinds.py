"""Games beyond small simultaneous matrices: numeric moves and moves in turn.

The strategic personalities paper asks for offers, bids, guesses and splits, and plays games where a later mover
sees the earlier move (ultimatum, trust, centipede, signalling). Such a game is a
:class:`ProtocolGame`: besides the usual :class:`Game` fields it has a *round protocol*, a
short coroutine that asks each mover in order through a :class:`Turn` and returns the
round's payoffs. The protocol says the game's action spaces (:class:`NumberSpace`,
:class:`AllocationSpace`, named options), its answer kinds, its move order and its payoff
rule; the engine still does the asking (``ctx.ask``), parsing, re-asking and storing, so
every move is a stored decision with its phase named.

The dense payoff tensor of :class:`Game` cannot hold a game whose actions are numbers, so
a protocol game carries a one-action placeholder per seat whose name describes the
seat's moves ("offer 0-100", "accept/reject"): listings, stored game specs and analysis
code that reads tensors keep working and see a game with no cooperative action.

Rounds: the strategic personalities paper repeats each game a known number of times ("round t of T", full
history; the history lines say what each player received, as the strategic personalities paper's code does).
``rounds`` is a parameter of every protocol family; NoMechanism plays them. Chance moves
(private values, types, states, tie-breaks) use ``Turn.rng``, seeded by the match.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from coop_tui.decisions import DecisionRequest, MatchOutcome, SeatView
from coop_tui.games.base import Game, points
from coop_tui.hashing import derived_seed
from coop_tui.schemas import answer_schema, example_for

if TYPE_CHECKING:
    from coop_tui.decisions import Decision
    from coop_tui.engine import MatchContext


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class NumberSpace:
    """One value from ``low`` to ``high`` in steps of ``step`` (an offer, a bid, a guess)."""

    name: str
    low: float
    high: float
    step: float = 1
    decimals_allowed: bool = True
    """False where the number names a thing (a node, a message, a state): a protocol that
    accepts decimals in whole-number moves keeps whole numbers here."""
    example: float | None = None
    """The example answer the strategic personalities paper's code shows for this move
    (``<answer>40</answer>`` for an ultimatum offer); a protocol that shows examples
    (:meth:`PromptProtocol.number_options`) repeats it. None: the code gives none."""

    def options(self) -> dict[str, Any]:
        return {"name": self.name, "min": self.low, "max": self.high, "step": self.step}

    def describe(self) -> str:
        grid = "a whole number" if self.step == 1 else f"a multiple of {_fmt(self.step)}"
        return f"{grid} from {_fmt(self.low)} to {_fmt(self.high)}"

    def values(self) -> np.ndarray:
        count = int(round((self.high - self.low) / self.step)) + 1
        return self.low + self.step * np.arange(count)


@dataclass(frozen=True)
class AllocationSpace:
    """A value per key (``keys``), each from ``low`` to ``high``, summing to ``total``
    when it is given (Blotto's soldiers) or free (two independent demands)."""

    keys: tuple[str, ...]
    low: float
    high: float
    total: float | None = None
    step: float = 1
    example: tuple[float, ...] | None = None
    """The example split the strategic personalities paper's code shows, one value per key
    in key order (``<answer>40, 30, 30</answer>`` for Blotto); a protocol that shows
    examples (:meth:`PromptProtocol.allocation_options`) repeats it. None: none shown."""

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"keys": list(self.keys), "min": self.low, "max": self.high,
                                "step": self.step}
        if self.total is not None:
            opts["total"] = self.total
        return opts


@dataclass
class RoundResult:
    """What one round produced: payoffs per seat, the moves (stored in the round's info)
    and one line per seat for the history later prompts show."""

    payoffs: tuple[float, ...]
    moves: dict[str, Any]
    summaries: tuple[str, ...]


RoundProtocol = Callable[["Turn"], Awaitable[RoundResult]]


@dataclass(frozen=True, eq=False)
class ProtocolGame(Game):
    """A game played by a round protocol instead of a simultaneous payoff tensor."""

    rounds: int = 1
    roles: tuple[str, ...] = ()
    """Per seat, the role name shown to its player ("the Proposer")."""
    rules: str = ""
    """The rules every player reads, in the game's own words."""
    called: str = ""
    """The game's name as the prompt says it ("the Ultimatum Game"), as the strategic
    personalities paper's code names it, under every protocol; empty: "a game"."""
    code_rules: str = ""
    """The rules with the information the strategic personalities paper's code states
    (and no more), told where :meth:`Turn.as_code` holds; empty: ``rules``."""
    protocol: RoundProtocol | None = None

    @property
    def symmetric(self) -> bool:
        """Never: the placeholder actions say nothing about the game's symmetry."""
        return False

    def payoff(self, profile: Sequence[int]) -> tuple[float, ...]:
        raise TypeError(f"{self.key} is played move by move; its payoffs come from its protocol")


def protocol_game(
    key: str,
    title: str,
    description: str,
    *,
    moves: Sequence[str],
    roles: Sequence[str],
    rules: str,
    protocol: RoundProtocol,
    rounds: int,
    params: dict[str, Any],
    called: str = "",
    called_by_code: str = "",
    code_rules: str = "",
) -> ProtocolGame:
    """Build a protocol game; ``moves[i]`` names seat i's moves for listings; ``called``
    is the name every prompt gives the game ("the Trust Game"), ``called_by_code`` the
    name only the strategic personalities protocol states ("the Nash Demand Game")."""
    n = len(moves)
    return ProtocolGame(
        key=key,
        title=title,
        description=description,
        action_names=tuple((m,) for m in moves),
        payoffs=np.zeros((1,) * n + (n,)),
        cooperative=(frozenset(),) * n,
        defect=(None,) * n,
        params={**params, "rounds": rounds},
        rounds=rounds,
        roles=tuple(roles),
        rules=rules,
        called=called,
        called_by_code=called_by_code,
        code_rules=code_rules,
        protocol=protocol,
    )


TOLD = ("", "code", "ours")
"""``told`` values of a move-by-move game: the protocol's choice, the paper's code's
information, coop-tui's own account."""


def told_param(told: str) -> str:
    """``told`` checked: "" (the prompt protocol's choice), "code" or "ours"."""
    if told not in TOLD:
        raise ValueError(f"told must be 'code' (what the strategic personalities paper's code "
                         f"tells) or 'ours' (coop-tui's own account), or left out for the "
                         f"prompt protocol's choice; got {told!r}")
    return told


def told_params(told: str) -> dict[str, str]:
    """The game parameter to record: none for the default, so match keys stay as they were."""
    return {"told": told} if told else {}


@lru_cache(maxsize=256)
def options_game(n_players: int, seat: int, options: tuple[str, ...]) -> Game:
    """A zero-payoff game in which ``seat`` has ``options``: the view of a named-option
    move, so the mixed answer path maps labels and samples an option index."""
    names = tuple(options if i == seat else ("-",) for i in range(n_players))
    shape = tuple(len(x) for x in names) + (n_players,)
    return Game(
        key="options", title="options", description="", action_names=names,
        payoffs=np.zeros(shape), cooperative=(frozenset(),) * n_players,
        defect=(None,) * n_players,
    )


class Turn:
    """One round of a protocol game: asks movers and remembers what was asked."""

    def __init__(self, ctx: MatchContext, game: ProtocolGame, round_: int,
                 past: Sequence[RoundResult], *, tell_total: bool = True,
                 say_repeated: bool = False) -> None:
        self.ctx, self.game, self.round, self.past = ctx, game, round_, list(past)
        self.tell_total = tell_total
        """Whether prompts state the number of rounds ("round t of T") or only "round t"."""
        self.say_repeated = say_repeated
        """Without the number of rounds, whether prompts still say the game is played over
        several rounds with the same players (the paper's code does not)."""

    @property
    def as_code(self) -> bool:
        """Whether this game's prompts tell what the strategic personalities paper's code
        tells: its ``told`` parameter if set, else the prompt protocol's choice."""
        told = self.game.params.get("told", "")
        return told == "code" or (not told and self.ctx.protocol.code_information())

    # ------------------------------------------------------------ chance
    def rng(self, *parts: Any) -> np.random.Generator:
        """A seeded generator for this round's chance moves (private values, types)."""
        return self.ctx.rng("protocol", self.round, *parts)

    # ------------------------------------------------------------ asking
    async def number(self, seat: int, phase: str, query: str, space: NumberSpace,
                     facts: dict[str, Any] | None = None) -> float:
        (value,) = await self.numbers([(seat, phase, query, space, facts)])
        return value

    async def numbers(
        self, asks: Sequence[tuple[int, str, str, NumberSpace, dict[str, Any] | None]]
    ) -> list[float]:
        """Ask several seats for a number at once (simultaneous moves)."""
        requests = [self._request(seat, phase, query, "number", self._number_options(space), facts)
                    for seat, phase, query, space, facts in asks]
        decisions = await self.ctx.ask_all(requests)
        return [self._value(d, space.values()) for d, (_, _, _, space, _) in
                zip(decisions, asks, strict=True)]

    async def allocations(
        self, asks: Sequence[tuple[int, str, str, AllocationSpace]]
    ) -> list[dict[str, float]]:
        requests = [self._request(seat, phase, query, "allocation",
                                  self._allocation_options(space), None)
                    for seat, phase, query, space in asks]
        decisions = await self.ctx.ask_all(requests)
        out = []
        for d, (_, _, _, space) in zip(decisions, asks, strict=True):
            if d.valid:
                out.append(dict(d.parsed))
                continue
            self._fail(d)
            share = (space.total if space.total is not None else space.high) / len(space.keys)
            out.append(dict.fromkeys(space.keys, float(share)))
        return out

    async def choose(self, seat: int, phase: str, query: str, options: Sequence[str],
                     facts: dict[str, Any] | None = None,
                     words: Sequence[str] | None = None,
                     number_as: tuple[int, float] | None = None) -> int:
        """Ask for exactly one of ``options`` (its index is returned).

        Answered as a ``choice`` (``{"choice": "<label>"}``), as the strategic personalities paper asks every
        discrete move; the labels follow the run's labelling policy and the prompt lists
        what each label means. ``words`` (one per option, "accept" / "reject") are the
        answers the strategic personalities paper's code asks for in place of letters: under
        a protocol that answers options by their words (:meth:`PromptProtocol.option_words`)
        they are the labels, in option order. ``number_as`` (the option a number stands
        for, and the example number): a number in the ``<answer>`` tag is read as that
        option, where the code asks for a word or a number (a counter-demand); asked only
        where the options are answered by their words.
        """
        opts = tuple(options)
        view_game = options_game(self.ctx.n_seats, seat, opts)
        as_words = bool(words) and self.ctx.protocol.option_words()
        if as_words:
            assert words is not None and len(words) == len(opts), "one answer word per option"
            labels, to_action = tuple(words), tuple(range(len(opts)))
            shown = list(range(len(opts)))
        else:
            own = self.ctx.labelling(seat, self.round, phase, n_actions=len(opts))
            labels, to_action = own.labels, own.label_to_action
            shown = sorted(range(len(opts)), key=lambda i: labels[i])
        meaning = "\n".join(f"- {labels[i]}: {opts[to_action[i]]}" for i in shown)
        form: dict[str, Any] = ({"labels": labels, "words": True} if as_words
                                 else {"labels": labels})
        counter: dict[str, Any] = {}
        if as_words and number_as is not None:
            counter = {"number_is": labels[number_as[0]], "number_example": number_as[1]}
            form.update(counter)
        text = self._text(seat, f"{query}\n\nYour options:\n{meaning}", "choice", form)

        request = DecisionRequest(
            seat=seat, round=self.round, phase=phase, kind="choice",
            messages=self.ctx.prompt_messages(text, seat),
            view=SeatView(game=view_game, seat=seat, round=self.round,
                          history=tuple(self.ctx.histories[seat]),
                          total_rounds=self.game.rounds, extra=self._extra(seat, phase, facts)),
            labels=labels, label_to_action=to_action,
            schema=answer_schema("choice", labels, {}),
            options={"meanings": [opts[a] for a in to_action],
                     "draw": float(self.rng("draw", seat, phase).random()),
                     **({"words": True} if as_words else {}), **counter,
                     **self.ctx.answer_form("choice")},
        )
        decision = self.ctx.require(await self.ctx.ask(request))
        assert decision.action is not None
        return int(decision.action)

    # ------------------------------------------------------------ internals
    def _number_options(self, space: NumberSpace) -> dict[str, Any]:
        """The move's options, with what the protocol adds (``decimals``: any value
        within the bounds of a whole-number move; ``example``: the answer shown)."""
        return {**space.options(), **self.ctx.answer_form("number"),
                **self.ctx.protocol.number_options(
                    whole=space.step == 1, names_a_thing=not space.decimals_allowed,
                    example=space.example)}

    def _allocation_options(self, space: AllocationSpace) -> dict[str, Any]:
        """The split's options, with the protocol's answer form and what it adds
        (``example``: the split shown)."""
        return {**space.options(), **self.ctx.answer_form("allocation"),
                **self.ctx.protocol.allocation_options(example=space.example)}

    def _extra(self, seat: int, phase: str, facts: dict[str, Any] | None) -> dict[str, Any]:
        """What a strategy in ``seat`` may read: the move's facts, past rounds' moves, the
        game's parameters, and ``seed``, drawn from the match seed for this round, seat and
        move, for strategies that pick a number at random (a rerun draws the same)."""
        return {"phase": phase, "facts": dict(facts or {}),
                "past": [r.moves for r in self.past], "game_params": dict(self.game.params),
                "seed": derived_seed(self.ctx.seed, "strategy", self.round, seat, phase)}

    def _request(self, seat: int, phase: str, query: str, kind: str,
                 options: dict[str, Any], facts: dict[str, Any] | None) -> DecisionRequest:
        text = self._text(seat, query, kind, options)
        return DecisionRequest(
            seat=seat, round=self.round, phase=phase, kind=kind,  # type: ignore[arg-type]
            messages=self.ctx.prompt_messages(text, seat),
            view=SeatView(game=self.game, seat=seat, round=self.round,
                          history=tuple(self.ctx.histories[seat]),
                          total_rounds=self.game.rounds, extra=self._extra(seat, phase, facts)),
            schema=answer_schema(kind, (), options), options=options,
        )

    def _text(self, seat: int, query: str, kind: str, options: dict[str, Any]) -> str:
        style = getattr(self.ctx.agents[seat], "style", "cot") or "cot"
        labels = tuple(options.get("labels", ()))
        instructions = self.ctx.answer_instructions(
            kind, style, seat, labels=labels, options=options,
            example=example_for(kind, labels, options),
        )
        history = [r.summaries[seat] for r in self.past]
        return self.ctx.renderer.render(
            "protocol_game.j2", n_players=self.game.n_players, role=self.game.roles[seat],
            called=self.ctx.protocol.game_name(self.game.called, self.game.called_by_code),
            goal=self.ctx.protocol.goal(),
            rules=self.game.code_rules if self.as_code and self.game.code_rules
            else self.game.rules, round=self.round, total_rounds=self.game.rounds,
            tell_total=self.tell_total,
            repeated=self.say_repeated,
            rules_end=self.ctx.rules_end,
            history=history, query=query, instructions=instructions,
            condition_text=getattr(self.ctx.policy, "condition_text", ""),
        )

    def _fail(self, decision: Decision) -> None:
        """Stop the match (policy "abort", MatchAborted) or go on with a fallback."""
        self.ctx.require(decision)

    def _value(self, decision: Decision, grid: np.ndarray) -> float:
        if decision.valid:
            return decision.parsed  # int on whole-number grids, so stored moves read naturally
        self._fail(decision)
        # policy "uniform": a seeded uniform draw from the grid, recorded in the round info
        rng = self.rng("fallback", decision.seat, decision.phase)
        value = float(grid[int(rng.integers(len(grid)))])
        return int(value) if value.is_integer() else value


def points_summaries(pay: Sequence[float]) -> tuple[str, ...]:
    """What each seat is told after a round: the points it received."""
    return tuple(f"you received {points(p)}." for p in pay)


def moves_text(moves: dict[str, Any]) -> str:
    """A round's moves in one short line for screens ("offer 40, accepted yes")."""
    def fmt(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:g}"
        if isinstance(v, list):
            return "/".join(fmt(x) for x in v)
        if isinstance(v, dict):
            return " ".join(f"{k}={fmt(x)}" for k, x in v.items())
        return str(v)

    return ", ".join(f"{k.replace('_', ' ')} {fmt(v)}" for k, v in moves.items())


async def play_protocol(ctx: MatchContext, *, tell_total: bool = True,
                        say_repeated: bool = False) -> MatchOutcome:
    """Play every round of a protocol game and record each as a round of the match;
    ``tell_total`` False says only "round t" (the strategic personalities paper's code in
    these games), with ``say_repeated`` also that the rounds are played with the same players."""
    game = ctx.game
    assert isinstance(game, ProtocolGame) and game.protocol is not None
    n = game.n_players
    totals = [0.0] * n
    past: list[RoundResult] = []
    for round_ in range(1, game.rounds + 1):
        result = await game.protocol(Turn(ctx, game, round_, past, tell_total=tell_total,
                                            say_repeated=say_repeated))
        ctx.finish_round(round_, [0] * n, result.payoffs, info={"moves": result.moves})
        past.append(result)
        totals = [t + p for t, p in zip(totals, result.payoffs, strict=True)]
    return MatchOutcome(tuple(totals), info={"rounds": game.rounds})


__all__ = [
    "AllocationSpace",
    "NumberSpace",
    "ProtocolGame",
    "RoundResult",
    "Turn",
    "play_protocol",
    "protocol_game",
    "told_param",
    "told_params",
]
