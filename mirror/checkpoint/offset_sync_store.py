"""Offset translation from offset syncs: Kafka's ``OffsetSyncStore`` (docs/failover.md).

A limited number of offset syncs is kept per source topic-partition, laid out so that translation is
precise near the live end of the topic and coarser further back. For each partition the store keeps an
array ``syncs[0..63]`` of sync objects (slots may hold the *same object*; identity, not value, matters)
and maintains these invariants:

* **Invariant A**: ``syncs[0]`` is the latest offset sync read from the offset-syncs topic.
* **Invariant B**: for each ``i < j`` with ``syncs[i] is not syncs[j]``:
  ``syncs[i].upstream <= syncs[j].upstream + 2^j - 2^i``. (Old syncs expire: slot j is never too old.)
* **Invariant C**: for each ``i < j`` with ``syncs[i] is not syncs[j]``:
  ``syncs[i].upstream >= syncs[j].upstream + 2^max(i-2, 0)``. (Distinct syncs are spread out.)
* **Invariant D**: ``syncs[63]`` is the earliest sync usable for translation.

Bounds are computed in Java 64-bit arithmetic: a bound that overflows to a negative number counts as
satisfied for B and as failed for C. B and C can be checked between adjacent slots and then hold for all
pairs, which is what makes each update linear.

**Translation** of a group's upstream offset ``g`` picks the first ``syncs[i]`` with ``upstream <= g``
(else ``syncs[63]``): if that sync is ahead of ``g`` the answer is ``-1`` ("too old to translate", no
checkpoint); ``g == upstream`` gives ``downstream``; ``g > upstream`` gives ``downstream + 1`` and never
more, because records between syncs may have been dropped (compaction, transaction markers, filters) and
overshooting would lose data. For a fixed store state, translation is monotonic in ``g``.

**Initial load.** Nothing translates (``None``) until the first read to the end of the offset-syncs topic
has finished. If the checkpoint task could not load its previous checkpoints,
``initialization_must_read_to_end`` is true and every sync read during the initial load *replaces the
whole array*, so only the last historical sync per partition survives: the task then cannot emit a
checkpoint older than one an earlier generation may already have emitted. An upstream rewind
(a sync whose upstream is below ``syncs[0]``'s) likewise clears the history.

**Reading.** Kafka's class reads the offset-syncs topic itself; here :class:`OffsetSyncReader` does, on a
background thread: partition 0 (the only one MM2 writes) from the beginning, every record handed to the
store, the store told when the reader reached the end for the first time (translation becomes available
then), and tailing after that (:class:`~mirror.checkpoint.topic_tail.TopicTail`). :class:`OffsetSyncStore`
itself does no Kafka I/O: it is fed through :meth:`~OffsetSyncStore.start_initial_load`, :meth:`handle`
and :meth:`~OffsetSyncStore.finish_initial_load`. Updates come from that one thread; readers on other
threads always see a complete array, because each update publishes a new immutable tuple.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Message

from connect_runtime.clients.factory import new_consumer
from mirror.checkpoint.topic_tail import TopicTail
from mirror.client.models import MalformedRecordError, OffsetSync, TopicPartition

logger = logging.getLogger(__name__)

TRACE = 5  # below DEBUG: one line per sync is too much even for debug logs
SYNCS_PER_PARTITION = 64  # one sync per bit of a 64-bit offset (Java Long.SIZE)
_TWO_64 = 1 << 64
#: An offset sync's value: upstream and downstream offset (Java reads these two and ignores the rest).
_VALUE = struct.Struct(">qq")
_VALUE_SIZE = _VALUE.size
#: At most this many distinct record keys (source partitions) are remembered decoded.
_KEYS_CACHED = 100_000
_TWO_63 = 1 << 63


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java ``long`` arithmetic would leave it."""
    return ((value + _TWO_63) % _TWO_64) - _TWO_63


def invariant_b(i_sync: OffsetSync, j_sync: OffsetSync, i: int, j: int) -> bool:
    """Invariant B for the pair (i, j): slot j is recent enough relative to slot i."""
    bound = _java_long(j_sync.upstream_offset + (1 << j) - (1 << i))
    return i_sync is j_sync or bound < 0 or i_sync.upstream_offset <= bound


def invariant_c(i_sync: OffsetSync, j_sync: OffsetSync, i: int) -> bool:
    """Invariant C for the pair (i, j): slot i is sufficiently separated from the older slot j."""
    bound = _java_long(j_sync.upstream_offset + (1 << max(i - 2, 0)))
    return i_sync is j_sync or (bound >= 0 and i_sync.upstream_offset >= bound)


#: Invariant B's spacing between adjacent slots ``j - 1`` and ``j``: ``2^j - 2^(j-1)``.
_B_STEP = tuple((1 << j) - (1 << (j - 1)) if j else 0 for j in range(SYNCS_PER_PARTITION))
#: Invariant C's spacing after slot ``i``: ``2^max(i-2, 0)``.
_C_STEP = tuple(1 << max(i - 2, 0) for i in range(SYNCS_PER_PARTITION))
_MAX_LONG = _TWO_63 - 1
_MIN_LONG = -_TWO_63


def update_sync_array(original: tuple[OffsetSync, ...], sync: OffsetSync) -> list[OffsetSync]:
    """The new array after ``sync`` arrives, for the non-clearing case (no rewind, not initial-only load).

    Works on a copy; ``original`` is left untouched so readers never see a half-updated array.
    """
    return _update(original, [s.upstream_offset for s in original], sync)[0]


def _update(original: tuple[OffsetSync, ...], original_up: list[int] | tuple[int, ...],
            sync: OffsetSync) -> tuple[list[OffsetSync], list[int]]:
    """:func:`update_sync_array` on the syncs and their upstream offsets (``original_up[i]`` is
    ``original[i].upstream_offset``); returns both new arrays.

    Kafka's loop, with :func:`invariant_b` and :func:`invariant_c` written out on plain ints (Java ``long``
    wrap-around only when a bound leaves the range): the checkpoint task runs it for every offset sync,
    hundreds a second while the source task copies a backlog, and the calls and attribute reads were most
    of its cost. tests/unit/mirror/test_offset_sync_store_differential.py holds it to the transcription.
    """
    syncs = list(original)
    ups = list(original_up)
    replacement = sync
    replacement_up = sync.upstream_offset
    # Index into the original array of the next candidate to keep instead of the new sync.
    replacement_index = 0
    # Repair Invariant A: the latest sync always goes first.
    syncs[0] = replacement
    ups[0] = replacement_up
    for current in range(1, SYNCS_PER_PARTITION):
        previous = current - 1
        previous_sync = syncs[previous]
        previous_up = ups[previous]
        nxt = current + 1
        # Prefer an old value over the new sync where it satisfies the invariants here: that keeps more
        # distinct syncs overall, which improves translation further back.
        while True:
            old_value = original[replacement_index]
            old_up = original_up[replacement_index]
            if previous_sync is old_value:
                is_recent = separated_from_previous = True
            else:
                # Not recent enough for this slot (Invariant B); it may still fit a later, older slot.
                bound = old_up + _B_STEP[current]
                if bound > _MAX_LONG or bound < _MIN_LONG:
                    bound = _java_long(bound)
                is_recent = bound < 0 or previous_up <= bound
                # Too close to the previous slot (Invariant C): it will never be valid in a later slot either.
                bound = old_up + _C_STEP[previous]
                if bound > _MAX_LONG or bound < _MIN_LONG:
                    bound = _java_long(bound)
                separated_from_previous = bound >= 0 and previous_up >= bound
            if nxt >= SYNCS_PER_PARTITION or old_value is syncs[nxt]:
                separated_from_next = True
            else:
                bound = ups[nxt] + _C_STEP[current]
                if bound > _MAX_LONG or bound < _MIN_LONG:
                    bound = _java_long(bound)
                separated_from_next = bound >= 0 and old_up >= bound
            # Runs of the same object are equivalent: consider each object once.
            duplicate = (
                replacement_index + 1 < SYNCS_PER_PARTITION and original[replacement_index + 1] is old_value
            )
            promote = is_recent and separated_from_previous and separated_from_next
            if promote:
                replacement = old_value
                replacement_up = old_up
            skip = duplicate or not separated_from_previous
            if promote or skip:
                replacement_index += 1
            # Never move the candidate index past the slot being filled: promotion only goes upward.
            if not (replacement_index < current and skip):
                break
        if previous_sync is syncs[current]:
            break  # Invariant B holds trivially here, hence for the whole (unchanged) tail: keep it.
        bound = ups[current] + _B_STEP[current]
        if bound > _MAX_LONG or bound < _MIN_LONG:
            bound = _java_long(bound)
        if bound < 0 or previous_up <= bound:
            break  # Invariant B still holds here, hence for the whole (unchanged) tail: keep it.
        # Repair Invariant B: the slot became too old relative to the one before it.
        syncs[current] = replacement
        ups[current] = replacement_up
    return syncs, ups


class OffsetSyncStore:
    """Per-partition sync history and ``translate_downstream`` (see the module docstring)."""

    def __init__(self) -> None:
        self._syncs: dict[TopicPartition, tuple[OffsetSync, ...]] = {}
        #: Each array's upstream offsets, slot by slot (the update reads them for every sync).
        self._upstreams: dict[TopicPartition, list[int]] = {}
        #: Record key -> its decoded source partition, for keys decoded once already (:meth:`handle_record`).
        self._keys: dict[bytes, TopicPartition] = {}
        self._initialization_must_read_to_end = True
        self._read_to_end = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------- loading

    def start_initial_load(self, initialization_must_read_to_end: bool = True) -> None:
        """Begin the initial read of the offset-syncs topic.

        Args:
            initialization_must_read_to_end: True when previous checkpoints could not be loaded; then
                only the last sync per partition read before :meth:`finish_initial_load` is kept.
        """
        self._initialization_must_read_to_end = initialization_must_read_to_end
        logger.debug(
            "OffsetSyncStore starting - must read to OffsetSync end = %s", initialization_must_read_to_end
        )

    def finish_initial_load(self) -> None:
        """The reader reached the end of the topic once: translation becomes available."""
        self._read_to_end = True

    @property
    def ready(self) -> bool:
        """Whether the initial read to the end has finished."""
        return self._read_to_end

    def handle(self, sync: OffsetSync) -> None:
        """Apply one sync read from the offset-syncs topic (initial read or tailing)."""
        tp = sync.topic_partition
        with self._lock:
            existing = self._syncs.get(tp)
            only_load_last_offset = not self._read_to_end and self._initialization_must_read_to_end
            if existing is None or only_load_last_offset or sync.upstream_offset < existing[0].upstream_offset:
                # First sync, initial load keeping the last one only, or upstream rewind: a uniform array
                # (it satisfies Invariants B and C trivially).
                self._upstreams[tp] = [sync.upstream_offset] * SYNCS_PER_PARTITION
                self._syncs[tp] = (sync,) * SYNCS_PER_PARTITION
                return
            syncs, self._upstreams[tp] = _update(existing, self._upstreams[tp], sync)
            self._syncs[tp] = tuple(syncs)
        if logger.isEnabledFor(TRACE):
            logger.log(TRACE, "New sync %s applied, new state is %s", sync, self._describe(tp))

    def handle_record(self, key: bytes | None, value: bytes | None) -> OffsetSync | None:
        """Decode and apply one offset-syncs record; an undecodable record is skipped with a warning.

        A sync's key is its source partition, so the keys repeat: one decoded before (by
        ``OffsetSync.from_record``, which checked it) is looked up, and the value, two big-endian
        longs, is unpacked in one call. Anything else takes ``from_record`` and its checks.
        """
        tp = self._keys.get(key) if key is not None else None
        if tp is not None and value is not None and len(value) >= _VALUE_SIZE:
            upstream, downstream = _VALUE.unpack_from(value)
            sync = object.__new__(OffsetSync)  # the key was checked once; longs are always in range
            object.__setattr__(sync, "topic_partition", tp)
            object.__setattr__(sync, "upstream_offset", upstream)
            object.__setattr__(sync, "downstream_offset", downstream)
        else:
            try:
                sync = OffsetSync.from_record(key, value)
            except MalformedRecordError as exc:
                logger.warning("Skipping undecodable offset sync record: %s", exc)
                return None
            if key is not None and len(self._keys) < _KEYS_CACHED:
                self._keys[bytes(key)] = sync.topic_partition
        self.handle(sync)
        return sync

    # ---------------------------------------------------------------------------------- translation

    def translate_downstream(self, group: str | None, tp: TopicPartition, upstream_offset: int) -> int | None:
        """The downstream offset for ``upstream_offset`` of ``tp``.

        Returns:
            None when unknown (initial load not finished, or no sync for the partition); ``-1`` when the
            offset is older than every retained sync (no checkpoint must be emitted); otherwise the
            translated offset, at most one past the nearest older sync.
        """
        if not self._read_to_end:
            logger.debug(
                "translate_downstream(%s,%s,%d): Skipped (initial offset syncs read still in progress)",
                group,
                tp,
                upstream_offset,
            )
            return None
        syncs = self._syncs.get(TopicPartition(*tp))
        if syncs is None:
            logger.debug(
                "translate_downstream(%s,%s,%d): Skipped (offset sync not found)", group, tp, upstream_offset
            )
            return None
        sync = lookup_latest_sync(syncs, upstream_offset)
        if sync.upstream_offset > upstream_offset:
            logger.debug(
                "translate_downstream(%s,%s,%d): Skipped (%s is ahead of upstream consumer group %d)",
                group,
                tp,
                upstream_offset,
                sync,
                upstream_offset,
            )
            return -1
        # Records after the sync may or may not have been replicated, so going more than one past the sync
        # could skip a record on the target (data loss). One past also covers a group at the end of the topic.
        step = 0 if upstream_offset == sync.upstream_offset else 1
        return sync.downstream_offset + step

    def syncs_for(self, tp: TopicPartition) -> tuple[OffsetSync, ...] | None:
        """The current 64-slot array of ``tp`` (for tests and diagnostics), or None."""
        return self._syncs.get(TopicPartition(*tp))

    def partitions(self) -> list[TopicPartition]:
        """Partitions that have at least one sync."""
        return list(self._syncs)

    def _describe(self, tp: TopicPartition) -> str:
        syncs = self._syncs.get(tp, ())
        parts = [
            f"{s.upstream_offset}:{s.downstream_offset}"
            for i, s in enumerate(syncs)
            if i == 0 or s is not syncs[i - 1]
        ]
        return "[" + ",".join(parts) + "]"


def lookup_latest_sync(syncs: tuple[OffsetSync, ...], upstream_offset: int) -> OffsetSync:
    """The newest sync at or before ``upstream_offset``; the oldest retained sync if none is."""
    for sync in syncs:
        if sync.upstream_offset <= upstream_offset:
            return sync
    return syncs[-1]


class OffsetSyncReader(TopicTail):
    """Tails ``topic`` partition 0 into ``store`` on a daemon thread until :meth:`stop`."""

    what = "offset-sync reader"

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], store: OffsetSyncStore, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer) -> None:
        super().__init__(topic, consumer_config, consumer_factory=consumer_factory)
        self._store = store
        self.records_read = 0

    def start(self, initialization_must_read_to_end: bool) -> None:
        """Start reading; returns at once (the store reports ``ready`` after the first read to the end)."""
        self._store.start_initial_load(initialization_must_read_to_end)
        self._start_thread()

    def _caught_up(self, complete: bool) -> None:
        if complete and not self._store.ready:
            self._store.finish_initial_load()
            logger.info("Read %d offset syncs from %s; offset translation is available",
                        self.records_read, self.topic)

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.records_read += 1
            self._store.handle_record(message.key(), message.value())
