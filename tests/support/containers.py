"""The containers backend's tests: which images they use, and what "nothing of ours is left" means."""

from __future__ import annotations

import os
from typing import Any

IMAGE_PREFIX = os.environ.get("HERDLAB_TEST_IMAGE_PREFIX", "herdlab/")
"""The image-name prefix the tests use (``HERDLAB_TEST_IMAGE_PREFIX``, default ``herdlab/``)."""


def state(client: Any) -> tuple[set[str], set[str], set[str]]:
    """The engine's containers labelled ``herdlab``, and all its networks and volumes (names)."""
    containers = {
        c.name for c in client.containers.list(all=True, ignore_removed=True, filters={"label": "herdlab"})
    }
    networks = {n.name for n in client.networks.list()}
    volumes = {v.name for v in client.volumes.list()}
    return containers, networks, volumes


def assert_nothing_left(client: Any, before: tuple[set[str], set[str], set[str]]) -> None:
    """No container labelled ``herdlab`` beyond ``before``; networks and volumes as they were."""
    containers, networks, volumes = state(client)
    assert containers <= before[0], f"containers left behind: {sorted(containers - before[0])}"
    assert networks == before[1], f"networks changed: {sorted(networks ^ before[1])}"
    assert volumes == before[2], f"volumes changed: {sorted(volumes ^ before[2])}"
