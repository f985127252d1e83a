"""``herdlab produce``: the workload producer in the foreground."""

from __future__ import annotations

import os
import signal

import click

from harness.history.writer import open_history
from harness.scenario.properties import check_producer_properties
from harness.workload.producer import Producer, ProducerConfig


def _property(item: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not name.strip():
        raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="-X")
    return name.strip(), value.strip()


@click.command("produce")
@click.option("--bootstrap", required=True, metavar="HOST:PORT[,...]", help="Broker bootstrap address(es).")
@click.option("--topic", required=True, help="Topic to write to (its partitions get records in turn).")
@click.option("--rate", default=200.0, show_default=True, help="Records per second.")
@click.option("--record-size", default=100, show_default=True, help="Bytes per record value.")
@click.option("--count", default=None, type=int, help="Stop after this many records (default: until Ctrl-C).")
@click.option("--acks", type=click.Choice(["0", "1", "all"]), default="all", show_default=True)
@click.option(
    "--history", type=click.Path(dir_okay=False), default=None, help="Append events to this JSON-lines file."
)
@click.option(
    "-X",
    "properties",
    multiple=True,
    metavar="NAME=VALUE",
    help="A Kafka producer property by its dotted name (repeatable), over the options above; "
    "checked against kafka-python's producer properties (the client id stays herdlab-producer).",
)
def produce(
    bootstrap: str,
    topic: str,
    rate: float,
    record_size: int,
    count: int | None,
    acks: str,
    history: str | None,
    properties: tuple[str, ...],
) -> None:
    """Write sequence-numbered records at a steady rate until Ctrl-C / SIGTERM (or --count).

    Every acknowledged record is a `produced` event with its partition, offset and sequence number;
    on Ctrl-C / SIGTERM the producer flushes what it sent before it exits.
    """
    given = dict(_property(p) for p in properties)
    try:
        check_producer_properties(given)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="-X") from None
    hist = open_history(history, "producer", role="producer")
    producer = Producer(
        ProducerConfig(
            bootstrap=bootstrap,
            topic=topic,
            rate=rate,
            record_size=record_size,
            acks=acks if acks == "all" else int(acks),
            max_records=count,
            properties=given,
        ),
        hist,
    )

    def handler(signum: int, _frame: object) -> None:
        if producer._stop.is_set():
            os._exit(128 + signum)
        producer.stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    try:
        producer.run()
    finally:
        hist.close()
    click.echo(f"produced {producer.acked} records ({producer.failed} failed)")
