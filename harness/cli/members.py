"""``herdlab member coordinator``: one kafka-python group member in the foreground."""

from __future__ import annotations

import os
import signal
import sys
from typing import Literal

import click

from harness.history.writer import open_history
from harness.members.coordinator import ASSIGNORS, CoordinatorMember, CoordinatorMemberConfig


@click.command("coordinator")
@click.option("--bootstrap", required=True, metavar="HOST:PORT[,...]", help="Broker bootstrap address(es).")
@click.option("--group", required=True, help="Consumer group id.")
@click.option("--topic", required=True, help="Topic to subscribe.")
@click.option("--name", default=None, help="Member name for logs and history (default: coordinator-<pid>).")
@click.option(
    "--history", type=click.Path(dir_okay=False), default=None, help="Append events to this JSON-lines file."
)
@click.option("--session-timeout-ms", default=6000, show_default=True)
@click.option("--heartbeat-interval-ms", default=500, show_default=True)
@click.option(
    "--max-poll-interval-ms", default=30000, show_default=True, help="Sent as the rebalance timeout."
)
@click.option("--auto-commit-interval-ms", default=5000, show_default=True)
@click.option("--no-auto-commit", is_flag=True, help="Disable auto-commit (nothing is committed then).")
@click.option(
    "--auto-offset-reset", type=click.Choice(["earliest", "latest"]), default="earliest", show_default=True
)
@click.option("--assignor", type=click.Choice(ASSIGNORS), default="range", show_default=True)
@click.option(
    "--group-instance-id", default=None, help="Static membership (KIP-345): this member's instance id."
)
@click.option(
    "--metadata-max-age-ms", default=5000, show_default=True, help="How often metadata is refreshed."
)
def coordinator(
    bootstrap: str,
    group: str,
    topic: str,
    name: str | None,
    history: str | None,
    session_timeout_ms: int,
    heartbeat_interval_ms: int,
    max_poll_interval_ms: int,
    auto_commit_interval_ms: int,
    no_auto_commit: bool,
    auto_offset_reset: Literal["earliest", "latest"],
    assignor: str,
    group_instance_id: str | None,
    metadata_max_age_ms: int,
) -> None:
    """Run one coordinator-side member (unmodified kafka-python) until Ctrl-C or SIGTERM.

    Prints each assignment change. On Ctrl-C / SIGTERM it leaves the group cleanly (commit, then
    LeaveGroup for a dynamic member); a second signal exits at once.
    """
    name = name or f"coordinator-{os.getpid()}"
    config = CoordinatorMemberConfig(
        bootstrap=bootstrap,
        group=group,
        topic=topic,
        name=name,
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=heartbeat_interval_ms,
        max_poll_interval_ms=max_poll_interval_ms,
        auto_commit_interval_ms=auto_commit_interval_ms,
        enable_auto_commit=not no_auto_commit,
        auto_offset_reset=auto_offset_reset,
        assignor=assignor,
        group_instance_id=group_instance_id,
        metadata_max_age_ms=metadata_max_age_ms,
    )
    hist = open_history(history, name, role="member")

    def on_change(what: str, partitions: list[int], generation: int) -> None:
        click.echo(f"{name}: generation {generation}: {what} {partitions}", err=False)
        sys.stdout.flush()

    member = CoordinatorMember(config, hist, on_change=on_change)

    def handler(signum: int, _frame: object) -> None:
        if member.stopping:
            os._exit(128 + signum)
        member.stop(clean=True)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    try:
        member.run()
    finally:
        hist.close()
