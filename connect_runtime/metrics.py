"""Prometheus metrics of the Connect runtime (Kafka's ``ConnectMetrics`` task/worker groups).

No global registry: ``ConnectMetrics.create(registry)`` registers everything on the registry it is
given, so two runtimes in one process (tests, the MM2 driver running several herders) never collide.
Counters and histograms, not Kafka's ``-rate``/``-avg`` gauges: PromQL derives those.

Every per-record counter is incremented once per batch by the task thread, not once per record, so
that the hot path pays one lock acquisition per ``poll()`` rather than per record.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from connect_runtime.lifecycle import State

#: Task states reported by the status gauge (Connect's ``AbstractStatus.State``, minus the connector-only
#: STOPPED and the internal DESTROYED), as label values.
TASK_STATES = tuple(s.value for s in State if s not in (State.STOPPED, State.DESTROYED))

#: Poll batches take from microseconds (a bulk step from a full fetch buffer) to the poll timeout.
_POLL_BATCH_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                       2.5, 5.0)
_COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class WorkerMetrics:
    """Connect's worker-level families (``connect-worker-metrics``): what runs here and how starts went.

    The counts are read at scrape time from the worker (``set_function``), so nothing is updated per
    record; start-ups are counted by result, so the success percentage is a PromQL ratio.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.connector_count = Gauge("connect_worker_connector_count", "Connectors running on this worker",
                                     registry=registry)
        self.task_count = Gauge("connect_worker_task_count", "Tasks running on this worker", registry=registry)
        self.connector_startups = Counter(
            "connect_worker_connector_startup", "Connector start-ups on this worker, by result (success, failure)",
            ("result",), registry=registry)
        self.task_startups = Counter(
            "connect_worker_task_startup", "Task start-ups on this worker, by result (success, failure)",
            ("result",), registry=registry)
        for result in ("success", "failure"):  # both series from the start: a dashboard graphs 0, not nothing
            self.connector_startups.labels(result)
            self.task_startups.labels(result)

    def connector_started(self, ok: bool) -> None:
        self.connector_startups.labels("success" if ok else "failure").inc()

    def task_started(self, ok: bool) -> None:
        self.task_startups.labels("success" if ok else "failure").inc()


@dataclass(frozen=True, slots=True)
class ConnectMetrics:
    """The runtime's metric families; label values are the connector name and the task number."""

    task_status: Gauge
    records_polled: Counter
    records_written: Counter
    outstanding_records: Gauge
    offset_commit_seconds: Histogram
    offset_commit_failures: Counter
    produce_errors: Counter
    records_skipped: Counter
    task_starts: Counter
    poll_batch_seconds: Histogram
    record_errors: Counter
    errors_logged: Counter
    last_error: Gauge
    produce_path: ProducePaths
    worker: WorkerMetrics

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ConnectMetrics:
        labels = ("connector", "task")
        return cls(
            task_status=Gauge(
                "connect_task_status", "1 for the state a task is in, 0 for the others",
                (*labels, "state"), registry=registry),
            records_polled=Counter(
                "connect_source_task_records_polled", "Records returned by SourceTask.poll()",
                labels, registry=registry),
            records_written=Counter(
                "connect_source_task_records_written", "Records acknowledged by the target cluster",
                labels, registry=registry),
            outstanding_records=Gauge(
                "connect_source_task_outstanding_records",
                "Records sent to the producer whose offsets are not committable yet", labels,
                registry=registry),
            offset_commit_seconds=Histogram(
                "connect_source_task_offset_commit_seconds", "Time to durably store a task's source offsets",
                labels, buckets=_COMMIT_BUCKETS, registry=registry),
            offset_commit_failures=Counter(
                "connect_source_task_offset_commit_failures", "Failed source offset commits",
                labels, registry=registry),
            produce_errors=Counter(
                "connect_source_task_produce_errors", "Records the producer refused or failed to deliver",
                labels, registry=registry),
            records_skipped=Counter(
                "connect_source_task_records_skipped",
                "Records the target refused and the task skipped (errors.tolerance=all)", labels,
                registry=registry),
            task_starts=Counter(
                "connect_task_starts", "Times a task was started on this worker (counts rebalance moves)",
                labels, registry=registry),
            poll_batch_seconds=Histogram(
                "connect_source_task_poll_batch_seconds",
                "Time of one poll batch that returned records: SourceTask.poll(), or one bulk step "
                "(poll and produce) of a bulk task", labels, buckets=_POLL_BATCH_BUCKETS, registry=registry),
            record_errors=Counter(
                "connect_task_record_errors",
                "Records that failed and were not tolerated (each fails the task)", labels, registry=registry),
            errors_logged=Counter(
                "connect_task_errors_logged", "Skipped records logged one by one (errors.log.enable=true)",
                labels, registry=registry),
            last_error=Gauge(
                "connect_task_last_error_timestamp_seconds",
                "When a record of the task last failed (Unix time; 0 before the first failure)", labels,
                registry=registry),
            produce_path=ProducePaths(registry),
            worker=WorkerMetrics(registry),
        )

    def for_task(self, connector: str, task: int) -> TaskMetrics:
        """The children of every family for one task, resolved once (``labels()`` is not free)."""
        t = str(task)
        return TaskMetrics(
            status={s: self.task_status.labels(connector, t, s) for s in TASK_STATES},
            records_polled=self.records_polled.labels(connector, t),
            records_written=self.records_written.labels(connector, t),
            outstanding_records=self.outstanding_records.labels(connector, t),
            offset_commit_seconds=self.offset_commit_seconds.labels(connector, t),
            offset_commit_failures=self.offset_commit_failures.labels(connector, t),
            produce_errors=RecordErrors(self.produce_errors.labels(connector, t),
                                        self.records_skipped.labels(connector, t),
                                        self.record_errors.labels(connector, t),
                                        self.errors_logged.labels(connector, t), self.last_error.labels(connector, t)),
            records_skipped=self.records_skipped.labels(connector, t),
            task_starts=self.task_starts.labels(connector, t),
            poll_batch_seconds=self.poll_batch_seconds.labels(connector, t),
            produce_path=partial(self.produce_path.set, connector, t),
        )


class ProducePaths:
    """``connect_source_task_produce_path{connector, task, path, reason}``: how each bulk task produces.

    ``path`` is ``c-span`` (the records between a run's first and last produced by the C extension) or
    ``python-loop`` (by the task's Python loop, slower at small records), ``reason`` why
    (connect_runtime.clients.bulk_produce). One series per task, value 1: a task started again that chooses
    otherwise replaces its series rather than adding one, so ``sum by (path)`` counts tasks.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.family = Gauge("connect_source_task_produce_path",
                            "1 for how a bulk task produces the records between a run's first and last "
                            "(path: c-span or python-loop) and why (reason)",
                            ("connector", "task", "path", "reason"), registry=registry)
        self._current: dict[tuple[str, str], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def set(self, connector: str, task: str, path: str, reason: str) -> None:
        with self._lock:
            previous = self._current.get((connector, task))
            if previous is not None and previous != (path, reason):
                self.family.remove(connector, task, *previous)
            self._current[(connector, task)] = (path, reason)
            self.family.labels(connector, task, path, reason).set(1)


class RecordErrors:
    """Connect's ``task-error-metrics`` of one task, fed where records fail, are skipped or logged.

    ``inc`` is the producer's refusal or the target's failure of records (Java's ``total-record-failures``,
    and the ``last-error-timestamp``); each failure ends either skipped (``skip``: errors.tolerance=all) or
    not tolerated, which fails the task. Which one is known only later (a failed delivery report is judged
    after ``inc``), so the failures neither skipped nor logged as skipped are counted as Java's
    ``total-record-errors`` when the task closes (``settle``); a task that fails closes at once.
    """

    __slots__ = ("_errors", "_failures", "_last", "_logged", "_skipped", "_unresolved")

    def __init__(self, failures: Counter, skipped: Counter, errors: Counter, logged: Counter, last: Gauge) -> None:
        self._failures = failures
        self._skipped = skipped
        self._errors = errors
        self._logged = logged
        self._last = last
        self._unresolved = 0

    def inc(self, amount: int = 1) -> None:
        """``amount`` records failed (the counter protocol, so it stands where a Counter was passed)."""
        self._failures.inc(amount)
        self._last.set(time.time())
        self._unresolved += amount

    def skip(self, logged: bool) -> None:
        """A failed record was skipped (and logged one by one, or not)."""
        self._skipped.inc()
        self._unresolved -= 1
        if logged:
            self._logged.inc()

    def settle(self) -> None:
        """At close: the failures that were never skipped were errors."""
        if self._unresolved > 0:
            self._errors.inc(self._unresolved)
        self._unresolved = 0


@dataclass(frozen=True, slots=True)
class TaskMetrics:
    """Bound metric children of one task."""

    status: dict[str, Gauge]
    records_polled: Counter
    records_written: Counter
    outstanding_records: Gauge
    offset_commit_seconds: Histogram
    offset_commit_failures: Counter
    produce_errors: RecordErrors
    records_skipped: Counter
    task_starts: Counter
    poll_batch_seconds: Histogram
    #: ``produce_path(path, reason)``: the task's series of :class:`ProducePaths`.
    produce_path: Callable[[str, str], None]

    def set_state(self, state: str) -> None:
        for name, gauge in self.status.items():
            gauge.set(1 if name == state else 0)


_REBALANCE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class RebalanceMetrics:
    """Connect's ``connect-worker-rebalance-metrics``: rebalances this member took part in.

    Java's gauges become Prometheus types: ``completed-rebalances-total`` a counter, ``rebalance-avg/max-
    time-ms`` a histogram (``..._sum / ..._count``), ``time-since-last-rebalance-ms`` the timestamp of the
    last one (``time() - ...``), ``rebalancing``, ``epoch`` (the generation) and ``leader`` gauges.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.completed_total = Counter("connect_worker_rebalance_completed",
                                       "Rebalances this member completed (an assignment applied)", registry=registry)
        self.rebalancing = Gauge("connect_worker_rebalancing", "1 while this member is in a rebalance",
                                 registry=registry)
        self.seconds = Histogram("connect_worker_rebalance_seconds",
                                 "Time from joining a rebalance to receiving its assignment",
                                 buckets=_REBALANCE_BUCKETS, registry=registry)
        self.last_completed = Gauge("connect_worker_rebalance_last_completed_timestamp_seconds",
                                    "When the last rebalance completed (Unix time)", registry=registry)
        self.epoch = Gauge("connect_worker_rebalance_epoch", "The group generation of the current assignment",
                           registry=registry)
        self.leader = Gauge("connect_worker_leader", "1 while this member leads the group", registry=registry)

    def started(self) -> None:
        self.rebalancing.set(1)

    def completed(self, generation: int, leader: bool, seconds: float | None) -> None:
        self.completed_total.inc()
        self.rebalancing.set(0)
        if seconds is not None:
            self.seconds.observe(seconds)
        self.last_completed.set_to_current_time()
        self.epoch.set(generation)
        self.leader.set(1 if leader else 0)


class LabelledRegistries:
    """One scrape over several registries, each adding its own constant labels to every sample.

    The MM2 driver runs one herder per source->target pair in one process; each herder's Worker and
    tasks register on their own registry (so that ``MirrorSourceConnector`` task 0 of ``A->B`` and of
    ``B->A`` never collide), and this collector serves them all on ``/metrics`` with ``source`` and
    ``target`` labels.

    ``collect`` yields each registry's families one at a time, relabelled, so a family of the same name
    comes once per registry that has it: :func:`exposition` (``/metrics``) merges them in the text it
    renders, and :class:`MergedFamilies` for a reader that needs one family per name. Merging them here
    would hold every sample of the scrape as an object at once (at 2,000 topics x 4 partitions, ~64,000
    series: 33 MiB of Python heap for a text of 8 MiB).
    """

    def __init__(self) -> None:
        self._parts: list[tuple[dict[str, str], CollectorRegistry]] = []

    def add(self, labels: dict[str, str], registry: CollectorRegistry) -> None:
        self._parts.append((dict(labels), registry))

    def put(self, labels: dict[str, str], registry: CollectorRegistry) -> None:
        """Add, replacing the registry previously added with the same labels (a rebuilt herder)."""
        self._parts = [(lbl, reg) for lbl, reg in self._parts if lbl != labels]
        self.add(labels, registry)

    def collect(self) -> Iterator[Metric]:
        for labels, registry in list(self._parts):
            for family in registry.collect():
                relabelled = Metric(family.name, family.documentation, family.type, family.unit)
                for sample in family.samples:
                    relabelled.add_sample(sample.name, {**labels, **sample.labels}, sample.value, sample.timestamp,
                                          sample.exemplar)
                yield relabelled

    def describe(self) -> list[Metric]:
        """Nothing up front: the set of families depends on what the herders run."""
        return []


class MergedFamilies(Collector):
    """``collector``'s families with those of the same name merged into one (the first one's help and
    type), as the exposition format needs: for a reader that renders with prometheus_client itself (its
    own HTTP server). Holds every sample of a scrape at once; ``/metrics`` uses :func:`exposition`."""

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        for family in self._collector.collect():
            target = merged.get(family.name)
            if target is None:
                target = merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
            target.samples.extend(family.samples)
        yield from merged.values()


class _OneFamily(Collector):
    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> Iterable[Metric]:
        return (self._family,)


#: Where a family's text opens a section: its own samples, then one per OpenMetrics suffix (``_created``...)
#: that prometheus_client renders as a gauge of its own. A label value's newline is escaped, so a line
#: that starts with ``# HELP`` is always a header.
_SECTION_HEADER = re.compile(rb"^# HELP [^\n]*\n# TYPE [^\n]*\n", re.MULTILINE)


def exposition(collector: Collector) -> bytes:
    """The text ``generate_latest`` renders for ``collector`` with its families of the same name merged,
    rendered one family at a time.

    Why not ``generate_latest(MergedFamilies(collector))``: it holds every sample of the scrape as a
    Python object at once (with a dict of labels each), then every line as a string; at ~64,000 series
    that is ~33 MiB of heap for a text of 8 MiB, at every scrape. Here each family is rendered by
    ``generate_latest`` as it comes and only its text is kept, in sections (the family's samples, then
    each suffix section) that later families of the same name append to, in the order
    ``generate_latest`` gives a merged family: samples in collection order, suffix sections sorted.
    """
    sections: dict[str, dict[bytes, list[bytes]]] = {}
    for family in collector.collect():
        name, text = family.name, generate_latest(_OneFamily(family))
        del family  # its samples go now: only the text of the families so far is held
        headers = list(_SECTION_HEADER.finditer(text))
        name_sections = sections.setdefault(name, {})
        for i, match in enumerate(headers):
            end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
            name_sections.setdefault(match.group(), []).append(text[match.end():end])
    out: list[bytes] = []
    for name_sections in sections.values():
        items = list(name_sections.items())
        for header, bodies in items[:1] + sorted(items[1:]):
            out.append(header)
            out.extend(bodies)
    return b"".join(out)
