"""Report section ``reasoning_fingerprints``: seed 003's provider fingerprints.

The texts are each play decision's provider reasoning, or its visible answer when the
provider gave no separate reasoning (chain-of-thought agents write it there). Strategies
write nothing and are skipped. At most :data:`MAX_TRACES` traces are used, taken at an
even stride over the run (the paper subsampled too). The computation is
:mod:`coop_tui.analysis.fingerprints`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis.sections import Section, register

if TYPE_CHECKING:
    from coop_tui.store import Store

MAX_TRACES = 20_000


def _texts(store: Store, run_id: str) -> tuple[list[str], list[str], dict[str, str]]:
    from coop_tui.analysis.personality import provider_from_spec

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


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    texts, agents, providers = _texts(store, run_id)
    if len(set(agents)) < 2:
        return None
    from coop_tui.analysis.fingerprints import fingerprints

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


register(Section(key="reasoning_fingerprints", title="Reasoning fingerprints (seed 003)",
                 build=build, render=render, order=65))
