"""One Connect group member in its own process, for tests/integration/test_kafka_membership.py.

    python -m tests.integration.support.group_member BOOTSTRAP GROUP URL WORK_JSON SESSION_MS DELAY_MS RELEASED_DIR

``WORK_JSON`` is ``{"connector": task count}``: the config snapshot every member is given. The member
plays a herder that applies assignments instantly and prints one JSON line per assignment on stdout:
``{"url", "member", "generation", "leader", "leader_url", "connectors", "tasks": [[c, i]...]}``.
SIGTERM: stop everything, LeaveGroup, exit 0 (a graceful worker shutdown). SIGKILL is the crash.

A herder tells the leader which work it stopped cleanly through the status topic (UNASSIGNED, see
``released_work`` in connect_runtime/runtime/distributed/assembly.py); this stand-in has no status store, so on
SIGTERM it writes the work it stops to a file in ``RELEASED_DIR`` before leaving, and the leader reads every
member's file. A SIGKILLed member writes nothing: its work counts as crashed, as a killed herder's would.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import ConnectorsAndTasks
from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership
from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.storage.config_topic_state import ClusterConfigState


def snapshot(work: dict[str, int], offset: int = 7) -> ClusterConfigState:
    return ClusterConfigState(
        offset=offset, connector_configs={c: {"name": c} for c in work}, task_counts=dict(work),
        task_configs={ConnectorTaskId(c, i): {"task": str(i)} for c, n in work.items() for i in range(n)})


def emit(membership: KafkaGroupMembership, url: str, assignment: Assignment) -> None:
    line = {"url": url, "member": membership.member_id, "generation": assignment.generation,
            "leader": assignment.leader, "leader_url": assignment.leader_url,
            "connectors": sorted(assignment.connectors),
            "tasks": [[t.connector, t.task] for t in sorted(assignment.tasks)]}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def released_in(directory: Path) -> ConnectorsAndTasks:
    """What members that left cleanly had stopped (the stand-in for UNASSIGNED statuses)."""
    released = ConnectorsAndTasks()
    for path in directory.glob("*.json"):
        data = json.loads(path.read_text())
        released = released | ConnectorsAndTasks.of(data["connectors"],
                                                     (ConnectorTaskId(c, i) for c, i in data["tasks"]))
    return released


def main(argv: list[str]) -> int:
    bootstrap, group, url, work_json, session_ms, delay_ms, released_dir = argv
    released = Path(released_dir)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    stop = threading.Event()
    wake = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.set()
        wake.set()

    signal.signal(signal.SIGTERM, on_term)
    config = snapshot(json.loads(work_json))
    # Tansu holds every JoinGroup for session.timeout.ms / 2 (docs/tansu.md): short sessions in tests.
    membership = KafkaGroupMembership(group, url, {"bootstrap_servers": bootstrap, "client_id": url},
                                      session_timeout_ms=int(session_ms), heartbeat_interval_ms=1000,
                                      rebalance_timeout_ms=int(session_ms),
                                      scheduled_rebalance_max_delay_ms=int(delay_ms), notify=wake.set,
                                      released_work=lambda work: released_in(released) & work)
    current = membership.join(config, timeout_s=60)
    emit(membership, url, current)
    while not stop.is_set():
        # As DistributedHerder does: poll without blocking, then idle up to 1 s unless notified.
        assignment = membership.poll(config, timeout_s=0.0)
        if assignment is not None:
            current = assignment
            emit(membership, url, assignment)
        wake.wait(1.0)
        wake.clear()
    (released / (membership.member_id.replace("/", "_") + ".json")).write_text(json.dumps(
        {"connectors": sorted(current.connectors), "tasks": [[t.connector, t.task] for t in current.tasks]}))
    membership.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
