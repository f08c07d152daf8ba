"""One clock for the whole process: when the engine last let the event loop run.

Strategy decisions and direct rounds never wait on anything, so a coroutine playing them
never suspends: without this, a strategy-only sweep ran to its end in one step of the
loop, and SIGINT / SIGTERM (whose handlers run on the loop) or the TUI's Stop were heard
only when it had finished. Checking the clock costs far less than suspending on every
decision.
"""

from __future__ import annotations

import asyncio
import time

YIELD_EVERY_S = 0.02
"""Longest stretch the engine computes without letting the event loop run."""


class _LoopTurn:
    """When the engine last let the event loop run (one clock for the whole process)."""

    last = time.perf_counter()


def loop_turn_due() -> bool:
    """True (and the clock restarted) when the engine has held the loop for
    ``YIELD_EVERY_S``: the caller then awaits ``asyncio.sleep(0)``. The direct rounds ask
    this without a coroutine per round; everyone else awaits :func:`let_loop_run`."""
    now = time.perf_counter()
    if now - _LoopTurn.last >= YIELD_EVERY_S:
        _LoopTurn.last = now
        return True
    return False


async def let_loop_run() -> None:
    """Give the event loop a turn when the engine has held it for ``YIELD_EVERY_S``."""
    if loop_turn_due():
        await asyncio.sleep(0)
