"""Exactly-once source tasks (KIP-618, Connect's ``ExactlyOnceWorkerSourceTask``).

With ``exactly.once.source.support=enabled`` every source task produces through a transactional
producer (``transactional.id`` = ``<group.id>-<connector>-<task>``, Java's name). A transaction holds a
batch of records *and* the source offsets of those records, written to the offsets topic by the same
producer; both are on the target cluster, so they commit (or abort) together. After a crash the
offsets topic, read ``read_committed``, says exactly how far the committed data got: nothing is sent
twice and nothing is skipped.

How it fits the at-least-once task. The loop of :class:`WorkerSourceTask` is kept; what changes:

* the producer is transactional: ``init_transactions`` at start fences any older producer with the same
  id (a zombie instance of this task, e.g. a paused process whose work moved), then the herder's
  post-producer check runs (below), then the offsets store is read to its end so the task resumes from the
  newest *committed* offsets;
* the post-producer check (Java's ``verifyTaskGenerationAndOwnership``): once ``init_transactions`` returned,
  the config topic is read to its end and the task goes on only if its task-config generation is still the
  newest and the task still assigned here; otherwise it fails before producing anything. Why: the leader
  fences a new generation's ids (``fenceProducers``) once, before its tasks start. A task of the previous
  generation whose ``init_transactions`` came after that fencing holds a fresh epoch, so no fencing stops it:
  it would copy partitions that a task of the new generation copies too. Reading the config topic after
  ``init_transactions`` closes that gap: a fencing that came before it was preceded by the new generation's
  task configs, which the read then sees; one that comes after it fences this producer;
* the offset commit (:class:`TransactionalCommitter`, in place of the off-thread
  :class:`~connect_runtime.runtime.task.offset_committer.OffsetCommitter`) runs on the task thread at each
  transaction boundary: wait until every record of the transaction is acknowledged, produce the
  committable offsets into the transaction, ``commit_transaction``, begin the next. ``poll`` commits
  after every batch (the loop's offset interval is 0), ``interval`` every
  ``transaction.boundary.interval.ms`` (:func:`exactly_once_settings`);
* a boundary's commit waits until it completes, however slow the target: ``offset.flush.timeout.ms`` does
  not bound it (KIP-618: the setting has no effect on exactly-once source tasks; Java's task producers
  block without limit, ``max.block.ms`` = ``Long.MAX_VALUE``). librdkafka's ``commit_transaction`` gives
  up after its timeout with a retriable error and finishes the same commit when called again, so it is
  called in slices of :data:`COMMIT_SLICE_S` until it completes or the task is stopping; the final commit
  of a stopping task takes up the commit in progress within the stop's budget;
* the task hears of acknowledged records (``commit_records`` / ``runs_acknowledged``: offset syncs, the
  exact offset map, metrics) only once their transaction committed, so nothing downstream ever claims
  an offset of an uncommitted transaction (Java calls ``commitRecord`` after the commit too);
* any failure (a refused record, a fenced producer, a commit that fails other than by taking long)
  aborts the open transaction and fails the task: none of that transaction counts, and a restart
  resumes from the last commit.
  ``errors.tolerance=all`` cannot skip a refused record inside a transaction (the transaction is then
  abortable only), so it fails the task as well.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from confluent_kafka import KafkaError, KafkaException, Producer

from connect_runtime.api.connector_config import TRANSACTION_BOUNDARY, TRANSACTION_BOUNDARY_INTERVAL_MS
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import SourceTask
from connect_runtime.api.transforms import TransformationChain
from connect_runtime.clients.factory import new_producer
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.metrics import TaskMetrics
from connect_runtime.runtime.status import StatusListener
from connect_runtime.runtime.task.offset_committer import OffsetCommitter
from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings, TransactionSettings
from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.submitted_runs import SubmittedRuns
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder
from connect_runtime.runtime.task.worker_source_task import ProducerFactory, WorkerSourceTask
from connect_runtime.storage.fenced_writer import task_transactional_id
from connect_runtime.storage.offset_store import OffsetMap, OffsetStore

logger = logging.getLogger(__name__)

POLL = "poll"
INTERVAL = "interval"

#: How long ``init_transactions`` may take at start (a broker without transactions answers at once).
INIT_TIMEOUT_S = 60.0

#: How long one ``commit_transaction`` call of a boundary's commit waits before the task looks whether it
#: is stopping (and calls again if not): a stop request is heard within this.
COMMIT_SLICE_S = 1.0


@runtime_checkable
class TransactionalOffsets(Protocol):
    """An offset store whose records a task can write itself (:class:`KafkaOffsetStore`)."""

    def records_for(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]]
                    ) -> list[tuple[str, int, bytes, bytes | None]]: ...

    def refresh(self, timeout_s: float = 30.0) -> None: ...


def transactional_producer_config(config: Mapping[str, str], transactional_id: str) -> dict[str, str]:
    """The task's producer config under exactly-once: its id, idempotence, and a delivery timeout
    within the transaction timeout (librdkafka refuses ``message.timeout.ms`` above it; the at-least-once
    default 0, never, would be)."""
    result = {**config, "transactional.id": transactional_id, "enable.idempotence": "true", "acks": "all"}
    timeout = result.setdefault("transaction.timeout.ms", "60000")
    if result.get("message.timeout.ms", "0") in ("0", "") or int(result["message.timeout.ms"]) > int(timeout):
        result["message.timeout.ms"] = timeout
    return result


def is_fenced(exc: BaseException) -> bool:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and error.code() in (
        KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)


def may_retry_commit(exc: BaseException) -> bool:
    """Whether a failed ``commit_transaction`` may be called again to finish the same commit: a retriable
    error (its timeout ran out, the coordinator is loading or moving), not fenced, fatal or abortable."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return (isinstance(error, KafkaError) and error.retriable() and not error.fatal()
            and not error.txn_requires_abort() and not is_fenced(exc))


def exactly_once_settings(settings: SourceTaskSettings, group_id: str | None, task_id: ConnectorTaskId,
                          connector_config: Mapping[str, str]) -> SourceTaskSettings:
    """A task's settings under exactly-once: its transactional id, its transaction boundary and the offset
    commit interval that boundary sets (0 for ``poll``: after every batch); unchanged when the worker runs
    at least once (``group_id`` None). ConnectError for a boundary the runtime does not offer."""
    if group_id is None:
        return settings
    boundary = str(connector_config.get(TRANSACTION_BOUNDARY) or POLL).strip().lower()
    if boundary not in (POLL, INTERVAL):
        raise ConnectError(f"{TRANSACTION_BOUNDARY}={boundary}: the connector does not define transaction "
                           "boundaries; use poll or interval")
    interval_s = settings.offset_flush_interval_s
    interval = connector_config.get(TRANSACTION_BOUNDARY_INTERVAL_MS)
    if boundary == POLL:
        interval_s = 0.0
    elif interval not in (None, ""):
        interval_s = int(interval) / 1000
    transactions = TransactionSettings(task_transactional_id(group_id, task_id.connector, task_id.task), boundary)
    return replace(settings, offset_flush_interval_s=interval_s, transactions=transactions)


def transactional_offsets(store: OffsetStore) -> TransactionalOffsets:
    """``store`` as a store the task writes offsets to in its transactions; ConnectError if it cannot."""
    if not isinstance(store, TransactionalOffsets):
        raise ConnectError(f"exactly-once source support needs the Kafka offsets store, not {type(store).__name__}")
    return store


class TransactionalCommitter(OffsetCommitter):
    """Commits at transaction boundaries, on the task thread: records and their offsets in one transaction.

    Same interface as :class:`OffsetCommitter` (what the task loop calls), nothing in flight between calls.
    """

    def __init__(self, name: str, connector: str, store: OffsetStore, offsets: TransactionalOffsets,
                 timeout_s: float, metrics: TaskMetrics, task_commit: Callable[[], None], *,
                 failure: Callable[[], BaseException | None], held: Callable[[], bool], serve: Callable[[], None],
                 release: Callable[[], None], stopping: Callable[[], bool]) -> None:
        super().__init__(name, connector, store, timeout_s, metrics, task_commit)
        self._offsets = offsets
        self._failure = failure
        self._held = held
        self._serve = serve
        self._release = release
        self._stopping = stopping
        self.producer: Producer | None = None
        #: Whether a transaction is open (begun and not yet committed or aborted).
        self.open = False
        #: Whether the open transaction's commit was asked for and has not completed yet (its offsets are in
        #: it): the final commit of a task that began stopping meanwhile only waits for it.
        self.committing = False
        self.committed_transactions = 0

    @property
    def in_flight(self) -> bool:
        """Only a commit a stopping task left unfinished (its final commit takes it up): a boundary's commit
        otherwise completes on the task thread before :meth:`start` returns."""
        return self.committing

    def begin(self, producer: Producer, cluster: str) -> None:
        """``init_transactions`` (fences older holders of the id) then the first transaction."""
        self.producer = producer
        try:
            producer.init_transactions(INIT_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            text = error.str() if isinstance(error, KafkaError) else str(error)
            raise ConnectError(f"{self._name}: the target cluster {cluster} cannot run this task's transactions "
                               f"(exactly.once.source.support=enabled needs transactions and, with ACLs, WRITE "
                               f"and DESCRIBE on its transactional id): {text}") from exc
        producer.begin_transaction()
        self.open = True

    def start(self, tracking: Any) -> None:
        """A transaction boundary: commit what the open transaction holds (nothing to do if empty), waiting
        as long as the commit takes unless the task is stopping (module docstring)."""
        self._commit(tracking, None)

    def poll(self) -> None:
        return None

    def commit_now(self, tracking: Any, budget_s: float) -> None:
        """The final commit of a stopping task, or the abort of a failed one."""
        if self._failure() is not None:
            self.abort()
            return
        self._commit(tracking, max(0.1, budget_s))

    def abort(self) -> None:
        producer = self.producer
        if producer is None or not self.open:
            return
        self.open = False
        self.committing = False
        failed = self._failure() is not None
        try:
            producer.abort_transaction(self._timeout_s)
            if failed:
                logger.warning("%s aborted its open transaction: its records and offsets do not count", self._name)
        except (KafkaException, RuntimeError) as exc:  # fenced or fatal (or closed): the coordinator aborts it
            logger.warning("%s could not abort its transaction (%s); it will be aborted by the coordinator "
                           "or the next instance of the task", self._name, exc.args[0])

    def _commit(self, tracking: SubmittedRecords | SubmittedRuns, budget_s: float | None) -> None:
        """Commit the open transaction with its offsets; ``budget_s`` None: a boundary's commit, which waits
        until it completes unless the task is stopping (then the final commit takes it up)."""
        producer = self.producer
        if producer is None or not self.open:
            return
        if not self.committing and not tracking.outstanding and not self._held():
            return  # nothing produced since the last commit: keep the (empty) transaction open
        began = time.monotonic()
        try:
            failure = self._failure()
            if failure is not None:
                raise failure
            if not self.committing:
                # The offsets of every record produced in this transaction, acknowledged or not: the commit
                # makes all of them durable or none (it flushes and fails if any record failed), so there
                # is no round trip to wait for before producing them.
                offsets = tracking.submitted_offsets()
                for topic, partition, key, value in self._offsets.records_for(self._connector, offsets):
                    producer.produce(topic, value=value, key=key, partition=partition)
                self.committing = True
            if budget_s is not None:
                producer.commit_transaction(max(0.1, budget_s - (time.monotonic() - began)))
            elif not self._await_commit(producer, began):
                return  # stopping: the final commit (commit_now) waits for this one within its budget
            self.committing = False
            self._serve()  # the delivery reports of the committed records: every run acknowledged
            failure = self._failure()
            if failure is not None:
                raise failure
            tracking.take_committable()  # already written, in the transaction
        except BaseException as exc:
            self.abort()
            if is_fenced(exc):
                raise ConnectError(f"{self._name}: fenced: a newer instance of this task owns its transactional "
                                   "id (this one is a zombie); its open transaction does not count") from exc
            if isinstance(exc, KafkaException):
                raise ConnectError(f"{self._name}: transaction commit failed: {exc.args[0]}") from exc
            raise
        self.open = False
        self.committed_transactions += 1
        self._metrics.offset_commit_seconds.observe(time.monotonic() - began)
        self._release()
        self._committed()
        producer.begin_transaction()
        self.open = True

    def _await_commit(self, producer: Producer, began: float) -> bool:
        """``commit_transaction`` in slices until it completes (True) or the task is stopping (False);
        raises what is not a timeout (fenced, fatal, abortable), as a single call would."""
        warned = False
        while True:
            try:
                producer.commit_transaction(COMMIT_SLICE_S)
            except KafkaException as exc:
                if not may_retry_commit(exc):
                    raise
                if self._stopping():
                    return False
                if not warned and time.monotonic() - began >= self._timeout_s:
                    warned = True
                    logger.warning("%s: its transaction commit has waited over %.1fs (%s); it keeps waiting until "
                                   "the target completes it (offset.flush.timeout.ms does not bound an exactly-once "
                                   "commit)", self._name, self._timeout_s, exc.args[0])
                continue
            if warned:
                logger.info("%s: its transaction committed after %.1fs", self._name, time.monotonic() - began)
            return True

    def close(self) -> None:
        return None


class ExactlyOnceWorkerSourceTask(WorkerSourceTask):
    """A :class:`WorkerSourceTask` whose records and offsets commit in transactions (module docstring).

    Built from the settings' :class:`TransactionSettings` (see :func:`exactly_once_settings`); the
    offset store must take transactional writes (:class:`TransactionalOffsets`).
    """

    defers_acknowledgements = True

    def __init__(self, task_id: ConnectorTaskId, task: SourceTask, task_config: Mapping[str, str],
                 settings: SourceTaskSettings, *, offset_store: OffsetStore, producer_config: Mapping[str, str],
                 status_listener: StatusListener, metrics: TaskMetrics, metrics_registry: MetricsRegistry,
                 target_state: TargetState = TargetState.STARTED, producer_factory: ProducerFactory = new_producer,
                 transforms: TransformationChain | None = None,
                 active_topics: ActiveTopicRecorder | None = None,
                 post_producer_check: Callable[[], None] | None = None) -> None:
        if settings.transactions is None:
            raise ConnectError(f"{task_id}: an exactly-once task needs transaction settings")
        #: Raises if this task may no longer start (module docstring); None: nothing to check.
        self._post_producer_check = post_producer_check
        self.transactional_id = settings.transactions.transactional_id
        self._boundary = settings.transactions.boundary
        self._offsets = transactional_offsets(offset_store)
        super().__init__(task_id, task, task_config, settings, offset_store=offset_store,
                         producer_config=producer_config, status_listener=status_listener, metrics=metrics,
                         metrics_registry=metrics_registry, target_state=target_state,
                         producer_factory=producer_factory, transforms=transforms, active_topics=active_topics)

    @property
    def committed_transactions(self) -> int:
        return self._transactions().committed_transactions

    def _transactions(self) -> TransactionalCommitter:
        committer = self._committer
        assert isinstance(committer, TransactionalCommitter)
        return committer

    # -- WorkerSourceTask's hooks --------------------------------------------------------------------
    def _configure_producer(self, config: dict[str, str]) -> dict[str, str]:
        return transactional_producer_config(config, self.transactional_id)

    def _new_committer(self) -> OffsetCommitter:
        return TransactionalCommitter(
            str(self.id), self.id.connector, self._store, self._offsets, self.settings.offset_flush_timeout_s,
            self._metrics, self._task.commit, failure=self._first_failure,
            held=lambda: self.loop.holds_acknowledgements, serve=self._serve_deliveries, release=self._release,
            stopping=self._stopping.is_set)

    def _release(self) -> None:
        """The transaction committed: what it acknowledged reaches the task now (the loop in use then)."""
        self.loop.release()

    def _producer_opened(self, producer: Producer) -> None:
        flow = f"of flow {self.settings.log_flow} " if self.settings.log_flow else ""
        self._transactions().begin(producer, f"{flow}({self._producer_config.get('bootstrap.servers', '?')})")
        if self._post_producer_check is not None:
            self._post_producer_check()
        # Read the offsets written by earlier instances: init_transactions resolved their open transaction.
        self._offsets.refresh(max(self.settings.offset_flush_timeout_s, 30.0))
        logger.info("%s runs exactly-once (transactional.id %s, transaction.boundary %s)", self.id,
                    self.transactional_id, self._boundary)

    def _dispose_producer(self, producer: Producer) -> None:
        """Left to garbage collection: closing a fenced zombie's transactional producer here keeps its task
        from reporting FAILED (test_exactly_once.py, the SIGSTOP case), for a reason not yet found."""
