"""Stable hashes and seeds: the same inputs give the same value in every process.

Cache keys, run hashes and every derived random seed come from here (Python's ``hash()``
changes between processes). It imports nothing of ours, so any layer can use it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def stable_hash(payload: Any) -> str:
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def derived_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts, stable across processes (unlike hash())."""
    return int(stable_hash(list(parts))[:15], 16)


def text_hash(text: str) -> str:
    """The key of a stored text (128 bits of SHA-256: collisions are not a concern)."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


__all__ = ["derived_seed", "stable_hash", "text_hash"]
