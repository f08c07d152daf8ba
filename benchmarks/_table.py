"""Shared output for the benchmarks: a rich table on stdout and a JSON file in results/."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def report(name: str, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
           extra: dict[str, Any] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right" if col != columns[0] else "left")
    for row in rows:
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    Console(width=max(Console().width, 150)).print(table)
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "benchmark": name,
        "title": title,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "columns": list(columns),
        "rows": [list(r) for r in rows],
        **(extra or {}),
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=str))
