"""The loopback server's Batch API routes: OpenAI's files and batches, Anthropic's message
batches. The batches themselves (uploads, polls, outcomes) live in :mod:`.batches`; this
module maps a request's method and path onto them and writes the answer.

Why its own module: the chat route and its faults are what most tests read; the batch
routes are a second API with their own paths, keys and not-found answers.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from coop_tui.testing.answers import batch_completion
from coop_tui.testing.batches import BatchBook, multipart_fields
from coop_tui.testing.config import RecordedRequest, ServerConfig
from coop_tui.testing.wire import send_error, send_json

BATCH_PATHS = ("/v1/files", "/v1/batches", "/v1/messages/batches")
"""Paths the batch routes answer (everything under them)."""


def authorised(cfg: ServerConfig, headers: dict[str, str]) -> bool:
    """OpenAI's ``Authorization: Bearer`` or Anthropic's ``x-api-key``, when a key is set."""
    key = cfg.api_key
    if key is None:
        return True
    return headers.get("authorization") == f"Bearer {key}" or headers.get("x-api-key") == key


async def route_batch(
    cfg: ServerConfig,
    book: BatchBook,
    record: RecordedRequest,
    raw: bytes,
    writer: asyncio.StreamWriter,
    keep: bool,
    base_url: str,
) -> None:
    """Answer one batch request: 401 without the key, the object (or file) it names, 400
    for a batch that cannot be created, else 404."""
    if not authorised(cfg, record.headers):
        await send_error(writer, 401, "Incorrect API key provided", "authentication_error", keep)
        return
    found = _find(cfg, book, record, raw, base_url)
    if isinstance(found, bytes):
        await send_json(writer, 200, None, keep, raw=found)
    elif isinstance(found, str):
        await send_error(writer, 400, found, "invalid_request_error", keep)
    elif found is None:
        await send_error(writer, 404, f"no such object at {record.path}", "not_found_error", keep)
    else:
        await send_json(writer, 200, found, keep)


def _find(
    cfg: ServerConfig, book: BatchBook, record: RecordedRequest, raw: bytes, base_url: str
) -> dict[str, Any] | bytes | str | None:
    """What the request names: an object, a file's bytes, a refusal's message (a batch
    that cannot be created) or None (nothing there)."""
    method = record.method
    parts = [p for p in record.path.split("/") if p][1:]  # without the "v1"
    if parts == ["files"] and method == "POST":
        fields_ = multipart_fields(raw, record.headers.get("content-type", ""))
        return book.upload(fields_.get("file", b""), fields_.get("purpose", b"").decode() or "batch")
    if len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
        return book.files.get(parts[1])
    if parts == ["batches"] and method == "POST":
        return book.create_openai(record.body or {}, cfg.batch_script)
    if parts == ["batches"]:
        return book.listing()
    if parts == ["messages", "batches"] and method == "POST":
        return book.create_anthropic(record.body or {}, cfg.batch_script, base_url)
    if parts[-1:] == ["results"] and len(parts) == 4:
        return book.files.get(f"results-{parts[2]}")
    if len(parts) in (2, 3) and parts[-1].startswith(("batch_", "msgbatch_")):
        if cfg.batch_lost:
            return None
        return book.retrieve(parts[-1], polls=cfg.batch_polls, hold=cfg.batch_hold,
                             answer=partial(batch_completion, cfg), fail=cfg.batch_fail,
                             edit=cfg.batch_output_edit, status=cfg.batch_status)
    return None
