# pyright: strict
"""One nemesis class per planned action, and the registry the runner looks them up in.

Each class's :meth:`~harness.faults.nemesis.Action.act` returns once its effect was seen (the
``complete`` condition below); :meth:`~harness.faults.nemesis.Action.applicable` holds the skip rules.

==============  =================================================  ==========================================
action          effect, and when it is complete                    skipped
==============  =================================================  ==========================================
join,           start the targets' processes (of the step's        never
start_member    ``member_kind``, with its ``props``); complete
                when each wrote a ``ready`` event since
                (``ready_ns``)
leave,          SIGTERM to each target (not its group), wait up    never
stop_member     to 30 s each for it to exit, then reap it
crash           SIGKILL to each target's group, wait up to 10 s    never
pause, resume   SIGSTOP / SIGCONT; complete when every target      never
                is seen stopped (paused) / running, within 10 s
stall, unstall  SIGUSR2 / SIGUSR1 to each target's member process  legacy_zk (:data:`NO_POLL_TIMER`)
                itself (not its group): its poll loop stops /
                polls again (a child member's adapter passes
                it on as a stdin command); complete once sent
cut, heal       cut / restore each target's proxy to ``target``    ZooKeeper on a coordinator member; the
                                                                   broker with Apache Kafka (it advertises
                                                                   its own listener, not the proxy)
expire          close each target's ZooKeeper session from a       not legacy_zk; a target with no session
                second client attached to it                       registered yet
add_partitions  grow the topic to ``value`` partitions             never
restart_broker  stop broker 0, wait ``value`` s, start it again    never
kill_zk_leader  SIGKILL the ZooKeeper leader; complete once one    one ZooKeeper server (``needs zookeeper
                of the others is the leader (``old_leader``,       servers = 3``)
                ``new_leader``, ``elected_s``)
restart_zk_     start the killed ZooKeeper server again (same      as kill_zk_leader; no server down
server          ports and data); complete once it serves
                (``server``, ``rejoined_s``)
pause_zk_leader SIGSTOP the ZooKeeper leader; complete once it is  as kill_zk_leader
                seen stopped and another server is the leader
                (``old_leader``, ``new_leader``, ``elected_s``)
resume_zk_      SIGCONT the paused ZooKeeper server; complete      as kill_zk_leader; no server paused
server          once it runs (``server``)
kill_           SIGKILL the broker that coordinates the group;     legacy_zk (:data:`NO_COORDINATOR`); a
coordinator     complete once its process is gone                  cluster without broker faults
restart_        start the killed broker again (same id, port,      as kill_coordinator; no broker down
coordinator     data directory); complete once it serves
pause_          SIGSTOP the coordinating broker; complete once     as kill_coordinator
coordinator     it is seen stopped
resume_         SIGCONT the paused broker; complete once it runs   as kill_coordinator; no broker paused
coordinator
cut_            cut the coordinating broker from every ZooKeeper   as kill_coordinator
coordinator     server (its proxies blackhole and drop their
                connections, both directions); complete at once
heal_           restore that broker's ZooKeeper proxies            as kill_coordinator; no broker cut
coordinator
latency,        put the step's toxic (``toxic``) on each target's  as cut
bandwidth,      proxy to ``target`` (toxiproxy's names,
reset_peer,     :mod:`harness.faults.toxics`); complete once it is
slow_close,     on every one
timeout,
limit_data
remove_toxic    take that toxic off again                          as cut
restart_zk      stop ZooKeeper server ``server``, wait ``value``   not the local backend; another server
                s, start it (same data, ports); complete once it   down or paused
                serves (``server``, ``restarted_s``)
cut_broker_zk,  cut / heal broker ``broker_id``'s ZooKeeper        not the local backend's brokers
heal_broker_zk  proxies (blackholed, connections dropped)
==============  =================================================  ==========================================

The ZooKeeper-leader actions apply to both implementations: the legacy members' coordination service
is the ensemble, and the coordinator side's brokers register in it. Server numbers are 0-based indexes
of the ensemble (ZooKeeper's ``myid`` is index + 1). The kill and the pause are triggers (the
coordination service's leader failed, as a coordinator's failure is on the other side); the restart and
the resume end the fault (not triggers), planned ``downtime`` / ``duration`` later (kill and restart
are two steps so that the kill's ``complete`` marks the election, not the restart).

The coordinator faults resolve their target when invoked: the fault asks FindCoordinator (client id
``herdlab-harness``, :func:`harness.faults.kafka_probe.find_coordinator`) which broker coordinates the
unit's group now; its end step hits the broker the fault holds (the cluster's ``brokers_down``,
``brokers_paused``, ``brokers_cut``). Both events of each pair carry ``broker_id``, ``offsets_partition``
(``partitionFor(group)`` over the brokers' 50 offsets partitions) and ``group``; ``targets`` stays empty.
For legacy_zk they are ``skipped`` (its counterpart is the ZooKeeper leader's fault).

A stall is complete once its signal is sent: no outside sign shows a poll loop that stopped, and the
member stops when its current poll returns (within its poll timeout). Its effect is the client's: past
``max.poll.interval.ms`` its poll timer makes the member leave while its heartbeat goes on
(:mod:`harness.kernel.actions`, "A stall").

A join or pause that never takes effect raises :class:`~harness.faults.nemesis.ActionFailed`.
"""

from __future__ import annotations

import logging
import signal
from typing import Any, ClassVar, cast

from harness.faults.nemesis import (
    LEGACY_ZK,
    Action,
    ActionFailed,
    ActionPair,
    BrokerControl,
    Nemesis,
    NemesisContext,
    ProxyControl,
    Skip,
    ToxicControl,
    ZooKeeperControl,
)
from harness.faults.steps import Step
from harness.faults.toxics import Toxic, toxic_from
from harness.kernel.actions import STALL_SIGNAL, UNSTALL_SIGNAL
from harness.kernel.errors import ConfigError, HerdlabError
from harness.kernel.javacompat import partition_for

log = logging.getLogger("harness.run")


class Join(Action):
    """Start new members; complete once every one of them is ready to join."""

    action = "join"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        since = ctx.time_ns()
        props = dict(step.props) if step.props else None
        for n in step.targets:
            ctx.start_member(n, step.member_kind, props)
        # complete = every new process is ready to join (its `ready` event: t0 of the join)
        if not ctx.wait(ctx.stable_timeout, lambda: all(ctx.ready_ns(n) >= since for n in step.targets)):
            raise ActionFailed(
                f"{ctx.unit_key}: {','.join(step.targets)} not ready to join; see {ctx.logs_dir}"
            )
        return {"ready_ns": {n: ctx.ready_ns(n) for n in step.targets}}


class StartMember(Join):
    """A stopped member's process started again (a rolling restart's second half)."""

    action = "start_member"


class Leave(Action):
    """A clean shutdown: SIGTERM to the member process itself, then wait for it to exit."""

    action = "leave"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        targets = [ctx.members[n] for n in step.targets if n in ctx.members]
        for p in targets:
            p.signal(signal.SIGTERM, group=False)
        for p in targets:
            p.wait(30)
            p.stop()
        return {}


class StopMember(Leave):
    """A rolling restart's first half: a clean shutdown."""

    action = "stop_member"


class Crash(Action):
    """SIGKILL to the member's process group: no goodbye."""

    action = "crash"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        targets = [ctx.members[n] for n in step.targets if n in ctx.members]
        for p in targets:
            p.signal(signal.SIGKILL)
        for p in targets:
            p.wait(10)
        return {}


class Pause(Action):
    """SIGSTOP (a container: docker pause); complete once every target is seen frozen."""

    action = "pause"
    freeze = True

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        targets = [ctx.members[n] for n in step.targets if n in ctx.members]
        for p in targets:
            p.signal(signal.SIGSTOP if self.freeze else signal.SIGCONT)
        if not ctx.wait(10, lambda: all(ctx.frozen(p) == self.freeze for p in targets)):
            raise ActionFailed(f"{ctx.unit_key}: {step.kind} of {','.join(step.targets)} did not take effect")
        return {}


def process_frozen(handle: Any) -> bool:
    """Whether a member is stopped (SIGSTOP) or its container paused: a handle with a ``box`` (a
    member container) is asked for its status, any other is looked up by ``pid``."""
    box = getattr(handle, "box", None)
    if box is not None:  # a member container
        return bool(box.status() == "paused")
    import psutil

    try:
        return psutil.Process(handle.pid).status() == psutil.STATUS_STOPPED  # type: ignore[attr-defined]
    except psutil.NoSuchProcess:
        return False


class Resume(Pause):
    """SIGCONT (docker unpause); complete once every target is seen running."""

    action = "resume"
    freeze = False


#: Why a stall is skipped for legacy_zk.
NO_POLL_TIMER = "a legacy_zk member has no poll timer: its liveness is its ZooKeeper session"


class Stall(Action):
    """Stall each target's processing: :data:`~harness.kernel.actions.STALL_SIGNAL` to its member process
    itself; complete once sent (see the module docstring)."""

    action = "stall"
    sig: ClassVar[int] = STALL_SIGNAL

    def applicable(self, impl: str) -> str | None:
        return NO_POLL_TIMER if impl == LEGACY_ZK else None

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        for n in step.targets:
            p = ctx.members.get(n)
            if p is not None:
                p.signal(self.sig, group=False)
        return {}


class Unstall(Stall):
    """End the stall: :data:`~harness.kernel.actions.UNSTALL_SIGNAL`; the member polls again (and rejoins
    the group if its poll timer made it leave)."""

    action = "unstall"
    sig = UNSTALL_SIGNAL


class Cut(Action):
    """Blackhole each target's proxy to ``target`` (``zookeeper`` or ``broker``)."""

    action = "cut"

    def applicable(self, impl: str) -> str | None:
        if self.target == "zookeeper" and impl != LEGACY_ZK:
            # the coordinator's members never talk to ZooKeeper: nothing to cut them off from
            return "coordinator members do not use ZooKeeper"
        return None

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        proxies = ctx.proxies
        assert proxies is not None, "a cut member runs behind proxies (Plan.proxied)"
        for n in step.targets:
            self.apply(proxies, f"{n}-{step.target}")
        return {}

    def apply(self, proxies: ProxyControl, name: str) -> None:
        proxies.cut(name)


class Heal(Cut):
    """Restore each target's proxy: held bytes are delivered, streams stay intact."""

    action = "heal"

    def apply(self, proxies: ProxyControl, name: str) -> None:
        proxies.restore(name)


class Expire(Action):
    """Expire members' ZooKeeper sessions from outside, as ZooKeeper's own tests do."""

    action = "expire"

    def applicable(self, impl: str) -> str | None:
        return None if impl == LEGACY_ZK else "ZooKeeper sessions exist only on the legacy side"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        for n in step.targets:
            self.expire(n, ctx)
        return {}

    def expire(self, name: str, ctx: NemesisContext) -> None:
        """A second client attaches to the session with its id and password (from the member's
        ``registered`` event, or for a member whose events carry no credentials from the ZooKeeper tap's:
        :meth:`harness.run.tail.GroupWatch.registration`) and closes it: the server ends the session, deletes its ephemerals and
        the member learns of the expiry when it next talks to ZooKeeper."""
        from kazoo.client import KazooClient  # pyright: ignore[reportMissingTypeStubs]

        reg = ctx.registration(name)
        if reg is None:
            raise Skip(f"{name} has no ZooKeeper session registered yet")
        sid, pwd = reg
        c = KazooClient(hosts=ctx.cluster.zookeeper_connect, client_id=(sid, bytes.fromhex(pwd)), timeout=10)
        try:
            c.start(timeout=15)
        finally:
            c.stop()
            c.close()


class AddPartitions(Action):
    """Grow the topic to ``value`` partitions (CreatePartitions through the admin client)."""

    action = "add_partitions"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        from kafka.admin import KafkaAdminClient, NewPartitions

        admin = KafkaAdminClient(
            bootstrap_servers=ctx.cluster.bootstrap.split(","), client_id="herdlab-harness"
        )
        try:
            grow = {ctx.topic: NewPartitions(int(step.value or 0))}
            admin.create_partitions(grow)  # pyright: ignore[reportUnknownMemberType]
        finally:
            admin.close()
        return {}


class RestartBroker(Action):
    """Stop broker 0 cleanly, keep it down ``value`` seconds, start it and wait until it serves."""

    action = "restart_broker"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        ctx.cluster.stop_broker(0)
        ctx.wait(step.value or 0.0)
        ctx.cluster.start_broker(0)
        return {}


#: How long the remaining ZooKeeper servers may take to elect a leader, or a server to rejoin.
ZK_ELECTION_TIMEOUT_S = 30.0
NEEDS_ENSEMBLE = "needs zookeeper servers = 3"


def _ensemble(ctx: NemesisContext) -> ZooKeeperControl:
    ensemble = ctx.cluster.fault_controls().ensemble
    if ensemble is None:
        raise Skip(NEEDS_ENSEMBLE)
    return ensemble


class KillZkLeader(Action):
    """SIGKILL the ZooKeeper ensemble's leader; complete once another server is the leader."""

    action = "kill_zk_leader"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        ensemble = _ensemble(ctx)
        # the leader now (an ensemble still electing after an earlier fault gets the time to finish)
        if not ctx.wait(ZK_ELECTION_TIMEOUT_S, lambda: ensemble.leader() is not None):
            raise ActionFailed(f"{ctx.unit_key}: the ZooKeeper ensemble has no leader to {step.kind}")
        old = ensemble.leader()
        assert old is not None
        t0 = ctx.time_ns()
        self.strike(ensemble, old)
        if not ctx.wait(ZK_ELECTION_TIMEOUT_S, lambda: ensemble.leader() not in (None, old)):
            raise ActionFailed(
                f"{ctx.unit_key}: no new ZooKeeper leader {ZK_ELECTION_TIMEOUT_S:g}s after {step.kind}"
            )
        new = ensemble.leader()
        return {"old_leader": old, "new_leader": new, "elected_s": (ctx.time_ns() - t0) / 1e9}

    def strike(self, ensemble: ZooKeeperControl, server: int) -> None:
        ensemble.kill_server(server)


class PauseZkLeader(KillZkLeader):
    """SIGSTOP the ZooKeeper leader (it keeps its connections, answers nothing); complete once it is
    seen stopped and another server is the leader."""

    action = "pause_zk_leader"

    def strike(self, ensemble: ZooKeeperControl, server: int) -> None:
        ensemble.pause(server)


class RestartZkServer(Action):
    """Start the ZooKeeper server a ``kill_zk_leader`` killed; complete once it serves again."""

    action = "restart_zk_server"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        ensemble = _ensemble(ctx)
        if not ensemble.down:
            raise Skip("no ZooKeeper server is down")
        server = min(ensemble.down)
        return {"server": server, "rejoined_s": ensemble.start_server(server, ZK_ELECTION_TIMEOUT_S)}


class ResumeZkServer(Action):
    """SIGCONT the ZooKeeper server a ``pause_zk_leader`` stopped; complete once it runs."""

    action = "resume_zk_server"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        ensemble = _ensemble(ctx)
        if not ensemble.paused:
            raise Skip("no ZooKeeper server is paused")
        server = min(ensemble.paused)
        ensemble.resume(server)
        return {"server": server}


#: ``offsets.topic.num.partitions`` of the harness's brokers (their ``--offsets-partitions`` default).
OFFSETS_PARTITIONS = 50
#: How long a coordinator fault may wait for FindCoordinator to name the group's coordinator.
FIND_COORDINATOR_TIMEOUT_S = 30.0
NO_COORDINATOR = "a legacy group has no coordinating broker (its counterpart is the ZooKeeper leader's fault)"
NEEDS_BROKER_FAULTS = "needs the local backend's brokers"


class CoordinatorFault(Action):
    """Base of the coordinator-side actions: the target is resolved when invoked (see the module
    docstring); subclasses say how (:meth:`resolve`) and what they do to it (:meth:`strike`)."""

    def applicable(self, impl: str) -> str | None:
        return NO_COORDINATOR if impl == LEGACY_ZK else None

    def resolve(self, brokers: BrokerControl, ctx: NemesisContext) -> int:
        """The broker that coordinates the group now (FindCoordinator); ActionFailed when none is named."""
        broker = ctx.coordinator(FIND_COORDINATOR_TIMEOUT_S)
        if broker is None:
            raise ActionFailed(
                f"{ctx.unit_key}: no broker named a coordinator of {ctx.group} within "
                f"{FIND_COORDINATOR_TIMEOUT_S:g}s"
            )
        return broker

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        """Do the action to ``broker_id``; return once it took effect, with the complete's fields."""
        raise NotImplementedError

    def run(self, pair: ActionPair, ctx: NemesisContext) -> None:
        step = pair.step
        log.info("%s: %s", ctx.unit_key, step.kind)
        target: dict[str, Any] = {
            "broker_id": None,
            "offsets_partition": partition_for(ctx.group, OFFSETS_PARTITIONS),
            "group": ctx.group,
        }
        pair.context = {**pair.context, **target}
        reason = self.applicable(ctx.impl)
        brokers = ctx.cluster.fault_controls().brokers
        if reason is None and brokers is None:
            reason = NEEDS_BROKER_FAULTS
        if reason is not None or brokers is None:
            pair.invoke()
            pair.skipped(reason or NEEDS_BROKER_FAULTS)
            return
        try:
            broker_id = self.resolve(brokers, ctx)
        except Skip as e:
            pair.invoke()
            pair.skipped(str(e))
            return
        pair.context = {**pair.context, "broker_id": broker_id}
        pair.invoke()
        try:
            effect = self.strike(brokers, broker_id, ctx)
        except RuntimeError as e:  # the process never reached the state (pause, resume, restart)
            raise ActionFailed(f"{ctx.unit_key}: {step.kind} of broker {broker_id}: {e}") from None
        pair.complete(**effect)


class KillCoordinator(CoordinatorFault):
    """SIGKILL the group's coordinating broker; complete once its process is gone."""

    action = "kill_coordinator"

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        brokers.kill_broker(broker_id)
        return {}


class RestartCoordinator(CoordinatorFault):
    """Start the broker a ``kill_coordinator`` killed (same id, port, data); complete once it serves."""

    action = "restart_coordinator"

    def resolve(self, brokers: BrokerControl, ctx: NemesisContext) -> int:
        if not brokers.brokers_down:
            raise Skip("no broker is down")
        return min(brokers.brokers_down)

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        t0 = ctx.time_ns()
        brokers.start_broker(broker_id)
        return {"rejoined_s": (ctx.time_ns() - t0) / 1e9}


class PauseCoordinator(CoordinatorFault):
    """SIGSTOP the group's coordinating broker (a zombie coordinator); complete once seen stopped."""

    action = "pause_coordinator"

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        brokers.pause_broker(broker_id)
        return {}


class ResumeCoordinator(CoordinatorFault):
    """SIGCONT the broker a ``pause_coordinator`` stopped; complete once it runs."""

    action = "resume_coordinator"

    def resolve(self, brokers: BrokerControl, ctx: NemesisContext) -> int:
        if not brokers.brokers_paused:
            raise Skip("no broker is paused")
        return min(brokers.brokers_paused)

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        brokers.resume_broker(broker_id)
        return {}


class CutCoordinator(CoordinatorFault):
    """Cut the group's coordinating broker from ZooKeeper (every server, both directions, connections
    dropped); complete once its proxies are cut."""

    action = "cut_coordinator"

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        brokers.cut_broker_zookeeper(broker_id)
        return {}


class HealCoordinator(CoordinatorFault):
    """Let the broker a ``cut_coordinator`` cut reach ZooKeeper again; complete once its proxies forward."""

    action = "heal_coordinator"

    def resolve(self, brokers: BrokerControl, ctx: NemesisContext) -> int:
        if not brokers.brokers_cut:
            raise Skip("no broker is cut from ZooKeeper")
        return min(brokers.brokers_cut)

    def strike(self, brokers: BrokerControl, broker_id: int, ctx: NemesisContext) -> dict[str, Any]:
        brokers.heal_broker_zookeeper(broker_id)
        return {}


# -- degraded networks, ZooKeeper restarts, broker-ZooKeeper cuts ---------------------------------------
class ToxicFault(Cut):
    """Put the step's toxic (``extra`` ``toxic``) on each target's proxy to ``target``; complete once it
    is on every one of them. Skipped where a cut of that target is (see :class:`Cut`)."""

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        proxies = ctx.proxies
        assert proxies is not None, "a degraded member runs behind proxies (Plan.proxied)"
        toxic = toxic_from(dict(step.extra)["toxic"])
        for n in step.targets:
            self.apply_toxic(cast(ToxicControl, proxies), f"{n}-{step.target}", toxic)
        return {}

    def apply_toxic(self, proxies: ToxicControl, name: str, toxic: Toxic) -> None:
        proxies.add_toxic(name, toxic)


class LatencyFault(ToxicFault):
    action = "latency"


class BandwidthFault(ToxicFault):
    action = "bandwidth"


class ResetPeerFault(ToxicFault):
    action = "reset_peer"


class SlowCloseFault(ToxicFault):
    action = "slow_close"


class TimeoutFault(ToxicFault):
    action = "timeout"


class LimitDataFault(ToxicFault):
    action = "limit_data"


class RemoveToxic(ToxicFault):
    """Take the step's toxic off each target's proxy; complete once it is off every one of them."""

    action = "remove_toxic"

    def apply_toxic(self, proxies: ToxicControl, name: str, toxic: Toxic) -> None:
        proxies.remove_toxic(name, toxic.kind)


#: How long a restarted ZooKeeper server may take to serve again (an ensemble member: to rejoin).
ZK_RESTART_TIMEOUT_S = 60.0
NEEDS_LOCAL_ZOOKEEPER = "needs the local backend's ZooKeeper"


class RestartZk(Action):
    """Stop ZooKeeper server ``extra`` ``server`` (SIGTERM), keep it down ``value`` seconds, start it
    again on the same data directory and ports; complete once it serves (``server``, ``restarted_s``).
    Applies to both implementations (legacy members' sessions and the brokers' registrations live
    there). Skipped without the local backend, and while another ZooKeeper server is down or paused."""

    action = "restart_zk"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        zk = ctx.cluster.fault_controls().zookeeper_restart
        if zk is None:
            raise Skip(NEEDS_LOCAL_ZOOKEEPER)
        ensemble = ctx.cluster.fault_controls().ensemble
        if ensemble is not None and (ensemble.down or ensemble.paused):
            raise Skip("another ZooKeeper server is out")
        server = int(dict(step.extra).get("server", 0))
        t0 = ctx.time_ns()
        zk.stop_server(server)
        ctx.wait(step.value or 0.0)
        try:
            zk.start_server(server, ZK_RESTART_TIMEOUT_S)
        except (HerdlabError, RuntimeError) as e:
            raise ActionFailed(
                f"{ctx.unit_key}: ZooKeeper server {server} did not serve again: {e}"
            ) from None
        return {"restarted_s": (ctx.time_ns() - t0) / 1e9}  # ``server`` is the step's (both events)


class CutBrokerZk(Action):
    """Cut broker ``extra`` ``broker_id`` from every ZooKeeper server (its proxies blackhole and drop its
    connections, both directions); complete at once. Both implementations (the broker's registration
    is what legacy members find brokers by). Skipped without the local backend's broker faults."""

    action = "cut_broker_zk"

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        brokers = ctx.cluster.fault_controls().brokers
        if brokers is None:
            raise Skip(NEEDS_BROKER_FAULTS)
        broker = int(dict(step.extra).get("broker_id", 0))
        try:
            self.strike(brokers, broker)
        except RuntimeError as e:
            raise ActionFailed(f"{ctx.unit_key}: {step.kind} of broker {broker}: {e}") from None
        return {}

    def strike(self, brokers: BrokerControl, broker: int) -> None:
        brokers.cut_broker_zookeeper(broker)


class HealBrokerZk(CutBrokerZk):
    """Let the broker a ``cut_broker_zk`` cut reach ZooKeeper again; complete once its proxies forward."""

    action = "heal_broker_zk"

    def strike(self, brokers: BrokerControl, broker: int) -> None:
        brokers.heal_broker_zookeeper(broker)


#: action name -> nemesis class (one per name of :data:`harness.kernel.events.ACTIONS`).
REGISTRY: dict[str, type[Action]] = {
    cls.action: cls
    for cls in (
        Join,
        StartMember,
        Leave,
        StopMember,
        Crash,
        Pause,
        Resume,
        Stall,
        Unstall,
        Cut,
        Heal,
        Expire,
        AddPartitions,
        RestartBroker,
        KillZkLeader,
        RestartZkServer,
        PauseZkLeader,
        ResumeZkServer,
        KillCoordinator,
        RestartCoordinator,
        PauseCoordinator,
        ResumeCoordinator,
        CutCoordinator,
        HealCoordinator,
        LatencyFault,
        BandwidthFault,
        ResetPeerFault,
        SlowCloseFault,
        TimeoutFault,
        LimitDataFault,
        RemoveToxic,
        RestartZk,
        CutBrokerZk,
        HealBrokerZk,
    )
}


def nemesis_for(step: Step) -> Nemesis:
    """The nemesis that performs ``step``; a :class:`ConfigError` for an unknown action."""
    cls = REGISTRY.get(step.kind)
    if cls is None:
        raise ConfigError(f"unknown nemesis action {step.kind!r}")
    return cls(target=step.target)
