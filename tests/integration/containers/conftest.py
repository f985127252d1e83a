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
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.images import ImageNames, docker_client, image_labels, image_names
from harness.kernel.errors import EnvironmentProblem
from tests.support.containers import IMAGE_PREFIX, State, assert_nothing_left, state


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


@pytest.fixture
def baseline(engine: Any) -> Iterator[State]:
    before = state(engine)
    yield before
    assert_nothing_left(engine, before)
