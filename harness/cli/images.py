"""``herdlab images build|list|clean``: the images and containers of the ``containers`` backend."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.cluster.engine import remove_leftovers
from harness.cluster.kafka_dist import fetched_versions
from harness.images import (
    DEFAULT_PREFIX,
    LABEL_SOURCE,
    docker_client,
    image_labels,
    image_names,
    source_digest,
)
from harness.images.build import build_images

console = Console()


@click.group("images")
def images() -> None:
    """Build and inspect the container images of `herdlab run --backend containers`."""


@images.command("build")
@click.option(
    "--offline",
    is_flag=True,
    help="No image registry: make the Debian base with debootstrap + docker import (needs root and "
    "debootstrap; apt and pip still reach Debian's mirror and PyPI).",
)
@click.option(
    "--tag-prefix",
    default=DEFAULT_PREFIX,
    show_default=True,
    help="Images are <prefix>zookeeper:<version> and <prefix>herdlab:<version>.",
)
@click.option(
    "--mirror",
    default="http://deb.debian.org/debian",
    show_default=True,
    help="--offline: the Debian mirror debootstrap and apt use.",
)
@click.option("--rebuild-base", is_flag=True, help="--offline: make the Debian base again even if it exists.")
@click.option(
    "--kafka",
    "kafka_versions",
    multiple=True,
    metavar="VERSION",
    help="Also build <prefix>kafka:<version> for this Apache Kafka version (3.9, 4 or exact; fetched with "
    "Maven first when not in the cache; repeatable). Default: every version `herdlab kafka fetch` fetched.",
)
@click.option("--no-kafka", is_flag=True, help="Build no Apache Kafka image.")
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the full build log here (default: herdlab-images-build.log in the temp directory).",
)
def build(
    offline: bool,
    tag_prefix: str,
    mirror: str,
    rebuild_base: bool,
    log_path: Path | None,
    kafka_versions: tuple[str, ...] = (),
    no_kafka: bool = False,
) -> None:
    """Build the ZooKeeper image and the herdlab image (broker and members); print the build times.

    Without --offline the base is debian:bookworm-slim from a registry. Both images install Java 17
    and Python 3.11 from Debian; the ZooKeeper image gets the ZooKeeper jars of the installed pyspark
    wheel (the ZooKeeper the local backend runs), the herdlab image gets herdlab from this checkout
    with only the packages the broker and the members need (no pyspark, no matplotlib). The Apache Kafka
    images (cluster.broker = "apache-kafka" on the containers backend) put the fetched jars of each
    version on the same Java runtime.
    """
    if no_kafka and kafka_versions:
        raise click.UsageError("--kafka and --no-kafka exclude each other")
    versions = [] if no_kafka else list(kafka_versions) or fetched_versions()

    r = build_images(
        offline=offline,
        prefix=tag_prefix,
        mirror=mirror,
        rebuild_base=rebuild_base,
        log_path=log_path,
        say=lambda s: console.print(s, highlight=False),
        kafka_versions=versions,
    )
    t = Table(title="herdlab images")
    for col in ("image", "built in", "size"):
        t.add_column(col, justify="left" if col == "image" else "right")
    if offline:
        t.add_row(r.names.base, "reused" if r.reused_base else f"{r.seconds['base']:.1f}s", "-")
    t.add_row("wheels (host pip)", f"{r.seconds['wheels']:.1f}s", "-")
    t.add_row(r.names.zookeeper, f"{r.seconds['zookeeper']:.1f}s", f"{r.sizes['zookeeper'] / 2**20:.0f} MiB")
    t.add_row(r.names.herdlab, f"{r.seconds['herdlab']:.1f}s", f"{r.sizes['herdlab'] / 2**20:.0f} MiB")
    for tag in r.kafka:
        t.add_row(tag, f"{r.seconds[tag]:.1f}s", f"{r.sizes[tag] / 2**20:.0f} MiB")
    console.print(t)
    console.print(f"total {sum(r.seconds.values()):.1f}s; build log: {r.log_path}", highlight=False)


@images.command("list")
@click.option("--tag-prefix", default=DEFAULT_PREFIX, show_default=True)
def list_images(tag_prefix: str) -> None:
    """Show the images the containers backend uses, and whether they match this checkout."""
    client = docker_client()
    names = image_names(tag_prefix)
    digest = source_digest()
    t = Table(title="herdlab images")
    for col in ("image", "present", "sources"):
        t.add_column(col)
    kafka = sorted(
        tag
        for image in client.images.list(name=names.kafka_repository)
        for tag in image.tags
        if tag.startswith(names.kafka_repository + ":")
    )
    for ref in (names.base, names.zookeeper, names.herdlab, *kafka):
        labels = image_labels(client, ref)
        src = "-"
        if labels is not None and ref == names.herdlab:
            src = (
                "this checkout"
                if labels.get(LABEL_SOURCE) == digest
                else "[yellow]other sources: rebuild[/yellow]"
            )
        t.add_row(ref, "yes" if labels is not None else "[red]no[/red]", src)
    console.print(t)


@images.command("clean")
@click.option("--all", "everything", is_flag=True, help="Also containers of herdlab processes still running.")
def clean(everything: bool) -> None:
    """Remove containers left by herdlab runs whose process is gone (normally there are none)."""
    removed = remove_leftovers(everything)
    console.print(f"removed {len(removed)} container(s){': ' + ', '.join(removed) if removed else ''}")
