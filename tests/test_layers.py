"""The house's import contracts ([tool.importlinter] in pyproject.toml) hold.

import-linter builds its graph by walking a top-level package's own folder, but games/,
mechanisms/ and screens/ sit beside coop_tui/ and are installed as ``coop_tui.games`` etc.
So the check runs on a copy of the source laid out as installed (only the ``.py`` files),
with the project's own contracts. Run it by hand with ``python tests/test_layers.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALLED_AS = {"coop_tui": "coop_tui", "games": "coop_tui/games",
                "mechanisms": "coop_tui/mechanisms", "screens": "coop_tui/screens",
                "data": "coop_tui/data"}


def _python_only(folder: str, names: list[str]) -> list[str]:
    return [n for n in names
            if n == "__pycache__" or ((Path(folder) / n).is_file() and not n.endswith(".py"))]


def installed_layout(dest: Path) -> Path:
    """A copy of the package's Python files as pip installs them; returns its root."""
    for source, target in INSTALLED_AS.items():
        shutil.copytree(ROOT / source, dest / target, ignore=_python_only)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """The venv's ``lint-imports`` on the copy (its folder first on the path, so the copy,
    not the editable install, is what gets analysed)."""
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([str(exe), "--no-cache"], cwd=where, capture_output=True, text=True,
                          env={"PATH": str(exe.parent), "PYTHONPATH": str(where)})


def test_import_contracts_hold(tmp_path: Path) -> None:
    result = lint_imports(installed_layout(tmp_path))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "Contracts: 2 kept, 0 broken." in out, out


def test_a_broken_layer_is_caught(tmp_path: Path) -> None:
    """The check can fail: an engine that imports the report breaks the layers."""
    root = installed_layout(tmp_path)
    engine = root / "coop_tui" / "engine.py"
    engine.write_text(engine.read_text() + "\n\ndef _upward() -> None:\n"
                      "    from coop_tui.report import build_report  # noqa: F401\n")
    result = lint_imports(root)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "coop_tui.engine -> coop_tui.report" in out, out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = lint_imports(installed_layout(Path(tmp)))
        print(done.stdout + done.stderr)
        sys.exit(done.returncode)
