"""Records replayed on failover at consumer lags 0 to 100k: Java's MirrorMaker 2 beside ours, on Apache Kafka.

bench/failover_replay.py computes the same shape from the product's own classes, without brokers; this
measures it end to end, with Java's MirrorMaker 2 as the anchor users compare with (``--broker kafka``
only: Java MM2 is meant on the broker its users run).

For each copier (Java MM2 as shipped, then ours), on the same source cluster A and a fresh target B:

1. ``--records`` records of 100 B are written to a fresh one-partition topic on A, and one consumer group
   per lag in :data:`LAGS` commits ``records - lag`` on it: consumers that lag behind a backlog;
2. the copier replicates the topic with the same mm2.properties (bench/replication.py's, checkpoints and
   heartbeats on as shipped, ``offset.lag.max`` at its default 100; checkpoints every 5 s and offset
   commits every 5 s instead of 60 so that a run takes seconds);
3. once every record is on B and the groups' checkpoints stop changing (three reads 5 s apart), each
   group fails over: its position on B is what Java's ``RemoteClusterUtils.translateOffsets`` reads from
   the checkpoints on B (tests/kafka/mirrormaker/MirrorClientProbe.java, for both copiers), and for
   ours also what the exact offset map gives (:class:`mirror.client.translation.OffsetTranslator`).

A copy of a dense partition from its start puts upstream offset ``o`` at downstream offset ``o``, so a
group replays ``committed - translated`` records (0: exact). Each copier gets its own source topic, so the
offset syncs one wrote on A are never read by the other.

    python bench/failover_java.py [--records 1000000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import java_copier, kafka_brokers, replication
from bench.common import EndOffsets, create_topic, local_brokers, preload, unique, wait_for_records

LAGS = (0, 1_000, 10_000, 100_000)
VALUE_BYTES = 100
#: Checkpoints and offset commits every 5 s (MM2: 60 s), the rest as shipped.
FLOW = {**replication.DEFAULT_FLOW, "emit.checkpoints.interval.seconds": "5", "B.offset.flush.interval.ms": "5000"}
#: How long the checkpoints must stay unchanged, read every STABLE_EVERY_S, before a failover is measured.
STABLE_READS = 3
STABLE_EVERY_S = 5.0
COPIERS = ("java-mm2", "mm2")


def groups_for(topic: str) -> dict[int, str]:
    return {lag: f"{topic}-lag-{lag}" for lag in LAGS}


def commit_lagging_groups(source: str, topic: str, records: int) -> dict[int, str]:
    """One group per lag, committed ``records - lag`` on partition 0 of ``topic``."""
    from tests.support.kafka import commit_group_offsets

    groups = groups_for(topic)
    for lag, group in groups.items():
        commit_group_offsets(source, group, {(topic, 0): records - lag})
    return groups


def checkpointed(target: str, alias: str, groups: Mapping[int, str]) -> dict[int, int | None]:
    """Each group's checkpointed position on B as our MirrorClient reads it (the same as Java's: see
    tests/kafka/test_java_interop.py)."""
    from mirror.client import mirror_client

    result: dict[int, int | None] = {}
    for lag, group in groups.items():
        translated = mirror_client.translate_offsets({"bootstrap.servers": target}, alias, group, 10)
        result[lag] = next((om.offset for om in translated.values()), None)
    return result


def wait_stable(read: Callable[[], dict[int, int | None]], timeout_s: float = 300.0) -> dict[int, int | None]:
    """The checkpoints once every group has one and :data:`STABLE_READS` reads in a row agree."""
    deadline = time.monotonic() + timeout_s
    seen: list[dict[int, int | None]] = []
    while time.monotonic() < deadline:
        now = read()
        seen = [*seen[-(STABLE_READS - 1):], now] if None not in now.values() else []
        if len(seen) == STABLE_READS and all(s == now for s in seen):
            return now
        time.sleep(STABLE_EVERY_S)
    raise SystemExit(f"checkpoints did not settle within {timeout_s:.0f}s: last {seen[-1:] or 'none'}")


def java_translation(target: str, alias: str, groups: Mapping[int, str], workdir: Path) -> dict[int, int | None]:
    """What Java's RemoteClusterUtils.translateOffsets gives each group on B."""
    from tests.support.java_mm2 import run_probe

    answer = run_probe({"bootstrap.servers": target}, workdir / f"probe-{alias}.properties", [alias],
                       [(alias, group) for group in groups.values()])
    translated = answer["translateOffsets"]
    return {lag: next(iter(translated.get(f"{alias}:{group}", {}).values()), None) for lag, group in groups.items()}


def exact_translation(source: str, target: str, alias: str, groups: Mapping[int, str]) -> dict[int, int | None]:
    """Each group's position on B from our exact offset map (the groups' committed offsets on A)."""
    from mirror.client.translation import OffsetTranslator

    with OffsetTranslator({"bootstrap.servers": target}, alias,
                          offset_syncs_config={"bootstrap.servers": source},
                          offset_syncs_topic="mm2-offset-syncs.B.internal") as translator:
        by_group = translator.groups_to_target(groups.values(), source_config={"bootstrap.servers": source})
    result: dict[int, int | None] = {}
    for lag, group in groups.items():
        positions = list(by_group.get(group, {}).values())
        result[lag] = positions[0].downstream if positions and positions[0].basis == "offset-map" else None
    return result


def run_copier(copier: str, source: str, records: int, workdir: Path) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    topic = unique(f"failover-{copier}")
    create_topic(source, topic, 1)
    preload(source, topic, records, VALUE_BYTES, 1)
    groups = commit_lagging_groups(source, topic, records)
    alias = f"A{unique('')[1:6]}"
    row: dict[str, Any] = {"copier": copier, "records": records, "topic": topic}
    with local_brokers(("bench-b",)) as (target,):
        began = time.monotonic()
        if copier == "java-mm2":
            process = java_copier.start(workdir, source, target, topic=topic, source_alias=alias, extra=FLOW)
            stop, alive = process.stop, lambda: process.proc.poll() is None
        else:
            repl = replication.start(workdir, source, target, topic=topic, source_alias=alias, extra=FLOW)
            stop, alive = repl.stop, repl.alive
        try:
            ends = EndOffsets(target, f"{alias}.{topic}", 1)
            try:
                done = wait_for_records(ends, records, max(300.0, records / 2000), alive=alive)
            finally:
                ends.close()
            row["copy_s"] = round(done.seconds, 2)
            row["startup_s"] = round(done.first_at - began, 2)
            settled = wait_stable(lambda: checkpointed(target, alias, groups))
            row["checkpoints_settled_after_copy_s"] = round(time.monotonic() - done.done_at, 1)
            java = java_translation(target, alias, groups, workdir)
            exact = exact_translation(source, target, alias, groups) if copier == "mm2" else {}
        finally:
            stop()
    committed = {lag: records - lag for lag in LAGS}
    row["replayed_checkpoints"] = {lag: None if java[lag] is None else committed[lag] - java[lag] for lag in LAGS}
    row["ours_read_same_checkpoints"] = settled == java
    if exact:
        row["replayed_offset_map"] = {lag: None if exact[lag] is None else committed[lag] - exact[lag] for lag in LAGS}
    return row


def table(rows: list[dict[str, Any]]) -> str:
    by = {row["copier"]: row for row in rows}
    java, ours = by.get("java-mm2", {}), by.get("mm2", {})

    def cell(row: Mapping[str, Any], key: str, lag: int) -> str:
        value = row.get(key, {}).get(lag)
        return "-" if value is None else f"{value:,}"

    lines = ["| consumer lag at failover | Java MM2: records replayed (checkpoints) | ours: by checkpoints | "
             "ours: by the exact offset map |", "|---|---|---|---|"]
    lines += [f"| {lag:,} | {cell(java, 'replayed_checkpoints', lag)} | {cell(ours, 'replayed_checkpoints', lag)} "
              f"| {cell(ours, 'replayed_offset_map', lag)} |" for lag in LAGS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.records <= max(LAGS):
        raise SystemExit(f"--records must be above the largest lag, {max(LAGS):,}")
    kafka_brokers.select("kafka")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-failover-java-") as tmp, local_brokers(("bench-a",)) as (source,):
        for copier in COPIERS:
            row = run_copier(copier, source, args.records, Path(tmp) / copier)
            print(json.dumps(row), flush=True)
            rows.append(row)
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
