"""``herdlab kafka ...``: Apache Kafka's own broker jars (:mod:`harness.cluster.kafka_dist`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cluster.kafka_dist import LINES, MARKER, cache_root, fetch, resolve_version


@click.group()
def kafka() -> None:
    """Apache Kafka's own brokers, for runs with cluster.broker = 'apache-kafka'."""


FETCH_HELP = f"""Fetch Apache Kafka with Maven into herdlab's cache and print where it is.

VERSION: 3.9 (the last line with ZooKeeper mode: {LINES["3.9"]}), 4 (KRaft: {LINES["4"]}) or an exact
version; default 3.9. Resolves org.apache.kafka:kafka_2.13 and kafka-tools with their runtime
dependencies and a log binding into $HERDLAB_CACHE_DIR (else ~/.cache/herdlab)/apache-kafka/<VERSION>.
A version already there is not fetched again. Runs use it with cluster.broker = 'apache-kafka' and
cluster.kafka_version = VERSION; HERDLAB_KAFKA_HOME=DIR uses an unpacked Apache Kafka distribution
instead.
"""


@kafka.command("fetch", help=FETCH_HELP)
@click.argument("versions", nargs=-1, metavar="[VERSION]...")
@click.option(
    "--settings",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A Maven settings file (mvn -s), e.g. for a mirror of Maven Central.",
)
def kafka_fetch(versions: tuple[str, ...], settings: Path | None) -> None:
    for v in versions or ("3.9",):
        exact = resolve_version(v)
        if not (cache_root() / exact / MARKER).exists():
            click.echo(f"fetching Apache Kafka {exact} with Maven (about 55 MB, once)...", err=True)
        home = fetch(exact, settings)
        click.echo(f"Apache Kafka {home.version}: {home.path}")
