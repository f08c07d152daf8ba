"""The setup's sweep file and the command that runs it headless, in a process of its own."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from coop_tui.session import MatchSetup


def sweep_file(folder: Path, setup: MatchSetup) -> Path:
    """Where the setup is saved as a sweep file: one file per game and mechanism."""
    return folder / f"coop-tui-{setup.game}-{setup.mechanism}.toml"


def headless_command(path: Path, db: str) -> list[str]:
    """``coop-tui --batch path --db db --yes``: this environment's coop-tui, else the one
    on the PATH, else the module run by this Python."""
    exe = Path(sys.executable).parent / "coop-tui"
    base = [str(exe)] if exe.exists() else (
        [shutil.which("coop-tui")] if shutil.which("coop-tui") else [sys.executable, "-m", "coop_tui.cli"]
    )
    return [*base, "--batch", str(path), "--db", db, "--yes"]
