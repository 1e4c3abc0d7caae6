"""The bulk capability a source task may offer: produce straight from its input, acknowledged per run.

Why: the general path builds a :class:`~connect_runtime.api.records.SourceRecord`, a tracking object and a
delivery callback per record, which caps one Python thread at a fraction of what the client can copy.
A task whose records map one to one onto target partitions (a replicator) can instead produce them
itself, in *runs*: consecutive records of one source partition, written in order to one target
partition by the task's idempotent producer. Only a run's first and last record carry a delivery
callback; the runtime tracks runs, not records.

The contract (what makes acknowledging per run as safe as per record):

* every run of a source partition goes to the *same* target (topic, partition), through
  :meth:`BulkSink.produce` only, in the order the runs were opened;
* the runtime's producer is idempotent, so the target acknowledges one partition's records in order,
  and, unless records are produced with a callback each (:attr:`BulkSink.each_record`), runs with
  ``enable.gapless.guarantee``: a record that fails makes the producer fail every later one. So a
  successful acknowledgement of a run's first or last record means every earlier record of that
  partition was written; a first-to-last offset span shorter than the run is reported as a gap;
* the offset committed for a source partition is the ``source_offset`` of the last run of its longest
  acknowledged prefix of runs (the same rule as the per-record path, property-tested against it).

A run's first record is produced with :meth:`BulkRun.on_first`, its last with :meth:`BulkRun.on_last`
(a one-record run: :meth:`BulkRun.on_only`), the others with :attr:`BulkSink.each_record` (None, or a
callback per record when the runtime must see every failure: ``errors.tolerance=all``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from connect_runtime.api.records import SourceMap

#: What a delivery report is about: the run's first record, its last, its only one, or one in between.
FIRST, LAST, ONLY, EACH = 0, 1, 2, 3

#: A delivery report of a run as the producer's callback filed it: ``(run, error or None, message, kind)``.
RunReport = tuple["BulkRun", Any, Any, int]


class BulkRun:
    """Consecutive records of one source partition written in order to one target partition.

    Created by :meth:`BulkSink.open_run`; its callbacks only file reports (they run inside the producer's
    ``poll``, on the task thread), which the runtime processes after each poll.
    ``first_downstream``/``last_downstream`` are the target offsets of the first and last record once
    acknowledged (-1 until then, or when the run was closed by a later run's acknowledgement).
    """

    __slots__ = ("count", "first_downstream", "last_downstream", "offset", "queue", "reports", "seq", "tag")

    def __init__(self, offset: SourceMap, count: int, tag: Any, queue: Any, seq: int,
                 reports: list[RunReport]) -> None:
        self.offset = offset
        self.count = count
        self.tag = tag
        self.queue = queue
        self.seq = seq
        self.reports = reports
        self.first_downstream = -1
        self.last_downstream = -1

    def on_first(self, error: Any, message: Any) -> None:
        self.reports.append((self, error, message, FIRST))

    def on_last(self, error: Any, message: Any) -> None:
        self.reports.append((self, error, message, LAST))

    def on_only(self, error: Any, message: Any) -> None:
        self.reports.append((self, error, message, ONLY))

    def on_each(self, error: Any, message: Any) -> None:
        if error is not None:
            self.reports.append((self, error, message, EACH))


class BulkSink(Protocol):
    """What the runtime offers a task while it copies in bulk (valid during one ``poll_bulk`` call)."""

    #: The producer's ``produce``: call it positionally,
    #: ``produce(topic, value, key, partition, on_delivery, None, timestamp, headers)``.
    produce: Callable[..., None]

    #: None, or ``produce_span(messages, start, stop, topic, partition) -> (produced, value bytes)``:
    #: produces consumed confluent-kafka messages ``messages[start:stop]`` as they are (key, value, timestamp,
    #: headers) to one partition, without delivery callbacks, in C (:mod:`connect_runtime.clients.bulk_produce`);
    #: it stops at the first record it cannot produce, which the caller then produces with :attr:`produce`
    #: (raising what that raises). Offered only while :attr:`each_record` is False.
    produce_span: Callable[[list[Any], int, int, str, int], tuple[int, int]] | None

    #: The ``on_delivery`` of a run's records between the first and the last: None, or a callback per
    #: record (``BulkRun.on_each``) when the runtime must see each failure.
    each_record: bool

    def open_run(self, source_partition: SourceMap, source_offset: Mapping[str, Any], count: int,
                 target_topic: str, target_partition: int, tag: Any) -> BulkRun:
        """Track a run of ``count`` records before producing them; ``source_offset`` is its last record's.

        ``tag`` is the task's own (e.g. where the run starts in the source), handed back in
        :meth:`BulkSourceTask.runs_acknowledged`.
        """
        ...

    def cut_run(self, run: BulkRun, produced: int, source_offset: Mapping[str, Any] | None) -> None:
        """The run stops after ``produced`` records (a record was refused and skipped, or the task
        stops); ``source_offset`` is that of its last produced record (None: nothing was produced)."""
        ...

    def wait_for_room(self) -> bool:
        """The producer's queue is full: serve deliveries for a while; False if the task must stop."""
        ...

    def refused(self, error: BaseException, topic: str, partition: int, source: str, key: Any,
                value: Any) -> None:
        """The producer refused a record when it was produced: raises unless ``errors.tolerance=all``,
        in which case the record is counted and logged as skipped and the task goes on."""
        ...


class BulkSourceTask(ABC):
    """A source task that can copy in bulk; mixed into a :class:`~connect_runtime.api.task.SourceTask`.

    The runtime calls :meth:`bulk_ready` after ``start``: True and its producer idempotent, it calls
    :meth:`poll_bulk` instead of ``poll`` and :meth:`runs_acknowledged` instead of ``commit_records``;
    otherwise the task runs on the general per-record path.
    """

    @abstractmethod
    def bulk_ready(self) -> bool:
        """Whether this task, as configured, copies in bulk (e.g. False when records must be transformed)."""

    @abstractmethod
    def poll_bulk(self, sink: BulkSink) -> int:
        """Take what the source has (waiting briefly when nothing) and produce it in runs through ``sink``;
        return how many records were produced. Records not produced yet (a full queue, a stop) are the
        task's to produce at the next call."""

    def runs_acknowledged(self, runs: list[BulkRun]) -> None:  # noqa: B027 - optional, like commit()
        """Runs the target acknowledged, in order per source partition (metrics, offset syncs)."""
