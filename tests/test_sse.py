"""The byte-level SSE decoder of the openai transport (coop_tui/agents/sse.py).

Each stream is cut at every byte, and at every pair of bytes, and fed piece by piece; the
events must be those of a plain line-by-line reading of the whole stream. JSON payloads
must read as ``json.loads`` reads them, errors included.
"""

from __future__ import annotations

import itertools
import json

import pytest

from coop_tui.agents.sse import DONE, SSEDecoder, loads

CHUNK = b'{"choices": [{"delta": {"content": "hi"}, "finish_reason": null}]}'
STREAMS = {
    "openai": b"data: " + CHUNK + b"\n\ndata: " + CHUNK + b"\n\ndata: [DONE]\n\n",
    "crlf": b"data: " + CHUNK + b"\r\n\r\ndata: [DONE]\r\n\r\n",
    "no space": b"data:" + CHUNK + b"\n\ndata:[DONE]\n\n",
    "comments and fields": (
        b": keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: " + CHUNK + b"\n\n"
        b":ping\ndata: [DONE]\n\n"
    ),
    "multi-line data": b'data: {"choices":\ndata: []}\n\ndata: [DONE]\n\n',
    "multi-line crlf": b'data: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\r\n\r\n',
    "extra blank lines": b"\n\ndata: 1\n\n\n\n\ndata: 2\n\n\n",
    "no blank line at the end": b"data: 1\n\ndata: 2",
    "unfinished last line": b"data: 1\n\ndata: 2\ndata: 3\n",
    "blank values": b"data:\n\ndata:   \n\n",
    "mixed line ends": b"data: 1\r\n\ndata: 2\n\r\n",
    "unicode": 'data: {"content": "é 😀 ü"}\n\n'.encode(),
}


def reference(stream: bytes) -> list[bytes]:
    """The events of a whole stream read line by line (the rules in the module docstring)."""
    events: list[bytes] = []
    data: list[bytes] = []
    lines = stream.split(b"\n")
    for line in lines[:-1]:  # the last is unfinished (or empty)
        line = line.removesuffix(b"\r")
        if line.startswith(b"data:"):
            data.append(line[5:].strip())
        elif not line:
            if data:
                events.append(b"\n".join(data))
            data = []
    if lines[-1].startswith(b"data:"):
        data.append(lines[-1].removesuffix(b"\r")[5:].strip())
    if data:
        events.append(b"\n".join(data))
    return events


def decode(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    events: list[bytes] = []
    for piece in pieces:
        events += decoder.feed(piece)
    return events + decoder.close()


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_events_are_the_same_wherever_the_body_is_cut(name: str) -> None:
    stream = STREAMS[name]
    expected = reference(stream)
    assert decode([stream]) == expected
    for cut in range(1, len(stream)):
        assert decode([stream[:cut], stream[cut:]]) == expected, cut
    for a, b in itertools.combinations(range(1, len(stream)), 2):
        assert decode([stream[:a], stream[a:b], stream[b:]]) == expected, (a, b)
    assert decode([stream[i:i + 1] for i in range(len(stream))]) == expected


def test_the_usual_shapes() -> None:
    assert decode([STREAMS["openai"]]) == [CHUNK, CHUNK, DONE]
    assert decode([STREAMS["crlf"]]) == [CHUNK, DONE]
    assert decode([STREAMS["comments and fields"]]) == [CHUNK, DONE]
    assert decode([STREAMS["multi-line data"]]) == [b'{"choices":\n[]}', DONE]
    assert decode([STREAMS["extra blank lines"]]) == [b"1", b"2"]
    assert decode([STREAMS["no blank line at the end"]]) == [b"1", b"2"]
    assert decode([STREAMS["unfinished last line"]]) == [b"1", b"2\n3"]
    assert decode([STREAMS["blank values"]]) == [b"", b""]


def test_one_event_per_piece_takes_the_short_path_with_the_same_result() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: " + CHUNK + b"\n\n") == [CHUNK]
    assert decoder.feed(b"data: [DONE]\n\n") == [DONE]
    assert decoder.feed(b"data: [DONE]\r\n\n") == [DONE]
    assert decoder.close() == []


def test_a_piece_ending_inside_a_crlf_delivers_the_events_before_it_at_once() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\r\n\r\ndata: 2\r") == [b"1"]
    assert decoder.feed(b"\n\r\n") == [b"2"]


DOCUMENTS = [
    CHUNK,
    b'{"a": 1, "a": 2}',
    b'{"n": 123456789012345678901234567890, "f": 1e400, "g": NaN, "h": -Infinity}',
    b'{"s": "\\ud83d\\ude00", "lone": "\\ud800"}',
    b"\xef\xbb\xbf{}",
    '{"s": "é"}'.encode(),
    b" [1, 2.5, -0.0, true, null] ",
    b"[DONE]",
    b"{} x",
    b'{"s": "\t"}',
    b"[1,]",
    b"",
    b'{"choices": [{"delta": {"content": "cut',
    b"\xff\xfe",
]


@pytest.mark.parametrize("payload", DOCUMENTS)
def test_json_reads_as_the_standard_library_reads_it(payload: bytes) -> None:
    try:
        expected = json.loads(payload)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            loads(payload)
        return
    assert repr(loads(payload)) == repr(expected)
