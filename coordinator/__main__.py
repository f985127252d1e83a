"""``python -m coordinator [options]``: run one broker without a history (the harness's
``herdlab broker`` / ``python -m harness.cluster.broker_main`` adds ``--history``)."""

from __future__ import annotations

import sys

import click

from coordinator.cli import broker
from harness.kernel.errors import HerdlabError
from harness.kernel.logs import setup_logging


def run(command: click.Command) -> None:
    """Run a broker ``command`` with INFO logging; user errors become one line and exit status 2."""
    setup_logging(1)
    try:
        command.main(standalone_mode=False)
    except HerdlabError as e:
        click.echo(f"broker: error: {e}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        sys.exit(130)


def main() -> None:
    """Run the ``broker`` command of :mod:`coordinator.cli` (no ``--history`` option)."""
    run(broker)


if __name__ == "__main__":
    main()
