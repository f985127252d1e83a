"""``herdlab offsets diff|export|copy``: a group's offsets in ZooKeeper (0.8 layout) and in the broker.

* ``diff``: one row per partition of the group's topics with both stores' offsets, the log end offset, the
  lag (log end minus the larger committed offset) and the difference (broker minus ZooKeeper); ``--json``
  prints the rows as a JSON list.
* ``export``: the CSV that ``kafka-consumer-groups --reset-offsets --from-file`` reads, from one store.
* ``copy``: copies one store's offsets into the other; a dry run (the plan) unless ``--execute``; refuses
  while the group has live members unless ``--force``.

User errors (bad arguments, unreachable servers, a group with no offsets) raise
:class:`~harness.kernel.errors.HerdlabError`, printed as one line with exit status 2 by :func:`harness.cli.main`.
The work is in :mod:`harness.offsets`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.cli.output import OutputConsole
from harness.kernel.errors import ConfigError, HerdlabError
from harness.offsets import ops
from harness.offsets.core import CopyStep, DiffRow, export_csv

MISSING = "-"
STORE = click.Choice(["zookeeper", "kafka"])


def _console() -> Console:
    return OutputConsole()


def _cell(value: int | None) -> str:
    return MISSING if value is None else str(value)


zookeeper_option = click.option(
    "--zookeeper", "zookeeper_connect", metavar="HOST:PORT[,...][/CHROOT]", help="ZooKeeper connect string."
)
bootstrap_option = click.option("--bootstrap", metavar="HOST:PORT[,...]", help="Kafka bootstrap address(es).")
group_option = click.option("--group", required=True, help="Consumer group id.")
topic_option = click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Only this topic (repeatable; default: every topic the group has offsets for in either store).",
)


def _required(value: str | None, option: str) -> str:
    if not value:
        raise ConfigError(f"{option} is required")
    return value


@click.group("offsets")
def offsets() -> None:
    """Compare, export and copy a group's offsets between ZooKeeper (0.8) and the broker."""


@offsets.command("diff")
@zookeeper_option
@bootstrap_option
@group_option
@topic_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON list (missing values null).")
def diff(
    zookeeper_connect: str | None, bootstrap: str | None, group: str, topics: tuple[str, ...], as_json: bool
) -> None:
    """Show GROUP's offsets in ZooKeeper and in the broker, partition by partition.

    Columns: ZooKeeper offset, broker offset, log end offset, lag (log end minus the larger of the two
    committed offsets) and difference (broker minus ZooKeeper); "-" where a value is missing. Read-only.
    """
    rows = ops.diff(
        _required(zookeeper_connect, "--zookeeper"), _required(bootstrap, "--bootstrap"), group, topics
    )
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=2))
        return
    _console().print(_diff_table(group, rows))


def _diff_table(group: str, rows: list[DiffRow]) -> Table:
    t = Table(title=f"offsets of group {group}", title_justify="left")
    t.add_column("topic", justify="left")
    for name in ("partition", "zookeeper", "broker", "log end", "lag", "broker - zookeeper"):
        t.add_column(name, justify="right")
    for r in rows:
        differs = r.difference not in (None, 0)
        t.add_row(
            r.topic,
            str(r.partition),
            _cell(r.zookeeper),
            _cell(r.kafka),
            _cell(r.log_end),
            _cell(r.lag),
            _cell(r.difference),
            style="yellow" if differs else None,
        )
    return t


@offsets.command("export")
@zookeeper_option
@bootstrap_option
@group_option
@topic_option
@click.option("--from", "source", type=STORE, required=True, help="The store to export.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the CSV to this file (default: standard output).",
)
def export(
    zookeeper_connect: str | None,
    bootstrap: str | None,
    group: str,
    topics: tuple[str, ...],
    source: str,
    output: Path | None,
) -> None:
    """Export GROUP's offsets from one store as `topic,partition,offset` lines.

    The format of `kafka-consumer-groups --reset-offsets --from-file FILE --group GROUP` (one group, no
    header). --from zookeeper needs --zookeeper, --from kafka needs --bootstrap. Read-only.
    """
    text = export_csv(ops.read_store(source, group, zookeeper_connect, bootstrap, topics))
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text)
    except OSError as e:
        raise HerdlabError(f"cannot write {output}: {e.strerror or e}") from None
    click.echo(f"wrote {text.count(chr(10))} offsets of group {group} to {output}", err=True)


@offsets.command("copy")
@zookeeper_option
@bootstrap_option
@group_option
@topic_option
@click.option("--from", "source", type=STORE, required=True, help="The store to copy from.")
@click.option("--to", "target", type=STORE, required=True, help="The store to copy into.")
@click.option(
    "--dry-run/--execute",
    default=True,
    show_default=True,
    help="Only print the plan (the default), or write the changed offsets.",
)
@click.option("--force", is_flag=True, help="Copy even while the group has live members.")
def copy(
    zookeeper_connect: str | None,
    bootstrap: str | None,
    group: str,
    topics: tuple[str, ...],
    source: str,
    target: str,
    dry_run: bool,
    force: bool,
) -> None:
    """Copy GROUP's offsets from one store into the other (--from zookeeper --to kafka, or the reverse).

    Prints the plan: per partition the source offset, the target's current offset and the new one. With
    --execute writes the offsets that differ: into the broker as an OffsetCommit with generation -1 and an
    empty member id, into ZooKeeper as /consumers/GROUP/offsets/TOPIC/PARTITION. Refuses (exit 2) while a
    consumer is registered under /consumers/GROUP/ids or the broker's group has members (a state other than
    Empty or Dead), unless --force.
    """
    zk = _required(zookeeper_connect, "--zookeeper")
    bs = _required(bootstrap, "--bootstrap")
    plan = ops.plan_copy(zk, bs, group, source, target, topics)
    _console().print(_plan_table(plan.group, source, target, plan.steps))
    if plan.refusal and not force:
        raise HerdlabError(plan.refusal)
    if dry_run:
        n = sum(s.changes for s in plan.steps)
        click.echo(f"dry run: {n} offset(s) would change; pass --execute to write them")
        return
    written = ops.execute_copy(zk, bs, plan)
    click.echo(f"wrote {len(written)} offset(s) of group {group} to {target}")


def _plan_table(group: str, source: str, target: str, steps: list[CopyStep]) -> Table:
    t = Table(title=f"copy plan of group {group}: {source} -> {target}", title_justify="left")
    t.add_column("topic", justify="left")
    for name in ("partition", f"from ({source})", f"current ({target})", "new", "change"):
        t.add_column(name, justify="right")
    for s in steps:
        t.add_row(
            s.topic,
            str(s.partition),
            str(s.source),
            _cell(s.target),
            str(s.new),
            "write" if s.changes else "same",
            style="yellow" if s.changes else None,
        )
    return t
