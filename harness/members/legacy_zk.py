"""``herdlab member legacy_zk``: run a 0.8 ZooKeeper consumer in the foreground until Ctrl-C / SIGTERM.

This is the harness's adapter for the legacy member: it turns options into :class:`ConsumerConfig`,
opens the history writer (``legacy_zk`` never opens one: it receives a :class:`History`) and runs
the members with :func:`harness.members.legacy_host.run_members`, each on the member template's life cycle
(:mod:`harness.members.legacy_member`).

Options mirror the 0.8 consumer property names (``--rebalance.max.retries 8`` and
``--rebalance-max-retries 8`` are the same option); ``--config FILE`` reads a ``.properties`` file and
``-X name=value`` sets any property; explicit options win over ``-X``, which wins over the file.
Each assignment change is printed as one line. ``--members N`` runs N members in this process
(on gevent, coordination-only: ``--no-fetch``), ``--names A,B,...`` one member per name (the harness's
gevent hosts); ``--history FILE`` writes the event history.

``--client kafka-0.8.2.2`` runs Kafka 0.8.2.2's own consumer instead (one member, in a JVM program of
ours: :mod:`harness.members.legacy08_dist`, through the subprocess adapter :mod:`harness.members.child`),
with the same properties (herdlab's own ones dropped or refused by the program) and the same history
kinds; ``--bootstrap``, ``--handler`` and ``--fetch`` do not apply to it (0.8 finds its brokers in
ZooKeeper and always fetches). It holds itself (``--hold-until``); SIGUSR1 (the hosts' quiesce) is
ignored, as the original has no such step.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from harness.history.writer import open_history
from harness.kernel.errors import ConfigError
from harness.kernel.events import LEGACY_CLIENTS
from harness.members.legacy_host import run_members
from harness.members.recorder import MemberConfig
from harness.members.release import hold_option, preload, wait_for_release
from legacy_zk.config import ConsumerConfig, parse_properties, read_properties_file
from legacy_zk.ids import TopicPartition

# (0.8 property, click type, help). The attribute comes from legacy_zk.config.PROPERTIES.
_PROPERTY_OPTIONS: list[tuple[str, Any, str]] = [
    ("consumer.id", str, "Fixed consumer id part (0.8: 'for testing only'); default host-millis-uuid."),
    ("zookeeper.session.timeout.ms", int, "ZooKeeper session timeout [6000]."),
    ("zookeeper.connection.timeout.ms", int, "How long to wait for ZooKeeper at start [= session timeout]."),
    ("zookeeper.sync.time.ms", int, "ZooKeeper follower lag allowance; default of the backoff [2000]."),
    ("rebalance.max.retries", int, "Rebalance attempts before giving up [4]."),
    ("rebalance.backoff.ms", int, "Sleep between failed attempts [= zookeeper.sync.time.ms]."),
    ("partition.assignment.strategy", click.Choice(["range", "roundrobin"]), "Assignor [range]."),
    ("auto.commit.enable", bool, "Commit offsets periodically and at every rebalance [true]."),
    ("auto.commit.interval.ms", int, "Auto-commit period [60000]."),
    (
        "auto.offset.reset",
        click.Choice(["smallest", "largest"]),
        "Where to start without a stored offset [largest].",
    ),
    (
        "takeover.delay.ms",
        int,
        "Mitigation: wait this long before claiming a vanished owner's partition [0 = off].",
    ),
    ("offsets.commit.fenced", bool, "Mitigation: commit only while owning, with a versioned write [false]."),
    (
        "offsets.storage",
        click.Choice(["zookeeper", "kafka"], case_sensitive=False),
        "Where offsets are committed: ZooKeeper, or the group's offset manager (a broker) [zookeeper].",
    ),
    (
        "dual.commit.enabled",
        bool,
        "With offsets.storage=kafka, also commit to ZooKeeper and start from the larger offset "
        "[= offsets.storage is kafka].",
    ),
    ("offsets.commit.max.retries", int, "Retries of the shutdown commit to the broker [5]."),
    ("offsets.channel.backoff.ms", int, "Pause between offset-manager lookups and retries [1000]."),
    (
        "offsets.channel.socket.timeout.ms",
        int,
        "Timeout of one request to the offset manager; at shutdown, of its lookup per commit attempt [10000].",
    ),
]


def _attr(prop: str) -> str:
    return prop.replace(".", "_")


def _property_options(f):  # noqa: ANN001, ANN202 - click decorator plumbing
    for prop, typ, help_ in reversed(_PROPERTY_OPTIONS):
        names = [f"--{prop}", f"--{prop.replace('.', '-')}", _attr(prop)]
        f = click.option(*names, type=typ, default=None, help=help_, show_default=False)(f)
    return f


def _echo_assignment(member, what: str, partitions: list[TopicPartition]) -> None:  # noqa: ANN001
    stamp = time.strftime("%H:%M:%S")
    text = ",".join(f"{tp.topic}-{tp.partition}" for tp in partitions) or "(nothing)"
    if what == "assigned":
        click.echo(f"{stamp} {member.id}: owns {text}")
    elif what == "gave_up":
        click.echo(
            f"{stamp} {member.id}: gave up after {member.config.rebalance_max_retries} rebalance attempts; "
            "registered, owning nothing until the next change"
        )
    else:
        click.echo(f"{stamp} {member.id}: lost its partitions ({what})")
    sys.stdout.flush()


def build_configs(
    zookeeper: str,
    bootstrap: str | None,
    group: str,
    topics: tuple[str, ...],
    streams: int,
    members: int,
    fetch: bool,
    config_file: str | None,
    props: tuple[str, ...],
    explicit: dict[str, Any],
) -> list[ConsumerConfig]:
    """The member configs the command line asks for (raises ConfigError on bad input)."""
    raw: dict[str, str] = {}
    if config_file:
        raw.update(read_properties_file(config_file))
    for item in props:
        if "=" not in item:
            raise ConfigError(f"-X expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        raw[k.strip()] = v.strip()
    attrs = parse_properties(raw)
    attrs.update({k: v for k, v in explicit.items() if v is not None})
    attrs["group_id"] = group or attrs.get("group_id")
    attrs["zookeeper_connect"] = zookeeper or attrs.get("zookeeper_connect")
    if bootstrap:
        attrs["bootstrap_servers"] = bootstrap
    if not fetch:
        attrs["fetch"] = False
    if members < 1:
        raise ConfigError("--members must be >= 1")
    if not topics:
        raise ConfigError("give at least one --topic")
    base = ConsumerConfig(
        **{k: v for k, v in attrs.items() if k not in ("topics",)}, topics={t: streams for t in topics}
    )
    base.validate()
    if members > 1 and base.consumer_id:
        return [base.replace(consumer_id=f"{base.consumer_id}-{i}") for i in range(members)]
    return [base.replace() for _ in range(members)]


def raw_properties(
    config_file: str | None, props: tuple[str, ...], explicit: dict[str, Any]
) -> dict[str, str]:
    """The 0.8 properties as given (file, then ``-X``, then the explicit options), by dotted name and as
    text: what a member in another language is handed."""
    raw: dict[str, str] = dict(read_properties_file(config_file)) if config_file else {}
    for item in props:
        if "=" not in item:
            raise ConfigError(f"-X expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        raw[k.strip()] = v.strip()
    for prop, _typ, _help in _PROPERTY_OPTIONS:
        value = explicit.get(_attr(prop))
        if value is not None:
            raw[prop] = str(value).lower() if isinstance(value, bool) else str(value)
    return raw


def run_original(
    client: str,
    zookeeper: str,
    group: str,
    topic: str,
    name: str,
    properties: dict[str, str],
    history_path: str | None,
    hold_until: Path | None,
) -> None:
    """One member of ``client`` (a legacy_zk-kind child program) until SIGTERM / SIGINT."""
    # deferred: only this client's members load the registry and the subprocess adapter
    from harness.members.clients.registry import make_member
    from harness.members.interface import MemberFatal

    config = MemberConfig(
        bootstrap=zookeeper, group=group, topic=topic, name=name, client=client, properties=properties
    )
    history = open_history(history_path, name, role="member")
    try:
        member = make_member(config, history, hold_until=hold_until)

        def stop(signum: int, _frame: object) -> None:
            if member.stopping:
                os._exit(128 + signum)
            member.stop(clean=True)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # the hosts' quiesce: the original has none
        try:
            member.run()
        except MemberFatal as e:
            click.echo(f"herdlab: error: member {name}: {e}", err=True)
            sys.exit(1)
    finally:
        history.close()


@click.command("legacy_zk")
@click.option("--zookeeper", "zookeeper", metavar="HOST:PORT", help="zookeeper.connect")
@click.option(
    "--bootstrap",
    metavar="HOST:PORT",
    help="Broker to fetch records from [the brokers registered in ZooKeeper].",
)
@click.option("--group", metavar="G", help="group.id")
@click.option("--topic", "topics", multiple=True, metavar="T", help="Topic to consume (repeatable).")
@click.option(
    "--streams", type=int, default=1, show_default=True, help="Consumer threads (streams) per topic."
)
@click.option("--members", type=int, default=1, show_default=True, help="Members to run in this process.")
@click.option(
    "--handler",
    type=click.Choice(["auto", "threading", "gevent"]),
    default="auto",
    show_default=True,
    help="kazoo handler; auto = threading for one member, gevent for several (needs --no-fetch).",
)
@click.option("--fetch/--no-fetch", default=True, help="Fetch records from the broker, or coordinate only.")
@click.option(
    "--history", "history_path", type=click.Path(dir_okay=False), help="Write the event history here."
)
@click.option(
    "--name", default=None, help="Name of this member in the history (its event source) [the consumer id]."
)
@click.option(
    "--names",
    default=None,
    metavar="A,B,...",
    help="Run one member per name in this process, each named so in the history (sets --members).",
)
@hold_option("registering")
@click.option(
    "--client",
    type=click.Choice(["python", *LEGACY_CLIENTS]),
    default="python",
    show_default=True,
    help="herdlab's member (python) or Kafka 0.8.2.2's own consumer in a JVM (one member per process).",
)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="A consumer .properties file.")
@click.option("-X", "props", multiple=True, metavar="NAME=VALUE", help="Any 0.8 consumer property.")
@_property_options
def legacy_zk(
    zookeeper: str | None,
    bootstrap: str | None,
    group: str | None,
    topics: tuple[str, ...],
    streams: int,
    members: int,
    handler: str,
    fetch: bool,
    history_path: str | None,
    name: str | None,
    names: str | None,
    hold_until: Path | None,
    client: str,
    config_file: str | None,
    props: tuple[str, ...],
    **explicit: Any,
) -> None:
    """Run the Kafka 0.8 ZooKeeper consumer: register, watch, rebalance, fetch, commit.

    Example: herdlab member legacy_zk --zookeeper 127.0.0.1:2181 --bootstrap 127.0.0.1:9092
    --group g1 --topic t --rebalance.backoff.ms 500
    """
    if client != "python":
        if members != 1 or names is not None or len(topics) != 1 or streams != 1:
            raise ConfigError(f"--client {client} runs one member of one topic with one stream per process")
        if not zookeeper or not group:
            raise ConfigError("give --zookeeper and --group")
        raw = raw_properties(config_file, props, explicit)
        run_original(
            client,
            zookeeper,
            group,
            topics[0],
            name or f"{client}-{os.getpid()}",
            raw,
            history_path,
            hold_until,
        )
        return
    listed = [n.strip() for n in names.split(",")] if names is not None else []
    if names is not None and (not all(listed) or len(set(listed)) != len(listed)):
        raise ConfigError(f"--names expects distinct names separated by commas, got {names!r}")
    if listed:
        members = len(listed)
    configs = build_configs(
        zookeeper or "", bootstrap, group or "", topics, streams, members, fetch, config_file, props, explicit
    )
    if listed:
        configs = [c.replace(name=n) for c, n in zip(configs, listed, strict=True)]
    elif name:
        configs = [
            c.replace(name=name if len(configs) == 1 else f"{name}-{i}") for i, c in enumerate(configs)
        ]
    if handler == "auto":
        handler = "gevent" if members > 1 and not fetch else "threading"
    if handler == "gevent" and fetch:
        raise ConfigError("--handler gevent runs coordination-only members: add --no-fetch")
    history = open_history(history_path, f"legacy_zk-{configs[0].group_id}", role="member")

    def started(ms: list) -> None:  # noqa: ANN001
        for m in ms:
            click.echo(f"{time.strftime('%H:%M:%S')} {m.id}: running (group {m.group}); Ctrl-C to stop")
        sys.stdout.flush()

    if hold_until is not None:
        preload("kafka")  # kafka-python: the fetcher's and the Kafka offset storage's client
        wait_for_release(hold_until)
    try:
        run_members(configs, history, handler=handler, on_assignment=_echo_assignment, on_started=started)
    finally:
        history.close()
