"""Shared fixtures. Keep this small: module-specific helpers belong in their test files."""

from __future__ import annotations

import os
import site
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coop_tui.plugins import LOAD_ENV, TEST_FLAG
from coop_tui.testing.server import LoopbackServer

# Installed plugins stay out of the suite (llm's and Datasette's guard): in this process
# by the flag, in the commands tests start by the variable, which names no plugin. A test
# that wants one sets the variable to its name (tests/test_plugins.py).
setattr(sys, TEST_FLAG, True)
os.environ[LOAD_ENV] = ""


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """An OpenAI-compatible server on 127.0.0.1 (free port) with fast default answers.

    Reconfigure it inside a test with ``loopback.configure(answer=..., fault_script=...)``.
    """
    with LoopbackServer(latency=0.05, chunks=5) as server:
        yield server


@pytest.fixture
def strategies_read_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strategies answer from the game state, so no prompt is rendered or stored for
    them; tests that read a mechanism's prompt text make them read it, as an LLM does."""
    from coop_tui.agents.strategy_agent import StrategyAgent

    monkeypatch.setattr(StrategyAgent, "reads_prompt", True)


@pytest.fixture(autouse=True)
def _database_outside_the_user_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command given no --db opens $COOP_TUI_DB, else the user's data directory: point it
    at a fresh file per test, so no test writes to the real one or shares it with a test
    running at the same time in another worker (subprocesses inherit the variable)."""
    monkeypatch.setenv("COOP_TUI_DB", str(tmp_path_factory.mktemp("userdata") / "coop-tui.db"))


# ------------------------------------------------------------------ reads beside the repository
REPO = Path(__file__).resolve().parent.parent
"""The checkout the tests belong to (the virtual environment usually lives inside it)."""


def _prefix(path: str | Path) -> str:
    return os.path.join(os.path.normpath(path), "")


class OutsideReads:
    """Paths under the repository's parent folder but outside the repository that this
    process opened, listed or handed to a subprocess: a sibling folder of the checkout, which
    a user's fresh clone does not have. Fed by an audit hook, so it costs two string
    prefix checks per opened file."""

    AUDITED = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect",
                         "subprocess.Popen"})

    def __init__(self, repo: Path) -> None:
        self.parent = _prefix(repo.parent)
        self.inside = (_prefix(repo),) + tuple(
            _prefix(p) for p in self._tool_folders() if _prefix(p).startswith(self.parent))
        self.found: list[str] = []

    @staticmethod
    def _tool_folders() -> list[str]:
        """Folders tests may read that can sit beside a checkout: the interpreter and its
        site-packages (a virtual environment next to the repository), and the temporary
        folder when it is inside the parent (a checkout in /tmp itself)."""
        return [sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(),
                site.getusersitepackages(), tempfile.gettempdir()]

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in self.AUDITED:
            return
        if event != "subprocess.Popen":
            self._check(args[0])
            return
        argv = args[1]  # a list of arguments, or one command line
        for arg in argv if isinstance(argv, list | tuple) else [argv]:
            self._check(arg)

    def _check(self, path: Any) -> None:
        if type(path) is not str:
            if not isinstance(path, bytes | os.PathLike):
                return  # a file descriptor
            path = os.fsdecode(path)
        if not path.startswith(os.sep):
            if os.sep not in path and not path.startswith(".."):
                return  # a bare name (a command, a file in the working folder)
            path = os.path.join(os.getcwd(), path)
        if os.sep + ".." in path:
            path = os.path.normpath(path)
        if not path.startswith(self.parent):
            return  # elsewhere, or the parent folder itself
        folder = path + os.sep
        if folder.startswith(self.inside) or folder[len(self.parent)] == ".":
            return  # a dot folder beside a checkout in a home folder is a tool's
        self.found.append(path)

    def take(self) -> list[str]:
        found, self.found = self.found, []
        return found


OUTSIDE_READS = OutsideReads(REPO)
sys.addaudithook(OUTSIDE_READS.audit)


@pytest.fixture
def outside_reads() -> OutsideReads:
    """The guard itself, for the tests that check it records what it should."""
    return OUTSIDE_READS


def _outside_reads_message() -> str | None:
    found = OUTSIDE_READS.take()
    if not found:
        return None
    paths = "\n  ".join(dict.fromkeys(found))
    return (f"read outside the repository {REPO}:\n  {paths}\n"
            "A fresh clone has nothing beside it: copy what the test needs into tests/data "
            "(and say where it came from in tests/data/README.md).")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Fail the phase (setup, call or teardown) of the test that read beside the repository."""
    report = yield
    message = _outside_reads_message()
    if message is not None:
        report.outcome = "failed"
        report.longrepr = message
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[Any]:
    """Fail the collection of a test module that reads beside the repository on import."""
    report = yield
    message = _outside_reads_message()
    if message is not None:
        report.outcome = "failed"
        report.longrepr = message
    return report


# ------------------------------------------------------------------ the longest files first
LONGEST_FILES = (
    "test_coopeval_study.py", "test_teams_study.py", "test_similarity_study.py",
    "test_prefix_cache_study.py",
    "test_mechanisms.py", "test_stopping.py", "test_seed003_protocol.py", "test_local_model.py",
    "test_judge_local.py", "test_shards.py", "test_hostile.py", "test_docs.py",
)
"""The files whose tests take longest, longest first (``--durations`` of the whole suite,
2026-11-27, after the study and signal tests were cut down that evening). With ``--dist loadfile`` a file runs on one worker; pytest-xdist's default
order (files with the most tests first) started these few-test, minutes-long files last,
so one worker ran on alone for minutes at the end. ``--no-loadscope-reorder`` (in
pyproject's addopts) keeps the order set here: these first, then the rest as collected.
A stale list only costs time, never a result."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole
