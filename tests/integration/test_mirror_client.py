"""MirrorClient against a real broker: topology from heartbeat topic names, offsets from checkpoints.

The session broker is shared with other tests, so every alias carries a uuid fragment and assertions
are about *our* names only (another test may own a bare ``heartbeats`` topic, for instance).
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from mirror.cli.main import main
from mirror.client import Checkpoint, MirrorClient, OffsetAndMetadata, TopicPartition, translate_offsets
from tests.support.kafka import create_topic, produce, topics, wait_until

pytestmark = pytest.mark.integration


def alias(prefix: str) -> str:
    # No "." in aliases: it is the replication separator.
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def ensure_topic(bootstrap: str, name: str) -> None:
    """Create ``name`` unless some other test already did (``heartbeats`` is shared)."""
    client = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})
    futures = client.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
    try:
        futures[name].result(timeout=15)
    except Exception as exc:  # TOPIC_ALREADY_EXISTS is fine
        if "exist" not in str(exc).lower():
            raise
    wait_until(lambda: name in topics(bootstrap), 15, f"topic {name} visible")


@pytest.fixture
def client_config(cluster_a) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"bootstrap.servers": cluster_a.bootstrap}


def test_topology_from_heartbeat_topics(cluster_a, client_config: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    x, y, z, never = alias("x"), alias("y"), alias("z"), alias("never")
    ensure_topic(cluster_a.bootstrap, "heartbeats")
    for name in (
        f"{x}.heartbeats",
        f"{y}.{x}.heartbeats",
        f"{y}.{z}.heartbeats",
        f"{x}.orders",
        f"{x}.checkpoints.internal",
        f"{x}-heartbeats",
    ):
        create_topic(cluster_a.bootstrap, name)

    with MirrorClient(client_config) as client:
        heartbeats = client.heartbeat_topics()
        assert {"heartbeats", f"{x}.heartbeats", f"{y}.{x}.heartbeats", f"{y}.{z}.heartbeats"} <= heartbeats
        assert f"{x}.orders" not in heartbeats and f"{x}-heartbeats" not in heartbeats

        assert {x, y, z} <= client.upstream_clusters()
        assert never not in client.upstream_clusters()

        assert client.replication_hops(x) == 1  # x.heartbeats beats y.x.heartbeats
        assert client.replication_hops(y) == 1
        assert client.replication_hops(z) == 2  # only via y
        assert client.replication_hops(never) == -1

        assert f"{x}.checkpoints.internal" in client.checkpoint_topics()
        assert client.remote_topics(x) == {f"{x}.heartbeats", f"{x}.orders"}
        assert {f"{y}.{x}.heartbeats", f"{y}.{z}.heartbeats"} <= client.remote_topics(y)
        assert f"{x}.checkpoints.internal" not in client.remote_topics()


def test_remote_consumer_offsets_last_checkpoint_wins_and_malformed_records_are_skipped(
    cluster_a, client_config: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    source = alias("src")
    checkpoints = create_topic(
        cluster_a.bootstrap, f"{source}.checkpoints.internal", config={"cleanup.policy": "compact"}
    )
    orders, payments = TopicPartition(f"{source}.orders", 0), TopicPartition(f"{source}.payments", 3)
    records: list[tuple[bytes | None, bytes | None]] = []
    # Many records per produce batch: on Tansu ListOffsets "latest" would stop early here; EOF does not.
    for offset in range(50):
        checkpoint = Checkpoint("g1", orders, offset + 100, offset, "")
        records.append((checkpoint.key_bytes(), checkpoint.value_bytes()))
    other_group = Checkpoint("g2", orders, 7, 7, "")
    records.append((other_group.key_bytes(), other_group.value_bytes()))
    records.append((b"\x00\x05garbage", b"\x01"))  # truncated value
    bad_version = Checkpoint("g1", payments, 1, 999, "")
    records.append((bad_version.key_bytes(), b"\x00\x01" + bad_version.value_bytes()[2:]))  # version 1
    last_orders = Checkpoint("g1", orders, 500, 400, "meta-1")
    last_payments = Checkpoint("g1", payments, 80, 60, "")
    records += [
        (last_orders.key_bytes(), last_orders.value_bytes()),
        (last_payments.key_bytes(), last_payments.value_bytes()),
    ]
    produce(cluster_a.bootstrap, checkpoints, records, partition=0)

    with (
        caplog.at_level(logging.WARNING, logger="mirror.client.mirror_client"),
        MirrorClient(client_config) as client,
    ):
        offsets = client.remote_consumer_offsets("g1", source, timeout_s=30)
    assert offsets == {orders: OffsetAndMetadata(400, "meta-1"), payments: OffsetAndMetadata(60, "")}
    skipped = [r for r in caplog.records if "Could not deserialize" in r.getMessage()]
    assert len(skipped) == 2

    assert translate_offsets(client_config, source, "g2", timeout_s=30) == {orders: OffsetAndMetadata(7, "")}
    assert translate_offsets(client_config, source, "nobody", timeout_s=30) == {}


def test_empty_checkpoints_topic_gives_no_offsets(cluster_a, client_config: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    source = alias("empty")
    create_topic(cluster_a.bootstrap, f"{source}.checkpoints.internal")
    with MirrorClient(client_config) as client:
        assert client.remote_consumer_offsets("g1", source, timeout_s=30) == {}


def test_missing_checkpoints_topic_gives_no_offsets_and_is_not_created(
    cluster_a, client_config: dict[str, str]
) -> None:  # type: ignore[no-untyped-def]
    source = alias("missing")
    with MirrorClient(client_config) as client:
        assert client.remote_consumer_offsets("g1", source, timeout_s=10) == {}
    assert f"{source}.checkpoints.internal" not in topics(cluster_a.bootstrap)


def test_custom_separator_names_the_checkpoints_topic(cluster_a) -> None:  # type: ignore[no-untyped-def]
    source = alias("sep")
    topic = create_topic(cluster_a.bootstrap, f"{source}__checkpoints__internal")
    checkpoint = Checkpoint("g", TopicPartition(f"{source}__t", 0), 3, 2, "")
    produce(cluster_a.bootstrap, topic, [(checkpoint.key_bytes(), checkpoint.value_bytes())], partition=0)
    config = {"bootstrap.servers": cluster_a.bootstrap, "replication.policy.separator": "__"}
    assert translate_offsets(config, source, "g", timeout_s=30) == {(f"{source}__t", 0): (2, "")}


def test_cli_offsets_translate(cluster_a, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    source = alias("cli")
    topic = create_topic(cluster_a.bootstrap, f"{source}.checkpoints.internal")
    records = [Checkpoint("app", TopicPartition(f"{source}.orders", p), 10 * p, 5 * p, "") for p in (1, 0)]
    produce(cluster_a.bootstrap, topic, [(c.key_bytes(), c.value_bytes()) for c in records], partition=0)
    properties = tmp_path / "mm2.properties"
    # The source cluster is never contacted: only the target's checkpoints topic is read.
    properties.write_text(
        f"clusters = {source}, backup\n{source}.bootstrap.servers = 127.0.0.1:1\n"
        f"backup.bootstrap.servers = {cluster_a.bootstrap}\n{source}->backup.enabled = true\n"
    )
    args = [
        "offsets",
        "translate",
        str(properties),
        "--group",
        "app",
        "--source",
        source,
        "--target",
        "backup",
    ]

    assert main([*args, "--json"]) == 0  # a dry run: the source is unreachable, bounds from checkpoints
    plan = json.loads(capsys.readouterr().out)
    assert [(p["topic"], p["partition"], p["new_offset"], p["action"]) for p in plan["partitions"]] == [
        (f"{source}.orders", 0, 0, "commit"),
        (f"{source}.orders", 1, 5, "commit"),
    ]
    assert plan["applied"] is False and plan["active"] is False
    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["TOPIC", "PARTITION", "CURRENT", "NEW", "REPLAY<=", "ACTION"]
    assert table[1].split()[:4] == [f"{source}.orders", "0", "-", "0"]
    assert table[2].split()[:4] == [f"{source}.orders", "1", "-", "5"]

    assert main([*args[:-1], "nowhere"]) == 2
    assert "--target 'nowhere' is not one of the clusters" in capsys.readouterr().err
