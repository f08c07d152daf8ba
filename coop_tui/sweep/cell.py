"""One match of the grid: its opening event, its context, its play and how it ended.

:func:`play_cell` reads as three steps, Axelrod's ``Match`` beside its ``Tournament``:
:func:`match_started` (a pure event builder), :func:`build_context` (the
:class:`MatchContext` a mechanism sees) and :func:`play_match` (the mechanism's
coroutine, with the table of exceptions to statuses). What a pipeline stage reads from
earlier stages is asked of the mechanism (``Mechanism.resolve_inputs``), so nothing here
knows a paper.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coop_tui.conditions import get_condition
from coop_tui.designs import DesignBook, Tournament
from coop_tui.engine import (
    DecisionPolicy,
    MatchAborted,
    MatchContext,
    MatchStopped,
    SourceFailed,
    derived_seed,
    stable_hash,
)
from coop_tui.events import EventBus, MatchDone, MatchStarted
from coop_tui.mechanisms import Mechanism, mechanism_class
from coop_tui.prompts import PromptRenderer, TemplateFailed, wording_path
from coop_tui.protocols import DEFAULT_KEY
from coop_tui.redact import scrub
from coop_tui.spec import Cell, Sweep, cell_game, wording_folder
from coop_tui.store import Store
from coop_tui.talk import DEFAULT_TALK_CHARS


def _templates(sweep: Sweep) -> Path | None:
    if not sweep.spec.templates:
        return None
    p = Path(sweep.spec.templates).expanduser()
    if not p.is_absolute() and sweep.source is not None:
        p = sweep.source.parent / p
    return p


def cell_renderer(renderer: PromptRenderer, cell: Cell, base: Path | None) -> PromptRenderer:
    """The renderer of one cell's prompts: the run's, with the folder of the experiment's
    own wording (``wording = "PATH"``) searched first when it names one."""
    folder = wording_path(getattr(cell, "wording", None), base)
    return renderer if folder is None else renderer.overlaid(folder)


def match_id_for(run_id: str, match_key: str) -> str:
    return stable_hash([run_id, match_key])[:16]


@dataclass(frozen=True, slots=True)
class MatchPlace:
    """Where one match sits in a run: its cell's slot (replicate x sample) and the key, id
    and seed that follow from it. Worked out once per match, read by every step."""

    run_id: str
    slot: int
    key: str
    id: str
    seed: int
    replicate: int
    sample: int

    @classmethod
    def of(cls, cell: Cell, slot: int, run_id: str, sweep_seed: int) -> MatchPlace:
        key = cell.match_key(slot)
        return cls(run_id, slot, key, match_id_for(run_id, key), derived_seed(sweep_seed, key),
                   cell.replicate_of(slot), cell.sample_of(slot))


async def play_cell(
    cell: Cell,
    sample: int,
    *,
    run_id: str,
    sweep: Sweep,
    agents: dict[str, Any],
    bus: EventBus,
    store: Store | None,
    renderer: PromptRenderer,
    base: Path | None = None,
    pause: asyncio.Event | None = None,
    on_context: Callable[[MatchContext], None] | None = None,
    designs: DesignBook | None = None,
    limit_prompts: bool = True,
) -> str:
    """Play one match of the grid; returns its status: done, failed or stopped (a failure
    is recorded, not raised).

    ``limit_prompts`` False lets a prompt over ``max_prompt_tokens`` reach the agent: the
    size probes of :mod:`coop_tui.prompt_size` must see it to measure it.

    ``sample`` is the cell's slot (replicate x sample, see :class:`Cell`); ``designs``
    is the run's book of tournament-wide designs (a fresh one when not given: stored
    designs are still found again, only concurrent matches could not share one).
    """
    place = MatchPlace.of(cell, sample, run_id, sweep.spec.seed)
    game = cell_game(cell, base)
    mech_cls = mechanism_class(cell.mechanism)
    params, missing = _stage_inputs(mech_cls, cell, store, run_id)
    if missing is not None:  # an earlier stage left no usable input: the match fails, says why
        bus.emit(match_started(cell, place, sweep=sweep, game=game))
        bus.emit(MatchDone(place.id, (), status="failed", error=missing))
        return "failed"
    mechanism = mech_cls(mech_cls.Params.model_validate(params))
    seat_agents = [agents[name] for name in cell.seats]
    bus.emit(match_started(cell, place, sweep=sweep, game=game, mechanism=mechanism,
                           seat_agents=seat_agents))
    ctx = build_context(
        cell, place, mechanism, sweep=sweep, game=game, seat_agents=seat_agents, bus=bus,
        store=store, renderer=renderer, base=base, pause=pause, designs=designs,
        limit_prompts=limit_prompts,
    )
    ctx.announce_strategies = on_context is not None  # headless: nobody watches answers stream
    if on_context is not None:
        on_context(ctx)
    return await play_match(mechanism, ctx, bus)


def _stage_inputs(mech_cls: type[Mechanism], cell: Cell, store: Store | None,
                  run_id: str) -> tuple[dict[str, Any], str | None]:
    """The match's parameters with what earlier stages stored filled in (the mechanism
    knows which: a judge's dossier, the per-pair scores); (params, None) or (the cell's
    params, why the inputs are missing)."""
    try:
        return mech_cls.resolve_inputs(cell, store, run_id), None
    except ValueError as exc:
        return cell.mechanism_params, f"missing input from an earlier stage: {exc}"


def match_started(
    cell: Cell, place: MatchPlace, *, sweep: Sweep, game: Any,
    mechanism: Mechanism | None = None, seat_agents: Sequence[Any] = (),
) -> MatchStarted:
    """The event that opens a match. Without a mechanism (an earlier stage left no input,
    so none was built) it holds the game's condition and the match's place only."""
    if mechanism is None:
        condition = _game_condition(cell)
        info = {"match_key": place.key, "matchup": cell.matchup, "replicate": place.replicate,
                "plan_index": sweep.plan_index(cell, place.slot)}
    else:
        condition = {**mechanism.condition(), **_game_condition(cell)}
        if cell.mechanism_axis:  # several mechanisms in one experiment: never pool them
            condition["mechanism"] = cell.mechanism
        info = {
            "match_key": place.key,
            "matchup": cell.matchup,
            "agent_specs": [a.spec for a in seat_agents],
            "agent_kinds": [a.kind for a in seat_agents],
            "game_spec": game_spec(game),
            "replicate": place.replicate,
            "answers": cell.answers,
            "plan_index": sweep.plan_index(cell, place.slot),
        }
    return MatchStarted(
        run_id=place.run_id, match_id=place.id, experiment=cell.experiment, game=game.key,
        mechanism=cell.mechanism, seats=cell.seats, condition=condition, sample=place.sample,
        seed=place.seed, info=info,
    )


def build_context(
    cell: Cell, place: MatchPlace, mechanism: Mechanism, *, sweep: Sweep, game: Any,
    seat_agents: list[Any], bus: EventBus, store: Store | None, renderer: PromptRenderer,
    base: Path | None, pause: asyncio.Event | None, designs: DesignBook | None,
    limit_prompts: bool,
) -> MatchContext:
    """The one context a mechanism plays through: the seats' agents, the cell's prompts and
    decision policy, and the tournament whose designs its matches share (if any)."""
    tournament = None
    if getattr(mechanism.params, "design_scope", None) == "tournament":
        tkey = cell.tournament_key(place.slot)
        tournament = Tournament(
            tkey, derived_seed(sweep.spec.seed, "tournament", tkey),
            designs if designs is not None else DesignBook(),
        )
    return MatchContext(
        run_id=place.run_id,
        match_id=place.id,
        game=game,
        agents=seat_agents,
        bus=bus,
        seed=place.seed,
        sample=place.sample,
        renderer=cell_renderer(renderer, cell, base or (sweep.source.parent if sweep.source else None)),
        policy=decision_policy(cell, sweep, base, limit_prompts),
        lookup=store,
        pause=pause,
        tournament=tournament,
    )


def decision_policy(cell: Cell, sweep: Sweep, base: Path | None, limit_prompts: bool) -> DecisionPolicy:
    """How the cell's decisions are asked, checked and re-asked."""
    return DecisionPolicy(
        max_attempts=cell.max_attempts,
        on_invalid=cell.on_invalid,
        randomize_labels=cell.randomize_labels,
        reuse_across_runs=sweep.spec.reuse,
        strict=cell.answers == "strict",
        answer=cell.answer,
        condition_text=_condition_text(cell.condition),
        condition=cell.condition,
        payoff_scale=get_condition(cell.condition).scale or 1.0,
        prompt_protocol=cell.prompt_protocol,
        style_message=cell.style_message,
        talk=cell.talk,
        talk_turns=cell.talk_turns,
        talk_chars=cell.talk_chars,
        max_prompt_tokens=sweep.spec.max_prompt_tokens if limit_prompts else None,
        source=sweep.wording_sources.get(cell.wording_source) if cell.wording_source else None,
        wording_folder=wording_folder(cell, base),
    )


async def play_match(mechanism: Mechanism, ctx: MatchContext, bus: EventBus) -> str:
    """Play the mechanism's coroutine and close the match with its status.

    ======================================  =========  ==================================
    raised                                  status     then
    ======================================  =========  ==================================
    nothing                                 done       the payoffs are stored
    ``MatchStopped`` (the user)             stopped    "stopped by the user"
    ``MatchAborted``                        failed     its message
    ``sqlite3.Error``                       --         re-raised: the run ends
    ``TemplateFailed``, ``SourceFailed``    --         re-raised: every match would fail
    any other ``Exception``                 failed     scrubbed; its transport retries
    ``CancelledError`` (Ctrl-C)             stopped    "interrupted", then re-raised
    ======================================  =========  ==================================
    """
    match_id = ctx.match_id
    try:
        try:
            outcome = await mechanism.play(ctx)
        finally:  # a strategy-only match's held-back rounds go before its end
            ctx.send_held()
    except MatchStopped:
        bus.emit(MatchDone(match_id, (), status="stopped", error="stopped by the user"))
        return "stopped"
    except MatchAborted as exc:
        bus.emit(MatchDone(match_id, (), status="failed", error=str(exc)))
        return "failed"
    except Exception as exc:  # provider gave up after retries, a bug, ...
        if _is_storage_error(exc):
            raise  # the database cannot record anything more: end the run, not the match
        if isinstance(exc, TemplateFailed | SourceFailed):
            raise  # every match renders the same template / source: stop the sweep, exit 2
        error = scrub(f"{type(exc).__name__}: {exc}")  # provider bodies may echo credentials
        retries = getattr(exc, "retries", 0)
        info = {"transport_retries": retries} if isinstance(retries, int) and retries else {}
        bus.emit(MatchDone(match_id, (), status="failed", error=error, info=info))
        return "failed"
    except asyncio.CancelledError:  # Ctrl-C or the app closing: say so, then let it unwind
        bus.emit(MatchDone(match_id, (), status="stopped", error="interrupted"))
        raise
    bus.emit(MatchDone(match_id, outcome.payoffs, info=outcome.info))
    return "done"


def _is_storage_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error)


def _game_condition(cell: Cell) -> dict[str, Any]:
    """The game is part of the condition: an experiment may list several games, scales,
    bonuses or sizes, and their results must never be pooled."""
    condition = {"game": cell.game, **cell.game_params}
    if cell.answer != "mixed":  # choice answers are a different protocol: never pooled
        condition["answer"] = cell.answer
    if cell.condition != "baseline":
        condition["condition"] = cell.condition
    if cell.prompt_protocol != DEFAULT_KEY:  # other messages and answer form: never pooled
        condition["prompt_protocol"] = cell.prompt_protocol
    if cell.style_message != "system":  # the reasoning instruction in the user message
        condition["style_message"] = cell.style_message
    if cell.source is not None:  # the similarity signals paper: scores computed from this source
        condition["similarity_source"] = cell.source
    if cell.wording != "ours":  # other words, other answers: never pooled with ours
        condition["wording"] = cell.wording
    if cell.talk != "none":  # agents that talk before they move: never pooled with silence
        condition["talk"] = cell.talk
        # the bounds only when changed, so `compare --by talk` sets a default talk cell
        # against its silent twin (compare_by.DEFAULTS fills them in)
        if cell.talk_turns != 1:
            condition["talk_turns"] = cell.talk_turns
        if cell.talk_chars != DEFAULT_TALK_CHARS:
            condition["talk_chars"] = cell.talk_chars
    return condition


def _condition_text(name: str) -> str:
    return get_condition(name).text


def game_spec(game: Any) -> dict[str, Any]:
    spec = {
        "key": game.key,
        "title": game.title,
        "params": game.params,
        "action_names": [list(a) for a in game.action_names],
        "payoffs": game.payoffs.tolist(),
        "cooperative": [sorted(c) for c in game.cooperative],
        "defect": list(game.defect),
    }
    if getattr(game, "protocol", None):  # played move by move (strategic personalities): rules, no table
        spec["protocol"] = True
        spec["rules"] = game.rules
    return spec
