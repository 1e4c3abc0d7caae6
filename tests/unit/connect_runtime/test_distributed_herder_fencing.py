"""DistributedHerder in a multi-worker group, without sockets: leader fencing of config writes, KIP-618
zombie fencing, restarts forwarded to the owner, and the assembly's notify relay.

The transactional writer is replaced by a fake with the coordinator's one rule that matters here:
initialising a transactional id fences every earlier writer of that id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from connect_runtime.api.errors import ConflictError, ConnectError, NotAssignedError, NotLeaderError
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.runtime.coordination.membership import Assignment, SoleMember
from connect_runtime.runtime.distributed.assembly import WakeupRelay
from connect_runtime.runtime.distributed.distributed_herder import DistributedHerder
from connect_runtime.runtime.herder import ConnectorOffset
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.request_signing import new_session_key
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.storage.config_records import SessionKey
from connect_runtime.storage.config_store import KafkaConfigStore, WritePrivilegesError
from connect_runtime.storage.fenced_writer import FencedError
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore, Status
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.herder_fakes import FakeBroker, FakeWorker
from tests.unit.connect_runtime.test_distributed_herder import DemoConnector, config, running_tasks


class FakeTransactionalWriter:
    """Writes through a FakeLog; a newer writer of the same id fences this one (epoch bump)."""

    epochs: dict[str, int] = {}

    def __init__(self, broker: FakeBroker, topic: str, transactional_id: str) -> None:
        self.topic, self.transactional_id, self._broker = topic, transactional_id, broker
        self.epoch = self.epochs.get(transactional_id, 0) + 1
        self.epochs[transactional_id] = self.epoch
        self._log = broker.log_factory(topic, consumed=lambda _r: None)

    @property
    def fenced(self) -> bool:
        return self.epochs[self.transactional_id] != self.epoch

    def write(self, records: Sequence[tuple[bytes, bytes | None]], timeout_s: float = 30.0) -> int | None:
        if self.fenced:
            raise FencedError("fenced")
        return max(self._log.send_sync(key, value).offset for key, value in records)

    def close(self) -> None:
        pass


class Member(SoleMember):
    """A sole member that counts rebalance requests."""

    def __init__(self) -> None:
        super().__init__("http://w1:8083")
        self.rebalances = 0

    def request_rebalance(self, work_changed: bool = False) -> None:
        self.rebalances += 1


class Cluster:
    def __init__(self, membership: Any = None, group: str = "g", exactly_once: bool = False) -> None:
        self.broker = FakeBroker()
        clients: dict[str, Any] = {"producer_config": {}, "consumer_config": {}, "admin_config": {},
                                   "log_factory": self.broker.log_factory}
        self.status_store = KafkaStatusStore("status", **clients)
        self.config_store = self.fenced_store(group)
        self.fenced: list[list[str]] = []
        self.offsets = MemoryOffsetStore()  # the worker writes what the herder reads, as in one process
        plugins = Plugins()
        plugins.register("DemoConnector", DemoConnector)
        self.worker = FakeWorker(StatusWriter(self.status_store, "w1:8083"), self.offsets, plugins)
        self.membership = membership or Member()
        self.herder = DistributedHerder(
            worker_id="w1:8083", worker=self.worker, plugins=plugins, config_store=self.config_store,
            status_store=self.status_store, offset_store=self.offsets, membership=self.membership,
            status_writer=StatusWriter(self.status_store, "w1:8083"), request_timeout_s=10, group_id=group,
            fence_producers=self.fenced.append, exactly_once=exactly_once)

    def fenced_store(self, group: str) -> KafkaConfigStore:
        broker = self.broker

        def writer(topic: str, _producer: Mapping[str, Any], tid: str, _timeout: float) -> Any:
            return FakeTransactionalWriter(broker, topic, tid)

        return KafkaConfigStore("configs", producer_config={}, consumer_config={}, admin_config={},
                                log_factory=broker.log_factory, leader_transactional_id=f"connect-cluster-{group}",
                                writer_factory=writer)

    def keys(self) -> list[bytes | None]:
        return [r.key for r in self.broker.topics.get("configs", [])]


@pytest.fixture
def cluster() -> Any:
    c = Cluster()
    c.herder.start()
    assert c.herder.wait_until_ready(10)
    yield c
    c.herder.stop(10)


def test_unclaimed_store_refuses_writes() -> None:
    c = Cluster()
    c.config_store.start()
    with pytest.raises(WritePrivilegesError):
        c.config_store.put_target_state("x", TargetState.PAUSED)
    assert c.keys() == []


def test_a_newer_leader_fences_this_one(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(tasks=1), allow_replace=False)
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 5, "task running")
    written = len(cluster.keys())

    # Another worker becomes the leader and claims the config topic.
    newer = cluster.fenced_store("g")
    newer.start()
    newer.claim_write_privileges()

    with pytest.raises(NotLeaderError):
        cluster.herder.pause_connector("demo")
    assert len(cluster.keys()) == written, "the stale leader wrote nothing"
    assert cluster.membership.rebalances >= 1, "a fenced leader asks the group for a new assignment"
    with pytest.raises(NotLeaderError):  # no re-claim until an assignment says leader again
        cluster.herder.resume_connector("demo")
    newer.put_target_state("demo", TargetState.PAUSED)  # the new leader writes fine
    assert newer.snapshot().target_state("demo") is TargetState.PAUSED


def test_fence_zombies_fences_previous_and_current_task_ids_then_records_the_count(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": str(i)} for i in range(3)]
    cluster.herder.put_connector_config("demo", config(tasks=3), allow_replace=False)
    wait_until(lambda: len(running_tasks(cluster)) == 3, 5, "3 tasks")
    cluster.herder.fence_zombies("demo")
    assert cluster.fenced == [["g-demo-0", "g-demo-1", "g-demo-2"]]
    assert cluster.config_store.snapshot().task_count_records == {"demo": 3}

    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(tasks=1), allow_replace=True)
    wait_until(lambda: len(running_tasks(cluster)) == 1, 5, "1 task")
    cluster.herder.fence_zombies("demo")
    assert cluster.fenced[-1] == ["g-demo-0", "g-demo-1", "g-demo-2"], "the previous generation's ids too"
    assert cluster.config_store.snapshot().task_count_records == {"demo": 1}


def test_with_exactly_once_a_new_task_generation_starts_only_after_the_old_one_was_fenced() -> None:
    """Changing tasks.max (3 -> 1): the leader fences the ids of both generations and records the new
    count before task 0 of the new generation starts (docs/exactly-once.md)."""
    c = Cluster(exactly_once=True)
    started_when: list[list[list[str]]] = []
    start = c.worker.start_task

    def recording_start(task: ConnectorTaskId, *args: Any, **kwargs: Any) -> Any:
        started_when.append(list(c.fenced))
        return start(task, *args, **kwargs)

    c.worker.start_task = recording_start  # type: ignore[method-assign]
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        c.worker.task_configs["demo"] = [{"task": str(i)} for i in range(3)]
        c.herder.put_connector_config("demo", config(tasks=3), allow_replace=False)
        wait_until(lambda: len(running_tasks(c)) == 3, 5, "3 tasks")
        assert c.fenced == [["g-demo-0", "g-demo-1", "g-demo-2"]]  # first generation: its own ids
        assert all(fenced for fenced in started_when), "no task started before its generation was fenced"
        c.worker.task_configs["demo"] = [{"task": "0"}]
        c.herder.put_connector_config("demo", config(tasks=1), allow_replace=True)
        wait_until(lambda: c.config_store.snapshot().task_count_records == {"demo": 1}, 5, "the new count recorded")
        wait_until(lambda: running_tasks(c) == {ConnectorTaskId("demo", 0)}, 5, "1 task")
        assert c.fenced[-1] == ["g-demo-0", "g-demo-1", "g-demo-2"], "the previous generation's ids too"
        assert started_when[-1] == c.fenced, "task 0 of the new generation started after the fencing"
    finally:
        c.herder.stop(10)


def test_a_failed_fencing_keeps_the_new_tasks_waiting_and_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    from connect_runtime.runtime.leader import generation_fencing

    monkeypatch.setattr(generation_fencing, "RETRY_S", 1.0)
    c = Cluster(exactly_once=True)
    attempts: list[list[str]] = []

    def flaky(ids: list[str]) -> None:
        attempts.append(ids)
        if len(attempts) == 1:
            raise ConnectError("the cluster refused InitProducerId")

    c.herder._leader._fence_producers = flaky
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        c.worker.task_configs["demo"] = [{"task": "0"}]
        c.herder.put_connector_config("demo", config(tasks=1), allow_replace=False)
        wait_until(lambda: attempts, 5, "a first fencing attempt")
        assert not running_tasks(c), "no task of an unfenced generation runs"
        wait_until(lambda: running_tasks(c) == {ConnectorTaskId("demo", 0)}, 5, "the task, after the retry")
        assert len(attempts) == 2
    finally:
        c.herder.stop(10)


class NothingHere:
    """A follower assigned nothing (the connector and its tasks run on other workers)."""

    def join(self, snapshot: Any, timeout_s: float) -> Assignment:
        return Assignment.of(1, False, "http://leader:8083", (), ())

    def poll(self, snapshot: Any, timeout_s: float) -> Assignment | None:
        return None

    def request_rebalance(self, work_changed: bool = False) -> None: ...

    def wakeup(self) -> None: ...

    def leave(self) -> None: ...


def test_restarts_of_work_owned_elsewhere_name_the_owner() -> None:
    c = Cluster(NothingHere())
    leader = c.fenced_store("g")
    leader.start()
    leader.claim_write_privileges()
    leader.put_connector_config("demo", config(tasks=2))
    leader.put_task_configs("demo", [{"task": "0"}, {"task": "1"}])
    c.status_store.start()
    c.status_store.put(Status("demo", State.RUNNING, "10.0.0.7:8083", 1))
    c.status_store.put(Status("demo", State.RUNNING, "10.0.0.8:8084", 1, task=1))
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        with pytest.raises(NotAssignedError) as err:
            c.herder.restart_connector("demo", include_tasks=False, only_failed=False)
        assert err.value.target_url == "http://10.0.0.7:8083"
        with pytest.raises(NotAssignedError) as err:
            c.herder.restart_task(ConnectorTaskId("demo", 1))
        assert err.value.target_url == "http://10.0.0.8:8084"
        with pytest.raises(NotAssignedError) as err:  # no status yet: the leader knows the assignment
            c.herder.restart_task(ConnectorTaskId("demo", 0))
        assert err.value.target_url == "http://leader:8083"
        with pytest.raises(NotLeaderError):  # pause is a config write: leader only, forwarded by REST
            c.herder.pause_connector("demo")
        # a Java MirrorMaker node's worker id: its REST server has no restart endpoint to forward to
        c.status_store.put(Status("demo", State.RUNNING, "10.0.0.9:8085/A->B", 2, task=1))
        wait_until(lambda: (s := c.status_store.get_task("demo", 1)) is not None and s.generation == 2, 10,
                   "the status")
        with pytest.raises(ConflictError, match=r"task 1 of connector demo here: it runs on worker "
                                                r"10\.0\.0\.9:8085/A->B, a Java MirrorMaker node.*includeTasks=true"):
            c.herder.restart_task(ConnectorTaskId("demo", 1))
    finally:
        c.herder.stop(10)


def test_wakeup_relay_reaches_the_herder_set_after_the_membership() -> None:
    relay = WakeupRelay()
    relay()  # before the herder exists: dropped, harmless

    class Herder:
        woken = 0

        def wakeup(self) -> None:
            self.woken += 1

    herder = Herder()
    relay.target = herder  # type: ignore[assignment]
    relay()
    assert herder.woken == 1


def test_build_herder_hands_the_membership_a_notify_that_wakes_the_herder() -> None:
    from prometheus_client import CollectorRegistry

    from connect_runtime.runtime import worker_config as wc
    from connect_runtime.runtime.distributed.assembly import build_herder

    config = wc.DistributedWorkerConfig({
        "bootstrap.servers": "localhost:1", "group.id": "g1", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s"})
    captured: list[Any] = []

    def membership(_config: Any, url: str, status_store: Any, notify: Any, _registry: Any) -> Any:
        captured.append(notify)
        return SoleMember(url, status_store.max_generation)

    herder = build_herder(config, DistributedHerder, worker_id="h:1", advertised_url="http://h:1", plugins=Plugins(),
                          registry=CollectorRegistry(), providers={}, membership=membership)
    woken: list[bool] = []
    herder.wakeup = lambda: woken.append(True)  # type: ignore[method-assign]
    captured[0]()
    assert woken == [True]


class TaskZeroHere(NothingHere):
    """A follower assigned task 0 of ``demo`` (the connector runs on the leader)."""

    def join(self, snapshot: Any, timeout_s: float) -> Assignment:
        return Assignment.of(1, False, "http://leader:8083", (), (ConnectorTaskId("demo", 0),))


class FencingRequests(TaskConfigForwarder):
    """The real forwarder (its thread) with the HTTP PUT replaced by a record of it; answers as told."""

    def __init__(self) -> None:
        super().__init__(timeout_s=1.0)
        self.asked: list[tuple[str, str, bytes]] = []
        self.refuse = True
        self.answered = 0

    def send_fencing(self, leader_url: str, connector: str, session_key: SessionKey) -> None:
        self.asked.append((leader_url, connector, session_key.key))
        if self.refuse:
            raise ConnectError("HTTP 503")

    def fence(self, leader_url: str, connector: str, session_key: SessionKey,
              on_done: Callable[[ConnectError | None], None]) -> None:
        def done(error: ConnectError | None) -> None:
            on_done(error)
            self.answered += 1

        super().fence(leader_url, connector, session_key, done)


def test_a_follower_asks_the_leader_to_fence_and_starts_its_task_once_the_record_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """KIP-618's round trip: a follower's task of an unfenced generation waits; the follower sends the
    leader a signed PUT .../fence (retried after a failure) and starts the task when the leader's
    tasks-fencing record arrives."""
    from connect_runtime.runtime.leader import generation_fencing

    monkeypatch.setattr(generation_fencing, "RETRY_S", 0.5)
    requests = FencingRequests()
    c = Cluster(TaskZeroHere(), exactly_once=True)
    c.herder._forwarder = requests
    c.herder._fencing._forwarder = requests
    leader = c.fenced_store("g")
    leader.start()
    leader.claim_write_privileges()
    key = new_session_key(0)
    leader.put_session_key(key)
    leader.put_connector_config("demo", config(tasks=1))
    leader.put_task_configs("demo", [{"task": "0"}])
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        wait_until(lambda: len(requests.asked) >= 2, 10, "a request, then a retry after the refusal")
        assert requests.asked[0] == ("http://leader:8083", "demo", key.key)
        assert not running_tasks(c), "no task of an unfenced generation runs"
        monkeypatch.setattr(generation_fencing, "RETRY_S", 30.0)  # the next generation must not wait for it
        answered = requests.answered
        wait_until(lambda: requests.answered > answered, 5, "a refusal answered after the change")
        requests.refuse = False
        leader.put_task_count_record("demo", 1)  # what the leader writes after fencing
        wait_until(lambda: running_tasks(c) == {ConnectorTaskId("demo", 0)}, 10, "the task, after the fencing")
        asked = len(requests.asked)
        leader.put_task_configs("demo", [{"task": "0", "v": "2"}])  # a new generation, same count: fenced again
        wait_until(lambda: len(requests.asked) > asked, 5, "a request for the new generation, at once")
        assert requests.asked[-1][1] == "demo"
    finally:
        c.herder.stop(10)


class TaskZeroUntilRevoked(TaskZeroHere):
    """Task 0 of ``demo`` here until the test hands the herder the next assignment (``revoke``)."""

    def __init__(self) -> None:
        self.next: Assignment | None = None

    def poll(self, snapshot: Any, timeout_s: float) -> Assignment | None:
        assignment, self.next = self.next, None
        return assignment

    def revoke(self) -> None:
        self.next = Assignment.of(2, False, "http://leader:8083", (), ())


def test_an_exactly_once_task_goes_on_once_its_producer_is_up_only_if_its_generation_is_the_newest_and_its_here(
        ) -> None:
    """Java's verifyTaskGenerationAndOwnership. The leader fences a new generation's transactional ids once, before
    that generation's tasks start. A task of the previous generation whose init_transactions came after that
    fencing holds an unfenced epoch and would copy partitions that the new generation's tasks copy too. So each
    task starts with a check that it runs once its producer is up: the config topic read to its end, the task's
    generation still the newest and the task still assigned here, or it fails before producing."""
    membership = TaskZeroUntilRevoked()
    c = Cluster(membership, exactly_once=True)
    leader = c.fenced_store("g")
    leader.start()
    leader.claim_write_privileges()
    leader.put_connector_config("demo", config(tasks=1))
    leader.put_task_configs("demo", [{"task": "0"}])
    leader.put_task_count_record("demo", 1)
    task = ConnectorTaskId("demo", 0)
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        wait_until(lambda: running_tasks(c) == {task}, 10, "task 0 of the first generation")
        first = c.worker.post_producer_checks[task]
        assert first is not None
        first()  # the newest generation, assigned here: it may produce
        # The leader writes the next generation and fences it; this task's producer came up only after that.
        leader.put_task_configs("demo", [{"task": "0", "v": "2"}])
        leader.put_task_count_record("demo", 1)
        with pytest.raises(ConnectError, match="new set of task configs"):
            first()
        wait_until(lambda: c.worker.post_producer_checks[task] is not first, 10, "task 0 of the second generation")
        second = c.worker.post_producer_checks[task]
        assert second is not None
        second()
        membership.revoke()
        c.herder.wakeup()
        wait_until(lambda: not running_tasks(c), 10, "task 0 revoked")
        with pytest.raises(ConnectError, match="revoked from this worker"):
            second()
    finally:
        c.herder.stop(10)


def test_without_exactly_once_tasks_start_with_nothing_to_check(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(tasks=1), allow_replace=False)
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 5, "task running")
    assert cluster.worker.post_producer_checks == {ConnectorTaskId("demo", 0): None}


def test_the_leader_serves_a_fencing_request_only_while_the_generation_is_pending(cluster: Cluster) -> None:
    """A follower's request that arrives after the leader fenced must not fence again: that would fence
    the new generation's running tasks."""
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}]
    cluster.herder.put_connector_config("demo", config(tasks=2), allow_replace=False)
    wait_until(lambda: len(running_tasks(cluster)) == 2, 5, "2 tasks")
    cluster.herder.fence_zombies("demo")
    assert cluster.fenced == [["g-demo-0", "g-demo-1"]]
    cluster.herder.fence_zombies("demo")  # the generation is fenced: nothing to do
    assert cluster.fenced == [["g-demo-0", "g-demo-1"]]
    assert "demo" not in cluster.config_store.snapshot().pending_fencing


def test_with_exactly_once_offsets_change_only_after_the_tasks_were_fenced() -> None:
    """KIP-875 under exactly-once (docs/exactly-once.md): before a stopped source connector's offsets are
    altered or reset, the ids of its last task generation are fenced (a zombie could still commit offsets
    over the new ones); a failed fencing writes no offset."""
    c = Cluster(exactly_once=True)
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        c.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}]
        c.herder.put_connector_config("demo", config(tasks=2), allow_replace=False)
        wait_until(lambda: len(running_tasks(c)) == 2, 5, "2 tasks")
        c.herder.stop_connector("demo")
        fenced = len(c.fenced)
        offsets = [ConnectorOffset({"task": 0}, {"seq": 41})]

        def refuse(ids: list[str]) -> None:
            raise ConnectError("the cluster refused InitProducerId")

        c.herder._leader._fence_producers = refuse
        with pytest.raises(ConnectError, match="refused InitProducerId"):
            c.herder.alter_connector_offsets("demo", offsets)
        assert c.herder.connector_offsets("demo") == [], "no offset written without the fencing"
        c.herder._leader._fence_producers = c.fenced.append
        c.herder.alter_connector_offsets("demo", offsets)
        assert c.fenced[fenced:] == [["g-demo-0", "g-demo-1"]]
        assert [(o.partition, o.offset) for o in c.herder.connector_offsets("demo")] == [({"task": 0}, {"seq": 41})]
    finally:
        c.herder.stop(10)
