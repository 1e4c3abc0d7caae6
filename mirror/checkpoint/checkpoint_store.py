"""The checkpoint task's memory of the checkpoints it (or an earlier generation) emitted (KAFKA-15905).

At task start the ``<source>.checkpoints.internal`` topic on the target is read once, partition 0, from
the beginning to the end; the last checkpoint per (assigned group, target-side partition) is kept.
Undecodable records are skipped. If the read fails (no READ permission, timeout...), the load counts as
failed and the store starts empty: the OffsetSyncStore is then told to keep only the latest historical
sync per partition, so no checkpoint older than a previously emitted one can be produced.

Afterwards the task updates the store *before* sending new checkpoints, and reads it for the
monotonicity filter and for ``sync.group.offsets``: that is why group offsets keep
being synced after a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import read_to_end
from mirror.checkpoint.topic_tail import read_only_consumer_config
from mirror.client.models import Checkpoint, MalformedRecordError, OffsetAndMetadata
from mirror.client.models import TopicPartition as MirrorTopicPartition
from mirror.errors import MirrorError

logger = logging.getLogger(__name__)


class _Unreadable(MirrorError):
    """The checkpoints topic cannot be read at all (fatal client error, no permission)."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(error.str())
        self.error = error


class CheckpointStore:
    """Last checkpoint per (group, target-side topic-partition) of the task's groups. Thread-safe."""

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], groups: Iterable[str], *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 timeout_s: float = 60.0) -> None:
        self._topic = topic
        self._config = read_only_consumer_config(consumer_config, topic)
        self._groups = set(groups)
        self._consumer_factory = consumer_factory
        self._timeout_s = timeout_s
        self._checkpoints: dict[str, dict[MirrorTopicPartition, Checkpoint]] = {}
        self._lock = threading.Lock()
        self._initialized = threading.Event()
        self._stopping = threading.Event()
        self.load_ok = False

    @property
    def initialized(self) -> bool:
        return self._initialized.is_set()

    def start(self) -> bool:
        """Read the topic to its end once. True if that worked (False: the store starts empty)."""
        try:
            loaded = self._read()
        except Exception:  # any failure: start empty and let the offset-sync store be careful
            logger.exception("Failed to read checkpoints from %s; starting without previous checkpoints",
                             self._topic)
            loaded = None
        with self._lock:
            self._checkpoints = loaded or {}
            count = sum(len(v) for v in self._checkpoints.values())
        self.load_ok = loaded is not None
        self._initialized.set()
        logger.info("Loaded %d previous checkpoints from %s (ok=%s)", count, self._topic, self.load_ok)
        return self.load_ok

    def stop(self) -> None:
        self._stopping.set()

    def _read(self) -> dict[str, dict[MirrorTopicPartition, Checkpoint]] | None:
        result: dict[str, dict[MirrorTopicPartition, Checkpoint]] = {}

        def keep(records: list[Message]) -> None:
            for message in records:
                try:
                    checkpoint = Checkpoint.from_record(message.key(), message.value())
                except MalformedRecordError as exc:
                    logger.warning("Skipping undecodable checkpoint record in %s at offset %s: %s",
                                   self._topic, message.offset(), exc)
                    continue
                if checkpoint.consumer_group_id in self._groups:
                    group = result.setdefault(checkpoint.consumer_group_id, {})
                    group[checkpoint.topic_partition] = checkpoint

        consumer = self._consumer_factory(self._config)
        try:
            reached = read_to_end(consumer, {(self._topic, 0): OFFSET_BEGINNING}, keep, self._timeout_s,
                                  on_error=self._unless_unreadable, stop=self._stopping.is_set)
        except _Unreadable as exc:
            logger.error("Cannot read checkpoints from %s: %s", self._topic, exc.error)
            return None
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                pass
        if reached.complete:
            return result
        if not self._stopping.is_set():
            logger.error("Timed out after %.0f s reading checkpoints from %s", self._timeout_s, self._topic)
        return None

    def _unless_unreadable(self, error: KafkaError) -> None:
        """Fatal and authorization errors end the read (no READ permission: start empty); librdkafka
        recovers from the others by itself."""
        if error.fatal() or error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                             KafkaError.GROUP_AUTHORIZATION_FAILED):
            raise _Unreadable(error)
        logger.warning("Error reading checkpoints from %s: %s", self._topic, error)

    def update(self, group: str, checkpoints: Mapping[MirrorTopicPartition, Checkpoint]) -> None:
        with self._lock:
            self._checkpoints.setdefault(group, {}).update(checkpoints)

    def get(self, group: str, tp: MirrorTopicPartition) -> Checkpoint | None:
        with self._lock:
            return self._checkpoints.get(group, {}).get(tp)

    def group(self, group: str) -> dict[MirrorTopicPartition, Checkpoint]:
        with self._lock:
            return dict(self._checkpoints.get(group, {}))

    def converted_upstream_offsets(self) -> dict[str, dict[MirrorTopicPartition, OffsetAndMetadata]]:
        """Per group: the latest checkpoint per partition as (downstream offset, metadata)."""
        with self._lock:
            return {group: {tp: cp.offset_and_metadata() for tp, cp in checkpoints.items()}
                    for group, checkpoints in self._checkpoints.items()}
