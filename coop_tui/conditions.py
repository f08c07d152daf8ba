"""Named prompt conditions (the strategic personalities paper's framing conditions) an experiment can sweep over.

A condition changes how a game is presented, never the game the match is scored on
except through an explicit payoff scale: ``payoff_10x`` multiplies every payoff by 10
(shown and paid), as the strategic personalities paper's engine does; the framing conditions add a cover story, a
goal, a note about the co-player or a persona to the prompt. The names are the strategic personalities paper's
(``experiment/conditions.py`` of its public code); the wording here is our own.

The strategic personalities paper's conditions that need another protocol rather than another sentence
(``scot``, ``cot``, the ``paraphrase_*`` rewrites, ``outcome_*`` / ``role_*`` relabelling,
the ``temp_*`` temperatures) are not conditions here: :func:`get_condition` says what to
use instead (agent settings such as ``temperature`` and ``style``, or a template folder).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONDITIONS", "Condition", "condition_names", "get_condition"]


@dataclass(frozen=True)
class Condition:
    name: str
    summary: str
    scale: float | None = None
    """Payoff multiplier applied to the game (shown and paid); None: unchanged."""
    text: str = ""
    """Sentences added to the prompt before the game's rules; empty: none."""


_STORIES = {
    "cooking": "Picture yourself as one of two chefs in a cooking contest. Every round, "
    "both of you settle on an approach for the next dish.",
    "project": "Picture yourself working on a joint research project with a colleague. "
    "Every round stands for a week in which both of you decide how to contribute.",
    "business": "Picture yourself running a business that competes with one other firm in "
    "the same market. Every round stands for a quarter of strategic decisions.",
    "diplomacy": "Picture yourself as a diplomat in talks with the envoy of another "
    "country. Every round stands for one negotiating session.",
}
_GOALS = {
    "maximise": "Aim to earn as many points as you can over all rounds.",
    "win": "Aim to end with more points than the other player.",
    "fair": "Aim for outcomes that are fair to both players.",
    "joint": "Aim to make the points of both players together as large as possible.",
}
_NOTES = {
    "obvious_cooperate": "Good to know: the other player never changes their choice; "
    "they cooperate in every round.",
    "obvious_defect": "Good to know: the other player never changes their choice; they "
    "defect in every round.",
    "obvious_tft": "Good to know: the other player follows a simple rule. They cooperate "
    "in the first round and afterwards repeat whatever you chose in the round before.",
    "beware_mistakes": "Be aware that the other player now and then makes a mistake: even "
    "when they mean to cooperate, they may defect by accident. Such slips are not "
    "deliberate.",
}
_PERSONAS = {
    "rational": "You weigh strategic situations carefully and choose what maximises your "
    "expected payoff.",
    "cooperative": "You value trust and mutual benefit and prefer outcomes that are good "
    "for everyone involved.",
    "competitive": "You like to come out ahead and want to earn more than the other "
    "player whenever you can.",
}


def _build() -> dict[str, Condition]:
    out = {"baseline": Condition("baseline", "the strategic personalities paper's neutral prompt")}
    for factor in (10, 100):
        out[f"payoff_{factor}x"] = Condition(
            f"payoff_{factor}x", f"every payoff multiplied by {factor}", scale=float(factor)
        )
    for key, text in _STORIES.items():
        out[f"cover_{key}"] = Condition(f"cover_{key}", f"{key} cover story", text=text)
    for key, text in _GOALS.items():
        out[f"goal_{key}"] = Condition(f"goal_{key}", f"stated goal: {key}", text=text)
    for key, text in _NOTES.items():
        out[key] = Condition(key, "a note about the co-player", text=text)
    for key, text in _PERSONAS.items():
        out[f"personality_{key}"] = Condition(f"personality_{key}", f"{key} persona", text=text)
    return out


CONDITIONS: dict[str, Condition] = _build()

_ELSEWHERE = {
    "scot": "a two-step predict-then-choose protocol, which is not a prompt condition",
    "cot": 'an agent setting: give the agent style = "cot"',
    "temp_0": "an agent setting: define an agent with temperature = 0",
    "temp_0.5": "an agent setting: define an agent with temperature = 0.5",
    "temp_1.5": "an agent setting: define an agent with temperature = 1.5",
}


def condition_names() -> list[str]:
    return list(CONDITIONS)


def get_condition(name: str) -> Condition:
    """The named condition; ValueError naming the known ones (or what to use instead)."""
    found = CONDITIONS.get(name)
    if found is not None:
        return found
    if name in _ELSEWHERE:
        raise ValueError(f"condition {name!r} is {_ELSEWHERE[name]}")
    if name.startswith(("paraphrase_", "outcome_", "role_")):
        raise ValueError(
            f"condition {name!r} rewrites the prompt's wording; copy data/prompts and point "
            f"the sweep's templates at the edited copy instead"
        )
    raise ValueError(f"unknown condition {name!r}; known: {', '.join(CONDITIONS)}")
