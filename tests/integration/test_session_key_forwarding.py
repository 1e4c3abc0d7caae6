"""A follower's forwarded task configs after the leader rotated the session key (KIP-507).

Two ``connect-distributed`` workers share one group on cluster A (the target); two
MirrorSourceConnectors replicate from cluster B, so the assignor puts one connector on each worker.
The connector on the follower computes task configs, but only the leader may write them: the follower
POSTs them to the leader's internal endpoint, signed with the session key it read from the config
topic. The leader writes a new key every ``inter.worker.key.ttl.ms``. The follower must pick the new
key up although no other config record arrives (the bench's two-node MM2 mode stalled forever on this:
a follower whose view of the config topic predated the key kept retrying without it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.test_distributed_workers import Member
from tests.support.kafka import consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TTL_MS = 3000
SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
ROTATED = "Writing a new session key (the previous one expired)"


class KeyedMember(Member):
    """A group member whose leader rotates the session key every ``TTL_MS``."""

    def __init__(self, tmp_path: Path, bootstrap: str, group: str, index: int) -> None:
        super().__init__(tmp_path, bootstrap, group, index)
        self.props["inter.worker.key.ttl.ms"] = str(TTL_MS)
        self.path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))


@pytest.fixture
def pair(tmp_path: Path, cluster_a: Cluster) -> Iterator[list[KeyedMember]]:
    group = unique("sk")
    workers = [KeyedMember(tmp_path, cluster_a.bootstrap, group, i) for i in range(2)]
    yield workers
    for worker in workers:
        worker.close()


def source_config(alias: str, source: str, target: str, topics: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE, "tasks.max": "1", "topics": topics,
        "source.cluster.alias": alias, "target.cluster.alias": "T",
        "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
        "refresh.topics.interval.seconds": "1", "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1", "sync.topic.acls.enabled": "false",  # docs/tansu.md
        "emit.heartbeats.enabled": "false", "emit.checkpoints.enabled": "false",
    }


def count(bootstrap: str, topic: str) -> int:
    """Records in ``topic``, 0 while the replication has not created it yet."""
    return len(consume_all(bootstrap, topic)) if topic in topics(bootstrap) else 0


def test_follower_forwards_task_configs_after_key_rotation(pair: list[KeyedMember], cluster_a: Cluster,
                                                           cluster_b: Cluster) -> None:
    for worker in pair:
        worker.launch()
    for worker in pair:
        worker.wait_ready()
    prefix = unique("sk")
    aliases = {f"c{i}": f"S{unique('')[1:6]}" for i in range(2)}
    for name, alias in aliases.items():
        topic = create_topic(cluster_b.bootstrap, f"{prefix}-{name}-0")
        produce(cluster_b.bootstrap, topic, 2)
        response = pair[0].rest("PUT", f"/connectors/{name}/config",
                                json=source_config(alias, cluster_b.bootstrap, cluster_a.bootstrap,
                                                   f"{prefix}-{name}-.*"))
        assert response.status_code == 201, response.text  # a new connector: created

    def owners() -> dict[str, str] | None:
        found = {}
        for name in aliases:
            status = pair[0].rest("GET", f"/connectors/{name}/status")
            body = status.json() if status.status_code == 200 else {}
            tasks = body.get("tasks", [])
            if body.get("connector", {}).get("state") != "RUNNING" or [t["state"] for t in tasks] != ["RUNNING"]:
                return None
            found[name] = body["connector"]["worker_id"]
        return found if set(found.values()) == {w.worker_id for w in pair} else None

    placed = wait_until(owners, 60, "one running connector (and its task) on each worker", interval_s=0.5)
    assert placed is not None
    for name, alias in aliases.items():
        first = f"{alias}.{prefix}-{name}-0"
        wait_until(lambda t=first: count(cluster_a.bootstrap, t) == 2, 30, f"{first} replicated")  # type: ignore[misc]
    leaders = wait_until(lambda: [w for w in pair if w.is_leader()], 30, "a leader")
    leader = leaders[0]
    follower = next(w for w in pair if w is not leader)
    name = next(n for n, w in placed.items() if w == follower.worker_id)
    # From here on the only config records are the leader's key rotations: wait for one, so that the
    # key the follower last saw alongside other config records is stale.
    rotations = leader.log().count(ROTATED)
    wait_until(lambda: leader.log().count(ROTATED) > rotations, 30, "a session key rotation")

    # A new topic of the follower's connector: new task configs, which only the leader may write.
    topic = create_topic(cluster_b.bootstrap, f"{prefix}-{name}-1")
    produce(cluster_b.bootstrap, topic, 3)
    remote = f"{aliases[name]}.{topic}"
    wait_until(lambda: count(cluster_a.bootstrap, remote) == 3, 30,
               f"the follower's new topic replicated ({remote})")
    assert "sent 1 task config(s) to the leader" in follower.log()
    assert "task config(s) sent by a follower" in leader.log()
