"""What the benches share: the ``--settle-window`` option, the group-sizes option type, the
``unit_start`` marker of a bench's nemesis history and the merged events of a bench's directory.

A bench only orchestrates: it sets up, writes a history in the contract of
:mod:`harness.kernel.events` and takes its figures from the analysis (the trigger windows of
:func:`harness.kernel.windows.evaluate`, or the PySpark checker).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.history.writer import HistoryWriter, read_events
from harness.kernel.events import Kind, Role

__all__ = ["Sizes", "emit_unit_start", "merged_events", "settle_window_option"]

#: The benches' ``--settle-window`` option (W of the one definition of settled), declared once.
settle_window_option = click.option(
    "--settle-window",
    type=click.FloatRange(min=0, min_open=True),
    default=3.0,
    show_default=True,
    help="W in seconds: settled = owned once with no ownership change for W (the scenarios' default).",
)


class Sizes(click.ParamType):
    """Comma-separated group sizes, each at least ``minimum`` (a type, so ``ctx.invoke`` defaults
    parse too); ``why`` says why in the error. Converts to a tuple of ints."""

    name = "N[,N...]"

    def __init__(self, minimum: int = 1, why: str = "") -> None:
        self.minimum = minimum
        self.why = why

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, ...]:
        if isinstance(value, tuple | list):
            return tuple(value)
        try:
            sizes = tuple(int(x) for x in str(value).split(",") if x.strip())
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of group sizes", param, ctx)
        if not sizes or any(n < self.minimum for n in sizes):
            self.fail(f"group sizes must be at least {self.minimum}{self.why}, got {value!r}", param, ctx)
        return sizes


def emit_unit_start(
    nemesis: HistoryWriter, topic: str, group: str, partitions: int, members: list[str]
) -> None:
    """The unit's first marker (role harness): what the windows need to know of the group."""
    nemesis.emit(
        Kind.UNIT_START,
        role=Role.HARNESS,
        topic=topic,
        group=group,
        partitions=partitions,
        members=members,
    )


def merged_events(directory: Path) -> list[dict[str, Any]]:
    """Every event of every ``*.jsonl`` history in ``directory`` (file by file, in name order)."""
    return [e for f in sorted(directory.glob("*.jsonl")) for e in read_events(f)]
