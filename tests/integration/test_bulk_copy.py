"""MirrorSourceTask's bulk path and its per-record twin on real brokers, and ``errors.tolerance``.

The task runs through the real WorkerSourceTask (``connect_runtime.testing.harness``). The per-record
path is what the task falls back to when records need an object each (``transforms`` set): both must
copy exactly the same records and commit the same offsets.

A record the target refuses: Tansu enforces no size limit, so the refusal is the client's own: the task
producer's ``message.max.bytes`` below the record's size makes librdkafka refuse it when produced.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from connect_runtime.clients import bulk_produce
from connect_runtime.clients.bulk_produce import ProducePath
from connect_runtime.lifecycle import State
from connect_runtime.runtime.task import bulk_source_loop
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.source import bulk_copy
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, produce, unique, wait_until
from tests.support.mm2 import flow_config, start_connector

pytestmark = pytest.mark.integration

CONNECTOR = "MirrorSourceConnector"
#: "bulk" produces the records between a run's first and last in C (connect_runtime/clients/bulk_produce.py)
#: where the extension is built; "bulk-python" is the same path with the extension turned off.
PATHS = ("bulk", "bulk-python", "per-record")


class PerRecordMirrorSourceTask(MirrorSourceTask):
    """MirrorSourceTask declining the bulk capability, as it does when transformations need a record
    object each (tests/integration/test_transforms.py)."""

    def bulk_ready(self) -> bool:
        return False


TASK_CLASSES: dict[str, type[MirrorSourceTask]] = {"bulk": MirrorSourceTask, "bulk-python": MirrorSourceTask,
                                                   "per-record": PerRecordMirrorSourceTask}


def choose(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the C span producer and run scan off for "bulk-python"."""
    if path == "bulk-python":
        monkeypatch.setattr(bulk_source_loop, "produce_path", lambda _producer: ProducePath(None, "off in this test"))
        monkeypatch.setattr(bulk_copy, "_run_end", None)


def task_config(cluster_a: Cluster, cluster_b: Cluster, topic: str, src: str, tgt: str,
                **overrides: str) -> dict[str, str]:
    connector = MirrorSourceConnector()
    start_connector(connector, flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                                           overrides={"topics": topic, **overrides}))
    try:
        [config] = connector.task_configs(1)
    finally:
        connector.stop()
    return config


def view(records: list[Any]) -> list[tuple[Any, ...]]:
    return [(r.partition, r.offset, r.key, r.value, r.headers, r.timestamp) for r in records]


@pytest.mark.parametrize("path", PATHS)
def test_both_paths_copy_exactly_and_commit_the_last_offset_of_every_partition(
        cluster_a: Cluster, cluster_b: Cluster, path: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    choose(path, monkeypatch)
    caplog.set_level(logging.INFO, logger="connect_runtime.runtime.task.bulk_source_loop")
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("bulk"), partitions=4)
    for p in range(4):  # batches of several records per partition, nulls, headers, explicit timestamps
        produce(cluster_a.bootstrap, topic, [(None if i % 3 else f"k{i}".encode(), None if i % 7 == 0 else b"v%d" % i)
                                             for i in range(200)],
                partition=p, headers=[("h", b"%d" % p), ("none", None)], timestamp=1_700_000_000_000 + p)
    expected = consume_all(cluster_a.bootstrap, topic, expect=800)
    config = {**task_config(cluster_a, cluster_b, topic, src, tgt, **{"offset.lag.max": "50"})}
    store = MemoryOffsetStore()
    with run_source_task(TASK_CLASSES[path], config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store) as run:
        assert run.worker_task.bulk is (path != "per-record")
        if run.worker_task.bulk:  # the C span producer where the extension can run, and only there
            taken = run.worker_task._loop.produce_path  # type: ignore[attr-defined]
            way = "c-span" if path == "bulk" and bulk_produce.unavailable() is None else "python-loop"
            assert taken.name == way
            assert (taken.span is not None) is (way == "c-span")
            ids = {"connector": CONNECTOR, "task": "0", "path": way, "reason": taken.reason}
            assert run.registry.get_sample_value("connect_source_task_produce_path", ids) == 1
            [said] = [r.getMessage() for r in caplog.records if "between a run's first and last" in r.getMessage()]
            assert said.endswith(f"through the {'C span producer' if way == 'c-span' else 'Python loop'}: "
                                 f"{taken.reason}")
        wait_until(lambda: run.records_written() >= 800, 30, "800 records written")
        run.commit_now()
        assert run.outstanding() == 0
        labels = {"source": src, "target": tgt, "topic": f"{src}.{topic}", "partition": "2"}
        assert run.registry.get_sample_value("mirror_source_record_count_total", labels) == 200
        assert run.registry.get_sample_value("mirror_source_replication_latency_seconds_count", labels) == 200
        assert run.registry.get_sample_value("mirror_source_record_age_seconds_count", labels) == 200
    replicated = consume_all(cluster_b.bootstrap, f"{src}.{topic}", expect=800)
    assert sorted(view(replicated)) == sorted(view(expected))
    for p in range(4):
        assert store.get(CONNECTOR, {"cluster": src, "partition": p, "topic": topic}) == {"offset": 199}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("include_messages", [False, True])
def test_tolerated_refusal_is_skipped_counted_and_logged_and_the_rest_copied(
        cluster_a: Cluster, cluster_b: Cluster, caplog: pytest.LogCaptureFixture, path: str,
        include_messages: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    choose(path, monkeypatch)
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("tolerate"), partitions=1)
    secret = b"S" * 5000  # over the task producer's message.max.bytes
    produce(cluster_a.bootstrap, topic, [(b"k%d" % i, secret if i == 5 else b"v%d" % i) for i in range(10)])
    config = {**task_config(cluster_a, cluster_b, topic, src, tgt, **{
        "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.log.include.messages": str(include_messages).lower()})}
    store = MemoryOffsetStore()
    caplog.set_level(logging.ERROR, logger="connect_runtime")
    with run_source_task(TASK_CLASSES[path], config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store, producer_config={"message.max.bytes": "2000"}) as run:
        wait_until(lambda: run.records_written() >= 9, 30, "9 records written")
        run.commit_now()
        assert run.state() is State.RUNNING
        ids = {"connector": CONNECTOR, "task": "0"}
        metric = run.registry.get_sample_value
        assert metric("connect_source_task_records_skipped_total", ids) == 1
        # Connect's task-error-metrics: one failure, skipped and logged, so not an error; when it happened
        assert metric("connect_source_task_produce_errors_total", ids) == 1
        assert metric("connect_task_errors_logged_total", ids) == 1
        assert time.time() - 60 < (metric("connect_task_last_error_timestamp_seconds", ids) or 0) <= time.time()
        # a poll batch time per batch (bulk step or poll()), never per record
        batches = metric("connect_source_task_poll_batch_seconds_count", ids) or 0
        assert 1 <= batches <= run.records_polled()
        assert (metric("connect_source_task_poll_batch_seconds_sum", ids) or 0) > 0
    assert run.registry.get_sample_value("connect_task_record_errors_total", ids) == 0
    replicated = consume_all(cluster_b.bootstrap, f"{src}.{topic}", expect=9)
    assert [r.value for r in replicated] == [b"v%d" % i for i in range(10) if i != 5]
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 9}
    [logged] = [r.getMessage() for r in caplog.records if "skipped a record" in r.getMessage()]
    assert (f"{topic}-0@5" if path != "per-record" else "{'offset': 5}") in logged  # where it came from
    assert (b"SSSS" in logged.encode()) is include_messages  # the content only when asked for


@pytest.mark.parametrize("path", PATHS)
def test_refusal_without_tolerance_fails_the_task_and_commits_nothing_past_it(
        cluster_a: Cluster, cluster_b: Cluster, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    choose(path, monkeypatch)
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("refused"), partitions=1)
    produce(cluster_a.bootstrap, topic, [(None, b"x" * 5000 if i == 5 else b"v%d" % i) for i in range(10)])
    config = {**task_config(cluster_a, cluster_b, topic, src, tgt)}
    store = MemoryOffsetStore()
    with run_source_task(TASK_CLASSES[path], config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store, producer_config={"message.max.bytes": "2000"},
                         wait_running_s=None) as run:  # it may fail before RUNNING is seen: the copy starts at once
        run.wait_for_state(State.FAILED)
        trace = run.trace() or ""
        assert "refused a record" in trace and "too large" in trace.lower()
        ids = {"connector": CONNECTOR, "task": "0"}
        assert run.registry.get_sample_value("connect_task_record_errors_total", ids) == 1  # not tolerated
        assert run.registry.get_sample_value("connect_source_task_records_skipped_total", ids) == 0
    committed = store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic})
    assert committed is None or committed["offset"] < 5
    replicated = consume_all(cluster_b.bootstrap, f"{src}.{topic}")
    assert len(replicated) <= 5
