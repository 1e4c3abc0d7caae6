"""A stand-in replication process for health/failover tests: ``python -m tests.integration.support.replicate``.

Runs, in one process until SIGTERM, what a ``connect-mirror-maker`` node would run for ``A->B``: the
MirrorSource task (Connect offsets in ``mm2-offsets.A.internal`` on B, as the driver stores them), the
A->B heartbeat task (into B's ``heartbeats``), the reverse B->A heartbeat task (into A's ``heartbeats``,
which the source task copies to ``A.heartbeats`` on B) and, with ``--groups``, the checkpoint task.
It is a separate process so that tests can SIGSTOP/SIGCONT it. Prints ``READY`` once every task runs.

Connector task configs are taken once at start (no reconfiguration), so topics and groups must exist
before it starts.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import ExitStack
from typing import Any

from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.task import SourceTask
from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.checkpoint.task import MirrorCheckpointTask
from mirror.heartbeat.connector import MirrorHeartbeatConnector
from mirror.heartbeat.task import MirrorHeartbeatTask
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.support.mm2 import flow_config, start_connector


def _start(stack: ExitStack, connector: SourceConnector, config: dict[str, str]) -> list[dict[str, str]]:
    start_connector(connector, config)
    stack.callback(connector.stop)
    return connector.task_configs(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--source-bootstrap", required=True)
    parser.add_argument("--target-bootstrap", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--groups", default=None)
    parser.add_argument("--heartbeat-interval", default="1")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    common = {"emit.heartbeats.interval.seconds": args.heartbeat_interval, "offset.lag.max": "10"}
    forward: dict[str, Any] = dict(source_alias=args.source, target_alias=args.target,
                                   source_bootstrap=args.source_bootstrap, target_bootstrap=args.target_bootstrap)
    with ExitStack() as stack:
        store = KafkaOffsetStore(f"mm2-offsets.{args.source}.internal",
                                 producer_config={"bootstrap.servers": args.target_bootstrap},
                                 consumer_config={"bootstrap.servers": args.target_bootstrap},
                                 admin_config={"bootstrap.servers": args.target_bootstrap},
                                 partitions=1, replication_factor=1)
        store.start()
        stack.callback(store.stop)
        runs: list[tuple[type[SourceTask], dict[str, str], str, str, KafkaOffsetStore | None]] = []
        # the reverse heartbeat connector first: it creates A's heartbeats topic, which the source
        # connector must see when it lists topics at start (no topic refresh during a test)
        reverse = flow_config(args.target, args.source, args.target_bootstrap, args.source_bootstrap,
                              name="MirrorHeartbeatConnector", overrides=common)
        for config in _start(stack, MirrorHeartbeatConnector(), reverse):
            runs.append((MirrorHeartbeatTask, config, args.source_bootstrap, "MirrorHeartbeatConnector", None))
        # Heartbeats must be replicated here whatever the topic filter says (MM2's default, KIP-1089):
        # the health figures are computed from the replicated heartbeats.
        source = flow_config(**forward, overrides={"topics": args.topics, "heartbeats.replication.enabled": "true",
                                                   **common})
        for config in _start(stack, MirrorSourceConnector(), source):
            runs.append((MirrorSourceTask, config, args.target_bootstrap, "MirrorSourceConnector", store))
        beat = flow_config(**forward, name="MirrorHeartbeatConnector", overrides=common)
        for config in _start(stack, MirrorHeartbeatConnector(), beat):
            runs.append((MirrorHeartbeatTask, config, args.target_bootstrap, "MirrorHeartbeatConnector", None))
        if args.groups:
            checkpoint = flow_config(**forward, name="MirrorCheckpointConnector",
                                     overrides={"topics": args.topics, "groups": args.groups,
                                                "emit.checkpoints.interval.seconds": "1",
                                                "refresh.groups.interval.seconds": "1", **common})
            for config in _start(stack, MirrorCheckpointConnector(), checkpoint):
                runs.append((MirrorCheckpointTask, config, args.target_bootstrap, "MirrorCheckpointConnector", None))
        for task, config, bootstrap, name, offsets in runs:
            stack.enter_context(run_source_task(task, config, bootstrap_servers=bootstrap, connector=name,
                                                offset_store=offsets))
        print("READY", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
