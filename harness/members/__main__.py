"""``python -m harness.members {legacy_zk|coordinator} ...``: a member process's lean entry point.

The same two commands as ``herdlab member legacy_zk`` / ``herdlab member coordinator``, with the same
options and one-line user errors (exit status 2), but without importing the rest of the command line
(the runner, Spark's and Arrow's Python sides, the reports): the runs start every member process this
way, since the whole command line costs each member process several times the memory of its own imports,
and a run multiplies that by its members.
"""

from __future__ import annotations

import sys

import click

from harness.kernel.errors import HerdlabError
from harness.kernel.logs import setup_logging
from harness.members.coordinator_cli import coordinator
from harness.members.legacy_zk import legacy_zk


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-v", "--verbose", count=True, help="More log output (-v: info, -vv: debug).")
def members(verbose: int) -> None:
    """Run one group member (or a gevent host of legacy members) in the foreground until Ctrl-C."""
    setup_logging(verbose)


def main() -> None:
    """Run a member command, a user error as one line on stderr (status 2), Ctrl-C as status 130."""
    members.add_command(legacy_zk)
    members.add_command(coordinator)
    try:
        members.main(standalone_mode=False)
    except HerdlabError as e:
        click.echo(f"herdlab: error: {e}", err=True)
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("herdlab: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:  # the style of harness.cli.main, in one line for the unit's log
        click.echo(f"herdlab: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
