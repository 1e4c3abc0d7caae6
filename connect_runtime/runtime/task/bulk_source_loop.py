"""The bulk path of a source task: the runtime's side of :class:`~connect_runtime.api.bulk.BulkSink`.

:class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask` uses it instead of its per-record
steps when the task offers the bulk capability and the producer is idempotent. The loop is the same
(pause, the outstanding cap, offset commits and shutdown stay in WorkerSourceTask); what changes is one
step: ``task.poll_bulk(sink)`` produces straight from the task's input, then the producer is served and
the delivery reports, two per run, acknowledge whole runs (:class:`SubmittedRuns`). Nothing here runs
per record.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Producer

from connect_runtime.api.bulk import BulkRun, BulkSourceTask
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap, canonical_partition_json
from connect_runtime.clients.bulk_produce import ProducePath, produce_path
from connect_runtime.metrics import TaskMetrics
from connect_runtime.runtime.task.error_policy import SkipReporter
from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings
from connect_runtime.runtime.task.submitted_runs import RunGap, SubmittedRuns
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder

logger = logging.getLogger(__name__)

#: How long a full producer queue is served before the task's loop looks at stop/commit flags again.
_ROOM_WAIT_S = 0.05


class BulkLoop:
    """Drives one bulk task on its thread and tracks its runs; this object is the task's BulkSink.

    With ``hold`` acknowledged runs are counted and reach the task only at :meth:`release` (after their
    transaction committed).
    """

    def __init__(self, task_id: str, task: BulkSourceTask, producer: Producer, settings: SourceTaskSettings, *,
                 each_record: bool, skips: SkipReporter, metrics: TaskMetrics, stopping: threading.Event,
                 hold: bool, active_topics: ActiveTopicRecorder | None = None) -> None:
        policy = settings.error_policy
        self._task_id = task_id
        self._task = task
        self._producer = producer
        self._policy = policy
        self._tolerate = policy.tolerate
        self._skips = skips
        self._metrics = metrics
        self._produce_errors = metrics.produce_errors
        self._stopping = stopping
        #: Acknowledged runs the task hears of only at release() (``hold``: exactly-once).
        self._held: list[BulkRun] = []
        self._on_acknowledged: Callable[[list[BulkRun]], None] = self._held.extend if hold else self._deliver
        self.produce = producer.produce
        self.each_record = each_record
        #: How the records between a run's first and last are produced, and why: said once when the task
        #: starts, and exported as ``connect_source_task_produce_path`` (the Python loop is the slower one).
        self.produce_path = (ProducePath(None, "every record needs its own delivery report "
                                               "(enable.gapless.guarantee is off)")
                             if each_record else produce_path(producer))
        self.produce_span = self.produce_path.span
        metrics.produce_path(self.produce_path.name, self.produce_path.reason)
        logger.info("%s produces the records between a run's first and last through the %s: %s", task_id,
                    "C span producer" if self.produce_span is not None else "Python loop", self.produce_path.reason)
        self.runs = SubmittedRuns()
        #: The first error that fails the task (read by WorkerSourceTask after each step).
        self.failure: BaseException | None = None
        #: Set once the producer was purged at close: reports after that are not failures.
        self.closing = False
        #: Records acknowledged since WorkerSourceTask last counted them.
        self.written = 0
        self._in_poll = False
        #: KIP-558: told the target topics of acknowledged runs (None: topic tracking is off).
        self.active_topics = active_topics

    # -- BulkSink ------------------------------------------------------------------------------------
    def open_run(self, source_partition: SourceMap, source_offset: Mapping[str, Any], count: int,
                 target_topic: str, target_partition: int, tag: Any) -> BulkRun:
        return self.runs.open(source_partition, source_offset, count, target_topic, target_partition, tag)

    def cut_run(self, run: BulkRun, produced: int, source_offset: Mapping[str, Any] | None) -> None:
        self.runs.cut(run, produced, source_offset)

    def wait_for_room(self) -> bool:
        self.serve(self._producer, _ROOM_WAIT_S)
        return not self._stopping.is_set() and self.failure is None

    def refused(self, error: BaseException, topic: str, partition: int, source: str, key: Any,
                value: Any) -> None:
        self._produce_errors.inc()
        if not self._policy.tolerates(error):
            raise ConnectError(f"{self._task_id}: producer refused a record for topic {topic}: {error}") from error
        self._skips.skip(error, topic, partition, source, key, value)

    # -- the loop's steps (SourceLoop) ---------------------------------------------------------------
    @property
    def tracking(self) -> SubmittedRuns:
        return self.runs

    @property
    def holds_acknowledgements(self) -> bool:
        return bool(self._held)

    def step(self, producer: Producer) -> None:
        """One bulk poll, then serve what the producer delivered meanwhile."""
        self._in_poll = True
        started = time.monotonic()
        try:
            produced = self._task.poll_bulk(self)
        except BaseException as exc:  # a run may be half produced: never acknowledge it wholesale
            if self.failure is None:
                self.failure = exc
            raise
        finally:
            self._in_poll = False
        self.serve(producer, 0)
        if produced:  # per step (a consumed batch), never per record
            self._metrics.poll_batch_seconds.observe(time.monotonic() - started)
            self._metrics.records_polled.inc(produced)

    def serve(self, producer: Producer, timeout_s: float) -> None:
        """``producer.poll``, then acknowledge the runs its reports (or an empty producer) complete."""
        producer.poll(timeout_s)
        runs = self.runs
        acknowledged: list[BulkRun] = []
        if runs.reports:
            self._process(acknowledged)
        if (runs.outstanding and not self._in_poll and self.failure is None and not self.closing
                and len(producer) == 0):
            # Every opened run was produced in full (not inside poll_bulk), nothing is left in the producer
            # and no failure was reported: every run was written.
            runs.ack_all(acknowledged)
        if acknowledged:
            self._on_acknowledged(acknowledged)

    def _process(self, acknowledged: list[BulkRun]) -> None:
        runs = self.runs
        reports = runs.reports.copy()
        runs.reports.clear()
        failed = runs.ack_reports(reports, self._tolerate, acknowledged)
        for run, error, message, _ in failed:
            if self.closing:
                continue  # reports of records purged at close: neither acknowledged nor failures
            self._produce_errors.inc()
            if self._policy.tolerates(error) and not isinstance(error, (RunGap, ConnectError)):
                source = canonical_partition_json(run.queue.partition)
                self._skips.skip(error.str() if hasattr(error, "str") else error, message.topic(),
                                 message.partition(), f"{source} (a run up to {dict(run.offset)})",
                                 message.key(), message.value())
            elif self.failure is None:
                text = error if isinstance(error, ConnectError) else error.str()
                topic = run.queue.target[0]
                self.failure = ConnectError(f"{self._task_id}: the target did not acknowledge a record for "
                                            f"{topic}: {text}")

    def release(self) -> None:
        """The transaction of the held runs committed: count them and tell the task now."""
        held = self._held
        if held:
            acknowledged = held.copy()
            held.clear()  # the same list: _on_acknowledged is its bound extend
            self._deliver(acknowledged)

    def close(self) -> None:
        return None

    def _deliver(self, acknowledged: list[BulkRun]) -> None:
        self.written += sum(run.count for run in acknowledged)
        if self.active_topics is not None:
            self.active_topics.record({run.queue.target[0] for run in acknowledged})
        try:
            self._task.runs_acknowledged(acknowledged)
        except Exception:  # Java logs and carries on: an acknowledgement is a notification
            logger.exception("%s runs_acknowledged failed", self._task_id)
