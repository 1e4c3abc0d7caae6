"""Records replayed on failover vs consumer lag: MM2's offset syncs against the exact offset map.

The shape of KIP-1292's table. One partition of ``--records`` records is replicated; the decisions
are the product's own code, not a model of it: MM2's syncs come from :class:`OffsetSyncWriter`
(``offset.lag.max``) and are translated by :class:`OffsetSyncStore` (64 syncs, exponentially spaced),
the map's runs from :class:`OffsetMapRuns` and :class:`PartitionMap`. A consumer group ``lag`` records
behind the end commits there; after a failover it resumes at the translated offset and re-reads
``true position - translated position`` records. Both columns are measured in the same run.

Then the size of the map per million records: one record per run (the compacted size), for a dense
topic and for transactional topics (each commit marker breaks a run), next to the offset syncs MM2
writes for the same records. Kafka's per-record overhead in a v2 batch (about 10 bytes for records
this small) comes on top of the key and value bytes shown.

    python bench/failover_replay.py [--records 1000000] [--offset-lag-max 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mirror.checkpoint.offset_sync_store import OffsetSyncStore
from mirror.client.models import OffsetSync, TopicPartition
from mirror.client.offset_map import OffsetRun, PartitionMap
from mirror.source.offset_map_writer import OffsetMapRuns
from mirror.source.offset_sync_writer import OffsetSyncWriter

TP = TopicPartition("orders", 0)
LAGS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
BATCH = 500  # records acknowledged per commit_records call, as the source task sees them


def replicate(records: int, offset_lag_max: int, txn_size: int = 0) -> tuple[OffsetSyncStore, PartitionMap,
                                                                            list[int], int]:
    """Replicate ``records`` records (a commit marker after every ``txn_size`` when > 0)."""
    upstream: list[int] = []
    offset = 0
    for i in range(records):
        upstream.append(offset)
        offset += 1
        if txn_size and (i + 1) % txn_size == 0:
            offset += 1  # the commit marker
    writer = OffsetSyncWriter(offset_lag_max)
    store = OffsetSyncStore()
    store.start_initial_load(False)
    store.finish_initial_load()
    runs = OffsetMapRuns()
    for start in range(0, records, BATCH):
        ups = upstream[start:start + BATCH]
        downs = list(range(start, start + len(ups)))
        writer.update_run(TP, ups, downs, lambda: [store.handle(s) for s in writer.take_pending()])
        runs.add_offsets(TP, ups, downs)
    writer.promote_delayed()  # the task's commit: the idle partition's last sync (KAFKA-15906)
    for sync in writer.take_pending():
        store.handle(sync)
    partition = PartitionMap()
    map_records = 0
    for _, run in runs.due():
        partition.add(run.upstream, run.downstream, run.count)
        map_records += 1
    return store, partition, upstream, map_records


def replay_table(records: int, offset_lag_max: int) -> list[tuple[int, float, int, int, int]]:
    """Per lag: MM2's mean and max replay, ours max, over groups at ``lag .. lag + offset.lag.max - 1``
    records behind the end (where a group sits relative to the syncs is luck), and how many MM2 could
    not translate at all."""
    store, partition, upstream, _ = replicate(records, offset_lag_max)
    rows = []
    for lag in LAGS:
        if lag >= records:
            break
        mm2_replays: list[int] = []
        exact_replays: list[int] = []
        untranslatable = 0
        for behind in range(lag, min(records, lag + max(offset_lag_max, 1))):
            committed = upstream[records - behind] if behind > 0 else upstream[-1] + 1  # the next record
            true_position = records - behind
            mm2 = store.translate_downstream("g", TP, committed)
            exact = partition.downstream(committed)
            if mm2 is None or mm2 < 0:
                untranslatable += 1
            else:
                mm2_replays.append(true_position - mm2)
            exact_replays.append(true_position - (exact if exact is not None else 0))
        rows.append((lag, sum(mm2_replays) / max(len(mm2_replays), 1), max(mm2_replays, default=0),
                     max(exact_replays), untranslatable))
    return rows


def size_rows(records: int, offset_lag_max: int) -> list[tuple[str, int, int, int]]:
    rows = []
    for label, txn in (("dense", 0), ("transactions of 1000", 1000), ("transactions of 100", 100),
                       ("transactions of 10", 10)):
        _, partition, _, map_records = replicate(records, offset_lag_max, txn)
        map_bytes = sum(len(OffsetRun(TP, u, d, n).key_bytes()) + len(OffsetRun(TP, u, d, n).value_bytes())
                        for u, d, n in partition.runs)
        writer = OffsetSyncWriter(offset_lag_max)
        fired = 0
        offset = 0
        for i in range(records):  # every fired sync is one record in the offset-syncs topic
            if writer.update(TP, offset, i):
                writer.take_pending()
                fired += 1
            offset += 1 + (1 if txn and (i + 1) % txn == 0 else 0)
        sync = OffsetSync(TP, 0, 0)
        rows.append((label, map_records, map_bytes, fired * (len(sync.key_bytes()) + len(sync.value_bytes()))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--offset-lag-max", type=int, default=100)
    args = parser.parse_args()
    print(f"records replayed on failover vs consumer lag ({args.records:,} records, "
          f"offset.lag.max={args.offset_lag_max})")
    print(f"{'consumer lag':>14}  {'MM2 mean':>10}  {'MM2 max':>9}  {'exact max':>9}  {'MM2 untranslatable':>18}")
    for lag, mean, worst, exact, untranslatable in replay_table(args.records, args.offset_lag_max):
        print(f"{lag:>14,}  {mean:>10,.0f}  {worst:>9,}  {exact:>9,}  {untranslatable:>18,}")
    print()
    print(f"offset map size per {args.records:,} records (compacted: one record per run; key+value bytes)")
    print(f"{'source partition':>22}  {'runs':>8}  {'map bytes':>10}  {'MM2 offset-sync bytes':>22}")
    for label, runs, map_bytes, sync_bytes in size_rows(args.records, args.offset_lag_max):
        print(f"{label:>22}  {runs:>8,}  {map_bytes:>10,}  {sync_bytes:>22,}")


if __name__ == "__main__":
    main()
