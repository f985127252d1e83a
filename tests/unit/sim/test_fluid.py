"""The fluid ZooKeeper server: bursts processor-shared, each completion instant worked out by hand."""

from __future__ import annotations

import pytest

from harness.sim.clock import NS_PER_S, VirtualScheduler
from harness.sim.fluid import FluidServer
from harness.sim.model import DelayModel
from tests.support.sim_units import machine_model


def run(delays: DelayModel, jobs: list[tuple[float, str, int]]) -> dict[str, float]:
    """Submit each (at seconds, name, n) and return each job's completion instant in seconds."""
    sched = VirtualScheduler()
    server = FluidServer(sched, delays)
    done: dict[str, float] = {}
    for at, name, n in jobs:
        sched.call_later(
            at, server.submit, n, lambda name=name: done.setdefault(name, sched.now_ns / NS_PER_S)
        )
    sched.run()
    assert server.in_service() == 0
    return done


def test_a_request_alone_takes_one_round_trip() -> None:
    # 0.9 ms of client CPU, 0.05 ms each way, 0.12 ms of service: 1.12 ms
    d = machine_model(zk_client_s=0.0009, network_one_way_s=0.00005, zk_service_s=0.00012, client_cores=0)
    assert run(d, [(0.0, "a", 1)])["a"] == pytest.approx(0.00112, abs=2e-9)


def test_a_saturated_server_serves_every_request_once_and_they_finish_together() -> None:
    # 20 clients with a burst of 100 each: the server's 1 / (20 x 0.12 ms) = 416.7 requests a second
    # each is below one client's own 1 / 1.12 ms = 892.9, so the server is the bottleneck: all 2000
    # requests take 2000 x 0.12 ms = 0.24 s, and equal shares finish together
    d = machine_model(zk_client_s=0.0009, network_one_way_s=0.00005, zk_service_s=0.00012, client_cores=0)
    done = run(d, [(0.0, f"c{i}", 100) for i in range(20)])
    assert len(done) == 20
    assert all(t == pytest.approx(0.24, abs=1e-6) for t in done.values())


def test_a_late_burst_shares_the_server_from_its_arrival() -> None:
    # a server-bound model with 1 ms a request: a alone from 0 to 5 ms gets 5 of its 10 requests; both
    # then get 500 a second, a's last 5 take 10 ms (a done at 15 ms, b has 5 by then); b alone does its
    # last 5 in 5 ms: 20 ms, the 20 requests' service
    d = machine_model(zk_client_s=0.0, network_one_way_s=0.0, zk_service_s=0.001, client_cores=0)
    done = run(d, [(0.0, "a", 10), (0.005, "b", 10)])
    assert done["a"] == pytest.approx(0.015, abs=1e-6)
    assert done["b"] == pytest.approx(0.020, abs=1e-6)


def test_shared_client_cores_bound_the_rate_when_they_are_the_bottleneck() -> None:
    # 1 ms of client CPU a request on 2 cores (0.5 ms a request for the group) beats the server's
    # 0.1 ms: 4 clients x 10 requests = 40 ms of CPU on 2 cores = 20 ms
    d = machine_model(zk_client_s=0.001, network_one_way_s=0.0, zk_service_s=0.0001, client_cores=2)
    done = run(d, [(0.0, f"c{i}", 10) for i in range(4)])
    assert all(t == pytest.approx(0.020, abs=1e-6) for t in done.values())


def test_smaller_bursts_finish_first_and_ties_in_submission_order() -> None:
    d = machine_model(zk_client_s=0.0, network_one_way_s=0.0, zk_service_s=0.001, client_cores=0)
    sched = VirtualScheduler()
    server = FluidServer(sched, d)
    order: list[str] = []
    for name, n in (("big", 5), ("x", 1), ("y", 1)):
        server.submit(n, lambda name=name: order.append(name))
    sched.run()
    # three share 1000 a second: x and y (1 request each) finish together at 3 ms, x first; big then
    # has 1 of its 5 and does the other 4 alone: 7 ms
    assert order == ["x", "y", "big"]
    assert sched.now_ns == 7_000_000


def test_an_empty_job_is_refused() -> None:
    server = FluidServer(VirtualScheduler(), machine_model())
    with pytest.raises(ValueError, match="at least one request"):
        server.submit(0, lambda: None)
