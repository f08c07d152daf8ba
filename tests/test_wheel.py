"""A plain install works as well as the editable one.

Every other test runs on the editable install, which finds modules in the source tree
whatever the package list says; a wheel holds only what the build put in it. So the wheel
is built here (offline: ``pip wheel --no-build-isolation`` with the setuptools of this
environment), its contents are compared with the tree, and the installed code is run from
the unpacked wheel with the editable install out of sight: a sweep, the report in every
format, the listings and every module imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md")


def package_dirs() -> dict[str, str]:
    """Installed package -> directory of the tree, as pyproject.toml maps them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["package-dir"]


def tree_files(directory: str) -> list[str]:
    """The files of one mapped directory that belong to the project: git's list when this
    is a checkout (so stray local files do not count), else every file but caches."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", directory],
                             capture_output=True, text=True, check=True).stdout.split()
        if out:
            return [str(Path(p).relative_to(directory)) for p in out]
    except (OSError, subprocess.CalledProcessError):
        pass
    base = ROOT / directory
    return [str(p.relative_to(base)) for p in base.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the tree (a build writes build/ and egg-info)."""
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_FILES:
        shutil.copy(ROOT / name, src / name)
    for directory in package_dirs().values():
        shutil.copytree(ROOT / directory, src / directory,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--quiet", "-w", str(out), str(src)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (built,) = out.glob("coop_tui-*.whl")
    return built


def test_the_wheel_holds_every_package_and_data_file_of_the_tree(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for package, directory in package_dirs().items():
        prefix = package.replace(".", "/")
        files = tree_files(directory)
        assert files, f"nothing found under {directory}/"
        missing += [f"{directory}/{f}" for f in files if f"{prefix}/{f}" not in names]
    assert not missing, f"left out of the wheel: {missing}"
    # the kinds of file the program reads at run time, each present
    for needed in ("coop_tui/grounded/__init__.py", "coop_tui/judging/__init__.py",
                   "coop_tui/analysis/sections/__init__.py", "coop_tui/screens/setup.tcss",
                   "coop_tui/data/prompts/game.j2", "coop_tui/data/studies/coopeval-offline.toml",
                   "coop_tui/data/rubrics/justifications.toml",
                   "coop_tui/data/benchmarks/demo_answers.jsonl"):
        assert needed in names
    # nothing generic lands in site-packages: every file is under coop_tui/ or the metadata
    assert all(n.startswith(("coop_tui/", "coop_tui-")) for n in names), sorted(
        n for n in names if not n.startswith(("coop_tui/", "coop_tui-")))


SMOKE = r"""
import importlib, json, pkgutil, subprocess, sys
import coop_tui
assert coop_tui.__file__.startswith(sys.argv[1]), coop_tui.__file__  # the unpacked wheel
# every module of the installed package imports (a missing subpackage fails here)
for mod in pkgutil.walk_packages(coop_tui.__path__, "coop_tui."):
    importlib.import_module(mod.name)
from coop_tui.prompts import data_dir
assert str(data_dir()).startswith(sys.argv[1]), data_dir()
print(json.dumps(sorted(p.name for p in (data_dir() / "studies").glob("*.toml"))))
"""


def run_installed(unpacked: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Python on the unpacked wheel and this environment's dependencies, without
    site processing: the editable install's path hook (a .pth file) stays out."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(unpacked), sysconfig.get_path("purelib"),
                                                        sysconfig.get_path("platlib")]),
           "COOP_TUI_DB": str(cwd / "default.db")}
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def cli(unpacked: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_installed(unpacked, cwd, "-c", "import sys; from coop_tui.cli import main; "
                         "sys.exit(main(sys.argv[1:]))", *args)


@pytest.fixture(scope="module")
def unpacked(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    zipfile.ZipFile(wheel).extractall(target)
    return target


@pytest.mark.slow
def test_the_installed_package_imports_and_runs_from_anywhere(unpacked: Path, tmp_path: Path) -> None:
    smoke = run_installed(unpacked, tmp_path, "-c", SMOKE, str(unpacked))
    assert smoke.returncode == 0, smoke.stderr[-3000:]
    assert "coopeval-offline.toml" in json.loads(smoke.stdout.strip().splitlines()[-1])

    db = str(tmp_path / "x.db")
    # a shipped sweep, named as its comment says, from a directory that has no data/
    sweep = cli(unpacked, tmp_path, "--batch", "data/sweeps/strategies-prisoners.toml", "--db", db, "-y")
    assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    text = cli(unpacked, tmp_path, "report", "--db", db)
    assert text.returncode == 0 and "strategies-prisoners" in text.stdout, text.stderr
    report = cli(unpacked, tmp_path, "report", "--json", "--db", db)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["counts"]["matches_failed"] == 0
    games = cli(unpacked, tmp_path, "list", "games", "--json")
    assert games.returncode == 0 and "third_party_punishment" in {g["key"] for g in json.loads(games.stdout)}
    for command in ("judge", "play", "export", "import"):
        shown = cli(unpacked, tmp_path, command, "--help")
        assert shown.returncode == 0 and shown.stdout.startswith(f"usage: coop-tui {command}")
