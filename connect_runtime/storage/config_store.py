"""Connector and task configurations, kept in ``config.storage.topic`` (Java's KafkaConfigBackingStore).

Record formats (keys and JSON values, byte-compatible with Java) are in
:mod:`connect_runtime.storage.config_records`.

Invariant "commit": task configs become visible only when the ``commit-<name>`` record that follows
them is read, and only if that commit covers a complete set ``0..N-1``. Until then they are held as
deferred updates, so a leader that dies between writing task 0 and task 1 never makes a half-written
generation visible (Java's ``processTasksCommitRecord``). A commit that does not cover a complete set
marks the connector *inconsistent*; its previous task configs stay in force. Records are applied, and
the invariant kept, by :class:`~connect_runtime.storage.config_topic_state.ConfigTopicState`; this
module reads and writes the topic.

Threading: records are applied on the log's consumer thread under ``_lock``; :meth:`snapshot` hands the
herder an immutable copy. Listener callbacks run on the log thread, after the record is applied, and
only once :meth:`start` has read the topic to its end (the herder takes its first snapshot then).
Only the leader's herder calls the write methods.

Leader fencing. With ``leader_transactional_id`` set (what
:func:`connect_runtime.runtime.distributed.assembly.build_herder` does, with Java's id
``connect-cluster-<group.id>``), every write goes through a
:class:`~connect_runtime.storage.fenced_writer.TransactionalWriter` that the herder creates with
:meth:`KafkaConfigStore.claim_write_privileges` when it becomes the leader. Its ``init_transactions``
fences the previous leader's writer, so a stale leader's writes fail (``FencedError``) instead of
landing in the topic. Each write method is one transaction (a connector's task records and their
commit record together). The log's consumer reads committed records only (librdkafka's default
``read_committed``), so records of a transaction aborted by fencing are never applied on Apache Kafka.
Without a claimed writer, writes raise :class:`WritePrivilegesError`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect_runtime.api.errors import ConnectError
from connect_runtime.lifecycle import TargetState
from connect_runtime.storage.config_records import (
    SESSION_KEY,
    RestartRequest,
    SessionKey,
    commit_key,
    commit_value,
    connector_key,
    fencing_key,
    fencing_value,
    logger_cluster_key,
    logger_level_value,
    properties_value,
    restart_key,
    restart_value,
    session_key_value,
    target_state_key,
    target_state_value,
    task_key,
)
from connect_runtime.storage.config_topic_state import (
    ClusterConfigState as ClusterConfigState,  # what snapshot() returns
)
from connect_runtime.storage.config_topic_state import ConfigTopicState, ConfigUpdateListener
from connect_runtime.storage.fenced_writer import TransactionalWriter
from connect_runtime.storage.kafka_log import KafkaBasedLog, LogRecord

logger = logging.getLogger(__name__)


LogFactory = Callable[..., KafkaBasedLog]
#: (topic, producer config, transactional id, timeout_s) -> a writer that fences earlier holders.
WriterFactory = Callable[[str, Mapping[str, Any], str, float], TransactionalWriter]


class WritePrivilegesError(ConnectError):
    """A fenced config store was written without a claimed (or after a fenced) leader writer."""


class KafkaConfigStore:
    """Connector/task configs, target states and restart requests on a single-partition compacted topic."""

    def __init__(self, topic: str, *, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                 admin_config: Mapping[str, str], replication_factor: int = 3,
                 transactional_id: str | None = None, log_factory: LogFactory = KafkaBasedLog,
                 leader_transactional_id: str | None = None,
                 writer_factory: WriterFactory = TransactionalWriter) -> None:
        self.topic = topic
        self._producer_config = dict(producer_config)
        self._leader_transactional_id = leader_transactional_id
        self._writer_factory = writer_factory
        self._writer: TransactionalWriter | None = None
        self._lock = threading.RLock()
        self._listener: ConfigUpdateListener | None = None
        self._started = False
        self._offset = -1
        self._state = ConfigTopicState()  # applied under _lock
        # Java forces a single partition and compaction on the config topic: ordering of task records
        # and their commit record is what invariant "commit" rests on.
        self._log = log_factory(topic, producer_config=producer_config, consumer_config=consumer_config,
                                admin_config=admin_config, consumed=self._consume, partitions=1,
                                replication_factor=replication_factor,
                                topic_config={"cleanup.policy": "compact"}, transactional_id=transactional_id)

    # -- lifecycle ---------------------------------------------------------------------------------
    def set_update_listener(self, listener: ConfigUpdateListener | None) -> None:
        self._listener = listener

    def start(self, timeout_s: float = 120.0) -> None:
        """Create the topic if needed and read it to the end; later records reach the listener."""
        self._log.start(timeout_s)
        with self._lock:
            self._started = True
        logger.info("Config store started on %s at offset %d with %d connector(s)", self.topic,
                    self._offset, self._state.connector_count())

    def stop(self) -> None:
        self.release_write_privileges()
        self._log.stop()

    # -- leader fencing ------------------------------------------------------------------------------
    @property
    def fenced_writes(self) -> bool:
        """True when writes need a claimed leader writer (``leader_transactional_id`` was given)."""
        return self._leader_transactional_id is not None

    def has_write_privileges(self) -> bool:
        writer = self._writer
        return not self.fenced_writes or (writer is not None and not writer.fenced)

    def claim_write_privileges(self, timeout_s: float = 30.0) -> None:
        """Become the only writer (call on becoming the group leader): fences every earlier leader.

        Only a worker that a rebalance has just made the leader may call this; a stale leader that
        called it would fence the real one (the herder calls it from new assignments only).
        """
        if self._leader_transactional_id is None:
            return
        self.release_write_privileges()
        self._writer = self._writer_factory(self.topic, self._producer_config, self._leader_transactional_id,
                                            timeout_s)

    def release_write_privileges(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:
                logger.exception("Closing the leader writer of %s failed", self.topic)

    def _write(self, records: Sequence[tuple[bytes, bytes | None]], timeout_s: float) -> None:
        """Write ``records`` (all or nothing when fenced writes are on), then read them back.

        Reading back waits for the offset of the last record written, not for a read-to-end round: on
        this single-partition topic every record before it (ours and other writers') is then applied
        too, which is all a read-to-end would guarantee, and it costs one fetch instead of the empty
        fetch a round needs to see the end (``fetch.wait.max.ms``: four such writes made a quarter of
        a fresh cluster's start-up)."""
        last: int | None
        if self.fenced_writes:
            writer = self._writer
            if writer is None or writer.fenced:
                raise WritePrivilegesError(f"this worker holds no write privileges on {self.topic} "
                                           "(not the leader, or fenced by a newer leader)")
            last = writer.write(records, timeout_s)
        else:
            errors: list[Exception] = []

            def sent(error: Exception | None, _record: LogRecord | None) -> None:
                if error is not None:
                    errors.append(error)

            for key, value in records[:-1]:
                self._log.send(key, value, sent)
            self._log.flush(timeout_s)
            if errors:
                # Nothing more after a failed write (e.g. no commit record without every task record).
                raise ConnectError(f"Failed to write to {self.topic}: {errors[0]}") from errors[0]
            last = self._log.send_sync(records[-1][0], records[-1][1], timeout_s).offset
        if last is None:
            self._log.read_to_end(timeout_s)
        else:
            self._log.wait_until_consumed({0: last}, timeout_s)

    def refresh(self, timeout_s: float = 30.0) -> ClusterConfigState:
        """Catch up with the topic (other workers' writes) and return the new snapshot."""
        self._log.read_to_end(timeout_s)
        return self.snapshot()

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            return self._state.snapshot(self._offset)

    # -- writes (leader only) ----------------------------------------------------------------------
    def put_connector_config(self, name: str, config: Mapping[str, str], target_state: TargetState | None = None,
                             timeout_s: float = 30.0) -> None:
        """Store a connector config; with ``target_state`` that state is written first (Java 3.5+), so
        the connector never runs, even briefly, in the wrong state."""
        records: list[tuple[bytes, bytes | None]] = []
        if target_state is not None:
            records.append((target_state_key(name), target_state_value(target_state)))
        records.append((connector_key(name), properties_value(config)))
        self._write(records, timeout_s)

    def remove_connector_config(self, name: str, timeout_s: float = 30.0) -> None:
        """Tombstone the connector and its target state (its offsets are kept, as in Java)."""
        self._write([(connector_key(name), None), (target_state_key(name), None)], timeout_s)

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]],
                         timeout_s: float = 30.0) -> None:
        """Write a new task generation: every task record, then the commit that makes them visible.

        No commit record is written unless every task record was (invariant "commit")."""
        records: list[tuple[bytes, bytes | None]] = [
            (task_key(name, i), properties_value(config)) for i, config in enumerate(configs)]
        records.append((commit_key(name), commit_value(len(configs))))
        try:
            self._write(records, timeout_s)
        except WritePrivilegesError:
            raise
        except ConnectError as exc:
            raise ConnectError(f"Failed to write the task configs of connector {name}: {exc}") from exc

    def put_target_state(self, name: str, state: TargetState, timeout_s: float = 30.0) -> None:
        self._write([(target_state_key(name), target_state_value(state))], timeout_s)

    def put_restart_request(self, request: RestartRequest, timeout_s: float = 30.0) -> None:
        self._write([(restart_key(request.connector), restart_value(request))], timeout_s)

    def put_task_count_record(self, name: str, task_count: int, timeout_s: float = 30.0) -> None:
        """The zombie-fencing record of exactly-once source support (docs/exactly-once.md)."""
        self._write([(fencing_key(name), fencing_value(task_count))], timeout_s)

    def put_session_key(self, session_key: SessionKey, timeout_s: float = 30.0) -> None:
        self._write([(SESSION_KEY.encode(), session_key_value(session_key))], timeout_s)

    def put_logger_level(self, namespace: str, level: str, timeout_s: float = 30.0) -> None:
        """KIP-976: ask every worker to set ``namespace`` to ``level``. Any worker may write it (as in Java,
        it is not a leader write and bypasses the leader's fenced writer); each applies it on read."""
        self._log.send_sync(logger_cluster_key(namespace), logger_level_value(level), timeout_s)

    # -- reading ------------------------------------------------------------------------------------
    def _consume(self, record: LogRecord) -> None:
        if record.key is None:
            logger.warning("Ignoring config record with a null key at %s[%d]@%d", record.topic,
                           record.partition, record.offset)
            return
        key = record.key.decode("utf-8", errors="replace")
        try:
            value = None if record.value is None else json.loads(record.value)
        except ValueError:
            logger.error("Ignoring config record %s at %s[%d]@%d: value is not JSON", key, record.topic,
                         record.partition, record.offset)
            value = _UNPARSEABLE
        notify: Callable[[], None] | None = None
        with self._lock:
            self._offset = record.offset + 1
            if value is _UNPARSEABLE:
                return
            try:
                notify = self._state.apply(key, value, self._listener)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                logger.error("Ignoring malformed config record %s at offset %d: %s", key, record.offset,
                             type(exc).__name__)
            started = self._started
        if notify is not None and started and self._listener is not None:
            try:
                notify()
            except Exception:
                logger.exception("Config update listener failed on record %s", key)


_UNPARSEABLE: Any = object()

