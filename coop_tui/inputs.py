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
import errno
import gzip
import hashlib
import io
import itertools
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from coop_tui.errors import SpecError

MAX_FILES = 500
"""Files fingerprinted at most (a templates folder, a catalogue's item files)."""
_SUFFIXES = (".toml", ".json", ".jsonl", ".gz", ".csv", ".txt", ".md", ".j2", ".yaml", ".yml")


# ----------------------------------------------------------------- regular files only
class NotRegularFile(OSError):
    """A path that names a device, FIFO, socket or folder where a file is read.

    ``/dev/zero`` never ends and opening a FIFO waits for a writer forever, so every
    reader of a user's file opens it through :func:`open_regular`. An ``OSError``, so
    the readers' existing ``except OSError`` turn it into their message naming the file."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", "a character device", ...)."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for binary reading, refused (:class:`NotRegularFile`) unless it is
    a regular file. Opened without blocking and checked on the open descriptor, so a FIFO
    neither hangs the open nor can be swapped in between a check and the read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(
                errno.EINVAL, f"is {file_kind(mode)}, not a regular file; give the path of a file",
                str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path: Path | str, *, limit: int | None = None) -> bytes:
    """The bytes of a regular file (see :func:`open_regular`); with ``limit``, a file
    larger than that is refused (:class:`InputTooLarge`) before any of it is read."""
    with open_regular(path) as fh:
        if limit is None:
            return fh.read()
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(limit + 1) if size <= limit else b""
        if size > limit or len(data) > limit:  # the size, or what it grew to while read
            raise InputTooLarge(
                f"{path}: is {max(size, len(data)) / 2**20:.1f} MiB, more than the "
                f"{limit / 2**20:g} MiB coop-tui reads of such a file; this is not a file it "
                "expects (refused, not read)")
        return data


# ----------------------------------------------------------------- YAML aliases
MAX_ALIAS_EXPANSION = 100_000
"""Nodes YAML aliases (``*name``) may add beyond the ones written in the file. An alias
repeats a whole subtree without copying it; aliases of aliases nest ("billion laughs"), so
a file of a few hundred bytes can stand for billions of values, which every later walk
(validation, hashing, JSON) would visit. Checked on the parsed node graph, before any
value is built."""


class TooManyAliases(ValueError):
    """A YAML document whose aliases expand past :data:`MAX_ALIAS_EXPANSION`, or refer to
    themselves."""


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):  # a sequence's items, a mapping's (key, value) pairs
        return [part for item in value for part in (item if isinstance(item, tuple) else (item,))]
    return []


def check_yaml_aliases(root: Any) -> None:
    """Refuse a composed YAML node graph that aliases expand past the bound (see
    :data:`MAX_ALIAS_EXPANSION`) or that contains itself. Linear in the distinct nodes:
    each node's expanded size is computed once (no recursion, so no depth limit)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise TooManyAliases("an alias (*name) refers to the value that contains it; "
                                 "write the value out instead")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    written = len(sizes)
    if sizes[id(root)] - written > MAX_ALIAS_EXPANSION:
        raise TooManyAliases(
            f"its aliases (*name) expand to more than {MAX_ALIAS_EXPANSION:,} values beyond "
            "the ones written; write the repeated parts out or use fewer nested aliases")


# ----------------------------------------------------------------- fingerprints
def _strings(value: Any, loc: str = "") -> Iterator[tuple[str, str]]:
    """(where, text) of every string at any depth, ``where`` as a sweep field path."""
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{loc}.{k}" if loc else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{loc}[{i}]")


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
    with open_regular(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprints(data: dict[str, Any], base: Path | None) -> dict[str, str]:
    """{absolute path: sha256} of every file the sweep data names (see the module doc)."""
    found: dict[str, str] = {}
    todo: list[tuple[Any, Path | None]] = [(data, base)]
    while todo and len(found) < MAX_FILES:
        value, folder = todo.pop()
        for where, text in _strings(value):
            path = _candidate(text, folder)
            if path is None or str(path) in found:
                continue
            _refuse_special(path, where or "sweep")
            # a folder is walked lazily and only so far: a path such as "/" must not walk
            # the whole disk
            files = (sorted(itertools.islice((p for p in path.rglob("*") if p.is_file()), MAX_FILES))
                     if path.is_dir() else [path])
            for f in files:
                if str(f) in found:
                    continue
                try:
                    found[str(f)] = _digest(f)
                except NotRegularFile:
                    raise
                except OSError:
                    continue
                if f.suffix == ".toml" and f.stat().st_size < 1 << 20:
                    with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                        todo.append((tomllib.loads(f.read_text()), f.parent))
    return found


def _refuse_special(path: Path, where: str) -> None:
    """A sweep value naming a device, FIFO or socket is refused: fingerprinting it would
    read ``/dev/zero`` forever or wait on a FIFO's writer."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise SpecError(where, f"names {path}, which is {file_kind(mode)}; coop-tui reads only "
                               "regular files and folders, give another value")


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
    with open_regular(path) as fh:
        return fh.read(2) == GZIP_MAGIC


def open_bounded(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> BinaryIO:
    """``path`` opened for binary reading, inflated when it is gzip (by its first bytes,
    whatever its name), raising :class:`InputTooLarge` once more than ``limit`` bytes
    have come out (for gzip, also once past :data:`MAX_RATIO` times its compressed size)."""

    # the returned stream owns (and closes) this one
    if not is_gzip(path):
        return io.BufferedReader(_Bounded(open_regular(path), limit, path))  # type: ignore[return-value]
    source = open_regular(path)  # the returned stream closes it
    inflated = gzip.GzipFile(fileobj=source, mode="rb")
    return io.BufferedReader(_Bounded(inflated, limit, path, source=source))  # type: ignore[arg-type,return-value]


def read_bounded(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The whole (inflated) content of ``path``, at most ``limit`` bytes."""
    with open_bounded(path, limit=limit) as fh:
        return fh.read()
