"""Java's order of the known source topics (mirror/source/describe_topics_order.py), checked against a JVM.

The fixed cases are what OpenJDK 17 returns for MirrorSourceConnector's chain (a ``HashMap`` of the listed
topics, ``Collectors.toSet()``, ``describeTopics``' futures map and ``allTopicNames()``' copy); the first is
the order a Java MirrorMaker 4.3.1 dealt its tasks in, read from its log in a mixed-fleet run (task 0:
``heartbeats-0`` and the topic's partition 3, tasks 1 to 3: partitions 0 to 2). Where ``java`` is on the
path the same chain runs on it for random topic sets.
"""

from __future__ import annotations

import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from mirror.source.describe_topics_order import describe_topics_order, string_hash, table_capacity
from mirror.source.topic_sync import assign_round_robin

CHAIN_JAVA = """
import java.util.*;
import java.util.stream.*;
import java.io.*;

public class Chain {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split("\\\\|", -1);
            Set<String> chosen = new HashSet<>(Arrays.asList(parts[1].split(" ")));
            Map<String, String> listing = new HashMap<>();
            for (String topic : parts[0].split(" ")) listing.put(topic, topic);
            Set<String> topics = listing.keySet().stream().filter(chosen::contains).collect(Collectors.toSet());
            Map<String, String> futures = new HashMap<>(topics.size());
            for (String topic : topics) futures.put(topic, topic);
            Map<String, String> descriptions = new HashMap<>(futures.size());
            for (Map.Entry<String, String> e : futures.entrySet()) descriptions.put(e.getKey(), e.getValue());
            System.out.println(String.join(" ", descriptions.keySet()));
        }
    }
}
"""


@pytest.mark.parametrize(("listed", "replicated", "java"), [
    (["fleet-eos-029f7328", "heartbeats", "mm2-configs.Bec58533b.internal", "mm2-offset-syncs.Bec58533b.internal",
      "mm2-offsets.Bec58533b.internal", "mm2-status.Bec58533b.internal"], ["fleet-eos-029f7328", "heartbeats"],
     ["heartbeats", "fleet-eos-029f7328"]),
    ([f"orders-{i}" for i in range(12)] + ["heartbeats"], [f"orders-{i}" for i in range(12)] + ["heartbeats"],
     ["orders-8", "heartbeats", "orders-9", "orders-10", "orders-2", "orders-3", "orders-0", "orders-1", "orders-6",
      "orders-7", "orders-11", "orders-4", "orders-5"]),
    ([f"t{i}" for i in range(20)], [f"t{i}" for i in range(0, 20, 2)],
     ["t4", "t6", "t10", "t8", "t12", "t14", "t16", "t18", "t0", "t2"]),
    (["Aa", "BB", "x", "y"], ["Aa", "BB", "x"], ["Aa", "BB", "x"]),  # "Aa" and "BB": one String.hashCode
])
def test_the_order_is_the_one_a_jvm_gives(listed: list[str], replicated: list[str], java: list[str]) -> None:
    assert describe_topics_order(listed, replicated) == java


def test_tasks_are_dealt_as_java_dealt_them_in_a_mixed_fleet() -> None:
    order = describe_topics_order(["fleet-eos-029f7328", "heartbeats", "mm2-offset-syncs.Bec58533b.internal"],
                                  ["fleet-eos-029f7328", "heartbeats"])
    partitions = [(t, p) for t in order for p in range(1 if t == "heartbeats" else 4)]
    assert assign_round_robin(partitions, 4) == [[("heartbeats", 0), ("fleet-eos-029f7328", 3)],
                                                 [("fleet-eos-029f7328", 0)], [("fleet-eos-029f7328", 1)],
                                                 [("fleet-eos-029f7328", 2)]]


def test_string_hash_is_javas_over_utf16_code_units() -> None:
    # "x".hashCode() in jshell for each: 2112, 1932832503, 289793213 and 1866116 (a surrogate pair)
    signed = [h - (1 << 32) if h >= 1 << 31 else h for h in map(string_hash, ["Aa", "heartbeats", "héllo-ü", "a😀"])]
    assert signed == [2112, 1932832503, 289793213, 1866116]


def test_table_capacity_grows_past_three_quarters_full() -> None:
    assert [table_capacity(n, n) for n in (1, 2, 3, 4, 6, 7, 12, 13)] == [2, 4, 4, 8, 8, 16, 16, 32]
    assert [table_capacity(n) for n in (1, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]


@pytest.mark.slow  # a JVM compiles and runs the chain: seconds alone, a minute beside the Kafka tier
@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JVM (java on the path)")
def test_random_topic_sets_match_a_jvm(tmp_path: Path) -> None:
    source = tmp_path / "Chain.java"
    source.write_text(CHAIN_JAVA, encoding="utf-8")
    rng = random.Random(20)
    alphabet = string.ascii_letters + string.digits + "._-"
    cases = []
    for _ in range(500):
        listed = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
                         for _ in range(rng.randint(1, 80))})
        cases.append((listed, [t for t in listed if rng.random() < 0.6] or listed[:1]))
    lines = "".join(f"{' '.join(listed)}|{' '.join(replicated)}\n" for listed, replicated in cases)
    run = subprocess.run(["java", str(source)], input=lines, capture_output=True, text=True, timeout=300, check=True)
    java = [line.split(" ") for line in run.stdout.splitlines()]
    assert [describe_topics_order(listed, replicated) for listed, replicated in cases] == java
