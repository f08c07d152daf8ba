"""The Batch API results reader (:mod:`coop_tui.agents.batch_results`) under any input.

The results file is outside data: these properties say the reader never raises on what a
line holds, never takes a line that is not a JSON object naming one of the batch's
requests, keeps a request's first answer, and never keeps an answer past the agent's
limit. The end-to-end cases (a sweep against the loopback server) are in
``tests/test_batch_api.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coop_tui.agents.batch_results import (
    Outcome,
    anthropic_outcome,
    bounded_lines,
    line_limit,
    openai_outcome,
    read_result_lines,
    read_result_stream,
)

MAX_CHARS = 50
IDS = ["ck-a", "ck-b", "ck-c"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                  max_size=4),
    max_leaves=20,
)


def good_line(cid: str, text: str) -> bytes:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}, "model": "m"}
    return json.dumps({"custom_id": cid, "response": {"status_code": 200, "body": body},
                       "error": None}).encode()


lines_of_any_kind = st.lists(
    st.one_of(
        st.binary(max_size=80),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.builds(lambda cid, v: json.dumps({"custom_id": cid, "response": v}).encode(),
                  st.sampled_from([*IDS, "ck-stranger"]), json_values),
        st.builds(good_line, st.sampled_from(IDS), st.text(max_size=2 * MAX_CHARS)),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(lines_of_any_kind)
def test_the_reader_never_raises_and_keeps_only_what_it_may(lines: list[bytes]) -> None:
    for parse in (openai_outcome, anthropic_outcome):
        out = read_result_lines(lines, parse, max_chars=MAX_CHARS, expected=set(IDS))
        assert set(out.outcomes) <= set(IDS)
        for outcome in out.outcomes.values():
            assert isinstance(outcome, Outcome)
            assert len(outcome.text) + len(outcome.reasoning) <= MAX_CHARS
            assert outcome.error is None or isinstance(outcome.error, str)
        named = 0
        for raw in lines:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            named += isinstance(line, dict) and line.get("custom_id") in IDS
        assert named == len(out.outcomes) + out.duplicates


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(IDS), st.text(max_size=MAX_CHARS)), min_size=1,
                max_size=8))
def test_the_first_answer_of_a_custom_id_is_kept(answers: list[tuple[str, str]]) -> None:
    lines = [good_line(cid, text) for cid, text in answers]
    out = read_result_lines(lines, openai_outcome, max_chars=MAX_CHARS, expected=set(IDS))
    first: dict[str, str] = {}
    for cid, text in answers:
        first.setdefault(cid, text)
    assert {cid: o.text for cid, o in out.outcomes.items()} == first
    assert out.duplicates == len(answers) - len(first)


def test_lines_that_name_no_request_are_reasons_not_answers() -> None:
    out = read_result_lines([b"{not json", b"[]", b'{"custom_id": 7}', good_line("ck-a", "ok")],
                            openai_outcome, max_chars=MAX_CHARS, expected=set(IDS))
    assert list(out.outcomes) == ["ck-a"] and out.outcomes["ck-a"].text == "ok"
    assert out.bad == ["line 1 is not JSON", "line 2 is not a JSON object",
                       "line 3 has no custom_id"]
    assert "3 unreadable line(s)" in (out.missing_reason() or "")


def test_a_line_of_the_wrong_shape_fails_its_own_request() -> None:
    wrong = json.dumps({"custom_id": "ck-b", "response": {"status_code": 200, "body": []}})
    out = read_result_lines([wrong.encode()], openai_outcome, max_chars=MAX_CHARS)
    assert out.outcomes["ck-b"].error and "malformed" in out.outcomes["ck-b"].error


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
       st.integers(min_value=1, max_value=17), st.integers(min_value=1, max_value=30))
def test_bounded_lines_cut_every_line_at_the_bound(
    lines: list[bytes], chunk: int, limit: int
) -> None:
    """Whatever the chunking: each line comes back whole when within the bound, and as its
    first ``limit + 1`` bytes when longer (so the reader sees it is too long)."""
    data = b"\n".join(lines)

    async def collect() -> list[bytes]:
        return [line async for line in bounded_lines(_chunks(data, chunk), limit)]

    got = asyncio.run(collect())
    want = [line if len(line) <= limit else line[:limit + 1] for line in lines]
    if lines and lines[-1] == b"":  # a file ending in a newline has no last empty line
        want = want[:-1]
    assert [g for g in got if g] == [w for w in want if w]


def test_an_oversized_line_is_refused_by_its_head() -> None:
    limit = line_limit(MAX_CHARS)
    huge = good_line("ck-c", "Z" * (limit * 2))
    out = read_result_lines([huge[:limit + 1]], openai_outcome, max_chars=MAX_CHARS)
    refused: Any = out.outcomes["ck-c"]
    assert refused.text == "" and not refused.retryable
    assert "refused, and only this refusal stored" in refused.error


def test_a_results_file_that_goes_on_is_cut_after_twice_its_requests() -> None:
    """A file of endless lines naming requests the batch never sent: read up to two lines
    per request (and 16 more), then cut, the cut named; the real answer before it kept."""
    data = good_line("ck-a", "ok") + b"\n" + (good_line("ck-stranger", "x") + b"\n") * 10_000

    async def read() -> Any:
        return await read_result_stream(_chunks(data, 4096), openai_outcome,
                                        max_chars=MAX_CHARS, expected={"ck-a", "ck-b"})

    out = asyncio.run(read())
    assert out.outcomes["ck-a"].text == "ok" and out.strangers == 2 * 2 + 16 - 1
    assert out.bad == ["the file goes on past 20 lines; the rest was not read"]
