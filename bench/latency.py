"""End-to-end replication latency at a steady rate: source record timestamp -> arrival in a consumer on B.

bench/steady.py sets up A, B and our replication (tasks.max=1); bench/load.py produces ``--rate``
records/s (by default 10% of the replication's measured max rate, passed in by bench/run.py) for
``--duration`` seconds. A consumer on B (``fetch.wait.max.ms=10``), assigned to the remote topic from its
end after the warm-up, takes ``now - record.timestamp`` for every record: the record keeps its source
CreateTime, so the figure covers the producer to A, the replicator (consume, produce, acks=all) and the
fetch from B. All processes share one clock (same machine). p50, p99 and max in ms. Goal: p99 <= 20 ms.

Usage::

    python bench/latency.py [--rate 7500] [--duration 30] [--value-bytes 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, TopicPartition

from bench.common import EndOffsets, unique
from bench.steady import PARTITIONS, steady_replication, stop_load

DEFAULT_RATE = 7_500
#: Tansu answers a fetch only when fetch.wait.max.ms ran out, even if data arrived earlier (tansu.md §5):
#: the source consumer must wait little, as the measuring consumer on B does. On Kafka the broker
#: answers as soon as fetch.min.bytes (1) is there, so this setting does not matter there.
TANSU_FETCH_WAIT = {"A.consumer.fetch.max.wait.ms": "10"}


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def run(rate: float, duration: float, value_bytes: int = 100, extra: dict[str, str] | None = None,
        code: Path | None = None) -> dict[str, Any]:
    with steady_replication({**TANSU_FETCH_WAIT, **(extra or {})}, code=code) as steady:
        ends = EndOffsets(steady.target, steady.remote_topic, PARTITIONS).exact()
        consumer = Consumer({"bootstrap.servers": steady.target, "group.id": unique("bench-latency"),
                             "enable.auto.commit": False, "fetch.wait.max.ms": 10, "fetch.min.bytes": 1})
        consumer.assign([TopicPartition(steady.remote_topic, p, ends[p]) for p in range(PARTITIONS)])
        load = steady.start_load(rate, duration, value_bytes)
        latencies: list[float] = []
        #: per second of arrival: the worst latency, to tell a steady tail from a few stalls
        worst_by_second: dict[int, float] = {}
        began_ms = time.time() * 1000
        expected: int | None = None
        deadline = time.monotonic() + duration + 60
        try:
            while (expected is None or len(latencies) < expected) and time.monotonic() < deadline:
                # poll() returns as soon as one record is there; consume(n, t) would wait to fill n.
                first = consumer.poll(0.05)
                now_ms = time.time() * 1000
                messages = [first, *consumer.consume(10000, 0)] if first is not None else []
                second = int((now_ms - began_ms) // 1000)
                for m in messages:
                    if m.error() is None:
                        latency = now_ms - m.timestamp()[1]
                        latencies.append(latency)
                        if latency > worst_by_second.get(second, 0.0):
                            worst_by_second[second] = latency
                if expected is None and load.poll() is not None:
                    if load.returncode != 0:
                        raise SystemExit(f"load generator failed: {steady.load_report()}")
                    expected = int(steady.load_report().split()[1])
        finally:
            stop_load(load)
            consumer.close()
    expected = expected or 0
    latencies.sort()
    return {"rate": rate, "duration_s": duration, "value_bytes": value_bytes, "expected": expected,
            "received": len(latencies), "p50_ms": percentile(latencies, 0.50),
            "p99_ms": percentile(latencies, 0.99), "max_ms": latencies[-1] if latencies else float("nan"),
            "seconds_over_100ms": sorted(s for s, worst in worst_by_second.items() if worst > 100),
            "worst_seconds": sorted(((s, round(w)) for s, w in worst_by_second.items()), key=lambda x: -x[1])[:5]}


def table(result: dict[str, Any]) -> str:
    return "\n".join([
        "| rate (records/s) | value | records received | p50 (ms) | p99 (ms) | max (ms) |",
        "|---|---|---|---|---|---|",
        f"| {result['rate']:,.0f} | {result['value_bytes']} B | {result['received']:,} of {result['expected']:,} "
        f"| {result['p50_ms']:.1f} | {result['p99_ms']:.1f} | {result['max_ms']:.1f} |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="records/s (10%% of the max rate)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry (repeatable)")
    parser.add_argument("--code", type=Path, metavar="DIR",
                        help="run the replication on the packages in DIR (e.g. an older `git archive`)")
    args = parser.parse_args(argv)
    result = run(args.rate, args.duration, args.value_bytes, dict(s.split("=", 1) for s in args.set), args.code)
    print(json.dumps(result))
    print()
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
