"""The LLM agent against the loopback server, through the real openai and litellm clients.

Every test speaks HTTP to 127.0.0.1; faults are injected by the server, so the retry code
sees the exceptions the real clients raise.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import traceback
from typing import Any

import numpy as np
import pytest

from coop_tui.agents.llm import LLMAgent, ProviderError, choose_transport, cost_for
from coop_tui.decisions import AgentReply, DecisionRequest, SeatView
from coop_tui.games.base import Game
from coop_tui.testing.server import LoopbackServer, last_user_message

SECRET = "sk-test-very-secret-0123456789"
MODELS = {"openai": "openai/loopback", "litellm": "hosted_vllm/loopback"}


class RecordingSink:
    """Collects deltas like the live pane would, clearing the pane on ``restart``."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.pane: list[str] = []
        self.reasoning_deltas: list[str] = []
        self.restarts: list[str] = []

    def text(self, delta: str) -> None:
        self.deltas.append(delta)
        self.pane.append(delta)

    def reasoning(self, delta: str) -> None:
        self.reasoning_deltas.append(delta)

    def restart(self, reason: str) -> None:
        self.restarts.append(reason)
        self.pane.clear()


def _request(prompt: str = "Choose.") -> tuple[DecisionRequest, list[dict[str, str]]]:
    game = Game(
        key="pd",
        title="Prisoner's Dilemma",
        description="",
        action_names=(("Cooperate", "Defect"), ("Cooperate", "Defect")),
        payoffs=np.array([[[3, 3], [0, 5]], [[5, 0], [1, 1]]]),
        cooperative=(frozenset({0}), frozenset({0})),
        defect=(1, 1),
    )
    messages = (
        {"role": "system", "content": "You play a game."},
        {"role": "user", "content": prompt},
    )
    request = DecisionRequest(
        seat=0,
        round=1,
        phase="play",
        kind="mixed",
        messages=messages,
        view=SeatView(game=game, seat=0, round=1),
        labels=("A0", "A1"),
        label_to_action=(0, 1),
    )
    return request, [dict(m) for m in messages]


@pytest.fixture(params=["openai", "litellm"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


def _agent(server: LoopbackServer, transport: str, **kwargs: Any) -> LLMAgent:
    options: dict[str, Any] = {
        "name": "alice",
        "model": MODELS[transport],
        "api_base": server.url,
        "api_key": SECRET,
        "timeout": 5.0,
        "backoff_base": 0.01,
        "transport": transport,
    }
    options.update(kwargs)
    return LLMAgent(**options)


async def _ask(agent: LLMAgent, prompt: str = "Choose.") -> tuple[AgentReply, RecordingSink]:
    sink = RecordingSink()
    request, messages = _request(prompt)
    reply = await agent.reply(request, messages, sink)
    return reply, sink


@pytest.mark.slow
async def test_streams_text_in_order_and_keeps_reasoning_apart(
    loopback: LoopbackServer, transport: str
) -> None:
    answer = 'I weigh both options. Final answer: {"A0": 60, "A1": 40}'
    loopback.configure(answer=answer, reasoning="private chain of thought", chunks=6)
    reply, sink = await _ask(_agent(loopback, transport))
    assert reply.text == answer
    assert "".join(sink.deltas) == answer
    assert len(sink.deltas) >= 3  # streamed, not delivered in one piece
    assert reply.reasoning == "private chain of thought"
    assert "".join(sink.reasoning_deltas) == reply.reasoning
    assert "chain" not in reply.text
    usage = loopback.chat_requests[0].usage
    assert reply.input_tokens == usage["prompt_tokens"]
    assert reply.output_tokens == usage["completion_tokens"]
    assert reply.transport_retries == 0
    assert reply.cost_usd is None  # "loopback" has no price
    assert reply.latency_ms > 0
    body = loopback.chat_requests[0].body
    assert body["stream"] is True
    assert body["messages"][-1] == {"role": "user", "content": "Choose."}


async def test_parameters_reach_the_server(loopback: LoopbackServer, transport: str) -> None:
    agent = _agent(loopback, transport, temperature=0.3, max_tokens=77)
    await _ask(agent)
    body = loopback.chat_requests[0].body
    assert body["model"] == "loopback"
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 77
    assert body["stream_options"] == {"include_usage": True}


async def test_scripted_answers_follow_the_prompt(loopback: LoopbackServer, transport: str) -> None:
    loopback.configure(answer=lambda body: f"echo: {last_user_message(body)}")
    agent = _agent(loopback, transport)
    first, _ = await _ask(agent, "round one")
    second, _ = await _ask(agent, "round two")
    assert (first.text, second.text) == ("echo: round one", "echo: round two")


async def test_missing_usage_is_left_unknown(loopback: LoopbackServer, transport: str) -> None:
    loopback.configure(send_usage=False, answer="no usage here")
    reply, _ = await _ask(
        _agent(loopback, transport, model=f"{MODELS[transport].split('/')[0]}/gpt-4o-mini")
    )
    assert reply.text == "no usage here"
    assert reply.output_tokens is None
    assert reply.input_tokens is None
    assert reply.cost_usd is None


@pytest.mark.parametrize("fault", ["429", "500", "503", "timeout", "drop", "truncate", "malformed"])
async def test_each_fault_is_retried(loopback: LoopbackServer, transport: str, fault: str) -> None:
    answer = "alpha beta gamma delta epsilon zeta"
    loopback.configure(answer=answer, chunks=6, fault_script=[fault], retry_after=0.05, hang=10.0)
    agent = _agent(loopback, transport, timeout=1.0)
    reply, sink = await _ask(agent)
    assert reply.text == answer
    assert reply.transport_retries == 1
    assert [r.fault for r in loopback.chat_requests] == [fault, None]
    assert "".join(sink.pane) == answer
    if fault in ("drop", "truncate", "malformed"):
        # Text had already streamed: the pane was told to start over.
        assert len(sink.restarts) == 1
        assert len("".join(sink.deltas)) > len(answer)
    else:
        assert sink.restarts == []


async def test_retry_after_is_honoured(loopback: LoopbackServer, transport: str) -> None:
    loopback.configure(fault_script=["429"], retry_after=0.3)
    reply, _ = await _ask(_agent(loopback, transport, backoff_base=0.0001))
    first, second = loopback.chat_requests
    assert reply.transport_retries == 1
    assert second.time - first.time >= 0.3


async def test_retries_exhausted_raise_provider_error(
    loopback: LoopbackServer, transport: str
) -> None:
    loopback.configure(fault_script=["500", "500", "500", "500"])
    agent = _agent(loopback, transport, max_retries=2)
    with pytest.raises(ProviderError) as info:
        await _ask(agent)
    assert info.value.retries == 2
    assert info.value.retryable
    assert "gave up after 2 retries" in str(info.value)
    assert "500" in str(info.value)
    assert len(loopback.chat_requests) == 3


@pytest.mark.parametrize("status", ["400", "404"])
async def test_client_errors_are_not_retried(
    loopback: LoopbackServer, transport: str, status: str
) -> None:
    loopback.configure(fault_script=[status])
    with pytest.raises(ProviderError) as info:
        await _ask(_agent(loopback, transport))
    assert info.value.status == int(status)
    assert info.value.retries == 0
    assert len(loopback.chat_requests) == 1


async def test_wrong_key_fails_at_once_without_leaking_it(
    loopback: LoopbackServer, transport: str
) -> None:
    # The server quotes the offered key in its error message, as careless providers do.
    loopback.configure(api_key="the-right-key", echo_key_in_errors=True)
    agent = _agent(loopback, transport)
    with pytest.raises(ProviderError) as info:
        await _ask(agent)
    exc = info.value
    assert exc.status == 401 and exc.retries == 0
    assert len(loopback.chat_requests) == 1
    assert loopback.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"
    rendered = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    assert "401" in str(exc)
    assert SECRET not in rendered
    assert exc.__cause__ is None


async def test_key_goes_only_into_the_authorization_header(
    loopback: LoopbackServer, transport: str
) -> None:
    agent = _agent(loopback, transport)
    await _ask(agent)
    record = loopback.chat_requests[0]
    assert record.headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(record.body)
    assert SECRET not in repr(agent)
    assert SECRET not in str(vars(agent))


async def test_factory_agent_spec_has_no_key(loopback: LoopbackServer) -> None:
    from coop_tui.agents.factory import build_agent
    from coop_tui.spec import AgentSpec

    spec = AgentSpec(model="openai/loopback", api_base=loopback.url, api_key=SECRET)
    agent = build_agent("bob", spec)
    assert isinstance(agent, LLMAgent)
    assert agent.kind == "llm" and agent.transport == "openai"
    assert SECRET not in str(agent.spec) and SECRET not in repr(agent)
    reply, _ = await _ask(agent)
    assert reply.text == loopback.config.answer
    assert loopback.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"


class CountingLimiter:
    """Records how the agent holds the limiter: once per HTTP attempt, never while sleeping."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []

    async def __aenter__(self) -> CountingLimiter:
        self.events.append(("enter", time.monotonic()))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.events.append(("exit", time.monotonic()))


async def test_limiter_wraps_each_attempt_not_the_backoff(
    loopback: LoopbackServer, transport: str
) -> None:
    loopback.configure(fault_script=["429", "500"], retry_after=0.3)
    limiter = CountingLimiter()
    agent = _agent(loopback, transport, limiter=limiter, backoff_base=0.0001)
    reply, _ = await _ask(agent)
    assert reply.transport_retries == 2
    assert [kind for kind, _ in limiter.events] == ["enter", "exit"] * 3
    # The slot was given back before the Retry-After pause, not after it.
    first_exit = limiter.events[1][1]
    second_request = loopback.chat_requests[1].time
    assert second_request - first_exit >= 0.3


async def test_cost_is_priced_from_usage(loopback: LoopbackServer) -> None:
    agent = _agent(loopback, "openai", model="openai/gpt-4o-mini")
    reply, _ = await _ask(agent)
    assert reply.input_tokens and reply.output_tokens
    expected = cost_for("openai/gpt-4o-mini", reply.input_tokens, reply.output_tokens)
    assert expected is not None and reply.cost_usd == pytest.approx(expected)
    assert loopback.chat_requests[0].body["model"] == "gpt-4o-mini"


def test_cost_map_is_offline_and_knows_common_models() -> None:
    small = cost_for("openai/gpt-4o-mini", 1000, 1000)
    assert small is not None and small > 0
    bigger = cost_for("openai/gpt-4o-mini", 2000, 2000)
    assert bigger == pytest.approx(2 * small)
    assert cost_for("openai/surely-not-a-real-model-xyz", 1000, 1000) is None
    assert cost_for("", 10, 10) is None


def test_transport_choice() -> None:
    url = "http://127.0.0.1:1/v1"
    assert choose_transport("openai/gpt-4o", url) == "openai"
    assert choose_transport("hosted_vllm/qwen", url) == "openai"
    assert choose_transport("my-model", url) == "openai"
    assert choose_transport("openai/gpt-4o", None) == "litellm"
    assert choose_transport("anthropic/claude-x", url) == "litellm"
    assert choose_transport("ollama/llama3", None) == "litellm"


async def test_many_concurrent_replies_share_one_client(
    loopback: LoopbackServer, transport: str
) -> None:
    loopback.configure(latency=0.2, chunks=10, answer=lambda b: last_user_message(b)[::-1])
    agent = _agent(loopback, transport)
    prompts = [f"prompt number {i}" for i in range(32)]
    replies = await asyncio.gather(*(_ask(agent, p) for p in prompts))
    assert [r.text for r, _ in replies] == [p[::-1] for p in prompts]
    assert all(r.transport_retries == 0 for r, _ in replies)


def test_importing_the_agent_does_not_import_clients() -> None:
    code = (
        "import sys, coop_tui.agents.llm, coop_tui.testing.server\n"
        "heavy = [m for m in ('litellm', 'openai', 'httpx', 'aiohttp') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


async def test_sequential_replies_reuse_one_connection(
    loopback: LoopbackServer, transport: str
) -> None:
    agent = _agent(loopback, transport)
    await _ask(agent, "warm-up")  # the first reply may wait seconds for litellm's import
    loopback.reset()
    for i in range(3):
        reply, _ = await _ask(agent, f"question {i}")
        assert reply.text == loopback.config.answer
    peers = {r.peer for r in loopback.chat_requests}
    assert len(loopback.chat_requests) == 3
    assert len(peers) == 1


async def test_constrained_cot_asks_free_then_under_the_grammar(
    loopback: LoopbackServer, transport: str
) -> None:
    def answer(body: dict[str, Any]) -> str:
        return '{"A0": 70, "A1": 30}' if "grammar" in body else "Cooperation pays here."

    loopback.configure(answer=answer)
    reply, sink = await _ask(_agent(loopback, transport, constrained="grammar"))
    free, final = loopback.chat_requests
    assert "grammar" not in free.body
    grammar = final.body["grammar"]
    assert '"\\"A0\\""' in grammar and "root ::=" in grammar  # the mixed-strategy GBNF
    assert final.body["messages"][-2] == {"role": "assistant", "content": "Cooperation pays here."}
    assert final.body["max_tokens"] <= 128
    assert reply.text == "Cooperation pays here."
    assert reply.answer == '{"A0": 70, "A1": 30}' and reply.constrained
    assert reply.parse_text == reply.answer
    assert "".join(sink.deltas).endswith(reply.answer)
    assert reply.input_tokens == free.usage["prompt_tokens"] + final.usage["prompt_tokens"]


async def test_constrained_direct_sends_one_json_schema_request(loopback: LoopbackServer) -> None:
    loopback.configure(answer='{"A0": 10, "A1": 90}')
    agent = _agent(loopback, "openai", constrained="json_schema", style="direct")
    reply, _ = await _ask(agent)
    (only,) = loopback.chat_requests
    fmt = only.body["response_format"]
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["A0", "A1"]
    assert schema["properties"]["A0"] == {"enum": list(range(101))}  # bounds llama.cpp keeps
    assert reply.text == "" and reply.answer == '{"A0": 10, "A1": 90}'


def test_unknown_constraint_is_refused() -> None:
    with pytest.raises(ValueError, match="constrained"):
        LLMAgent("a", "openai/x", api_base="http://127.0.0.1:1/v1", constrained="regex")  # type: ignore[arg-type]


async def test_pool_keeps_at_most_concurrency_connections_and_reuses_them(
    loopback: LoopbackServer,
) -> None:
    loopback.configure(latency=0.05)
    agent = _agent(loopback, "openai", max_connections=8)
    gate = asyncio.Semaphore(8)

    async def one(i: int) -> AgentReply:
        async with gate:
            reply, _ = await _ask(agent, f"q{i}")
            return reply

    for _ in range(3):
        await asyncio.gather(*(one(i) for i in range(16)))
    await agent.aclose()
    # 48 requests on never more connections than slots, kept alive between the rounds
    assert len(loopback.chat_requests) == 48
    assert len({r.peer for r in loopback.chat_requests}) <= 8


async def test_a_connection_the_server_closed_while_idle_is_replaced(
    loopback: LoopbackServer,
) -> None:
    agent = _agent(loopback, "openai")
    await _ask(agent, "first")
    loopback.stop()  # closes every connection, then listen again on the same port
    loopback.start()
    # let the client read the close (loop turns, no clock); if it has not, the request fails
    # on the stale connection and is sent again, which must not count as a fault either
    for _ in range(10):
        await asyncio.sleep(0)
    reply, _ = await _ask(agent, "second")
    await agent.aclose()
    assert reply.transport_retries == 0  # a stale keep-alive is not a fault
    assert len({r.peer for r in loopback.chat_requests}) == 2


async def test_a_server_that_ignores_stream_is_read_whole(loopback: LoopbackServer) -> None:
    # the loopback server answers without SSE when the request says stream = false;
    # pointing the agent's body at that path is what such a server does to every request
    loopback.configure(answer="all at once", reasoning="quietly")
    agent = _agent(loopback, "openai")
    agent._body = lambda messages, extra: json.dumps(  # type: ignore[method-assign]
        {"model": "loopback", "messages": messages, "stream": False}
    ).encode()
    reply, sink = await _ask(agent)
    assert reply.text == "all at once" and sink.deltas == ["all at once"]
    assert reply.reasoning == "quietly"
    assert reply.input_tokens == loopback.chat_requests[0].usage["prompt_tokens"]
