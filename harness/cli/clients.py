"""``herdlab clients ...``: the client libraries members run on, and building the ones in other languages.

Contract
--------
* ``herdlab clients list``: one line per client (:data:`harness.members.clients.registry.CLIENT_SPECS`):
  its name, member kind, how it runs (a Python library, or a program built at set-up) and, when this
  machine lacks something to run or build it, what.
* ``herdlab clients build [CLIENT[@VERSION]]...``: builds each program into herdlab's cache (every client
  that has one, at its default version, when none is named) and prints where it is; idempotent (a built
  version is not built again). Progress goes to stderr. A client with nothing to build, an unknown one,
  or a machine that lacks a tool: a one-line error. A run builds what its scenario needs itself; this
  command does it ahead (e.g. in a CI set-up step).
"""

from __future__ import annotations

import click

from harness.kernel.errors import ConfigError
from harness.members.clients.registry import (
    CLIENT_SPECS,
    ChildClient,
    PythonClient,
    built_clients,
    client_spec,
    missing_for,
)


@click.group()
def clients() -> None:
    """The Kafka client libraries members run on (group.coordinator.client)."""


@clients.command("list")
def clients_list() -> None:
    """List the clients, how each runs, and what this machine lacks for one, if anything."""
    for name, spec in CLIENT_SPECS.items():
        if isinstance(spec, PythonClient):
            how = f"Python library {spec.library}"
        else:
            how = "program built at set-up (herdlab clients build)" if spec.build else "program"
        why = missing_for(name)
        click.echo(f"{name:<14} {spec.kind:<12} {how}{f'; cannot run here: {why}' if why else ''}")


def _target(item: str) -> tuple[str, str | None]:
    name, at, version = item.partition("@")
    if at and not version:
        raise ConfigError(f"{item!r}: expected CLIENT or CLIENT@VERSION")
    return name, version or None


@clients.command("build")
@click.argument("targets", nargs=-1, metavar="[CLIENT[@VERSION]]...")
def clients_build(targets: tuple[str, ...]) -> None:
    """Build the programs of CLIENT (at VERSION, else its default) into herdlab's cache
    ($HERDLAB_CACHE_DIR, else ~/.cache/herdlab) and print where each is. With no CLIENT: every client that
    is built at set-up. Already built versions are not built again."""
    wanted = [_target(t) for t in targets] or [(name, None) for name in built_clients()]
    for name, version in wanted:
        try:
            spec = client_spec(name)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if not isinstance(spec, ChildClient) or spec.build is None:
            raise ConfigError(f"client {name!r} has nothing to build (it is a Python library)")
        if why := missing_for(name, version):
            raise ConfigError(why)
        path = spec.build(version, lambda line: click.echo(line, err=True))
        click.echo(f"{name}{'@' + version if version else ''}: {path}")
