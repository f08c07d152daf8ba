"""The guard in conftest.py: a test that reads beside the repository fails.

A user's clone has nothing next to it, so a test that reads a folder beside the project's
own checkout passes here and fails there. The guard records every path
under the repository's parent folder but outside the repository that a test opens, lists,
connects to or hands to a subprocess, and fails that test.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SIBLING = REPO.parent / "coop-tui-test-sibling-that-does-not-exist"


def test_reads_beside_the_repository_are_recorded(outside_reads) -> None:
    with pytest.raises(FileNotFoundError):
        (SIBLING / "data.json").read_text()
    with pytest.raises(FileNotFoundError):
        os.listdir(SIBLING)
    with pytest.raises(FileNotFoundError):
        list(os.scandir(REPO / "tests" / ".." / ".." / SIBLING.name))
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(SIBLING / "runs.db")
    subprocess.run([sys.executable, "-c", "pass", str(SIBLING / "given.txt")], check=True)
    assert outside_reads.take() == [str(SIBLING / "data.json"), str(SIBLING), str(SIBLING),
                                    str(SIBLING / "runs.db"), str(SIBLING / "given.txt")]


def test_the_repository_tmp_and_the_interpreter_are_not_recorded(outside_reads, tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("x")
    (tmp_path / "x.txt").read_text()
    os.listdir(tmp_path)
    (REPO / "pyproject.toml").read_text()
    os.listdir(Path(sys.prefix))
    os.listdir(REPO / "tests" / ".." / "data")
    with pytest.raises(FileNotFoundError):
        (REPO.parent / ".cache-of-a-tool" / "x").read_text()  # a dot folder: a tool's, in a home folder
    assert outside_reads.take() == []


PLANTED = '''
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "beside"


def test_reads_a_sibling():
    assert (SHARED / "sample.txt").read_text() == "published"


def test_lists_a_sibling():
    assert sorted(p.name for p in SHARED.iterdir()) == ["sample.txt"]


def test_stays_inside(tmp_path):
    (tmp_path / "y.txt").write_text("y")
    assert Path(__file__).read_text()
'''


@pytest.mark.slow  # a pytest run in a subprocess: about 2.5 s
def test_a_planted_read_of_a_sibling_fails_its_test(tmp_path: Path) -> None:
    """A copy of the real conftest.py in a checkout with a ``beside`` folder next to it:
    the two tests that read that folder fail (and so would a module reading it on import),
    the one that stays inside passes."""
    repo = tmp_path / "checkout"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", repo / "tests" / "conftest.py")
    (repo / "tests" / "test_planted.py").write_text(PLANTED)
    (repo / "tests" / "test_planted_on_import.py").write_text(
        "from pathlib import Path\n\n"
        "TEXT = (Path(__file__).resolve().parents[2] / 'beside' / 'sample.txt').read_text()\n\n\n"
        "def test_nothing():\n    pass\n")
    (tmp_path / "beside").mkdir()
    (tmp_path / "beside" / "sample.txt").write_text("published")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
         "--continue-on-collection-errors", "-q", "tests"],
        cwd=repo, capture_output=True, text=True, check=False)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "2 failed, 1 passed, 1 error" in out
    assert "FAILED tests/test_planted.py::test_reads_a_sibling" in out
    assert "FAILED tests/test_planted.py::test_lists_a_sibling" in out
    assert "ERROR tests/test_planted_on_import.py" in out
    assert f"read outside the repository {repo}" in out
    assert str(tmp_path / "beside" / "sample.txt") in out
