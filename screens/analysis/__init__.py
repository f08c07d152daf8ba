"""The analysis screen (:class:`AnalysisScreen`) and its panels.

``screen`` composes the screen, loads the report in a worker (``loader``) and hands the
experiment shown to each panel: ``plots`` (curves, evolution), ``tables`` (payoffs,
conditions, ballots), ``matchups`` (matchup matrix, population metrics), ``sections``
(paper tables, report sections) and ``export_bar``.
"""

from coop_tui.screens.analysis.export_bar import ExportBar
from coop_tui.screens.analysis.loader import load_report
from coop_tui.screens.analysis.matchups import (
    PopulationTable,
    TournamentPanel,
    heat_cell,
    tournament_views,
)
from coop_tui.screens.analysis.plots import (
    COLOURS,
    CurvesPanel,
    EvolutionPlot,
    curve_series,
    round_series,
)
from coop_tui.screens.analysis.screen import AnalysisScreen
from coop_tui.screens.analysis.sections import PaperTables, SectionsPanel
from coop_tui.screens.analysis.tables import BallotsTable, ConditionsPanel, PayoffsPanel

__all__ = [
    "COLOURS", "AnalysisScreen", "BallotsTable", "ConditionsPanel", "CurvesPanel",
    "EvolutionPlot", "ExportBar", "PaperTables", "PayoffsPanel", "PopulationTable",
    "SectionsPanel", "TournamentPanel", "curve_series", "heat_cell", "load_report",
    "round_series", "tournament_views",
]
