"""The loopback server's Batch APIs: OpenAI's (files + ``/v1/batches``) and a fake of
Anthropic's Message Batches (``/v1/messages/batches``).

Why it exists: ``batch = true`` sends decisions through these APIs, and the tests must
exercise the real ``openai`` and ``anthropic`` SDKs over real HTTP, including what makes
batches hard: a batch that is still running when the client dies, a batch that expires
or fails, and single requests that fail inside a finished batch.

A batch never finishes on a clock (tests need no sleeps): it stays in progress for
``batch_polls`` retrievals and then ends, or stays in progress while ``batch_hold`` is
set. Outcomes come from ``batch_script`` (one entry per created batch, in order: None or
"completed", "expired", "failed"); a request whose line ``batch_fail`` names (a callable
of the request body returning an error message, or None) fails alone inside its batch.
``submitted`` counts how often each ``custom_id`` was sent, over every batch.

Hostile results: ``batch_output_edit`` (a callable of the output file's lines, as bytes
without their newlines) returns the lines to serve instead, to plant a line that is not
JSON, a repeated ``custom_id`` or an oversized answer; returning None serves an output file
id that does not exist (its download answers 404). ``batch_status`` replaces the status a
batch in progress reports (a status coop-tui does not know).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Answer = Callable[[dict[str, Any], int], dict[str, Any]]
"""(chat request body, index) -> a ``chat.completion`` object (the server's answer)."""
Edit = Callable[[list[bytes]], list[bytes] | None]
"""The results file's lines -> the lines to serve instead, or None for no file at all."""


def multipart_fields(raw: bytes, content_type: str) -> dict[str, bytes]:
    """The parts of a ``multipart/form-data`` body by field name (an uploaded file's bytes
    under its field name): enough for the SDKs' file uploads."""
    boundary = ""
    for piece in content_type.split(";"):
        name, _, value = piece.strip().partition("=")
        if name.lower() == "boundary":
            boundary = value.strip('"')
    out: dict[str, bytes] = {}
    if not boundary:
        return out
    for part in raw.split(b"--" + boundary.encode()):
        head, sep, body = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        disposition = head.decode("latin-1")
        marker = 'name="'
        at = disposition.find(marker)
        if at < 0:
            continue
        name = disposition[at + len(marker):].split('"', 1)[0]
        out[name] = body.removesuffix(b"\r\n")
    return out


@dataclass
class BatchBook:
    """What the server knows of uploaded files and batches (kept across ``configure``)."""

    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    polls: Counter[str] = field(default_factory=Counter)
    submitted: Counter[str] = field(default_factory=Counter)
    """custom_id -> how many times it was sent in a batch (both APIs)."""
    created: list[str] = field(default_factory=list)
    """Batch ids in creation order."""
    inputs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Batch id -> its request lines (custom_id, body/params)."""

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{len(self.files) + len(self.batches) + 1:06d}"

    # -- OpenAI ---------------------------------------------------------------------------

    def upload(self, data: bytes, purpose: str, filename: str = "batch.jsonl") -> dict[str, Any]:
        file_id = self.new_id("file-loop")
        self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data),
                "created_at": int(time.time()), "filename": filename, "purpose": purpose,
                "status": "processed"}

    def create_openai(self, body: dict[str, Any], script: Any) -> dict[str, Any] | str:
        """A new batch from an uploaded file; an error message when it cannot be made."""
        data = self.files.get(str(body.get("input_file_id")))
        if data is None:
            return "no such input_file_id"
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        batch_id = self.new_id("batch_loop")
        for line in lines:
            self.submitted[str(line.get("custom_id"))] += 1
        outcome = self._outcome(script)
        self.created.append(batch_id)
        self.inputs[batch_id] = lines
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
            "input_file_id": body.get("input_file_id"),
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating", "created_at": int(time.time()),
            "metadata": body.get("metadata") or None, "output_file_id": None,
            "error_file_id": None, "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_outcome": outcome, "_api": "openai",
        }
        return self.public(batch_id)

    def _outcome(self, script: Any) -> str:
        index = len(self.created)
        if index < len(script or ()):
            return script[index] or "completed"
        return "completed"

    def public(self, batch_id: str) -> dict[str, Any]:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def retrieve(self, batch_id: str, *, polls: int, hold: bool, answer: Answer,
                 fail: Any, edit: Edit | None = None,
                 status: str | None = None) -> dict[str, Any] | None:
        """The batch after one more poll: it ends on the poll after ``polls`` in-progress
        answers, unless held."""
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        if batch["_api"] == "openai" and batch["status"] in ("validating", "in_progress"):
            self.polls[batch_id] += 1
            if hold or self.polls[batch_id] <= polls:
                batch["status"] = "in_progress"
            else:
                self._finish_openai(batch_id, answer, fail)
                self._edit(batch, "output_file_id", edit)
        elif batch["_api"] == "anthropic" and batch["processing_status"] == "in_progress":
            self.polls[batch_id] += 1
            if not hold and self.polls[batch_id] > polls:
                self._finish_anthropic(batch_id, answer, fail)
                self._edit(batch, "_results", edit)
        shown = self.public(batch_id)
        for key in ("status", "processing_status"):
            if status and shown.get(key) == "in_progress":
                shown[key] = status
        return shown

    def _edit(self, batch: dict[str, Any], which: str, edit: Edit | None) -> None:
        """Serve ``edit``'s lines in place of the batch's results (see the module's doc)."""
        if edit is None:
            return
        file_id = batch.get(which) if which != "_results" else f"results-{batch['id']}"
        lines = self.files.get(file_id, b"").splitlines() if file_id else []
        served = edit(lines)
        if served is None:
            self.files.pop(file_id or "", None)
            if which == "output_file_id":
                batch[which] = "file-gone"
            return
        data = b"".join(line + b"\n" for line in served)
        if which == "output_file_id":
            batch[which] = self.upload(data, "batch_output")["id"]
        else:
            self.files[f"results-{batch['id']}"] = data

    def _finish_openai(self, batch_id: str, answer: Answer, fail: Any) -> None:
        batch = self.batches[batch_id]
        outcome = batch["_outcome"]
        now = int(time.time())
        if outcome == "failed":
            batch.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                {"code": "invalid_jsonl", "message": "the loopback server failed this batch",
                 "param": None, "line": None}]})
            return
        if outcome == "expired":
            batch.update(status="expired", expired_at=now)
            errors = [self._line_error(line, "batch_expired",
                                       "This request could not be executed before the "
                                       "completion window expired.")
                      for line in self.inputs[batch_id]]
            batch["error_file_id"] = self.upload(_jsonl(errors), "batch_output")["id"]
            batch["request_counts"].update(failed=len(errors))
            return
        done, errors = [], []
        for i, line in enumerate(self.inputs[batch_id]):
            body = line.get("body") or {}
            problem = fail(body) if callable(fail) else None
            if problem:
                errors.append(self._line_error(line, "server_error", problem))
                continue
            done.append({"id": f"batch_req_{batch_id}_{i}", "custom_id": line.get("custom_id"),
                         "response": {"status_code": 200, "request_id": f"req_{i}",
                                      "body": answer(body, i)}, "error": None})
        batch.update(status="completed", completed_at=now)
        if done:
            batch["output_file_id"] = self.upload(_jsonl(done), "batch_output")["id"]
        if errors:
            batch["error_file_id"] = self.upload(_jsonl(errors), "batch_output")["id"]
        batch["request_counts"].update(completed=len(done), failed=len(errors))

    @staticmethod
    def _line_error(line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        return {"id": None, "custom_id": line.get("custom_id"), "response": None,
                "error": {"code": code, "message": message}}

    def listing(self) -> dict[str, Any]:
        data = [self.public(b) for b in reversed(self.created)
                if self.batches[b]["_api"] == "openai"]
        return {"object": "list", "data": data, "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None}

    # -- Anthropic ------------------------------------------------------------------------

    def create_anthropic(self, body: dict[str, Any], script: Any, base: str) -> dict[str, Any]:
        requests = list(body.get("requests") or [])
        batch_id = self.new_id("msgbatch_loop")
        for item in requests:
            self.submitted[str(item.get("custom_id"))] += 1
        outcome = self._outcome(script)
        self.created.append(batch_id)
        self.inputs[batch_id] = requests
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.batches[batch_id] = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0,
                               "canceled": 0, "expired": 0},
            "created_at": now, "expires_at": now, "ended_at": None, "archived_at": None,
            "cancel_initiated_at": None, "results_url": None,
            "_outcome": outcome, "_api": "anthropic", "_base": base,
        }
        return self.public(batch_id)

    def _finish_anthropic(self, batch_id: str, answer: Answer, fail: Any) -> None:
        batch = self.batches[batch_id]
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for i, item in enumerate(self.inputs[batch_id]):
            params = item.get("params") or {}
            chat = {"model": params.get("model"), "messages": _chat_messages(params)}
            problem = fail(chat) if callable(fail) else None
            if batch["_outcome"] in ("expired", "failed"):
                result: dict[str, Any] = {"type": "expired"}
                counts["expired"] += 1
            elif problem:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": problem}}}
                counts["errored"] += 1
            else:
                completion = answer(chat, i)
                message = completion["choices"][0]["message"]
                usage = completion.get("usage") or {}
                result = {"type": "succeeded", "message": {
                    "id": f"msg_loop_{i}", "type": "message", "role": "assistant",
                    "model": params.get("model"), "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "content": [{"type": "text", "text": message.get("content") or ""}],
                    "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                              "output_tokens": usage.get("completion_tokens", 0)}}}
                counts["succeeded"] += 1
            lines.append({"custom_id": item.get("custom_id"), "result": result})
        self.files[f"results-{batch_id}"] = _jsonl(lines)
        batch.update(processing_status="ended", request_counts=counts,
                     ended_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     results_url=f"{batch['_base']}/v1/messages/batches/{batch_id}/results")


def _chat_messages(params: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's messages as chat messages (its system text first), so the
    server's scripted answers read both APIs alike."""
    out: list[dict[str, Any]] = []
    system = params.get("system")
    if isinstance(system, str) and system:
        out.append({"role": "system", "content": system})
    for message in params.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append({"role": message.get("role"), "content": content})
    return out


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()
