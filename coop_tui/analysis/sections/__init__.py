"""Report sections: each analysis that adds a block to ``report`` is one module here.

A section module defines ``SECTION = Section(...)``. The report builds every section after
its core (counts, experiments, mechanisms), puts a non-empty result under the section's key
in ``report --json``, prints it with ``render`` in the text report and shows it as a panel
on the analysis screen. Adding an analysis therefore touches one file plus its tests, and
parallel work on different analyses never edits the same lines.

Keep the module's top level light (no numpy/scipy/sklearn imports there): the registry
imports every section each time a report is built, and ``build`` should return ``None``
cheaply (one indexed query) when the run has nothing for it.

A report builds only the sections it is asked for (``report --sections KEY,...``; none for
``--format latex|csv``). A section that takes seconds (the reasoning fingerprints) gives
``inputs``: a cheap description of everything its ``build`` reads (ids of the rows, the
agents, its parameters). Its value is then stored in ``section_results`` under a hash of
that description and read back while the description stays the same; ``import`` and
``--batch`` store these values when a run is written, so the next report reads them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coop_tui.plugins import import_plugins

if TYPE_CHECKING:
    from textual.widget import Widget

    from coop_tui.store import Store


@dataclass(frozen=True)
class Section:
    """One block of the report.

    ``build(store, run_id, report)`` sees the core report (read-only by convention) and
    returns a JSON-able value, or ``None``/empty when the run has nothing for this section.
    ``render(value)`` gives rich renderables for the text report and, unless ``widgets`` is
    given, for the section's panel on the analysis screen. ``widgets(value)`` may instead
    give Textual widgets (plots, tables) for the panel.

    ``inputs(store, run_id)``, for a section too slow to build on every report, returns a
    JSON-able description of all that ``build`` reads and its parameters; it must be cheap
    (no reading of long texts). The built value is stored under a hash of it and of
    ``version`` (bump it when ``build`` changes its result) and must survive a JSON round
    trip; ``build`` of such a section must not read ``report``. The analysis screen builds
    these sections in a worker of their own, after the rest is shown.
    """

    key: str
    title: str
    build: Callable[[Store, str, dict[str, Any]], Any]
    render: Callable[[Any], list[Any]]
    widgets: Callable[[Any], list[Widget]] | None = None
    order: int = 100
    inputs: Callable[[Store, str], Any] | None = None
    version: int = 1
    latex: Callable[[Any], str] | None = None
    """The value as LaTeX, for ``report --format latex`` (which prints only the population
    tables and the sections that give this)."""
    csv: Callable[[Any], list[dict[str, Any]]] | None = None
    """The value as rows (a ``table`` column naming them), appended to ``report --format
    csv``; columns the population tables lack are added to the header."""

    @property
    def stored(self) -> bool:
        """Whether the value is kept in ``section_results`` (a slow section)."""
        return self.inputs is not None


_SECTIONS: dict[str, Section] = {}


def register(section: Section) -> Section:
    if section.key in _SECTIONS and _SECTIONS[section.key] is not section:
        raise ValueError(f"two report sections use the key {section.key!r}")
    _SECTIONS[section.key] = section
    return section


def sections() -> list[Section]:
    """Every registered section, in display order."""
    import_plugins(__name__, __path__, group="coop_tui.report_sections")
    return sorted(_SECTIONS.values(), key=lambda s: (s.order, s.key))


def keys() -> list[str]:
    """Every section's key, in display order (what ``report --sections`` accepts)."""
    return [s.key for s in sections()]


def unknown(wanted: Collection[str]) -> list[str]:
    """The keys of ``wanted`` that name no section, in the order given."""
    known = set(keys())
    return [k for k in wanted if k not in known]


def selected(only: Collection[str] | None) -> list[Section]:
    """The sections ``only`` names (all when None), in display order."""
    return [s for s in sections() if only is None or s.key in only]


MISSING = object()
"""What :func:`build_section` returns for a stored section that is not stored yet and was
not to be computed."""


def _digest(section: Section, store: Store, run_id: str) -> str:
    assert section.inputs is not None
    described = json.dumps([section.key, section.version, run_id, section.inputs(store, run_id)],
                           sort_keys=True, default=str)
    return hashlib.sha256(described.encode()).hexdigest()


def _read(store: Store, section: Section, run_id: str, digest: str) -> Any:
    try:
        row = store.db.execute(
            "select value from section_results where section = ? and run_id = ? and digest = ?",
            [section.key, run_id, digest]).fetchone()
    except sqlite3.Error:  # an older database opened read-only: nothing stored
        return MISSING
    return MISSING if row is None else json.loads(row[0])


def build_section(section: Section, store: Store, run_id: str, report: dict[str, Any], *,
                  compute: bool = True) -> Any:
    """One section's value: built, or for a stored section read from ``section_results``
    when its inputs are unchanged (built and stored otherwise; :data:`MISSING` when not
    stored and ``compute`` is False)."""
    if not section.stored:
        return section.build(store, run_id, report)
    digest = _digest(section, store, run_id)
    value = _read(store, section, run_id, digest)
    if value is not MISSING or not compute:
        return value
    text = json.dumps(section.build(store, run_id, report), default=str)
    try:
        with store.db.conn:
            store.db.conn.execute(
                "insert or replace into section_results (section, run_id, digest, value,"
                " created_at) values (?, ?, ?, ?, ?)",
                [section.key, run_id, digest, text, time.time()])
    except sqlite3.Error:
        pass  # read-only or busy: the next report builds it again
    return json.loads(text)  # the same value a later report reads back


def build_sections(store: Store, run_id: str, report: dict[str, Any],
                   only: Collection[str] | None = None, *, compute: bool = True) -> dict[str, Any]:
    """The non-empty sections of one run, by key: those ``only`` names (all when None).
    With ``compute`` False, stored sections that are not stored yet are left out."""
    out: dict[str, Any] = {}
    for section in selected(only):
        value = build_section(section, store, run_id, report, compute=compute)
        if value is not MISSING and value:
            out[section.key] = value
    return out


def pending(store: Store, run_id: str) -> list[Section]:
    """The stored sections whose value for this run is not stored yet (the analysis screen
    builds these after showing the rest)."""
    return [s for s in sections() if s.stored
            and _read(store, s, run_id, _digest(s, store, run_id)) is MISSING]


def store_sections(store: Store, run_id: str) -> list[str]:
    """Build and store every stored section of a run (``import`` and ``--batch`` call
    this when a run is written, so reports read them); the keys that have a value."""
    out = []
    for section in sections():
        if section.stored and build_section(section, store, run_id, {}):
            out.append(section.key)
    return out


def rendered(report: dict[str, Any]) -> list[tuple[Section, Any]]:
    """The sections present in a built report, with their values, in display order."""
    return [(s, report[s.key]) for s in sections() if report.get(s.key)]
