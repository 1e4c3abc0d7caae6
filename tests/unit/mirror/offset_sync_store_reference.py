"""The OffsetSyncStore as it was before its update was made faster (commit b19a54f), kept as the reference.

A direct transcription of Kafka's ``OffsetSyncStore``: ``test_offset_sync_store_differential``
feeds the same offset-syncs stream to it and to ``mirror.checkpoint.offset_sync_store`` and asserts the
same arrays (slot by slot, by identity) and the same translations. Do not optimise this file.
"""

from __future__ import annotations

import logging
import threading

from mirror.client.models import MalformedRecordError, OffsetSync, TopicPartition

logger = logging.getLogger(__name__)

TRACE = 5  # below DEBUG: one line per sync is too much even for debug logs
SYNCS_PER_PARTITION = 64  # one sync per bit of a 64-bit offset (Java Long.SIZE)
_TWO_64 = 1 << 64
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


def update_sync_array(original: tuple[OffsetSync, ...], sync: OffsetSync) -> list[OffsetSync]:
    """The new array after ``sync`` arrives, for the non-clearing case (no rewind, not initial-only load).

    Works on a copy; ``original`` is left untouched so readers never see a half-updated array.
    """
    syncs = list(original)
    replacement = sync
    # Index into the original array of the next candidate to keep instead of the new sync.
    replacement_index = 0
    # Repair Invariant A: the latest sync always goes first.
    syncs[0] = replacement
    for current in range(1, SYNCS_PER_PARTITION):
        previous = current - 1
        # Prefer an old value over the new sync where it satisfies the invariants here: that keeps more
        # distinct syncs overall, which improves translation further back.
        while True:
            old_value = original[replacement_index]
            # Not recent enough for this slot (Invariant B); it may still fit a later, older slot.
            is_recent = invariant_b(syncs[previous], old_value, previous, current)
            # Too close to the previous slot (Invariant C): it will never be valid in a later slot either.
            separated_from_previous = invariant_c(syncs[previous], old_value, previous)
            nxt = current + 1
            separated_from_next = nxt >= SYNCS_PER_PARTITION or invariant_c(old_value, syncs[nxt], current)
            # Runs of the same object are equivalent: consider each object once.
            duplicate = (
                replacement_index + 1 < SYNCS_PER_PARTITION and original[replacement_index + 1] is old_value
            )
            promote = is_recent and separated_from_previous and separated_from_next
            if promote:
                replacement = old_value
            skip = duplicate or not separated_from_previous
            if promote or skip:
                replacement_index += 1
            # Never move the candidate index past the slot being filled: promotion only goes upward.
            if not (replacement_index < current and skip):
                break
        if invariant_b(syncs[previous], syncs[current], previous, current):
            # Invariant B still holds here, hence for the whole (unchanged) tail: keep it.
            break
        # Repair Invariant B: the slot became too old relative to the one before it.
        syncs[current] = replacement
    return syncs


class OffsetSyncStore:
    """Per-partition sync history and ``translate_downstream`` (see the module docstring)."""

    def __init__(self) -> None:
        self._syncs: dict[TopicPartition, tuple[OffsetSync, ...]] = {}
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
            if existing is None:
                self._syncs[tp] = (sync,) * SYNCS_PER_PARTITION
                return
            only_load_last_offset = not self._read_to_end and self._initialization_must_read_to_end
            upstream_rewind = sync.upstream_offset < existing[0].upstream_offset
            if only_load_last_offset or upstream_rewind:
                # A uniform array satisfies Invariants B and C trivially.
                self._syncs[tp] = (sync,) * SYNCS_PER_PARTITION
                return
            self._syncs[tp] = tuple(update_sync_array(existing, sync))
        if logger.isEnabledFor(TRACE):
            logger.log(TRACE, "New sync %s applied, new state is %s", sync, self._describe(tp))

    def handle_record(self, key: bytes | None, value: bytes | None) -> OffsetSync | None:
        """Decode and apply one offset-syncs record; an undecodable record is skipped with a warning."""
        try:
            sync = OffsetSync.from_record(key, value)
        except MalformedRecordError as exc:
            logger.warning("Skipping undecodable offset sync record: %s", exc)
            return None
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
