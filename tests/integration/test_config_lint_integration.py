"""Issue 26 on real brokers: a real ``connect-mirror-maker`` names the file's findings and acts on them.

A file with warnings (a typo, a client key librdkafka lacks) starts, logs each finding once with its
``file:line`` and replicates; a file that writes exactly-once where MM2 does not read it exits 2 with
one ``error:`` line and creates nothing on the target.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = [pytest.mark.integration]


def _write(tmp_path: Path, text: str) -> tuple[Path, list[str]]:
    path = tmp_path / "mm2.properties"
    path.write_text(text, encoding="utf-8")
    return path, text.splitlines()


def test_a_file_with_warnings_starts_logs_each_finding_once_and_replicates(cluster_a: Cluster, cluster_b: Cluster,
                                                                            tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("lint"))
    typo = f"{a}->{b}.sync.group.offset.enabled = true"
    body = (f"{a}->{b}.enabled = true\n{a}->{b}.topics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n"
            f"{typo}\n{b}.producer.interceptor.classes = com.example.Audit\n")
    path, lines = _write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(10)])
    with MirrorMakerProcess(path, log=tmp_path / "node.log") as node:
        node.wait_running(1)
        wait_until(lambda: len(consume_all(cluster_b.bootstrap, f"{a}.{topic}", timeout_s=2)) == 10, 60,
                   "10 records replicated")
        log = node.log_text()
    line = lines.index(typo) + 1
    assert log.count(f"{path}:{line}: {typo}: unknown key, not applied; did you mean "
                     f"{a}->{b}.sync.group.offsets.enabled?") == 1, log
    interceptor = lines.index(f"{b}.producer.interceptor.classes = com.example.Audit") + 1
    assert log.count(f"{b}.producer.interceptor.classes (line {interceptor})") == 1, log


def test_exactly_once_at_the_top_level_refuses_the_start_before_anything_is_created(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    body = f"{a}->{b}.enabled = true\n{b}->{a}.emit.heartbeats.enabled = false\nexactly.once.source.support = enabled\n"
    path, lines = _write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(path, log=tmp_path / "node.log") as node:
        assert node.proc is not None
        assert node.proc.wait(60) == 2, node.tail()
        log = node.log_text()
    line = lines.index("exactly.once.source.support = enabled") + 1
    assert log.strip().splitlines() == [
        f"error: {path}:{line}: exactly.once.source.support = enabled at the top level is not applied (exactly-once "
        f"would silently be off): write {b}.exactly.once.source.support = enabled: MM2 reads worker keys per target "
        f"cluster"], log
    assert not any(t.endswith(f".{a}.internal") for t in topics(cluster_b.bootstrap))
