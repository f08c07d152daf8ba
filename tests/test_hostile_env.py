"""Hostile ``.env`` files: the one input coop-tui reads without being told to.

Every command loads ``.env`` from the working directory (API keys may sit there), so a
colleague's folder, a FIFO or a huge file there must neither hang a command nor leak a
key: the threat table of docs/development.md names these tests for that surface.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_tui.cli import main

SWEEP = ('name = "dotenv"\n[agents.gpt]\nmodel = "openai/gpt-4o-mini"\n'
         '[[experiments]]\ngame = "prisoners"\nagents = ["gpt"]\n')


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory of its own, without the environment's API keys; whatever a
    test's .env put into the environment is taken out again (a key holding escape
    characters left behind broke every later request header of the worker)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    before = dict(os.environ)
    yield tmp_path
    os.environ.clear()
    os.environ.update(before)


def said(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    return out.err + out.out


def test_an_env_file_past_one_mib_is_refused_naming_it(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / ".env").write_text("# pad\n" * (1 << 18))
    assert main(["list", "games"]) == 2
    text = " ".join(said(capsys).split())
    assert ".env" in text and "MiB" in text


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_env_that_is_not_a_file_is_left_alone_never_waited_on(
    folder: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A FIFO would block a reader until someone writes to it; a folder has nothing to
    read. Neither is a settings file: the command runs as without one."""
    if kind == "fifo":
        os.mkfifo(folder / ".env")
    else:
        (folder / ".env").mkdir()
    assert main(["list", "games"]) == 0
    assert "prisoners" in said(capsys)


def test_the_environment_wins_over_a_stale_env_file(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / ".env").write_text("OPENAI_API_KEY=sk-stale-from-file\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fresh-from-env")
    (folder / "s.toml").write_text(SWEEP)
    assert main(["--batch", "s.toml", "--dry-run", "--db", str(folder / "d.sqlite")]) == 0
    assert os.environ["OPENAI_API_KEY"] == "sk-fresh-from-env"


def test_lines_coop_tui_does_not_know_are_ignored_and_keys_never_shown(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unknown names, lines that are no assignment and escape sequences in a value: the
    key is read, nothing of the file is printed."""
    (folder / ".env").write_text(
        "SOMETHING_ELSE=1\nthis line assigns nothing\n"
        "OPENAI_API_KEY=sk-from-dotenv-\x1b]0;pwned\x07\n")
    (folder / "s.toml").write_text(SWEEP)
    assert main(["--batch", "s.toml", "--dry-run", "--db", str(folder / "d.sqlite")]) == 0
    text = said(capsys)
    assert "OPENAI_API_KEY: set" in text
    assert "sk-from-dotenv" not in text and "\x1b]0;" not in text


def test_an_env_symlinked_to_a_device_is_not_read(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link swapped in for the file, pointing at ``/dev/zero`` (which never ends)."""
    (folder / ".env").symlink_to("/dev/zero")
    assert main(["list", "games"]) == 0
