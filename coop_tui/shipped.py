"""The sweep and study files that ship inside the package (``data/sweeps``, ``data/studies``).

The documentation and each file's own comment say ``coop-tui --batch
data/studies/coopeval-offline.toml``: that works in a checkout. After ``pip install`` the
files live in site-packages, so ``--batch`` also accepts the same path from anywhere, or
just the file's name (``coopeval-offline``): a file that exists on disk always wins, and
only a path that does not exist is looked up among the shipped ones.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

FOLDERS = ("studies", "sweeps")
"""Where shipped sweep files live, searched in this order for a bare name."""


def data_dir() -> Path:
    return Path(str(resources.files("coop_tui.data")))


def shipped_sweeps() -> dict[str, Path]:
    """Every shipped sweep file by name (file name without .toml), studies first."""
    out: dict[str, Path] = {}
    for folder in FOLDERS:
        for path in sorted((data_dir() / folder).glob("*.toml")):
            out.setdefault(path.stem, path)
    return out


def resolve_sweep_file(ref: str) -> tuple[Path, bool]:
    """(the file to load, whether it is a shipped one found by name or package path).

    ``ref`` is used as given when it exists (or when nothing shipped matches it, so the
    loader reports the missing file as it always did)."""
    given = Path(ref).expanduser()
    if given.exists():
        return given, False
    parts = Path(ref).parts
    if len(parts) >= 2 and parts[0] == "data" and parts[1] in FOLDERS:
        candidate = data_dir().joinpath(*parts[1:])  # the checkout path of a shipped file
        if candidate.is_file():
            return candidate, True
    if len(parts) == 2 and parts[0] in FOLDERS:
        candidate = data_dir() / parts[0] / parts[1]
        if candidate.is_file():
            return candidate, True
    if len(parts) == 1:
        found = shipped_sweeps().get(given.stem if given.suffix == ".toml" else ref)
        if found is not None:
            return found, True
    return given, False
