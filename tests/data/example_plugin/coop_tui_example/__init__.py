"""An example plugin: one module registering a game, a strategy, an agent and a section."""

from coop_tui.agents.custom import play_answer, register_agent
from coop_tui.agents.strategies import Strategy, register
from coop_tui.analysis.sections import Section
from coop_tui.analysis.sections import register as register_section
from coop_tui.games import register_game
from coop_tui.games.base import symmetric_two_player


@register_game("snowdrift_example")
def snowdrift(cost: float = 2.0) -> object:
    """Snowdrift from the example plugin: clearing the road costs whoever shovels."""
    table = [[4 - cost / 2, 4 - cost], [4, 0]]
    return symmetric_two_player("snowdrift_example", "Snowdrift (example plugin)",
                                "Each driver chooses to shovel or wait.", ("Shovel", "Wait"),
                                table, cooperative=[0], defect=1, params={"cost": cost})


@register
class AlternateExample(Strategy):
    """Cooperates on odd rounds and defects on even ones (the example plugin)."""

    name = "alternate_example"
    classifier = {"memory_depth": 0, "stochastic": False}

    def distribution(self, view):
        return [1.0, 0.0] if view.round % 2 else [0.0, 1.0]


@register_agent("kind_example")
class KindAgent:
    """Always cooperates and streams its answer in two pieces (the example plugin)."""

    async def decide(self, request):
        if request.phase != "play":
            yield "I cooperate."
            return
        answer = play_answer(request, [1.0, 0.0])
        yield answer[:3]
        yield answer[3:]


register_section(Section(
    key="example_section", title="Example plugin section",
    build=lambda store, run_id, report: {"matches": report.get("counts", {}).get("matches", 0)},
    render=lambda value: [f"the example plugin counted {value['matches']} matches"]))
