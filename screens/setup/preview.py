"""The setup screen's prompt preview: every seat's first request, as the mechanism builds it.

The preview is rebuilt a moment after the form last changed (debounced), in a worker of
its own; the form is read and its errors said by the screen (:class:`PreviewSource`).
"""

from __future__ import annotations

from typing import Any, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Static

from coop_tui.session import MatchSetup, preview_prompts, prompt_text
from coop_tui.terminal import NAME_WIDTH, terminal_text

PREVIEW_DELAY = 0.25
"""Seconds after the last change of the form before the preview is rebuilt."""


class PreviewSource(Protocol):
    """What the preview asks of its screen: the form, validated, and a line to speak on."""

    def validated(self) -> tuple[MatchSetup, Any]: ...

    def show_message(self, message: str | Text, *, error: bool = False) -> None: ...

    def leaving(self) -> bool: ...


def preview_text(prompts: dict[int, list[dict[str, str]]], setup: MatchSetup, sweep: Any) -> Text:
    """Each seat's prompt under a header naming the seat and its agent."""
    first = next(iter(sweep.cells), None)
    seat_agents = dict(enumerate(first.seats)) if first else {}
    out = Text()
    for seat, messages in prompts.items():
        if out:
            out.append("\n\n")
        agent = setup.seats[seat] if seat < len(setup.seats) else seat_agents.get(seat, "?")
        out.append(f"── Seat {seat + 1} · {terminal_text(str(agent), markup=False, limit=NAME_WIDTH)} ",
                   style="bold reverse")
        out.append("\n")
        out.append(terminal_text(prompt_text(messages), markup=False, lines=True))
    if not prompts:
        out.append("(no prompt: the mechanism asked nothing)", style="dim")
    return out


class PreviewPane(Vertical):
    """The prompt preview beside the form; dimmed while the form does not validate."""

    def __init__(self, source: PreviewSource, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.prompts: dict[int, list[dict[str, str]]] = {}
        """Per seat, the messages of its first request (what the preview shows)."""
        self.error: ValueError | None = None
        """Why the form did not validate at the last preview (None when it did)."""
        self._timer: Timer | None = None
        self._dropped = False

    def compose(self) -> ComposeResult:
        yield Static("Prompt preview", classes="section", id="preview-title")
        with VerticalScroll(id="preview"):
            yield Static(Text("rendering the prompt…", style="dim"), id="preview-text")

    @property
    def scheduled(self) -> bool:
        """A rebuild waits for the form to stay still."""
        return self._timer is not None

    def busy(self) -> bool:
        return any(w.group == "preview" and not w.is_finished for w in self.workers)

    def schedule(self) -> None:
        """Rebuild once the form has not changed for ``PREVIEW_DELAY``."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(PREVIEW_DELAY, self._rebuild_now)

    def _rebuild_now(self) -> None:
        self._timer = None
        self.run_worker(self.rebuild, group="preview", exclusive=True)

    def drop(self) -> None:
        """Another screen on top, or this one leaving: drop a preview still rendering.

        Textual cancels a screen's workers only after it has removed the screen's
        widgets, so a preview finishing in between would write to widgets that are
        gone; cancelled here, before the removal starts, it writes nothing. It is made
        again when the screen comes back (:meth:`take_dropped`)."""
        pending = self._timer is not None or self.busy()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.workers.cancel_group(self, "preview")
        self._dropped = self._dropped or pending

    def take_dropped(self) -> bool:
        """Whether a preview was dropped since (and is now owed)."""
        dropped, self._dropped = self._dropped, False
        return dropped

    async def rebuild(self) -> None:
        try:
            await self._rebuild()
        except NoMatches:
            if not self.source.leaving():
                raise  # a widget missing from a screen still shown is a real defect

    async def _rebuild(self) -> None:
        try:
            setup, sweep = self.source.validated()
        except ValueError as exc:  # SpecError, or a form field
            self.error = exc
            self.source.show_message(f"✗ {exc}", error=True)
            self.query_one("#preview-text", Static).set_class(True, "-stale")
            return
        self.error = None
        try:
            prompts = await preview_prompts(sweep)
        except Exception as exc:  # preview is best effort; the match itself will report
            if self.is_attached:
                self.source.show_message(f"preview failed: {type(exc).__name__}: {exc}", error=True)
            return
        if not self.is_attached:
            return  # the screen went away while the prompts rendered: nothing left to write to
        self.prompts = prompts
        text = self.query_one("#preview-text", Static)
        text.update(preview_text(prompts, setup, sweep))
        text.set_class(False, "-stale")
        n = sum(1 for _ in sweep.matches())
        self.source.show_message(Text(f"ready: {n} match(es) · Enter on Start plays it live", style="green"))
