"""Fingerprints of the files a sweep reads besides itself, so ``--resume`` notices edits.

A sweep names other files: game definitions, benchmark catalogues and their item files,
rubrics, a templates folder. Editing one between a kill and ``--resume`` would mix results
under two versions of it in one run. The run records a SHA-256 of every such file when it
starts (:func:`fingerprints`); a resume recomputes them and refuses, naming the file, when
one changed (:func:`changed_input`).

Which files: every string in the sweep (at any depth) that names an existing file or
folder, relative to the sweep's folder or absolute, and, inside a named ``.toml`` file
(a benchmark catalogue, a rubric), the files it names in turn, relative to it. A folder
(templates) is fingerprinted file by file. This needs no list of the fields that take
paths, so a new field that names a file is covered from the start.

Compressed inputs (importers) are read through :func:`open_bounded`: what they inflate to
is bounded by one number for all of them.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import itertools
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

MAX_FILES = 500
"""Files fingerprinted at most (a templates folder, a catalogue's item files)."""
_SUFFIXES = (".toml", ".json", ".jsonl", ".gz", ".csv", ".txt", ".md", ".j2", ".yaml", ".yml")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _candidate(text: str, base: Path | None) -> Path | None:
    if not text or len(text) > 4096 or "\n" in text:
        return None
    if not (text.endswith(_SUFFIXES) or "/" in text):
        return None
    p = Path(text).expanduser()
    for option in ([base / p] if base is not None and not p.is_absolute() else []) + [p]:
        try:
            if option.exists():
                return option.resolve()
        except OSError:
            continue
    return None


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprints(data: dict[str, Any], base: Path | None) -> dict[str, str]:
    """{absolute path: sha256} of every file the sweep data names (see the module doc)."""
    found: dict[str, str] = {}
    todo: list[tuple[Any, Path | None]] = [(data, base)]
    while todo and len(found) < MAX_FILES:
        value, folder = todo.pop()
        for text in _strings(value):
            path = _candidate(text, folder)
            if path is None or str(path) in found:
                continue
            # a folder is walked lazily and only so far: a path such as "/" must not walk
            # the whole disk
            files = (sorted(itertools.islice((p for p in path.rglob("*") if p.is_file()), MAX_FILES))
                     if path.is_dir() else [path])
            for f in files:
                if str(f) in found:
                    continue
                try:
                    found[str(f)] = _digest(f)
                except OSError:
                    continue
                if f.suffix == ".toml" and f.stat().st_size < 1 << 20:
                    with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                        todo.append((tomllib.loads(f.read_text()), f.parent))
    return found


def changed_input(recorded: dict[str, str]) -> tuple[str, str] | None:
    """(path, what happened) of the first recorded input that changed, or None."""
    for path, digest in sorted(recorded.items()):
        p = Path(path)
        try:
            now = _digest(p)
        except FileNotFoundError:
            return path, "is gone"
        except OSError as exc:
            return path, f"cannot be read ({exc.strerror or exc})"
        if now != digest:
            return path, "has changed"
    return None


# ----------------------------------------------------------------- compressed inputs
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
"""What any gzip input may inflate to. A few megabytes of gzip can inflate to gigabytes
(a "gzip bomb"); every importer reads compressed files through :func:`open_bounded`, so
one bound covers them all, checked while streaming (nothing is held whole)."""
GZIP_MAGIC = b"\x1f\x8b"
MAX_RATIO = 100
"""How many times the compressed bytes read so far a gzip input may inflate to, once past
:data:`RATIO_FLOOR`: real tables and records inflate 3-20 times, a bomb hundreds or
thousands of times, so a bomb is refused after a few megabytes instead of after its rows
up to the whole bound have been parsed."""
RATIO_FLOOR = 4 * 1024 * 1024


class InputTooLarge(ValueError):
    """A compressed input inflated past :data:`MAX_DECOMPRESSED_BYTES`."""


class _Bounded(io.RawIOBase):
    """A readable stream that counts what it hands out and stops past ``limit`` bytes."""

    def __init__(self, inner: BinaryIO, limit: int, path: Path, *,
                 source: BinaryIO | None = None) -> None:
        super().__init__()
        self._inner, self._limit, self._path, self.total = inner, limit, path, 0
        self._source = source  # the compressed file under ``inner``: its position is how much was read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        self.total += n or 0
        if (self._source is not None and self.total > RATIO_FLOOR
                and self.total > MAX_RATIO * max(self._source.tell(), 1)):
            raise InputTooLarge(
                f"{self._path}: inflates to more than {MAX_RATIO} times its compressed size "
                f"(past {RATIO_FLOOR // 2**20} MiB); this is not a table coop-tui imports "
                "(a compressed file like that is refused, not read)"
            )
        if self.total > self._limit:
            raise InputTooLarge(
                f"{self._path}: inflates to more than {self._limit // 2**20} MiB; this is not a "
                "table coop-tui imports (a compressed file that large is refused, not read)"
            )
        return n

    def close(self) -> None:
        self._inner.close()
        if self._source is not None:
            self._source.close()
        super().close()


def is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_bounded(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> BinaryIO:
    """``path`` opened for binary reading, inflated when it is gzip (by its first bytes,
    whatever its name), raising :class:`InputTooLarge` once more than ``limit`` bytes
    have come out (for gzip, also once past :data:`MAX_RATIO` times its compressed size)."""

    # the returned stream owns (and closes) this one
    if not is_gzip(path):
        return io.BufferedReader(_Bounded(path.open("rb"), limit, path))  # type: ignore[return-value]  # noqa: SIM115
    source = path.open("rb")  # noqa: SIM115  (the returned stream closes it)
    inflated = gzip.GzipFile(fileobj=source, mode="rb")
    return io.BufferedReader(_Bounded(inflated, limit, path, source=source))  # type: ignore[arg-type,return-value]


def read_bounded(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The whole (inflated) content of ``path``, at most ``limit`` bytes."""
    with open_bounded(path, limit=limit) as fh:
        return fh.read()
