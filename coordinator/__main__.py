"""``python -m coordinator [options]``: the same as ``herdlab broker [options]``."""

from __future__ import annotations

import sys

import click

from harness.errors import HerdlabError
from harness.logs import setup_logging


def main() -> None:
    """Run the ``broker`` command with INFO logging; user errors become one line and exit status 2."""
    from coordinator.cli import broker

    setup_logging(1)
    try:
        broker.main(standalone_mode=False)
    except HerdlabError as e:
        click.echo(f"broker: error: {e}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        sys.exit(130)


if __name__ == "__main__":
    main()
