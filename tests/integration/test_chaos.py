"""The chaos tier: faults against real ``connect-mirror-maker`` nodes and real brokers, nothing lost.

Each test mirrors one 6-partition topic under a steady load of sequenced, timestamped records
(tests/support/chaos.py), injects one kind of fault, and checks on the target, per partition: 0 lost,
duplicates within what a restarted task may re-send (what followed its last offset commit), order kept.
Run with ``-s`` to see each fault's table (records, lost, duplicated, out-of-order, time to recover,
latency). ``pytest -m chaos`` runs the tier alone.

Tests that freeze or restart a broker own it (``fresh_cluster``, or brokers started here), so the
session brokers other tests share are never disturbed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mirror.local.broker import LocalBroker, free_port
from tests.conftest import Cluster
from tests.integration.support.chaos_flow import CONNECTOR, ChaosFlow, duplicate_budget
from tests.integration.support.s3 import MotoS3, require_moto
from tests.support.chaos import Report
from tests.support.tcp_proxy import TcpProxy

#: No failure here is retried but a broker that did not start (tests/conftest.py): a retry that passed
#: would hide the one run that lost records.
pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]

FREEZE_S = 20.0
RESTART_DOWN_S = 5.0
#: the checker's fetch.wait.max.ms against Tansu on S3: covers its six per-fetch listings (see the test)
S3_FETCH_WAIT_MS = 5000


@pytest.fixture
def flows() -> Iterator[list[ChaosFlow]]:
    made: list[ChaosFlow] = []
    yield made
    for flow in made:
        flow.stop()


def check(report: Report, duplicates_allowed: int) -> None:
    assert report.lost == 0, f"LOST RECORDS\n{report.table()}"
    assert report.out_of_order == 0, report.table()
    assert report.duplicated <= duplicates_allowed, f"more than {duplicates_allowed} duplicates\n{report.table()}"


def test_kill_9_one_of_three_workers(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path,
                                     flows: list[ChaosFlow]) -> None:
    flow = ChaosFlow(tmp_path, cluster_a.bootstrap, cluster_b.bootstrap, nodes=3)
    flows.append(flow)
    flow.start()
    time.sleep(2)  # deliberate: a steady state before the fault
    # a node replicating something: the assignor balances every task (the heartbeat task too), so
    # a node may hold no source task
    busy = {w for _, w in flow.nodes[0].task_states(flow.a, flow.b, CONNECTOR)}
    victim = next(n for n in flow.nodes if n.url.removeprefix("http://") in busy)
    victim.kill()
    flow.lifted()  # a crash is instantaneous; the recovery is the group noticing and moving its task
    flow.wait_tasks()
    report = flow.finish("kill -9 one of three workers")
    check(report, duplicate_budget(events=1))


def test_rolling_restart_of_three_workers(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path,
                                          flows: list[ChaosFlow]) -> None:
    flow = ChaosFlow(tmp_path, cluster_a.bootstrap, cluster_b.bootstrap, nodes=3)
    flows.append(flow)
    flow.start()
    time.sleep(2)  # deliberate: a steady state before the fault
    for index, node in enumerate(flow.nodes):
        assert node.terminate() == 0, node.tail()
        flow.nodes[index] = flow.node(index)
        flow.nodes[index].start().wait_running(1)
        flow.wait_tasks()
    flow.lifted()
    report = flow.finish("rolling restart of three workers")
    # A clean stop flushes its offsets after its last acknowledged record: nothing is re-sent.
    check(report, 0)


def _freeze(flow: ChaosFlow, cluster: Cluster) -> None:
    assert cluster.broker is not None
    cluster.broker.pause()
    try:
        time.sleep(FREEZE_S)  # deliberate: the fault is a broker that answers nothing for 20 s
    finally:
        cluster.broker.resume()


def test_target_then_source_broker_frozen_20s(fresh_cluster: Callable[[str], Cluster], tmp_path: Path,
                                              flows: list[ChaosFlow]) -> None:
    source, target = fresh_cluster("src"), fresh_cluster("tgt")
    flow = ChaosFlow(tmp_path, source.bootstrap, target.bootstrap, nodes=1)
    flows.append(flow)
    flow.start()
    time.sleep(2)  # deliberate: a steady state before the fault
    _freeze(flow, target)
    target_lifted = time.monotonic()
    flow.wait_tasks()
    _freeze(flow, source)
    flow.lifted()
    print(f"\ntarget thawed -> source frozen after {time.monotonic() - target_lifted - FREEZE_S:.1f} s")
    flow.wait_tasks()
    report = flow.finish("target broker, then source broker, SIGSTOP 20 s each")
    # A frozen target outlives the group session (6 s here): the task may be restarted, once per freeze.
    check(report, duplicate_budget(events=2))


def test_network_cuts_and_delays_between_driver_and_target(tmp_path: Path, flows: list[ChaosFlow]) -> None:
    source = LocalBroker(name="src", log_dir=tmp_path / "brokers").start()
    broker_port = free_port()
    with TcpProxy(broker_port) as proxy:
        target = LocalBroker(name="tgt", port=broker_port, advertised_port=proxy.port,
                             log_dir=tmp_path / "brokers").start()
        try:
            flow = ChaosFlow(tmp_path, source.bootstrap_servers, f"127.0.0.1:{proxy.port}", nodes=1)
            flows.append(flow)
            flow.start()
            before = proxy.connections
            time.sleep(2)  # deliberate: a steady state before the fault
            proxy.delay(0.3)  # a slow link: 300 ms per chunk each way
            time.sleep(5)
            proxy.delay(0)
            for _ in range(3):  # connections reset mid-stream
                cut = proxy.cut()
                assert cut > 0, "nothing went through the proxy"
                time.sleep(2)
            proxy.refuse()  # a partition: every connection cut, new ones refused, for 8 s
            time.sleep(8)
            proxy.accept()
            flow.lifted()
            report = flow.finish("TCP proxy: 5 s of 300 ms delays, 3 cuts, 8 s refused")
            assert proxy.connections > before, "no client reconnected through the proxy"
            check(report, duplicate_budget(events=2))
        finally:
            for flow in flows:
                flow.stop()
            target.stop()
            source.stop()


def test_target_broker_restart_with_persistent_storage(tmp_path: Path, flows: list[ChaosFlow]) -> None:
    reason = require_moto()
    if reason:
        pytest.skip(reason)
    s3 = MotoS3(tmp_path / "s3").start()
    source = LocalBroker(name="src", log_dir=tmp_path / "brokers").start()
    target = LocalBroker(name="tgt", storage="s3://tansu/", env=s3.broker_env(),
                         log_dir=tmp_path / "brokers").start()
    try:
        # Tansu bug (found here; docs/tansu.md): a broker on s3:// stopped while an idempotent
        # producer's batch is in flight answers that producer's retry, after the restart, with
        # DUPLICATE_SEQUENCE_NUMBER although the batch is not in its log. librdkafka (as the Java client)
        # takes that answer as "already written" and reports the records delivered (without an offset:
        # "RecordMetadata has no offset" in the node's log), so they are lost on the target (7 records
        # in 3 runs of 4). On Kafka that answer means the batch is in the log. The test therefore runs
        # the task producers without idempotence, as Java Connect's default does (one request in flight
        # per connection, retries may duplicate and never lose). The idempotent default is not kept
        # as an xfail: the loss happens in most runs, not all, so a strict xfail would be flaky. On Apache
        # Kafka the same restart runs with idempotence on (tests/kafka/test_kafka_chaos.py).
        #
        # Tansu bug (found here; docs/tansu.md): on s3:// a Fetch lists a partition's batch
        # objects (one S3 LIST per partition per fetch) and stops listing once the request's
        # fetch.wait.max.ms has passed -- a deadline shared by all the partitions of the request --
        # returning no records and no error for a partition it did not finish listing (dynostore.rs
        # `fetch`, `has_deadline_expired`; build 510f3e2). On moto under CPU load one LIST of a few
        # hundred objects takes 200-300 ms, so the checker (50 ms) and the node's readers of its internal
        # topics (100 ms) fetched nothing, for ever, from a partition once its listing outgrew that:
        # the start-up wait timed out in ~1 run in 5, and a fresh consumer (50 ms) read 0 of the
        # ~7000 records of each partition. Found with the start-up diagnostics (only LISTs, no batch
        # GET, in moto's log) and a second Tansu with RUST_LOG=debug on the same bucket
        # ("elapsed=213ms max_wait=49.6ms", then `records: None`); alone, one Tansu on moto with 400
        # one-record batches in a partition (one LIST: ~290 ms) gave 0 of 400 records in 15 s to
        # consumers with fetch.wait.max.ms 10 and 50, all 400 with 2000. On Kafka the wait only bounds
        # how long an empty fetch is held, so both readers are given here a wait long enough for
        # Tansu's listings; what the test checks is unchanged.
        flow = ChaosFlow(tmp_path, source.bootstrap_servers, target.bootstrap_servers, nodes=1,
                         extra="{target}.producer.enable.idempotence = false\n"
                               "{target}.consumer.fetch.max.wait.ms = 2000\n",
                         checker_fetch_wait_ms=S3_FETCH_WAIT_MS)
        flows.append(flow)
        flow.start()
        time.sleep(2)  # deliberate: a steady state before the fault
        target.stop()  # SIGINT, then SIGKILL after 1 s: the broker goes away mid-stream
        time.sleep(RESTART_DOWN_S)  # deliberate: the broker stays down for a while
        target.start()  # same port, same S3 bucket: topics, data and group offsets come back
        flow.lifted()
        flow.wait_tasks()
        report = flow.finish(f"target broker restarted (s3 storage, down {RESTART_DOWN_S:.0f} s)")
        check(report, duplicate_budget(events=1))
    finally:
        for made in flows:
            made.stop()
        target.stop()
        source.stop()
        s3.stop()
