"""Saved prompt starts of the embedded model: reused only where the answer is the same.

The store's bookkeeping is checked without a model; the identity it exists for is checked
on the real SmolLM2 through llama.cpp, bit for bit: the whole llama.cpp state (every
cached key and value, and the logits the first token is drawn from) after a prompt read
from a saved start equals the state after reading it from scratch, and seeded replies
give the same text and token counts either way while the reused one really restored
tokens. A study run twice, with and without, lives in tests/test_prefix_cache_study.py.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from coop_tui.agents.factory import build_agent
from coop_tui.agents.local import LocalAgent, LocalModel, get_model, smollm2_path
from coop_tui.agents.prefix_cache import PrefixCache, SavedPrefix, boundary, common_prefix
from coop_tui.decisions import DecisionRequest, NullSink
from coop_tui.engine import MatchContext
from coop_tui.errors import SpecError
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.spec import AgentSpec, build_sweep

TWIST = "The other player reasons a lot like you do: the two of you are 80% similar."


def tokens(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int32)


# ----------------------------------------------------------------- the store, no model
def test_boundaries_round_down_and_always_leave_the_last_chunk_to_evaluate() -> None:
    assert boundary(shared=70, prompt_len=100, chunk=32) == 64
    assert boundary(shared=63, prompt_len=100, chunk=32) == 32
    assert boundary(shared=31, prompt_len=100, chunk=32) == 0
    # the whole prompt is saved: its last chunk is still evaluated (fresh logits)
    assert boundary(shared=64, prompt_len=64, chunk=32) == 32
    assert boundary(shared=65, prompt_len=65, chunk=32) == 64
    assert common_prefix(tokens(1, 2, 3), tokens(1, 2, 4, 5)) == 2
    assert common_prefix(tokens(1, 2), tokens(1, 2, 4)) == 2
    assert common_prefix(tokens(), tokens(1)) == 0


def test_the_longest_matching_start_wins_and_thread_counts_never_mix() -> None:
    cache = PrefixCache(chunk=4, budget=10_000)
    shared = list(range(8))
    cache.add(tokens(*shared, 50, 51, 52, 53, 54), b"a" * 10, threads=1)  # kept up to 12
    cache.add(tokens(*shared, 60, 61, 62, 63), b"b" * 10, threads=1)  # up to 12
    state, at = cache.best(tokens(*shared, 60, 61, 62, 63, 64, 65), threads=1)
    assert state is not None and state.data == b"b" * 10 and at == 12
    state, at = cache.best(tokens(*shared, 50, 51, 99, 99, 99), threads=1)
    assert state is not None and state.data == b"a" * 10 and at == 8  # 10 shared: round down
    assert cache.best(tokens(*shared, 60, 61, 62), threads=2) == (None, 0)
    assert cache.best(tokens(7, *shared), threads=1) == (None, 0)
    assert cache.stats.hits == 2 and cache.stats.misses == 2


def test_a_state_that_extends_another_replaces_it_and_the_budget_evicts_the_oldest() -> None:
    cache = PrefixCache(chunk=4, budget=100)
    round1 = list(range(9))
    cache.add(tokens(*round1), b"x" * 30, threads=1)
    cache.add(tokens(*round1, 9, 10, 11, 12), b"y" * 40, threads=1)  # the next round
    assert len(cache) == 1 and cache.size_bytes == 40  # the first is a prefix of it
    state, at = cache.best(tokens(*round1[:8], 77, 78), threads=1)
    assert state is not None and state.data == b"y" * 40 and at == 8  # cut back to round 1
    cache.add(tokens(*range(100, 110)), b"z" * 40, threads=1)
    cache.best(tokens(*round1, 9, 10, 11, 12, 13), threads=1)  # "y" is now the most recent
    cache.add(tokens(*range(200, 210)), b"w" * 40, threads=1)  # over budget: "z" goes
    assert cache.size_bytes == 80 and cache.stats.evicted == 1
    assert cache.best(tokens(*range(100, 110)), threads=1) == (None, 0)
    cache.add(tokens(*range(300, 310)), b"v" * 101, threads=1)  # larger than the budget
    assert cache.size_bytes == 80
    cache.add(tokens(1, 2, 3), b"u", threads=1)  # shorter than a chunk: nothing to reuse
    assert len(cache) == 2


# ----------------------------------------------------------------- the spec field
def test_prefix_cache_is_an_embedded_agent_setting_outside_content_keys() -> None:
    off = AgentSpec(model="local/smollm2", prefix_cache=False)
    on = AgentSpec(model="local/smollm2")
    assert build_agent("a", off).prefix_cache is False
    assert build_agent("a", on).prefix_cache is True
    assert "prefix_cache" not in on.public()  # the default is not even written

    def sweep(agent: dict) -> object:
        return build_sweep({"name": "s", "agents": {"m": agent, "t": {"strategy": "tit_for_tat"}},
                            "experiments": [{"game": "prisoners", "mechanism": "none",
                                             "agents": ["m", "t"], "matchup": "cross"}]})

    a = sweep({"model": "local/smollm2"})
    b = sweep({"model": "local/smollm2", "prefix_cache": False})
    assert a.hash == b.hash  # the same sweep: --resume finds the other's run
    ctx_keys = []
    for spec in (on, off):
        agent = build_agent("m", spec)
        ctx = MatchContext(run_id="r", match_id="m", game=get_game("prisoners"),
                           agents=[agent, agent], bus=EventBus(), seed=1)
        ctx_keys.append(ctx._keys(ctx.play_request(0, 1))[1])
    assert ctx_keys[0] == ctx_keys[1]  # stored answers are found whichever is set


def test_prefix_cache_on_an_agent_that_is_not_embedded_is_refused() -> None:
    with pytest.raises(SpecError) as err:
        build_sweep({"name": "s", "agents": {"t": {"strategy": "tit_for_tat", "prefix_cache": False}},
                     "experiments": [{"game": "prisoners", "agents": ["t"]}]})
    assert err.value.field == "agents.t.prefix_cache"
    assert "remove prefix_cache" in str(err.value)


# ----------------------------------------------------------------- identity, on the model
@pytest.fixture(scope="module")
def model() -> LocalModel:
    return get_model(smollm2_path())


@pytest.fixture(scope="module")
def play_request(model: LocalModel) -> DecisionRequest:
    agent = LocalAgent("local", max_tokens=16)
    ctx = MatchContext(run_id="run", match_id="match", game=get_game("prisoners"),
                       agents=[agent, agent], bus=EventBus(), seed=5)
    return ctx.play_request(0, 1, twist=TWIST)


def prompt_of(model: LocalModel, messages: list[dict[str, str]]) -> list[int]:
    assert model.formatter is not None
    formatted = model.formatter(messages=messages)
    return model.llama.tokenize(formatted.prompt.encode("utf-8"),
                                add_bos=not formatted.added_special, special=True)


def whole_state(model: LocalModel) -> bytes:
    """llama.cpp's whole context state: cached keys and values, and the last logits."""
    import llama_cpp

    ctx = model.llama.ctx
    size = llama_cpp.llama_state_get_size(ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(ctx, buffer, size)
    return bytes(memoryview(buffer)[:written])


def test_a_prompt_read_from_a_saved_start_leaves_llama_cpp_in_the_same_state(
    model: LocalModel, play_request: DecisionRequest
) -> None:
    messages = [dict(m) for m in play_request.messages]
    prompt = prompt_of(model, messages)
    # another prompt that shares the rules but not the end (another round's history)
    other = prompt_of(model, [*messages[:-1], {"role": "user", "content": messages[-1]["content"]
                                                 + "\nLast round: both chose A0."}])
    shared = common_prefix(np.array(prompt), np.array(other))
    chunk = model.prefixes.chunk
    assert shared > 4 * chunk
    with model.lock:
        model.prefixes.clear()
        assert model.prefill(prompt, reuse=False) == 0
        cold = whole_state(model)
        assert model.prefill(other, reuse=True) == 0 and len(model.prefixes) == 1
        model.llama.reset()  # another reply's leftovers do not matter either
        restored = model.prefill(prompt, reuse=True)
        warm = whole_state(model)
    assert restored == boundary(shared, len(prompt), chunk) and restored > 0
    assert warm == cold


def test_a_state_llama_cpp_refuses_costs_only_the_reuse(
    model: LocalModel, play_request: DecisionRequest
) -> None:
    """A cut-off state (as a failed copy would leave) is refused by llama.cpp: the prompt
    is read from scratch, to the same state, and the store starts over."""
    prompt = prompt_of(model, [dict(m) for m in play_request.messages])
    with model.lock:
        model.prefixes.clear()
        model.prefill(prompt, reuse=True)
        cold = whole_state(model)
        (key, saved), = model.prefixes._states.items()
        model.prefixes._states[key] = SavedPrefix(saved.tokens, saved.data[: len(saved.data) // 2],
                                                  saved.threads)
        assert model.prefill(prompt, reuse=True) == 0
        assert whole_state(model) == cold
        assert len(model.prefixes) == 1  # only the fresh state is kept


async def test_seeded_replies_are_identical_with_and_without_saved_starts(
    model: LocalModel, play_request: DecisionRequest
) -> None:
    """Both answer paths: a reasoning step then the answer step continuing from it (cot),
    and the constrained answer alone (direct); the reused run must really restore."""
    with model.lock:
        model.prefixes.clear()
    for style in ("cot", "direct"):
        request = dataclasses.replace(play_request, seed=17)
        replies = []
        for cache in (False, True, True, False):
            agent = LocalAgent("x", max_tokens=12, temperature=1.0, style=style, prefix_cache=cache)
            before = model.prefixes.stats.restored_tokens
            reply = await agent.reply(request, list(request.messages), NullSink())
            replies.append((reply.text, reply.answer, reply.input_tokens, reply.output_tokens))
            if not cache:
                assert model.prefixes.stats.restored_tokens == before  # off: never restores
        assert model.prefixes.stats.restored_tokens > 0
        assert len(set(replies)) == 1, replies


async def test_concurrent_seeded_replies_sharing_a_start_match_their_cold_answers(
    model: LocalModel, play_request: DecisionRequest
) -> None:
    """Replies queued on one model from several seats (as a sweep's matches are), each
    starting from a state another one saved, answer as they do alone and cold."""
    requests = [dataclasses.replace(play_request, seed=seed) for seed in (31, 32, 33)]

    async def run(cache: bool) -> list[tuple[object, ...]]:
        agents = [LocalAgent(f"s{i}", max_tokens=8, style="direct", prefix_cache=cache)
                  for i in range(len(requests))]
        replies = await asyncio.gather(*(a.reply(r, list(r.messages), NullSink())
                                         for a, r in zip(agents, requests, strict=True)))
        return [(r.text, r.answer, r.input_tokens, r.output_tokens) for r in replies]

    assert await run(True) == await run(False)


def test_states_are_kept_per_model_file() -> None:
    path: Path = smollm2_path()
    assert get_model(path).prefixes is get_model(path).prefixes
