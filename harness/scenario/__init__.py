"""Scenario files: schema (:mod:`.model`), loading and matrices (:mod:`.loading`), built-ins (``builtin/``)."""

from harness.scenario.loading import Case, LeftOut, builtin_names, expand, left_out, load_scenario
from harness.scenario.model import Scenario, parse_duration

__all__ = [
    "Case",
    "LeftOut",
    "Scenario",
    "builtin_names",
    "expand",
    "left_out",
    "load_scenario",
    "parse_duration",
]
