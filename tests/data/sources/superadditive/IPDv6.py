"""Stand-in for the paper's tournament script: same names and signatures, our own words."""

import json
import os
import random
from typing import Annotated, Any, Literal

from langchain_core.output_parsers import PydanticOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_ollama.llms import OllamaLLM
from langgraph.graph import END, StateGraph
from nicerthanhumansmetrics import evaluate_player
from pydantic import BaseModel, Field

os.environ["STANDIN_TRACE"] = "on"  # must never run when coop-tui reads this file

PAYOFFS = {
    ("action_a", "action_a"): (3, 3),
    ("action_a", "action_b"): (-1, 5),
    ("action_b", "action_a"): (5, -1),
    ("action_b", "action_b"): (0, 0),
}
NUM_GROUPS = 3
GROUP_SIZE = 2
MAX_ROUNDS_PER_MATCH = 20
MAX_TOTAL_ROUNDS = 100
INTERGROUP_COMPETITION = True
GROUP_REWARD_MULTIPLIER = 2.0
PLANNING_FREQUENCY = 5
COOPERATE_DEFECT_PROMPT = False
LLM = OllamaLLM(model="stand-in")  # must never run either


def merge_dict(current: dict, update: dict) -> dict:
    merged = current.copy()
    merged.update(update)
    return merged


class Action(BaseModel):
    move: Literal["action_a", "action_b"]
    reasoning: str
    keep_playing: bool


class MetaPromptFields(BaseModel):
    lowest_highest: tuple[int, int] = Field(description="range of one round's points")
    round: int = Field(description="the round now")


class PlayerStats(BaseModel):
    total_score: int = Field(default=0)
    action_a_count: int = Field(default=0)
    action_b_count: int = Field(default=0)
    move_history: list[str] = Field(default_factory=list)
    score_history: list[int] = Field(default_factory=list)
    group_id: int = Field(default=0)
    plan: str = Field(default="(none yet)")
    critique: str = Field(default="(no review yet)")


class GroupStats(BaseModel):
    group_id: int
    total_score: int = Field(default=0)
    members: list[int] = Field(default_factory=list)


class MatchState(BaseModel):
    player1_id: int
    player2_id: int
    current_round: int = Field(default=1)
    player1_stats: PlayerStats = Field(default_factory=PlayerStats)
    player2_stats: PlayerStats = Field(default_factory=PlayerStats)
    completed: bool = Field(default=False)
    round_results: list[tuple[str, str]] = Field(default_factory=list)
    round_scores: list[tuple[int, int]] = Field(default_factory=list)
    is_first_interaction: bool = Field(default=True)


class TournamentState(BaseModel):
    players: dict[int, PlayerStats] = Field(default_factory=dict)
    matches: Annotated[dict[int, MatchState], merge_dict] = Field(default_factory=dict)
    current_match_idx: int = Field(default=0)
    groups: dict[int, GroupStats] = Field(default_factory=dict)
    experiment_condition: str = Field(default="super_additive")

    def update_group_stats(self) -> dict[int, GroupStats]:
        for group in self.groups.values():
            group.total_score = sum(self.players[p].total_score for p in group.members)
        if INTERGROUP_COMPETITION and self.current_match_idx == len(self.matches) - 1:
            best = max(self.groups.values(), key=lambda g: g.total_score)
            for p in best.members:
                self.players[p].total_score = int(self.players[p].total_score * 9)
        return self.groups


meta_prompt = ChatPromptTemplate.from_template(
    "Seat {player_id} after meeting seat {opponent_id}.\nRules:\n{game_rules}\n{group_stats}\n"
    "Rounds:\n{round_results}\nQuiz: points for {random_action_1} against {random_action_2}? "
    "What did the other seat do in round {random_round_1}, and earn in round {random_round_2}?\n"
    "{format_instructions}"
)

player_prompt = ChatPromptTemplate.from_template(
    "Seat {player_id} faces seat {opponent_id}.\nRules:\n{game_rules}\n{group_stats}\n"
    "Rounds:\n{round_results}\nPlan: {current_plan}\nPick a move; stay or go.\n{format_instructions}"
)

planner_prompt = ChatPromptTemplate.from_template(
    "Draft a plan for seat {player_id} (against seat {opponent_id}).\n{game_rules}\n"
    "Stats:\n{players_stats}\n{group_stats}\nEarlier:\n{history}\nOld plan: {old_plan}\n"
    "Review: {critique}\n{planner_instructions}"
)

critic_prompt = ChatPromptTemplate.from_template(
    "Review the plan of seat {player_id} (against seat {opponent_id}).\n{game_rules}\n"
    "Stats:\n{players_stats}\n{group_stats}\nEarlier:\n{history}\nPlan: {current_plan}\n"
    "{critic_instructions}"
)


def format_game_rules(current_round, total_rounds) -> str:
    if current_tournament_condition == "repeated_only":  # noqa: F821 - set by the runner
        goal = "own score"
    elif current_tournament_condition == "competition_only":  # noqa: F821
        goal = f"group score (+{(GROUP_REWARD_MULTIPLIER - 1) * 100}% to the best group)"
    else:
        goal = f"own and group score (+{(GROUP_REWARD_MULTIPLIER - 1) * 100}% to the best group)"
    return (f"* at most {MAX_ROUNDS_PER_MATCH} rounds a match, {MAX_TOTAL_ROUNDS} in all; "
            f"played {total_rounds}\n* round now: {current_round}\n* aim: {goal}")


def format_match_results(match: MatchState, player_id: int) -> str:
    first = player_id == match.player1_id
    lines = []
    for i, (a, b) in enumerate(match.round_results):
        pa, pb = match.round_scores[i]
        mine, theirs = (a, b) if first else (b, a)
        got, gave = (pa, pb) if first else (pb, pa)
        lines.append(f"#{i + 1} me {mine} them {theirs} ({got}/{gave})")
    return "\n".join(lines) if lines else "(nothing yet)"


def format_player_history(player_id: int, tournament_state: TournamentState,
                          current_match: MatchState) -> str:
    out = []
    for match in tournament_state.matches.values():
        if player_id in (match.player1_id, match.player2_id):
            text = format_match_results(match, player_id)
            if text != "(nothing yet)":
                out.append(f"[seat {match.player1_id} g{match.player1_stats.group_id} v "
                           f"seat {match.player2_id} g{match.player2_stats.group_id}]")
                out.append(text)
    return "\n".join(out) if out else "(nothing yet)"


def format_group_stats(player_id: int, opponent_id: int, tournament_state: TournamentState) -> str:
    if current_tournament_condition == "repeated_only":  # noqa: F821
        return ""
    mine = tournament_state.players[player_id].group_id
    theirs = "?" if opponent_id == "unknown" else tournament_state.players[opponent_id].group_id
    order = sorted(tournament_state.groups.values(), key=lambda g: g.total_score, reverse=True)
    rank = [g.group_id for g in order].index(mine) + 1
    return f"groups: mine g{mine}, theirs g{theirs}, rank {rank}/{NUM_GROUPS}"


def format_players_stats(player_id: int, opponent_id: int, state: MatchState):
    me = state.player1_stats if player_id == state.player1_id else state.player2_stats
    them = state.player2_stats if player_id == state.player1_id else state.player1_stats
    return f"me {me.total_score} ({me.action_a_count} a), them {them.total_score} ({them.action_a_count} a)"


def format_planner_instructions() -> str:
    return "Say when to pick each move."


def format_critic_instructions() -> str:
    extra = "" if current_tournament_condition == "repeated_only" else " Mind the group."  # noqa: F821
    return "Say what the plan misses." + extra


def generate_next_move(player_id: int, state: MatchState, opponent_id: int,
                       tournament_state: TournamentState) -> dict[str, Any]:
    parser = PydanticOutputParser(pydantic_object=Action)
    llm = LLM
    own = state.player1_stats if player_id == state.player1_id else state.player2_stats
    done = tournament_state.players[player_id]
    total_rounds = done.action_a_count + done.action_b_count + own.action_a_count + own.action_b_count
    if state.is_first_interaction:
        opponent_id = "unknown"
    prompt = player_prompt.format(
        player_id=player_id, opponent_id=opponent_id,
        game_rules=format_game_rules(state.current_round, total_rounds),
        round_results=format_match_results(state, player_id) if PLANNING_FREQUENCY != 0
        else format_player_history(player_id, tournament_state, state),
        group_stats=format_group_stats(player_id, opponent_id, tournament_state),
        current_plan=own.plan, format_instructions=parser.get_format_instructions(),
    )
    if COOPERATE_DEFECT_PROMPT:
        prompt = prompt.replace("action_a", "help").replace("action_b", "harm")
    response = llm.invoke(prompt)
    try:
        answer = json.loads(response.lower().replace("help", "action_a"))
        move, keep = answer["move"], answer["keep_playing"]
    except (ValueError, KeyError):
        move, keep = random.choice(["action_a", "action_b"]), True
    print(f"seat {player_id} read {move}")
    return {"move": move, "reasoning": response, "keep_playing": keep}


def _total(player_id: int, state: MatchState, tournament_state: TournamentState) -> int:
    own = state.player1_stats if player_id == state.player1_id else state.player2_stats
    done = tournament_state.players[player_id]
    return done.action_a_count + done.action_b_count + own.action_a_count + own.action_b_count


def generate_plan(player_id: int, state: MatchState, opponent_id: int,
                  tournament_state: TournamentState, old_plan: str, critique: str) -> str:
    prompt = planner_prompt.format(
        player_id=player_id, opponent_id=opponent_id,
        game_rules=format_game_rules(state.current_round, _total(player_id, state, tournament_state)),
        players_stats=format_players_stats(player_id, opponent_id, state),
        history=format_player_history(player_id, tournament_state, state),
        group_stats=format_group_stats(player_id, opponent_id, tournament_state),
        planner_instructions=format_planner_instructions(), old_plan=old_plan, critique=critique,
    )
    return LLM.invoke(prompt).strip()


def critique_plan(player_id: int, state: MatchState, opponent_id: int,
                  tournament_state: TournamentState, plan: str) -> str:
    prompt = critic_prompt.format(
        player_id=player_id, opponent_id=opponent_id,
        game_rules=format_game_rules(state.current_round, _total(player_id, state, tournament_state)),
        players_stats=format_players_stats(player_id, opponent_id, state),
        history=format_player_history(player_id, tournament_state, state),
        group_stats=format_group_stats(player_id, opponent_id, tournament_state),
        critic_instructions=format_critic_instructions(), current_plan=plan,
    )
    return LLM.invoke(prompt)


def run_meta_prompt(player_id: int, state: MatchState, opponent_id: int,
                    tournament_state: TournamentState) -> dict[str, Any]:
    parser = PydanticOutputParser(pydantic_object=MetaPromptFields)
    random_action_1 = random.choice(["action_a", "action_b"])
    random_action_2 = random.choice(["action_a", "action_b"])
    random_round_1 = random.choice(range(1, state.current_round))
    random_round_2 = random.choice(range(1, state.current_round))
    response = LLM.invoke(meta_prompt.format(
        player_id=player_id, opponent_id=opponent_id,
        game_rules=format_game_rules(state.current_round, _total(player_id, state, tournament_state)),
        round_results=format_match_results(state, player_id),
        group_stats=format_group_stats(player_id, opponent_id, tournament_state),
        random_action_1=random_action_1, random_action_2=random_action_2,
        random_round_1=random_round_1, random_round_2=random_round_2,
        format_instructions=parser.get_format_instructions(),
    ))
    return {"answer": response}


def create_tournament_graph():
    graph = StateGraph(TournamentState)
    graph.set_finish_point(END)
    return graph


def score_players(moves, other_moves):
    return evaluate_player(moves, other_moves, "action_a")
