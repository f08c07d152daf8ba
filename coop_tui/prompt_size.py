"""Prompt sizes before a sweep runs: the token bound and the cost estimate.

A prompt's size depends on the game (a 12-player table is long), the mechanism (history,
ballots, contracts) and the agent's style, so it is measured, not assumed: each distinct
grid point's mechanism builds its real first request for every model seat, through the
same ``play_cell`` as a run, with probe agents that record the messages and stop the
match before anything is sent. Tokens are estimated as characters / 4 (English text in
common tokenizers). Probes answer the simplest valid way (an even mix, the first option),
so a repeated game is rendered round after round and its later, longer prompts are
measured too (within a budget of requests); the check uses the longest, the cost the
mean. A request a probe cannot answer (a plan, a vote) ends its match there.

The model's context window comes from litellm's bundled price map (the JSON file, read
directly: importing litellm costs seconds).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from coop_tui.agents.llm import price_map
from coop_tui.agents.local import N_CTX
from coop_tui.decisions import AgentReply
from coop_tui.engine import stable_hash
from coop_tui.errors import SpecError
from coop_tui.events import EventBus
from coop_tui.prompts import (
    CHARS_PER_TOKEN,  # below the stages that size prompts; importable here
    PromptRenderer,
)
from coop_tui.spec import Sweep
from coop_tui.sweep import _templates, play_cell

MAX_PROBES = 200
"""Distinct grid points rendered at most; beyond that a spread sample stands for the rest."""
PROBE_REQUESTS = 20_000
"""Requests the probes render in all (the whole match of each probed grid point while
this lasts: prompts grow with the history a repeated game shows)."""


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return -(-chars // CHARS_PER_TOKEN)


@dataclass
class PromptSizes:
    """Estimated input tokens per probed grid point and seat: of the first request, the
    mean and the largest of the requests the probe rendered (the whole match where the
    probe budget allowed and the probe could answer every request)."""

    by_cell: dict[int, dict[int, int]] = field(default_factory=dict)
    mean_by_cell: dict[int, dict[int, float]] = field(default_factory=dict)
    largest_by_cell: dict[int, dict[int, tuple[int, int]]] = field(default_factory=dict)
    """(tokens, the seat's request number it was) of the longest request."""
    first_messages: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Per probed grid point, the messages of the first request its first model seat got
    (``--dry-run`` shows them where a cell is worded by a source or folder)."""
    probed: int = 0
    distinct: int = 0

    def for_seat(self, cell_index: int, seat: int, agent_mean: float | None) -> float | None:
        seats = self.mean_by_cell.get(cell_index) or self.by_cell.get(cell_index)
        if seats and seat in seats:
            return float(seats[seat])
        return agent_mean


class _Stop(Exception):
    """Raised by a probe once it has recorded its request."""


class _Probe:
    """Records each request's size and answers it the simplest valid way (an even mix,
    the first option) so the match goes on and later, longer prompts are rendered too;
    a request it cannot answer, or the end of the budget, stops the match."""

    def __init__(self, name: str, kind: str, style: str, seen: dict[int, list[int]],
                 budget: list[int], firsts: dict[int, list[dict[str, Any]]] | None = None) -> None:
        self.name, self.kind, self.style = name, kind, style
        self.spec: dict[str, Any] = {"probe": name}
        self._seen, self._budget = seen, budget
        self._firsts = firsts if firsts is not None else {}

    async def reply(self, request: Any, messages: list[dict[str, Any]], sink: Any) -> Any:
        self._seen.setdefault(request.seat, []).append(estimate_tokens(messages))
        self._firsts.setdefault(request.seat, [dict(m) for m in messages])
        self._budget[0] -= 1
        answer = _simplest_answer(request)
        if answer is None or self._budget[0] <= 0:
            raise _Stop()
        return AgentReply(text=answer)


def _simplest_answer(request: Any) -> str | None:

    labels = list(request.labels)
    if request.kind == "choice" and labels:
        return json.dumps({"choice": labels[0]})
    if request.kind == "mixed" and labels:
        shares = [100 // len(labels)] * len(labels)
        shares[0] += 100 - sum(shares)
        return json.dumps(dict(zip(labels, shares, strict=True)))
    return None


def _signature(sweep: Sweep, index: int) -> str:
    cell = sweep.cells[index]
    styles = [sweep.spec.agents[n].style if sweep.spec.agents[n].kind in ("llm", "local") else "-"
              for n in cell.seats]
    parts = [cell.game, cell.game_params, cell.mechanism, cell.mechanism_params, styles,
             cell.randomize_labels]
    if cell.wording != "ours":  # a source's words are measured (and shown) on their own
        parts.append(cell.wording)
    return stable_hash(parts)


async def measure(sweep: Sweep) -> PromptSizes:
    """Render the first request of every distinct grid point (at most ``MAX_PROBES``)."""
    model_cells = [
        i for i, c in enumerate(sweep.cells)
        if any(sweep.spec.agents[n].kind in ("llm", "local") for n in c.seats)
    ]
    groups: dict[str, list[int]] = {}
    for i in model_cells:
        groups.setdefault(_signature(sweep, i), []).append(i)
    reps = [members[0] for members in groups.values()]
    if len(reps) > MAX_PROBES:
        step = len(reps) / MAX_PROBES
        reps = [reps[int(k * step)] for k in range(MAX_PROBES)]
    sizes = PromptSizes(distinct=len(groups))
    renderer = PromptRenderer(_templates(sweep))
    base = sweep.source.parent if sweep.source else None
    rep_of = {members[0]: members for members in groups.values()}
    budget = [PROBE_REQUESTS]
    for n, i in enumerate(reps):
        cell = sweep.cells[i]
        seen: dict[int, list[int]] = {}
        firsts: dict[int, list[dict[str, Any]]] = {}
        # every probe renders at least its first requests, whatever the others used
        cell_budget = [max(budget[0] // max(len(reps) - n, 1), 2 * len(cell.seats) + 1)]
        agents = {}
        for name in set(cell.seats):
            spec = sweep.spec.agents[name]
            style = spec.style if spec.kind in ("llm", "local") else "direct"
            agents[name] = _Probe(name, spec.kind, style, seen, cell_budget, firsts)
        before = cell_budget[0]
        await play_cell(
            cell, 0, run_id="probe", sweep=sweep, agents=agents, bus=EventBus(), store=None,
            renderer=renderer, base=base, limit_prompts=False,
        )
        budget[0] -= before - cell_budget[0]
        first = {seat: sizes_[0] for seat, sizes_ in seen.items()}
        mean = {seat: sum(sizes_) / len(sizes_) for seat, sizes_ in seen.items()}
        largest = {seat: max((t, k + 1) for k, t in enumerate(sizes_)) for seat, sizes_ in seen.items()}
        for member in rep_of.get(i, [i]):
            sizes.by_cell[member] = first
            sizes.mean_by_cell[member] = mean
            sizes.largest_by_cell[member] = largest
            if firsts:
                sizes.first_messages[member] = firsts[min(firsts)]
        sizes.probed += 1
    return sizes


def measure_sync(sweep: Sweep) -> PromptSizes:
    return asyncio.run(measure(sweep))


def context_window(model: str) -> int | None:
    """Input tokens the model accepts, where litellm's map knows it."""
    parts = model.split("/")
    for name in ("/".join(parts[i:]) for i in range(len(parts))):
        entry = price_map().get(name)
        if isinstance(entry, dict):
            limit = entry.get("max_input_tokens") or entry.get("max_tokens")
            if isinstance(limit, int) and limit > 0:
                return limit
    return None


def _local_window() -> int:
    """The embedded model's context (llama.cpp is not loaded to read it)."""
    return N_CTX


def check_prompt_sizes(sweep: Sweep, sizes: PromptSizes) -> None:
    """Refuse prompts above ``max_prompt_tokens`` or the model's context (SpecError)."""
    limit = sweep.spec.max_prompt_tokens
    for index, seats in sizes.by_cell.items():
        cell = sweep.cells[index]
        largest = sizes.largest_by_cell.get(index, {})
        for seat, first_tokens in seats.items():
            if seat >= len(cell.seats):
                continue
            name = cell.seats[seat]
            agent = sweep.spec.agents[name]
            if agent.kind not in ("llm", "local"):
                continue
            tokens, number = largest.get(seat, (first_tokens, 1))
            which = "first prompt" if number == 1 else f"prompt number {number:,} (prompts grow with the history shown)"
            if tokens > limit:
                raise SpecError(
                    "max_prompt_tokens",
                    f"experiments[{cell.experiment}] ({cell.game} / {cell.mechanism}): the "
                    f"{which} of seat {seat + 1} ({name}) is about {tokens:,} tokens (characters / "
                    f"{CHARS_PER_TOKEN}), more than max_prompt_tokens = {limit:,}; use fewer "
                    "players or a shorter history, or raise max_prompt_tokens",
                )
            window = context_window(agent.model or "") if agent.kind == "llm" else _local_window()
            if window is not None and tokens > window:
                raise SpecError(
                    f"agents.{name}.model",
                    f"the {which} of experiments[{cell.experiment}] ({cell.game} / "
                    f"{cell.mechanism}) is about {tokens:,} tokens, beyond the {window:,}-token "
                    f"context of {agent.model}; use a model with a longer context or a smaller "
                    "game",
                )
