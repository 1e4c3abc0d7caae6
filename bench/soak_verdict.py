"""The soak's verdict on each node: does a process grow over the run, or only move with what it runs?

The soak (bench/soak.py) samples every node on a fixed period: RSS, OS threads, open file descriptors, open
Kafka clients, and the work the node runs (its connectors and tasks, and whether it leads the group). A
node restarted by a fault is a new process, so each process is judged on its own samples, from its start.

What makes this hard is that the level of a healthy node moves with its work, by far more than a leak
would in ten minutes: a source task holds five clients, about twenty threads and thirty descriptors, and
every rebalance moves tasks between nodes. A sample taken while a client is being opened is higher for a
moment. A verdict that compares single samples fails on such a moment; one that compares only the same
"work" passes a slow leak whenever the work keeps changing. So the verdict estimates a *trend*, robustly:

* The samples are cut into *stretches*: consecutive samples with no fault between them and the same work
  (task numbers aside: any source task costs the same). A stretch's median is the node's level at that
  work between two faults; a transient sample (a client being opened) does not move it.
* **Threads, descriptors, clients**: the seasonal Sen slope (Hirsch, Slack and Smith, 1982) over the
  stretches, with the work as the season: the median of the slopes (change / time) over every pair of
  stretches that ran the same work. Such pairs cancel what the work holds; two stretches are always a fault
  apart, so a leak *per fault* shows in every pair, and so does a leak when the work changes (a task that
  leaks a thread when it stops), since the work recurs later on top of it; the median ignores the odd pair
  that a stretch made only of a transient spoils.
* **RSS** barely depends on the work (allocator arenas do not shrink when a task leaves): the plain Sen
  slope over the stretches between faults, after a longer warm-up (arenas and caches fill during the
  first faults).

The slope times the judged span is the growth. A measure fails when its growth is above an absolute floor
(the noise: a client being opened, an arena that grew once) plus an hourly limit times the span. The floor
lets a ten-minute run pass a healthy node; the hourly limit makes a two-hour run fail a leak too slow to
show in ten minutes. A measure with too few pairs, or too short a span (:data:`MIN_SPAN_S`), to judge says
so rather than guessing; a process that lived too briefly for any judgement is listed as such.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

_TASK_NUMBER = re.compile(r"/\d+$")


@dataclass(frozen=True)
class Sample:
    """One node at one moment. ``clients`` is -1 and ``work`` None when the node's REST API or /metrics did
    not answer (starting, stopping, or its broker frozen): such a sample counts for RSS only."""

    at_s: float
    node: int
    pid: int
    rss_mib: float
    threads: int
    fds: int
    clients: int = -1
    work: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Limit:
    """A measure fails when its growth over the judged span exceeds ``floor + per_hour * hours``."""

    floor: float
    per_hour: float
    unit: str

    def allowed(self, span_s: float) -> float:
        return self.floor + self.per_hour * span_s / 3600


#: The limits of a healthy node, from the recorded runs in bench/results.md (a source task's client opened at
#: a sample is +4 threads and +6 descriptors; RSS rose by up to 11 MiB over the first events of a 2-hour run).
#: The floors hold one client more than a node started with: a 10-minute run on a loaded machine saw a node
#: run the same work with one client, 4-5 threads and 6-8 descriptors more after it had led the group than
#: before (a level, not a trend: the 2-hour runs' nodes, which led the group many times, stayed flat), and a
#: slope over a few stretches extrapolates such a step by up to 1.7 times when it falls mid-run (+1.6 clients,
#: +4.9 threads and +8.2 descriptors there). A leak of one thread or one client per fault still rises above
#: every floor within ten minutes in nearly every run (tests/unit/bench/test_soak_verdict.py).
LIMITS = {
    "threads": Limit(floor=7, per_hour=2, unit=""),
    "fds": Limit(floor=11, per_hour=3, unit=""),
    "clients": Limit(floor=2, per_hour=0.5, unit=""),
    "rss_mib": Limit(floor=16, per_hour=8, unit=" MiB"),
}
#: Seconds after a process starts whose samples are not judged: it joins the group, starts its tasks and
#: fills its caches. RSS keeps growing for longer (allocator arenas during the first faults).
WARMUP_S = {"threads": 60.0, "fds": 60.0, "clients": 60.0, "rss_mib": 180.0}
#: Fewer pairs than this and a measure is not judged (one pair is one comparison, not a trend).
MIN_PAIRS = 3
#: A judged span shorter than this (five faults at the soak's default cadence) is not judged either: in the
#: recorded 2-hour run, processes that lived two or three minutes after a restart had three pairs of
#: stretches whose differences were their start-up (tasks still being handed over), not a trend, and a
#: slope over so short a span multiplies any such difference into a large "growth".
MIN_SPAN_S = 300.0
#: A stretch of fewer samples than this is a node between two levels (tasks still stopping or starting after
#: a rebalance, a sampler that fell behind on a starved machine), not a level: it is left out.
MIN_STRETCH_SAMPLES = 2


def season(work: Sequence[str]) -> tuple[str, ...]:
    """The work without task numbers: ``Source/1`` and ``Source/2`` cost the same."""
    return tuple(sorted(_TASK_NUMBER.sub("/*", w) for w in work))


@dataclass(frozen=True)
class Trend:
    measure: str
    growth: float | None
    allowed: float
    pairs: int
    span_s: float

    @property
    def failed(self) -> bool:
        return self.growth is not None and self.growth > self.allowed

    def describe(self) -> str:
        unit = LIMITS[self.measure].unit
        name = self.measure.removesuffix("_mib")
        if self.growth is None:
            return f"{name} not judged ({self.pairs} pairs over {self.span_s / 60:.1f} min)"
        verdict = "GREW" if self.failed else "ok"
        return f"{name} {self.growth:+.1f}{unit} (allowed {self.allowed:.1f}{unit}, {self.pairs} pairs): {verdict}"


def sen_slope(points: Sequence[tuple[float, float]],
              seasons: Sequence[object] | None = None) -> tuple[float | None, int]:
    """The median slope over pairs of ``points`` (time, value) of the same season; with the number of pairs.
    None with no pair."""
    slopes = [(y_j - y_i) / (t_j - t_i)
              for i, (t_i, y_i) in enumerate(points) for j, (t_j, y_j) in enumerate(points[i + 1:], i + 1)
              if t_j > t_i and (seasons is None or seasons[i] == seasons[j])]
    return (statistics.median(slopes) if slopes else None), len(slopes)


def stretches(samples: Sequence[Sample], measure: str, events: Sequence[float],
              seasonal: bool) -> tuple[list[tuple[float, float]], list[object]]:
    """The samples cut into stretches: consecutive samples with no fault between them (and the same work,
    when ``seasonal``), each of at least :data:`MIN_STRETCH_SAMPLES` summed up as (median time, median value),
    with its season.

    A stretch's median is the level of the node at that work between two faults: a transient sample does
    not move it, and two stretches are always a fault apart, so a leak per fault shows between any two."""
    points: list[tuple[float, float]] = []
    seasons: list[object] = []
    current: list[Sample] = []
    key: object = None

    def close() -> None:
        if len(current) >= MIN_STRETCH_SAMPLES:
            points.append((statistics.median(s.at_s for s in current),
                           statistics.median(float(getattr(s, measure)) for s in current)))
            seasons.append(key[0] if isinstance(key, tuple) else None)

    for sample in samples:
        faults = sum(1 for e in events if e <= sample.at_s)
        sample_key = (season(sample.work or ()) if seasonal else None, faults)
        if sample_key != key:
            close()
            current, key = [], sample_key
        current.append(sample)
    close()
    return points, seasons


def trend(samples: Sequence[Sample], measure: str, events: Sequence[float]) -> Trend:
    """One measure of one process (module docstring)."""
    start = samples[0].at_s if samples else 0.0
    judged = [s for s in samples if s.at_s - start >= WARMUP_S[measure]]
    seasonal = measure != "rss_mib"
    if seasonal:
        judged = [s for s in judged if s.work is not None and s.clients >= 0]
    span = judged[-1].at_s - judged[0].at_s if judged else 0.0
    points, seasons = stretches(judged, measure, events, seasonal)
    slope, pairs = sen_slope(points, seasons if seasonal else None)
    growth = None if slope is None or pairs < MIN_PAIRS or span < MIN_SPAN_S else slope * span
    return Trend(measure, growth, LIMITS[measure].allowed(span), pairs, span)


@dataclass
class NodeVerdict:
    node: int
    pid: int
    started_s: float
    ended_s: float
    samples: int
    trends: list[Trend] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(t.failed for t in self.trends)

    def line(self) -> str:
        judged = "; ".join(t.describe() for t in self.trends)
        verdict = "GREW" if self.failed else "ok"
        return (f"node {self.node} pid {self.pid} ({self.started_s / 60:.1f}-{self.ended_s / 60:.1f} min, "
                f"{self.samples} samples): {judged}: {verdict}")


def processes(samples: Iterable[Sample]) -> dict[tuple[int, int], list[Sample]]:
    """The samples of each process (node, pid), in time order."""
    out: dict[tuple[int, int], list[Sample]] = {}
    for sample in sorted(samples, key=lambda s: s.at_s):
        out.setdefault((sample.node, sample.pid), []).append(sample)
    return out


def judge(samples: Iterable[Sample], events: Sequence[float]) -> list[NodeVerdict]:
    """A verdict per process: every measure's trend from the process's own start."""
    verdicts = []
    for (node, pid), series in sorted(processes(samples).items(), key=lambda kv: (kv[0][0], kv[1][0].at_s)):
        verdict = NodeVerdict(node, pid, series[0].at_s, series[-1].at_s, len(series))
        verdict.trends = [trend(series, measure, events) for measure in LIMITS]
        verdicts.append(verdict)
    return verdicts


@dataclass(frozen=True)
class DuplicateBound:
    """Records a fault may copy twice: what the source had sent since the last offset commit that survived.

    Offsets are committed every ``offset.flush.interval.ms`` (``flush_s``), for records the target has
    acknowledged; a record is acknowledged about ``ack_s`` after it was sent (the soak passes the run's 90th
    percentile of end-to-end latency, at least 2 s: on a loaded machine acknowledgements take longer, and so
    does the commit that covers them). A task killed with -9 is resumed elsewhere from its last commit: at
    most ``rate * (flush_s + ack_s)`` records again. When the target freezes or its link is cut, commits fail
    from the fault's start until the flow has recovered (``outage_s + recovered_s``), and a task moved
    meanwhile copies again what its predecessor copied since its last commit: at most
    ``rate * (flush_s + ack_s + outage_s + recovered_s)``.

    A clean stop (SIGTERM) flushes its producer and commits what the target acknowledged before it leaves
    the group, so the task's next owner starts where it stopped: it can copy again only what was in flight
    and never acknowledged when the final commit was taken (``in_flight``, read from the node just before
    the signal). A stop that lost its final commit would copy again up to a flush interval of records on top
    of that, so it does not fit in this bound.
    """

    rate_per_s: float
    flush_s: float
    ack_s: float = 2.0

    def for_event(self, kind: str, outage_s: float = 0.0, in_flight: int = 0, recovered_s: float = 0.0) -> int:
        if kind == "clean":
            return in_flight
        window = self.flush_s + self.ack_s
        if kind == "outage":
            window += outage_s + recovered_s
        return int(self.rate_per_s * window)
