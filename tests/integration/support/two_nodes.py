"""Two ``connect-mirror-maker`` nodes of one flow under a steady sequenced load, for fault tests.

The flow A->B (and the heartbeat-only B->A, as a file without ``--clusters`` runs) on two nodes, with
Connect's default group settings (10 s sessions), the chaos tier's load generator and checker
(tests/support/chaos.py): :meth:`TwoNodes.wait_flowing` measures how long each partition stalled after a
fault, :meth:`TwoNodes.finish` asserts that no acknowledged record was lost. Used on Tansu
(tests/integration/test_multinode_without_internal_rest.py) and on Apache Kafka (tests/kafka/).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.chaos import Arrival, Checker, LoadGenerator, analyse
from tests.support.kafka import create_topic, topics, unique, wait_until


class HasBootstrap(Protocol):
    @property
    def bootstrap(self) -> str: ...


SOURCE = "MirrorSourceConnector"
CONNECTORS = (SOURCE, "MirrorCheckpointConnector", "MirrorHeartbeatConnector")
PARTITIONS = 6
TASKS = 4
RATE_PER_S = 400.0
#: issue 26: every partition flows again within this long after each restart or kill
RECOVERY_LIMIT_S = 60.0


class TwoNodes:
    """Flow A->B (and the heartbeat-only B->A, as a file without ``--clusters`` runs) on two nodes under load."""

    def __init__(self, tmp_path: Path, source: HasBootstrap, target: HasBootstrap,
                 internal_rest: bool = False, defaults: bool = False) -> None:
        """``defaults``: the group settings and the offset flush of the code under test (a user's file);
        else Connect's group settings (10 s sessions, 3 s heartbeats) and the harness's 1 s offset flush."""
        self.a, self.b = aliases("A", "B")
        self.source, self.target = source.bootstrap, target.bootstrap
        self.topic = create_topic(self.source, unique("seq"), PARTITIONS)
        self.remote = f"{self.a}.{self.topic}"
        body = f"{self.a}->{self.b}.enabled = true\n{self.a}->{self.b}.topics = {self.topic}\ntasks.max = {TASKS}\n"
        if not defaults:  # Connect's default group settings (mm2_properties shortens them for the test broker)
            body += "".join(f"{c}.session.timeout.ms = 10000\n{c}.heartbeat.interval.ms = 3000\n"
                            for c in (self.a, self.b))
        left_out = ("session.timeout.ms", "heartbeat.interval.ms", "offset.flush.interval.ms") if defaults else ()
        self.properties = tmp_path / "mm2.properties"
        self.properties.write_text(mm2_properties({self.a: self.source, self.b: self.target}, body,
                                                  internal_rest=internal_rest, defaults=left_out),
                                   encoding="utf-8")
        assert internal_rest or "internal.rest" not in self.properties.read_text(encoding="utf-8")
        self.tmp_path = tmp_path
        self.nodes = [self.node(0), self.node(1)]
        self.load: LoadGenerator | None = None
        self.checker: Checker | None = None

    def node(self, index: int) -> MirrorMakerProcess:
        return MirrorMakerProcess(self.properties, log=self.tmp_path / f"node{index}-{time.monotonic_ns()}.log")

    def live(self) -> list[MirrorMakerProcess]:
        return [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]

    def workers(self) -> set[str]:
        return {n.url.removeprefix("http://") for n in self.live()}

    def status(self, connector: str) -> dict[str, object]:
        response = self.live()[0].request("GET", f"/{self.a}/{self.b}/connectors/{connector}/status")
        return response.json() if response.status_code == 200 else {}

    def connector_workers(self) -> set[str]:
        """The workers running MM2's three connectors of A->B (one worker: the group leader)."""
        found = set()
        for connector in CONNECTORS:
            state = self.status(connector).get("connector", {})
            assert isinstance(state, dict)
            found.add(f"{state.get('state')}@{state.get('worker_id')}")
        return found

    def settled(self) -> bool:
        """Every source task RUNNING on a live node; the three connectors RUNNING together on one live node."""
        tasks = self.status(SOURCE).get("tasks", [])
        assert isinstance(tasks, list)
        workers = self.workers()
        holders = self.connector_workers()
        return (len(tasks) == TASKS and all(t["state"] == "RUNNING" and t["worker_id"] in workers for t in tasks)
                and len(holders) == 1 and next(iter(holders)) in {f"RUNNING@{w}" for w in workers})

    def wait_settled(self, timeout_s: float = 90) -> None:
        try:
            wait_until(self.settled, timeout_s, "source tasks running and the connectors together on one node",
                       interval_s=0.5, retry_on=(httpx.HTTPError, OSError))
        except AssertionError as exc:
            exc.add_note(f"connectors: {self.connector_workers()}; source: {self.status(SOURCE)}")
            for node in self.nodes:
                exc.add_note(f"{node.log}:\n{node.tail(30)}")
            raise

    def group_state(self) -> tuple[tuple[str, str, str, float, float], ...] | None:
        """Per live node and flow: (node, source, target, generation, rebalancing); None while a node has no
        metrics yet."""
        rows = []
        for node in self.live():
            text = node.request("GET", "/metrics").text
            samples = {(f.name, s.labels.get("source", ""), s.labels.get("target", "")): s.value
                       for f in text_string_to_metric_families(text) for s in f.samples}
            for source, target in ((self.a, self.b), (self.b, self.a)):
                epoch = samples.get(("connect_worker_rebalance_epoch", source, target))
                rebalancing = samples.get(("connect_worker_rebalancing", source, target))
                if epoch is None or rebalancing is None:
                    return None
                rows.append((node.url, source, target, epoch, rebalancing))
        return tuple(rows)

    def wait_group_stable(self, quiet_s: float = 4.0) -> None:
        """Wait until both groups are stable: on every node the same generation, no rebalance in progress,
        and nothing changed for ``quiet_s`` (KIP-415's second round follows the first at once).

        Why a rolling restart waits for this (as an operator would): Tansu, the test broker, wedges a group
        whose leader leaves while the leader's own JoinGroup is held (found here, reproduced with a config
        change followed by a SIGTERM of the leader 2.6 s later): every later JoinGroup response names the
        departed member as leader, so the survivor's SyncGroup waits for an assignment nobody sends, is
        answered REBALANCE_IN_PROGRESS after ~8 s, and rejoins, for ever; a restarted node never joins. On
        Kafka the coordinator removes the leaving leader and elects another."""
        def stable() -> bool:
            first = self.group_state()
            if first is None or any(r[4] for r in first):
                return False
            by_flow: dict[tuple[str, str], set[float]] = {}
            for _, source, target, epoch, _ in first:
                by_flow.setdefault((source, target), set()).add(epoch)
            if any(len(epochs) > 1 for epochs in by_flow.values()):
                return False
            time.sleep(quiet_s)  # deliberate: a second round starts within a heartbeat of the first
            return self.group_state() == first

        wait_until(stable, 90, "both groups stable on every node", interval_s=0.5,
                   retry_on=(httpx.HTTPError, OSError))

    def start(self) -> TwoNodes:
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            node.wait_running(2, 120)
        self.wait_settled(120)
        wait_until(lambda: self.remote in topics(self.target), 60, f"the remote topic {self.remote}")
        self.checker = Checker(self.target, self.remote, PARTITIONS).start()
        self.load = LoadGenerator(self.source, self.topic, PARTITIONS, RATE_PER_S).start()
        checker = self.checker
        wait_until(lambda: len(checker.seen()) == PARTITIONS, 120, "records of every partition on the target")
        return self

    def arrivals_since(self, since_ms: float) -> dict[int, list[Arrival]]:
        """Per partition, the first arrivals of the records sent at or after ``since_ms``."""
        assert self.checker is not None
        seen: set[tuple[int, int]] = set()
        found: dict[int, list[Arrival]] = {}
        for arrival in self.checker.snapshot():
            if arrival.sent_ms >= since_ms and (arrival.partition, arrival.sequence) not in seen:
                seen.add((arrival.partition, arrival.sequence))
                found.setdefault(arrival.partition, []).append(arrival)
        return found

    def wait_flowing(self, fault_ms: float, what: str) -> dict[int, float]:
        """Wait until every partition flows now (a record sent from now on arrived), then measure, per
        partition, the longest a record sent since the fault waited to arrive: how long the partition
        stalled. Partitions keep their order, so a later record's arrival means the earlier ones arrived
        (the end of the test checks that none is lost)."""
        assert self.load is not None
        load = self.load
        now_ms = time.time() * 1000
        try:
            wait_until(lambda: len(self.arrivals_since(now_ms)) == PARTITIONS, RECOVERY_LIMIT_S + 30,
                       f"every partition flowing after {what}", interval_s=0.5)
        except AssertionError as exc:
            exc.add_note(f"partitions flowing: {sorted(self.arrivals_since(now_ms))}")
            for node in self.nodes:
                exc.add_note(f"{node.log}:\n{node.tail(40)}")
            raise
        acked = load.acked_snapshot()
        stalls = {}
        for partition, arrivals in self.arrivals_since(fault_ms).items():
            window = [a for a in arrivals if a.sent_ms < now_ms]
            assert {a.sequence for a in window} >= {s for s in acked[partition]
                                                     if fault_ms <= load.sent_at_ms[(partition, s)] < now_ms}
            stalls[partition] = max((a.arrived_ms - a.sent_ms for a in window), default=0.0) / 1000
        return stalls

    def finish(self, fault: str) -> list[Arrival]:
        """Stop the load, wait for every acknowledged record on B, assert none is lost; the arrivals."""
        assert self.load is not None and self.checker is not None
        time.sleep(2)  # deliberate: records sent after the last fault are checked too
        self.load.stop()
        load, checker = self.load, self.checker
        try:
            wait_until(lambda: checker.has_all(load.acked), 90, "every acknowledged record on the target",
                       interval_s=0.5)
        except AssertionError as exc:
            exc.add_note(analyse(fault, load.acked, checker.snapshot()).table())
            for node in self.nodes:
                exc.add_note(f"{node.log}:\n{node.tail(40)}")
            raise
        finally:
            checker.stop()
        assert not load.errors, f"the source refused records: {load.errors[:3]}"
        report = analyse(fault, load.acked, checker.snapshot())
        assert report.lost == 0, f"LOST RECORDS\n{report.table()}"
        print(f"\n{report.table()}")
        return checker.snapshot()

    def stop(self) -> None:
        if self.load is not None:
            self.load._stop.set()
        if self.checker is not None:
            self.checker.stop()
        for node in self.nodes:
            node.stop()


def describe(stalls: dict[int, float]) -> str:
    per_partition = ", ".join(f"{p}: {s:.1f}" for p, s in sorted(stalls.items()))
    return f"{max(stalls.values()):.1f} s (per partition: {per_partition})"


def kill_9_of_the_connector_holder(flow: TwoNodes, fault: str) -> dict[int, float]:
    """kill -9 of the node running MM2's connectors: they move to the survivor, nothing is lost; the stalls."""
    [holder] = flow.connector_workers()
    victim = next(n for n in flow.nodes if holder == f"RUNNING@{n.url.removeprefix('http://')}")
    survivor = next(n for n in flow.nodes if n is not victim)
    killed_ms = time.time() * 1000
    victim.kill()
    flow.wait_settled()
    assert flow.connector_workers() == {f"RUNNING@{survivor.url.removeprefix('http://')}"}
    stalls = flow.wait_flowing(killed_ms, "kill -9 of the node holding the connectors")
    print(f"\n{fault}: the longest a record sent since the kill waited: {describe(stalls)}")
    flow.finish(fault)
    assert max(stalls.values()) <= RECOVERY_LIMIT_S, stalls
    assert survivor.terminate() == 0, survivor.tail()
    return stalls


def restart_each_node(flow: TwoNodes, fault: str, before_each: Callable[[], None]) -> list[float]:
    """SIGTERM and restart node 0, then node 1 (``before_each`` runs before each SIGTERM); nothing is lost,
    every partition flows again within RECOVERY_LIMIT_S; the longest stall per restart."""
    recoveries = []
    for index in (0, 1):
        before_each()
        restarted_ms = time.time() * 1000
        assert flow.nodes[index].terminate() == 0, flow.nodes[index].tail()
        flow.nodes[index] = flow.node(index)
        flow.nodes[index].start().wait_running(2, 120)
        flow.wait_settled()
        stalls = flow.wait_flowing(restarted_ms, f"the restart of node {index}")
        recoveries.append(max(stalls.values()))
        print(f"\n{fault}, node {index}: the longest a record sent since the SIGTERM waited: {describe(stalls)}")
    flow.finish(fault)
    assert all(r <= RECOVERY_LIMIT_S for r in recoveries), recoveries
    for node in flow.nodes:
        assert node.terminate() == 0, node.tail()
    return recoveries

