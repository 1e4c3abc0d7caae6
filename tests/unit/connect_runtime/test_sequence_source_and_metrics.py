"""The test sequence connector's contract (resume, limits) and the runtime metric families."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import SourceMap
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.testing.sequence_source import SequenceSourceConnector, SequenceSourceTask


class FakeContext:
    def __init__(self, stored: Mapping[str, Any] | None = None, task_id: int = 0) -> None:
        self._stored = stored

        class Reader:
            def offset(_, partition: SourceMap) -> Mapping[str, Any] | None:
                return stored

            def offsets(_, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
                return [(p, stored) for p in partitions]

        self._reader = Reader()
        self._task_id = task_id

    @property
    def task_id(self) -> int:
        return self._task_id

    @property
    def worker_id(self) -> str:
        return "w-7"

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


def started_task(config: Mapping[str, str], stored: Mapping[str, Any] | None = None) -> SequenceSourceTask:
    task = SequenceSourceTask()
    task.initialize(FakeContext(stored))
    task.start(config)
    return task


def test_connector_makes_one_numbered_config_per_task() -> None:
    connector = SequenceSourceConnector()
    connector.start({"topic": "t", "tasks.max": "3"})
    assert [c["task.id"] for c in connector.task_configs(3)] == ["0", "1", "2"]
    assert all(c["topic"] == "t" for c in connector.task_configs(3))


def test_connector_rejects_a_config_without_topic() -> None:
    with pytest.raises(ConfigError):
        SequenceSourceConnector().start({"tasks.max": "1"})


def test_task_writes_numbered_json_records_keyed_by_task() -> None:
    task = started_task({"topic": "t", "task.id": "2", "batch.size": "3"})
    records = task.poll() or []
    values = [json.loads(r.value or b"") for r in records]
    assert [(v["task"], v["seq"], v["worker_id"]) for v in values] == [(2, 0, "w-7"), (2, 1, "w-7"), (2, 2, "w-7")]
    assert {r.key for r in records} == {b"2"}
    assert [r.source_offset for r in records] == [{"seq": 0}, {"seq": 1}, {"seq": 2}]
    assert all(r.source_partition == {"task": 2} for r in records)
    assert records[1].value == json.dumps(values[1], separators=(",", ":")).encode()


def test_task_resumes_after_the_stored_seq_and_stops_at_max_records() -> None:
    task = started_task({"topic": "t", "max.records": "12", "batch.size": "5"}, stored={"seq": 9})
    assert [r.source_offset for r in task.poll() or []] == [{"seq": 10}, {"seq": 11}]
    assert task.poll() is None


def test_throttled_task_hands_out_nothing_before_it_is_due() -> None:
    task = started_task({"topic": "t", "records.per.second": "0.5"})
    assert task.poll() is None  # the first record is due after 2 s


def test_stopped_task_returns_none() -> None:
    task = started_task({"topic": "t"})
    task.stop()
    assert task.poll() is None


def test_metrics_use_their_own_registry_and_prometheus_names() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    metrics = ConnectMetrics.create(first)
    ConnectMetrics.create(second)  # no clash: nothing is registered globally
    task = metrics.for_task("mm2", 1)
    task.records_polled.inc(5)
    task.set_state("RUNNING")
    task.set_state("PAUSED")
    labels = {"connector": "mm2", "task": "1"}
    assert first.get_sample_value("connect_source_task_records_polled_total", labels) == 5
    assert second.get_sample_value("connect_source_task_records_polled_total", labels) is None
    assert first.get_sample_value("connect_task_status", {**labels, "state": "PAUSED"}) == 1
    assert first.get_sample_value("connect_task_status", {**labels, "state": "RUNNING"}) == 0
    text = generate_latest(first).decode()
    for name in ("connect_source_task_records_written_total", "connect_source_task_outstanding_records",
                 "connect_source_task_offset_commit_seconds_bucket",
                 "connect_source_task_offset_commit_failures_total",
                 "connect_source_task_produce_errors_total", "connect_task_starts_total"):
        assert name in text


def test_record_errors_are_failures_that_were_not_skipped() -> None:
    """Connect's task-error-metrics: a failure ends skipped (logged or not) or as an error at close."""
    registry = CollectorRegistry()
    task = ConnectMetrics.create(registry).for_task("mm2", 0)
    labels = {"connector": "mm2", "task": "0"}
    assert registry.get_sample_value("connect_task_last_error_timestamp_seconds", labels) == 0
    errors = task.produce_errors
    errors.inc(3)
    errors.skip(logged=True)
    errors.skip(logged=False)
    assert registry.get_sample_value("connect_task_record_errors_total", labels) == 0  # not judged yet
    errors.settle()
    errors.settle()  # idempotent
    value = registry.get_sample_value
    assert value("connect_source_task_produce_errors_total", labels) == 3  # total-record-failures
    assert value("connect_source_task_records_skipped_total", labels) == 2
    assert value("connect_task_errors_logged_total", labels) == 1
    assert value("connect_task_record_errors_total", labels) == 1
    assert (value("connect_task_last_error_timestamp_seconds", labels) or 0) > 0
    # start-ups by result: both series exist from the start
    assert value("connect_worker_task_startup_total", {"result": "failure"}) == 0
