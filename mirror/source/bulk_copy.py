"""MirrorSourceTask's bulk copy: consumed messages produced as they are, in runs, no object per record.

A *run* is a stretch of one batch where consecutive messages are one source partition's, at consecutive
offsets: its records go in order to the same partition of the remote topic, so the runtime acknowledges
the run from the delivery reports of its first and last record (:mod:`connect_runtime.api.bulk`). A gap
in the source offsets (transaction markers, compaction) starts a new run, so a run's upstream offsets are
``first .. first + count - 1`` and, acknowledged contiguously, its downstream ones too: that is what the
offset syncs and metrics are fed, once per run.

Per record, only the producing: the records between a run's first and last go to ``sink.produce_span``
(C, when the runtime offers it: :mod:`connect_runtime.clients.bulk_produce`), and the loop below takes the
first and the last (they carry the run's delivery callbacks) and any record the span stopped at. Without
the span the loop produces every record: the message's accessors, ``produce`` (positionally: keyword
arguments cost the client more than the copy itself) and a count of value bytes; nothing else. Anything
per run or per batch stays outside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Message

from connect_runtime.api.bulk import BulkSink
from connect_runtime.clients import bulk_produce
from mirror.connect_offset_keys import OFFSET_KEY

logger = logging.getLogger(__name__)

#: The run scan in C when the extension is there (the same rule as the loop it replaces).
_run_end = bulk_produce.run_end()


class RunTag:
    """What the task keeps of a run until the target acknowledged it (the runtime hands it back)."""

    __slots__ = ("state", "timestamp")

    def __init__(self, state: Any, timestamp: int) -> None:
        self.state = state
        self.timestamp = timestamp


def run_end(messages: list[Message], i: int) -> int:
    """The end (exclusive) of the run starting at ``messages[i]``: the following messages of the same
    topic-partition at the next offsets, without errors (in C when the extension is there)."""
    if _run_end is not None and (end := _run_end(messages, i)) >= 0:
        return end
    m = messages[i]
    topic, part = m.topic(), m.partition()
    expect = (m.offset() or 0) + 1
    j, n = i + 1, len(messages)
    while j < n:
        mj = messages[j]
        if mj.offset() != expect or mj.partition() != part or mj.topic() != topic or mj.error() is not None:
            break
        j += 1
        expect += 1
    return j


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
    span = sink.produce_span
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
        j = run_end(messages, i)
        expect = first + j - i
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
            if span is not None and i < k < last:
                # The records between the first and the last in C; it stops at one it cannot produce,
                # which the lines below then produce (and meet what stopped it).
                done, spanned = span(messages, k, last, remote, part)
                k += done
                nbytes += spanned
                if k == last:
                    cb = run.on_last
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
