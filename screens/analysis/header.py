"""The analysis screen's two top lines: which run and experiment, and the run's counts."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from coop_tui.terminal import NAME_WIDTH, terminal_text


def loading_title(run_id: str) -> Text:
    return Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"),
                         f" run {run_id}  ", ("loading…", "dim"))


def failed_title(message: str) -> Text:
    return Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"), "  ",
                         (terminal_text(message, markup=False), "bold red"))


def experiment_title(report: dict[str, Any], index: int) -> Text:
    """The run, then the experiment ``index`` shown: its own number (as `coop-tui report`
    prints it), where it is in the run, game, mechanism, matches and b*."""
    run = report["run"]
    title = Text.assemble((" coop-tui ", "bold reverse"), (" analysis ", "bold"),
                          f" run {terminal_text(run['name'], markup=False, limit=NAME_WIDTH)} ",
                          (f"{run['id']} [{run['status']}]", "dim"))
    if not report["experiments"]:
        title.append("   no finished matches yet", style="yellow")
        return title
    e = report["experiments"][index]
    n = len(report["experiments"])
    # the experiment's own number, as `coop-tui report` prints it; then where it is in the run
    where = f" ({index + 1} of {n})" if n > 1 else ""
    title.append(f"   experiment {e['experiment']}{where}: ", style="bold")
    title.append(terminal_text(f"{e['game']} / {e['mechanism']} ({e['matches']} matches, "
                               f"{e['matchup']})", markup=False, limit=200))
    if e.get("b_star") is not None:
        title.append(f"   b* = {e['b_star']:g}", style="bold yellow")
    return title


def counts_text(c: dict[str, Any]) -> Text:
    """Matches done and failed, decisions, retries, tokens and cost of the whole run."""
    out = Text()
    out.append(f"matches {c['matches_done']}/{c['matches']} done", style="bold")
    out.append(f" · {c['matches_failed']} failed · decisions {c['decisions']} "
               f"({c['reused']} reused) · invalid {c['invalid']} · answer retries {c['retries']} · "
               f"transport retries {c['transport_retries']} · failures {c['failures']} · "
               f"tokens {_known(c['input_tokens'])}/{_known(c['output_tokens'])}"
               f"{_unknown_note(c.get('tokens_unknown', 0))} · cost ${c['cost_usd']:.4f}",
               style="dim")
    return out


def _known(value: Any) -> str:
    """A token total, or "unknown" when no server sent one (never a silent 0)."""
    return "unknown" if value is None else str(value)


def _unknown_note(n: int) -> str:
    return f" (unknown for {n} decisions)" if n else ""
