"""The house's import contracts ([tool.importlinter] in pyproject.toml) hold, and no
function-level import of our own modules is there without a reason.

import-linter builds its graph by walking a top-level package's own folder, but games/,
mechanisms/ and screens/ sit beside coop_tui/ and are installed as ``coop_tui.games`` etc.
So the check runs on a copy of the source laid out as installed (only the ``.py`` files),
with the project's own contracts. Run it by hand with ``python tests/test_layers.py``.

The house rule on function-level imports: an import of a ``coop_tui`` module sits at the top
of the importing module unless it brings a heavy third-party library (``HEAVY_LIBRARIES``)
that the importer does not already load at module level, which keeps the subcommands that
do not need the library fast, or unless it keeps a module out of ``coop-tui --help`` or
``import coop_tui`` (``FAST_ENTRY_POINTS``). A lazy import never dodges an import circle
(the contracts count it anyway), and one of a module or heavy library the importer already
loads is pointless. ``unjustified_lazy_imports`` reads the tree with ``ast`` and lists
every function-level import that breaks the rule.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
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
    assert "Contracts: 3 kept, 0 broken." in out, out


def test_a_broken_layer_is_caught(tmp_path: Path) -> None:
    """The check can fail: an engine that imports the report breaks the layers."""
    root = installed_layout(tmp_path)
    engine = root / "coop_tui" / "engine" / "__init__.py"
    engine.write_text(engine.read_text() + "\n\ndef _upward() -> None:\n"
                      "    from coop_tui.report import build_report  # noqa: F401\n")
    result = lint_imports(root)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "coop_tui.engine -> coop_tui.report" in out, out


def test_a_paper_import_in_the_sweep_is_caught(tmp_path: Path) -> None:
    """The sweep knows no paper: importing grounded similarity's stages from it breaks the
    contract (a pipeline's inputs are asked of its mechanism instead)."""
    root = installed_layout(tmp_path)
    cell = root / "coop_tui" / "sweep" / "cell.py"
    cell.write_text(cell.read_text() + "\n\ndef _paper() -> None:\n"
                    "    from coop_tui.grounded.stages import resolve_params  # noqa: F401\n")
    result = lint_imports(root)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "import no paper-specific module BROKEN" in out, out
    assert "coop_tui.sweep.cell -> coop_tui.grounded.stages" in out, out


# ------------------------------------------------------------ function-level imports

#: Third-party libraries whose import costs a noticeable share of a second (or pulls a
#: native extension); a function-level import of our own module is justified when it brings
#: one of these into a module that does not load it at module level.
HEAVY_LIBRARIES = frozenset({
    "aiohttp", "httpx", "jinja2", "litellm", "llama_cpp", "matplotlib", "nashpy", "numpy",
    "openai", "pandas", "pyarrow", "pydantic", "rich", "scipy", "sklearn", "sqlite_utils",
    "textual", "textual_plotext",
    # optional or rarely needed: an extra (textual-serve), what only one command uses
    # (PyYAML for YAML sweep files, python-dotenv for `.env`), scikit-learn's thread control,
    # aiohttp's URL type (needed only where aiohttp is)
    "textual_serve", "threadpoolctl", "yaml", "dotenv", "yarl",
    # the gurobi extra: CoopEval's own LP solver, needed only by `report --devrank coopeval`
    "gurobipy",
    # the anthropic extra: Anthropic's Message Batches, needed only by batch = true agents
    "anthropic",
    # HiGHS without SciPy's import, for the deviation ratings `--batch` solves at its end;
    # optional there (SciPy's linprog answers without it), and `report` never needs it
    "highspy",
})

#: What must start fast: the module that starts it, and every module of ours it may load.
#: These modules may import any other module of ours inside a function, heavy or not: the
#: package root re-exports the parser and the API lazily (PEP 562 ``__getattr__``), cli.py
#: imports each subcommand's module inside that command, and ``errors.fail`` loads the
#: secret patterns only when it prints (importing the store alone takes longer than all of
#: ``--help``). A lazy import of a module the entry point loads anyway is refused, and
#: ``test_entry_points_stay_light`` keeps each set as written here.
FAST_ENTRY_POINTS: dict[str, tuple[str, frozenset[str]]] = {
    "import coop_tui": ("coop_tui", frozenset({"coop_tui"})),
    "coop-tui --help": ("coop_tui.cli", frozenset({"coop_tui", "coop_tui.cli", "coop_tui.errors"})),
}


@dataclass(frozen=True)
class LazyImport:
    """One function-level import: of a ``coop_tui`` module, or of a library (heavy or not)."""

    importer: str
    target: str
    line: int
    fault: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target} inside a function: {self.fault}"


def _module_names(root: Path) -> dict[str, Path]:
    """Every module of the installed layout under ``root``, by dotted name."""
    out = {}
    for file in sorted((root / "coop_tui").rglob("*.py")):
        parts = file.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


class _Imports:
    """Module-level and function-level imports of every module, and the heavy libraries each
    module loads at import time (its own, those of the modules it imports at module level,
    and those of its parent packages, which Python imports first)."""

    def __init__(self, root: Path) -> None:
        self.files = _module_names(root)
        self.top: dict[str, set[str]] = {}
        self.heavy_top: dict[str, set[str]] = {}
        self.lazy: list[LazyImport] = []
        for name, file in self.files.items():
            self.top[name] = {p for p in self._parents(name) if p in self.files}
            self.heavy_top[name] = set()
            self._visit(name, ast.parse(file.read_text(), str(file)), in_function=False)
        self._loads: dict[str, frozenset[str]] = {}
        self.start_up = [modules for _, modules in FAST_ENTRY_POINTS.values()]

    @staticmethod
    def _parents(name: str) -> list[str]:
        parts = name.split(".")
        return [".".join(parts[:i]) for i in range(1, len(parts))]

    def _internal(self, dotted: str) -> str | None:
        while dotted and dotted not in self.files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def _targets(self, module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if self.files[module].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in self.files else base
                for a in node.names]

    def _visit(self, module: str, node: ast.AST, *, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for dotted in self._targets(module, child):
                    internal = self._internal(dotted)
                    if internal is None:
                        library = dotted.split(".")[0]
                        if in_function and library != "__future__":
                            self.lazy.append(LazyImport(module, library, child.lineno))
                        elif library in HEAVY_LIBRARIES:
                            self.heavy_top[module].add(library)
                    elif internal != module:
                        if in_function:
                            self.lazy.append(LazyImport(module, internal, child.lineno))
                        else:
                            self.top[module].add(internal)
            self._visit(module, child, in_function=in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    def loaded_by(self, module: str, *, loading: str | None = None) -> set[str]:
        """Every module that importing ``module`` runs (itself included). With ``loading``,
        as seen from inside that module's import: its own packages are already under way,
        so the implicit import of a parent package does not lead back to them."""
        under_way = set(self._parents(loading)) | {loading} if loading else set()
        seen, stack = {module}, [module]
        while stack:
            current = stack.pop()
            parents = set(self._parents(current))
            for nxt in self.top[current]:
                implicit = nxt in parents and nxt in under_way
                if nxt not in seen and not implicit:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def heavy_loaded_by(self, module: str) -> frozenset[str]:
        if module not in self._loads:
            self._loads[module] = frozenset().union(
                *(self.heavy_top[m] for m in self.loaded_by(module)))
        return self._loads[module]

    def fault(self, lazy: LazyImport) -> str | None:
        """Why the lazy import breaks the house rule, or None when it is justified."""
        if lazy.target in HEAVY_LIBRARIES:  # a heavy library itself
            if lazy.target in self.heavy_loaded_by(lazy.importer):
                return "the importer already loads this library at module level"
            return None
        if lazy.target not in self.files:  # the standard library or a light one
            if any(lazy.importer in fast for fast in self.start_up):
                return None  # an entry point imports only what it runs
            return "a light library: import it at module level"
        if lazy.importer in self.loaded_by(lazy.target, loading=lazy.importer):
            return "it dodges an import circle"  # e.g. a package that imports this module
        if lazy.target in self.loaded_by(lazy.importer):
            return "the importer already loads it at module level"
        if any(lazy.importer in fast and lazy.target not in fast for fast in self.start_up):
            return None  # keeps an entry point fast
        if self.heavy_loaded_by(lazy.target) - self.heavy_loaded_by(lazy.importer):
            return None
        return "it brings no heavy library the importer does not load already"


def unjustified_lazy_imports(root: Path) -> list[LazyImport]:
    """Function-level imports of ``coop_tui`` modules under ``root`` (an installed layout)
    that neither keep a heavy library out of their module nor an entry point fast."""
    imports = _Imports(root)
    found = (replace(lazy, fault=imports.fault(lazy)) for lazy in dict.fromkeys(imports.lazy))
    return [lazy for lazy in found if lazy.fault]


def test_function_level_imports_are_justified(tmp_path: Path) -> None:
    found = unjustified_lazy_imports(installed_layout(tmp_path))
    assert not found, ("hoist these imports to the top of their module (a lazy import is "
                       "only for a heavy library, see HEAVY_LIBRARIES):\n"
                       + "\n".join(map(str, found)))


def test_an_unjustified_lazy_import_is_caught(tmp_path: Path) -> None:
    """The check can fail: a lazy import of a light module or library, or of a module or
    heavy library already loaded, is refused; one that keeps a heavy library out of a light
    module is not."""
    root = installed_layout(tmp_path)
    hashing = root / "coop_tui" / "hashing.py"
    hashing.write_text(hashing.read_text() + "\n\ndef _light() -> None:\n"
                       "    from coop_tui.redact import scrub  # noqa: F401\n")
    conditions = root / "coop_tui" / "conditions.py"  # light, and the engine does not load it
    conditions.write_text(conditions.read_text() + "\n\ndef _heavy() -> None:\n"
                          "    from coop_tui.engine import MatchAborted  # noqa: F401\n")
    engine = root / "coop_tui" / "engine" / "__init__.py"
    engine.write_text(engine.read_text() + "\n\ndef _loaded() -> None:\n"
                      "    from coop_tui.redact import scrub  # noqa: F401\n"
                      "    import numpy  # noqa: F401\n")
    redact = root / "coop_tui" / "redact.py"  # loads no numpy at module level
    redact.write_text(redact.read_text() + "\n\ndef _heavy() -> None:\n"
                      "    import numpy  # noqa: F401\n"
                      "    import json  # noqa: F401\n")
    cli = root / "coop_tui" / "cli.py"
    cli.write_text(cli.read_text() + "\n\ndef _loaded() -> None:\n"
                   "    from coop_tui.errors import fail  # noqa: F401\n")
    base = root / "coop_tui" / "mechanisms" / "base.py"  # its package imports it
    base.write_text(base.read_text() + "\n\ndef _circle() -> None:\n"
                    "    from coop_tui.mechanisms import mechanism_class  # noqa: F401\n")
    faults = {(lazy.importer, lazy.target): lazy.fault for lazy in unjustified_lazy_imports(root)}
    assert faults[("coop_tui.mechanisms.base", "coop_tui.mechanisms")] == "it dodges an import circle"
    found = set(faults)
    assert ("coop_tui.hashing", "coop_tui.redact") in found
    assert ("coop_tui.engine", "coop_tui.redact") in found
    assert ("coop_tui.engine", "numpy") in found
    assert ("coop_tui.redact", "numpy") not in found
    assert faults[("coop_tui.redact", "json")] == "a light library: import it at module level"
    assert ("coop_tui.cli", "coop_tui.errors") in found
    assert ("coop_tui.cli", "coop_tui.store") not in found  # `--help` does not load the store


#: How each entry point runs in a fresh interpreter (``coop-tui`` is ``coop_tui.cli:main``).
ENTRY_POINT_CODE = {
    "import coop_tui": "import coop_tui",
    "coop-tui --help": "import sys; from coop_tui.cli import main; "
                       "sys.argv = ['coop-tui', '--help']; sys.exit(main())",
}


@pytest.mark.parametrize("entry", sorted(FAST_ENTRY_POINTS))
def test_entry_points_stay_light(entry: str, tmp_path: Path) -> None:
    """What ``coop-tui --help`` and ``import coop_tui`` load, read from the tree and seen by
    ``python -X importtime``: of ours only the modules listed, and no heavy library."""
    module, allowed = FAST_ENTRY_POINTS[entry]
    imports = _Imports(installed_layout(tmp_path))
    assert imports.loaded_by(module) == allowed
    assert not imports.heavy_loaded_by(module)
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY_POINT_CODE[entry]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
              if line.startswith("import time:") and "|" in line}
    assert {m for m in loaded if m.split(".")[0] == "coop_tui"} == allowed
    assert not {m.split(".")[0] for m in loaded} & HEAVY_LIBRARIES


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = lint_imports(installed_layout(Path(tmp)))
        print(done.stdout + done.stderr)
        lazy = unjustified_lazy_imports(installed_layout(Path(tmp) / "lazy"))
        print("\n".join(map(str, lazy)) or "function-level imports: all justified")
        sys.exit(done.returncode or bool(lazy))
