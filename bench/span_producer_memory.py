"""Memory of the C span producer over many records: RSS, Python's allocated blocks and reference counts.

Why: ``connect_runtime/clients/_bulk_produce.c`` takes and drops references to every message's value,
key, timestamp and headers, builds librdkafka headers for each record and a topic handle per call. A
reference it keeps once per record, or a header list it never frees, grows a node by a few bytes per
record: invisible in a test, a full memory after a week. Here one batch of messages goes through the span
round after round, ``--records`` in all, and the process is sampled between rounds; every figure must be
flat.

The producer is built by the client factory, as a task's is, but points at a closed port: the records
stop in librdkafka's queue, and each round ends with ``purge()`` (librdkafka frees each record with its
headers, as after a delivery) and a ``poll`` (their reports, which carry no callback). What is measured is
the span's own memory, not a broker's or the network's; ``--bootstrap`` sends to a real broker instead
(``flush`` ends each round).

Sampled after each round, once the garbage collector ran: RSS (/proc VmRSS), ``sys.getallocatedblocks()``
(Python objects alive: a kept reference keeps its object), ``len(gc.get_objects())``, and the reference
counts of objects every record touches (a value, a key, a header's value, the topic name, the message
list, a message, the producer, its span callable) and the sum of those of every message and of every
value, key and header list of the batch. The first round is the warm-up (librdkafka's queues,
the interpreter's caches); flat means the reference counts equal at every sample, and RSS and allocated
blocks within a small margin of the warm-up's (printed with the verdict).

Usage::

    python bench/span_producer_memory.py [--records 10000000] [--batch 100000] [--run 500]
                                         [--value-bytes 100] [--samples 20] [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import time
from array import array
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Message

from bench.common import machine_facts, rss_kb
from connect_runtime.clients.bulk_produce import produce_path
from connect_runtime.clients.factory import new_producer

TOPIC = "bench-span"
#: RSS may move by allocator noise (glibc keeps freed pages, librdkafka's buffers differ by a few): the
#: margin above the warm-up within which the run counts as flat.
RSS_MARGIN_KB = 4096
#: Python's allocated blocks move with caches of the interpreter (type caches, freelists).
BLOCKS_MARGIN = 2000


def build_messages(count: int, value_bytes: int) -> list[Message]:
    """Messages as a consumer hands them over: keys, values, timestamps, and headers on most of them."""
    out = []
    for i in range(count):
        pairs: list[tuple[str, str | bytes | None]] = [("h", b"%d" % i), ("n", None)]
        headers = None if i % 4 == 0 else pairs[: i % 3 + 1]
        out.append(Message(topic="source", partition=0, offset=i, key=None if i % 5 == 0 else b"k%d" % i,
                           value=bytes([i % 256]) * value_bytes, timestamp=(1, 1_700_000_000_000 + i),
                           headers=headers))
    return out


class Batch(tuple[Any, ...]):
    """Objects whose reference counts are summed: every message's value, key or headers, not one of them."""


class Samples:
    """The figures of each sample, kept in a preallocated array: a list of dicts would itself grow the
    allocated blocks and gc objects it measures."""

    FIELDS = ("records", "rss_kb", "allocated_blocks", "gc_objects", "refcounts_moved")

    def __init__(self, capacity: int, watched: dict[str, Any]) -> None:
        self._data = array("q", bytes(8 * capacity * len(self.FIELDS)))
        self._watched = watched
        self._first: list[int] = []
        self.count = 0

    def take(self, records: int) -> dict[str, Any]:
        gc.collect()
        refcounts = [sum(map(sys.getrefcount, obj)) if isinstance(obj, Batch) else sys.getrefcount(obj)
                     for obj in self._watched.values()]
        if not self._first:
            self._first = refcounts
        row = (records, rss_kb(os.getpid()), sys.getallocatedblocks(), len(gc.get_objects()),
               int(refcounts != self._first))
        base = self.count * len(self.FIELDS)
        self._data[base:base + len(row)] = array("q", row)
        self.count += 1
        return {**dict(zip(self.FIELDS, row, strict=True)),
                "refcounts": dict(zip(self._watched, refcounts, strict=True))}

    def column(self, name: str) -> list[int]:
        index, width = self.FIELDS.index(name), len(self.FIELDS)
        return [self._data[i * width + index] for i in range(self.count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=100_000, help="messages per round (built once)")
    parser.add_argument("--run", type=int, default=500, help="records per span call, as a run of the bulk copy")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20, help="samples printed over the run (plus the warm-up)")
    parser.add_argument("--bootstrap", help="a real broker to send to (default: a closed port, purged per round)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("librdkafka").setLevel(logging.CRITICAL)  # the closed port's connection errors

    print(json.dumps(machine_facts()), flush=True)
    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap or "127.0.0.1:9", "linger.ms": 50,
                              "queue.buffering.max.messages": args.batch * 2, "queue.buffering.max.kbytes": 2**21}
    producer = new_producer(config)
    path = produce_path(producer)
    if path.span is None:
        raise SystemExit(f"the span producer cannot run here: {path.reason}")
    span = path.span
    messages = build_messages(args.batch, args.value_bytes)
    probe = messages[11]  # a key, and a header value of two bytes (one-byte bytes are shared objects)
    headers = probe.headers()  # the Message's own list (headers() hands out the same one each call)
    assert isinstance(headers, list)
    watched = {"value": probe.value(), "key": probe.key(), "headers": headers, "header value": headers[0][1],
               "topic": TOPIC, "messages": messages, "message": probe, "producer": producer, "span": span,
               "every message": Batch(messages), "every value": Batch(m.value() for m in messages),
               "every key": Batch(m.key() for m in messages if m.key() is not None),
               "every header list": Batch(m.headers() for m in messages if m.headers() is not None)}
    del headers

    rounds = max(1, args.records // args.batch)
    every = max(1, rounds // args.samples)
    samples = Samples(rounds // every + 2, watched)
    started = time.perf_counter()
    cpu_started = time.process_time()
    sent = 0
    for round_number in range(1, rounds + 1):
        for start in range(0, args.batch, args.run):
            stop = min(start + args.run, args.batch)
            produced, _ = span(messages, start, stop, TOPIC, 0)
            if produced != stop - start:
                raise SystemExit(f"the span stopped at {start + produced} of {start}..{stop}: queue full?")
            sent += produced
        if args.bootstrap:
            if producer.flush(60):
                raise SystemExit("records left undelivered after 60 s")
        else:
            producer.purge()
        producer.poll(0)
        if round_number == 1 or round_number % every == 0 or round_number == rounds:
            point = samples.take(sent)
            print(json.dumps({"seconds": round(time.perf_counter() - started, 1), **point}), flush=True)
    cpu = time.process_time() - cpu_started
    producer.close()

    rss, blocks, objects = samples.column("rss_kb"), samples.column("allocated_blocks"), samples.column("gc_objects")
    records = samples.column("records")
    refcounts_flat = not any(samples.column("refcounts_moved"))
    rss_flat = max(rss) - rss[0] <= RSS_MARGIN_KB
    blocks_flat = max(abs(b - blocks[0]) for b in blocks) <= BLOCKS_MARGIN
    print(f"\n{sent:,} records through the span ({args.run} per call, {args.value_bytes} B values), "
          f"{cpu / sent * 1e6:.2f} us CPU per record (span, purge and poll)\n")
    print("| sample | records | RSS (MiB) | allocated blocks | gc objects |\n|---|---|---|---|---|")
    for name, i in (("warm-up", 0), ("end", -1)):
        print(f"| {name} | {records[i]:,} | {rss[i] / 1024:.1f} | {blocks[i]:,} | {objects[i]:,} |")
    print(f"\nover {samples.count} samples: RSS peak {(max(rss) - rss[0]) / 1024:+.1f} MiB over the warm-up "
          f"(margin {RSS_MARGIN_KB / 1024:.0f}), allocated blocks {min(blocks) - blocks[0]:+,} to "
          f"{max(blocks) - blocks[0]:+,} (margin {BLOCKS_MARGIN:,}), gc objects {min(objects) - objects[0]:+,} to "
          f"{max(objects) - objects[0]:+,}, reference counts "
          f"{'equal at every sample' if refcounts_flat else 'MOVED'}")
    flat = refcounts_flat and rss_flat and blocks_flat
    print(f"verdict: {'flat' if flat else 'NOT flat'}")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
