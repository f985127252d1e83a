"""``herdlab member coordinator``: the command lives in :mod:`harness.members.coordinator_cli` (so a
member process can start it without importing the whole command line: ``python -m harness.members``)."""

from harness.members.coordinator_cli import SHORTHANDS, coordinator

__all__ = ["SHORTHANDS", "coordinator"]
