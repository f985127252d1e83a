# pyright: strict
"""Holding a member process until the runner releases it: a join's process started ahead of its step.

Contract
--------
:func:`wait_for_release` blocks until the file ``path`` exists, then removes it and returns. The runner
(:meth:`harness.run.rig.UnitRig.prestart_member`) starts every member a ``join`` step adds with
``--hold-until PATH`` as soon as the unit's initial members are started, and creates ``PATH`` when the
join is performed (:meth:`harness.run.rig.UnitRig.start_member`). By then the process has done its
start-up (interpreter, the member's modules, the client libraries: a coordinator member's, the
``library`` of its entry in :data:`harness.members.clients.registry.CLIENT_SPECS`; a legacy member's kazoo
and the kafka-python its fetcher and Kafka offset storage use; a member in another language holds itself,
:mod:`harness.members.child`), so the member's ``ready`` (the join's t0) follows the join's ``invoke`` by milliseconds rather than by a process start-up that
a loaded machine stretches to tens of seconds when many members start at once. Until it is
released the member has written no event and opened no connection; a signal ends it like any process
(the member's own handlers are installed after the release). A member in another language that holds
itself is to end at once on a stop (SIGTERM or SIGINT, to it or to its adapter) with status 0, having printed
nothing, so that its adapter writes no event either (:mod:`harness.members.child`).
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

#: How often a held member looks for its release file (a join's ``ready`` comes at most this late).
POLL_S = 0.01


def preload(library: str) -> None:
    """Import the client library ``library`` (a top-level module) before the hold, so that the release is
    not followed by its import."""
    importlib.import_module(library)


def wait_for_release(path: Path) -> None:
    """Say so on stdout (the member's log), block until ``path`` exists, then remove it (see the module
    contract)."""
    print(f"held until {path} exists", flush=True)
    while not path.exists():
        time.sleep(POLL_S)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def hold_option(before: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The member commands' ``--hold-until FILE`` option (a :class:`~pathlib.Path` or None), its help
    saying what the member waits ``before`` (joining, registering)."""
    return click.option(
        "--hold-until",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help=f"Start up, then wait until this file exists before {before}, and remove it (the runner "
        "starts a join's member ahead of its step this way).",
    )
