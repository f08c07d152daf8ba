"""Before the first match: is every server the sweep's agents talk to there at all?

Why: a sweep against a server that is not running would otherwise play every match into
the same refused connection, each after its retries, and group the failures under a
misleading label. One cheap request per distinct endpoint (``GET {api_base}/models``, no
key sent, answered or not within :data:`~coop_tui.agents.transport.PROBE_BUDGET`) tells
before anything is written.

What is probed: every ``api_base`` of an LLM agent (each server of a list), whatever the
transport (litellm-routed agents with an ``api_base`` too), and the local server litellm
uses by default for Ollama models without one. Hosted providers without ``api_base`` are
not probed: no network is touched for them. Any HTTP answer, even 401 or 404, counts as
reachable; only the absence of an answer (refused, DNS, TLS, timeout ...) fails.

An agent none of whose servers answers is an error (exit 2, naming the agent, the URL and
the cause); a dry run probes too (it is cheap) but only warns, since its estimate stands.
An agent with several servers of which some answer runs: the dead ones are named in a
warning and the endpoint pool keeps requests off them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from coop_tui.agents.endpoints import public_url
from coop_tui.agents.transport import PROBE_BUDGET, ProbeResult, implicit_base, probe_all
from coop_tui.spec import SpecError, Sweep


@dataclass
class AgentEndpoints:
    """The servers one agent will talk to, and where that list comes from."""

    agent: str
    model: str
    urls: list[str]
    implicit: bool = False
    """True when the URL is litellm's default for the provider, not the sweep's api_base."""


@dataclass
class Preflight:
    """The probes' outcome: per URL its result, and what to warn about."""

    agents: list[AgentEndpoints]
    results: dict[str, ProbeResult] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def probed(self) -> int:
        return len(self.results)


def endpoints_of(sweep: Sweep) -> list[AgentEndpoints]:
    """Every LLM agent seated in the sweep with the servers it will send requests to."""
    seated = {name for cell in sweep.cells for name in cell.seats}
    out: list[AgentEndpoints] = []
    for name in sorted(seated):
        spec = sweep.spec.agents[name]
        if spec.kind != "llm" or not spec.model:
            continue
        base = spec.api_base
        urls = [base] if isinstance(base, str) else list(base or [])
        if urls:
            out.append(AgentEndpoints(name, spec.model, urls))
            continue
        implied = implicit_base(spec.model)
        if implied:
            out.append(AgentEndpoints(name, spec.model, [implied], implicit=True))
    return out


def check(sweep: Sweep, *, budget: float = PROBE_BUDGET, strict: bool = True) -> Preflight:
    """Probe every distinct endpoint once; raise :class:`SpecError` (exit 2) for an agent
    none of whose servers answers (``strict=False``, as in a dry run: say it among the
    warnings instead). Runs its own short event loop (call it outside one)."""
    agents = endpoints_of(sweep)
    flight = Preflight(agents)
    urls = sorted({u for a in agents for u in a.urls})
    if not urls:
        return flight
    flight.results = asyncio.run(probe_all(urls, budget=budget))
    stranded: list[tuple[AgentEndpoints, str]] = []
    for entry in agents:
        dead = [u for u in entry.urls if flight.results[u].error is not None]
        if not dead:
            continue
        if len(dead) < len(entry.urls):
            for url in dead:
                flight.warnings.append(
                    f"agent {entry.agent!r}: {public_url(url)} did not answer "
                    f"({flight.results[url].error}); its requests go to the other servers"
                )
            continue
        stranded.append((entry, dead[0]))
    if stranded:
        entry, url = stranded[0]
        field, message = _unreachable(entry, url, flight.results[url])
        others = [e.agent for e, _ in stranded[1:]]
        if others:
            message += f" (agents {', '.join(map(repr, others))} cannot reach their servers either)"
        if strict:
            raise SpecError(field, message)
        flight.warnings.append(f"a run would stop here: {field}: {message}")
    return flight


def _unreachable(entry: AgentEndpoints, url: str, result: ProbeResult) -> tuple[str, str]:
    where = public_url(url)
    if entry.implicit:
        return (
            f"agents.{entry.agent}.model",
            f"agent {entry.agent!r} ({entry.model}) goes to {where}, litellm's default server "
            f"for this provider, and nothing answered there: {result.error}. Start the "
            "server (for Ollama: `ollama serve`), or set api_base (or OLLAMA_API_BASE) to "
            "where it runs; nothing was run or written",
        )
    several = "" if len(entry.urls) == 1 else f" (none of its {len(entry.urls)} servers answered)"
    return (
        f"agents.{entry.agent}.api_base",
        f"agent {entry.agent!r} ({entry.model}): {where} is unreachable{several}: "
        f"{result.error}. Start the server or fix api_base; nothing was run or written",
    )


def describe(flight: Preflight) -> str | None:
    """One line for the batch header: what was probed and how it went."""
    if not flight.probed:
        return None
    answered = sum(1 for r in flight.results.values() if r.error is None)
    return (f"endpoints: {answered} of {flight.probed} answered the preflight "
            f"(GET /models once each, before any match)")
