"""Connector and task statuses, kept in ``status.storage.topic`` (Java's KafkaStatusBackingStore).

Record format (Java's, docs/migration.md), compact JSON as Java's JsonConverter writes it:

* key ``status-connector-<name>`` or ``status-task-<name>-<n>``;
* value ``{"state":..,"trace":..|null,"worker_id":..,"generation":N}``; a DESTROYED status (the
  connector was deleted) is written as a null value, so compaction eventually forgets it.

Invariant "generation": statuses race. When a task moves from worker A to worker B, A's late
"UNASSIGNED" must not overwrite B's "RUNNING". :meth:`put_safe` therefore writes only if the status
it would replace was written by the same worker or by an older (or equal) group generation, the
rule of Java's ``CacheEntry.canWriteSafely``. Shutdown and failure reports use ``put_safe``; a
worker reporting that it now runs something uses ``put``.

Reads apply the same rule to those reports (UNASSIGNED and FAILED): one that could not have been
written safely over the status read before it is not applied. ``put_safe`` checks when the record is
handed to the producer, and the producer may deliver it much later: a worker cut off from the broker
stops its work, and its UNASSIGNED is sent once the link is back, after the next owner's RUNNING
(found by the soak: every worker then showed the task UNASSIGNED on the old owner while the new one
ran it, until the next restart). Java narrows this window with a producer that never retries; the
read rule closes it. Every worker reads the same log in the same order, so all apply the same rule.

Every status is read by every worker (the topic is read in full), so ``GET .../status`` can be served
by any worker. The same holds for KIP-558 topic statuses (:class:`TopicStatus`: which topics a connector
has used), which back ``GET /connectors/<c>/topics``. Their format is Java's too, so Java and Python
workers of one cluster read each other's:

* key ``status-topic-<topic>:connector-<connector>`` (a topic name never holds ``:``, so the first
  ``:connector-`` ends the topic);
* value ``{"topic":{"name":<topic>,"connector":<connector>,"task":<n>,"discoverTimestamp":<epoch ms>}}``,
  compact JSON in that field order, as JsonConverter writes the struct; a null value (tombstone) is
  written when the topics are reset or the connector is deleted.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.lifecycle import ConnectorTaskId, State
from connect_runtime.storage.config_records import dumps
from connect_runtime.storage.config_store import LogFactory
from connect_runtime.storage.kafka_log import KafkaBasedLog, LogRecord

logger = logging.getLogger(__name__)

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"

#: Java's retries of a failed status write while it is still the latest for its key.
_MAX_WRITE_ATTEMPTS = 5
#: What a worker reports when it stops running something (written with ``put_safe``, read by its rule).
_RELEASES = frozenset({State.UNASSIGNED, State.FAILED})


@dataclass(frozen=True, slots=True)
class Status:
    """One status record. ``task`` is None for a connector status."""

    connector: str
    state: State
    worker_id: str
    generation: int
    trace: str | None = None
    task: int | None = None

    @property
    def key(self) -> bytes:
        if self.task is None:
            return f"{CONNECTOR_STATUS_PREFIX}{self.connector}".encode()
        return f"{TASK_STATUS_PREFIX}{self.connector}-{self.task}".encode()

    def value(self) -> bytes | None:
        if self.state is State.DESTROYED:
            return None
        return dumps({"state": self.state.value, "trace": self.trace, "worker_id": self.worker_id,
                      "generation": self.generation})


def parse_status_key(key: str) -> tuple[str, int | None] | None:
    """``status-connector-<c>`` -> (c, None); ``status-task-<c>-<n>`` -> (c, n); else None."""
    if key.startswith(CONNECTOR_STATUS_PREFIX):
        return key[len(CONNECTOR_STATUS_PREFIX):], None
    if key.startswith(TASK_STATUS_PREFIX):
        body, sep, number = key[len(TASK_STATUS_PREFIX):].rpartition("-")
        if sep and number.isdigit():
            return body, int(number)
    return None


def topic_status_key(topic: str, connector: str) -> bytes:
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}".encode()


def parse_topic_status_key(key: str) -> tuple[str, str] | None:
    """``status-topic-<t>:connector-<c>`` -> (t, c); None for any other key."""
    if not key.startswith(TOPIC_STATUS_PREFIX):
        return None
    topic, sep, connector = key[len(TOPIC_STATUS_PREFIX):].partition(TOPIC_STATUS_SEPARATOR)
    if not sep or not topic or not connector:
        return None
    return topic, connector


@dataclass(frozen=True, slots=True)
class TopicStatus:
    """A topic ``connector``'s task ``task`` first produced to at ``discover_timestamp`` (epoch ms)."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int

    @property
    def key(self) -> bytes:
        return topic_status_key(self.topic, self.connector)

    def value(self) -> bytes:
        return dumps({"topic": {"name": self.topic, "connector": self.connector, "task": self.task,
                                "discoverTimestamp": self.discover_timestamp}})

    @staticmethod
    def parse(value: Mapping[str, Any]) -> TopicStatus:
        """From the decoded JSON value; KeyError/TypeError/ValueError when malformed."""
        body = value["topic"]
        return TopicStatus(str(body["name"]), str(body["connector"]), int(body["task"]),
                           int(body["discoverTimestamp"]))


def can_write_safely(current: Status | None, new: Status) -> bool:
    """Invariant "generation" (Java ``CacheEntry.canWriteSafely``)."""
    return current is None or current.worker_id == new.worker_id or current.generation <= new.generation


class KafkaStatusStore:
    """Statuses of every connector and task of the cluster, on a compacted topic."""

    def __init__(self, topic: str, *, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                 admin_config: Mapping[str, str], partitions: int = 5, replication_factor: int = 3,
                 log_factory: LogFactory = KafkaBasedLog) -> None:
        self.topic = topic
        self._lock = threading.RLock()
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[ConnectorTaskId, Status] = {}
        #: per connector or task, the status of the highest generation read (the latest of those): a late
        #: write of an older generation replaces the latest status but not this one
        self._newest_generation: dict[Any, Status] = {}
        #: connector -> topic -> its KIP-558 topic status.
        self._topics: dict[str, dict[str, TopicStatus]] = {}
        #: Topic statuses forgotten (tombstones read) so far: a task's recorder that saw it change
        #: records its topics again (see :mod:`connect_runtime.runtime.task.topic_tracking`).
        self.topic_resets = 0
        # Per key, a counter of local writes: a failed write is retried only if no newer one was made.
        self._sequence: dict[bytes, int] = {}
        # Java's partitioner (murmur2): a key must land in the partition Java workers use for it, or a
        # reader could see an older status in one partition after a newer one in another.
        producer_config = {**producer_config, "partitioner": "murmur2_random"}
        self._log = log_factory(topic, producer_config=producer_config, consumer_config=consumer_config,
                                admin_config=admin_config, consumed=self._consume, partitions=partitions,
                                replication_factor=replication_factor,
                                topic_config={"cleanup.policy": "compact"})

    def start(self, timeout_s: float = 120.0) -> None:
        self._log.start(timeout_s)
        logger.info("Status store started on %s with %d connector status(es)", self.topic,
                    len(self._connectors))

    def stop(self) -> None:
        self._log.stop()

    def flush(self, timeout_s: float = 30.0) -> None:
        self._log.flush(timeout_s)

    def refresh(self, timeout_s: float = 30.0) -> None:
        self._log.read_to_end(timeout_s)

    # -- writes ------------------------------------------------------------------------------------
    def put(self, status: Status) -> None:
        """Write a status unconditionally (asynchronously; failures are retried, then logged)."""
        self._send(status, safe=False)

    def put_safe(self, status: Status) -> None:
        """Write a status only if invariant "generation" allows it."""
        self._send(status, safe=True)

    def _send(self, status: Status, safe: bool, attempt: int = 1) -> None:
        key = status.key
        with self._lock:
            if safe and not can_write_safely(self._current(status), status):
                logger.debug("Not writing %s status %s of generation %d over a newer one", key.decode(),
                             status.state.value, status.generation)
                return
            sequence = self._sequence.get(key, 0) + 1 if attempt == 1 else self._sequence.get(key, 0)
            self._sequence[key] = sequence

        def done(error: Exception | None, _record: LogRecord | None) -> None:
            if error is None:
                return
            with self._lock:
                stale = self._sequence.get(key) != sequence
            if stale or attempt >= _MAX_WRITE_ATTEMPTS:
                logger.error("Failed to write status %s for %s: %s", status.state.value, key.decode(), error)
                return
            logger.warning("Retrying status write for %s after: %s", key.decode(), error)
            self._send(status, safe, attempt + 1)

        self._log.send(key, status.value(), done)

    def put_topic(self, status: TopicStatus) -> None:
        """Record that a connector uses a topic (asynchronously; a failure is logged: the next task
        start records it again)."""
        self._log.send(status.key, status.value(), _log_topic_failure)

    def delete_topic(self, connector: str, topic: str) -> None:
        """Forget that ``connector`` used ``topic`` (a tombstone)."""
        self._log.send(topic_status_key(topic, connector), None, _log_topic_failure)

    # -- reads -------------------------------------------------------------------------------------
    def get_topic(self, connector: str, topic: str) -> TopicStatus | None:
        with self._lock:
            return self._topics.get(connector, {}).get(topic)

    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        """The topic statuses of ``connector``, by topic name."""
        with self._lock:
            return sorted(self._topics.get(connector, {}).values(), key=lambda s: s.topic)

    def _current(self, status: Status) -> Status | None:
        if status.task is None:
            return self._connectors.get(status.connector)
        return self._tasks.get(ConnectorTaskId(status.connector, status.task))

    def get(self, connector: str) -> Status | None:
        with self._lock:
            return self._connectors.get(connector)

    def get_task(self, connector: str, task: int) -> Status | None:
        with self._lock:
            return self._tasks.get(ConnectorTaskId(connector, task))

    def get_all(self, connector: str) -> list[Status]:
        """Task statuses of ``connector``, by task number."""
        with self._lock:
            return sorted((s for t, s in self._tasks.items() if t.connector == connector),
                          key=lambda s: s.task or 0)

    def released_by_last_owner(self, connector: str, task: int | None = None) -> bool:
        """The latest status is UNASSIGNED, written by a worker that could write it safely over the status of
        the highest generation read (invariant "generation"). A worker that lost the group stops its work
        late and writes UNASSIGNED after the next owner's RUNNING (its status reader may lag, so its
        ``put_safe`` cannot tell; reads do not apply it, see the module docstring): that work was not
        released by its last owner, and if that owner is gone, it crashed."""
        ident: Any = connector if task is None else ConnectorTaskId(connector, task)
        with self._lock:
            latest = (self._connectors if task is None else self._tasks).get(ident)
            if latest is None or latest.state is not State.UNASSIGNED:
                return False
            return can_write_safely(self._newest_generation.get(ident), latest)

    def max_generation(self) -> int:
        """The highest group generation of any status read (0 if none)."""
        with self._lock:
            return max((s.generation for s in (*self._connectors.values(), *self._tasks.values())), default=0)

    def connectors(self) -> set[str]:
        with self._lock:
            return set(self._connectors)

    def _consume(self, record: LogRecord) -> None:
        key = (record.key or b"").decode("utf-8", errors="replace")
        parsed = parse_status_key(key)
        if parsed is None:
            self._consume_topic(key, record)
            return
        connector, task = parsed
        status: Status | None = None
        if record.value is not None:
            try:
                status = parse_status(connector, task, json.loads(record.value))
            except (ValueError, TypeError, KeyError, AttributeError):
                logger.error("Ignoring malformed status record %s at %s[%d]@%d", key, record.topic,
                             record.partition, record.offset)
                return
        with self._lock:
            table: dict[Any, Status] = self._connectors if task is None else self._tasks
            ident: Any = connector if task is None else ConnectorTaskId(connector, task)
            if status is None:
                table.pop(ident, None)
                self._newest_generation.pop(ident, None)
            else:
                if status.state in _RELEASES and not can_write_safely(table.get(ident), status):
                    logger.debug("Not applying a late %s status of %s by %s (generation %d) over %s's of "
                                 "generation %d", status.state.value, key, status.worker_id, status.generation,
                                 table[ident].worker_id, table[ident].generation)
                else:
                    table[ident] = status
                newest = self._newest_generation.get(ident)
                if newest is None or status.generation >= newest.generation:
                    self._newest_generation[ident] = status

    def _consume_topic(self, key: str, record: LogRecord) -> None:
        parsed = parse_topic_status_key(key)
        if parsed is None:
            return  # a key of a later Connect version: not ours to interpret
        topic, connector = parsed
        if record.value is None:
            with self._lock:
                known = self._topics.get(connector, {})
                if known.pop(topic, None) is not None:
                    self.topic_resets += 1
                if not known:
                    self._topics.pop(connector, None)
            return
        try:
            status = TopicStatus.parse(json.loads(record.value))
        except (ValueError, TypeError, KeyError, AttributeError):
            logger.error("Ignoring malformed topic status record %s at %s[%d]@%d", key, record.topic,
                         record.partition, record.offset)
            return
        with self._lock:
            self._topics.setdefault(connector, {})[topic] = status


def _log_topic_failure(error: Exception | None, record: LogRecord | None) -> None:
    if error is not None:
        logger.warning("Failed to write a topic status to the status topic: %s", error)


def parse_status(connector: str, task: int | None, value: Mapping[str, Any]) -> Status:
    """A status record's JSON value (raises ValueError, TypeError, KeyError or AttributeError if malformed)."""
    trace = value.get("trace")
    return Status(connector=connector, state=State(value["state"]), worker_id=str(value["worker_id"]),
                  generation=int(value["generation"]), trace=None if trace is None else str(trace), task=task)
