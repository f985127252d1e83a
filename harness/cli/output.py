"""The console the commands print to: as wide as the terminal, or as ``COLUMNS`` says.

Contract
--------
:class:`OutputConsole` is a rich Console whose width is decided each time it is asked for:

* writing to a terminal: rich's own rule (``COLUMNS`` when set, else the terminal's width);
* writing to a file or a pipe (a log, CI): ``COLUMNS`` when set to a positive number, else
  :data:`DEFAULT_WIDTH` (120) columns, wide enough for the narrow tables without folding in a CI log.

It is decided late, not when the module is imported, so a test (or a caller) that sets ``COLUMNS``
or swaps ``sys.stdout`` gets what it set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rich.console import Console, ConsoleDimensions

#: Columns of output that is not a terminal when ``COLUMNS`` does not say.
DEFAULT_WIDTH = 120


def output_width(environ: Mapping[str, str]) -> int:
    """The width of output that is not a terminal: ``COLUMNS`` when a positive integer, else
    :data:`DEFAULT_WIDTH`."""
    columns = environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else DEFAULT_WIDTH


class OutputConsole(Console):
    """A rich Console as wide as the terminal, or as ``COLUMNS`` (else 120) when not a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size (rich's rule), or :func:`output_width` columns when not a terminal."""
        measured = Console.size.fget(self)  # pyright: ignore[reportOptionalCall]
        if self.is_terminal:
            return measured
        return ConsoleDimensions(output_width(os.environ), measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # pyright: ignore[reportOptionalCall]
