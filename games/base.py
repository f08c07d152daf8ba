"""The one game type every part of coop-tui speaks.

A game is a finite normal-form game stored as a dense payoff tensor of shape
``(*action_counts, n_players)``. A dense tensor keeps every game (2-player tables,
n-player PublicGood, k-level Travelers, user files) behind one representation, so
theory, sampling and analysis never special-case a family.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def points(x: float | str) -> str:
    """An amount of points as a prompt says it: "1 point", "-1 point", "2.5 points".

    Takes a number or a number already formatted for the prompt (templates get those)."""
    text = x if isinstance(x, str) else f"{x:g}"
    return f"{text} point" if abs(float(x)) == 1 else f"{text} points"


class GameError(ValueError):
    """A game reference or game file the user must fix: unknown key, malformed file.

    The message names what is wrong and how to fix it, ready to show as it is.
    """


@dataclass(frozen=True, eq=False)
class Game:
    key: str
    title: str
    description: str
    action_names: tuple[tuple[str, ...], ...]
    """Per seat, the human names of the actions ("Cooperate", "Defect"). Prompts use
    neutral labels (A0, A1, ...) instead; these names are for people and reports."""
    payoffs: np.ndarray
    """Shape ``(*action_counts, n_players)``: ``payoffs[a0, a1, ..., i]`` is seat i's payoff."""
    cooperative: tuple[frozenset[int], ...]
    """Per seat, the action indices that count as cooperating (empty: the game has none)."""
    defect: tuple[int | None, ...]
    """Per seat, the action index that counts as defecting (None: the game has none)."""
    params: dict = field(default_factory=dict)
    """The parameters the game was built with (e.g. players, alpha, scale), for storage."""
    action_notes: tuple[tuple[str, ...], ...] | None = None
    """Per seat and action, what the action means, shown beside its neutral label in
    prompts (Travelers' claim values); None: labels only."""
    payoff_rule: str | None = None
    """A rule that describes the payoffs instead of listing every outcome (Public Goods:
    k contributors -> payoffs). ``{a0}``, ``{a1}``, ... stand for the reader's labels of
    actions 0, 1, ...; None: prompts list the outcomes. A game rebuilt from its payoff
    tensor (scaled, mediated, ...) drops it, since the rule would no longer hold."""
    called_by_code: str = ""
    """The name the strategic personalities paper's code gives the game ("the Diner's
    Dilemma", "the Nash Demand Game") where coop-tui's own prompt gives none: stated only
    by a protocol that states the code's names (:meth:`PromptProtocol.game_name`)."""
    code_payoff_rule: str | None = None
    """The payoffs as the strategic personalities paper's code tells them, a rule in words
    with ``{a0}``, ``{a1}`` for the reader's labels (the Diner's Dilemma's dishes and
    bill), where coop-tui's own prompt lists every outcome: stated instead of the list by
    a protocol that states the code's rules (:meth:`PromptProtocol.payoff_rule`). A
    transform of the payoffs (scale, bonus) drops it, since it would no longer hold."""
    fixed_option_order: bool = False
    """Under letters drawn once per match (``randomize_labels = "trial"``), list the
    options in action order every round instead of a per-round shuffle: the strategic
    personalities paper's code does so for its focal point, where the order of four equal
    options is itself a cue."""

    def __post_init__(self) -> None:
        payoffs = np.asarray(self.payoffs, dtype=float)
        object.__setattr__(self, "payoffs", payoffs)
        counts = tuple(len(names) for names in self.action_names)
        if payoffs.shape != (*counts, len(counts)):
            raise ValueError(
                f"game {self.key!r}: payoff tensor has shape {payoffs.shape}, "
                f"expected {(*counts, len(counts))} for actions {counts}"
            )
        if len(self.cooperative) != len(counts) or len(self.defect) != len(counts):
            raise ValueError(f"game {self.key!r}: cooperative/defect must name one entry per seat")

    # ----------------------------------------------------------------- shape
    @property
    def n_players(self) -> int:
        return len(self.action_names)

    @property
    def action_counts(self) -> tuple[int, ...]:
        return tuple(len(names) for names in self.action_names)

    @property
    def has_cooperation(self) -> bool:
        return all(self.cooperative) and all(d is not None for d in self.defect)

    @property
    def symmetric(self) -> bool:
        """True when every seat has the same actions and permuting seats permutes payoffs.

        Checked on the transpositions (0 j), which generate every permutation of the
        seats, so an n-player game costs n-1 tensor comparisons, not n! loops.
        """
        counts = self.action_counts
        if len(set(counts)) != 1 or len(set(self.action_names)) != 1:
            return False
        for j in range(1, self.n_players):
            swapped = np.swapaxes(self.payoffs, 0, j)[..., _swap_order(self.n_players, 0, j)]
            if not np.allclose(swapped, self.payoffs):
                return False
        return True

    # ----------------------------------------------------------------- payoffs
    def payoff(self, profile: Sequence[int]) -> tuple[float, ...]:
        return tuple(float(x) for x in self.payoffs[tuple(profile)])

    def expected_payoffs(self, strategies: Sequence[np.ndarray]) -> np.ndarray:
        """Expected payoff of every seat when each seat plays its own mixed strategy."""
        tensor = self.payoffs
        for s in strategies:
            tensor = np.tensordot(np.asarray(s, dtype=float), tensor, axes=([0], [0]))
        return tensor

    # ----------------------------------------------------------------- cooperation
    def cooperation_mass(self, seat: int, distribution: Sequence[float]) -> float | None:
        """Probability a seat puts on its cooperative action(s); None if the game has none."""
        if not self.cooperative[seat]:
            return None
        return float(sum(distribution[a] for a in self.cooperative[seat]))

    def is_cooperative(self, seat: int, action: int) -> bool | None:
        if not self.cooperative[seat]:
            return None
        return action in self.cooperative[seat]

    def all_cooperate_profile(self) -> tuple[int, ...]:
        return tuple(min(c) for c in self.cooperative)

    def all_defect_profile(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.defect)  # type: ignore[arg-type]

    def normalised_welfare(self, welfare: float) -> float | None:
        """Map total welfare so that all-defect is 0 and all-cooperate is 1."""
        if not self.has_cooperation:
            return None
        w_c = sum(self.payoff(self.all_cooperate_profile()))
        w_d = sum(self.payoff(self.all_defect_profile()))
        if np.isclose(w_c, w_d):
            return None
        return float((welfare - w_d) / (w_c - w_d))

    def describe_payoffs(self) -> list[tuple[tuple[int, ...], tuple[float, ...]]]:
        """Every action profile with its payoffs, in lexicographic order."""
        return [
            (profile, self.payoff(profile))
            for profile in itertools.product(*(range(c) for c in self.action_counts))
        ]


def _swap_order(n: int, a: int, b: int) -> list[int]:
    order = list(range(n))
    order[a], order[b] = order[b], order[a]
    return order


def symmetric_two_player(
    key: str,
    title: str,
    description: str,
    names: Sequence[str],
    table: Sequence[Sequence[float]],
    cooperative: Sequence[int],
    defect: int | None,
    params: dict | None = None,
) -> Game:
    """Build a symmetric 2-player game from the row player's payoff table."""
    row = np.asarray(table, dtype=float)
    k = len(names)
    if row.shape != (k, k):
        raise ValueError(f"game {key!r}: payoff table must be {k}x{k}, got {row.shape}")
    payoffs = np.stack([row, row.T], axis=-1)
    coop = frozenset(cooperative)
    return Game(
        key=key,
        title=title,
        description=description,
        action_names=(tuple(names), tuple(names)),
        payoffs=payoffs,
        cooperative=(coop, coop),
        defect=(defect, defect),
        params=dict(params or {}),
    )


def bimatrix(
    key: str,
    title: str,
    description: str,
    row_names: Sequence[str],
    col_names: Sequence[str],
    cells: Sequence[Sequence[Sequence[float]]],
    cooperative: tuple[Sequence[int], Sequence[int]],
    defect: tuple[int | None, int | None],
    params: dict | None = None,
) -> Game:
    """Build a 2-player game from ``cells[r][c] = (row payoff, column payoff)``."""
    payoffs = np.asarray(cells, dtype=float)
    return Game(
        key=key,
        title=title,
        description=description,
        action_names=(tuple(row_names), tuple(col_names)),
        payoffs=payoffs,
        cooperative=(frozenset(cooperative[0]), frozenset(cooperative[1])),
        defect=tuple(defect),
        params=dict(params or {}),
    )
