"""Driver-side handover between streaming replication and a backfill, per source partition.

Order of a run (each step durable before the next; see docs/backfill.md):

1. ``backfilling`` markers: the source connector (running or started later) leaves these partitions out
   of task assignment and asks for a task reconfiguration when it sees them.
2. Wait until no MirrorSourceTask instance whose latest event is ``started`` holds one of them. A task
   reports ``stopped`` only after its final offset commit, so the stored offsets are final afterwards.
3. Read the stored source offsets from the flow's Connect offsets topic and plan (the copy runs).
4. Handover: for each finished partition write ``{"offset": end - 1}`` under the connector's key into the
   Connect offsets topic (only if it moves the offset forward), then the ``done`` marker. A running
   connector reconfigures its tasks, which start at ``max(stored + 1, end)``; a driver started later
   reads the stored offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import BACKFILLING, DONE, STOPPED, PartitionMarker, TaskEvent, TopicPartitionT
from mirror.connect_offset_keys import OFFSET_KEY, wrap_offset, wrap_partition
from mirror.errors import MirrorError

logger = logging.getLogger(__name__)


class HandoverError(MirrorError):
    """Streaming still holds partitions the backfill needs, or a handover write failed."""


def mark_backfilling(markers: MarkerLog, ranges: Mapping[TopicPartitionT, tuple[int, int, int, int]]) -> None:
    """Claim partitions: ``(start, end, progress, next)`` each. Durable before returning."""
    for (topic, partition), (start, end, progress, next_offset) in ranges.items():
        markers.write_partition(topic, partition, PartitionMarker(BACKFILLING, start, end, progress, next_offset))
    markers.flush()


def wait_released(markers: MarkerLog, partitions: Iterable[TopicPartitionT], timeout_s: float,
                  poll_s: float = 0.5) -> None:
    """Block until no running source task holds any of ``partitions``; HandoverError on timeout."""
    wanted = list(partitions)
    deadline = time.monotonic() + timeout_s
    while True:
        held = markers.read_to_end().holders(wanted)
        if not held:
            return
        if time.monotonic() > deadline:
            sample = ", ".join(f"{t}-{p} by {', '.join(who)}" for (t, p), who in sorted(held.items())[:5])
            raise HandoverError(
                f"{len(held)} partitions are still held by source tasks after {timeout_s:g}s: {sample}. "
                "Is connect-mirror-maker running for this flow with a connector that cannot see "
                f"{markers.topic}? If no driver runs (it was killed), re-run with --assume-stopped.")
        time.sleep(poll_s)


def final_stored_offsets(store: KafkaOffsetStore, connector: str, source_alias: str,
                         partitions: Iterable[TopicPartitionT], positions: Mapping[TopicPartitionT, int],
                         timeout_s: float, settle_s: float = 3.0, poll_s: float = 0.25) -> dict[TopicPartitionT, int]:
    """The stored offsets once the released tasks' final offset commits landed.

    A task reports ``stopped`` from ``close()``, after the runtime's final flush and offset commit, so
    the offsets are final once it did; nodes of earlier versions reported it from the first ``commit()``
    after the stop, before that final commit. For them: done when every partition's stored offset
    reached the closing position its task reported (the quiet case), or when the stored offsets have not
    changed for ``settle_s`` (records polled but never sent at stop, or undelivered, never reach the
    position).
    """
    wanted = list(partitions)
    deadline = time.monotonic() + timeout_s
    previous: dict[TopicPartitionT, int] | None = None
    changed_at = time.monotonic()
    while True:
        stored = stored_offsets(store, connector, source_alias, wanted)
        if stored != previous:
            previous, changed_at = stored, time.monotonic()
        behind = {tp: (stored.get(tp, -1), pos) for tp, pos in positions.items() if stored.get(tp, -1) + 1 < pos}
        now = time.monotonic()
        if not behind or now - changed_at >= settle_s:
            return stored
        if now > deadline:
            logger.warning("stored offsets of %d partitions still moving after %.0fs: %s", len(behind), timeout_s,
                           sorted(behind.items())[:5])
            return stored
        time.sleep(poll_s)


def assume_stopped(markers: MarkerLog, partitions: Iterable[TopicPartitionT]) -> list[str]:
    """Record ``stopped`` for task instances whose stop was never recorded (their process died)."""
    wanted = set(partitions)
    fixed = []
    for instance, event in list(markers.read_to_end().tasks.items()):
        if event.state != STOPPED and wanted.intersection(event.partitions):
            markers.write_task(instance, TaskEvent(STOPPED, event.task, event.partitions))
            fixed.append(f"{event.task} ({instance})")
    markers.flush()
    return fixed


def open_offset_store(topic: str, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                      admin_config: Mapping[str, str], replication_factor: int) -> KafkaOffsetStore:
    store = KafkaOffsetStore(topic, producer_config=producer_config, consumer_config=consumer_config,
                             admin_config=admin_config, replication_factor=replication_factor)
    store.start()
    return store


def stored_offsets(store: KafkaOffsetStore, connector: str, source_alias: str,
                   partitions: Iterable[TopicPartitionT]) -> dict[TopicPartitionT, int]:
    """The last replicated upstream offset per partition, for partitions that have one."""
    store.refresh()
    result = {}
    for topic, partition in partitions:
        value = store.get(connector, wrap_partition(source_alias, topic, partition))
        offset = None if value is None else value.get(OFFSET_KEY)
        if isinstance(offset, int) and offset >= 0:
            result[(topic, partition)] = offset
    return result


def hand_over(store: KafkaOffsetStore, markers: MarkerLog, connector: str, source_alias: str,
              done: Mapping[TopicPartitionT, tuple[int, int]]) -> None:
    """Give finished partitions back to streaming: offsets first, then the ``done`` markers.

    ``done`` maps each partition to ``(start, end)``. The stored offset is only moved forward: a
    streaming task that replicated past ``end`` before the backfill (nothing to copy) keeps its offset.
    """
    current = stored_offsets(store, connector, source_alias, done)
    forward = [(wrap_partition(source_alias, t, p), wrap_offset(end - 1)) for (t, p), (_, end) in done.items()
               if end > 0 and current.get((t, p), -1) < end - 1]
    if forward:
        store.put(connector, forward)
    for (topic, partition), (start, end) in done.items():
        markers.write_partition(topic, partition, PartitionMarker(DONE, start, end, end - 1))
    markers.flush()
    logger.info("handed %d partitions back to streaming (%d source offsets moved forward)", len(done),
                len(forward))
