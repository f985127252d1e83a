"""Entry point of the Kafka stub image: cp-kafka's environment in, a herdlab broker out.

Like cp-kafka's ``/etc/confluent/docker/configure`` it refuses to start without
KAFKA_ZOOKEEPER_CONNECT and KAFKA_ADVERTISED_LISTENERS, and it turns KAFKA_* variables into broker
settings. It prints every KAFKA_* variable first (``stub-env NAME=VALUE`` lines) so tests can assert
what the containers backend passed. Settings it cannot map are an error (exit 3).
"""

import os
import sys

required = ("KAFKA_ZOOKEEPER_CONNECT", "KAFKA_ADVERTISED_LISTENERS", "KAFKA_LISTENERS", "KAFKA_BROKER_ID")
for name in required:
    if not os.environ.get(name):
        print(f"stub: {name} is required", flush=True)
        sys.exit(1)
env = {k: v for k, v in os.environ.items() if k.startswith("KAFKA_")}
for k in sorted(env):
    print(f"stub-env {k}={env[k]}", flush=True)
listener = env["KAFKA_LISTENERS"]
assert listener.startswith("PLAINTEXT://"), listener
host, _, port = listener[len("PLAINTEXT://") :].rpartition(":")
argv = ["python", "-m", "coordinator", "--host", host, "--port", port, "--broker-id", env["KAFKA_BROKER_ID"]]
argv += ["--zookeeper", env["KAFKA_ZOOKEEPER_CONNECT"], "--data-dir", "/tmp/kafka-data"]
flags = {
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "--group-initial-rebalance-delay-ms",
    "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "--group-min-session-timeout-ms",
    "KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "--group-max-session-timeout-ms",
}
ignored = {
    "KAFKA_ZOOKEEPER_CONNECT",
    "KAFKA_ADVERTISED_LISTENERS",
    "KAFKA_LISTENERS",
    "KAFKA_BROKER_ID",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
    "KAFKA_HEAP_OPTS",
}
for k, v in env.items():
    if k in flags:
        argv += [flags[k], v]
    elif k == "KAFKA_AUTO_CREATE_TOPICS_ENABLE":
        if v == "false":
            argv.append("--no-auto-create-topics")
    elif k not in ignored:
        print(f"stub: cannot map {k}", flush=True)
        sys.exit(3)
print("stub-exec " + " ".join(argv), flush=True)
os.execvp(argv[0], argv)
