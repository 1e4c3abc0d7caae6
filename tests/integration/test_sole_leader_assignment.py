"""A leader that is its group's only member assigns new work without a rebalance, on a real broker.

Two members in this process, each polled by its own thread as a herder's tick thread does. Tansu holds
every JoinGroup for session.timeout.ms / 2 (docs/tansu.md): the members use a 6 s session, so a real
rebalance takes ~3 s and the sole leader's local round must not (its generation must not change
either: a JoinGroup round would bump it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership
from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.storage.config_topic_state import ClusterConfigState
from tests.conftest import Cluster
from tests.support.kafka import unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def snapshot(work: dict[str, int], offset: int) -> ClusterConfigState:
    return ClusterConfigState(
        offset=offset, connector_configs={c: {"name": c} for c in work}, task_counts=dict(work),
        task_configs={ConnectorTaskId(c, i): {} for c, n in work.items() for i in range(n)})


class Polled:
    """One member, polled every 0.1 s by its own thread with the config snapshot of the moment."""

    def __init__(self, cluster: Cluster, group: str, name: str, config: ClusterConfigState) -> None:
        self.membership = KafkaGroupMembership(
            group, f"http://{name}:8083/", {"bootstrap_servers": cluster.bootstrap, "client_id": name},
            session_timeout_ms=6000, heartbeat_interval_ms=1000, rebalance_timeout_ms=6000)
        self.config = config
        self.assignments: list[Assignment] = []
        self._work_changed = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.assignments.append(self.membership.join(self.config, 60))
        while not self._stop.is_set():
            with self._lock:
                config, changed, self._work_changed = self.config, self._work_changed, False
            if changed:
                self.membership.request_rebalance(work_changed=True)
            result = self.membership.poll(config, 0.1)
            if result is not None:
                self.assignments.append(result)

    def configure(self, config: ClusterConfigState) -> None:
        """What the herder does when the config topic adds work: a new snapshot, then a rebalance request."""
        with self._lock:
            self.config, self._work_changed = config, True

    @property
    def latest(self) -> Assignment | None:
        return self.assignments[-1] if self.assignments else None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.membership.leave()


@pytest.fixture
def members() -> Iterator[list[Polled]]:
    started: list[Polled] = []
    yield started
    for member in started:
        member.close()


def test_a_sole_leader_assigns_new_work_at_once_and_a_joining_member_gets_its_share(
        cluster_a: Cluster, members: list[Polled]) -> None:
    group = unique("sole-leader")
    a = Polled(cluster_a, group, "a", snapshot({}, offset=1))
    members.append(a)
    first = wait_until(lambda: a.latest, 30, "member a never joined")
    assert first.leader and not first.connectors and not first.tasks

    # Connectors, then their tasks, as at every start-up: each assigned in one poll, same generation.
    began = time.monotonic()
    a.configure(snapshot({"c": 0}, offset=2))
    connectors = wait_until(lambda: a.latest if a.latest and a.latest.connectors else None, 10,
                            "connector never assigned")
    a.configure(snapshot({"c": 2}, offset=4))
    tasks = wait_until(lambda: a.latest if a.latest and a.latest.tasks else None, 10, "tasks never assigned")
    took = time.monotonic() - began
    assert connectors.generation == tasks.generation == first.generation, "a JoinGroup round was run"
    assert tasks.connectors == {"c"} and tasks.tasks == {ConnectorTaskId("c", 0), ConnectorTaskId("c", 1)}
    assert took < 2.5, f"took {took:.1f} s: as long as a JoinGroup on this broker (3 s)"

    # A second member: a real rebalance; the leader reports the work as owned and the assignor moves
    # only the excess (two rounds: revoke, then assign), never running a task on both.
    b = Polled(cluster_a, group, "b", snapshot({"c": 2}, offset=4))
    members.append(b)

    def split() -> tuple[Assignment, Assignment] | None:
        la, lb = a.latest, b.latest
        if la is None or lb is None or la.generation != lb.generation:
            return None
        if len(la.tasks) != 1 or len(lb.tasks) != 1:
            return None
        return la, lb

    la, lb = wait_until(split, 40, "the work was never split between the two members")
    assert la.generation > first.generation
    assert la.tasks | lb.tasks == {ConnectorTaskId("c", 0), ConnectorTaskId("c", 1)}
    assert not la.tasks & lb.tasks
    assert (la.connectors | lb.connectors) == {"c"}

    # With two members, new work goes through a real rebalance (the generation grows).
    generation = la.generation
    a.configure(snapshot({"c": 2, "d": 0}, offset=5))
    b.configure(snapshot({"c": 2, "d": 0}, offset=5))

    def d_assigned() -> int | None:
        for member in (a, b):
            latest = member.latest
            if latest is not None and "d" in latest.connectors:
                return latest.generation
        return None

    assert wait_until(d_assigned, 30, "connector d never assigned") > generation
