"""The containers backend's tests: which images they use, and what "nothing of ours is left" means.

"Ours" is this test session's: containers labelled with this process's ``herdlab.session``, those owned
by a herdlab process a test started (:func:`started_herdlab`), networks of this process's
testcontainers session and dangling volumes. Another user's containers on the same engine never count.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from harness.cluster.engine import LABEL_OWNER, LABEL_SESSION, SESSION

IMAGE_PREFIX = os.environ.get("HERDLAB_TEST_IMAGE_PREFIX", "herdlab/")
"""The image-name prefix the tests use (``HERDLAB_TEST_IMAGE_PREFIX``, default ``herdlab/``)."""

#: pids of the herdlab processes the tests started: their containers carry a session of their own.
_STARTED: set[int] = set()

State = tuple[set[str], set[str], set[str]]


def started_herdlab(pid: int) -> None:
    """Count the containers of herdlab process ``pid`` (started by a test) as this test session's."""
    _STARTED.add(pid)


def _containers(client: Any, label: str) -> set[str]:
    return {c.name for c in client.containers.list(all=True, ignore_removed=True, filters={"label": label})}


def state(client: Any) -> State:
    """This test session's containers, networks and dangling volumes (names)."""
    from testcontainers.core.labels import LABEL_SESSION_ID, SESSION_ID

    containers = _containers(client, f"{LABEL_SESSION}={SESSION}")
    host = socket.gethostname()
    for pid in _STARTED:
        containers |= _containers(client, f"{LABEL_OWNER}={host}:{pid}")
    networks = {n.name for n in client.networks.list(filters={"label": f"{LABEL_SESSION_ID}={SESSION_ID}"})}
    volumes = {v.name for v in client.volumes.list(filters={"dangling": True})}
    return containers, networks, volumes


def assert_nothing_left(client: Any, before: State) -> None:
    """None of this test session's containers, networks or dangling volumes beyond ``before``."""
    containers, networks, volumes = state(client)
    assert containers <= before[0], f"containers left behind: {sorted(containers - before[0])}"
    assert networks <= before[1], f"networks left behind: {sorted(networks - before[1])}"
    assert volumes <= before[2], f"volumes left behind: {sorted(volumes - before[2])}"
