"""The strategic personalities paper's centipede games (6 and 10 nodes), as run and as described.

As run by the public code (``centipede_6`` / ``centipede_10``): each player names, at the
same time, the node at which it would take (1..N, or N+1 to always pass). Player 1 moves at
odd nodes, Player 2 at even ones; the game ends at the first node whose mover planned to
take there or earlier, and pays that node's entry of the schedule; if nobody takes, it pays
the last entry (which is also what Player 2 taking at node N pays). Schedules: node k pays
(taker, other) = (4, 1), (8, 2), (16, 4), ... doubling, i.e. 4 * 2^(k-1) to the taker.
The players are told what the code tells them (``described = "as_run"``, the default: a pot
of 2 that "roughly doubles", the taker's share about 2/3, an equal split at the end, none
of which the schedule pays); ``described = "exact"`` lists the schedule node by node.

As the paper's text describes it (``centipede_6_turns`` / ``centipede_10_turns``): the
players really move in turn, take or pass at each node, seeing that every earlier node was
passed; the same schedule pays.
"""

from __future__ import annotations

from coop_tui.games import register_game
from coop_tui.games._checks import as_int
from coop_tui.games.base import points
from coop_tui.games.kinds import (
    NumberSpace,
    ProtocolGame,
    RoundResult,
    Turn,
    points_summaries,
    protocol_game,
    told_param,
    told_params,
)


def centipede_schedule(nodes: int) -> list[tuple[float, float]]:
    """Payoffs (Player 1, Player 2) when the game ends at node k (index k; index 0 unused).

    The taker at node k gets 4 * 2**(k-1) and the other player a quarter of it; the last
    entry (node N) is the all-pass outcome, as in the public code's tables.
    """
    out: list[tuple[float, float]] = [(0.0, 0.0)]
    for k in range(1, nodes + 1):
        big, small = 4.0 * 2 ** (k - 1), 1.0 * 2 ** (k - 1)
        if k == nodes:  # the code's last entry: all passed -> (N even) P2 gets the big share
            big, small = 2.0 * 2 ** (k - 1), 1.0 * 2 ** (k - 1)
            out.append((small, big) if k % 2 == 0 else (big, small))
        else:
            out.append((big, small) if k % 2 == 1 else (small, big))
    return out


def centipede_end(take_nodes: tuple[int, int], nodes: int) -> int:
    """The node where the plans end the game (``nodes`` if nobody takes)."""
    for node in range(1, nodes + 1):
        mover = 0 if node % 2 == 1 else 1
        if take_nodes[mover] <= node:
            return node
    return nodes


def _rules(nodes: int, schedule: list[tuple[float, float]]) -> str:
    lines = [
        f"There are {nodes} decision nodes. Player 1 decides at nodes 1, 3, 5, ...; Player 2 "
        "at nodes 2, 4, 6, .... At its node the player either takes (the game ends there) or "
        "passes (the game goes on to the next node). Points when the game ends at each node "
        "(Player 1, Player 2):"
    ]
    for k in range(1, nodes + 1):
        who = "Player 1" if k % 2 == 1 else "Player 2"
        a, b = schedule[k]
        what = f"{who} takes" if k < nodes else f"{who} takes, or everyone passed to the end"
        lines.append(f"- node {k} ({what}): {a:g} and {b:g}")
    return "\n".join(lines)


DESCRIPTIONS = ("as_run", "exact")
"""How a stated-plans centipede describes its payoffs: ``as_run`` with the information the
public code gives (a pot of 2 that roughly doubles, the taker's share about 2/3, an equal
split if nobody takes; inaccurate against its own schedule, as run), ``exact`` with the
schedule node by node (who moves where, what each node pays)."""


def _rules_as_run(nodes: int) -> str:
    """The public code's description of the centipede, in our words: approximate, and
    silent on which player moves at which node."""
    return (
        f"The game has {nodes} decision nodes, and the players take turns. At each node the "
        "player whose turn it is either takes the pot or passes. The pot starts at 2 points "
        "and roughly doubles every time someone passes. Whoever takes gets the larger share "
        "(about 2/3) and the other player the smaller share (about 1/3). If both players pass "
        f"at all {nodes} nodes, the pot is split equally."
    )


def _summaries(pay: tuple[float, ...], end: int) -> tuple[str, ...]:
    return tuple(f"the game ended at node {end}; you received {points(p)}." for p in pay)


def _plan_game(key: str, nodes: int, rounds: int, hint: bool = True,
               described: str = "as_run", told: str = "") -> ProtocolGame:
    """A stated-plans centipede. Under ``told = "code"`` (the strategic personalities
    protocol's default) a player hears what the code tells: not that the plans are stated
    at the same time, and after a round only the points it received; ``"ours"`` adds both
    (the simultaneous plans and the node where the round ended)."""
    how = told_param(told)
    if not isinstance(hint, bool):
        raise ValueError(f"hint must be true or false, got {hint!r}")
    if described not in DESCRIPTIONS:
        raise ValueError(f"described must be one of {', '.join(DESCRIPTIONS)}, not "
                         f"{described!r}: as_run gives the public code's (approximate) payoff "
                         "description, exact the schedule node by node")
    exact = described == "exact"
    n_nodes = as_int("nodes", nodes, minimum=2, maximum=20)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    schedule = centipede_schedule(n_nodes)
    space = NumberSpace("take_node", 1, n_nodes + 1, decimals_allowed=False,
                        example=4)

    async def play(turn: Turn) -> RoundResult:
        plain = turn.as_code
        query = (("" if plain else "Both players state their plan at the same time. ")
                 + f"At which node would you "
                 f"take (1 to {n_nodes}; {n_nodes + 1} means you always pass)?"
                 + (" Only the nodes where you move matter." if exact else "")
                 + (" In game theory's equilibrium of this game (backward induction) the "
                    "first mover takes at node 1." if hint else ""))
        plans = await turn.numbers([(s, "plan", query, space, None) for s in range(2)])
        end = centipede_end((int(plans[0]), int(plans[1])), n_nodes)
        pay = schedule[end]
        return RoundResult(pay, {"take_nodes": plans, "end_node": end},
                           points_summaries(pay) if plain else _summaries(pay, end))

    return protocol_game(
        key, f"Centipede ({n_nodes} nodes, stated plans)",
        "Both players state the node where they would take; the earliest planned take ends "
        "the game. Backward induction: take at node 1.",
        moves=(f"take node 1-{n_nodes + 1}",) * 2, roles=("Player 1", "Player 2"),
        called="the Centipede Game",
        rules=_rules(n_nodes, schedule) if exact else _rules_as_run(n_nodes), protocol=play,
        rounds=r, params={"nodes": n_nodes, "hint": hint, "described": described,
                          **told_params(how)},
    )


def _turns_game(key: str, nodes: int, rounds: int) -> ProtocolGame:
    n_nodes = as_int("nodes", nodes, minimum=2, maximum=20)
    r = as_int("rounds", rounds, minimum=1, maximum=100)
    schedule = centipede_schedule(n_nodes)

    async def play(turn: Turn) -> RoundResult:
        end = n_nodes
        for node in range(1, n_nodes + 1):
            mover = 0 if node % 2 == 1 else 1
            a, b = schedule[node]
            own, other = (a, b) if mover == 0 else (b, a)
            query = (f"The game is at node {node}; every earlier node was passed. If you take "
                     f"now you get {own:g} and the other player {other:g}. Do you take or pass?")
            if await turn.choose(mover, f"node{node}", query, ("take", "pass"),
                                 facts={"node": node}) == 0:
                end = node
                break
        pay = schedule[end]
        return RoundResult(pay, {"end_node": end}, _summaries(pay, end))

    return protocol_game(
        key, f"Centipede ({n_nodes} nodes, moves in turn)",
        "Players alternately take (ending the game) or pass (growing the pot); the paper's "
        "text version, played node by node.",
        moves=("take/pass at odd nodes", "take/pass at even nodes"),
        roles=("Player 1", "Player 2"), called="the Centipede Game", rules=_rules(n_nodes, schedule), protocol=play,
        rounds=r, params={"nodes": n_nodes},
    )


@register_game("centipede_6")
def centipede_6(nodes: int = 6, rounds: int = 5, hint: bool = True,
                described: str = "as_run", told: str = "") -> ProtocolGame:
    """Centipede, 6 nodes, as run: both state a take node at once (strategic personalities); ``hint`` (as
    run) tells the players that the equilibrium is to take at node 1; ``described``
    (:data:`DESCRIPTIONS`) picks the code's payoff description or the exact schedule."""
    return _plan_game("centipede_6", nodes, rounds, hint, described, told)


@register_game("centipede_10")
def centipede_10(nodes: int = 10, rounds: int = 5, hint: bool = True,
                described: str = "as_run", told: str = "") -> ProtocolGame:
    """Centipede, 10 nodes, as run: both state a take node at once (strategic personalities); ``hint`` (as
    run) tells the players that the equilibrium is to take at node 1; ``described``
    (:data:`DESCRIPTIONS`) picks the code's payoff description or the exact schedule."""
    return _plan_game("centipede_10", nodes, rounds, hint, described, told)


@register_game("centipede_6_turns")
def centipede_6_turns(nodes: int = 6, rounds: int = 5) -> ProtocolGame:
    """Centipede, 6 nodes, as the paper describes it: take or pass in turn."""
    return _turns_game("centipede_6_turns", nodes, rounds)


@register_game("centipede_10_turns")
def centipede_10_turns(nodes: int = 10, rounds: int = 5) -> ProtocolGame:
    """Centipede, 10 nodes, as the paper describes it: take or pass in turn."""
    return _turns_game("centipede_10_turns", nodes, rounds)
