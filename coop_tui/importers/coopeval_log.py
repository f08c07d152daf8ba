"""Read CoopEval ``game_log.txt`` files: prompt/response pairs with what each prompt asks.

CoopEval writes every model call as two blocks::

    ===== Prompt [ID: 7cc98b21] [2026-01-19 21:00:21] =====
    agent: google/gemini-3-flash-preview(CoT)#P1
    prompt:
    <prompt text>

    ===== Response [ID: 7cc98b21] [2026-01-19 21:00:21] =====
    agent: ...
    response:
    <response text>

The CoopEval importer reads logs with it, and the parser tests replay the same real answers
through our parser; :func:`classify_prompt` says which of our answer kinds a prompt asks for
and with which labels, so both agree on how a CoopEval prompt maps to our decisions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from coop_tui.inputs import MAX_DECOMPRESSED_BYTES, read_regular

_HEADER = re.compile(
    r"^===== (?P<what>Prompt|Response) \[ID: (?P<id>[^\]]+)\](?: \[(?P<time>[^\]]*)\])? =====$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class LogEntry:
    """One model call: the prompt sent and the response received."""

    id: str
    agent: str
    prompt: str
    response: str | None
    """None when the log holds the prompt but no response block for it."""
    time: str | None = None


@dataclass(frozen=True)
class PromptInfo:
    """What a CoopEval prompt asks for, in coop-tui terms."""

    kind: str
    """One of our answer kinds: ``mixed``, ``approvals`` or ``mediator`` (``unknown`` else)."""
    labels: tuple[str, ...]
    """mixed: the action labels (with the delegate action, if any); approvals: M1..Mk;
    mediator: the base game's action labels."""
    n_players: int | None = None
    """mediator: the largest number of delegators a key can name."""


def _split_block(body: str, field: str) -> tuple[str, str]:
    """Split ``agent: ...`` and ``<field>:`` off a block body; return (agent, text)."""
    agent = ""
    lines = body.split("\n")
    idx = 0
    if lines and lines[0].startswith("agent:"):
        agent = lines[0][len("agent:") :].strip()
        idx = 1
    if idx < len(lines) and lines[idx].strip() == f"{field}:":
        idx += 1
    text = "\n".join(lines[idx:])
    return agent, text.strip("\n")


def iter_log_entries(path: str | Path) -> Iterator[LogEntry]:
    """Yield the entries of one ``game_log.txt`` in file order (by prompt position)."""
    text = read_regular(path, limit=MAX_DECOMPRESSED_BYTES).decode("utf-8")
    headers = list(_HEADER.finditer(text))
    prompts: dict[str, tuple[str, str, str | None]] = {}
    order: list[str] = []
    responses: dict[str, str] = {}
    for i, head in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[head.end() + 1 : end]
        entry_id = head.group("id")
        if head.group("what") == "Prompt":
            agent, prompt = _split_block(body, "prompt")
            if entry_id not in prompts:
                order.append(entry_id)
            prompts[entry_id] = (agent, prompt, head.group("time"))
        else:
            _, response = _split_block(body, "response")
            responses[entry_id] = response
    for entry_id in order:
        agent, prompt, when = prompts[entry_id]
        yield LogEntry(entry_id, agent, prompt, responses.get(entry_id), when)


_ACTIONS_BLOCK = re.compile(r"Actions available to each player:\n((?:[ \t]*-[ \t]*\S+[^\n]*\n?)+)")
_ACTION_LINE = re.compile(r"^[ \t]*-[ \t]*(?P<label>[^\s:]+)")
_EXTRA_ACTION = re.compile(r"Consider (\w+) as an additional action")
_PROPOSER = re.compile(r"^Mediator proposed by ", re.MULTILINE)
_DELEGATORS = re.compile(r"number of players delegating \(from 1 to (\d+)\)")


def action_labels(prompt: str) -> tuple[str, ...]:
    """The base game's action labels listed under "Actions available to each player"."""
    block = _ACTIONS_BLOCK.search(prompt)
    if block is None:
        return ()
    # a line is "- A0" (2 x 2 games, Public Goods) or "- A0: correspond to the number 2"
    # (Traveler's Dilemma): the label is the token before any colon
    labels = (_ACTION_LINE.match(line) for line in block.group(1).splitlines() if line.strip())
    return tuple(m.group("label") for m in labels if m is not None)


RETRY_MARK = "\nYour previous response was:"
"""Where a CoopEval re-ask starts repeating the rejected answer after the prompt."""


def own_text(prompt: str) -> str:
    """The prompt's own text: a re-ask's echo of the rejected answer (and the reason and
    request after it) cut off, so words of the model's answer are never read as the
    prompt's (an answer naming "A2 as an additional action" eight times once gave a
    decision eleven labels)."""
    return prompt.split(RETRY_MARK, 1)[0]


def classify_prompt(prompt: str) -> PromptInfo:
    """Map a CoopEval prompt to our answer kind and labels by its output-format section,
    read from the prompt's own text (:func:`own_text`)."""
    prompt = own_text(prompt)
    base = action_labels(prompt)
    if '{"M1": <true/false>' in prompt:
        count = len(_PROPOSER.findall(prompt))
        return PromptInfo("approvals", tuple(f"M{i}" for i in range(1, count + 1)))
    delegators = _DELEGATORS.search(prompt)
    if delegators is not None:
        return PromptInfo("mediator", base, int(delegators.group(1)))
    if '{"A0": <INT>' in prompt:
        extra = tuple(m.group(1) for m in _EXTRA_ACTION.finditer(prompt))
        return PromptInfo("mixed", base + tuple(e for e in extra if e not in base))
    return PromptInfo("unknown", base)
