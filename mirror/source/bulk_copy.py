"""MirrorSourceTask's bulk copy: consumed messages produced as they are, in runs, no object per record.

A *run* is a stretch of one batch where consecutive messages are one source partition's, at consecutive
offsets: its records go in order to the same partition of the remote topic, so the runtime acknowledges
the run from the delivery reports of its first and last record (:mod:`connect_runtime.api.bulk`). A gap
in the source offsets (transaction markers, compaction) starts a new run, so a run's upstream offsets are
``first .. first + count - 1`` and, acknowledged contiguously, its downstream ones too: that is what the
offset syncs and metrics are fed, once per run.

The loop below runs once per replicated record. Per record it calls the message's accessors, ``produce``
(positionally: keyword arguments cost the client more than the copy itself) and counts value bytes;
nothing else. Anything per run or per batch stays outside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Message

from connect_runtime.api.bulk import BulkSink
from mirror.connect_offset_keys import OFFSET_KEY

logger = logging.getLogger(__name__)


class RunTag:
    """What the task keeps of a run until the target acknowledged it (the runtime hands it back)."""

    __slots__ = ("state", "timestamp")

    def __init__(self, state: Any, timestamp: int) -> None:
        self.state = state
        self.timestamp = timestamp


def copy_batch(messages: list[Message], pos: int, sink: BulkSink, state_of: Callable[[str, int], Any],
               now_ms: int, label: str, jumped: Callable[[Any, int], None] | None = None) -> tuple[int, int]:
    """Produce ``messages[pos:]`` in runs; returns (records produced, position to resume from).

    The position is ``len(messages)`` when all were handled; less when the producer's queue stayed full
    and the task is stopping (the rest is never produced, so its offsets are never committed).
    ``state_of(topic, partition)`` gives the partition's state (``remote``, ``source_map``, ``stats``);
    the age metrics of a run are those of its first record at ``now_ms``. ``state.next_offset`` is the
    next source offset expected of the partition (-1: not known); a run starting elsewhere is reported to
    ``jumped(state, first offset)`` (loss detection; it raises to stop the copy before the run).
    """
    produce = sink.produce
    each = sink.each_record
    n = len(messages)
    i = pos
    produced = 0
    while i < n:
        m = messages[i]
        if m.error() is not None:
            logger.warning("%s consumer error on %s-%s: %s", label, m.topic(), m.partition(), m.error())
            i += 1
            continue
        topic = m.topic() or ""
        part = m.partition() or 0
        first = m.offset() or 0
        # The run: following messages of the same topic-partition at the next offsets.
        j = i + 1
        expect = first + 1
        while j < n:
            mj = messages[j]
            if mj.offset() != expect or mj.partition() != part or mj.topic() != topic or mj.error() is not None:
                break
            j += 1
            expect += 1
        count = j - i
        state = state_of(topic, part)
        if first != state.next_offset and jumped is not None:
            jumped(state, first)
        remote = state.remote
        ts_first = m.timestamp()[1]
        tag = RunTag(state, ts_first)
        run = sink.open_run(state.source_map, {OFFSET_KEY: expect - 1}, count, remote, part, tag)
        cb: Callable[[Any, Any], None] | None = run.on_only if count == 1 else run.on_first
        each_cb = run.on_each if each else None
        last = j - 1
        nbytes = 0
        k = i
        while k < j:
            mk = messages[k]
            v = mk.value()
            ts = mk.timestamp()[1]
            try:
                produce(remote, v, mk.key(), part, cb, None, ts if ts > 0 else 0, mk.headers())
            except BufferError:
                if sink.wait_for_room():
                    continue  # served the producer: try the same record again
                sink.cut_run(run, k - i, {OFFSET_KEY: first + k - i - 1} if k > i else None)
                state.next_offset = first + k - i
                if state.stats is not None:
                    state.stats.polled_run(k - i, nbytes, now_ms - ts_first if ts_first > 0 else 0)
                return produced + k - i, k
            except (KafkaException, TypeError, ValueError) as exc:
                sink.cut_run(run, k - i, {OFFSET_KEY: first + k - i - 1} if k > i else None)
                # raises unless errors are tolerated
                sink.refused(exc, remote, part, f"{topic}-{part}@{first + k - i}", mk.key(), v)
                produced += k - i
                j = k + 1  # the skipped record ends this run; the next one starts after it
                break
            if v is not None:
                nbytes += len(v)
            k += 1
            cb = each_cb if k < last else run.on_last
        else:
            produced += count
        state.next_offset = first + j - i
        stats = state.stats
        if stats is not None:
            stats.polled_run(k - i, nbytes, now_ms - ts_first if ts_first > 0 else 0)
        i = j
    return produced, n
