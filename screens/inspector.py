"""The decision inspector: everything one decision sent and got back, and a re-ask editor.

Left: the exact messages (each role), the raw response, provider reasoning, the
constrained answer, the parse result with any normalisation, every rejected attempt with
its error, the sampled action and latency / tokens / cost. Right: the prompt in an
editor; ctrl+r asks the same agent again (rebuilt from the seat's stored public spec,
keys from the environment) through :mod:`coop_tui.reask` in a worker thread. The new
answer streams into the right pane beside the original, and is stored as a decision of
its own, so nothing is lost. The screen itself never talks to a provider or the SQL.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sqlite3
from typing import Any

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Markdown, Static, TextArea
from textual.worker import get_current_worker

from coop_tui.events import (
    AnswerRejected,
    DecisionDone,
    DecisionStarted,
    Event,
    ReasoningDelta,
    StreamRestarted,
    TextDelta,
)
from coop_tui.judging.links import judged_by, judged_text, judgements_of
from coop_tui.screens.widgets import NavScreen, distribution_text
from coop_tui.terminal import terminal_text, widget_text

FRAME = 1 / 30


def _heading(title: str) -> Text:
    return Text(f"\n▌ {title}", style="bold cyan")


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:.6f}"


def _tokens(x: int | None) -> str:
    return "-" if x is None else str(x)


def message_texts(messages: list[dict[str, Any]]) -> list[Text]:
    """Each message as a role line and its exact content (no markup is interpreted)."""
    out: list[Text] = []
    for i, m in enumerate(messages, start=1):
        role = m.get("role", "?")
        style = {"system": "bold magenta", "user": "bold green", "assistant": "bold yellow"}.get(role, "bold")
        out.append(Text(f"── {i}. {role} ──", style=style))
        out.append(widget_text(m.get("content", ""), lines=True))
    return out


def decision_summary(decision: Any, game: Any = None) -> Text:
    """Sampled action, distribution, latency, tokens and cost on a few lines."""
    d = decision
    out = Text()
    out.append_text(distribution_text(d, game))
    out.append("\n")
    queued = "" if d.queue_ms is None else f" (queued {d.queue_ms:.0f} ms before)"
    out.append(f"latency {d.latency_ms:.0f} ms{queued} · tokens in {_tokens(d.input_tokens)} "
               f"out {_tokens(d.output_tokens)} · cost {_money(d.cost_usd)} · "
               f"attempts {d.attempts} · transport retries {d.transport_retries}", style="dim")
    if d.reused:
        out.append(" · reused from the store", style="dim cyan")
    return out


def decision_details(decision: Any, game: Any = None) -> Group:
    """The whole stored record of a decision: outcome first, the long messages last."""
    from coop_tui.reask import request_messages

    d = decision
    parts: list[Any] = [_heading("Outcome"), decision_summary(d, game)]
    parts.append(_heading("Raw response"))
    parts.append(widget_text(d.response, lines=True) if d.response else Text("(empty)", style="dim"))
    if d.reasoning:
        parts.append(_heading("Provider reasoning"))
        parts.append(widget_text(d.reasoning, "italic dim", lines=True))
    if d.answer is not None:
        parts.append(_heading("Constrained answer" if d.constrained else "Separate answer"))
        parts.append(widget_text(d.answer, lines=True))
    parts.append(_heading("Parse"))
    if d.valid:
        parts.append(Text.assemble(("✓ valid ", "bold green"), (d.kind, "dim"), "  ",
                                   json.dumps(d.parsed, default=str)))
    else:
        parts.append(widget_text(f"✗ invalid after {d.attempts} attempt(s): {d.error}", "bold red",
                                 lines=True))
    if d.normalisation:
        parts.append(widget_text(f"normalisation: {d.normalisation}", "yellow", lines=True))
    if d.labels:
        mapping = ", ".join(
            f"{lab}→action {a}" for lab, a in zip(d.labels, d.label_to_action, strict=False)
        )
        parts.append(widget_text(f"labels: {mapping or ', '.join(d.labels)}", "dim"))
    parts.append(_heading(f"Rejected attempts ({len(d.retries)})"))
    if not d.retries:
        parts.append(Text("none: the first answer was used", style="dim"))
    for n, attempt in enumerate(d.retries, start=1):
        parts.append(widget_text(f"attempt {n}: {attempt.error}", "bold yellow", lines=True))
        if attempt.reasoning:
            parts.append(widget_text(attempt.reasoning, "italic dim", lines=True))
        parts.append(widget_text(attempt.response or "(empty)", lines=True))
        parts.append(Text(f"latency {attempt.latency_ms:.0f} ms · tokens in "
                          f"{_tokens(attempt.input_tokens)} out {_tokens(attempt.output_tokens)} · "
                          f"cost {_money(attempt.cost_usd)}", style="dim"))
    parts.append(_heading("Messages sent (the request)"))
    if not d.prompt and not d.retries:
        parts.append(Text("none: a fixed strategy answers from the game state, so no prompt "
                          "was rendered or stored for it", style="dim"))
    parts.extend(message_texts(request_messages(d)))
    if len(d.prompt) > len(request_messages(d)):
        parts.append(_heading("Final conversation (with the retry instructions)"))
        parts.extend(message_texts(d.prompt))
    return Group(*parts)


def judgement_texts(decision: Any, judgements: list[dict[str, Any]], judged: int | None) -> list[Text]:
    """Judgements of this decision (coop-tui judge) first: judge, rubric, labels with their
    confidence, then the judged text; for a judge's own decision, the decision it judged."""
    parts: list[Text] = []
    if judged is not None:
        parts.append(_heading("Judgement"))
        parts.append(Text(f"this decision judges decision #{judged} (its text is in the "
                          "request below)", style="dim"))
    if not judgements:
        return parts
    parts.append(_heading(f"Judgements ({len(judgements)})"))
    for j in judgements:
        head = Text.assemble((terminal_text(str(j["judge"]), markup=False), "bold"),
                             f" · {terminal_text(str(j['rubric']), markup=False)} v{j['version']} · ",
                             (f"decision #{j['judge_decision']}", "dim"))
        parts.append(head)
        if not j["valid"]:
            parts.append(Text("  invalid: the judge gave no usable answer", style="red"))
            continue
        present = [lab for lab in j["labels"] if lab["present"]]
        line = Text("  ")
        for lab in present:
            line.append(f"{terminal_text(str(lab['category']), markup=False)} {lab['confidence']:.2f}",
                        style="bold green")
            line.append("  ")
        if not present:
            line.append("no category present", style="dim")
        parts.append(line)
    parts.append(_heading("Judged text"))
    text = judged_text(decision.response, decision.reasoning)
    parts.append(widget_text(text, lines=True) if text else Text("(empty)", style="dim"))
    return parts


class InspectorScreen(NavScreen):
    """One decision in full, with an editor to re-ask it."""

    HELP_TITLE = "Decision inspector"
    AUTO_FOCUS = "#insp-prompt"
    """The prompt editor has focus when the screen opens: editing the prompt and re-asking
    is what a person comes here for (the details on the left scroll with the mouse)."""
    CSS_PATH = "inspector.tcss"
    BINDINGS = [
        Binding("ctrl+r", "reask", "Re-ask", priority=True),
        Binding("f2", "restore", "Restore prompt"),
        Binding("ctrl+o", "open_new", "Open re-asked"),
        Binding("f6", "focus_editor", "Editor", show=False),
        Binding("question_mark", "help", "Help", show=False),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, store: Any, decision_id: int) -> None:
        super().__init__()
        self.store = store
        self.decision_id = int(decision_id)
        self.target: Any = None
        self.original_prompt = ""
        self.result: Any = None
        """The last :class:`~coop_tui.reask.ReaskResult` (tests read it)."""
        self.reasking = False
        self.judgements: list[dict[str, Any]] = []
        """Judgements of the decision (coop-tui judge), as shown (tests read them)."""
        self.error: str | None = None
        self.queue: collections.deque[Event] = collections.deque()
        self.new_text = ""
        self.new_reasoning = ""
        self._stream: Any = None
        self._draining = False

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(Text.assemble((" coop-tui ", "bold reverse"), (" inspector ", "bold"),
                                   f" decision #{self.decision_id}  ", ("loading…", "dim")),
                     id="insp-title")
        with Horizontal(id="insp-body"):
            with VerticalScroll(id="insp-original") as left:
                left.border_title = "Original decision"
                yield Static("", id="insp-details")
            with Vertical(id="insp-right"):
                editor = TextArea("", id="insp-prompt", soft_wrap=True, show_line_numbers=False)
                editor.border_title = "Prompt (last user message) · ctrl+r re-asks · f2 restores"
                yield editor
                yield Static(Text("edit the prompt, then ctrl+r asks the same agent again",
                                  style="dim"), id="insp-reask-status")
                with VerticalScroll(id="insp-new") as right:
                    right.border_title = "Re-asked answer"
                    reasoning = Static("", id="insp-new-reasoning")
                    reasoning.display = False
                    yield reasoning
                    yield Markdown("", id="insp-new-text")
                    yield Static("", id="insp-new-outcome")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(FRAME, self._drain)
        self._load()

    @work(thread=True, exclusive=True, group="load")
    def _load(self) -> None:
        from coop_tui.reask import ReaskError, load_target

        with self.store_open() as open_:
            if not open_:
                return
            try:
                target = load_target(self.store, self.decision_id)
                reasks = self.store.reasks_of(self.decision_id)
                run = self.store.run(target.match["run_id"]) or {}
                judgements = judgements_of(self.store, self.decision_id)
                judged = judged_by(self.store, self.decision_id)
            except ReaskError as exc:
                self.from_worker(self._show_error, str(exc))
                return
            except sqlite3.OperationalError:
                if self.closing():  # interrupted: the app is closing
                    return
                raise
        self.from_worker(self._show, target, reasks, run, judgements, judged)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.query_one("#insp-details", Static).update(widget_text(message, "bold red", lines=True))
        self.query_one("#insp-title", Static).update(
            Text.assemble((" coop-tui ", "bold reverse"), (" inspector ", "bold"),
                          f" decision #{self.decision_id}  ", ("not found", "red")))

    def _show(self, target: Any, reasks: list[dict[str, Any]], run: dict[str, Any],
              judgements: list[dict[str, Any]] | None = None, judged: int | None = None) -> None:
        from coop_tui.reask import editable_prompt

        self.target = target
        d = target.decision
        seat = target.seat
        title = Text.assemble(
            (" coop-tui ", "bold reverse"), (" inspector ", "bold"),
            f" decision #{self.decision_id} ",
            ("✓ " if d.valid else "✗ ", "bold green" if d.valid else "bold red"),
            (terminal_text(f"{seat['agent']} (seat {d.seat + 1}, {seat.get('agent_kind') or '?'}) "
                           f"· round {d.round} {d.phase} · {d.kind} · run "
                           f"{run.get('name', target.match['run_id'])} · match {d.match_id[:8]}",
                           markup=False), "dim"),
        )
        self.query_one("#insp-title", Static).update(title)
        details = decision_details(d, target.game)
        if reasks:
            lines = [_heading(f"Re-asked before ({len(reasks)})")]
            lines.extend(Text(f"#{r['id']} in run {r['run_id']}"
                              + ("" if r["valid"] else " (invalid)"), style="dim")
                         for r in reasks)
            details = Group(details, *lines)
        if judgements or judged is not None:
            details = Group(*judgement_texts(d, judgements or [], judged), details)
        self.judgements = judgements or []
        self.query_one("#insp-details", Static).update(details)
        self.original_prompt = editable_prompt(d)
        self.query_one("#insp-prompt", TextArea).load_text(self._editor_text())

    # ------------------------------------------------------------ re-ask
    def action_reask(self) -> None:
        if self.target is None:
            self.notify("the decision is not loaded", severity="warning", timeout=2)
            return
        if self.reasking:
            self.notify("a re-ask is already running", timeout=2)
            return
        prompt = self.query_one("#insp-prompt", TextArea).text
        if prompt == self._editor_text():  # unedited: the exact prompt, control characters too
            prompt = self.original_prompt
        self.reasking = True
        self.result = None
        self.queue.clear()
        self._reset_new_pane()
        self._reask_status(widget_text(f"asking {self.target.seat['agent']} again…", "yellow",
                                       limit=200))
        self._run_reask(prompt)

    def _reset_new_pane(self) -> None:
        self.new_text = ""
        self.new_reasoning = ""
        self._stream = None
        reasoning = self.query_one("#insp-new-reasoning", Static)
        reasoning.update("")
        reasoning.display = False
        self.query_one("#insp-new-text", Markdown).update("")
        self.query_one("#insp-new-outcome", Static).update("")

    @work(thread=True, exclusive=True, group="reask")
    def _run_reask(self, prompt: str) -> None:
        """The re-ask runs in its own thread and event loop: a local model's compute or a
        provider's slow stream never touches the UI loop; events come back via a queue."""
        from coop_tui.reask import ReaskError, reask

        worker = get_current_worker()
        try:
            result = asyncio.run(reask(self.store, self.decision_id, prompt, listener=self.queue.append))
        except ReaskError as exc:
            if not worker.is_cancelled:
                self.from_worker(self._reask_failed, str(exc))
            return
        except Exception as exc:  # a provider error: shown, and stored by reask as failed
            if not worker.is_cancelled:
                self.from_worker(self._reask_failed, f"{type(exc).__name__}: {exc}")
            return
        if not worker.is_cancelled:
            self.from_worker(self._reask_done, result)

    async def _drain(self) -> None:
        if self._draining or not self.queue:
            return
        self._draining = True
        try:
            text: list[str] = []
            while self.queue:
                event = self.queue.popleft()
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    continue
                if text:
                    await self._write("".join(text))
                    text = []
                await self._apply(event)
            if text:
                await self._write("".join(text))
        finally:
            self._draining = False

    async def _write(self, text: str) -> None:
        # the answer as Markdown, its control characters shown (escaping is per character,
        # so escaping each delta is escaping the whole)
        text = terminal_text(text, markup=False, lines=True)
        self.new_text += text
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one("#insp-new-text", Markdown))
        await self._stream.write(text)

    async def _apply(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta):
            self.new_reasoning += event.text
            widget = self.query_one("#insp-new-reasoning", Static)
            widget.display = True
            widget.update(widget_text(self.new_reasoning, "italic dim", lines=True))
        elif isinstance(event, DecisionStarted) and event.attempt > 1:
            await self._write(f"\n\n---\n\n*attempt {event.attempt}*\n\n")
        elif isinstance(event, AnswerRejected):
            self._reask_status(widget_text(f"attempt {event.attempt} rejected: {event.reason} — "
                                           "asking again", "yellow"))
        elif isinstance(event, StreamRestarted):
            self._reask_status(widget_text(f"stream restarted: {event.reason}", "yellow"))
        elif isinstance(event, DecisionDone):
            await self._finish_stream()

    async def _finish_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def _reask_done(self, result: Any) -> None:
        await self._drain()
        await self._finish_stream()
        self.reasking = False
        self.result = result
        d = result.decision
        if not self.new_text and d.response:
            self.new_text = terminal_text(d.response, markup=False, lines=True)
            await self.query_one("#insp-new-text", Markdown).update(self.new_text)
        original = self.target.decision
        outcome = Text()
        outcome.append("re-asked  ", style="bold")
        outcome.append_text(decision_summary(d, self.target.game))
        outcome.append("\noriginal  ", style="bold")
        outcome.append_text(distribution_text(original, self.target.game))
        same = (d.parsed == original.parsed) if d.valid and original.valid else None
        if same is not None:
            outcome.append("\n" + ("same answer as the original" if same else "the answer changed"),
                           style="cyan" if same else "bold magenta")
        self.query_one("#insp-new-outcome", Static).update(outcome)
        where = f"stored as decision #{result.decision_id} in run {result.run_id}"
        self._reask_status(Text(f"✓ {where} · ctrl+o opens it", style="green") if d.valid
                           else widget_text(f"✗ no valid answer ({d.error}); {where}", "bold red"))

    async def _reask_failed(self, message: str) -> None:
        await self._drain()
        await self._finish_stream()
        self.reasking = False
        self.error = message
        self._reask_status(widget_text(f"✗ {message}", "bold red", lines=True))

    def _reask_status(self, text: Text) -> None:
        self.query_one("#insp-reask-status", Static).update(text)

    # ------------------------------------------------------------ other actions
    def action_restore(self) -> None:
        self.query_one("#insp-prompt", TextArea).load_text(self._editor_text())

    def _editor_text(self) -> str:
        """The prompt as the editor shows it: a control character in it (a colleague's
        template, a co-player's message) as an escape, since the editor would send it to
        the terminal; an edited prompt is sent as shown."""
        return terminal_text(self.original_prompt, markup=False, lines=True)

    def action_focus_editor(self) -> None:
        self.query_one("#insp-prompt", TextArea).focus()

    def action_open_new(self) -> None:
        if self.result is None or self.result.decision_id is None:
            self.notify("no re-asked decision yet (ctrl+r)", timeout=2)
            return
        self.app.push_screen(InspectorScreen(self.store, self.result.decision_id))

    async def wait_reasked(self) -> None:
        """Until the running re-ask is over and its events are on screen (tests)."""
        while self.reasking or self.queue or self._draining:
            await asyncio.sleep(FRAME / 2)
