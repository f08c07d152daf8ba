"""Report section ``reasoning_fingerprints``: the strategic personalities paper's provider fingerprints.

The texts are each play decision's provider reasoning, or its visible answer when the
provider gave no separate reasoning (chain-of-thought agents write it there). Strategies
write nothing and are skipped. At most :data:`MAX_TRACES` traces are used, taken at an
even stride over the run (the paper subsampled too). The computation is
:mod:`coop_tui.analysis.fingerprints`.

The value takes seconds on a large run, so it is stored (see
:mod:`coop_tui.analysis.sections`) under a hash of :func:`inputs`: the ids of the run's
play decisions (a stored decision's texts never change; a new or replaced decision has a
new id), the run's creation time (a re-imported run is written anew), its agents and the
parameters below.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from coop_tui.analysis.fingerprints import fingerprints
from coop_tui.analysis.personality import provider_from_spec
from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store

MAX_TRACES = 5_000
"""The silhouette over traces already used at most 5,000; centroids of a few agents from
5,000 traces are as stable, and the section stays within seconds at 50,000 texts."""


def _texts(store: Store, run_id: str) -> tuple[list[str], list[str], dict[str, str]]:
    db = store.db
    seats = db.execute(
        """select distinct s.agent, s.agent_kind, s.agent_spec from seats s
           join matches m on m.id = s.match_id
           where m.run_id = ? and s.agent_kind != 'strategy'""", [run_id]).fetchall()
    if len({agent for agent, _, _ in seats}) < 2:
        return [], [], {}
    providers = {agent: provider_from_spec(kind, spec) for agent, kind, spec in seats}
    text = "coalesce(nullif(d.reasoning, ''), nullif(d.response, ''))"
    where = f"""from decisions d join matches m on m.id = d.match_id
               where m.run_id = ? and d.phase = 'play' and {text} is not null"""
    total = db.execute(f"select count(*) {where}", [run_id]).fetchone()[0]
    stride = max(1, -(-total // MAX_TRACES))
    picked = db.execute(  # every stride-th trace, chosen in SQL (never all texts in memory)
        f"""select agent, body from (select d.agent as agent, {text} as body,
                   row_number() over (order by d.id) as rn {where})
            where (rn - 1) % ? = 0""", [run_id, stride]).fetchall()
    return [t for _, t in picked], [a for a, _ in picked], providers


def inputs(store: Store, run_id: str) -> dict[str, Any]:
    """What :func:`build` reads, cheaply: no text is loaded."""
    db = store.db
    seats = db.execute(
        """select distinct s.agent, s.agent_kind, s.agent_spec from seats s
           join matches m on m.id = s.match_id where m.run_id = ? and s.agent_kind != 'strategy'
           order by 1, 2, 3""", [run_id]).fetchall()
    if len({agent for agent, _, _ in seats}) < 2:  # nothing to compare (strategies only)
        return {"seats": [list(r) for r in seats]}
    ids = hashlib.sha256()
    for (decision_id,) in db.execute(
            """select d.id from decisions d join matches m on m.id = d.match_id
               where m.run_id = ? and d.phase = 'play' order by d.id""", [run_id]):
        ids.update(b"%d," % decision_id)
    created = db.execute("select created_at from runs where id = ?", [run_id]).fetchone()
    return {"decisions": ids.hexdigest(), "seats": [list(r) for r in seats],
            "created_at": created[0] if created else None,
            "max_traces": MAX_TRACES, "dimensions": 384, "vocabulary": 5000, "seed": 0}


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    texts, agents, providers = _texts(store, run_id)
    if len(set(agents)) < 2:
        return None

    for a in agents:
        providers.setdefault(a, "unknown")
    return fingerprints(texts, agents, providers)


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    out: list[Any] = []
    emb = value.get("embedding")
    if emb:
        out.append(f"{value['traces']} traces, TF-IDF vocabulary {emb['vocabulary']}, "
                   f"{emb['dimensions']} SVD dimensions; provider silhouette "
                   f"{_num(value['silhouette']['overall'])}, between/within distance ratio "
                   f"{_num(value['between_within_ratio'])}")
        names = value["cosine_distances"]["agents"]
        table = Table("cosine distance", *names, "provider", "silhouette")
        for name, row in zip(names, value["cosine_distances"]["matrix"], strict=True):
            a = value["agents"][name]
            table.add_row(name, *(f"{x:.3f}" for x in row), a["provider"], _num(a["silhouette"]))
        out.append(table)
    lex = value["lexical"]
    agents = sorted(lex)
    table = Table("per 1,000 words", *agents, title="Lexical features of the reasoning")
    table.add_row("words", *(str(lex[a]["words"]) for a in agents))
    for term in next(iter(lex.values()))["per_1000_words"]:
        table.add_row(term, *(_num(lex[a]["per_1000_words"][term], 1) for a in agents))
    out.append(table)
    return out


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


SECTION = register(Section(key="reasoning_fingerprints", title="Reasoning fingerprints (strategic personalities)",
                           build=build, render=render, order=65, inputs=inputs, version=2))
