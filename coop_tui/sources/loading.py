"""Checking and importing a clone of a paper's code, shared by every adapter.

Checks read the files with :mod:`ast` (nothing of the source runs to check it); imports
load single files under a private module name (``coop_tui_source.<paper>.<module>``) so
the clone never shadows, nor is shadowed by, an installed package of the same name, and
the paper's heavy dependencies (torch, transformers, inspect-ai, gurobipy) can be left
out by handing a stand-in module for each name a file imports but never uses to build a
prompt.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import subprocess
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path

from coop_tui.sources.base import Required, SourceError

MAX_SOURCE_FILE_BYTES = 4 * 1024 * 1024
"""A source file larger than this is refused before it is read (a prompt builder is a
few hundred kilobytes at most)."""


def source_root(path: str | Path, name: str) -> Path:
    """The clone's folder, ``~`` expanded; a missing path or one that is not a folder is a
    :class:`SourceError` for ``sources.<name>``."""
    root = Path(path).expanduser()
    if not root.exists():
        raise SourceError(f"sources.{name}", f"{root} does not exist; clone the paper's "
                          f"code there or give its path with --source {name}=PATH")
    if not root.is_dir():
        raise SourceError(f"sources.{name}", f"{root} is not a folder; give the folder of "
                          f"the clone with --source {name}=PATH")
    return root.resolve()


def read_source(root: Path, relpath: str, name: str) -> str:
    """The text of ``relpath`` in the clone: a regular file within the size cap."""
    path = root / relpath
    where = f"sources.{name}"
    if not path.is_file():
        raise SourceError(where, f"{path} is missing; is {root} a clone of the paper's code "
                          "at a commit that has it?")
    size = path.stat().st_size
    if size > MAX_SOURCE_FILE_BYTES:
        raise SourceError(where, f"{path} is {size:,} bytes, over the "
                          f"{MAX_SOURCE_FILE_BYTES:,}-byte cap for a source file")
    return path.read_text(encoding="utf-8")


def _find(tree: ast.AST, dotted: str) -> ast.AST | None:
    node: ast.AST | None = tree
    for part in dotted.split("."):
        body = getattr(node, "body", [])
        node = next((n for n in body if getattr(n, "name", None) == part
                     or (isinstance(n, ast.Assign)
                         and any(getattr(t, "id", None) == part for t in n.targets))), None)
        if node is None:
            return None
    return node


def check_required(root: Path, name: str, required: Iterable[Required]) -> None:
    """Every required file, name and signature is there, read without running anything."""
    trees: dict[str, ast.AST] = {}
    for req in required:
        if req.path not in trees:
            trees[req.path] = ast.parse(read_source(root, req.path, name), filename=req.path)
        node = _find(trees[req.path], req.attr)
        where = f"sources.{name}"
        if node is None:
            raise SourceError(where, f"{root / req.path} has no {req.attr}; check out a commit "
                              "of the paper's code that has it (see docs/wording.md)")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and req.params:
            args = node.args
            params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            params = [p for p in params if p not in ("self", "cls")]
            if tuple(params[:len(req.params)]) != req.params:
                raise SourceError(where, f"{root / req.path}: {req.attr} takes "
                                  f"({', '.join(params)}), coop-tui expects "
                                  f"({', '.join(req.params)}); check out the tested commit "
                                  "of the paper's code (see docs/wording.md)")


def git_commit(root: Path, files: Iterable[str] = ()) -> str:
    """The clone's HEAD commit, or ``files:<sha256>`` of ``files`` when it is no git
    checkout (a downloaded archive)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)
        commit = out.stdout.strip()
        if out.returncode == 0 and len(commit) == 40:
            return commit
    except (OSError, subprocess.SubprocessError):
        pass
    digest = hashlib.sha256()
    for rel in sorted(set(files)):
        path = root / rel
        digest.update(rel.encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return "files:" + digest.hexdigest()[:16]


def stub_module(name: str, **attrs: object) -> types.ModuleType:
    """A stand-in for a module a source file imports but never uses to build a prompt."""
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def import_file(
    root: Path, relpath: str, module_name: str, paper: str,
    stubs: Mapping[str, types.ModuleType] | None = None,
) -> types.ModuleType:
    """Run the file ``relpath`` of the clone as the module ``module_name`` (put it under
    ``coop_tui_source.<paper>.``), with ``stubs`` standing in for the imports named there
    while it runs. Its import errors become a :class:`SourceError` naming the file."""
    path = root / relpath
    read_source(root, relpath, paper)  # exists, regular, within the cap
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SourceError(f"sources.{paper}", f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    saved = {k: sys.modules.get(k) for k in (stubs or {})}
    sys.modules.update(stubs or {})
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: any failure is theirs to see, named
        sys.modules.pop(module_name, None)
        raise SourceError(f"sources.{paper}", f"{path} failed to import: "
                          f"{type(exc).__name__}: {exc}") from exc
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module
