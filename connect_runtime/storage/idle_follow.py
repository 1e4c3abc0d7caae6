"""A rest between follow fetches of a :class:`~connect_runtime.storage.kafka_log.KafkaBasedLog` at its end.

Why: a log's consumer at the end of its topic sends the next fetch as soon as the broker answers the last
one, and the broker holds an empty fetch only ``fetch.wait.max.ms`` (100 ms here, so that a read-to-end
barrier sees the end quickly). That is ten fetches a second per log for as long as the worker runs, each
listing every partition of the topic (librdkafka sends full fetches, no KIP-227 sessions): 25 for the
offsets topic. A node's herders follow six such logs on the two clusters: 59 of the 82 requests a second
an idle node sent its brokers (bench/results.md, 2026-11-26 20:24), though not a share of the brokers'
CPU that separated from the noise.

So a log built with a rest lets go of its partitions once a follow fetch found the end and brought
nothing, and takes them back at its own positions after the rest, or at once when someone waits for the
log: a read-to-end barrier, a read-your-writes wait, ``stop``. Assigning at known positions fetches at once
(no offset lookup) and reports the end again, so every rest is followed by one fetch that reads what
other workers wrote meanwhile. (Pausing the partitions instead was measured to fetch next to never: after
a resume librdkafka had not fetched before the next empty consume paused them again.) Barriers and writes
are as fast as before; what changes is how soon the node sees a record *another* worker wrote while
nobody here waited for it: up to the rest later. Only the offsets log takes one: its readers go through
barriers (task start, REST offsets), and with 25 partitions its fetches are the largest. The config and
status logs do not: followers act on what the leader writes, and the leader on the statuses it reads (a
clean release by a task's last owner, tests/integration/test_config_status_store.py: with a status
follower resting, a worker's view of a newer owner's RUNNING came too late for it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaException, TopicPartition

#: The rest of the offsets log's follower.
LOG_IDLE_REST_S = 0.5


class IdleRest:
    """The follower's rest: :meth:`at_end` and :meth:`rest` on the log thread, :meth:`wake` and
    :meth:`waiting` from others."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._waiters = 0
        self._end_seen = False

    def wake(self) -> None:
        """End the current rest (if any) now: a barrier was requested, or the log stops."""
        self._wake.set()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """No rest while a thread waits for records to be read back (read-your-writes)."""
        with self._lock:
            self._waiters += 1
        self._wake.set()
        try:
            yield
        finally:
            with self._lock:
                self._waiters -= 1

    def end_reached(self) -> None:
        """A read-to-end round ended: the follower may rest from its next empty consume."""
        self._end_seen = True

    def at_end(self, records: bool, eof: bool) -> bool:
        """After a follow consume: whether to rest now. Only after the end was reported (an EOF event, in
        this batch or an earlier one with records) and this batch brought no record."""
        if records:
            self._end_seen = eof
            return False
        self._end_seen = self._end_seen or eof
        return self.seconds > 0 and self._end_seen

    def rest(self, consumer: Consumer, positions: Callable[[], Mapping[tuple[str, int], int]],
             busy: Callable[[], bool]) -> None:
        """Unassign for up to :attr:`seconds` unless ``busy()`` (barriers pending) or a reader waits, then
        assign ``positions()`` (the next offset of each partition)."""
        self._wake.clear()  # before the checks: a wake after them ends the rest below at once
        with self._lock:
            if self._waiters:
                return
        if busy():
            return
        self._end_seen = False
        try:
            consumer.unassign()
        except KafkaException:
            return
        try:
            self._wake.wait(self.seconds)
        finally:
            consumer.assign([TopicPartition(topic, partition, offset)
                             for (topic, partition), offset in positions().items()])
