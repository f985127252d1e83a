"""``herdlab member coordinator``: one coordinator-side group member in the foreground, on a client library."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from pathlib import Path

import click

from harness.history.writer import open_history
from harness.kernel.actions import STALL_SIGNAL, UNSTALL_SIGNAL
from harness.members.clients.registry import clients_of, hold, make_host, make_member
from harness.members.interface import MemberFatal, OnChange
from harness.members.recorder import MemberConfig
from harness.members.release import hold_option
from harness.scenario.properties import (
    ALL_ASSIGNORS,
    CONSUMER_CLIENTS,
    KAFKA_METADATA_MAX_AGE_MS,
    check_client_properties,
    check_client_version,
    check_consumer_client,
    client_metadata_names,
    consumer_protocol,
    without_classic_only,
)

#: The typed options and the Kafka property each is a shorthand of.
SHORTHANDS = (
    ("session_timeout_ms", "session.timeout.ms"),
    ("heartbeat_interval_ms", "heartbeat.interval.ms"),
    ("max_poll_interval_ms", "max.poll.interval.ms"),
    ("auto_commit_interval_ms", "auto.commit.interval.ms"),
    ("auto_offset_reset", "auto.offset.reset"),
    ("assignor", "partition.assignment.strategy"),
    ("metadata_max_age_ms", "metadata.max.age.ms"),
    ("fetch_max_wait_ms", "fetch.max.wait.ms"),
)


def _property(item: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not name.strip():
        raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="-X")
    return name.strip(), value.strip()


@click.command("coordinator")
@click.option("--bootstrap", required=True, metavar="HOST:PORT[,...]", help="Broker bootstrap address(es).")
@click.option("--group", required=True, help="Consumer group id.")
@click.option("--topic", required=True, help="Topic to subscribe.")
@click.option("--name", default=None, help="Member name for logs and history (default: coordinator-<pid>).")
@click.option(
    "--history", type=click.Path(dir_okay=False), default=None, help="Append events to this JSON-lines file."
)
@click.option(
    "--client",
    type=click.Choice(clients_of("coordinator")),
    default="kafka-python",
    show_default=True,
    help="The Kafka client library the member runs on (librdkafka: confluent-kafka; java: Kafka's own "
    "KafkaConsumer, built by `herdlab clients build java`).",
)
@click.option(
    "--client-version",
    default=None,
    help="The client's version, for a client with several (java: 3.9, 4 or an exact kafka-clients version; "
    "default 3.9).",
)
@click.option("--session-timeout-ms", default=6000, show_default=True, help="session.timeout.ms")
@click.option("--heartbeat-interval-ms", default=500, show_default=True, help="heartbeat.interval.ms")
@click.option(
    "--max-poll-interval-ms",
    default=30000,
    show_default=True,
    help="max.poll.interval.ms (the rebalance timeout).",
)
@click.option(
    "--auto-commit-interval-ms",
    default=5000,
    show_default=True,
    help="auto.commit.interval.ms (the member commits what it processed this often).",
)
@click.option("--no-auto-commit", is_flag=True, help="enable.auto.commit=false: nothing is committed.")
@click.option(
    "--auto-offset-reset",
    type=click.Choice(["earliest", "latest"]),
    default="earliest",
    show_default=True,
    help="auto.offset.reset",
)
@click.option(
    "--assignor",
    type=click.Choice(ALL_ASSIGNORS),
    default="range",
    show_default=True,
    help="partition.assignment.strategy (each client has its own subset).",
)
@click.option(
    "--group-instance-id", default=None, help="Static membership (KIP-345): this member's group.instance.id."
)
@click.option(
    "--metadata-max-age-ms",
    default=KAFKA_METADATA_MAX_AGE_MS,
    show_default=True,
    help="metadata.max.age.ms: how often the member refreshes its metadata (Kafka's default; librdkafka: "
    "topic.metadata.refresh.interval.ms, with its cache's metadata.max.age.ms at three times it).",
)
@click.option(
    "--fetch-max-wait-ms",
    type=int,
    default=None,
    help="fetch.max.wait.ms, as the client names it (librdkafka fetch.wait.max.ms, kafka-go MaxWait, franz-go "
    "FetchMaxWait); default: the client's own.",
)
@click.option(
    "--group-protocol",
    type=click.Choice(["classic", "consumer"]),
    default="classic",
    show_default=True,
    help="consumer: KIP-848's consumer group protocol (clients "
    + ", ".join(CONSUMER_CLIENTS)
    + "; group.protocol=consumer, franz-go ServerSideBalancer): the broker then sets the session timeout "
    "and heartbeat interval and assigns, so those options are not sent.",
)
@click.option(
    "--remote-assignor",
    type=click.Choice(["uniform", "range"]),
    default=None,
    help="With --group-protocol consumer: the server-side assignor asked for (group.remote.assignor; "
    "franz-go: its balancer); default: the broker's (uniform).",
)
@click.option(
    "-X",
    "properties",
    multiple=True,
    metavar="NAME=VALUE",
    help="A Kafka consumer property by its dotted name (repeatable), over the options above; "
    "checked against the client's known properties.",
)
@click.option(
    "--names",
    default=None,
    metavar="NAME,...",
    help="Run these members in this one process (a host; clients that can: java, one KafkaConsumer per "
    "thread in one JVM), each writing under its own name; --name is then the host's.",
)
@click.option(
    "--static", is_flag=True, help="With --names: each hosted member's group.instance.id is its name."
)
@hold_option("joining")
def coordinator(
    bootstrap: str,
    group: str,
    topic: str,
    name: str | None,
    history: str | None,
    client: str,
    client_version: str | None,
    no_auto_commit: bool,
    group_instance_id: str | None,
    properties: tuple[str, ...],
    names: str | None,
    static: bool,
    hold_until: Path | None,
    group_protocol: str,
    remote_assignor: str | None,
    **typed: object,
) -> None:
    """Run one coordinator-side member until Ctrl-C or SIGTERM.

    Prints each assignment change. On Ctrl-C / SIGTERM it leaves the group cleanly (commit, then
    LeaveGroup for a dynamic member, as its client does on close); a second signal exits at once.
    SIGUSR2 stalls its processing (it stops polling while its client heart-beats), SIGUSR1 ends the stall.
    """
    name = name or f"coordinator-{os.getpid()}"
    hosted = [n.strip() for n in names.split(",") if n.strip()] if names is not None else []
    if names is not None and (not hosted or group_instance_id is not None):
        raise click.BadParameter(
            "give member names, and static membership with --static (not --group-instance-id)",
            param_hint="--names",
        )
    if static and not hosted:
        raise click.BadParameter(
            "--static goes with --names (one member: --group-instance-id)", param_hint="--static"
        )
    props = client_metadata_names(
        {prop: str(typed[key]) for key, prop in SHORTHANDS if typed[key] is not None}, client
    )
    if no_auto_commit:
        props["enable.auto.commit"] = "false"
    given = dict(_property(p) for p in properties)
    if remote_assignor is not None and group_protocol != "consumer":
        raise click.BadParameter("goes with --group-protocol consumer", param_hint="--remote-assignor")
    if group_protocol == "consumer":
        try:
            check_consumer_client(client)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--client") from None
        given = {**consumer_protocol(client, remote_assignor), **given}
    try:
        check_client_version(client, client_version)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--client-version") from None
    try:
        check_client_properties(client, given, client_version)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="-X") from None
    props = without_classic_only(props, client, given)
    props.update(given)
    config = MemberConfig(
        bootstrap=bootstrap,
        group=group,
        topic=topic,
        name=name,
        client=client,
        properties=props,
        group_instance_id=group_instance_id,
        client_version=client_version,
    )
    hist = open_history(history, name, role="member")

    def on_change_of(member_name: str) -> OnChange:
        def on_change(what: str, partitions: list[int], generation: int) -> None:
            click.echo(f"{member_name}: generation {generation}: {what} {partitions}", err=False)
            sys.stdout.flush()

        return on_change

    try:
        if hosted:
            configs = [
                dataclasses.replace(config, name=n, group_instance_id=n if static else None) for n in hosted
            ]
            member = make_host(configs, hist, on_change=on_change_of, hold_until=hold_until)
        else:
            member = make_member(config, hist, on_change=on_change_of(name), hold_until=hold_until)
    except ValueError as e:  # a property the client cannot take (e.g. an assignor it does not have)
        hist.close()
        raise click.UsageError(str(e)) from None

    if hold_until is not None:
        hold(client, hold_until)

    def handler(signum: int, _frame: object) -> None:
        if member.stopping:
            os._exit(128 + signum)
        member.stop(clean=True)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    # the nemesis's stall and its end (harness.kernel.actions): the member stops polling / polls again
    signal.signal(STALL_SIGNAL, lambda _signum, _frame: member.stall(True))
    signal.signal(UNSTALL_SIGNAL, lambda _signum, _frame: member.stall(False))
    try:
        member.run()
    except Exception as e:
        if not _client_error(e):
            raise  # a defect of ours: the traceback is wanted
        # a fatal error of the client (fenced static member, refused configuration ...): the member
        # recorded it and stopped; one line, exit status 1
        click.echo(f"herdlab: error: member {name}: {type(e).__name__}: {e}", err=True)
        sys.exit(1)
    finally:
        hist.close()


def _client_error(e: BaseException) -> bool:
    """Whether ``e`` is a client library's own error (kafka-python, aiokafka, confluent-kafka) or a fatal
    error a member reported (:class:`~harness.members.interface.MemberFatal`)."""
    module = type(e).__module__.split(".")[0]
    return isinstance(e, MemberFatal) or module in ("kafka", "aiokafka", "confluent_kafka", "cimpl")
