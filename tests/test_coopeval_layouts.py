"""CoopEval's two layouts of a reasoning instruction, and ours of the published one.

The published study's logged prompts (``tests/data/coopeval_sample/*/game_log.txt``) end
with the agent's reasoning instruction, once, re-asks included, where it follows the
re-ask's text; CoopEval's current code sends it as a system message instead. Under our own
words ``style_message = "user_end"`` is the first layout and ``"system"`` the second: the
same user message, the instruction appended at its end (after a blank line) or sent apart.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from coop_tui.prompts import PromptRenderer
from coop_tui.spec import build_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "tests" / "data").glob("coopeval_*/*/game_log.txt"))
UNREADABLE = "I cannot decide yet."


def logged_prompts() -> list[tuple[str, str]]:
    """(agent, prompt) of every logged prompt of the sample logs."""
    out = []
    for log in LOGS:
        parts = re.split(r"^===== (Prompt|Response) \[ID: \w+\] \[[^\]]*\] =====\n",
                         log.read_text(encoding="utf-8"), flags=re.M)
        for kind, body in zip(parts[1::2], parts[2::2], strict=True):
            if kind == "Prompt":
                head = re.match(r"agent: (.*)\nprompt:\n", body)
                assert head is not None
                out.append((head.group(1), body[head.end():].rstrip("\n")))
    return out


def common_tail_lines(texts: list[str]) -> list[str]:
    """The lines every text ends with."""
    tail = texts[0].split("\n")
    for text in texts[1:]:
        lines = text.split("\n")
        n = 0
        while n < min(len(tail), len(lines)) and tail[-1 - n] == lines[-1 - n]:
            n += 1
        tail = tail[len(tail) - n:]
    return tail


def test_the_published_prompts_end_with_the_instruction_once_even_when_re_asked() -> None:
    prompts = logged_prompts()
    by_style: dict[str, list[str]] = {}
    for agent, prompt in prompts:
        by_style.setdefault(re.search(r"\((\w+)\)#", agent).group(1), []).append(prompt)  # type: ignore[union-attr]
    assert set(by_style) == {"CoT", "IO"} and len(prompts) > 200
    re_asked = 0
    for style, texts in by_style.items():
        instruction = "\n".join(common_tail_lines(texts))
        assert instruction.count("\n") >= 1, style  # a sentence or more every prompt ends with
        for text in texts:
            assert text.count(instruction) == 1
            # a re-ask quotes the rejected answer and says, in capitals, that it was not
            # valid; the instruction still comes last, after that
            if "INVALID" in text.replace(instruction, ""):
                re_asked += 1
                assert text.rindex("INVALID") < text.index(instruction)
    assert re_asked >= 1


def answer(body: dict[str, Any]) -> str:
    """Unreadable on a first attempt, the first action on a re-ask."""
    if len(body["messages"]) < 3:
        return UNREADABLE
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    labels = re.findall(r"^- (A\d+)", user.split("Actions you can choose from:")[1], re.M)
    return json.dumps({label: 100 if i == 0 else 0 for i, label in enumerate(labels)})


async def transcripts(tmp_path: Path, style_message: str) -> dict[str, list[list[dict[str, str]]]]:
    """Every request a chain-of-thought and an answer-only seat send in one match of the
    Prisoner's Dilemma (a first attempt and a re-ask each), by style."""
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as server:
        agents = {style: {"model": f"openai/{style}", "api_base": server.url,
                          "api_key": "sk-test", "style": style} for style in ("cot", "direct")}
        data = {"name": "layouts", "seed": 1, "agents": agents,
                "experiments": [{"game": "prisoners", "agents": ["cot", "direct"],
                                 "matchup": [["cot", "direct"]], "style_message": style_message}]}
        store = Store(tmp_path / f"{style_message}.db")
        summary = await run_sweep(build_sweep(data, check_keys=False), store)
        assert summary.status == "done", summary.errors
        out: dict[str, list[list[dict[str, str]]]] = {}
        for request in server.chat_requests:
            assert request.body is not None
            out.setdefault(request.body["model"].split("/")[-1], []).append(
                [{"role": m["role"], "content": m["content"]} for m in request.body["messages"]])
    return out


async def test_user_end_appends_the_instruction_to_the_message_and_to_the_re_ask(
    tmp_path: Path,
) -> None:
    apart = await transcripts(tmp_path, "system")
    at_end = await transcripts(tmp_path, "user_end")
    renderer = PromptRenderer()
    for style in ("cot", "direct"):
        instruction = renderer.render(f"system/{style}.j2")
        (first_apart, again_apart), (first, again) = apart[style], at_end[style]
        system, user = first_apart
        assert system == {"role": "system", "content": instruction}
        # the same user message, the instruction after it: no system message
        assert first == [{"role": "user", "content": user["content"] + "\n\n" + instruction}]
        # the re-ask: the first message, the unreadable answer, the re-ask's text with the
        # instruction once at its end
        assert again_apart[:2] == first_apart and again_apart[2]["content"] == UNREADABLE
        retry = again_apart[3]["content"]
        assert again == [*first, {"role": "assistant", "content": UNREADABLE},
                         {"role": "user", "content": retry + "\n\n" + instruction}]
        assert instruction not in retry and again[-1]["content"].count(instruction) == 1


@pytest.mark.parametrize("study", ["coopeval.toml", "coopeval-offline.toml"])
def test_the_coopeval_studies_default_to_the_published_layout(study: str) -> None:
    data = tomllib.loads((ROOT / "data" / "studies" / study).read_text())
    assert {e.get("style_message") for e in data["experiments"]} == {"user_end"}
