"""A person in a seat: the request is handed to whoever shows it (the TUI), and the
answer comes back as text through the same parser as any model's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from coop_tui.decisions import AgentReply, DecisionRequest, Message


class HumanAgent:
    kind = "human"
    style = "direct"

    def __init__(self, name: str = "human") -> None:
        self.name = name
        self.spec: dict[str, Any] = {"human": True}
        self._asker: Callable[[DecisionRequest, asyncio.Future[str]], None] | None = None

    def connect(self, asker: Callable[[DecisionRequest, asyncio.Future[str]], None]) -> None:
        """The UI registers how to show a request; it resolves the future with the answer."""
        self._asker = asker

    async def reply(self, request: DecisionRequest, messages: list[Message], sink: Any) -> AgentReply:
        if self._asker is None:
            raise RuntimeError("a human seat needs the TUI to answer; it cannot run headless")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        self._asker(request, future)
        text = await future
        sink.text(text)
        return AgentReply(
            text=text,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            input_tokens=0,
            output_tokens=0,
            cost_usd=0.0,
        )
