"""Where a benchmark's items come from: a built-in domain, a shipped demo set or a file.

Built-in domains need no file (similarity signals, App. F):

- ``similarity_game``: the game of the experiment at every announced similarity
  X = 0, 10, ..., 100; each item is answered with a mixed strategy and two agents are
  compared with chance-corrected Jensen-Shannon similarity;
- ``random_die_roll_alt`` (alias ``die``) and ``random_coin_toss_alt`` (alias ``coin``):
  the noise *controls*. An external seeded process rolls the die / tosses the coin
  ``length`` times for the agent and assigns it the outcomes; the agent is asked once
  (its reply is stored) but its answer is ignored, so the resulting similarity carries
  no information about the agents at all.

``demo_*`` names are the small sets shipped in ``data/benchmarks/`` (written for
coop-tui, in the item format of :mod:`coop_tui.grounded.items`); anything else is a
path to a JSONL file of items.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coop_tui.errors import SpecError
from coop_tui.grounded.items import Item, load_items, metric_of
from coop_tui.shipped import data_dir

SIMILARITY_LEVELS = tuple(range(0, 101, 10))
CONTROLS = {
    "random_die_roll_alt": ("a fair six-sided die", "roll", (1, 2, 3, 4, 5, 6)),
    "random_coin_toss_alt": ("a fair coin", "toss", ("H", "T")),
}
ALIASES = {"die": "random_die_roll_alt", "coin": "random_coin_toss_alt"}
BUILTIN = ("similarity_game", *CONTROLS)


@dataclass(frozen=True)
class Benchmark:
    """A named set of items and the metric that compares two agents on it."""

    key: str
    items: tuple[Item, ...]
    metric: str
    domain: str
    """``file`` (items asked one by one), ``similarity_game`` or ``control``."""

    @property
    def scale(self) -> tuple[int, int] | None:
        return next((i.scale for i in self.items if i.scale is not None), None)


def demo_dir() -> Path:
    return data_dir() / "benchmarks"


def benchmark_key(ref: str) -> str:
    """The name a benchmark is known by in matrices and sources (a file's stem)."""
    ref = ALIASES.get(ref, ref)
    if ref.endswith(".jsonl"):
        return Path(ref).stem
    return ref


def control_items(key: str, length: int) -> tuple[Item, ...]:
    thing, verb, values = CONTROLS[key]
    return tuple(
        Item(id=f"{verb}-{n}", prompt=f"{verb} {n} of {thing}", kind="control",
             extra={"values": values})
        for n in range(1, length + 1)
    )


def similarity_game_items(actions: tuple[str, ...]) -> tuple[Item, ...]:
    return tuple(
        Item(id=f"x{x}", prompt=f"The other player is {x}% similar.", kind="mixed",
             actions=actions, extra={"similarity": x})
        for x in SIMILARITY_LEVELS
    )


def load_benchmark(ref: str, *, base: Path | None = None, length: int = 100,
                   actions: tuple[str, ...] = ("A0", "A1")) -> Benchmark:
    """The benchmark a sweep names; SpecError (field ``benchmark``) when it cannot load."""
    ref = ALIASES.get(ref, ref)
    if ref in CONTROLS:
        return Benchmark(ref, control_items(ref, length), "agreement", "control")
    if ref == "similarity_game":
        return Benchmark(ref, similarity_game_items(actions), "jsd", "similarity_game")
    path = _path_of(ref, base)
    items = _cached_items(str(path), path.stat().st_mtime_ns)
    return Benchmark(benchmark_key(ref), items, metric_of(items, path.name), "file")


@lru_cache(maxsize=32)
def _cached_items(path: str, _mtime: int) -> tuple[Item, ...]:
    return tuple(load_items(path))


def _path_of(ref: str, base: Path | None) -> Path:
    shipped = demo_dir() / f"{ref}.jsonl"
    if "/" not in ref and not ref.endswith(".jsonl") and shipped.exists():
        return shipped
    path = Path(ref).expanduser()
    if not path.is_absolute() and base is not None and (base / path).exists():
        path = base / path
    if path.suffix != ".jsonl" or not path.is_file():
        demos = sorted(p.stem for p in demo_dir().glob("*.jsonl"))
        where = ""
        if path.suffix == ".jsonl" and path.stem in PUBLISHED:
            # the similarity study's benchmarks: published by their authors, not shipped
            target = (base / path if base is not None and not path.is_absolute() else path).absolute()
            where = (f"; {path.stem} is {PUBLISHED[path.stem]}, not shipped with coop-tui: "
                     f"convert it to the item format and save it as {target} "
                     "(docs/reproducing-similarity.md#where-the-benchmarks-come-from)")
        raise SpecError(
            "benchmark",
            f"{ref!r} is neither a built-in domain ({', '.join(BUILTIN)}, or die / coin), a "
            f"demo set ({', '.join(demos)}) nor an existing .jsonl item file{where}",
        )
    return path


PUBLISHED = {
    "trait": "TRAIT (Lee et al., 2025), a personality questionnaire",
    "hle": "Humanity's Last Exam (Center for AI Safety, Scale AI et al., 2026)",
    "moral_choice": "MoralChoice (Scherrer et al., 2023)",
    "newcomb": "the Newcomb-like problems of Oesterheld et al. (2025, arXiv:2411.10588)",
}
"""The published benchmarks the similarity signals paper's study reads from files: what
each one is, for the error that names a missing one."""
