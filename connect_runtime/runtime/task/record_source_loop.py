"""The per-record path of a source task: poll a batch, produce each record, acknowledge its delivery report.

:class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask` drives it for every task that does
not copy in bulk (:mod:`~connect_runtime.runtime.task.bulk_source_loop`), and keeps the loop around it
(pause, the outstanding cap, offset commits and shutdown). What runs per record is here: a
:class:`~connect_runtime.runtime.task.submitted_records.SubmittedRecord` per record is its delivery callback
and only files the report; after each ``producer.poll`` the reports are acknowledged in one loop and
handed to the task in one ``commit_records`` call; the connector's transformations run just before
produce (:class:`TransformStage`).

Transformations (Connect's ``TransformationChain`` use in ``AbstractWorkerSourceTask.sendRecords``) run
after ``poll`` and before the record is produced. What Connect does, done here:

* A record a transformation drops (None) is *done*: it is tracked and acknowledged at once, so its
  source offset is committed as soon as every earlier record of its source partition is acknowledged
  (Connect's ``recordDropped``), and a restart does not poll it again. It is not handed to
  ``SourceTask.commit_records`` (it has no target offset; Java calls ``commitRecord(record, null)``,
  which MirrorSourceTask ignores), so an offset sync or offset-map run simply breaks at it.
* A transformation that raises fails the task (``errors.tolerance=none``) or, with
  ``errors.tolerance=all``, the record is skipped: counted, logged as the policy says, and done like a
  dropped one.
* The producer gets the transformed record; the offset tracking and ``commit_records`` get the record
  the task returned (Java's ``preTransformRecord``), whose source partition and offset are the task's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Producer

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.task import SourceTask
from connect_runtime.api.transforms import TransformationChain, TransformError
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.metrics import TaskMetrics
from connect_runtime.runtime.task.error_policy import ErrorPolicy, SkipReporter
from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings
from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder

logger = logging.getLogger(__name__)

#: How long a full producer queue is served before the task's loop looks at its flags again.
ROOM_WAIT_S = 0.05
#: poll() should block while idle; this short wait keeps one that does not from spinning.
_EMPTY_POLL_WAIT_S = 0.005
_RETRY_BACKOFF_S = 0.1

Acknowledged = list[tuple[SourceRecord, Any]]


class TransformStage:
    """One task's chain, applied record by record on the task thread."""

    __slots__ = ("_chain", "_policy", "_skips", "_submitted", "_task", "dropped")

    def __init__(self, chain: TransformationChain, task: object, policy: ErrorPolicy, skips: SkipReporter,
                 submitted: SubmittedRecords) -> None:
        self._chain = chain
        self._task = task
        self._policy = policy
        self._skips = skips
        self._submitted = submitted
        #: Records dropped by a transformation (skipped ones not included).
        self.dropped = 0

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        """The record to produce, or None when it was dropped or skipped (then it is already done)."""
        try:
            transformed = self._chain.apply(record)
        except TransformError as exc:
            if not self._policy.tolerate:
                raise ConnectError(f"{self._task}: {exc}") from exc
            self._skips.skip(exc, record.topic, record.partition, f"{dict(record.source_partition)} "
                             f"{record.source_offset}", record.key, record.value, what="failed to transform")
            transformed = None
        else:
            if transformed is None:
                self.dropped += 1
        if transformed is None:
            submitted = self._submitted
            submitted.ack(submitted.submit(record))
        return transformed

    def close(self) -> None:
        self._chain.close()


class RecordLoop:
    """Sends one task's polled records one by one and tracks them until acknowledged.

    Everything here runs on the task thread (delivery callbacks run inside ``producer.poll``), so the
    tracking needs no lock. A failure that comes with a delivery report is kept in ``failure`` (the
    owner raises it after the step); one raised while producing propagates. With ``hold`` the task hears
    of acknowledged records only at :meth:`release` (after their transaction committed).
    """

    def __init__(self, task_id: ConnectorTaskId, task: SourceTask, settings: SourceTaskSettings, *,
                 skips: SkipReporter, metrics: TaskMetrics, stopping: threading.Event,
                 transforms: TransformationChain | None, hold: bool,
                 active_topics: ActiveTopicRecorder | None = None) -> None:
        policy = settings.error_policy
        self._id = task_id
        self._task = task
        self._policy = policy
        self._skips = skips
        self._metrics = metrics
        self._cap = settings.max_outstanding_records
        self._stopping = stopping
        self.submitted = SubmittedRecords()
        #: The connector's transformations (a task with some never copies in bulk).
        self.stage = transforms and TransformStage(transforms, task_id, policy, skips, self.submitted)
        # Collecting acknowledged records for the base class's no-op commit_record(s) is pure overhead.
        self._wants_commit_records = (type(task).commit_record is not SourceTask.commit_record
                                      or type(task).commit_records is not SourceTask.commit_records)
        #: Acknowledged records the task hears of only at release() (``hold``: exactly-once).
        self._held: Acknowledged = []
        self._deliver: Callable[[Acknowledged], None] = self._held.extend if hold else self._tell_task
        #: The last poll batch while part of it is still to be sent (cap reached or queue full).
        self._batch: list[SourceRecord] | None = None
        self._batch_pos = 0
        #: The first failure a delivery report brought (the task raises it after the current step).
        self.failure: BaseException | None = None
        #: Set once the producer was purged at close: failed reports after that are not failures.
        self.closing = False
        #: Records acknowledged since WorkerSourceTask last counted them.
        self.written = 0
        #: KIP-558: told the topics of acknowledged records (None: topic tracking is off).
        self.active_topics = active_topics

    @property
    def tracking(self) -> SubmittedRecords:
        return self.submitted

    @property
    def holds_acknowledgements(self) -> bool:
        return bool(self._held)

    def release(self) -> None:
        """The transaction of the held acknowledgements committed: tell the task now."""
        held = self._held
        if held:
            acknowledged = held.copy()
            held.clear()  # the same list: _deliver is its bound extend
            self._tell_task(acknowledged)

    def close(self) -> None:
        if self.stage is not None:
            self.stage.close()

    def step(self, producer: Producer) -> None:
        """Poll a batch (unless one is pending), produce, serve."""
        if not self._batch:
            started = time.monotonic()
            records = self._poll()
            if records:
                self._metrics.poll_batch_seconds.observe(time.monotonic() - started)
                self._metrics.records_polled.inc(len(records))
                self._batch, self._batch_pos = records, 0
        if self._batch:
            self._send(producer)
            self.serve(producer, 0)
        else:
            self.serve(producer, _EMPTY_POLL_WAIT_S)

    def _poll(self) -> list[SourceRecord] | None:
        """``task.poll()``; a RetriableError is logged and the poll retried later (as in Java)."""
        try:
            return self._task.poll()
        except RetriableError as exc:
            logger.warning("%s poll failed, will retry: %s", self._id, exc)
            self._stopping.wait(_RETRY_BACKOFF_S)
            return None

    def _send(self, producer: Producer) -> None:
        """Produce the pending poll batch until it is done, the outstanding cap is reached or the
        producer's queue is full; what is left is sent by a later loop iteration.

        Returning instead of waiting here keeps commits, pause and stop serviced while the target is
        slow. Records still in ``_batch`` when the task stops were never tracked, so their offsets
        cannot be committed: after a restart the task polls them again.
        """
        records = self._batch
        assert records is not None
        submitted = self.submitted
        submit = submitted.submit
        produce = producer.produce
        stage = self.stage
        cap = self._cap
        pos = self._batch_pos
        end = len(records)
        while pos < end:
            record = original = records[pos]
            if stage is not None:  # produce the transformed record; track the task's own (its offset)
                transformed = stage.apply(original)
                if transformed is None:  # dropped or skipped: already done
                    pos += 1
                    continue
                record = transformed
            sub = submit(original)
            partition = record.partition
            headers: Any = record.headers  # confluent-kafka wants a list (or dict), or None
            if headers is not None and not isinstance(headers, list):
                headers = list(headers)
            try:
                produce(record.topic, value=record.value, key=record.key,
                        partition=-1 if partition is None else partition, on_delivery=sub,
                        timestamp=record.timestamp or 0, headers=headers)
            except BufferError:
                submitted.drop(sub)
                self.serve(producer, ROOM_WAIT_S)  # librdkafka's queue is full: serve deliveries, retry later
                break
            except (KafkaException, TypeError, ValueError) as exc:
                submitted.drop(sub)
                self._metrics.produce_errors.inc()
                if not self._policy.tolerates(exc):
                    raise ConnectError(f"{self._id}: producer refused a record for topic {record.topic}: "
                                       f"{exc}") from exc
                self._skips.skip(exc, record.topic, record.partition, f"{dict(record.source_partition)} "
                                 f"{record.source_offset}", record.key, record.value)
                if record.source_offset is not None:  # a skipped record is done: commit past it
                    submitted.ack(submitted.submit(original))
            pos += 1
            if submitted.outstanding >= cap:
                break
        if pos < end:
            self._batch_pos = pos
        else:
            self._batch = None

    def serve(self, producer: Producer, timeout_s: float) -> None:
        """``producer.poll``, then acknowledge what it delivered (on the task thread)."""
        producer.poll(timeout_s)
        if self.submitted.reports:
            self._acknowledge()

    def _acknowledge(self) -> None:
        """Acknowledge the filed delivery reports and tell the task, once for all of them."""
        submitted = self.submitted
        reports = submitted.reports.copy()
        submitted.reports.clear()
        acknowledged: Acknowledged | None = [] if self._wants_commit_records else None
        failed = submitted.ack_reports(reports, acknowledged)
        self.written += len(reports) - len(failed)
        if failed and not self.closing:  # reports purged at close: not acknowledged, not committed
            self._metrics.produce_errors.inc(len(failed))
            if all(self._policy.tolerates(e) for _, e, _ in failed):  # skipped: done, offsets committable
                for sub, error, _message in failed:
                    record = sub.record
                    self._skips.skip(error.str(), record.topic, record.partition,
                                     f"{dict(record.source_partition)} {record.source_offset}", record.key,
                                     record.value)
                submitted.ack_reports([(sub, None, message) for sub, _, message in failed])
            else:
                sub, error, _ = failed[0]
                if self.failure is None:
                    self.failure = ConnectError(f"{self._id}: the target did not acknowledge a record for "
                                                f"{sub.record.topic}: {error.str()}")
        if self.active_topics is not None:
            self.active_topics.record({sub.record.topic for sub, error, _ in reports if error is None})
        if acknowledged:
            self._deliver(acknowledged)

    def _tell_task(self, acknowledged: Acknowledged) -> None:
        try:
            self._task.commit_records(acknowledged)
        except Exception:  # Java logs and carries on: commit_record is a notification
            logger.exception("%s commit_records failed", self._id)
