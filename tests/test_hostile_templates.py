"""Hostile prompt templates: a ``game.j2`` copied from a colleague cannot run code.

Templates render in Jinja2's immutable sandbox. A template that reaches for Python's
internals (the classic ``cycler.__init__.__globals__.os`` escape) stops the sweep with exit
2 and a message naming the template file and line, on ``--dry-run`` (which renders the real
prompts to measure them) and on a real ``--batch``; the command it tried to run never ran
and nothing is written. So does one that cannot render (an undefined variable), or passes
the render's bounds (an expression of a terabyte, nested loops of 10^10 steps): the dry run
used to swallow the error while it measured prompt sizes, and hang on the loops.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.prompts import BrokenTemplate, PromptRenderer, UnsafeTemplate, default_template_dir
from coop_tui.testing.server import LoopbackServer

ESCAPES = {
    "undefined": "{{{{ a_variable_nobody_sets }}}}{{# {marker} #}}",
    "terabyte": "{{{{ 'x' * 10**12 }}}}{{# {marker} #}}",
    "nested-loop": "{{% for a in range(100000) %}}{{% for b in range(100000) %}}{{% endfor %}}"
                   "{{% endfor %}}{{# {marker} #}}",
    "cycler": "{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}",
    "lipsum": "{{{{ lipsum.__globals__['os'].popen('touch {marker}').read() }}}}",
    "subclasses": "{{{{ ''.__class__.__mro__[1].__subclasses__() }}}}{{# {marker} #}}",
}


def _hostile_templates(folder: Path, escape: str, marker: Path) -> int:
    """A copy of the shipped game.j2 with ``escape`` on a line of its own; that line."""
    folder.mkdir()
    lines = (default_template_dir() / "game.j2").read_text().splitlines()
    at = 5  # after the opening comment, inside the setup text
    lines.insert(at - 1, ESCAPES[escape].format(marker=marker))
    (folder / "game.j2").write_text("\n".join(lines) + "\n")
    return at


def _sweep(path: Path, url: str) -> Path:
    path.write_text(
        f"""
name = "colleague's wording"
templates = "mine"

[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "HOSTILE_KEY"

[agents.tft]
strategy = "tit_for_tat"

[[experiments]]
game = "prisoners"
agents = ["m", "tft"]
answer = "choice"
"""
    )
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "HOSTILE_KEY": "sk-loopback"},
    )


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("mode", ["--dry-run", "batch"])
def test_a_template_escaping_the_sandbox_stops_the_sweep_naming_file_and_line(
    escape: str, mode: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    line = _hostile_templates(tmp_path / "mine", escape, marker)
    db = tmp_path / "x.db"
    with LoopbackServer(latency=0.0, chunks=1, answer='{"choice": "A0"}') as server:
        sweep = _sweep(tmp_path / "s.toml", server.url)
        extra = ["--dry-run"] if mode == "--dry-run" else []
        result = _cli("--batch", str(sweep), "--db", str(db), *extra)
        chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"game.j2:{line}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not marker.exists()
    assert not db.exists()
    assert chats == []


def test_the_refusal_is_a_spec_error_naming_the_file(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    line = _hostile_templates(tmp_path / "mine", "cycler", marker)
    renderer = PromptRenderer(tmp_path / "mine")
    with pytest.raises(UnsafeTemplate) as caught:
        renderer.render("game.j2", n_players=2, labels=["A0", "A1"], payoff_description="-",
                        seat_number=1)
    assert caught.value.field == "templates"
    assert f"{tmp_path / 'mine' / 'game.j2'}:{line}" in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize("broken", ["undefined", "terabyte", "nested-loop"])
def test_a_broken_template_is_a_spec_error_naming_file_and_line(tmp_path: Path, broken: str) -> None:
    line = _hostile_templates(tmp_path / "mine", broken, tmp_path / "unused")
    renderer = PromptRenderer(tmp_path / "mine")
    with pytest.raises(BrokenTemplate) as caught:
        renderer.render("game.j2", n_players=2, labels=["A0", "A1"], payoff_description="-",
                        seat_number=1)
    assert caught.value.field == "templates"
    assert f"{tmp_path / 'mine' / 'game.j2'}:{line}" in str(caught.value)
