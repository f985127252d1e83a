"""Scenario files: schema (:mod:`.model`), loading and matrices (:mod:`.loading`), built-ins (``builtin/``)."""

from harness.scenario.loading import Case, builtin_names, expand, load_scenario
from harness.scenario.model import Scenario, parse_duration

__all__ = ["Case", "Scenario", "builtin_names", "expand", "load_scenario", "parse_duration"]
