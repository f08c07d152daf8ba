"""The embedded model agent, run for real: SmolLM2-135M through llama.cpp, no mocks.

Budgets stay small (a few dozen tokens) so the file runs in reasonable time on two busy
cores; nothing here measures speed (that is ``benchmarks/bench_local.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path

import pytest

from coop_tui.agents.factory import build_agent
from coop_tui.agents.local import (
    LocalAgent,
    LocalModelError,
    get_model,
    resolve_model_path,
    smollm2_path,
)
from coop_tui.decisions import DecisionRequest, NullSink
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.parsing import parse_answer
from coop_tui.spec import AgentSpec, load_sweep

THINK = 32
"""Free-step budget for most tests: enough for several deltas, quick on a busy machine."""
TWIST = "The other player reasons a lot like you do: the two of you are 80% similar."
SHORT = [{"role": "user", "content": "Two proposals are on the table, P1 and P2. Decide."}]


class RecordingSink:
    """Keeps every delta and the thread it arrived on."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.threads: set[int] = set()

    def text(self, delta: str) -> None:
        self.deltas.append(delta)
        self.threads.add(threading.get_ident())

    def reasoning(self, delta: str) -> None:  # the embedded model has no separate channel
        raise AssertionError("the local agent must not send reasoning deltas")

    @property
    def joined(self) -> str:
        return "".join(self.deltas)


@pytest.fixture(scope="module")
def model_path() -> Path:
    """Load the shared model once for the whole module."""
    path = smollm2_path()
    get_model(path)
    return path


@pytest.fixture(scope="module")
def play_request(model_path: Path) -> DecisionRequest:
    """A real play decision: the Prisoner's Dilemma prompt with a similarity sentence."""
    seat_agent = LocalAgent("local", max_tokens=THINK)
    ctx = MatchContext(
        run_id="run",
        match_id="match",
        game=get_game("prisoners"),
        agents=[seat_agent, seat_agent],
        bus=EventBus(),
        seed=5,
    )
    return ctx.play_request(0, 1, twist=TWIST)


def request_of(kind: str, labels: tuple[str, ...] = (), options: dict | None = None,
               base: DecisionRequest | None = None) -> DecisionRequest:
    """A non-play request by hand: the schema comes from the kind (request.schema unset)."""
    assert base is not None
    return dataclasses.replace(
        base,
        phase=kind,
        kind=kind,  # type: ignore[arg-type]
        messages=tuple(SHORT),
        labels=labels,
        label_to_action=(),
        schema=None,
        options=dict(options or {}),
    )


# ----------------------------------------------------------------- finding the model
def test_smollm2_gguf_is_found_in_the_package() -> None:
    path = smollm2_path()
    assert path.suffix == ".gguf" and path.is_file()
    assert path.stat().st_size > 50_000_000  # the real weights, not a pointer file
    assert path.read_bytes()[:4] == b"GGUF"
    assert resolve_model_path("local/smollm2") == path


def test_one_model_is_shared_per_file(model_path: Path) -> None:
    assert get_model(model_path) is get_model(model_path, threads=2)
    a = LocalAgent("a")
    b = LocalAgent("b", model=f"local:{model_path}")
    assert a.path == b.path == model_path.resolve()
    assert a.kind == "local" and a.style == "cot"


# ----------------------------------------------------------------- mixed decisions
@pytest.mark.slow
async def test_mixed_decision_streams_reasoning_then_a_valid_answer(
    play_request: DecisionRequest,
) -> None:
    agent = LocalAgent("local", max_tokens=THINK, seed=1)
    sink = RecordingSink()
    reply = await agent.reply(play_request, list(play_request.messages), sink)

    assert len(sink.deltas) >= 5
    assert sink.threads == {threading.get_ident()}  # deltas arrive on the loop thread
    assert reply.text and reply.answer is not None and reply.constrained
    # the free text streams first, then the answer lands
    assert sink.joined.startswith(reply.text)
    assert sink.joined.rstrip().endswith(reply.answer)
    strategy, _note = parse_answer("mixed", reply.answer, labels=play_request.labels)
    assert abs(sum(strategy.probabilities) - 1.0) < 1e-9
    # exact token counts from llama.cpp: a ~400-token prompt, read twice (two steps)
    assert reply.input_tokens is not None and reply.input_tokens > 2 * 300
    assert reply.output_tokens is not None and 0 < reply.output_tokens <= THINK + 64 + 2 * 16
    assert reply.cost_usd == 0.0 and reply.model == "local/smollm2" and reply.latency_ms > 0


@pytest.mark.slow
async def test_every_seed_gives_a_parseable_answer_with_exactly_the_labels(
    play_request: DecisionRequest,
) -> None:
    labels = ("Q7", "B", "Zeta")
    request = dataclasses.replace(play_request, labels=labels, label_to_action=(0, 1, 1),
                                  schema=None)
    for seed in range(3):
        agent = LocalAgent("local", max_tokens=12, seed=seed)
        reply = await agent.reply(request, list(request.messages), NullSink())
        assert reply.answer is not None
        obj = json.loads(reply.answer)
        assert list(obj) == list(labels)  # the grammar writes every label, in order, once
        assert all(isinstance(v, int) and 0 <= v <= 100 for v in obj.values())
        parse_answer("mixed", reply.answer, labels=labels)


@pytest.mark.slow
async def test_direct_style_skips_the_free_step(play_request: DecisionRequest) -> None:
    agent = LocalAgent("local", max_tokens=THINK, seed=2, style="direct")
    sink = RecordingSink()
    reply = await agent.reply(play_request, list(play_request.messages), sink)
    assert reply.text == ""
    assert reply.answer is not None and sink.joined.strip() == reply.answer
    assert set(json.loads(reply.answer)) == set(play_request.labels)
    # one prompt read instead of two, and only the short JSON written
    assert reply.input_tokens is not None and reply.input_tokens < 700
    assert reply.output_tokens is not None and reply.output_tokens < 40


@pytest.mark.slow
async def test_the_engine_records_both_parts_of_a_local_answer(model_path: Path) -> None:
    agent = LocalAgent("local", max_tokens=16, seed=4)
    ctx = MatchContext(
        run_id="run", match_id="m1", game=get_game("prisoners"), agents=[agent, agent],
        bus=EventBus(), seed=9, policy=DecisionPolicy(max_attempts=1),
    )
    decision = await ctx.ask(ctx.play_request(1, 1, twist=TWIST))
    assert decision.valid and decision.attempts == 1
    assert decision.constrained and decision.answer
    assert decision.distribution is not None and decision.action in (0, 1)
    assert decision.cost_usd == 0.0 and decision.output_tokens


async def test_the_mixed_grammar_never_lets_every_value_be_zero(
    play_request: DecisionRequest,
) -> None:
    """All zeros is the one shape the parser cannot normalise; asked for it outright, the
    model still has to put a positive value somewhere."""
    labels = ("A0", "A1", "A2")
    zeros = '{"A0": 0, "A1": 0, "A2": 0}'
    request = dataclasses.replace(
        play_request,
        labels=labels,
        label_to_action=(0, 1, 1),
        schema=None,
        messages=({"role": "user", "content": f"Copy this JSON exactly: {zeros}"},),
    )
    for seed in range(2):
        agent = LocalAgent("local", seed=seed, temperature=0.0, style="direct")
        reply = await agent.reply(request, list(request.messages), NullSink())
        assert reply.answer is not None
        values = json.loads(reply.answer)
        assert list(values) == list(labels) and sum(values.values()) > 0
        parse_answer("mixed", reply.answer, labels=labels)


# ----------------------------------------------------------------- other answer kinds
@pytest.mark.parametrize(
    ("kind", "labels", "options", "keys"),
    [
        ("approvals", ("P1", "P2"), {}, {"P1", "P2"}),
        ("sign", (), {}, {"sign"}),
        ("score", (), {"min": 0, "max": 100}, {"score"}),
        ("mediator", ("A0", "A1"), {"n_players": 2}, {"1", "2"}),
        ("contract", ("A0", "A1"), {"max_abs": 3}, {"A0", "A1"}),
    ],
)
async def test_other_kinds_get_valid_constrained_json(
    play_request: DecisionRequest, kind: str, labels: tuple[str, ...], options: dict,
    keys: set[str],
) -> None:
    request = request_of(kind, labels, options, base=play_request)
    agent = LocalAgent("local", max_tokens=8, seed=3)
    reply = await agent.reply(request, list(request.messages), NullSink())
    assert reply.constrained and reply.answer is not None
    obj = json.loads(reply.answer)
    assert set(obj) == keys
    parsed, _ = parse_answer(kind, reply.answer, labels=labels, options=options)
    if kind == "score":
        assert isinstance(parsed, int) and 0 <= parsed <= 100
    elif kind == "sign":
        assert isinstance(parsed, bool)
    elif kind == "mediator":
        assert set(parsed) == {1, 2} and set(parsed.values()) <= set(labels)
    elif kind == "contract":  # the grammar keeps payments inside the bound
        assert all(-3 <= v <= 3 for v in parsed.values())
    else:
        assert set(parsed) == set(labels)


def test_answers_get_the_right_grammar() -> None:
    from coop_tui.agents.local import answer_grammar, grammar_schema, mixed_gbnf
    from coop_tui.schemas import answer_schema

    mixed = answer_schema("mixed", ("A0", "A1"), {})
    assert answer_grammar("mixed", ("A0", "A1"), mixed) == ("gbnf", mixed_gbnf(("A0", "A1")))
    custom = {"type": "object", "properties": {"A0": {"type": "integer"}}, "required": ["A0"]}
    assert answer_grammar("mixed", ("A0",), custom) == ("schema", json.dumps(custom))
    kind, payload = answer_grammar("score", (), answer_schema("score", (), {"max": 10}))
    assert kind == "schema" and json.loads(payload)["properties"]["score"] == {
        "enum": list(range(11))
    }

    schema = grammar_schema(answer_schema("mixed", ("A0", "A1"), {}))
    assert list(schema["properties"]) == ["A0", "A1"]  # order kept: it is the shown order
    assert schema["properties"]["A0"] == {"enum": list(range(101))}
    assert schema["required"] == ["A0", "A1"] and schema["additionalProperties"] is False
    unbounded = {"type": "integer", "minimum": 0}
    assert grammar_schema(unbounded) == unbounded


async def test_free_text_kinds_have_no_constrained_step(play_request: DecisionRequest) -> None:
    request = request_of("text", base=play_request)
    agent = LocalAgent("local", max_tokens=10, seed=3, style="direct")
    sink = RecordingSink()
    reply = await agent.reply(request, list(request.messages), sink)
    assert reply.answer is None and not reply.constrained
    assert reply.text and sink.joined == reply.text
    assert reply.output_tokens is not None and 0 < reply.output_tokens <= 10


# ----------------------------------------------------------------- sampling settings
@pytest.mark.slow
async def test_same_seed_gives_the_same_reply_whatever_ran_before(
    play_request: DecisionRequest,
) -> None:
    agent = LocalAgent("local", max_tokens=20, seed=11, temperature=0.9)
    first = await agent.reply(play_request, list(play_request.messages), NullSink())
    # something else runs on the shared model in between (it leaves its own cache)
    await LocalAgent("other", max_tokens=6, seed=99).reply(
        request_of("sign", base=play_request), list(SHORT), NullSink()
    )
    second = await agent.reply(play_request, list(play_request.messages), NullSink())
    assert (second.text, second.answer) == (first.text, first.answer)
    assert second.output_tokens == first.output_tokens
    text_request = request_of("text", base=play_request)
    texts = [
        (await LocalAgent("x", max_tokens=12, seed=s, temperature=0.9).reply(
            text_request, list(SHORT), NullSink())).text
        for s in (12, 13, 14)
    ]
    assert len(set(texts)) > 1  # other seeds sample other text


async def test_max_tokens_bounds_the_free_step(play_request: DecisionRequest) -> None:
    agent = LocalAgent("local", max_tokens=5, seed=6, temperature=1.0)
    request = request_of("text", base=play_request)
    reply = await agent.reply(request, list(request.messages), NullSink())
    assert reply.output_tokens is not None and 1 <= reply.output_tokens <= 5


# ----------------------------------------------------------------- concurrency
async def test_event_loop_keeps_running_while_the_model_generates(
    play_request: DecisionRequest,
) -> None:
    order: list[str] = []

    class Sink(RecordingSink):
        def text(self, delta: str) -> None:
            super().text(delta)
            order.append("delta")

    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            order.append("tick")
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    agent = LocalAgent("local", max_tokens=THINK, seed=8)
    await asyncio.sleep(0)
    await agent.reply(play_request, list(play_request.messages), Sink())
    stop.set()
    await task
    first, last = order.index("delta"), len(order) - 1 - order[::-1].index("delta")
    assert order.count("tick") >= 20
    assert "tick" in order[first:last]  # ticks interleave with the streamed tokens


@pytest.mark.slow
async def test_concurrent_replies_share_the_model_safely(play_request: DecisionRequest) -> None:
    request = request_of("mixed", ("A0", "A1"), base=play_request)
    # different thread counts on one shared context: switched per reply under the lock
    agents = [LocalAgent(f"a{i}", max_tokens=8, seed=20 + i, threads=1 + i % 2) for i in range(3)]
    replies = await asyncio.gather(
        *(a.reply(request, list(request.messages), NullSink()) for a in agents)
    )
    for reply in replies:
        assert reply.answer is not None
        parse_answer("mixed", reply.answer, labels=request.labels)
    alone = await agents[0].reply(request, list(request.messages), NullSink())
    assert (alone.text, alone.answer) == (replies[0].text, replies[0].answer)


async def test_a_cancelled_reply_releases_the_model(play_request: DecisionRequest) -> None:
    got_text = asyncio.Event()

    class Sink(RecordingSink):
        def text(self, delta: str) -> None:
            super().text(delta)
            got_text.set()

    agent = LocalAgent("local", max_tokens=400, seed=5, temperature=1.0)
    task = asyncio.create_task(agent.reply(play_request, list(play_request.messages), Sink()))
    await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sign = request_of("sign", base=play_request)
    reply = await LocalAgent("next", max_tokens=4, seed=5, style="direct").reply(
        sign, list(sign.messages), NullSink()
    )
    assert reply.answer is not None and set(json.loads(reply.answer)) == {"sign"}


def test_models_without_a_chat_template_use_llama_cpps_chat_formatting(model_path: Path) -> None:
    """The fallback path (``create_chat_completion``) writes what the main path writes."""
    from coop_tui.agents.local import LocalModel

    shared = get_model(model_path)
    untemplated = LocalModel(shared.path, shared.llama, shared.threads)
    untemplated.formatter = None
    runs = []
    with shared.lock:
        for model in (shared, untemplated):
            deltas: list[str] = []
            shared.llama.reset()
            runs.append((model.stream(SHORT, max_tokens=12, temperature=0.8, seed=7, grammar=None,
                                      on_text=deltas.append, cancel=threading.Event()), deltas))
    (main, main_deltas), (fallback, fallback_deltas) = runs
    assert fallback.text == main.text and "".join(fallback_deltas) == "".join(main_deltas)
    assert main.input_tokens and fallback.input_tokens is None
    assert main.output_tokens == 12 and abs(fallback.output_tokens - 12) <= 1


def test_a_system_message_reaches_the_model_on_both_paths(
    model_path: Path, play_request: DecisionRequest
) -> None:
    """CoopEval's layout sends the reasoning instruction as a system message: the model's
    chat template puts it before the game, and llama.cpp's own chat formatting (models
    without a template) writes the same reply."""
    from coop_tui.agents.local import LocalModel

    system, user = play_request.messages
    assert (system["role"], user["role"]) == ("system", "user")
    shared = get_model(model_path)
    assert shared.formatter is not None
    formatted = shared.formatter(messages=list(play_request.messages)).prompt
    assert system["content"] in formatted and "Payoff description" in formatted
    assert formatted.index(system["content"]) < formatted.index("Payoff description")
    untemplated = LocalModel(shared.path, shared.llama, shared.threads)
    untemplated.formatter = None
    texts = []
    with shared.lock:
        for model in (shared, untemplated):
            shared.llama.reset()
            texts.append(model.stream(list(play_request.messages), max_tokens=8, temperature=0.8,
                                      seed=3, grammar=None, on_text=lambda _: None,
                                      cancel=threading.Event()).text)
    assert texts[0] and texts[0] == texts[1]


# ----------------------------------------------------------------- bad models
def test_a_missing_gguf_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(LocalModelError, match=r"GGUF file .*nowhere/model\.gguf does not exist"):
        LocalAgent("x", model=f"local:{missing}")
    with pytest.raises(LocalModelError, match="does not exist"):
        build_agent("x", AgentSpec(model=f"local:{missing}"))
    with pytest.raises(LocalModelError, match="unknown embedded model 'local/llama9'"):
        LocalAgent("x", model="local/llama9")
    with pytest.raises(LocalModelError, match="names no file"):
        LocalAgent("x", model="local:")


async def test_a_file_that_is_not_a_model_fails_on_first_use(
    tmp_path: Path, play_request: DecisionRequest
) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_text("not a model at all\n" * 20)
    agent = LocalAgent("x", model=f"local:{junk}")  # construction is lazy: no load yet
    with pytest.raises(LocalModelError, match=r"could not load .*junk\.gguf"):
        await agent.reply(play_request, list(play_request.messages), NullSink())


# ----------------------------------------------------------------- the factory and sweep
def test_factory_passes_the_spec_settings_through() -> None:
    spec = AgentSpec(model="local/smollm2", temperature=0.3, max_tokens=77, seed=4, threads=1,
                     style="direct")
    agent = build_agent("loc", spec)
    assert isinstance(agent, LocalAgent)
    assert (agent.name, agent.kind, agent.style) == ("loc", "local", "direct")
    assert (agent.temperature, agent.max_tokens, agent.seed, agent.threads) == (0.3, 77, 4, 1)
    assert agent.spec == spec.public()


def test_quickstart_sweep_is_a_small_offline_grid() -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "sweeps" / "quickstart.toml"
    sweep = load_sweep(path, check_keys=True)  # no API key needed
    assert sweep.name == "quickstart"
    assert {a.kind for a in sweep.spec.agents.values()} == {"local"}
    assert sorted(c.mechanism_params["similarity"] for c in sweep.cells) == [0, 50, 100]
    assert {c.mechanism_params["prompt"] for c in sweep.cells} == {"percentage_updated"}
    assert {c.mechanism_params["framing"] for c in sweep.cells} == {"similar"}
    assert all(c.seats == ("local", "local") and c.game == "prisoners" for c in sweep.cells)
    assert sweep.total_matches == 6
