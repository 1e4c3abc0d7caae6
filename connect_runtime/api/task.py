"""The task side of the plugin API (Kafka's ``SourceTask``).

Delivery contract (at least once): the runtime hands every record returned by ``poll`` to a producer,
and calls ``commit_record`` once the target cluster acknowledged it. A record's ``source_offset`` is
committed to the offsets store only after that acknowledgement, and only when every earlier record of
the same source partition was acknowledged too. After a crash, the task resumes from the last committed
offset, so records sent after it may be written twice, never lost.

Acknowledgements come in batches: after serving the producer's delivery reports the runtime calls
``commit_records`` once with every record acknowledged since, whose default calls ``commit_record`` per
record. A task that does per-record work on acknowledgement (MirrorSourceTask: metrics, offset syncs)
overrides ``commit_records`` to do it in one loop; a task that needs neither pays nothing.

Offsets wait for what the task wrote on the side: a task that writes records of its own about what it
replicated (MirrorSourceTask: the exact offset map) implements :meth:`SourceTask.before_offset_commit`,
which hands those writes to its producer and returns a :class:`DurabilityBarrier`; the runtime writes the
offsets only once the barrier reports them delivered, so a crash never leaves stored offsets ahead of them.

Threading contract: ``start``, ``poll``, ``commit_record(s)``, ``before_offset_commit``, ``commit`` and
``close`` run on the task's own thread; a barrier's ``wait`` runs on the runtime's offset-commit thread.
``stop`` is called from another thread to interrupt a blocking ``poll``; it must be thread-safe and
must not block. The runtime still flushes and commits after ``stop``, so what that final commit needs
is released in ``close``, which runs after it whether it succeeded or not.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Protocol

from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import Acknowledged, RecordMetadata, SourceRecord, metadata_of

logger = logging.getLogger(__name__)


class SourceTaskContext(Protocol):
    """What the runtime offers a running source task."""

    @property
    def task_id(self) -> int:
        ...

    @property
    def worker_id(self) -> str:
        ...

    def offset_storage_reader(self) -> OffsetStorageReader:
        ...

    @property
    def metrics_registry(self) -> MetricsRegistry:
        """Where the task registers its own metrics (its herder's registry, shared by its tasks)."""
        ...


class DurabilityBarrier(Protocol):
    """What must be durable before the offsets taken with it are written (see ``before_offset_commit``)."""

    def wait(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` until the writes are acknowledged; False if they failed or are late.

        Runs on the offset-commit thread while the task thread carries on: it must be thread-safe.
        """
        ...


class Task(ABC):
    """Base of all tasks. Subclasses must have a no-argument constructor."""

    def version(self) -> str:
        return "0.1.0"

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with this task's config (one entry of the connector's ``task_configs``)."""

    @abstractmethod
    def stop(self) -> None:
        """Signal the task to stop; called from another thread, must not block.

        Also called (on the task thread, then ``close``) when ``start`` or ``initialize`` raised, as Java
        does (KAFKA-10792): ``stop`` and ``close`` must tolerate a partial start and release whatever
        ``start`` opened before it failed; nothing else will.
        """


class SourceTask(Task):
    """A task that produces :class:`SourceRecord` s.

    ``context`` is set by :meth:`initialize`, which the runtime calls before ``start``.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """Return new records, or None/[] when there are none right now.

        Should block for a short while (e.g. up to a second) rather than spin when idle, and return
        promptly after ``stop``.
        """

    def commit(self) -> None:
        """Called after the runtime committed source offsets (every ``offset.flush.interval.ms``)."""

    def before_offset_commit(self) -> DurabilityBarrier | None:
        """Called right before the runtime takes the committable offsets; None (the default): nothing to wait for.

        Every record acknowledged so far was already handed to ``commit_record(s)``, so a task can start
        writing what it derives from them and return a barrier that tells when those writes are durable.
        The runtime writes the offsets only after ``wait`` returned True; otherwise it keeps them for the
        next interval (``commit`` is not called then). Not part of Java's API.
        """
        return None

    def close(self) -> None:
        """Called once on the task thread after the final offset commit attempt, whether it succeeded or not.

        ``commit`` is not called after a failed commit, so a task that keeps producers or metrics open for
        its last ``commit`` releases them here too. After a ``start`` that raised it follows ``stop`` (no
        commit runs then). The default does nothing. Not part of Java's API.
        """

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """Called once the target acknowledged ``record`` (metadata None: the record was dropped)."""

    def commit_records(self, acknowledged: Acknowledged) -> None:
        """Called with the records the target acknowledged since the last call, in delivery order.

        The default calls :meth:`commit_record` for each; like Java's worker it logs a failing call and
        carries on, since an acknowledgement is a notification that cannot be taken back.
        """
        for record, delivered in acknowledged:
            try:
                self.commit_record(record, metadata_of(delivered))
            except Exception:
                logger.exception("commit_record failed for a record of %s", record.topic)
