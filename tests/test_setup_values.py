"""The setup form read without an app (coop_tui.screens.setup.values.read_setup): what the
controls hold becomes a MatchSetup, a field that cannot be read raises SpecError naming it."""

from __future__ import annotations

import pytest

from coop_tui.errors import SpecError
from coop_tui.screens.setup import FormValues, read_setup
from coop_tui.session import MatchSetup


def form(**changes: object) -> FormValues:
    values = FormValues(
        seats=["local/smollm2", "tit_for_tat"], game="prisoners", mechanism="similarity",
        chosen={"framing": "different", "prompt": "percentage", "others_told": "same"},
        typed={"similarity": "70", "seat_similarity": "", "similarity_label": "",
               "battery": "a, b"},
        samples="2", max_tokens="150", temperature="0.5", seed="7", name="from-the-form",
    )
    for key, value in changes.items():
        setattr(values, key, value)
    return values


def test_the_form_becomes_a_setup_with_parameters_in_the_mechanism_order() -> None:
    setup = read_setup(form())
    assert setup == MatchSetup(
        seats=["local/smollm2", "tit_for_tat"], game="prisoners", mechanism="similarity",
        params={"similarity": 70, "seat_similarity": None, "similarity_label": None,
                "framing": "different", "others_told": "same", "prompt": "percentage",
                "battery": ["a", "b"]},
        samples=2, max_tokens=150, temperature=0.5, seed=7, name="from-the-form",
    )
    # the order of the mechanism's fields, not the form's: a saved sweep file reads the same
    assert list(setup.params) == ["similarity", "seat_similarity", "similarity_label",
                                  "framing", "others_told", "prompt", "battery"]


def test_a_parameter_the_form_does_not_show_is_left_out() -> None:
    setup = read_setup(form(chosen={"framing": "similar"}, typed={}))
    assert setup.params == {"framing": "similar"}


def test_empty_fields_mean_the_defaults() -> None:
    setup = read_setup(form(samples=" ", max_tokens="", temperature="", seed=""))
    assert (setup.samples, setup.max_tokens, setup.temperature, setup.seed) == (1, None, None, 0)


@pytest.mark.parametrize(("field", "text", "named", "says"), [
    ("samples", "two", "samples", "must be a whole number (got 'two')"),
    ("samples", "0", "samples", "must be at least 1 (got 0)"),
    ("max_tokens", "1.5", "max tokens", "must be a whole number (got '1.5')"),
    ("temperature", "warm", "temperature", "must be a number (got 'warm')"),
    ("seed", "-1", "seed", "must be at least 0 (got -1)"),
])
def test_a_field_that_cannot_be_read_is_named(field: str, text: str, named: str, says: str) -> None:
    with pytest.raises(SpecError) as raised:
        read_setup(form(**{field: text}))
    assert (raised.value.field, raised.value.message) == (named, says)
