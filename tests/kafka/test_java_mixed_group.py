"""A Java MirrorMaker 2 fleet replaced node by node by ours, with the Java user's own file and command line.

Each node of a three-node Java fleet (MirrorMaker 4.3.1, tests/support/java_mm2.py, on Apache Kafka 4.4)
runs the plain file a Java user with several nodes has: ``clusters``, the two bootstrap lists,
``A->B.enabled = true``, ``A->B.topics``, ``tasks.max = 4``, replication factors for one-broker clusters,
``dedicated.mode.enable.internal.rest = true`` and its own ``listeners`` line; no ``connect.protocol``, no
``configs.topic.compatibility``, no ``--clusters``. So every node runs two herders: A->B in group ``A-mm2`` on
B, and the heartbeat-only B->A in group ``B-mm2`` on A. Its nodes are replaced one by one by ours, started the
same way (``connect-mirror-maker node.properties``), and then one step is rolled back (ours replaced by a Java
node again). Each step stops a node and starts the new one right after; the node stopped is the group's leader
while a Java node leads it, else any Java node (:func:`_slot` says why). Under a steady load of 300 records/s
over 4 partitions:

* ``test_a_java_fleet_is_replaced_node_by_node_and_one_step_rolled_back``: every stop is a SIGTERM. Nothing is
  lost, no step copies more than :data:`IN_FLIGHT` records twice (what a clean stop leaves in flight, below),
  no partition waits more than :data:`GAP_LIMIT_S` for its next record, Java and ours run the flow's tasks in
  one group, no node logs INCONSISTENT_GROUP_PROTOCOL, no Java node logs an ERROR other than those listed in
  :data:`EXPECTED_JAVA_ERRORS` (each with why), and each of our nodes exits within :data:`EXIT_LIMIT_S` of
  SIGTERM.
* ``test_exactly_once_fleet_with_the_leader_killed``: the same file with ``B.exactly.once.source.support =
  enabled`` (and ``plugin.discovery = service_load`` for Java's start, which Java's own log suggests); the
  group's leader is killed (kill -9) at the first step (a Java node) and at the last (one of
  ours, all nodes being ours then, replaced by a Java node: a rollback), the steps between are SIGTERMs.
  A plain read_committed consumer of the target sees every record exactly once: 0 duplicates, Java's and our
  source tasks writing in transactions side by side, fenced across kinds. One exception, Java's own: against
  this Kafka 4.4 broker a Java 4.3.1 source task sometimes commits a transaction holding records without their
  source offsets and logs that its offset flush failed; the next instance of that Java task copies those records
  again, nothing of ours taking part. A run of duplicates is excused, printed with its evidence, only when a Java
  node held the partition at both copies, no committed source offset covered the first copy, and a Java node
  logged that flush error before the second copy (:mod:`tests.kafka.java_own_duplicates`); those flush errors
  are then the only Java ERROR lines it excuses, with one more of Java's own: a Java task's producer asking to
  commit a transaction that the broker had already committed, which the broker refuses (INVALID_TXN_STATE,
  logged by the broker for that transactional id) and Java answers by killing the task
  (:func:`_without_javas_second_commits`). The rule cannot excuse a duplicate one of our nodes wrote.
  With the REST API opened to state changes (``rest.mutations.allow.unauthenticated``, which Java ignores), a
  restart request sent to our node for a task a Java node runs is answered 409 naming the Java worker and what
  restarts it instead (a Java MirrorMaker serves no restart endpoint to forward it to), and the task runs on.
  The source connector moving from one kind to the other deals its tasks the same partitions again in no new
  task generation (:func:`_redealt_generations`): under exactly-once that would fence the tasks running on the
  other kind.

Both print a per-step timeline (``-s``). A step over its duplicate bound (or any duplicate under exactly-once) keeps
``duplicates.json`` beside the nodes' logs and summarises it in the failure message: which records came twice, in
which step, at which target offsets, under which task generation, task and worker, and which source offsets were
committed meanwhile (:mod:`tests.kafka.duplicate_forensics`).

The duplicate bound. With the plain file offsets are committed every ``offset.flush.interval.ms`` (60 s by
default), and a clean stop, Java's or ours, commits the offsets of every record the target acknowledged before
the task lets go. So a step copies again only what was in flight at that commit: records the stopping task had
sent but whose acknowledgement it had not seen, a few milliseconds of load on loopback; :data:`IN_FLIGHT` allows
one second of it per step. A stop that skipped its final commit would copy again everything since the last
periodic one, up to 60 s of load (18,000 records): far above the bound. The one exception is Java's own: a Java
node whose shutdown hangs on SIGTERM (a race of two shutdown hooks inside Java's MirrorMaker, whatever ours
did; :func:`_stop`) is killed after :data:`JAVA_EXIT_S`, as a service manager would, and that step is held to a
kill's bound, :data:`KILLED_JAVA`; the timeline says so.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mirror.local.broker import free_port
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.conftest import Stoppable
from tests.kafka.duplicate_forensics import Flow, Kept, explain
from tests.kafka.java_own_duplicates import Attribution, LoggedError, attribute
from tests.support.apache_kafka import KafkaBroker
from tests.support.chaos import LoadGenerator, decode
from tests.support.java_mm2 import JavaMirrorMaker, run_status_probe
from tests.support.kafka import consume_all, create_topic, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow, pytest.mark.flaky(reruns=0)]

PARTITIONS = 4
TASKS = 4
RATE_PER_S = 300.0
#: One second of load per step: what a clean stop may leave in flight (module docstring).
IN_FLIGHT = int(RATE_PER_S)
#: No partition waits longer than this for its next record.
GAP_LIMIT_S = 60.0
#: Each of our nodes exits within this many seconds of SIGTERM.
EXIT_LIMIT_S = 30.0
#: How long a Java node may take to exit on SIGTERM before the step kills it: Java's own shutdown can hang
#: (:func:`_stop`). Its tasks run on meanwhile, so nothing waits for it.
JAVA_EXIT_S = 30.0
#: The duplicate bound of a step whose Java node hung and was killed: a kill, not a clean stop, copies again what
#: followed its tasks' last periodic offset commit, ``offset.flush.interval.ms`` (60 s by default) of load.
KILLED_JAVA = int(RATE_PER_S * 60)
SOURCE = "MirrorSourceConnector"
CONNECTORS = (SOURCE, "MirrorCheckpointConnector")
#: ERROR lines a Java node may log once nodes of ours run beside it that nothing of ours causes: (pattern, why).
#: Lines logged before the first step (a fleet of Java nodes only) are printed, not asserted on.
EXPECTED_JAVA_ERRORS: tuple[tuple[str, str], ...] = (
    ("Graceful stop of task .* failed",
     "a Java task revoked in a rebalance did not stop within task.shutdown.graceful.timeout.ms (5 s): under "
     "exactly-once a starting task reads the offsets topic to its end first, slow while three JVMs, two brokers "
     "and our nodes share two cores; the Java fleet alone logs it at its own start"),
    ("Failed to fetch offsets from namespace MirrorSourceConnector",
     "the same abandoned task, whose offset reader Java closed meanwhile ('Offset reader is closed ... longer "
     "than the graceful shutdown period')"),
    ("Connector 'MirrorSourceConnector' failed to properly shut down, has become unresponsive",
     "Worker.awaitStopConnector: a connector revoked in a rebalance did not finish stopping within "
     "Worker.CONNECTOR_GRACEFUL_SHUTDOWN_TIMEOUT_MS (5 s, fixed), counted from the revocation. Java's leader "
     "revokes the source connector from a Java node to balance a member that joins (of either kind) while that "
     "node is still in the connector's start: reading the offsets topic, then listing, describing and creating "
     "topics (6 to 7 s on two loaded cores), which the stop waits behind. Java then abandons the instance and "
     "its new owner starts one; no record or offset goes through a connector"),
    ("Failed to start connector 'MirrorSourceConnector' .*Could not begin changing connector state to STARTED as "
     "the connector has been scheduled for shutdown",
     "the same revocation a moment earlier, while the connector was still in WorkerConnector.initialize (its "
     "offset store reading the offsets topic): WorkerConnector.doShutdown fails the pending transition to "
     "STARTED and DistributedHerder.startConnector's callback logs it; the new owner starts the connector"),
)
Node = JavaMirrorMaker | MirrorMakerProcess


# ------------------------------------------------------------------------------------------- the flow


@dataclass
class Fleet:
    """The flow, the plain file's lines, and the nodes with their listener ports."""

    a: str
    b: str
    source: str
    target: str
    topic: str
    directory: Path
    lines: list[str]
    nodes: list[Node] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    retired: list[Node] = field(default_factory=list)
    #: REST port -> the kinds of every node ever started on it (retired ones too), to tell a worker id's kind
    kinds_by_port: dict[int, set[str]] = field(default_factory=dict)
    #: REST port -> when the test began stopping the node listening there, at a step or at the end (epoch ms)
    stopping_since_ms: dict[int, float] = field(default_factory=dict)

    def start(self, index: int, kind: str, running: list[Stoppable], label: str) -> Node:
        """A node of ``kind`` in slot ``index``, with the plain file plus its own ``listeners`` line."""
        port = free_port()
        properties = self.directory / f"{label}.properties"
        properties.write_text("\n".join([*self.lines, f"listeners = http://127.0.0.1:{port}"]) + "\n",
                              encoding="utf-8")
        log = self.directory / f"{label}.log"
        node: Node = JavaMirrorMaker(properties, log=log) if kind == "java" else MirrorMakerProcess(properties, log=log)
        running.append(node)
        self.kinds_by_port.setdefault(port, set()).add(kind)
        node.start()
        if index < len(self.nodes):
            self.retired.append(self.nodes[index])
            self.nodes[index], self.ports[index] = node, port
        else:
            self.nodes.append(node)
            self.ports.append(port)
        return node

    def kinds(self) -> list[str]:
        return [_kind(n) for n in self.nodes]

    def every_node(self) -> list[Node]:
        return [*self.retired, *self.nodes]


def _kind(node: Node) -> str:
    return "java" if isinstance(node, JavaMirrorMaker) else "ours"


def _fleet(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path, name: str) -> Fleet:
    a, b = aliases("A", "B")
    source, target = kafka_a.bootstrap_servers, kafka_b.bootstrap_servers
    topic = create_topic(source, unique(name), PARTITIONS)
    # MM2 replicates the source's heartbeats topic whatever `topics` says, and the B->A heartbeat connector creates
    # it on A once a node runs. Made here first, as that connector makes it (one compacted partition), every
    # connector's first scan sees it: otherwise a connector that moves after it appeared computes one partition
    # more than the configs Java computed at its start and rewrites them (every task restarts, a step's checks race
    # that restart). A Java connector's next refresh would do the same.
    if "heartbeats" not in topics(source):
        create_topic(source, "heartbeats", 1, {"cleanup.policy": "compact"})
    lines = [f"clusters = {a}, {b}", f"{a}.bootstrap.servers = {source}", f"{b}.bootstrap.servers = {target}",
             f"{a}->{b}.enabled = true", f"{a}->{b}.topics = {topic}", f"tasks.max = {TASKS}",
             "replication.factor = 1", "offset-syncs.topic.replication.factor = 1",
             "checkpoints.topic.replication.factor = 1", "heartbeats.topic.replication.factor = 1",
             "config.storage.replication.factor = 1", "offset.storage.replication.factor = 1",
             "status.storage.replication.factor = 1", "dedicated.mode.enable.internal.rest = true"]
    return Fleet(a, b, source, target, topic, tmp_path, lines)


# ---------------------------------------------------------------------------------- reading the target


@dataclass(frozen=True)
class Arrival:
    """A record read from the target: its source partition and sequence, when it arrived, its target offset."""

    partition: int
    sequence: int
    arrived_ms: float
    offset: int


class Reader:
    """Reads the remote topic from its beginning (no group), recording every arrival; read_committed or not."""

    def __init__(self, bootstrap: str, topic: str, read_committed: bool) -> None:
        self.arrivals: list[Arrival] = []
        self.errors: list[str] = []
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("fleet-reader"),
                                   "enable.auto.commit": False, "allow.auto.create.topics": False,
                                   "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                                   "fetch.wait.max.ms": 50})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-reader", daemon=True)

    def start(self) -> Reader:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = []
                for msg in self._consumer.consume(1000, 0.2):
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            self.errors.append(str(err))
                        continue
                    partition, sequence, _ = decode(msg.value() or b"")
                    batch.append(Arrival(partition, sequence, time.time() * 1000, msg.offset() or 0))
                with self._lock:
                    self.arrivals.extend(batch)
        finally:
            self._consumer.close()

    def snapshot(self) -> list[Arrival]:
        with self._lock:
            return list(self.arrivals)

    def has_all(self, acked: Mapping[int, Collection[int]]) -> bool:
        seen: dict[int, set[int]] = {}
        for x in self.snapshot():
            seen.setdefault(x.partition, set()).add(x.sequence)
        return all(set(sequences) <= seen.get(p, set()) for p, sequences in acked.items())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _lost(acked: Mapping[int, Collection[int]], arrivals: list[Arrival]) -> int:
    seen = {(x.partition, x.sequence) for x in arrivals}
    return sum(1 for p, sequences in acked.items() for s in sequences if (p, s) not in seen)


def _duplicates_by_step(arrivals: list[Arrival], step_starts_ms: list[float]) -> list[int]:
    """Records that arrived a second time, counted in the step during which they arrived again (index 0: before
    the first step)."""
    counts = [0] * (len(step_starts_ms) + 1)
    seen: set[tuple[int, int]] = set()
    for arrival in arrivals:
        key = (arrival.partition, arrival.sequence)
        if key in seen:
            counts[sum(1 for start in step_starts_ms if start <= arrival.arrived_ms)] += 1
        seen.add(key)
    return counts


def _out_of_order(arrivals: list[Arrival]) -> int:
    """First arrivals of a sequence number lower than one already seen in its partition."""
    highest: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    count = 0
    for x in arrivals:
        if (x.partition, x.sequence) in seen:
            continue
        seen.add((x.partition, x.sequence))
        if x.sequence < highest.get(x.partition, -1):
            count += 1
        highest[x.partition] = max(highest.get(x.partition, -1), x.sequence)
    return count


def _longest_gaps_s(arrivals: list[Arrival], after_ms: float) -> dict[int, float]:
    by_partition: dict[int, list[float]] = {}
    for arrival in arrivals:
        if arrival.arrived_ms >= after_ms:
            by_partition.setdefault(arrival.partition, []).append(arrival.arrived_ms)
    return {p: max((later - earlier for earlier, later in itertools.pairwise(sorted(times))), default=0.0) / 1000
            for p, times in sorted(by_partition.items())}


# ------------------------------------------------------------------------------------------ the group


def _task_owners(fleet: Fleet) -> dict[int, tuple[str, str]]:
    """Each source task's last status (state, worker id), read from the status topic as Java's herder does."""
    owners: dict[int, tuple[str, str]] = {}
    prefix = f"status-task-{SOURCE}-".encode()
    for record in consume_all(fleet.target, f"mm2-status.{fleet.a}.internal", 10):
        key = record.key or b""
        if key.startswith(prefix) and record.value:
            status = json.loads(record.value)
            owners[int(key[len(prefix):])] = (status["state"], status["worker_id"])
    return owners


def _running_ports(fleet: Fleet) -> set[int]:
    """The REST ports of the nodes that run some connector or task of the flow, from the status topic."""
    latest: dict[bytes, tuple[str, str]] = {}
    for record in consume_all(fleet.target, f"mm2-status.{fleet.a}.internal", 10):
        if record.key and record.value and record.key.startswith((b"status-task-", b"status-connector-")):
            status = json.loads(record.value)
            latest[record.key] = (status["state"], status["worker_id"])
    return {p for s, w in latest.values() if s == "RUNNING" and (p := _port_of(w)) is not None}


def _running_kinds(fleet: Fleet) -> set[str]:
    """The kinds of live node that run some connector or task of the flow."""
    return {fleet.kinds()[fleet.ports.index(p)] for p in _running_ports(fleet) if p in fleet.ports}


def _port_of(worker_id: str) -> int | None:
    """The REST port in a worker id: ``host:port`` (ours) or ``host:port/<src>-><tgt>`` (Java's)."""
    match = re.search(r":(\d+)(/|$)", worker_id)
    return int(match.group(1)) if match else None


_OUR_LEADER = re.compile(r"Group (\S+) generation (\d+)[^\n]*?; leader (\S+?)(?:;|\s|$)")
_JAVA_LEADER = re.compile(r"groupId=(\S+?)\] Joined group at generation (\d+) [^\n]*?leaderUrl='([^']*)'")


def _leader_port(fleet: Fleet, group: str) -> int | None:
    """The REST port of ``group``'s leader: the leader URL of the newest generation any live node logged."""
    newest: tuple[int, str] | None = None
    for node in fleet.nodes:
        pattern = _JAVA_LEADER if isinstance(node, JavaMirrorMaker) else _OUR_LEADER
        for match in pattern.finditer(node.log_text()):
            if match.group(1) == group and (newest is None or int(match.group(2)) >= newest[0]):
                newest = (int(match.group(2)), match.group(3))
    return None if newest is None else _port_of(newest[1].rstrip("/"))


def _settled(fleet: Fleet, reader: Reader, since_ms: float, newcomer: int | None = None) -> Callable[[], bool]:
    """Every source task RUNNING on a live node, every partition flowing since ``since_ms``, and the node on port
    ``newcomer`` (if given) running some connector or task of the flow: it is in the group."""
    live = set(fleet.ports)

    def check() -> bool:
        owners = _task_owners(fleet)
        flowing = {x.partition for x in reader.snapshot() if x.arrived_ms >= since_ms}
        return (len(owners) == TASKS and all(s == "RUNNING" and _port_of(w) in live for s, w in owners.values())
                and len(flowing) == PARTITIONS and (newcomer is None or newcomer in _running_ports(fleet)))
    return check


def _java_errors(fleet: Fleet, since_ms: float) -> tuple[list[str], list[str]]:
    """Java ERROR lines logged since ``since_ms``, each with its exception's causes (:func:`_error_entries`):
    (those not in :data:`EXPECTED_JAVA_ERRORS`, every one)."""
    logged = []
    for node in fleet.every_node():
        if isinstance(node, JavaMirrorMaker):
            logged += [f"{node.log.name}: {entry}" for entry in _error_entries(node.log_text())
                       if _logged_ms(entry) >= since_ms]
    unexpected = [line for line in logged if not any(re.search(p, line) for p, _ in EXPECTED_JAVA_ERRORS)]
    java_ports = {port for port, kinds in fleet.kinds_by_port.items() if "java" in kinds}
    return _without_forwards_to_a_stopping_leader(unexpected, fleet.stopping_since_ms, java_ports), logged


#: how a forward to a stopped leader's port fails: refused while nothing listens there; or, while the Java node
#: there is stopping, Jetty's own JSON error page (``{"url": ..., "status": ...}``): its REST resources are gone
#: before its connector is, and Java's RestClient cannot read that page as Connect's ErrorMessage
_FORWARD_CAUSE = r"(?P<cause>Connection refused|Unrecognized field \"url\" \(class [\w.]+\.ErrorMessage\))"
#: Java's worker forwarding a connector's task reconfiguration to the leader URL of its last assignment (the URL's
#: path names the flow: /source/target/connectors/...)
_FORWARD_FAILED = re.compile(r"ERROR IO error forwarding REST request to http://[^:/]+:(\d+)/(\w+)/(\w+)/connectors/"
                             r".*" + _FORWARD_CAUSE)
#: the same forward's two follow-up lines (they name the flow by the worker's client id, and no URL)
_FORWARD_FOLLOW_UPS = re.compile(r"ERROR \[Worker clientId=(\w+)->(\w+), .*(Request to leader to reconfigure connector "
                                 r"tasks failed|Failed to reconfigure connector's tasks \(\w+\), retrying after "
                                 r"backoff).*" + _FORWARD_CAUSE)

#: under exactly-once, the source task whose start asked the leader to fence its previous generation (Java's
#: ``DistributedHerder.fenceZombieSourceTasks``): Java kills it when that forward fails, until restarted
_FENCE_FOLLOW_UP = re.compile(r"ERROR ExactlyOnceWorkerSourceTask\{id=[\w-]+\} Task threw an uncaught and "
                              r"unrecoverable exception.*IO Error trying to forward REST request: "
                              r"java\.net\.ConnectException: Connection refused")


#: a Java exactly-once task's ERROR lines (its producer's included) and the task they name
_JAVA_TXN_TASK = re.compile(r"ExactlyOnceWorkerSourceTask\{id=([\w-]+)\}|transactionalId=[\w.-]+?-mm2-([\w-]+)\]")


def _without_javas_second_commits(lines: list[str], broker_log: str, group: str) -> list[str]:
    """``lines`` without a Java exactly-once task's INVALID_TXN_STATE failure when the target broker logged that
    the same transactional id asked to commit a transaction it had already committed.

    That refusal needs the producer's own epoch: a producer of ours running the task would have bumped the
    epoch at its start and Java's request would have been fenced (PRODUCER_FENCED), not refused this way. So
    it is between Java's producer and the broker's transaction coordinator alone, the transaction committed;
    Java kills the task until restarted, as in a Java fleet."""
    kept = []
    for line in lines:
        match = _JAVA_TXN_TASK.search(line)
        task = None if match is None else match.group(1) or match.group(2)
        refused = (f"TransactionalId: {group}-{task}'s state is COMPLETE_COMMIT, but received transaction marker "
                   "result to send: COMMIT")
        if task is None or "InvalidTxnStateException" not in line or refused not in broker_log:
            kept.append(line)
    return kept


def _without_forwards_to_a_stopping_leader(lines: list[str], stopping_since_ms: dict[int, float],
                                          java_ports: set[int]) -> list[str]:
    """``lines`` without Java's refused forwards to a leader that a step had begun stopping, and their follow-ups.

    Java's DistributedHerder forwards a connector's task reconfiguration to the leader URL of its last
    assignment. When a step stops that leader, the forward is refused until the next rebalance names a new
    leader, and Java retries after a backoff: a pure Java fleet logs the same three ERROR lines when its leader
    restarts; and while the stopped node is a Java one (a port in ``java_ports``: a restarted slot gets a port of
    its own, so a Java port never becomes ours), its Jetty answers with its own error page once its REST
    resources are gone, as in a pure Java fleet. Only a forward to a node the test was already stopping is
    excused (a refusal by a live node of ours still fails the test, and so does an unreadable answer from a
    port of ours). A follow-up line is
    excused when the last forward of the same flow in the same log was: Java logs it once that forward has
    failed, after a delay that grows with the machine's load, so it is paired by flow, not by time. An
    exactly-once source task that Java kills because its fencing request was refused is excused when the last
    forward in the same log was an excused, refused ``/fence`` (that line names no flow)."""
    kept: list[str] = []
    last_forward_excused: dict[tuple[str, str, str], bool] = {}  # (log name, source, target) -> excused
    last_fence_excused: dict[str, bool] = {}  # log name -> its last forward was an excused, refused /fence
    for line in lines:
        log_name = line.split(":", 1)[0]
        at = _logged_ms(line.split(": ", 1)[1])
        forward = _FORWARD_FAILED.search(line)
        follow_up = _FORWARD_FOLLOW_UPS.search(line)
        if forward is not None:
            port = int(forward.group(1))
            since = stopping_since_ms.get(port)
            excused = (since is not None and at >= since
                       and (forward.group("cause") == "Connection refused" or port in java_ports))
            last_forward_excused[(log_name, forward.group(2), forward.group(3))] = excused
            last_fence_excused[log_name] = (excused and forward.group("cause") == "Connection refused"
                                            and "/fence " in line)
            if excused:
                continue
        else:
            pair = None if follow_up is None else (log_name, follow_up.group(1), follow_up.group(2))
            if (pair is not None and last_forward_excused.get(pair)) or (
                    _FENCE_FOLLOW_UP.search(line) and last_fence_excused.get(log_name)):
                continue
        kept.append(line)
    return kept


def _error_entries(log: str) -> list[str]:
    """Each ERROR line of a Java log followed by the message lines of the exception it logged (its own and each
    ``Caused by:``, joined with `` | ``; no stack frame), so that an expected error is told by its cause too."""
    entries: list[list[str]] = []
    current: list[str] | None = None
    for line in log.splitlines():
        if line.startswith("["):
            current = [line] if "] ERROR " in line else None
            if current is not None:
                entries.append(current)
        elif current is not None and line.strip() and not line.startswith(("\t", " ")):
            current.append(line)
    return [" | ".join(entry) for entry in entries]


def _logged_ms(line: str) -> float:
    """When a Java log line was written (its ``[yyyy-MM-dd HH:mm:ss,SSS]`` prefix, local time)."""
    match = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]", line)
    assert match is not None, line
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").timestamp() * 1000 + int(match.group(2))


def _redealt_generations(fleet: Fleet, since_ms: float) -> list[str]:
    """The source connector's task-config generations committed since ``since_ms`` that deal the very partitions
    of the generation before them, one line each.

    A connector that moves from a node of one kind to one of the other must find the task configs the other
    stored equal to those it computes, as a Java node finds a Java node's: rewriting them starts a new task
    generation, and under exactly-once its round of zombie fencing fences the tasks still running on the other
    kind (a Java task then logs ``failed to send record ... InvalidProducerEpochException`` and dies). A new
    generation that deals other partitions (a source topic that appeared, such as ``heartbeats`` once the
    heartbeat connector created it) is what Java writes too."""
    prefix, commit = f"task-{SOURCE}-".encode(), f"commit-{SOURCE}".encode()
    pending: dict[bytes, frozenset[str]] = {}
    previous: frozenset[str] | None = None
    redealt = []
    for record in consume_all(fleet.target, f"mm2-configs.{fleet.a}.internal", 10):
        if record.key is not None and record.key.startswith(prefix) and record.value:
            assigned = json.loads(record.value)["properties"].get("task.assigned.partitions", "")
            pending[record.key] = frozenset(p for p in assigned.split(",") if p)
        elif record.key == commit and record.value:
            dealt = frozenset().union(*pending.values())
            if previous == dealt and record.timestamp >= since_ms:
                redealt.append(f"{len(pending)} task config(s) committed at "
                               f"{datetime.fromtimestamp(record.timestamp / 1000):%H:%M:%S.%f}, dealing the same "
                               f"{len(dealt)} partitions again")
            previous, pending = dealt, {}
    return redealt


def _inconsistent(fleet: Fleet) -> list[str]:
    return [f"{node.log.name}: {line}" for node in fleet.every_node() for line in node.log_text().splitlines()
            if "INCONSISTENT_GROUP_PROTOCOL" in line or "InconsistentGroupProtocol" in line]


# ----------------------------------------------------------------------------------------------- steps


@dataclass
class Timeline:
    began_ms: float = field(default_factory=lambda: time.time() * 1000)
    step_starts_ms: list[float] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    our_exits_s: list[float] = field(default_factory=list)
    #: The steps (1-based) whose Java node hung on SIGTERM and was killed.
    java_killed: list[int] = field(default_factory=list)

    def duplicate_bounds(self) -> list[int]:
        """Per step: :data:`IN_FLIGHT`, or :data:`KILLED_JAVA` where Java's own shutdown hung (:func:`_stop`)."""
        return [KILLED_JAVA if n in self.java_killed else IN_FLIGHT for n in range(1, len(self.step_starts_ms) + 1)]


def _stop(node: Node, how: str, timeline: Timeline) -> str:
    """SIGTERM (ours within :data:`EXIT_LIMIT_S`; Java within :data:`JAVA_EXIT_S`, else killed) or kill -9."""
    began = time.monotonic()
    if how == "kill":
        node.kill()
        return "killed (kill -9)"
    if isinstance(node, MirrorMakerProcess):
        code = node.terminate(EXIT_LIMIT_S)  # AssertionError naming the node if it does not exit in time
        timeline.our_exits_s.append(time.monotonic() - began)
        assert code in (0, 143), f"{node.log} exited with {code}:\n{node.tail()}"
        return f"stopped (SIGTERM) in {time.monotonic() - began:.1f} s"
    assert node.proc is not None
    pid = node.proc.pid
    node.proc.send_signal(signal.SIGTERM)
    try:
        code = node.proc.wait(JAVA_EXIT_S)
    except subprocess.TimeoutExpired:
        # Java's own shutdown can hang, whatever ours did: its jstack then shows MirrorMaker's shutdown hook in
        # RestServer.stop -> Server.join, waiting for a Jetty thread pool that Jetty's own shutdown hook, racing
        # it, left running, so its herders are never stopped (seen on a node no request of ours had reached). A
        # service manager kills it after its stop timeout, and so does the step: the step then counts as a kill.
        dump = subprocess.run(["jstack", str(pid)], capture_output=True, text=True, timeout=60, check=False)
        node.log.with_suffix(".jstack").write_text(dump.stdout + dump.stderr, encoding="utf-8")
        node.kill()
        timeline.java_killed.append(len(timeline.step_starts_ms))
        return f"killed after its own shutdown hung for {JAVA_EXIT_S:.0f} s (jstack beside its log)"
    assert code in (0, 130, 143), f"{node.log} exited with {code}:\n{node.tail()}"
    return f"stopped (SIGTERM) in {time.monotonic() - began:.1f} s"


def _slot(fleet: Fleet, which: str) -> int:
    """The slot of the node to stop: ``"leader"``, the A-mm2 group's leader; ``"java"``, the Java node that leads
    it if one does, else any Java node.

    Why the leader while a Java node leads: Java's leader holds the work of a follower that stopped cleanly for
    ``scheduled.rebalance.max.delay.ms`` (5 minutes by default), waiting for it to come back, even when a new
    worker joins meanwhile; a newly elected leader has no memory of the departed node's work and assigns it at
    once. Our leader gives such work at once to a node that joins after the stop (ours, started right after it).
    """
    leader = _leader_port(fleet, f"{fleet.a}-mm2")
    leads = fleet.ports.index(leader) if leader in fleet.ports else None
    if which == "leader":
        assert leads is not None, f"no live leader of {fleet.a}-mm2 found ({leader}, {fleet.ports})"
        return leads
    if leads is not None and fleet.kinds()[leads] == "java":
        return leads
    return fleet.kinds().index("java")


def _stop_ours(fleet: Fleet, timeline: Timeline) -> None:
    """SIGTERM every node of ours still running, one by one: each exits within :data:`EXIT_LIMIT_S`. The
    Java nodes stay, so a forward of theirs to one of these ports is one to a node the test is stopping."""
    for index, node in enumerate(fleet.nodes):
        if isinstance(node, MirrorMakerProcess):
            fleet.stopping_since_ms[fleet.ports[index]] = time.time() * 1000
            _stop(node, "term", timeline)


def _step(number: int, fleet: Fleet, which: str, kind: str, how: str, running: list[Stoppable],
          reader: Reader, timeline: Timeline) -> None:
    """Stop the node :func:`_slot` picks with ``how``, start a node of ``kind`` in its place right after, wait
    until every task runs on a live node and every partition flows; one timeline line."""
    step_ms = time.time() * 1000
    timeline.step_starts_ms.append(step_ms)
    slot = _slot(fleet, which)
    old = fleet.nodes[slot]
    leader = _leader_port(fleet, f"{fleet.a}-mm2") == fleet.ports[slot]
    what = f"{'the leader, ' if leader else ''}node {slot} ({_kind(old)}),"
    fleet.stopping_since_ms[fleet.ports[slot]] = time.time() * 1000
    stopped = _stop(old, how, timeline)
    fleet.start(slot, kind, running, f"step{number}-{kind}")
    started_ms = time.time() * 1000
    try:
        # a Java node scans its class path for plugins once per herder first: minutes on a loaded machine
        wait_until(_settled(fleet, reader, started_ms, fleet.ports[slot]), 300 if kind == "java" else 180,
                   f"step {number}: every task running on a live node, every partition flowing, the new node working",
                   interval_s=1)
    except AssertionError as exc:
        exc.add_note("\n".join([*timeline.lines, f"step {number}: {what} {stopped}; {kind} started in its place"]))
        raise
    owners = {t: fleet.kinds()[fleet.ports.index(port)] for t, (_, w) in sorted(_task_owners(fleet).items())
              if (port := _port_of(w)) is not None and port in fleet.ports}
    timeline.lines.append(
        f"step {number} (+{(step_ms - timeline.began_ms) / 1000:.0f} s): {what} {stopped}; {kind} started in its "
        f"place; every task running on a live node, every partition flowing and the new node working "
        f"{(time.time() * 1000 - started_ms) / 1000:.1f} s later; fleet {fleet.kinds()}; tasks on {owners}")


def _start_java_fleet(fleet: Fleet, running: list[Stoppable], reader_of: Callable[[], Reader]) -> Reader:
    for index in range(3):
        fleet.start(index, "java", running, f"java-{index}")
    remote = f"{fleet.a}.{fleet.topic}"
    wait_until(lambda: remote in topics(fleet.target), 240, "Java fleet: the remote topic on B",
               retry_on=(KafkaException,))
    reader = reader_of()
    running.append(reader)
    reader.start()
    wait_until(_settled(fleet, reader, 0.0), 240, "Java fleet: every task running and every partition flowing",
               interval_s=1)
    return reader


def _summary(fleet: Fleet, timeline: Timeline, arrivals: list[Arrival], extra: str = "") -> str:
    duplicates = _duplicates_by_step(arrivals, timeline.step_starts_ms)
    gaps = _longest_gaps_s(arrivals, timeline.began_ms)
    _, during = _java_errors(fleet, timeline.began_ms)
    _, before = _java_errors(fleet, 0.0)
    return "\n".join([
        *timeline.lines,
        f"duplicates before the first step and per step: {duplicates} (bounds per step "
        f"{timeline.duplicate_bounds()})",
        "longest wait per partition (s): " + ", ".join(f"{p}: {g:.1f}" for p, g in gaps.items()),
        "our nodes' exits after SIGTERM (s): " + ", ".join(f"{s:.1f}" for s in timeline.our_exits_s),
        f"records on B: {len(arrivals)} arrivals, {len({(x.partition, x.sequence) for x in arrivals})} distinct",
        f"Java ERROR lines: {len(before) - len(during)} while the fleet was Java's alone, {len(during)} during the "
        "steps" + "".join(f"\n  {line[:200]}" for line in during),
        extra])


# ----------------------------------------------------------------------------------------------- tests


def _explain_duplicates(fleet: Fleet, timeline: Timeline, arrivals: list[Arrival]) -> tuple[str, Kept | None]:
    """Keep what a duplicate's cause can be found from (tests/kafka/duplicate_forensics.py): ``duplicates.json``
    beside the nodes' logs; its summary for the failure message, and what was kept (none if it could not be)."""
    try:
        _, java_errors = _java_errors(fleet, 0.0)
        kept = explain(Flow(fleet.target, fleet.a, fleet.topic, SOURCE), arrivals, timeline.step_starts_ms,
                       fleet.directory, java_errors)
    except Exception as exc:  # what was kept must never hide the failure it was kept for
        return f"duplicates not kept: {exc!r}", None
    return kept.summary, kept


def _is_java_worker(fleet: Fleet) -> Callable[[str | None], bool]:
    """Whether a worker id is a Java node's: its REST port was only ever a Java node's in this fleet."""
    def is_java(worker_id: str | None) -> bool:
        port = None if worker_id is None else _port_of(worker_id)
        return port is not None and fleet.kinds_by_port.get(port) == {"java"}
    return is_java


def _attribute_duplicates(fleet: Fleet, timeline: Timeline, arrivals: list[Arrival]) -> tuple[str, list[Attribution]]:
    """:func:`_explain_duplicates`, and each run of duplicates attributed (:mod:`tests.kafka.java_own_duplicates`):
    the summary with one line per run saying whether it is Java's own and why, and the attributions. If the
    duplicates cannot be explained, no run is attributed (every duplicate then fails the test)."""
    summary, kept = _explain_duplicates(fleet, timeline, arrivals)
    if kept is None:
        return summary, []
    try:
        _, java_errors = _java_errors(fleet, 0.0)
        logged = [LoggedError(_logged_ms(line.split(": ", 1)[1]), line) for line in java_errors]
        attributions = [attribute(run, kept.offsets[run["partition"]], _is_java_worker(fleet), logged)
                        for run in kept.runs]
    except Exception as exc:  # nor may the attribution hide it: nothing is excused then
        return f"{summary}\nduplicates not attributed: {exc!r}", []
    return "\n".join([summary, "attributed:", *(f"  {a.line()}" for a in attributions)]), attributions


def _restart_a_java_task(fleet: Fleet) -> str:
    """Ask our node's REST API to restart a source task a Java node runs. A Java MirrorMaker serves no restart
    endpoint (only its internal ones), so forwarding there would end in its 404: ours answers 409 naming the Java
    worker and what restarts the task instead, and the task runs on where it ran. Returns the timeline note."""
    ours = next(n for n in fleet.nodes if isinstance(n, MirrorMakerProcess))
    java_ports = {p for p, n in zip(fleet.ports, fleet.nodes, strict=True) if isinstance(n, JavaMirrorMaker)}
    task, (_, worker) = next((t, o) for t, o in sorted(_task_owners(fleet).items()) if _port_of(o[1]) in java_ports)
    response = ours.request("POST", f"/{fleet.a}/{fleet.b}/connectors/{SOURCE}/tasks/{task}/restart")
    assert response.status_code == 409, f"restart of task {task} on {worker}: {response.status_code} {response.text}"
    message = response.json()["message"]
    assert f"runs on worker {worker}, a Java MirrorMaker node" in message and "includeTasks=true" in message, message
    time.sleep(2)  # deliberate: nothing of the request may reach the task meanwhile
    assert _task_owners(fleet)[task] == ("RUNNING", worker), _task_owners(fleet)
    return f"REST restart of task {task} (run by the Java node {worker}) through our node: 409, {message!r}"


@pytest.mark.timeout(600)
def test_a_java_fleet_is_replaced_node_by_node_and_one_step_rolled_back(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path, running: list[Stoppable]) -> None:
    fleet = _fleet(kafka_a, kafka_b, tmp_path, "fleet")
    load = LoadGenerator(fleet.source, fleet.topic, PARTITIONS, RATE_PER_S)
    running.append(load)
    load.start()
    remote = f"{fleet.a}.{fleet.topic}"
    reader = _start_java_fleet(fleet, running, lambda: Reader(fleet.target, remote, read_committed=False))
    timeline = Timeline()
    # three Java nodes replaced by ours, then one of ours replaced by Java (a rollback)
    steps = [("java", "ours"), ("java", "ours"), ("java", "ours"), ("leader", "java")]
    for number, (which, kind) in enumerate(steps, 1):
        _step(number, fleet, which, kind, "term", running, reader, timeline)
        if number == 1:
            # one group: the flow's connectors and tasks run on both kinds at once; and our node's other herder,
            # the heartbeat-only B->A, is in the Java nodes' group B-mm2 on A
            wait_until(lambda: _running_kinds(fleet) == {"java", "ours"}, 60, "step 1: work running on both kinds",
                       interval_s=1)
            ours = next(n for n in fleet.nodes if isinstance(n, MirrorMakerProcess))
            assert all(f"Joined group {group}:" in ours.log_text() for group in (f"{fleet.a}-mm2", f"{fleet.b}-mm2"))
        time.sleep(3)  # deliberate: replicate under load between steps

    ours = next(n for n in fleet.nodes if isinstance(n, MirrorMakerProcess))
    java_view = _views_agree(fleet, ours)
    load.stop()
    wait_until(lambda: reader.has_all(load.acked), 180, "every acknowledged record on B", interval_s=0.5)
    reader.stop()
    _stop_ours(fleet, timeline)
    arrivals = reader.snapshot()
    duplicates = _duplicates_by_step(arrivals, timeline.step_starts_ms)
    gaps = _longest_gaps_s(arrivals, timeline.began_ms)
    over = any(count > bound for count, bound in zip(duplicates[1:], timeline.duplicate_bounds(), strict=True))
    kept = _explain_duplicates(fleet, timeline, arrivals)[0] if over else ""
    print("\n" + _summary(fleet, timeline, arrivals, f"Java's view of the statuses at the end: {json.dumps(java_view)}"
                          f"\n{kept}"))
    assert not load.errors and not reader.errors, (load.errors[:3], reader.errors[:3])
    assert _lost(load.acked, arrivals) == 0
    assert _out_of_order(arrivals) == 0
    assert not over, f"duplicates per step {duplicates}, bounds {timeline.duplicate_bounds()}\n{kept}"
    assert all(gap <= GAP_LIMIT_S for gap in gaps.values()), gaps
    assert not _inconsistent(fleet), _inconsistent(fleet)[:5]
    unexpected, _ = _java_errors(fleet, timeline.began_ms)
    assert not unexpected, "\n".join(unexpected[:10])
    assert "INCONSISTENT" not in json.dumps(java_view)


@pytest.mark.timeout(600)
def test_exactly_once_fleet_with_the_leader_killed(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path,
                                                   running: list[Stoppable]) -> None:
    fleet = _fleet(kafka_a, kafka_b, tmp_path, "fleet-eos")
    # and the REST API open to state changes, for the restart request (a key Java ignores); Java's plugins found
    # through their ServiceLoader manifests (KIP-898, as Java's own warning suggests; ours has no plugin scan):
    # a Java node then starts in seconds instead of a minute and more on two loaded cores
    fleet.lines += [f"{fleet.b}.exactly.once.source.support = enabled", "rest.mutations.allow.unauthenticated = true",
                    "plugin.discovery = service_load", f"{fleet.a}.plugin.discovery = service_load",
                    f"{fleet.b}.plugin.discovery = service_load"]
    load = LoadGenerator(fleet.source, fleet.topic, PARTITIONS, RATE_PER_S)
    running.append(load)
    load.start()
    remote = f"{fleet.a}.{fleet.topic}"
    reader = _start_java_fleet(fleet, running, lambda: Reader(fleet.target, remote, read_committed=True))
    timeline = Timeline()
    # a Java leader killed, two Java nodes stopped, then our leader (every node ours) killed and a Java node
    # rolled back in its place
    steps = [("leader", "ours", "kill"), ("java", "ours", "term"), ("java", "ours", "term"), ("leader", "java", "kill")]
    for number, (which, kind, how) in enumerate(steps, 1):
        if number == 4:
            assert fleet.kinds() == ["ours"] * 3
        _step(number, fleet, which, kind, how, running, reader, timeline)
        if number == 1:
            wait_until(lambda: _running_kinds(fleet) == {"java", "ours"}, 60, "step 1: work running on both kinds",
                       interval_s=1)
            timeline.lines.append(f"  {_restart_a_java_task(fleet)}")
        time.sleep(3)  # deliberate: replicate under load between steps

    load.stop()
    wait_until(lambda: reader.has_all(load.acked), 180, "every acknowledged record on B (read_committed)",
               interval_s=0.5)
    reader.stop()
    _stop_ours(fleet, timeline)
    arrivals = reader.snapshot()
    duplicates = _duplicates_by_step(arrivals, timeline.step_starts_ms)
    kept, attributions = _attribute_duplicates(fleet, timeline, arrivals) if sum(duplicates) else ("", [])
    java_own = [a for a in attributions if a.java_own]
    print("\n" + _summary(fleet, timeline, arrivals, kept))
    assert not load.errors and not reader.errors, (load.errors[:3], reader.errors[:3])
    assert _lost(load.acked, arrivals) == 0
    assert _out_of_order(arrivals) == 0
    # every duplicate is one, except the runs that are Java's own (module docstring)
    assert sum(duplicates) == sum(a.count for a in java_own), f"duplicates per step {duplicates}\n{kept}"
    gaps = _longest_gaps_s(arrivals, timeline.began_ms)
    assert all(gap <= GAP_LIMIT_S for gap in gaps.values()), gaps
    assert not _inconsistent(fleet), _inconsistent(fleet)[:5]
    redealt = _redealt_generations(fleet, timeline.began_ms)
    assert not redealt, redealt[:8]
    unexpected, _ = _java_errors(fleet, timeline.began_ms)
    evidence = {line for a in java_own for line in a.flush_errors}  # Java's flush errors behind an excused run
    unexpected = _without_javas_second_commits([line for line in unexpected if line not in evidence],
                                               kafka_b.log_path.read_text(errors="replace"), f"{fleet.a}-mm2")
    assert not unexpected, "\n".join(unexpected[:10])


def _our_view(node: MirrorMakerProcess, fleet: Fleet) -> dict[str, object]:
    """Our REST status of the flow's connectors, in StatusProbe.java's shape."""
    view: dict[str, object] = {}
    for connector in CONNECTORS:
        status = node.get(f"/{fleet.a}/{fleet.b}/connectors/{connector}/status")
        view[connector] = {"state": status["connector"]["state"], "worker_id": status["connector"]["worker_id"],
                           "tasks": [{"id": t["id"], "state": t["state"], "worker_id": t["worker_id"]}
                                     for t in sorted(status["tasks"], key=lambda t: t["id"])]}
    return view


def _views_agree(fleet: Fleet, ours: MirrorMakerProcess) -> dict[str, object]:
    """Wait until Java's view of the statuses (Java's own status store) equals ours, both steady; Java's."""
    seen: list[tuple[object, object]] = []

    def agree() -> bool:
        before = _our_view(ours, fleet)
        java = run_status_probe(fleet.target, f"mm2-status.{fleet.a}.internal", CONNECTORS, fleet.directory)
        java = {c: {**v, "tasks": sorted(v["tasks"], key=lambda t: t["id"])} for c, v in java.items()}
        seen.append((before, java))
        return before == java == _our_view(ours, fleet)
    try:
        wait_until(agree, 120, "Java's view of the group equal to ours", interval_s=2)
    except AssertionError as exc:
        exc.add_note(f"last views (ours, Java's): {seen[-1:]}")
        raise
    java_view = seen[-1][1]
    assert isinstance(java_view, dict)
    return java_view
