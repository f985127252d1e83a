"""Is a Kafka broker / a ZooKeeper server at this address? Bounded checks with one-line causes.

Contract
--------
:func:`check_bootstrap` checks every ``host:port`` of a bootstrap list, :func:`check_zookeeper` every
host of a ZooKeeper connect string. Both return one :class:`Probe` per address (what answered) or
raise :class:`harness.kernel.errors.Unreachable` (or :class:`harness.kernel.errors.ConfigError` for a malformed
address) whose one-line message names the address and the cause: connection refused, timed out,
host name does not resolve, not a Kafka broker, not ZooKeeper, ... Every network wait is bounded by
its step timeout and by ``deadline`` (a :func:`time.monotonic` value), so a check never outlives it
by more than a fraction of a second.

A bootstrap address is checked in three steps: a TCP connect; one Kafka ``ApiVersions`` v0 request
and its reply, encoded and decoded by kafka-python's protocol parser on that socket (what tells a
Kafka broker from anything else that listens); then a kafka-python client bootstraps from it
(``ApiVersions`` + ``Metadata``, the client path the harness itself uses) and every broker the
metadata advertises must accept a TCP connection from here. A ZooKeeper host: a TCP connect, the
``srvr`` four-letter command (a ZooKeeper answers it, or says four-letter words are not allowed),
then a kazoo session on the whole connect string.

kafka-python and kazoo log whatever goes wrong at WARNING and above: during a check their records
are kept by :func:`client_logs_captured`, not printed, and the last one is quoted in the error when
a client step fails.
"""

from __future__ import annotations

import logging
import socket
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from harness.kernel.errors import ConfigError, Unreachable

KAFKA_DEFAULT_PORT = 9092
ZOOKEEPER_DEFAULT_PORT = 2181
CONNECT_TIMEOUT_S = 3.0
REQUEST_TIMEOUT_S = 3.0
CLIENT_TIMEOUT_S = 4.0
CLIENT_LOGGERS = ("kafka", "kazoo")
CLIENT_ID = "herdlab-check"


@dataclass(frozen=True)
class Probe:
    """An address that passed its check: ``role`` ("bootstrap server" or "ZooKeeper address") and what
    answered there (``detail``)."""

    role: str
    address: str
    detail: str


class _NoConnection(Exception):
    """A TCP connect failed; the message is the cause in a few words."""


def split_hosts(value: str, default_port: int, what: str) -> list[tuple[str, int]]:
    """``"h1:p1,h2"`` -> ``[("h1", p1), ("h2", default_port)]``.

    A ZooKeeper chroot suffix (``/path`` after the last host) is dropped; ``[v6addr]:port`` is
    accepted. Raises :class:`ConfigError` naming ``what`` for an empty host or a bad port.
    """
    hosts = value.split("/", 1)[0]
    out: list[tuple[str, int]] = []
    for item in (h.strip() for h in hosts.split(",")):
        if not item:
            continue
        host, port = item, str(default_port)
        if item.startswith("["):
            inner, _, rest = item[1:].partition("]")
            host = inner
            if rest:
                if not rest.startswith(":"):
                    raise ConfigError(f"{what}: {item!r} is not HOST:PORT")
                port = rest[1:]
        elif ":" in item:
            host, _, port = item.rpartition(":")
        if not host:
            raise ConfigError(f"{what}: {item!r} has no host name (expected HOST:PORT)")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{what}: {item!r} has no valid port (expected HOST:PORT, port 1-65535)")
        out.append((host, int(port)))
    if not out:
        raise ConfigError(f"{what}: no address in {value!r} (expected HOST:PORT[,HOST:PORT...])")
    return out


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _timeout(deadline: float, cap: float, role: str, address: str) -> float:
    """The time one step may take: ``cap``, less when the deadline is nearer."""
    left = deadline - time.monotonic()
    if left <= 0.05:
        raise Unreachable(f"{role} {address}: the check ran out of time (slow or unresponsive server)")
    return min(cap, left)


def _open(host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection, or :class:`_NoConnection` saying why not."""
    try:
        return socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as e:
        raise _NoConnection(f"host name {host!r} does not resolve ({e.strerror})") from None
    except ConnectionRefusedError:
        raise _NoConnection("connection refused") from None
    except TimeoutError:
        raise _NoConnection(f"TCP connect timed out after {timeout:.1f}s") from None
    except OSError as e:
        raise _NoConnection(e.strerror or str(e)) from None


def _connect(host: str, port: int, deadline: float, role: str) -> socket.socket:
    address = _address(host, port)
    try:
        return _open(host, port, _timeout(deadline, CONNECT_TIMEOUT_S, role, address))
    except _NoConnection as e:
        raise Unreachable(f"{role} {address} is unreachable: {e}") from None


# -- Kafka --------------------------------------------------------------------------------------
def _api_versions(sock: socket.socket, timeout: float, address: str) -> tuple[int, float]:
    """Send ApiVersions v0 on ``sock``; return how many APIs the broker lists and the round trip in
    ms, or raise Unreachable."""
    import kafka.errors as errors
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest
    from kafka.protocol.parser import KafkaProtocol

    not_kafka = f"bootstrap server {address} is not a Kafka broker"
    proto = KafkaProtocol(client_id=CLIENT_ID)
    proto.send_request(ApiVersionsRequest(version=0))
    t0 = time.monotonic()
    end = t0 + timeout
    try:
        sock.settimeout(timeout)
        sock.sendall(proto.send_bytes())
        while True:
            sock.settimeout(max(0.001, end - time.monotonic()))
            data = sock.recv(65536)
            if not data:
                raise Unreachable(
                    f"{not_kafka}: it closed the connection on a Kafka ApiVersions request "
                    "(not a plaintext Kafka 0.10+ listener)"
                )
            responses = proto.receive_bytes(data)
            if responses:
                response = responses[0][1]
                if response.error_code:
                    name = errors.for_code(response.error_code).__name__
                    raise Unreachable(
                        f"bootstrap server {address} refused a Kafka ApiVersions request: {name}"
                    )
                return len(response.api_keys), (time.monotonic() - t0) * 1000
    except TimeoutError:
        raise Unreachable(
            f"{not_kafka}: no reply to a Kafka ApiVersions request within {timeout:.1f}s"
        ) from None
    except errors.KafkaError as e:
        raise Unreachable(
            f"{not_kafka}: its reply to a Kafka ApiVersions request is not Kafka ({e})"
        ) from None
    except OSError as e:
        raise Unreachable(
            f"{not_kafka}: the connection failed during a Kafka ApiVersions request ({e.strerror or e})"
        ) from None


def _advertised(address: str, timeout: float, records: list[logging.LogRecord]) -> list[tuple[int, str, int]]:
    """Bootstrap a kafka-python client from ``address``; return the brokers its metadata lists."""
    import kafka.errors as errors
    from kafka.net import KafkaNetClient

    ms = int(timeout * 1000)
    client = KafkaNetClient(
        bootstrap_servers=[address],
        client_id=CLIENT_ID,
        request_timeout_ms=ms,
        socket_connection_setup_timeout_ms=ms,
        reconnect_backoff_ms=100,
        reconnect_backoff_max_ms=1000,
    )
    try:
        client.check_version(timeout_ms=ms)
        return [(b.node_id, b.host, b.port) for b in client.cluster.brokers()]
    except errors.KafkaError as e:
        raise Unreachable(
            f"bootstrap server {address} answers ApiVersions, but kafka-python could not bootstrap from it "
            f"within {timeout:.1f}s ({last_problem(records) or e})"
        ) from None
    finally:
        client.close()


def check_bootstrap(bootstrap: str, deadline: float) -> list[Probe]:
    """Check every address of ``bootstrap`` (see the module contract); client logs are captured."""
    addresses = split_hosts(bootstrap, KAFKA_DEFAULT_PORT, "bootstrap")
    with client_logs_captured() as records:
        return [_check_broker(host, port, deadline, records) for host, port in addresses]


def _check_broker(host: str, port: int, deadline: float, records: list[logging.LogRecord]) -> Probe:
    role = "bootstrap server"
    address = _address(host, port)
    with _connect(host, port, deadline, role) as sock:
        apis, rtt_ms = _api_versions(sock, _timeout(deadline, REQUEST_TIMEOUT_S, role, address), address)
    brokers = _advertised(address, _timeout(deadline, CLIENT_TIMEOUT_S, role, address), records)
    if not brokers:
        raise Unreachable(f"bootstrap server {address} answers, but its metadata lists no broker")
    for node, bhost, bport in brokers:
        try:
            _open(bhost, bport, _timeout(deadline, CONNECT_TIMEOUT_S, role, address)).close()
        except _NoConnection as e:
            raise Unreachable(
                f"bootstrap server {address} advertises broker {node} at {_address(bhost, bport)}, "
                f"which is unreachable from here: {e}"
            ) from None
    listed = ", ".join(f"{node}@{_address(h, p)}" for node, h, p in brokers)
    return Probe(
        role, address, f"Kafka broker: ApiVersions lists {apis} APIs ({rtt_ms:.0f} ms); brokers {listed}"
    )


# -- ZooKeeper ----------------------------------------------------------------------------------
def _srvr(sock: socket.socket, timeout: float, address: str) -> str:
    """Send ``srvr`` on ``sock``; return the first line of a ZooKeeper's reply, or raise Unreachable."""
    not_zk = f"ZooKeeper address {address} is not a ZooKeeper server"
    end = time.monotonic() + timeout
    chunks = []
    try:
        sock.settimeout(timeout)
        sock.sendall(b"srvr")
        sock.shutdown(socket.SHUT_WR)
        while data := sock.recv(65536):
            chunks.append(data)
            sock.settimeout(max(0.001, end - time.monotonic()))
    except TimeoutError:
        raise Unreachable(
            f"{not_zk}: no reply to the srvr four-letter command within {timeout:.1f}s"
        ) from None
    except OSError as e:
        raise Unreachable(
            f"{not_zk}: the connection failed on the srvr four-letter command ({e.strerror or e})"
        ) from None
    reply = b"".join(chunks).decode(errors="replace").strip()
    first = reply.splitlines()[0] if reply else ""
    if not reply:
        raise Unreachable(
            f"{not_zk}: it closed the connection on the srvr four-letter command without a reply"
        )
    if "not currently serving" in reply:
        raise Unreachable(f"ZooKeeper address {address} is not serving requests (srvr: {first})")
    if reply.startswith("Zookeeper version:"):
        return first.removeprefix("Zookeeper version:").split(",")[0].split("-")[0].strip()
    if "not in the whitelist" in reply or "not executed" in reply:
        return "version unknown (four-letter words not allowed)"
    raise Unreachable(f"{not_zk}: its reply to the srvr four-letter command is {first[:60]!r}")


def _session(connect: str, timeout: float, records: list[logging.LogRecord]) -> str:
    """Open and close a kazoo session on ``connect``; return what it found (session id, chroot)."""
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    zk = KazooClient(hosts=connect, timeout=10.0, connection_retry={"max_tries": -1, "max_delay": 1.0})
    try:
        with warnings.catch_warnings():  # kazoo warns on a missing chroot: said in the detail instead
            warnings.simplefilter("ignore")
            zk.start(timeout=timeout)
    except KazooTimeoutError:  # start() has stopped and closed the client
        problem = last_problem(records)
        raise Unreachable(
            f"ZooKeeper address {connect} answers srvr, but no kazoo session was established "
            f"within {timeout:.1f}s" + (f" ({problem})" if problem else "")
        ) from None
    try:
        session = zk.client_id
        detail = f"kazoo session 0x{session[0] if session else 0:x} opened and closed"
        if zk.chroot and zk.exists("/") is None:
            detail += f"; chroot {zk.chroot} does not exist yet"
        return detail
    finally:
        zk.stop()
        zk.close()


def check_zookeeper(connect: str, deadline: float) -> list[Probe]:
    """Check every host of the connect string ``connect``, then a session (see the module contract);
    client logs are captured."""
    role = "ZooKeeper address"
    probes = []
    for host, port in split_hosts(connect, ZOOKEEPER_DEFAULT_PORT, "zookeeper"):
        address = _address(host, port)
        with _connect(host, port, deadline, role) as sock:
            version = _srvr(sock, _timeout(deadline, REQUEST_TIMEOUT_S, role, address), address)
        probes.append(Probe(role, address, f"ZooKeeper {version}"))
    with client_logs_captured() as records:
        session = _session(connect, _timeout(deadline, CLIENT_TIMEOUT_S, role, connect), records)
    probes.append(Probe(role, connect, session))
    return probes


# -- client logs --------------------------------------------------------------------------------
class _Keep(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.NOTSET)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def client_logs_captured(names: tuple[str, ...] = CLIENT_LOGGERS) -> Iterator[list[logging.LogRecord]]:
    """Within the block, records of the ``names`` loggers go to the yielded list, not to any handler
    of their ancestors (the terminal); afterwards the loggers are as before."""
    records: list[logging.LogRecord] = []
    keep = _Keep(records)
    saved = []
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        logger.addHandler(keep)
        logger.propagate = False
    try:
        yield records
    finally:
        for logger, propagate in saved:
            logger.removeHandler(keep)
            logger.propagate = propagate


def last_problem(records: list[logging.LogRecord]) -> str:
    """The message of the last WARNING-or-worse record, on one line ('' when there is none)."""
    for record in reversed(records):
        if record.levelno >= logging.WARNING:
            return " ".join(record.getMessage().split())[:200]
    return ""
