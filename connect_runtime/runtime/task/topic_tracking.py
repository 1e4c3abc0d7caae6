"""KIP-558 active topic tracking: a source task records each topic it produces to in the status topic.

Java's ``recordActiveTopic``: when the target acknowledges a record for a topic the connector has no
topic status for, the task writes ``status-topic-<topic>:connector-<c>`` (with its task number and the
time). ``GET /connectors/<c>/topics`` lists them from the status store on any worker; ``PUT
.../topics/reset`` tombstones them, and a task records a topic again when it next produces to it.

The recorder is called once per batch of acknowledgements (a run on the bulk path, a ``producer.poll``
on the per-record path) with the topics they name; a topic it has seen costs one set lookup. It learns
of resets through the status store's reset counter, so nothing is checked per record.

Worker keys: ``topic.tracking.enable`` (default true: off, tasks record nothing and the endpoints answer
403) and ``topic.tracking.allow.reset`` (default true: off, only the reset answers 403).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.storage.status_store import KafkaStatusStore, TopicStatus

logger = logging.getLogger(__name__)

RESET_DISABLED_MESSAGE = "Topic tracking reset is disabled."


@dataclass(frozen=True, slots=True)
class TopicTracking:
    """The worker's two topic-tracking keys."""

    enabled: bool = True
    allow_reset: bool = True


#: Herders built without a worker config (tests, embedding) track nothing.
TRACKING_OFF = TopicTracking(enabled=False)


class ActiveTopicRecorder:
    """One task's recorder of the topics it produced to (called on the task thread only)."""

    __slots__ = ("_connector", "_resets", "_seen", "_store", "_task")

    def __init__(self, task_id: ConnectorTaskId, store: KafkaStatusStore) -> None:
        self._connector = task_id.connector
        self._task = task_id.task
        self._store = store
        self._seen: set[str] = set()
        self._resets = store.topic_resets

    def record(self, topics: Iterable[str]) -> None:
        """The target acknowledged records for ``topics``: record those the connector has no status for."""
        resets = self._store.topic_resets
        if resets != self._resets:  # some topic status was forgotten: look at every topic again
            self._resets = resets
            self._seen.clear()
        seen = self._seen
        for topic in topics:
            if topic in seen:
                continue
            seen.add(topic)
            if self._store.get_topic(self._connector, topic) is None:
                logger.debug("Connector %s: task %d is the first to produce to topic %s", self._connector,
                             self._task, topic)
                self._store.put_topic(TopicStatus(topic, self._connector, self._task, int(time.time() * 1000)))
