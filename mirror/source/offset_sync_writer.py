"""When the source task emits an offset sync (Kafka ``OffsetSyncWriter``).

An offset sync says "upstream offset U of a source partition landed at downstream offset D". Checkpoints
translate a group's upstream offset to at most **one past** the nearest older sync, so the writer must
emit a sync often enough that translation stays fresh, but not for every record.

Per source partition the state is ``previous_upstream``, ``previous_downstream`` and
``last_sync_downstream`` (all -1 at task start) plus a **sticky** ``should_sync`` flag. A sync fires when:

* this is the first record in the task's lifetime (``last_sync_downstream == -1``);
* ``d - (last_sync_downstream + 1) >= offset.lag.max`` (translation would lag by ``offset.lag.max``);
* ``u - previous_upstream != 1`` (a gap or rewind upstream: compaction, transaction markers, a seek);
* ``d < previous_downstream`` (the downstream topic was truncated or rewound).

A fired sync goes to the **pending** map (replacing any older pending or delayed sync of the partition)
and the flag is reset. Otherwise the sync replaces the partition's entry in the **delayed** map. Pending
syncs are sent right away (at most 10 in flight, by whoever drains :meth:`take_pending`); on every task
commit the delayed ones are promoted (:meth:`promote_delayed`), so the last record of an idle partition
still gets a sync within one offset-flush interval (KAFKA-15906).

:class:`OffsetSyncWriter` decides, as a pure state machine (the backfill's copier drives it too);
:class:`OffsetSyncProducer` sends what it decided, as Java's writer does both. Syncs go to partition 0 of
the offset-syncs topic (``mm2-offset-syncs.<other alias>.internal``) on the cluster named by
``offset-syncs.topic.location``, through MM2's own non-transactional producer. At most
:data:`MAX_OUTSTANDING_OFFSET_SYNCS` are in flight: when all slots are taken the rest stay pending in the
writer (where a newer sync of the same partition replaces them) until a delivery frees a slot, exactly
like Java's ``tryAcquire`` on a 10-permit semaphore. A failed delivery is logged, never retried: the next
sync of that partition supersedes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from connect_runtime.clients.factory import close_producer, new_producer
from mirror.client.models import MalformedRecordError, OffsetSync, TopicPartition

logger = logging.getLogger(__name__)

MAX_OUTSTANDING_OFFSET_SYNCS = 10
OFFSET_LAG_MAX_DEFAULT = 100


@dataclass
class PartitionState:
    """The emission state of one source partition for the task's lifetime."""

    max_offset_lag: int
    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1
    should_sync: bool = False

    def update(self, upstream: int, downstream: int) -> bool:
        """Record a replicated (upstream, downstream) pair; True if a sync is due (sticky until reset)."""
        no_previous_sync = self.last_sync_downstream == -1
        # Translation goes one past the last sync, hence the +1.
        too_stale = downstream - (self.last_sync_downstream + 1) >= self.max_offset_lag
        skipped_upstream = upstream - self.previous_upstream != 1
        truncated_downstream = downstream < self.previous_downstream
        if no_previous_sync or too_stale or skipped_upstream or truncated_downstream:
            self.last_sync_downstream = downstream
            self.should_sync = True
        self.previous_upstream = upstream
        self.previous_downstream = downstream
        return self.should_sync

    def reset(self) -> None:
        """Clear the sticky flag once the sync has been queued."""
        self.should_sync = False


def _as_tp(tp: TopicPartition) -> TopicPartition:
    """Callers may pass a plain (topic, partition) tuple; keys must be TopicPartition."""
    return tp if type(tp) is TopicPartition else TopicPartition(*tp)


class OffsetSyncWriter:
    """Decides which offset syncs to send and when; thread-safe (commit_record and commit run apart).

    Args:
        max_offset_lag: ``offset.lag.max``; 0 makes every record fire.
    """

    def __init__(self, max_offset_lag: int = OFFSET_LAG_MAX_DEFAULT) -> None:
        if max_offset_lag < 0:
            raise ValueError(f"offset.lag.max must be >= 0, got {max_offset_lag}")
        self.max_offset_lag = max_offset_lag
        self._states: dict[TopicPartition, PartitionState] = {}
        # Insertion-ordered like Java's LinkedHashMap: re-putting a key keeps its place in the queue.
        # Both hold (upstream, downstream) only: a pending sync is replaced whenever a newer one fires before
        # a slot frees, and a delayed one on almost every record, so the (validated) OffsetSync is built only
        # for a sync that is taken to be sent or read.
        self._pending: dict[TopicPartition, tuple[int, int]] = {}
        self._delayed: dict[TopicPartition, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def update(self, tp: TopicPartition, upstream: int, downstream: int) -> bool:
        """Queue the sync for a record acknowledged by the target; True if it went to *pending*.

        Called once per replicated record, so it allocates nothing unless a sync fires.
        """
        tp = _as_tp(tp)
        with self._lock:
            state = self._state_of(tp)
            if state.update(upstream, downstream):
                self._delayed.pop(tp, None)
                self._pending[tp] = (upstream, downstream)
                state.reset()
                return True
            self._delayed[tp] = (upstream, downstream)
            return False

    def update_run(self, tp: TopicPartition, upstream: list[int], downstream: list[int],
                   on_fire: Callable[[], None]) -> None:
        """:meth:`update` for each (upstream[i], downstream[i]) of one partition, in order, calling
        ``on_fire`` after every sync that went to *pending* (so each is sent before the next replaces it).

        The same decisions as that many ``update`` calls, in one loop without a call or a lock per
        record: the streaming task feeds every acknowledged record through here.
        """
        if not upstream:
            return
        tp = _as_tp(tp)
        with self._lock:
            state = self._state_of(tp)
        max_lag = state.max_offset_lag
        prev_up, prev_down = state.previous_upstream, state.previous_downstream
        last_sync, should_sync = state.last_sync_downstream, state.should_sync
        fired_last = False
        for up, down in zip(upstream, downstream, strict=True):
            if (last_sync == -1 or down - (last_sync + 1) >= max_lag or up - prev_up != 1
                    or down < prev_down):
                last_sync = down
                should_sync = True
            prev_up, prev_down = up, down
            fired_last = should_sync
            if should_sync:
                with self._lock:
                    state.previous_upstream, state.previous_downstream = up, down
                    state.last_sync_downstream = last_sync
                    self._delayed.pop(tp, None)
                    self._pending[tp] = (up, down)
                should_sync = False
                on_fire()
        with self._lock:
            state.previous_upstream, state.previous_downstream = prev_up, prev_down
            state.last_sync_downstream, state.should_sync = last_sync, False
            if not fired_last:
                self._delayed[tp] = (prev_up, prev_down)

    def update_range(self, tp: TopicPartition, upstream: int, downstream: int, count: int,
                     on_fire: Callable[[], None]) -> None:
        """:meth:`update` for ``count`` records at consecutive offsets ``upstream + i`` -> ``downstream + i``,
        calling ``on_fire`` after every sync that went to *pending*, without visiting each record.

        Inside such a run only the first record can fire for a gap, a rewind or a sticky flag; after it
        only ``offset.lag.max`` can, every ``offset.lag.max + 1`` records, so this loops over the syncs
        that fire, not over the records (the bulk path feeds every run through here).
        """
        if count <= 0:
            return
        tp = _as_tp(tp)
        with self._lock:
            state = self._state_of(tp)
        max_lag = state.max_offset_lag
        last_sync = state.last_sync_downstream
        if (last_sync == -1 or downstream - (last_sync + 1) >= max_lag
                or upstream - state.previous_upstream != 1 or downstream < state.previous_downstream):
            last_sync = downstream
            fire = 0
        else:
            fire = 0 if state.should_sync else max(1, last_sync + 1 + max_lag - downstream)
        fired_last = False
        while fire < count:
            down = downstream + fire
            if fire > 0:  # only the lag fires after the first record: the sync moves here
                last_sync = down
            with self._lock:
                state.previous_upstream, state.previous_downstream = upstream + fire, down
                state.last_sync_downstream = last_sync
                self._delayed.pop(tp, None)
                self._pending[tp] = (upstream + fire, down)
            on_fire()
            fired_last = fire == count - 1
            fire = max(fire + 1, last_sync + 1 + max_lag - downstream)
        with self._lock:
            state.previous_upstream = upstream + count - 1
            state.previous_downstream = downstream + count - 1
            state.last_sync_downstream, state.should_sync = last_sync, False
            if not fired_last:
                self._delayed[tp] = (upstream + count - 1, downstream + count - 1)

    def _state_of(self, tp: TopicPartition) -> PartitionState:
        """The partition's state, created on first use (call with the lock held)."""
        state = self._states.get(tp)
        if state is None:
            state = self._states[tp] = PartitionState(self.max_offset_lag)
        return state

    def take_pending(self, limit: int | None = None) -> list[OffsetSync]:
        """Remove and return up to ``limit`` pending syncs, oldest first (all if ``limit`` is None).

        The producer wrapper passes the number of free in-flight slots (at most
        :data:`MAX_OUTSTANDING_OFFSET_SYNCS`); what it cannot take now stays pending for the next call.
        """
        with self._lock:
            count = len(self._pending) if limit is None else max(0, min(limit, len(self._pending)))
            taken = [(tp, self._pending.pop(tp)) for tp in list(self._pending)[:count]]
        return [OffsetSync(tp, u, d) for tp, (u, d) in taken]

    def promote_delayed(self) -> None:
        """On task commit: every delayed sync becomes pending (the idle-partition flush of KAFKA-15906)."""
        with self._lock:
            self._pending.update(self._delayed)
            self._delayed.clear()

    def forget(self, tp: TopicPartition) -> None:
        """Drop all state of a partition that is no longer assigned to this task."""
        tp = TopicPartition(*tp)
        with self._lock:
            self._states.pop(tp, None)
            self._pending.pop(tp, None)
            self._delayed.pop(tp, None)

    @property
    def pending(self) -> dict[TopicPartition, OffsetSync]:
        """A snapshot of the pending syncs (for metrics and tests)."""
        with self._lock:
            return {tp: OffsetSync(tp, u, d) for tp, (u, d) in self._pending.items()}

    @property
    def delayed(self) -> dict[TopicPartition, OffsetSync]:
        """A snapshot of the delayed syncs (for metrics and tests)."""
        with self._lock:
            return {tp: OffsetSync(tp, u, d) for tp, (u, d) in self._delayed.items()}

    def partition_state(self, tp: TopicPartition) -> PartitionState | None:
        """The emission state of ``tp``, if it has replicated anything yet."""
        with self._lock:
            return self._states.get(TopicPartition(*tp))


class OffsetSyncProducer:
    """Owns the offset-syncs producer of one source task. Call from the task thread only."""

    def __init__(self, topic: str, producer_config: Mapping[str, Any], writer: OffsetSyncWriter, *,
                 producer_factory: Callable[[Mapping[str, Any]], Producer] = new_producer) -> None:
        self._topic = topic
        self._writer = writer
        self._producer = producer_factory(producer_config)
        self._in_flight = 0
        self._backlog = False
        self._keys: dict[TopicPartition, bytes] = {}  # encoded once per partition: it never changes
        self._lock = threading.Lock()
        self._closed = False

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def record(self, tp: TopicPartition, upstream: int, downstream: int) -> None:
        """A replicated record was acknowledged: update the writer and send whatever became due."""
        if self._closed:
            return
        # Only touch the producer when a sync became due or some are still waiting for a free slot.
        if self._writer.update(tp, upstream, downstream) or self._backlog:
            self.send_pending()

    def record_run(self, tp: TopicPartition, upstream: list[int], downstream: list[int]) -> None:
        """Several acknowledged records of one partition, in order: the same as :meth:`record` for each."""
        if self._closed:
            return
        self._writer.update_run(tp, upstream, downstream, self.send_pending)
        if self._backlog:
            self.send_pending()

    def record_range(self, tp: TopicPartition, upstream: int, downstream: int, count: int) -> None:
        """``count`` acknowledged records at consecutive offsets from (upstream, downstream): the same as
        :meth:`record` for each, deciding only where a sync fires."""
        if self._closed:
            return
        self._writer.update_range(tp, upstream, downstream, count, self.send_pending)
        if self._backlog:
            self.send_pending()

    def promote_delayed_and_send(self) -> None:
        """On task commit: every partition's latest sync becomes due (KAFKA-15906), then send."""
        if self._closed:
            return
        self._writer.promote_delayed()
        self.send_pending()

    def send_pending(self) -> None:
        self._producer.poll(0)  # serve delivery callbacks first: they free in-flight slots
        with self._lock:
            free = MAX_OUTSTANDING_OFFSET_SYNCS - self._in_flight
            syncs = self._writer.take_pending(free) if free > 0 else []
            self._in_flight += len(syncs)
            # all slots used: more may be pending, so retry on the next record even if none becomes due
            self._backlog = len(syncs) >= free
        for sync in syncs:
            self._send(sync)

    def _send(self, sync: OffsetSync) -> None:
        tp = sync.topic_partition
        key = self._keys.get(tp)
        if key is None:
            key = self._keys[tp] = sync.key_bytes()
        try:
            # positionally (topic, value, key, partition, on_delivery): keyword arguments cost the client
            # more than the call itself, and this runs on the task thread once per offset.lag.max records
            self._producer.produce(self._topic, sync.value_bytes(), key, 0, self._delivered)
        except (BufferError, Exception) as exc:  # KafkaException too: a sync is best-effort, never fatal
            with self._lock:
                self._in_flight -= 1
            logger.error("Failure sending offset sync %s to %s: %s", sync, self._topic, exc)

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        with self._lock:
            self._in_flight -= 1
        if error is not None:
            try:
                sync: object = OffsetSync.from_record(msg.key(), msg.value())
            except MalformedRecordError:
                sync = "?"
            logger.error("Failure sending offset sync %s to %s: %s", sync, self._topic, error)

    def flush(self, timeout_s: float = 10.0) -> None:
        if not self._closed:
            self._producer.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Deliver what was sent (bounded), then close the producer (what is left is dropped)."""
        if self._closed:
            return
        self._closed = True
        remaining = close_producer(self._producer, timeout_s)
        if remaining:
            logger.warning("%d offset syncs to %s were not delivered before close", remaining, self._topic)
