"""Report sections: each analysis that adds a block to ``report`` is one module here.

A section module defines ``SECTION = Section(...)``. The report builds every section after
its core (counts, experiments, mechanisms), puts a non-empty result under the section's key
in ``report --json``, prints it with ``render`` in the text report and shows it as a panel
on the analysis screen. Adding an analysis therefore touches one file plus its tests, and
parallel work on different analyses never edits the same lines.

Keep the module's top level light (no numpy/scipy/sklearn imports there): the registry
imports every section each time a report is built, and ``build`` should return ``None``
cheaply (one indexed query) when the run has nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """

    key: str
    title: str
    build: Callable[[Store, str, dict[str, Any]], Any]
    render: Callable[[Any], list[Any]]
    widgets: Callable[[Any], list[Widget]] | None = None
    order: int = 100


_SECTIONS: dict[str, Section] = {}


def register(section: Section) -> Section:
    if section.key in _SECTIONS and _SECTIONS[section.key] is not section:
        raise ValueError(f"two report sections use the key {section.key!r}")
    _SECTIONS[section.key] = section
    return section


def sections() -> list[Section]:
    """Every registered section, in display order."""
    import_plugins(__name__, __path__)
    return sorted(_SECTIONS.values(), key=lambda s: (s.order, s.key))


def build_sections(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any]:
    """The non-empty sections of one run, by key."""
    out: dict[str, Any] = {}
    for section in sections():
        value = section.build(store, run_id, report)
        if value:
            out[section.key] = value
    return out


def rendered(report: dict[str, Any]) -> list[tuple[Section, Any]]:
    """The sections present in a built report, with their values, in display order."""
    return [(s, report[s.key]) for s in sections() if report.get(s.key)]
