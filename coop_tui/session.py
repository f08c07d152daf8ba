"""One interactive match, or the replay of a stored one, running in the background.

The TUI never drives the engine itself: it builds a :class:`MatchSession` (or a
:class:`ReplaySession`) and listens to the session's :class:`EventBus`. A live session
plays through the same ``run_sweep`` path as the headless runner (one experiment, the
store attached as a listener), so an interactive match is stored exactly like a sweep.
A replay re-emits a stored match's decisions as the same events, chunked and paced, so
the live screen cannot tell the difference. Nothing here imports Textual.

This module also holds the setup helpers the setup screen needs and that are worth
testing without a terminal: turning the form's choices into a sweep dict, writing that
dict as a TOML sweep file, and rendering the exact first prompt of every seat.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coop_tui.agents.custom import agent_names, is_class_ref
from coop_tui.agents.strategies import strategy_aliases, strategy_names
from coop_tui.decisions import DecisionRequest, Message
from coop_tui.errors import SpecError
from coop_tui.eta import CallClock
from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    Event,
    EventBus,
    MatchDone,
    MatchStarted,
    PhaseDone,
    ReasoningDelta,
    RoundDone,
    RunDone,
    RunStarted,
    TextDelta,
)

if TYPE_CHECKING:
    # Kept off the import path of the first paint: the store pulls in sqlite-utils (and
    # pandas), the spec pydantic, the engine numpy and Jinja2.
    from coop_tui.spec import SpecError, Sweep
    from coop_tui.store import Store

PRESET_AGENT = "local/smollm2"
HUMAN = "human"


@dataclass(frozen=True)
class HumanTurn(Event):
    """A human seat must answer ``request``; the UI calls :meth:`MatchSession.answer`."""

    match_id: str
    seat: int
    request: DecisionRequest


# ====================================================================== setup helpers
@dataclass
class MatchSetup:
    """What the setup screen (or ``coop-tui play``) chose: one experiment, one matchup."""

    seats: list[str]
    """Per seat: ``local/smollm2``, a strategy name, ``human`` or a ``provider/model``."""
    game: str = "prisoners"
    mechanism: str = "similarity"
    params: dict[str, Any] = field(default_factory=dict)
    """Mechanism parameters; ``None`` values mean "use the default"."""
    samples: int = 1
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int = 0
    name: str = "interactive"
    max_attempts: int = 3

    @classmethod
    def preset(cls) -> MatchSetup:
        """The opening preset: the embedded model against itself under 80% similarity."""
        return cls(
            seats=[PRESET_AGENT, PRESET_AGENT],
            game="prisoners",
            mechanism="similarity",
            params={"similarity": 80, "framing": "similar", "prompt": "percentage_updated"},
            max_tokens=200,
        )


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    return slug or "agent"


def agent_entry(text: str, *, max_tokens: int | None = None, temperature: float | None = None,
                field_name: str = "agent") -> dict[str, Any]:
    """The ``[agents.X]`` table for one seat's agent string, or a SpecError naming the seat."""
    value = text.strip()
    if not value:
        raise SpecError(field_name, "is empty; type local/smollm2, a strategy name, human or provider/model")
    if value.lower() == HUMAN:
        return {"human": True}

    key = value.lower().replace("-", "_").replace(" ", "_")
    if key in strategy_names() or key in strategy_aliases():
        return {"strategy": key}
    if value.startswith("strategy:"):
        return {"strategy": value.split(":", 1)[1].strip()}
    if "/" in value or value.startswith("local:"):
        entry: dict[str, Any] = {"model": value}
        if max_tokens is not None:
            entry["max_tokens"] = max_tokens
        if temperature is not None:
            entry["temperature"] = temperature
        return entry
    if value.startswith("agent:"):
        return {"agent": value.split(":", 1)[1].strip()}
    if is_class_ref(value) or value in agent_names():  # a class with decide(), or a plugin's
        return {"agent": value}

    close = difflib.get_close_matches(key, strategy_names(), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise SpecError(
        field_name,
        f"{value!r} is not a strategy, 'human', a provider/model string or an agent class; "
        f"{hint}e.g. local/smollm2, tit_for_tat, human, openai/gpt-4o-mini, package.module:Class",
    )


def setup_to_sweep(setup: MatchSetup) -> dict[str, Any]:
    """The sweep dict (the TOML file's content) for one setup: one experiment."""
    agents: dict[str, dict[str, Any]] = {}
    names: list[str] = []
    by_text: dict[str, str] = {}
    for i, text in enumerate(setup.seats):
        entry = agent_entry(
            text, max_tokens=setup.max_tokens, temperature=setup.temperature,
            field_name=f"seat {i + 1} agent",
        )
        norm = text.strip()
        if norm not in by_text:
            name = _slug(norm)
            while name in agents:
                name += "_"
            by_text[norm] = name
            agents[name] = entry
        names.append(by_text[norm])
    experiment: dict[str, Any] = {"game": setup.game, "mechanism": setup.mechanism}
    from coop_tui.mechanisms import mechanism_class

    mech_cls = mechanism_class(setup.mechanism)
    pooled = getattr(mech_cls, "pooled", False)
    if getattr(mech_cls, "seats_are_players", False):
        names = _fill_players(setup, mech_cls, names, agents)
    if len(set(names)) == 1:
        experiment["matchup"] = "self"
        experiment["agents"] = [names[0]]
    elif pooled and not getattr(mech_cls, "seats_are_players", False):
        # a population mechanism (Reputation) fills its population from the seats' agents
        # in turn, however many seats the form shows
        experiment["matchup"] = "cross"
        experiment["agents"] = list(dict.fromkeys(names))
    else:
        experiment["matchup"] = [names]
        experiment["agents"] = list(dict.fromkeys(names))
    for key, value in setup.params.items():
        if value is not None:
            experiment[key] = value
    return {
        "name": setup.name,
        "seed": setup.seed,
        "samples": setup.samples,
        "concurrency": max(2, len(setup.seats)),
        "max_attempts": setup.max_attempts,
        "agents": agents,
        "experiments": [experiment],
    }


def _fill_players(setup: MatchSetup, mech_cls: Any, names: list[str],
                  agents: dict[str, dict[str, Any]]) -> list[str]:
    """A team tournament needs one agent per player: the listed seats come first, the
    rest are filled in turn from the listed agents that are not a person (so a person
    takes one seat). Unreadable parameters leave the list as it is (the sweep loader
    then names the bad field)."""
    try:
        from coop_tui.games import load_game

        params = mech_cls.Params.model_validate({k: v for k, v in setup.params.items() if v is not None})
        need = mech_cls(params).seat_count(load_game(setup.game))
    except Exception:
        return names
    pool = [n for n in names if not agents[n].get("human")] or names
    return names[:need] + [pool[i % len(pool)] for i in range(max(0, need - len(names)))]


def build_setup_sweep(setup: MatchSetup, *, check_keys: bool = True) -> Sweep:
    """Validate a setup through the sweep loader; errors name the seat or parameter."""
    from coop_tui.spec import SpecError, build_sweep

    data = setup_to_sweep(setup)
    try:
        return build_sweep(data, check_keys=check_keys)
    except SpecError as exc:
        raise _friendly(exc, data) from None


def _friendly(exc: SpecError, data: dict[str, Any]) -> SpecError:
    """Map sweep field paths (agents.x.model, experiments[0].y) to the setup form's names."""
    name = exc.field
    if name.startswith("experiments[0]."):
        name = name[len("experiments[0]."):]
        if name == "matchup":
            name = "seats"
    elif name.startswith("experiments[0]"):
        name = name[len("experiments[0]"):] or "experiment"
    elif name.startswith("agents."):
        agent = name.split(".")[1]
        exp = data["experiments"][0]
        seats = exp["matchup"][0] if isinstance(exp["matchup"], list) else None
        if seats is None:
            name = "agent (every seat)"
        else:
            nums = [str(i + 1) for i, n in enumerate(seats) if n == agent]
            name = f"seat {'/'.join(nums)} agent"
    return SpecError(name, exc.message)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def sweep_toml(data: dict[str, Any]) -> str:
    """A sweep dict as TOML (the subset sweep files use: scalars, lists, tables)."""
    lines = ["# Written by the coop-tui setup screen; run it with coop-tui --batch <this file>"]
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
    for key, value in data.items():
        if key not in tables and key not in arrays and value is not None:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, table in tables.items():
        for sub, entry in table.items():
            lines.append("")
            lines.append(f"[{_toml_key(key)}.{_toml_key(sub)}]")
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in entry.items() if v is not None)
    for key, items in arrays.items():
        for item in items:
            lines.append("")
            lines.append(f"[[{_toml_key(key)}]]")
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in item.items() if v is not None)
    return "\n".join(lines) + "\n"


class _Preview(Exception):
    """Raised by a probe agent once it has seen its request."""


class _ProbeAgent:
    """Stands in a seat only to capture the first request the mechanism builds for it."""

    def __init__(self, name: str, kind: str, style: str, seen: dict[int, list[Message]]) -> None:
        self.name, self.kind, self.style = name, kind, style
        self.spec: dict[str, Any] = {"probe": name}
        self._seen = seen

    async def reply(self, request: DecisionRequest, messages: list[Message], sink: Any) -> Any:
        self._seen.setdefault(request.seat, [dict(m) for m in messages])
        raise _Preview()


async def preview_prompts(sweep: Sweep) -> dict[int, list[Message]]:
    """The exact messages each seat receives first, by running the mechanism with probes.

    The mechanism builds its real requests (twist, labels, answer instructions in each
    agent's style); the probes record them and end the match before anything is sent.
    """
    from coop_tui.prompts import PromptRenderer
    from coop_tui.sweep import _templates, play_cell

    cell = sweep.cells[0]
    seen: dict[int, list[Message]] = {}
    agents = {}
    for name in set(cell.seats):
        spec = sweep.spec.agents[name]
        kind = spec.kind
        style = spec.style if kind in ("llm", "local") else "direct"
        agents[name] = _ProbeAgent(name, kind, style, seen)
    await play_cell(
        cell, 0, run_id="preview", sweep=sweep, agents=agents, bus=EventBus(), store=None,
        renderer=PromptRenderer(_templates(sweep)),
    )
    return dict(sorted(seen.items()))


def prompt_text(messages: Sequence[Message]) -> str:
    """Messages as one readable block (roles shown only when there is more than one)."""
    if len(messages) == 1:
        return messages[0].get("content", "")
    return "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" for m in messages)


def _human_choice(raw: str, labels: Sequence[str]) -> str:
    """A typed action number or label as a choice answer; JSON is passed on as typed."""
    if raw.startswith("{"):
        return raw
    upper = [lab.upper() for lab in labels]
    if raw.isdigit() and int(raw) < len(labels):
        return json.dumps({"choice": labels[int(raw)]})
    if raw.upper() in upper:
        return json.dumps({"choice": labels[upper.index(raw.upper())]})
    raise ValueError(
        f"choose one action: a number 0 to {len(labels) - 1} or one of {', '.join(labels)}"
    )


_LEAVE_WORDS = {"leave": True, "stay": False}


def _human_message(raw: str, options: dict[str, Any]) -> str:
    """A typed talk message as the answer the parser reads: the text itself when public;
    ``2: let's both cooperate`` (the recipient's number first) when private."""
    if not raw:
        raise ValueError("type a message (or a few words) to send")
    if options.get("talk") != "private" or raw.startswith("{"):
        return json.dumps({"message": raw})
    number, sep, message = raw.partition(":")
    allowed = [int(x) for x in options.get("to") or ()]
    if not sep or not number.strip().isdigit() or int(number) not in allowed or not message.strip():
        raise ValueError("type the player's number, a colon and your message, e.g. "
                         f"{allowed[0] if allowed else 2}: let's both cooperate")
    return json.dumps({"to": int(number), "message": message.strip()})


def human_answer(
    text: str, labels: Sequence[str], kind: str = "mixed", *, ask_leave: bool = False,
    options: dict[str, Any] | None = None,
) -> str:
    """A human's typed move as the JSON answer the parser expects.

    ``0`` / ``1`` / ``A1`` pick a pure action; ``A0=70 A1=30`` (or ``A0:70, A1:30``) and
    JSON give a mixed strategy. Raises ValueError with a message to show. Other answer
    kinds (a mediator design, votes, a signature, a contract) are passed on as typed: the
    same parser as for models checks them, and a bad one is asked again with the reason.

    ``ask_leave`` (the super-additive cooperation paper's move and keep-playing choice in one answer): the move ends
    with the word ``leave`` or ``stay`` (``0 stay``, ``A1 leave``, ``A0=70 A1=30 stay``),
    which becomes the answer's ``"leave"``; JSON is passed on as typed.
    """
    raw = text.strip()
    if kind == "text" and (options or {}).get("talk"):
        return _human_message(raw, options or {})
    if ask_leave and kind in ("mixed", "choice") and not raw.startswith("{"):
        move, _, word = raw.rpartition(" ")
        if word.casefold() not in _LEAVE_WORDS or not move.strip():
            raise ValueError("type your move, then leave or stay (for example: 0 stay)")
        answer = json.loads(human_answer(move, labels, kind))
        return json.dumps({**answer, "leave": _LEAVE_WORDS[word.casefold()]})
    if kind == "choice":
        return _human_choice(raw, labels)
    if kind != "mixed":
        if not raw:
            raise ValueError("type your answer in the format the prompt shows")
        return raw
    if not raw:
        raise ValueError("type an action number or percentages such as A0=70 A1=30")
    upper = [lab.upper() for lab in labels]
    if raw.isdigit() or raw.upper() in upper:
        idx = int(raw) if raw.isdigit() else upper.index(raw.upper())
        if idx >= len(labels):
            raise ValueError(f"there is no action {raw}; choose 0 to {len(labels) - 1}")
        return json.dumps({lab: 100 if i == idx else 0 for i, lab in enumerate(labels)})
    if raw.startswith("{"):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError("give one JSON object such as {\"A0\": 70, \"A1\": 30}")
        pairs = list(obj.items())
    else:
        pairs = re.findall(r"([A-Za-z]\w*)\s*[=:]\s*(-?\d+(?:\.\d+)?)", raw)
        if not pairs:
            raise ValueError("write percentages as A0=70 A1=30 (or press a number key)")
    dist: dict[str, float] = {}
    for key, value in pairs:
        if str(key).upper() not in upper:
            raise ValueError(f"{key} is not one of your actions ({', '.join(labels)})")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key} needs a number, got {value!r}") from None
        if number < 0:
            raise ValueError(f"{key} is negative")
        dist[labels[upper.index(str(key).upper())]] = number
    total = sum(dist.values())
    if abs(total - 100) > 1e-9:
        raise ValueError(f"the percentages add up to {total:g}; they must add up to 100")
    answer: dict[str, float | int] = {}
    for lab in labels:
        value = dist.get(lab, 0.0)
        answer[lab] = int(value) if float(value).is_integer() else value
    return json.dumps(answer)


# ====================================================================== sessions
class Session:
    """What the live screen needs from anything that produces match events."""

    kind = "session"

    def __init__(self) -> None:
        self.bus = EventBus()
        self.run_id: str | None = None
        self.match_id: str | None = None
        self.status = "idle"
        """idle / running / paused / done / failed / stopped"""
        self.error: str | None = None
        self.title = ""
        self.seat_names: list[str] = []
        self.seat_kinds: list[str] = []
        self.game: Any = None
        self.mechanism = ""
        self.phases: tuple[str, ...] = ("play",)
        self.condition: dict[str, Any] = {}
        self._pause = asyncio.Event()
        self._pause.set()
        self._stopping = False
        self._task: asyncio.Task[Any] | None = None
        self.store: Store | None = None
        self.bus.subscribe(self._track)

    def decision_id(self, cache_key: str | None, decision: Any = None) -> int | None:
        """The stored row id of a decision (the inspector opens decisions by id); strategy
        decisions have no cache key and are found by match, round, phase and seat."""
        if self.store is None:
            return None
        if cache_key is None and decision is not None:
            return self.store.decision_id_of(decision)
        row = self.store.db.execute(
            "select id from decisions where cache_key = ?", [cache_key]
        ).fetchone()
        return None if row is None else int(row[0])

    # ------------------------------------------------------------ state
    def _track(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
        elif isinstance(event, MatchStarted):
            self.match_id = event.match_id
            self.run_id = event.run_id or self.run_id
            # each grid point has its own condition (the game is in the title already)
            self.condition = {k: v for k, v in event.condition.items() if k != "game"}
        elif isinstance(event, RunDone):
            self.run_id = event.run_id

    @property
    def paused(self) -> bool:
        return not self._pause.is_set()

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "stopped")

    def pause(self) -> None:
        if not self.finished:
            self._pause.clear()
            self.status = "paused"

    def resume(self) -> None:
        self._pause.set()
        if self.status == "paused":
            self.status = "running"

    def toggle_pause(self) -> bool:
        """Pause or resume; returns True when now paused."""
        if self.paused:
            self.resume()
        else:
            self.pause()
        return self.paused

    def stop(self) -> None:
        self._stopping = True
        self._pause.set()

    async def run(self) -> None:
        raise NotImplementedError


class MatchSession(Session):
    """Plays one setup (usually one match) through ``run_sweep`` with the store attached."""

    kind = "interactive"

    def __init__(self, store: Store, setup: MatchSetup | Sweep, *, run_kind: str = "interactive",
                 stop_grace: float = 3.0, run_id: str | None = None) -> None:
        super().__init__()
        self.fixed_run_id = run_id
        from coop_tui.spec import Sweep, cell_game

        self.store = store
        self.sweep = setup if isinstance(setup, Sweep) else build_setup_sweep(setup)
        self.run_kind = run_kind
        self.stop_grace = stop_grace
        # the widest grid point sets the panes: a population axis may grow later matches
        cell = max(self.sweep.cells, key=lambda c: len(c.seats))
        self.cell = cell
        self.game = cell_game(cell, self.sweep.source.parent if self.sweep.source else None)
        self.seat_names = [self._display(n) for n in cell.seats]
        self.seat_kinds = [self.sweep.spec.agents[n].kind for n in cell.seats]
        self.mechanism = cell.mechanism
        from coop_tui.mechanisms import mechanism_class

        mech_cls = mechanism_class(cell.mechanism)
        # what defines the condition (as stored per match), not every parameter
        self.condition = mech_cls(mech_cls.Params.model_validate(cell.mechanism_params)).condition()
        self.phases = tuple(mech_cls.phases_for({**self.condition, "talk": cell.talk}))
        self.title = f"{self.game.title} · {cell.mechanism}"
        self.matches_total = self.sweep.total_matches
        models = {n for n, a in self.sweep.spec.agents.items() if a.kind in ("llm", "local")}
        self.clock = CallClock(0, self.matches_total, models)
        """Model calls answered, in flight and left, and the time left: the estimator of the
        batch progress line (:mod:`coop_tui.eta`), fed by this session's events. Its
        estimate of the calls is made when the session starts (see :meth:`run`)."""
        self.bus.subscribe(self._time)
        self._stop_event = asyncio.Event()
        self._contexts: list[Any] = []
        self._human_futures: dict[int, asyncio.Future[str]] = {}
        self._force_cancelled = False
        self._closed: set[str] = set()
        self.bus.subscribe(self._on_done)

    def _time(self, event: Event) -> None:
        self.clock.observe(event, time.monotonic())

    def progress(self) -> str:
        """``eta 0:01:10  model calls 3/12, 1 in flight``: what the live screen's status line
        and the runs screen show for a run this app plays."""
        return self.clock.describe(time.monotonic())

    def _display(self, name: str) -> str:
        a = self.sweep.spec.agents[name]
        if a.strategy:
            return a.strategy
        if a.human:
            return HUMAN
        return a.model or name

    def _on_done(self, event: Event) -> None:
        if isinstance(event, MatchDone):
            self._closed.add(event.match_id)
        elif isinstance(event, RunDone):
            # a run the user stopped is "stopped", whatever its last match counted as
            self.status = "stopped" if self._stopping else event.status
            self.error = "stopped by the user" if self._stopping else event.error

    @property
    def has_human(self) -> bool:
        return HUMAN in self.seat_kinds

    @property
    def waiting_for(self) -> list[int]:
        """Human seats whose answer is awaited."""
        return [s for s, f in self._human_futures.items() if not f.done()]

    def _ask_human(self, request: DecisionRequest, future: asyncio.Future[str]) -> None:
        self._human_futures[request.seat] = future
        self.bus.emit(HumanTurn(self.match_id or "", request.seat, request))

    def answer(self, seat: int, text: str) -> None:
        """The UI's answer for a waiting human seat (raw JSON, see :func:`human_answer`)."""
        future = self._human_futures.get(seat)
        if future is None or future.done():
            raise RuntimeError(f"seat {seat + 1} is not waiting for an answer")
        future.set_result(text)

    def human_request_pending(self, seat: int) -> bool:
        f = self._human_futures.get(seat)
        return f is not None and not f.done()

    def stop(self) -> None:
        """Stop the match: no new decision starts; a streaming one gets a grace period."""
        from coop_tui.engine import MatchStopped

        if self.finished or self._stopping:
            return
        super().stop()
        self._stop_event.set()
        for ctx in self._contexts:
            ctx.stopped = True
        for future in self._human_futures.values():
            if not future.done():
                future.set_exception(MatchStopped())
        if self._task is not None and not self._task.done():
            asyncio.get_running_loop().call_later(self.stop_grace, self._force_cancel)

    def _force_cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._force_cancelled = True
            self._task.cancel()

    async def run(self) -> None:
        from coop_tui.runner import estimate
        from coop_tui.sweep import build_agents, run_sweep

        self._task = asyncio.current_task()
        self.clock.calls_total = estimate(self.sweep)["model_calls"]
        self.status = "paused" if self.paused else "running"
        names = {n for cell in self.sweep.cells for n in cell.seats}
        agents = build_agents(self.sweep, names)
        for agent in agents.values():
            if getattr(agent, "kind", "") == HUMAN and hasattr(agent, "connect"):
                agent.connect(self._ask_human)
        try:
            summary = await run_sweep(
                self.sweep, self.store, bus=self.bus, kind=self.run_kind, stop=self._stop_event,
                run_id=self.fixed_run_id,
                agents=agents, pause=self._pause, on_context=self._contexts.append,
                match_workers=1,
            )
        except asyncio.CancelledError:
            # Stopped mid-answer (grace period over) or the screen/app went away: close the
            # open match in the store too (the store is still subscribed on this path).
            if self.match_id is not None and self.match_id not in self._closed:
                self.bus.emit(MatchDone(self.match_id, (), status="stopped", error="stopped by the user"))
            self.status = "stopped"
            if not self._force_cancelled:
                raise
            return
        except Exception as exc:
            self.status, self.error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        self.status = "stopped" if self._stopping else summary.status
        self.error = self.error or ("; ".join(summary.errors) or None)


class ReplaySession(Session):
    """Re-emits a stored match as live events: same text, same outcomes, paced.

    ``speed`` scales the original pace (each answer takes its recorded latency, capped at
    a few seconds); ``speed <= 0`` replays without delays.
    """

    kind = "replay"
    CHUNK = 8
    FRAME = 1 / 60

    def __init__(self, store: Store, match_id: str, speed: float = 1.0) -> None:
        super().__init__()
        row = store.match(match_id) if match_id else None  # with its game spec resolved
        self.store = store
        self.match = dict(row)
        self.match_id = match_id
        self.run_id = self.match["run_id"]
        self.speed = speed
        self.seats = store.seats(match_id)
        self.seat_names = [s["agent"] for s in self.seats]
        self.seat_kinds = [s.get("agent_kind") or "" for s in self.seats]
        spec = json.loads(self.match["game_spec"]) if self.match.get("game_spec") else None
        self.game = _game_from_spec(spec, self.match["game"])
        self.mechanism = self.match["mechanism"]
        self.condition = json.loads(self.match["condition"] or "{}")
        try:
            from coop_tui.mechanisms import mechanism_class

            self.phases = tuple(mechanism_class(self.mechanism).phases_for(self.condition))
        except Exception:
            self.phases = ("play",)
        self.title = f"{getattr(self.game, 'title', self.match['game'])} · {self.mechanism}"

    async def _wait(self, seconds: float) -> None:
        from coop_tui.engine import MatchStopped

        if self._stopping:
            raise MatchStopped()
        await self._pause.wait()
        if self._stopping:
            raise MatchStopped()
        await asyncio.sleep(seconds if self.speed > 0 else 0)

    async def _stream(self, seat: int, text: str, duration: float, reasoning: bool) -> None:
        if not text:
            return
        chunks = [text[i:i + self.CHUNK] for i in range(0, len(text), self.CHUNK)]
        per = duration / len(chunks) if self.speed > 0 else 0.0
        group = max(1, int(self.FRAME / per)) if per > 0 else len(chunks)
        cls = ReasoningDelta if reasoning else TextDelta
        for i in range(0, len(chunks), group):
            self.bus.emit(cls(self.match_id or "", seat, "".join(chunks[i:i + group])))
            await self._wait(per * group)

    async def _replay_decision(self, d: Any) -> None:
        mid = self.match_id or ""
        pace = min(max(d.latency_ms / 1000.0, 0.3), 6.0) / self.speed if self.speed > 0 else 0.0
        for n, attempt in enumerate(d.retries, start=1):
            self.bus.emit(DecisionStarted(mid, d.seat, d.round, d.phase, n, tuple(attempt.messages), d.agent))
            await self._stream(d.seat, attempt.reasoning, pace / 3, True)
            await self._stream(d.seat, attempt.response, pace, False)
            self.bus.emit(AnswerRejected(mid, d.seat, d.round, d.phase, n, attempt.error))
        if d.valid or not d.retries:
            self.bus.emit(
                DecisionStarted(mid, d.seat, d.round, d.phase, len(d.retries) + 1, tuple(d.prompt), d.agent)
            )
            await self._stream(d.seat, d.reasoning, pace / 3, True)
            await self._stream(d.seat, d.response, pace, False)
        self.bus.emit(DecisionDone(d))

    async def _replay_stored(self, decisions: list[Any]) -> set[int]:
        """Re-emit stored ``decisions`` with the rounds (and phases) they complete, in
        play order; the rounds whose ``RoundDone`` was emitted."""
        mid = self.match_id or ""
        rounds: dict[int, list[dict[str, Any]]] = {}
        for r in self.store.rounds(mid):
            rounds.setdefault(r["round"], []).append(r)
        phases = {
            (p["round"], p["phase"]): p
            for p in self.store.db["phases"].rows_where("match_id = ?", [mid])
        }
        groups: list[list[Any]] = []
        for d in decisions:
            if groups and (groups[-1][0].round, groups[-1][0].phase) == (d.round, d.phase):
                groups[-1].append(d)
            else:
                groups.append([d])
        played = {d.round for d in decisions if d.phase == "play"}
        done: set[int] = set()
        for i, group in enumerate(groups):
            await asyncio.gather(*(self._replay_decision(d) for d in group))
            rnd, phase = group[0].round, group[0].phase
            # a move-by-move game (strategic personalities) names its phases by move: its round is
            # complete after the round's last move
            last_of_round = i + 1 == len(groups) or groups[i + 1][0].round != rnd
            if rnd in rounds and (phase == "play" or (last_of_round and rnd not in played)):
                rows = sorted(rounds.pop(rnd), key=lambda r: r["seat"])
                info = json.loads(rows[0]["info"] or "{}") if rows[0].get("info") else {}
                self.bus.emit(
                    RoundDone(
                        mid, rnd, tuple(r["action"] for r in rows), tuple(r["payoff"] for r in rows),
                        tuple(r["seat"] for r in rows), info,
                    )
                )
                done.add(rnd)
            elif (rnd, phase) in phases:
                p = phases.pop((rnd, phase))
                self.bus.emit(PhaseDone(mid, rnd, phase, json.loads(p["info"] or "{}")))
            await self._wait(0.05 / self.speed if self.speed > 0 else 0)
        return done

    async def run(self) -> None:
        from coop_tui.engine import MatchStopped

        self._task = asyncio.current_task()
        self.status = "paused" if self.paused else "running"
        mid = self.match_id or ""
        m = self.match
        self.bus.emit(
            MatchStarted(
                run_id=m["run_id"], match_id=mid, experiment=m["experiment"] or 0, game=m["game"],
                mechanism=m["mechanism"], seats=tuple(self.seat_names), condition=self.condition,
                sample=m["sample"] or 0, seed=m["seed"] or 0, info={"replay": True},
            )
        )
        try:
            await self._replay_stored(self.store.decisions(mid))
        except (MatchStopped, asyncio.CancelledError):
            self.status = "stopped"
            self.bus.emit(MatchDone(mid, (), status="stopped", error="replay stopped"))
            return
        payoffs = tuple(json.loads(m["payoffs"])) if m.get("payoffs") else ()
        self.bus.emit(MatchDone(mid, payoffs, status=m["status"] or "done", error=m.get("error")))
        self.status = "done"


def _game_from_spec(spec: dict[str, Any] | None, key: str) -> Any:
    """Rebuild the stored game (payoffs as recorded), falling back to the registry."""
    if spec:
        import numpy as np

        from coop_tui.games.base import Game

        try:
            return Game(
                key=spec.get("key", key),
                title=spec.get("title", key),
                description="",
                action_names=tuple(tuple(a) for a in spec["action_names"]),
                payoffs=np.asarray(spec["payoffs"], dtype=float),
                cooperative=tuple(frozenset(c) for c in spec.get("cooperative", [])),
                defect=tuple(spec.get("defect", [])),
                params=spec.get("params", {}),
            )
        except Exception:
            pass
    try:
        from coop_tui.games import load_game

        return load_game(key)
    except Exception:
        return None


def play_setup(game: str, opponent: str, rounds: int, mechanism: str | None,
               talk: str = "none") -> MatchSetup:
    """``coop-tui play``: seat 1 is the human, seat 2 the opponent (more seats copy it);
    ``talk`` public / private: the person types a message before each move."""
    from coop_tui.games import load_game

    mech = mechanism or ("repetition" if rounds > 1 else "none")
    params: dict[str, Any] = {}
    if mech == "repetition":
        # the screen shows "Round 1/3": the prompt must not speak of a chance of more
        # rounds, so the player hears the known horizon (the strategic personalities paper's wording)
        params = {"rounds": rounds, "horizon": "known"}
    try:
        loaded = load_game(game)
        n = loaded.n_players
    except Exception:
        loaded, n = None, 2
    from coop_tui.games.kinds import ProtocolGame

    if isinstance(loaded, ProtocolGame) and mechanism is None:
        # the strategic personalities paper's move-by-move games count their own rounds under mechanism "none"
        mech, params = "none", {"game_params": {"rounds": rounds}}
    if talk != "none":
        params["talk"] = talk
    return MatchSetup(
        seats=[HUMAN] + [opponent] * (n - 1), game=game, mechanism=mech, params=params,
        name="play", max_tokens=None,
    )


__all__ = [
    "HumanTurn",
    "MatchSession",
    "MatchSetup",
    "ReplaySession",
    "Session",
    "agent_entry",
    "build_setup_sweep",
    "human_answer",
    "play_setup",
    "preview_prompts",
    "prompt_text",
    "setup_to_sweep",
    "sweep_toml",
]


class WatchSession(ReplaySession):
    """A match another process is playing, for the live screen's panes (``coop-tui watch``).

    What the match did before the watcher opened it is replayed from the database at once;
    then the watch screen hands on the match's published events (:meth:`feed`) as they
    arrive. Events that arrive during the replay wait, and a decision the replay already
    showed is not shown twice. Stopping only closes the view: the sweep plays on.
    """

    kind = "watch"

    def __init__(self, store: Store, match_id: str) -> None:
        super().__init__(store, match_id, speed=0)
        self._waiting: list[Event] | None = []
        """Events fed during the replay (None once it is over: events go straight on)."""
        self._shown: set[tuple[int, str, int]] = set()
        self._asking: set[int] = set()
        """Seats whose current question this view has seen asked (its own block)."""
        self._last_round: dict[int, int] = {}
        self._rounds_shown: set[int] = set()
        """Rounds whose end this view has shown (from the database or the stream)."""
        self.replayed = asyncio.Event()
        """Set once what the database held is shown and fed events go straight on."""
        self._over = asyncio.Event()

    def feed(self, event: Event) -> None:
        """One published event of this match."""
        if self._waiting is not None:
            self._waiting.append(event)
            return
        if isinstance(event, DecisionDone):
            key = (event.decision.round, event.decision.phase, event.decision.seat)
            self._asking.discard(event.decision.seat)
            if key in self._shown:
                return
        elif isinstance(event, RoundDone):
            if event.round in self._rounds_shown:  # replayed from the database already
                return
            self._rounds_shown.add(event.round)
        elif isinstance(event, DecisionStarted):
            self._asking.add(event.seat)
        elif isinstance(event, TextDelta | ReasoningDelta) and event.seat not in self._asking:
            # asked before this view opened: the answer gets a block of its own (its first
            # words streamed before that are not stored anywhere)
            self._asking.add(event.seat)
            if 0 <= event.seat < len(self.seat_names):
                self.bus.emit(DecisionStarted(
                    self.match_id or "", event.seat, self._last_round.get(event.seat, 0) + 1,
                    "play", 1, (), self.seat_names[event.seat]))
        self.bus.emit(event)
        if isinstance(event, MatchDone):
            self.status = event.status if event.status in ("done", "failed", "stopped") else "done"
            self.error = event.error
            self._over.set()

    def stop(self) -> None:
        super().stop()
        if not self.finished:
            self.status = "stopped"
        self._over.set()

    async def run(self) -> None:
        self._task = asyncio.current_task()
        self.status = "running"
        m = self.match
        self.bus.emit(
            MatchStarted(
                run_id=m["run_id"], match_id=self.match_id or "", experiment=m["experiment"] or 0,
                game=m["game"], mechanism=m["mechanism"], seats=tuple(self.seat_names),
                condition=self.condition, sample=m["sample"] or 0, seed=m["seed"] or 0,
                info={"watch": True},
            )
        )
        decisions = self.store.decisions(self.match_id or "") if self.store else []
        for d in decisions:
            self._shown.add((d.round, d.phase, d.seat))
            self._last_round[d.seat] = max(self._last_round.get(d.seat, 0), d.round)
        # the rounds too: the totals and the round timeline start at round 1, not here
        self._rounds_shown = await self._replay_stored(decisions)
        waiting, self._waiting = self._waiting or [], None
        for event in waiting:
            self.feed(event)
        ended = self.store.match(self.match_id or "") if self.store else None
        if ended and ended.get("status") not in (None, "running") and not self._over.is_set():
            # it ended before this view opened: its end is in the database, not the stream
            payoffs = tuple(json.loads(ended["payoffs"])) if ended.get("payoffs") else ()
            self.feed(MatchDone(self.match_id or "", payoffs, status=ended["status"],
                                error=ended.get("error")))
        self.replayed.set()
        await self._over.wait()
