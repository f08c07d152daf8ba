"""Re-ask one stored decision with the same agent and an edited prompt (prompt debugging).

The inspector shows a decision's exact messages; the user edits the prompt and asks the
same agent again. The agent is rebuilt from the seat's stored public spec (API keys are
read from the environment again, never from the database), the request is rebuilt from
the stored decision (labels, label mapping, round, phase) and the match (game, history of
earlier rounds), and the answer goes through the engine's usual path: streamed as
events, parsed, re-asked on invalid answers, sampled with the original match's seed.

Nothing is overwritten. Each re-ask is stored as a match of its own (matchup
``"reask"``, ``info.reask_of`` naming the original run, match and decision) inside one
run of kind ``"reask"`` per original run, so the original and every variant stay side by
side in the database. Nothing here imports Textual.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coop_tui.agents.factory import build_agent
from coop_tui.decisions import Decision, DecisionRequest, Message, Move, SeatView
from coop_tui.engine import DecisionPolicy, MatchContext, stable_hash
from coop_tui.events import Event, EventBus, MatchDone, MatchStarted
from coop_tui.games import game_from_spec, load_game
from coop_tui.games.kinds import options_game
from coop_tui.protocols import DEFAULT_KEY
from coop_tui.schemas import answer_schema

if TYPE_CHECKING:
    from coop_tui.games.base import Game
    from coop_tui.store import Store

REASK_KIND = "reask"


class ReaskError(Exception):
    """The decision cannot be re-asked (unknown id, a human seat, a missing API key...)."""


@dataclass
class ReaskTarget:
    """A stored decision with everything needed to ask it again."""

    decision_id: int
    decision: Decision
    match: dict[str, Any]
    seats: list[dict[str, Any]]
    game: Game
    history: tuple[Move, ...]

    @property
    def seat(self) -> dict[str, Any]:
        return self.seats[self.decision.seat]

    @property
    def agent_spec(self) -> dict[str, Any]:
        return json.loads(self.seat.get("agent_spec") or "{}")


@dataclass
class ReaskResult:
    decision: Decision
    decision_id: int | None
    """Row id of the new decision (None only if the store refused the row)."""
    match_id: str
    run_id: str


def request_messages(decision: Decision) -> list[Message]:
    """The messages of the decision's first attempt: the request as the mechanism built it.

    A decision that needed re-asks stores the whole final conversation (with the rejected
    replies and the retry instructions); the first rejected attempt holds the original.
    """
    if decision.retries:
        return [dict(m) for m in decision.retries[0].messages]
    return [dict(m) for m in decision.prompt]


def editable_prompt(decision: Decision) -> str:
    """The text the user edits: the request's last user message."""
    messages = request_messages(decision)
    for message in reversed(messages):
        if message.get("role") == "user":
            return message.get("content", "")
    return messages[-1].get("content", "") if messages else ""


def edited_messages(decision: Decision, prompt: str) -> list[Message]:
    """The request's messages with the last user message replaced by ``prompt``."""
    messages = request_messages(decision)
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            messages[i] = {**messages[i], "content": prompt}
            return messages
    return [*messages, {"role": "user", "content": prompt}]


def load_target(store: Store, decision_id: int) -> ReaskTarget:
    """Read the decision, its match and the match's earlier rounds from the store."""
    decision = store.get_decision(decision_id)
    if decision is None:
        raise ReaskError(f"no decision #{decision_id} in {store.path}")
    match = store.match(decision.match_id)
    if match is None:
        raise ReaskError(f"decision #{decision_id} belongs to a match that is not stored")
    seats = store.seats(decision.match_id)
    if decision.seat >= len(seats):
        raise ReaskError(f"decision #{decision_id}: seat {decision.seat + 1} is not stored")
    game = _game(match)
    rounds = [r for r in store.rounds(decision.match_id) if r["round"] < decision.round]
    return ReaskTarget(decision_id, decision, match, seats, game,
                       _history(rounds, decision.seat))


def _game(match: dict[str, Any]) -> Game:
    if match.get("game_spec"):
        try:
            return game_from_spec(json.loads(match["game_spec"]))
        except (KeyError, TypeError, ValueError):
            pass

    try:
        return load_game(match["game"])
    except Exception as exc:
        raise ReaskError(f"cannot rebuild game {match['game']!r}: {exc}") from None


def _history(rounds: Sequence[dict[str, Any]], seat: int) -> tuple[Move, ...]:
    """The seat's own-perspective history (what a strategy reads) from stored rounds."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for row in rounds:
        by_round.setdefault(row["round"], []).append(row)
    moves = []
    for rnd in sorted(by_round):
        rows = sorted(by_round[rnd], key=lambda r: r["seat"])
        own = next((r for r in rows if r["seat"] == seat), None)
        if own is None:
            continue
        others = [r for r in rows if r["seat"] != seat]
        moves.append(
            Move(rnd, int(own["action"]), tuple(int(r["action"]) for r in others),
                 float(own["payoff"]), tuple(float(r["payoff"]) for r in others))
        )
    return tuple(moves)


def build_agent_for(target: ReaskTarget, overrides: dict[str, Any] | None = None) -> Any:
    """The seat's agent, rebuilt from its stored public spec plus ``overrides``."""
    from pydantic import ValidationError

    from coop_tui.spec import KEYLESS_PROVIDERS, PROVIDER_KEY_ENV, AgentSpec

    raw = {k: v for k, v in target.agent_spec.items() if k in AgentSpec.model_fields}
    raw.pop("api_key", None)
    raw.update(overrides or {})
    try:
        spec = AgentSpec.model_validate(raw)
    except ValidationError as exc:
        raise ReaskError(
            f"seat {target.decision.seat + 1}'s stored agent spec cannot be rebuilt: "
            f"{exc.errors()[0]['msg']}"
        ) from None
    if sum([bool(spec.model), bool(spec.strategy), spec.human]) != 1:
        raise ReaskError(
            f"seat {target.decision.seat + 1} ({target.seat['agent']}) has no model or strategy "
            "stored; it cannot be asked again"
        )
    if spec.kind == "human":
        raise ReaskError("a human answered this decision; there is no agent to ask again")
    if spec.kind == "llm" and not spec.api_base and spec.provider not in KEYLESS_PROVIDERS:
        env = spec.api_key_env or PROVIDER_KEY_ENV.get(spec.provider)
        if env and spec.resolve_key() is None:
            raise ReaskError(f"{spec.model} needs an API key: set {env} in the environment")
    return build_agent(target.seat["agent"], spec)


def build_request(target: ReaskTarget, messages: Sequence[Message]) -> DecisionRequest:
    """The original request (labels, mapping, view) carrying ``messages`` instead."""
    d = target.decision
    game = target.game
    position = d.seat if d.seat < game.n_players else 0
    options: dict[str, Any] = {"n_players": game.n_players} if d.kind == "mediator" else {}
    if d.options:  # a number's range, an allocation's keys and total (strategic personalities)
        options = dict(d.options)
    rounds = json.loads(target.match.get("condition") or "{}").get("rounds")
    meanings = d.options.get("meanings") if d.options else None
    if meanings and len(meanings) == len(d.label_to_action):
        # a named-option move of a move-by-move game (strategic personalities): its options, in action order

        named = [""] * len(meanings)
        for i, action in enumerate(d.label_to_action):
            named[action] = meanings[i]
        game = options_game(game.n_players, position, tuple(named))
    view = SeatView(
        game=game, seat=position, round=d.round, history=target.history,
        total_rounds=rounds if isinstance(rounds, int) else None,
    )
    try:
        schema = answer_schema(d.kind, d.labels, options)
    except Exception:  # a schema only helps constrained decoding; never block a re-ask
        schema = None
    return DecisionRequest(
        seat=d.seat, round=d.round, phase=d.phase, kind=d.kind,
        messages=tuple(dict(m) for m in messages), view=view, labels=d.labels,
        label_to_action=d.label_to_action, schema=schema, options=options,
    )


def reask_policy(match: dict[str, Any], max_attempts: int,
                 answers: str = "lenient") -> DecisionPolicy:
    """The original match's prompt protocol and reasoning-message setting (from its stored
    condition), so a re-ask of an unreadable answer is worded as the match's own re-asks
    are (under the strategic personalities protocol: asking for the ``<answer>`` tag, not
    a JSON object); ``answers`` is the run's answer rule (:func:`answer_rule`), so a
    strict run's decision is read strictly again."""
    condition = json.loads(match.get("condition") or "{}")
    return DecisionPolicy(
        max_attempts=max_attempts, on_invalid="abort",
        strict=answers == "strict",
        prompt_protocol=condition.get("prompt_protocol", DEFAULT_KEY),
        style_message=condition.get("style_message", "system"),
    )


def answer_rule(store: Store, match: dict[str, Any]) -> str:
    """The answer rule ("strict" or "lenient") the match was played under.

    It is not part of the condition (it never changes what a model is told), so it is read
    from the match's stored info, else from the run's stored spec: the match's
    experiment's ``answers``, else the sweep's (a re-ask's: its original match's). A run
    with neither (older runs, imports) was lenient, the default."""
    info = json.loads(match.get("info") or "{}")
    if info.get("answers") in ("strict", "lenient"):
        return str(info["answers"])
    earlier = (info.get("reask_of") or {}).get("match_id")
    asked = store.match(earlier) if earlier and earlier != match.get("id") else None
    if asked is not None:  # a re-ask stored before re-asks kept the rule: its original's
        return answer_rule(store, asked)
    run = store.run(match["run_id"]) or {}
    spec = json.loads(run.get("spec") or "{}")
    experiments = spec.get("experiments") or []
    index = match.get("experiment")
    experiment = experiments[index] if isinstance(index, int) and 0 <= index < len(experiments) else {}
    rule = (experiment.get("answers") if isinstance(experiment, dict) else None) or spec.get("answers")
    return rule if rule in ("strict", "lenient") else "lenient"


def _reask_run(store: Store, match: dict[str, Any]) -> str:
    """The run that collects re-asks of ``match``'s run (created on first use)."""
    original = store.run(match["run_id"]) or {"id": match["run_id"], "name": "?", "kind": ""}
    if original.get("kind") == REASK_KIND:
        return str(original["id"])
    run_id = f"reask-{original['id']}"
    if store.run(run_id) is None:
        store.create_run(
            run_id, f"reask of {original.get('name')}", kind=REASK_KIND, seed=0,
            sweep_hash="", spec={"reask_of_run": original["id"]},
        )
    return run_id


async def reask(
    store: Store,
    decision_id: int,
    prompt: str | None = None,
    *,
    messages: Sequence[Message] | None = None,
    listener: Callable[[Event], None] | None = None,
    overrides: dict[str, Any] | None = None,
    max_attempts: int = 3,
    agent: Any = None,
) -> ReaskResult:
    """Ask decision ``decision_id`` again and store the answer as a new decision.

    ``prompt`` replaces the request's last user message (``messages`` replaces them
    all; neither: the original request is sent again). ``listener`` receives the
    events (DecisionStarted, TextDelta, ReasoningDelta, AnswerRejected, DecisionDone...)
    as the answer streams. ``overrides`` change agent settings for this ask only (for
    example ``{"max_tokens": 64}``); ``agent`` replaces the rebuilt agent (tests).
    """
    target = load_target(store, decision_id)
    if messages is None:
        messages = (
            request_messages(target.decision) if prompt is None
            else edited_messages(target.decision, prompt)
        )
    agent = agent if agent is not None else build_agent_for(target, overrides)
    request = build_request(target, messages)
    original = target.match
    answers = answer_rule(store, original)
    run_id = _reask_run(store, original)
    match_id = stable_hash([run_id, decision_id, time.time_ns(), secrets.token_hex(4)])[:16]
    bus = EventBus()
    bus.subscribe(store, critical=True)
    if listener is not None:
        bus.subscribe(listener)
    specs = [json.loads(s.get("agent_spec") or "{}") for s in target.seats]
    specs[target.decision.seat] = getattr(agent, "spec", specs[target.decision.seat])
    bus.emit(
        MatchStarted(
            run_id=run_id, match_id=match_id, experiment=original.get("experiment") or 0,
            game=original["game"], mechanism=original["mechanism"],
            seats=tuple(s["agent"] for s in target.seats),
            condition=json.loads(original.get("condition") or "{}"),
            sample=0, seed=original.get("seed") or 0,
            info={
                "match_key": match_id,
                "matchup": REASK_KIND,
                "agent_specs": specs,
                "agent_kinds": [s.get("agent_kind") for s in target.seats],
                "game_spec": json.loads(original["game_spec"]) if original.get("game_spec") else None,
                "answers": answers,  # a re-ask of this re-ask reads it strictly too
                "reask_of": {
                    "run_id": original["run_id"],
                    "match_id": original["id"],
                    "decision_id": decision_id,
                },
                "edited": list(messages) != request_messages(target.decision),
            },
        )
    )
    ctx = MatchContext(
        run_id=run_id, match_id=match_id, game=target.game,
        agents=[agent] * len(target.seats), bus=bus, seed=original.get("seed") or 0,
        policy=reask_policy(original, max_attempts, answers),
    )
    try:
        decision = await ctx.ask(request)
    except BaseException as exc:
        bus.emit(MatchDone(match_id, (), status="failed", error=f"{type(exc).__name__}: {exc}"))
        store.set_run_status(run_id, "done")
        raise
    finally:
        close = getattr(agent, "aclose", None)
        if callable(close):  # its HTTP session lives on this loop, which ends with the ask
            with contextlib.suppress(Exception):
                await close()
    bus.emit(MatchDone(match_id, (), status="done" if decision.valid else "failed",
                       error=decision.error))
    store.set_run_status(run_id, "done")
    return ReaskResult(decision, store.decision_id(decision.cache_key), match_id, run_id)


__all__ = [
    "REASK_KIND",
    "ReaskError",
    "ReaskResult",
    "ReaskTarget",
    "answer_rule",
    "build_agent_for",
    "build_request",
    "editable_prompt",
    "edited_messages",
    "load_target",
    "reask",
    "reask_policy",
    "request_messages",
]
