"""WorkerSourceTask: runs one SourceTask on its own thread (Connect's ``WorkerSourceTask``).

The loop, all on the task thread::

    task.poll() -> records -> producer.produce(..., on_delivery=<SubmittedRecord>) -> producer.poll(0)
         ^                                                                               |
         |   delivery reports, all of one poll: ack -> task.commit_records(acked) <------+
         +-- every offset.flush.interval.ms: committable offsets -> OffsetStore.put on the committer's
             thread; once written, task.commit() on the task thread (offset_committer)

Guarantees, and how they are kept:

* **No record lost (at least once).** A record's source offset reaches the offset store only once the
  target acknowledged it *and* every earlier record of the same source partition (Invariant C in
  :mod:`~connect_runtime.runtime.task.submitted_records`). ``OffsetStore.put`` is durable before
  ``task.commit()`` runs. A record the producer refused is never tracked, so it cannot be committed.
* **Order per target partition.** The producer is idempotent with ``enable.gapless.guarantee`` unless the
  user says otherwise (:func:`task_producer_config` says why).
* **A RetriableError from ``task.poll()`` is retried**; any other exception from ``start``/``poll``
  fails the task (FAILED with the trace), as Java does.
* **A failed start leaks nothing.** As in Java (``AbstractWorkerSourceTask``, KAFKA-10792) a task counts
  as started once ``initialize`` is attempted, so a ``start`` that raises half-way still gets ``stop``
  and ``close`` (which must tolerate a partial start) and releases the clients/threads it opened; a
  restarted task would otherwise leave them behind each time.
* **Any delivery error fails the task** (``errors.tolerance=none``): librdkafka already retried the
  retriable ones. With ``errors.tolerance=all`` the record is skipped, counted and logged
  (:mod:`~connect_runtime.runtime.task.error_policy`).
* **Bounded memory.** At most ``max_outstanding_records`` records are tracked; at the cap the loop
  stops calling ``task.poll()`` and only serves delivery reports. Bytes are bounded by librdkafka's
  queue (``queue.buffering.max.kbytes``, 128 MiB by default here instead of librdkafka's 1 GiB; Java's
  ``buffer.memory`` is 32 MiB): ``BufferError`` (queue full) is answered by ``producer.poll()`` until
  there is room, and the tracked records are the ones in that queue. Nothing queues without a bound.
* **Threading.** Delivery callbacks run inside ``producer.poll()``/``flush()``, which only the task
  thread calls, so ``commit_records`` runs on the task thread as the API promises and the tracking
  needs no lock. ``stop()``, ``transition_to()`` and ``request_commit()`` are the only calls from other
  threads; they set flags. ``await_commit()`` waits on a condition the task thread signals.
* **A commit on request** (:meth:`WorkerSourceTask.commit_offsets`: a planned failover makes the source
  offsets final without waiting for ``offset.flush.interval.ms``). The caller gets a ticket; it is served
  by the first commit that *began* after it was asked for, so that commit covers every record acknowledged
  before the request: a commit already in flight then is not enough. Under exactly-once the commit is the
  open transaction's (a transaction boundary now). The answer says whether it committed, and why not.

The task owns the loop around a step (pause, the outstanding cap, offset commits, shutdown); a
:class:`SourceLoop` owns what a step does. There are two, both on the task thread only. Per record
(:mod:`~connect_runtime.runtime.task.record_source_loop`): a delivery callback per record, reports acknowledged
in one loop after each ``producer.poll``. Bulk (:mod:`~connect_runtime.runtime.task.bulk_source_loop`), for a
:class:`~connect_runtime.api.bulk.BulkSourceTask` without transformations: the task produces straight from
its input in runs acknowledged as a whole. Acknowledgements reach the task (``commit_records`` /
``runs_acknowledged``) as they come, or, for a loop that holds them (exactly-once: only after their
transaction committed), at :meth:`SourceLoop.release`. The task is configured by one frozen
:class:`~connect_runtime.runtime.task.source_task_settings.SourceTaskSettings`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import ClassVar, Protocol

from confluent_kafka import Producer

from connect_runtime.api.bulk import BulkSourceTask
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.task import SourceTask
from connect_runtime.api.transforms import TransformationChain
from connect_runtime.clients.factory import close_producer, new_producer
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.logging_context import set_context as set_log_context
from connect_runtime.metrics import TaskMetrics
from connect_runtime.runtime.status import StatusListener, report_task_state, trace_of
from connect_runtime.runtime.task.bulk_source_loop import BulkLoop
from connect_runtime.runtime.task.error_policy import SkipReporter
from connect_runtime.runtime.task.offset_committer import OffsetCommitter
from connect_runtime.runtime.task.record_source_loop import RecordLoop
from connect_runtime.runtime.task.source_task_settings import DEFAULT_MAX_OUTSTANDING_RECORDS, SourceTaskSettings
from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.submitted_runs import SubmittedRuns
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder
from connect_runtime.storage.kafka_offset_store import OffsetStoreReader
from connect_runtime.storage.offset_store import OffsetStore

logger = logging.getLogger(__name__)

ProducerFactory = Callable[[dict[str, str]], Producer]

_IDLE_POLL_S = 0.05

__all__ = ["DEFAULT_MAX_OUTSTANDING_RECORDS", "PRODUCER_DEFAULTS", "SourceTaskSettings", "WorkerSourceTask",
           "task_producer_config"]

#: Connect's producer safety defaults, in librdkafka names (:func:`task_producer_config` says why).
PRODUCER_DEFAULTS: Mapping[str, str] = {
    "acks": "all",
    # Java's default is 5 (Kafka 4.0, KIP-1030): 5 takes ~5 ms off the replication latency's p50 but costs
    # 31-40% more copier CPU per record at 1 KB (bench/results.md, "the task producer's linger.ms 10 -> 5");
    # latency-sensitive flows set producer.override.linger.ms.
    "linger.ms": "10",
    "message.timeout.ms": "0",
    # librdkafka fails the records of a topic its metadata calls unknown after this (default 30 s); a topic
    # created just before the task starts can take longer to show on a busy cluster (see below).
    "topic.metadata.propagation.max.ms": "600000",
    # librdkafka's default is 1 GiB per producer; a record count cap alone does not bound bytes.
    "queue.buffering.max.kbytes": "131072",
}


def task_producer_config(base: Mapping[str, str], task: ConnectorTaskId, *,
                         tolerate_errors: bool = False) -> dict[str, str]:
    """The producer config of one task: Connect's defaults, then the worker's settings, then the client id.

    Producer safety (why these defaults): ``acks=all`` and idempotence, so the target acknowledges each
    partition's records once and in order with up to 5 requests in flight (Java pins one request in flight
    instead, which caps throughput at one round trip per batch); without idempotence ordering needs one
    request in flight. ``message.timeout.ms=0`` (never time out) copies Connect's
    ``delivery.timeout.ms=Integer.MAX_VALUE``: a slow target stalls the task, it never drops a record.
    ``topic.metadata.propagation.max.ms`` (10 minutes, librdkafka's 30 s) for the same reason: Java's
    producer blocks in ``send`` until a new topic's metadata shows and Connect retries the send, while
    librdkafka fails every queued record of a topic still unknown after it, which fails the task; a Kafka
    broker shows thousands of newly created partitions only after tens of seconds. It delays only the
    verdict on a topic the producer never saw: a topic deleted under a running producer fails at once.
    ``enable.gapless.guarantee``, unless errors are tolerated: a record the target refuses then fails every
    later one instead of leaving a hole behind records that succeed, which is what lets the bulk path
    acknowledge a whole run from its last record (:mod:`~connect_runtime.runtime.task.submitted_runs`). With
    ``errors.tolerance=all`` a refused record must be skipped and the rest delivered, so it is off and
    every record carries a delivery callback.

    Idempotence is on unless the user set ``enable.idempotence`` or weakened ``acks`` (librdkafka
    refuses idempotence without ``acks=all``); without it, ordering needs one request in flight.
    """
    config = {**PRODUCER_DEFAULTS, **base}
    if "enable.idempotence" not in base:
        strong_acks = config.get("acks", config.get("request.required.acks", "all")) in ("all", "-1")
        config["enable.idempotence"] = "true" if strong_acks else "false"
    idempotent = is_true(config["enable.idempotence"])
    in_flight_keys = ("max.in.flight.requests.per.connection", "max.in.flight")
    if not idempotent and not any(k in base for k in in_flight_keys):
        config["max.in.flight.requests.per.connection"] = "1"
    if idempotent and not tolerate_errors:
        config.setdefault("enable.gapless.guarantee", "true")
    config.setdefault("client.id", f"connector-producer-{task}")
    return config


def is_true(value: object) -> bool:
    return str(value).strip().lower() == "true"


class SourceLoop(Protocol):
    """One source task's copy path, driven by WorkerSourceTask on the task thread."""

    #: The first error that fails the task (a refused record, a failed delivery); the task raises it.
    failure: BaseException | None
    #: Set once the producer was purged at close: failed reports after that are not failures.
    closing: bool
    #: Records acknowledged since the task last counted them (the task resets it).
    written: int

    @property
    def tracking(self) -> SubmittedRecords | SubmittedRuns:
        """What was produced and not yet committed: the offset committer's input."""
        ...

    @property
    def holds_acknowledgements(self) -> bool:
        """Whether acknowledgements wait for :meth:`release` (always False for a loop that does not hold)."""
        ...

    def step(self, producer: Producer) -> None:
        """Poll the task once, produce what it returned, serve the delivery reports."""

    def serve(self, producer: Producer, timeout_s: float) -> None:
        """``producer.poll``, then acknowledge what it delivered."""

    def release(self) -> None:
        """The held acknowledgements committed: tell the task now."""

    def close(self) -> None:
        """Release what the loop holds (the transformations), after the producer closed."""


class TaskContext:
    """The SourceTaskContext a task receives."""

    __slots__ = ("_metrics_registry", "_reader", "_task_id", "_worker_id")

    def __init__(self, task_id: int, worker_id: str, reader: OffsetStorageReader,
                 metrics_registry: MetricsRegistry) -> None:
        self._task_id = task_id
        self._worker_id = worker_id
        self._reader = reader
        self._metrics_registry = metrics_registry

    @property
    def task_id(self) -> int:
        return self._task_id

    @property
    def worker_id(self) -> str:
        return self._worker_id

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    @property
    def metrics_registry(self) -> MetricsRegistry:
        return self._metrics_registry


class WorkerSourceTask:
    """One running source task: its thread, producer and offset bookkeeping.

    Lifecycle: ``start()`` launches the thread; ``stop()`` asks it to finish (non-blocking);
    ``join(timeout_s)`` waits. On the way out the thread stops the task, flushes the producer for at
    most ``settings.shutdown_timeout_s``, commits the offsets of every acknowledged prefix, closes the
    task (``SourceTask.close``, whether that commit succeeded or not) and reports UNASSIGNED (or FAILED
    with the trace, if anything failed).

    ``metrics_registry`` is what the task's context offers it for its own metrics (the herder's
    registry); ``metrics`` are the runtime's own series of this task.

    Subclasses (:class:`~connect_runtime.runtime.task.exactly_once_task.ExactlyOnceWorkerSourceTask`) override
    only the hooks below (:meth:`_configure_producer`, :meth:`_new_committer`, :meth:`_producer_opened`,
    :meth:`_dispose_producer`) and :attr:`defers_acknowledgements`; they may use :attr:`loop`,
    :meth:`_first_failure` and :meth:`_serve_deliveries`.
    """

    #: Acknowledgements reach the task only once their offsets committed (``loop.release()``), and a
    #: bulk run needs no report per record: set by a task whose commit confirms every record itself.
    defers_acknowledgements: ClassVar[bool] = False

    def __init__(self, task_id: ConnectorTaskId, task: SourceTask, task_config: Mapping[str, str],
                 settings: SourceTaskSettings, *, offset_store: OffsetStore, producer_config: Mapping[str, str],
                 status_listener: StatusListener, metrics: TaskMetrics, metrics_registry: MetricsRegistry,
                 target_state: TargetState = TargetState.STARTED, producer_factory: ProducerFactory = new_producer,
                 transforms: TransformationChain | None = None,
                 active_topics: ActiveTopicRecorder | None = None) -> None:
        self.id = task_id
        self.settings = settings
        self._task = task
        self._config = dict(task_config)
        self._store = offset_store
        self._producer_config = self._configure_producer(
            task_producer_config(producer_config, task_id, tolerate_errors=settings.error_policy.tolerate))
        self._skips = SkipReporter(settings.error_policy, str(task_id), metrics.produce_errors)
        self._listener = status_listener
        self._metrics = metrics
        self._producer_factory = producer_factory
        self._metrics_registry = metrics_registry
        #: KIP-558: told the topics of acknowledged records (None: topic tracking is off).
        self._active_topics = active_topics

        self._target = target_state
        self._state_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stop_requested_at: float | None = None
        self._task_stop_called = False
        self._task_started = False
        self._cancelled = False
        self._commit_requested = False
        #: Commit tickets (:meth:`request_commit`): asked for, the newest served by a commit that succeeded,
        #: the newest served by one that did not (with why); ``_commits_closed`` once the thread ended.
        self._commits = threading.Condition()
        self._commits_asked = 0
        self._commits_succeeded = 0
        self._commits_failed: tuple[int, str] = (0, "")
        self._commits_closed = False
        self._final_commit_ok = False
        self._thread: threading.Thread | None = None
        self._producer: Producer | None = None
        #: The per-record path; replaced by the bulk path once the task started, if it offers that.
        self._records = RecordLoop(task_id, task, settings, skips=self._skips, metrics=metrics,
                                   stopping=self._stopping, transforms=transforms,
                                   hold=self.defers_acknowledgements, active_topics=active_topics)
        self._loop: SourceLoop = self._records
        self._committer = self._new_committer()
        #: First error that fails the task (set on the task thread; read by anyone).
        self.failure: BaseException | None = None
        self.state = State.UNASSIGNED

    # -- hooks for subclasses (see the class docstring) -----------------------------------------------
    def _configure_producer(self, config: dict[str, str]) -> dict[str, str]:
        """The task's producer config, from the runtime's (Connect's defaults and the worker's)."""
        return config

    def _new_committer(self) -> OffsetCommitter:
        """What commits this task's offsets (called once, at the end of construction)."""
        return OffsetCommitter(str(self.id), self.id.connector, self._store, self.settings.offset_flush_timeout_s,
                               self._metrics, self._task.commit, self._task.before_offset_commit)

    def _producer_opened(self, producer: Producer) -> None:
        """The task's producer was created; the task is initialized and started next."""

    def _dispose_producer(self, producer: Producer) -> None:
        """Destroy the producer (flushed and purged by now): its threads and sockets go with it."""
        close_producer(producer)

    # -- control, from any thread --------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"task-{self.id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the task to finish; never blocks.

        Calls ``SourceTask.stop`` to interrupt a blocking ``poll`` if the task has started; a stop that
        arrives while ``start`` is still running is applied by the task thread right after it, so
        whatever ``start`` opened is always released (Java's ``startedShutdownBeforeStartCompleted``).
        """
        if not self._stopping.is_set():
            self._stop_requested_at = time.monotonic()
            self._stopping.set()
        with self._state_lock:
            started = self._task_started
        if started:
            self._stop_task()

    def cancel(self) -> None:
        """Give up on a task that did not stop in time: it reports no further state changes."""
        self._cancelled = True
        self.stop()

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the task thread; True once it has finished."""
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def transition_to(self, state: TargetState) -> None:
        """Pause or resume: a paused task is not polled, but its records keep being delivered/committed."""
        self._target = state

    def request_commit(self) -> int:
        """Commit offsets at the next loop iteration instead of waiting for the flush interval; returns the
        ticket :meth:`await_commit` takes."""
        with self._commits:
            self._commits_asked += 1
            ticket = self._commits_asked
            if self._commits_closed:
                self._commits_failed = (ticket, f"the task is not running ({self._ended_as()})")
                self._commits.notify_all()
        self._commit_requested = True
        return ticket

    def await_commit(self, ticket: int, timeout_s: float) -> str | None:
        """Wait until a commit that began after ``ticket`` was asked for has finished: None when it stored
        the offsets of every record acknowledged before the request, else why not (a failed write, the task
        stopped or failed, ``timeout_s`` passed)."""
        with self._commits:
            if not self._commits.wait_for(lambda: max(self._commits_succeeded, self._commits_failed[0]) >= ticket,
                                          timeout_s):
                return f"no offset commit completed within {timeout_s:g}s"
            if self._commits_succeeded >= ticket:  # a later commit that succeeded covers an earlier failure
                return None
            return self._commits_failed[1]

    def commit_offsets(self, timeout_s: float) -> str | None:
        """Commit now the offsets of every record acknowledged so far and wait (:meth:`await_commit`)."""
        return self.await_commit(self.request_commit(), timeout_s)

    @property
    def loop(self) -> SourceLoop:
        """The copy path: per record until the task started, then per record or in bulk."""
        return self._loop

    @property
    def outstanding(self) -> int:
        return self._loop.tracking.outstanding

    @property
    def peak_outstanding(self) -> int:
        return self._loop.tracking.peak

    @property
    def commit_cycles(self) -> int:
        """Finished offset-commit attempts (successful or not), for callers awaiting a commit."""
        return self._committer.cycles

    @property
    def bulk(self) -> bool:
        """Whether the task copies on the bulk path (known once it started)."""
        return isinstance(self._loop, BulkLoop)

    def _paused(self) -> bool:
        return self._target is not TargetState.STARTED

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- task thread ---------------------------------------------------------------------------------
    def _run(self) -> None:
        set_log_context(flow=self.settings.log_flow, connector_task=str(self.id))
        started = False
        try:
            if self._paused():
                # Like Java: a task created paused is not started until it is resumed.
                self._report(State.PAUSED)
                while self._paused() and not self._stopping.wait(_IDLE_POLL_S):
                    if self._commits_asked > self._commits_succeeded:  # nothing produced: nothing to commit
                        self._serve_commits(self._commits_asked, None)
                if self._stopping.is_set():
                    return
            producer = self._producer_factory(self._producer_config)
            self._producer_opened(producer)
            self._producer = producer
            reader = OffsetStoreReader(self._store, self.id.connector)
            # Like Java (KAFKA-10792): once initialize is attempted the task counts as started, so a start
            # that raises half-way still gets stop() and close() to release what it opened.
            started = True
            self._task.initialize(TaskContext(self.id.task, self.settings.worker_id, reader,
                                              self._metrics_registry))
            self._task.start(self._config)
            self._loop = self._copy_path(self._task, producer)
            with self._state_lock:
                self._task_started = True
            self._metrics.task_starts.inc()
            logger.info("%s started (worker %s)", self.id, self.settings.worker_id)
            self._report(State.RUNNING)
            self._execute(producer)
        except BaseException as exc:  # any failure of the task fails the task, with its trace
            if self.failure is None:
                self.failure = exc
        finally:
            self._close(started)

    def _copy_path(self, task: SourceTask, producer: Producer) -> SourceLoop:
        """The bulk path if the task offers it, has no transformations and the producer acknowledges in
        order (idempotent); the per-record path otherwise."""
        if (not isinstance(task, BulkSourceTask) or not is_true(self._producer_config["enable.idempotence"])
                or self._records.stage is not None or not task.bulk_ready()):
            return self._records
        gapless = is_true(self._producer_config.get("enable.gapless.guarantee", "false"))
        each_record = not gapless and not self.defers_acknowledgements
        logger.info("%s copies in bulk (acknowledged per run%s)", self.id,
                    ", committed per transaction" if self.defers_acknowledgements
                    else ", a delivery report per record" if each_record else "")
        return BulkLoop(str(self.id), task, producer, self.settings, each_record=each_record, skips=self._skips,
                        metrics=self._metrics, stopping=self._stopping, hold=self.defers_acknowledgements,
                        active_topics=self._active_topics)

    def _execute(self, producer: Producer) -> None:
        loop = self._loop
        tracking = loop.tracking
        cap = self.settings.max_outstanding_records
        flush_interval_s = self.settings.offset_flush_interval_s
        outstanding_gauge = self._metrics.outstanding_records
        stopping = self._stopping
        committer = self._committer
        next_commit = time.monotonic() + flush_interval_s
        serving = 0  # the newest commit ticket the commit in flight serves
        while not stopping.is_set():
            if self._paused():
                if self.state is not State.PAUSED:
                    self._report(State.PAUSED)
                loop.serve(producer, _IDLE_POLL_S)
            elif tracking.outstanding >= cap:
                loop.serve(producer, _IDLE_POLL_S)  # at the cap: only serve delivery reports
            else:
                if self.state is not State.RUNNING:
                    self._report(State.RUNNING)
                loop.step(producer)
            if loop.failure is not None and self.failure is None:
                self.failure = loop.failure
            if self.failure is not None:
                raise self.failure
            written = loop.written
            if written:
                loop.written = 0
                self._metrics.records_written.inc(written)
            outstanding_gauge.set(tracking.outstanding)
            committer.poll()
            if (self._commit_requested or time.monotonic() >= next_commit) and not committer.in_flight:
                if self._commit_requested:
                    self._commit_requested = False
                    serving = self._commits_asked  # every ticket asked for until now
                committer.start(tracking)  # the write runs on the committer's thread
                next_commit = time.monotonic() + flush_interval_s
            if serving and not committer.in_flight:
                self._serve_commits(serving, committer.last_error)
                serving = 0

    def _serve_commits(self, ticket: int, error: str | None) -> None:
        """Tickets up to ``ticket`` were served by a commit that succeeded (``error`` None) or not."""
        with self._commits:
            if error is None:
                self._commits_succeeded = max(self._commits_succeeded, ticket)
            else:
                self._commits_failed = (max(self._commits_failed[0], ticket), error)
            self._commits.notify_all()

    def _ended_as(self) -> str:
        """How the task thread ended, in one line: ``stopped`` or ``FAILED: <the failure's first line>``."""
        failure = self.failure
        if failure is None:
            return "stopped"
        lines = str(failure).strip().splitlines()
        return f"FAILED: {lines[0] if lines else type(failure).__name__}"

    def _first_failure(self) -> BaseException | None:
        """The task's first failure, or one its loop has reported and the task not raised yet."""
        return self.failure or self._loop.failure

    def _serve_deliveries(self) -> None:
        """Serve the producer's delivery reports now, without waiting (on the task thread)."""
        producer = self._producer
        assert producer is not None
        self._loop.serve(producer, 0)

    def _close(self, started: bool) -> None:
        """Stop the task, flush (bounded), commit what was acknowledged, report the final state.

        ``started``: ``initialize``/``start`` were called, even if they raised; the task's ``stop`` and
        ``close`` then run (they must tolerate a partial start). Offsets are committed (and so
        ``commit`` called) only for a task whose ``start`` returned.
        """
        if started:
            self._stop_task()
        loop = self._loop
        producer = self._producer
        if producer is not None:
            try:
                self._flush_and_commit(producer, loop)
            finally:
                self._producer = None
                self._committer.close()  # waits for its thread: the task's own producers close next
                self._dispose_producer(producer)
        if started:
            self._close_task()
        written = loop.written
        loop.written = 0
        if self.failure is None and loop.failure is not None:
            self.failure = loop.failure
        if written:
            self._metrics.records_written.inc(written)
        self._metrics.outstanding_records.set(0)
        loop.close()
        self._metrics.produce_errors.settle()
        with self._commits:  # a ticket still waiting: the final commit served it if it succeeded
            self._commits_closed = True
            if self._final_commit_ok and self.failure is None:
                self._serve_commits(self._commits_asked, None)
            else:
                self._serve_commits(self._commits_asked, f"the task is not running ({self._ended_as()})")
        if self.failure is not None:
            logger.error("%s failed: %s", self.id, self.failure)
            self._report(State.FAILED, trace_of(self.failure))
        else:
            logger.info("%s stopped", self.id)
            self._report(State.UNASSIGNED)

    def _flush_and_commit(self, producer: Producer, loop: SourceLoop) -> None:
        """Flush, serve the last delivery reports, commit what was acknowledged (only if the task's
        ``start`` returned), then purge what is left: it is not acknowledged, so its offsets stay uncommitted.

        A task the worker gave up on (:meth:`cancel`: it did not stop within its timeout, and the worker may
        have gone on, e.g. to a KIP-875 offsets reset or to the task's next owner) commits nothing more, as in
        Java (``finalOffsetCommit``): a late commit would write its offsets over whatever came meanwhile. Its
        records are copied again from the last commit instead.

        Never raises for a failed flush or commit (logged): closing must always reach the status report.
        """
        settings = self.settings
        shutdown_timeout_s = settings.shutdown_timeout_s
        try:
            # The graceful-shutdown budget runs from the stop request, so that flushing and the final
            # commit fit in the time the worker waits for this task (stop_tasks' timeout).
            budget = shutdown_timeout_s
            stop_requested_at = self._stop_requested_at
            if stop_requested_at is not None:
                budget = max(0.0, budget - (time.monotonic() - stop_requested_at))
            remaining = producer.flush(budget)
            loop.serve(producer, 0)
            if remaining:
                logger.warning("%s: %d records not acknowledged within %.1fs of stopping; their offsets "
                               "are not committed, so they will be sent again after a restart",
                               self.id, remaining, shutdown_timeout_s)
            if self._task_started and self._cancelled:
                logger.warning("%s: skipping the final offset commit: the task was cancelled (it did not stop in "
                               "time); its records since the last commit will be copied again", self.id)
            elif self._task_started:
                self._committer.commit_now(loop.tracking, settings.offset_flush_timeout_s)
                self._final_commit_ok = self._committer.last_error is None
        except Exception:  # closing must always reach the status report
            logger.exception("%s error while flushing and committing on close", self.id)
        finally:
            loop.closing = True
            producer.purge()
            loop.serve(producer, 0)

    def _stop_task(self) -> None:
        with self._state_lock:
            if self._task_stop_called:
                return
            self._task_stop_called = True
        try:
            self._task.stop()
        except Exception:  # stop must not break the shutdown sequence
            logger.exception("%s SourceTask.stop() failed", self.id)

    def _close_task(self) -> None:
        """``SourceTask.close``: after the final commit attempt, whatever its outcome."""
        try:
            self._task.close()
        except Exception:  # closing must always reach the status report
            logger.exception("%s SourceTask.close() failed", self.id)

    def _report(self, state: State, trace: str | None = None) -> None:
        previous, self.state = self.state, state
        self._metrics.set_state(state.value)
        if self._cancelled:
            return
        try:
            report_task_state(self._listener, self.id, state, previous, trace)
        except Exception:  # a status store hiccup must not kill the task
            logger.exception("%s could not report state %s", self.id, state.value)
