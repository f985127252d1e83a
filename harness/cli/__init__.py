"""The ``herdlab`` command line.

Subcommands live next to what they drive:

* ``herdlab cluster ...`` and ``herdlab demo``: :mod:`harness.cli.cluster`;
* ``herdlab broker``: :mod:`coordinator.cli` (click command named ``broker``);
* ``herdlab member legacy_zk``: :mod:`harness.members.legacy_zk` (click command named ``legacy_zk``), added to the
  ``member`` group; ``herdlab member coordinator`` comes with the harness.

User errors raise :class:`harness.kernel.errors.HerdlabError`; :func:`main` prints them as one line on
stderr, ``herdlab: error: MESSAGE``, and exits with status 2, without a traceback. click's own errors
(an unknown option or command, a missing argument, a bad value) print in the same style
(:func:`format_click_error`) and keep click's exit status (2 for a usage error). Ctrl-C exits with status 130 after every child
process has been stopped.
"""

from __future__ import annotations

import importlib
import sys

import click

from harness.kernel.errors import HerdlabError
from harness.kernel.logs import setup_logging


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-v", "--verbose", count=True, help="More log output (-v: info, -vv: debug).")
@click.version_option(package_name="herdlab")
def cli(verbose: int) -> None:
    """herdlab: ZooKeeper-era and broker-coordinated Kafka consumer groups, side by side.

    Runs the same scenario against the 0.8-style ZooKeeper consumer (legacy_zk) and the broker-side
    group coordinator (coordinator) and measures herd effect, split brain and rebalance latency.
    """
    setup_logging(verbose)


@cli.group()
def member() -> None:
    """Run one group member in the foreground until Ctrl-C."""


def _register(group: click.Group, module: str, attr: str) -> None:
    """Add ``module.attr`` to ``group`` if that module exists (else the command is left out)."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return
        raise
    group.add_command(getattr(mod, attr))


_register(cli, "harness.cli.cluster", "cluster")
_register(cli, "harness.cli.spark", "spark")
_register(cli, "harness.cli.run", "demo")
_register(cli, "harness.cli.scenarios", "scenarios")
_register(cli, "harness.cli.clients", "clients")
_register(cli, "harness.cli.run", "run")
_register(cli, "harness.cli.simulate", "simulate")
_register(cli, "harness.cli.produce", "produce")
_register(cli, "harness.cli.report", "report")
_register(cli, "harness.cli.report", "compare")
_register(cli, "harness.cli.baseline", "baseline")
cli.add_command(importlib.import_module("harness.cluster.broker_main").command())
_register(member, "harness.members.legacy_zk", "legacy_zk")
_register(member, "harness.cli.members", "coordinator")
_register(cli, "harness.cli.images", "images")
_register(cli, "harness.cli.offsets", "offsets")
_register(cli, "harness.cli.bench", "bench")
_register(cli, "harness.cli.runs", "runs")
_register(cli, "harness.cli.metrics", "metrics")
_register(cli, "harness.cli.completion", "completion")
_register(cli, "harness.cli.kafka", "kafka")
_bench = cli.commands.get("bench")
if isinstance(_bench, click.Group):
    _register(_bench, "harness.bench.zookeeper", "zookeeper")
    _register(_bench, "harness.bench.history", "history")
    _register(_bench, "harness.bench.analysis", "analysis")
    _register(_bench, "harness.bench.coordinator", "coordinator")
    _register(_bench, "harness.bench.legacy_zk", "legacy_zk")
    _register(_bench, "harness.bench.replication", "replication")
    _register(_bench, "harness.bench.size", "size")
    _register(_bench, "harness.bench.simulator", "simulator")
    _register(_bench, "harness.bench.clients", "clients")


def format_click_error(e: click.ClickException) -> str:
    """click's error ``e`` in herdlab's style: ``herdlab: error: MESSAGE``; a usage error adds a line with
    the command's usage and where its help is. No trailing newline."""
    lines = [f"herdlab: error: {e.format_message()}"]
    if isinstance(e, click.UsageError) and e.ctx is not None:
        usage = e.ctx.get_usage().removeprefix("Usage: ")
        lines.append(f"herdlab: usage: {usage} (see '{e.ctx.command_path} --help')")
    return "\n".join(lines)


def main() -> None:
    """Console-script entry point: run the CLI, turning user errors into one-line messages."""
    try:
        cli.main(prog_name="herdlab", standalone_mode=False)  # also under `python -m harness`
    except HerdlabError as e:
        click.echo(f"herdlab: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("herdlab: interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("herdlab: interrupted", err=True)
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as e:
        e.show()  # a group named alone: its help
        sys.exit(e.exit_code)
    except click.ClickException as e:
        click.echo(format_click_error(e), err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
