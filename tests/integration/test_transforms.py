"""Transformations and predicates on MM2's connectors, on real brokers (issue 19, item 1).

The first tests run MirrorSourceTask through the real WorkerSourceTask (the harness) with the connector
config an ``A->B.transforms = ...`` flow gives it; the last one runs the ``connect-mirror-maker`` driver
from an mm2.properties, as an operator would. What they show: tombstones dropped by Filter +
RecordIsTombstone, the remote topic renamed by RegexRouter, headers added and removed, ``negate``; and
that the offsets committed, the offset syncs and the exact offset map stay right around dropped records
(a dropped record has no target offset: a run breaks there, nothing maps onto a record that is not there).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.client.models import OffsetSync
from mirror.client.offset_map import OffsetRun
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.integration.test_bulk_copy import CONNECTOR, task_config
from tests.support.kafka import consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = pytest.mark.integration

T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."


def drop_route_mark(source_alias: str, renamed_prefix: str) -> dict[str, str]:
    """Filter tombstones, rename ``<source>.<topic>`` to ``<renamed_prefix><topic>``, add and drop headers."""
    return {
        "transforms": "dropTombstones,route,mark,clean",
        "transforms.dropTombstones.type": T + "Filter",
        "transforms.dropTombstones.predicate": "isTombstone",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": source_alias + r"\.(.*)",
        "transforms.route.replacement": renamed_prefix + "$1",
        "transforms.mark.type": T + "InsertHeader",
        "transforms.mark.header": "via",
        "transforms.mark.value.literal": "mm2",
        "transforms.clean.type": T + "DropHeaders",
        "transforms.clean.headers": "internal",
        "predicates": "isTombstone",
        "predicates.isTombstone.type": P + "RecordIsTombstone",
    }


def source_records(cluster: Cluster, topic: str, n: int) -> list[bytes | None]:
    """``n`` records, every fifth one and the last a tombstone, each with two headers; returns the values."""
    values: list[bytes | None] = [None if i % 5 == 2 or i == n - 1 else b"v%d" % i for i in range(n)]
    produce(cluster.bootstrap, topic, [(b"k%d" % i, v) for i, v in enumerate(values)],
            headers=[("internal", b"secret"), ("keep", b"y")])
    return values


def read_decoded(bootstrap: str, topic: str, decode: type[OffsetRun] | type[OffsetSync], expect: int) -> list:
    wait_until(lambda: topic in topics(bootstrap), 30, f"{topic} created")
    return [decode.from_record(r.key, r.value) for r in consume_all(bootstrap, topic, expect=expect)]


def test_filter_router_and_headers_on_the_per_record_path_keep_offsets_and_maps_exact(
        cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("smt"), partitions=1)
    renamed = f"copied-{topic}"
    create_topic(cluster_b.bootstrap, renamed, partitions=1)  # a renamed topic is the operator's to create
    values = source_records(cluster_a, topic, 30)
    kept = [(i, v) for i, v in enumerate(values) if v is not None]
    config = task_config(cluster_a, cluster_b, topic, src, tgt, **drop_route_mark(src, "copied-"))
    store = MemoryOffsetStore()
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store) as run:
        assert not run.worker_task.bulk  # transformations need a record each: the per-record path
        wait_until(lambda: run.records_written() >= len(kept), 30, f"{len(kept)} records written")
        run.commit_now()
        assert run.records_polled() == 30
    copied = consume_all(cluster_b.bootstrap, renamed, expect=len(kept))
    assert [r.value for r in copied] == [v for _, v in kept]  # no tombstone, order kept
    assert all(r.headers == [("keep", b"y"), ("via", b"mm2")] for r in copied)
    assert consume_all(cluster_b.bootstrap, f"{src}.{topic}") == []  # the policy's name got nothing
    # The trailing tombstone was dropped, and is done: a restart resumes after it.
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 29}
    # Every offset-map run and every offset sync points at the same record on both sides.
    downstream_of = {i: d for d, (i, _) in enumerate(kept)}
    runs = read_decoded(cluster_b.bootstrap, f"mm2-offset-map.{src}.internal", OffsetRun, 1)
    mapped = [(r.upstream + k, r.downstream + k) for r in runs for k in range(r.count)]
    assert sorted(set(mapped)) == sorted(downstream_of.items())  # exactly the copied records, nothing else
    syncs = read_decoded(cluster_a.bootstrap, f"mm2-offset-syncs.{tgt}.internal", OffsetSync, 1)
    assert syncs and all(downstream_of[s.upstream_offset] == s.downstream_offset for s in syncs)


def test_negate_keeps_only_the_records_the_predicate_matches(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("negate"), partitions=1)
    produce(cluster_a.bootstrap, topic, [(None, b"plain-%d" % i) for i in range(5)])
    produce(cluster_a.bootstrap, topic, [(None, b"marked-%d" % i) for i in range(3)], headers=[("keep", b"1")])
    produce(cluster_a.bootstrap, topic, [(None, b"plain-last")])
    keys: Mapping[str, str] = {
        "transforms": "onlyMarked", "transforms.onlyMarked.type": T + "Filter",
        "transforms.onlyMarked.predicate": "marked", "transforms.onlyMarked.negate": "true",
        "predicates": "marked", "predicates.marked.type": P + "HasHeaderKey", "predicates.marked.name": "keep"}
    store = MemoryOffsetStore()
    with run_source_task(MirrorSourceTask, task_config(cluster_a, cluster_b, topic, src, tgt, **keys),
                         bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR, offset_store=store) as run:
        wait_until(lambda: run.records_polled() >= 9 and run.records_written() >= 3, 30, "9 polled, 3 written")
        run.commit_now()
    assert [r.value for r in consume_all(cluster_b.bootstrap, f"{src}.{topic}", expect=3)] == [
        b"marked-0", b"marked-1", b"marked-2"]
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 8}


@pytest.mark.slow
def test_a_flow_configured_in_mm2_properties_transforms_what_it_copies(cluster_a: Cluster, cluster_b: Cluster,
                                                                       tmp_path: Path) -> None:
    """``A->B.transforms = ...`` as MM2 users write it, through the connect-mirror-maker driver."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("flow-smt"), partitions=1)
    renamed = f"renamed-{topic}"
    create_topic(cluster_b.bootstrap, renamed, partitions=1)
    values = source_records(cluster_a, topic, 12)
    # The regex names this topic only: the flow's keys reach its three connectors (as in Java), and a
    # broader one would rename A.checkpoints.internal too.
    keys = {**drop_route_mark(a, "renamed-"), "transforms.route.regex": rf"{a}\.({topic})"}
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n"
    # A properties file takes backslash as an escape (Java's Properties.load): a regex's \ is written \\.
    body += "".join(f"{a}->{b}.{key} = {value.replace(chr(92), chr(92) * 2)}\n" for key, value in keys.items())
    path = tmp_path / "mm2.properties"
    path.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body), encoding="utf-8")
    expected = [v for v in values if v is not None]
    with MirrorMakerProcess(path) as node:
        node.wait_running(1)
        copied = wait_until(lambda: (c := consume_all(cluster_b.bootstrap, renamed, 5)) and len(c) >= len(expected)
                            and c, 60, f"{len(expected)} records in {renamed}", interval_s=0.5)
        assert [r.value for r in copied] == expected
        assert all(r.headers == [("keep", b"y"), ("via", b"mm2")] for r in copied)
        assert node.terminate() == 0
