"""Java's default placement of a keyed record: ``toPositive(murmur2(key)) % partitions``.

Why by hand: an exactly-once task writes its source offsets with its own transactional producer, whose
partitioner is librdkafka's default (not Java's); the offsets must land on the partition Java's
producer (and the offset store's own writer, ``murmur2_random``) would pick, so that compaction keeps
one record per key. The offsets store's writer uses librdkafka's ``murmur2_random``, which is this.
"""

from __future__ import annotations


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2`` (signed 32-bit result)."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4:i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail, rest = length & ~3, length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's producer (``BuiltInPartitioner.partitionForKey``) gives ``key``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
