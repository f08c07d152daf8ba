"""Saved llama.cpp states of prompt starts, reused only where no answer can change.

Most of an embedded-model call is reading its prompt, and most of a prompt repeats an
earlier one: the system message and the rules of a game, or the previous round of the
same repeated game with one more round of history. Reusing llama.cpp's cache as it is left
changes answers, though (measured: 1 in 28 of the offline CoopEval study's), because the
floating-point work behind a token depends on the batch it was evaluated in: a suffix
evaluated from wherever the match happened to end is batched differently from the same
tokens in a fresh run.

So every prompt is evaluated in fixed-size chunks counted from its first token
(``CHUNK_TOKENS``: the context's batch size, so llama.cpp's own evaluation loop splits
there too), whether it starts from scratch or not. The key/value cache of the positions
before a chunk boundary is then the same, bit for bit, however it was reached, and a
state saved at a boundary (llama.cpp's per-sequence state API) can stand in for
evaluating those positions: restore it, cut it back to the longest boundary the new
prompt shares, and evaluate the rest in the same chunks a cold run would use. At least
one chunk is always evaluated afresh, so the logits that pick the first token come from a
live decode, as in a cold run.

A state is kept per prompt (its tokens up to the last boundary), in a least-recently-used
store bounded by bytes (``DEFAULT_BUDGET_BYTES``). It is keyed by the token prefix, the
chunk size and the thread count (one store per loaded model file): nothing else goes into
the key/value cache. A state that a newer one extends is dropped, since the newer one can
be cut back to it.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is heavy; it is loaded with llama.cpp, when a model runs
    import numpy as np

CHUNK_TOKENS = 32
"""Tokens per evaluation batch, and the grain of reuse (see docs/benchmarks.md for the
measurement that chose it)."""
DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024
"""Bytes of saved states kept per model file. SmolLM2-135M's cache takes about 23 kB per
token, so this holds about 11,000 prompt tokens: a few dozen game prompts."""

__all__ = ["CHUNK_TOKENS", "DEFAULT_BUDGET_BYTES", "PrefixCache", "PrefixStats", "SavedPrefix",
           "boundary", "common_prefix"]


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens two token arrays share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    same = a[:n] == b[:n]
    return n if bool(same.all()) else int(same.argmin())


def boundary(shared: int, prompt_len: int, chunk: int) -> int:
    """The longest chunk boundary a prompt of ``prompt_len`` tokens may restore, given that
    ``shared`` leading tokens match a saved state: never the whole prompt, so its last
    chunk is always evaluated (the sampler needs logits from a live decode)."""
    return max(0, min(shared, prompt_len - 1)) // chunk * chunk


@dataclass(frozen=True)
class SavedPrefix:
    """One saved state: llama.cpp's per-sequence state (the key/value cache of every
    position the context held) and the tokens up to the boundary it may be restored to."""

    tokens: np.ndarray
    data: bytes
    threads: int


@dataclass
class PrefixStats:
    """What the store did, for benchmarks and tests (tokens are prompt tokens)."""

    restored_tokens: int = 0
    evaluated_tokens: int = 0
    hits: int = 0
    misses: int = 0
    saved: int = 0
    evicted: int = 0


@dataclass
class PrefixCache:
    """Least-recently-used saved states of one model file, bounded by ``budget`` bytes."""

    chunk: int = CHUNK_TOKENS
    budget: int = DEFAULT_BUDGET_BYTES
    stats: PrefixStats = field(default_factory=PrefixStats)
    _states: OrderedDict[int, SavedPrefix] = field(default_factory=OrderedDict)
    _bytes: int = 0
    _next: int = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        self._states.clear()
        self._bytes = 0

    def best(self, prompt: np.ndarray, threads: int) -> tuple[SavedPrefix | None, int]:
        """The saved state that covers the longest boundary of ``prompt``, and that
        boundary (0 and None when none covers a whole chunk); marks it recently used."""
        found: tuple[int, int] | None = None
        for key, state in self._states.items():
            if state.threads != threads:
                continue
            usable = boundary(common_prefix(state.tokens, prompt), len(prompt), self.chunk)
            if usable and (found is None or usable > found[1]):
                found = (key, usable)
        if found is None:
            self.stats.misses += 1
            return None, 0
        self._states.move_to_end(found[0])
        self.stats.hits += 1
        return self._states[found[0]], found[1]

    def add(self, prompt: np.ndarray, data: bytes, threads: int) -> None:
        """Keep the state saved right after ``prompt`` was evaluated, valid up to the
        prompt's last boundary; drop the states it extends, then the least recently used
        ones until the store fits its budget."""
        end = len(prompt) // self.chunk * self.chunk
        if end == 0 or len(data) > self.budget:
            return
        tokens = prompt[:end].copy()
        for key in [k for k, s in self._states.items()
                    if s.threads == threads and len(s.tokens) <= end
                    and common_prefix(s.tokens, tokens) == len(s.tokens)]:
            self._drop(key)
        self._states[self._next] = SavedPrefix(tokens, data, threads)
        self._next += 1
        self._bytes += len(data)
        self.stats.saved += 1
        while self._bytes > self.budget:
            self._drop(next(iter(self._states)))
            self.stats.evicted += 1

    def _drop(self, key: int) -> None:
        state = self._states.pop(key)
        self._bytes -= len(state.data)


def save_sequence(ctx: ctypes.c_void_p) -> bytes:
    """llama.cpp's state of sequence 0 (its key/value cache), as bytes."""
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
    if written == 0 or written > size:
        raise RuntimeError("llama.cpp could not copy the sequence state")
    return bytes(memoryview(buffer)[:written])


def load_sequence(ctx: ctypes.c_void_p, data: bytes) -> None:
    """Put a state from :func:`save_sequence` back into sequence 0 (cleared first by the
    caller)."""
    import llama_cpp

    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(ctx, buffer, len(data), 0) == 0:
        raise RuntimeError("llama.cpp could not restore a saved sequence state")
