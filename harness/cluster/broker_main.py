"""``python -m harness.cluster.broker_main [options]``: a herdlab broker that writes its history.

The broker (:mod:`coordinator`) may import only the kernel, so it never opens a history file: this
entry point, used by the local and containers backends and by ``herdlab broker``, hands it a
:class:`~harness.history.writer.HistoryWriter` (role ``broker``) for ``--history FILE``.
"""

from __future__ import annotations

from pathlib import Path

import click

from coordinator.__main__ import run
from coordinator.cli import broker_command
from harness.history.writer import HistoryWriter
from harness.kernel.history import History


def open_broker_history(path: Path, source: str) -> History:
    """The broker's history writer: ``source`` (``broker-<id>``), role ``broker``."""
    return HistoryWriter(path, source, role="broker")


def command() -> click.Command:
    """The ``broker`` command with ``--history``."""
    return broker_command(open_history=open_broker_history)


def main() -> None:
    """Run the broker until SIGTERM / Ctrl-C (errors as in ``python -m coordinator``)."""
    run(command())


if __name__ == "__main__":
    main()
