"""The setup screen (:class:`SetupScreen`) and its parts.

``screen`` composes the screen and owns its keys and actions; ``seats``, ``choices`` and
``params`` are the form's parts, ``values`` reads the form without an app
(:func:`read_setup`), ``preview`` renders the prompt beside it and ``headless`` names the
sweep file and the command that runs it.
"""

from coop_tui.screens.setup.choices import Registries, read_registries
from coop_tui.screens.setup.headless import headless_command, sweep_file
from coop_tui.screens.setup.params import NO_CHOICE, ParamsForm, Row
from coop_tui.screens.setup.preview import PREVIEW_DELAY, PreviewPane
from coop_tui.screens.setup.screen import SetupScreen
from coop_tui.screens.setup.seats import AgentSuggester, SeatsForm, litellm_model_names
from coop_tui.screens.setup.values import FormValues, coerce_param, read_setup

__all__ = [
    "NO_CHOICE", "PREVIEW_DELAY", "AgentSuggester", "FormValues", "ParamsForm", "PreviewPane",
    "Registries", "Row", "SeatsForm", "SetupScreen", "coerce_param", "headless_command",
    "litellm_model_names", "read_registries", "read_setup", "sweep_file",
]
