"""``herdlab bench replication`` end to end at the smallest size: both configurations run on clusters of their
own (a real ZooKeeper, one broker without replication, three with), every record is acknowledged with acks=all
(the bench raises otherwise), and the table names a rate and one RSS figure per broker of each run."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")

pytestmark = pytest.mark.bench


def test_the_bench_prints_a_rate_and_every_brokers_memory_for_both_configurations() -> None:
    out = subprocess.run(
        [HERDLAB, "bench", "replication", "--records", "500", "--size", "50", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {
        m.group(1).strip(): (m.group(2), m.group(3))
        for m in re.finditer(r"│ ([^│]+?)\s*│\s+1 │\s+([\d,]+) │\s+([\d / ]+?) │", out.stdout)
    }
    assert set(rows) == {"1 broker, no replication", "3 brokers, replication factor 3"}
    for name, brokers in (("1 broker, no replication", 1), ("3 brokers, replication factor 3", 3)):
        rate, rss = rows[name]
        assert int(rate.replace(",", "")) > 0
        assert len(rss.split("/")) == brokers and all(int(x) > 0 for x in rss.split("/"))
