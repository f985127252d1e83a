"""Fixtures for the containers backend tests (marked ``containers``).

* ``engine``: a connected Docker client; the test is **skipped** with the reason when no engine is
  reachable or the images are missing (build them with ``herdlab images build --offline``). The
  default test command therefore skips these tests on a machine without Docker.
* ``images``: the image names the tests use (``HERDLAB_TEST_IMAGE_PREFIX``, default ``herdlab/``).
* ``baseline``: this test session's containers, networks and dangling volumes before the test; after
  the test none of them may have appeared (nothing of ours remains). "This test session's" is narrow
  on purpose, so that another user of the same engine cannot fail (or hide a leak of) these tests:
  containers labelled with this process's ``herdlab.session`` or owned (``herdlab.owner``) by a
  herdlab process the tests started (:func:`started_herdlab`); networks labelled with this process's
  testcontainers session; volumes that are dangling (an anonymous volume carries no label: one a
  container of ours left behind is dangling once the container is removed).
* ``kafka_stub``: an image that stands in for Apache Kafka (cp-kafka's ``KAFKA_*`` interface in
  front of the herdlab broker), built once per session from the herdlab image and removed after.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.engine import LABEL_OWNER, LABEL_SESSION, SESSION
from harness.images import ImageNames, docker_client, image_labels, image_names
from harness.kernel.errors import EnvironmentProblem

STUB_DIR = Path(__file__).parent / "kafka_stub"
IMAGE_PREFIX = os.environ.get("HERDLAB_TEST_IMAGE_PREFIX", "herdlab/")


@pytest.fixture(scope="session")
def images() -> ImageNames:
    return image_names(IMAGE_PREFIX)


@pytest.fixture(scope="session")
def engine(images: ImageNames) -> Any:
    try:
        client = docker_client(timeout=60)
    except EnvironmentProblem as e:
        pytest.skip(f"containers tests need a Docker engine: {e}")
    missing = [ref for ref in (images.zookeeper, images.herdlab) if image_labels(client, ref) is None]
    if missing:
        pytest.skip(f"images {', '.join(missing)} not built: run `herdlab images build --offline`")
    return client


#: pids of the herdlab processes the tests started: their containers carry a session of their own.
_STARTED: set[int] = set()

State = tuple[set[str], set[str], set[str]]


def started_herdlab(pid: int) -> None:
    """Count the containers of herdlab process ``pid`` (started by a test) as this test session's."""
    _STARTED.add(pid)


def _containers(client: Any, label: str) -> set[str]:
    return {c.name for c in client.containers.list(all=True, ignore_removed=True, filters={"label": label})}


def _state(client: Any) -> State:
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
    containers, networks, volumes = _state(client)
    assert containers <= before[0], f"containers left behind: {sorted(containers - before[0])}"
    assert networks <= before[1], f"networks left behind: {sorted(networks - before[1])}"
    assert volumes <= before[2], f"volumes left behind: {sorted(volumes - before[2])}"


@pytest.fixture
def baseline(engine: Any) -> Iterator[State]:
    before = _state(engine)
    yield before
    assert_nothing_left(engine, before)


@pytest.fixture(scope="session")
def kafka_stub(engine: Any, images: ImageNames) -> Iterator[str]:
    tag = f"herdlab-test/kafka-stub:{images.herdlab.rpartition(':')[2]}"
    engine.images.build(
        path=str(STUB_DIR),
        tag=tag,
        buildargs={"HERDLAB_IMAGE": images.herdlab},
        network_mode="none",
        rm=True,
        forcerm=True,
    )
    yield tag
    engine.images.remove(tag, force=True)
