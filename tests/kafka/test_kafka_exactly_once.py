"""Exactly-once after ``kill -9`` of our driver, judged on Apache Kafka by a plain ``read_committed`` consumer.

The Tansu test (tests/integration/test_exactly_once.py) reads record batches by hand because Tansu's
read_committed delivers aborted records; here Kafka's own isolation is trusted, and the aborted records
the kill left on the target are shown to exist (a read_uncommitted consumer sees more records).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import tests.integration.test_exactly_once_generations as generations
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.flows import read_committed, read_uncommitted, write_mm2
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import create_topic, produce, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

TOTAL = 30_000


def _paced(bootstrap: str, topic: str, first: int, last: int, chunks: int = 30) -> None:
    step = (last - first) // chunks
    for start in range(first, last, step):
        produce(bootstrap, topic, [(None, f"v{i}".encode()) for i in range(start, min(last, start + step))])
        time.sleep(0.1)


def _committed_count(bootstrap: str, topic: str) -> int:
    return len(read_committed(bootstrap, topic)) if topic in topics(bootstrap) else 0


def _open_records(bootstrap: str, topic: str) -> int:
    """Records on the target that a read_committed consumer does not see yet (none were aborted so far)."""
    return len(read_uncommitted(bootstrap, topic)) - _committed_count(bootstrap, topic)


def test_kill_9_inside_a_transaction_loses_and_duplicates_nothing_for_a_read_committed_consumer(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(kafka_a.bootstrap_servers, unique("eos"), 2)
    remote = f"{a}.{topic}"
    produce(kafka_a.bootstrap_servers, topic, [(None, f"v{i}".encode()) for i in range(TOTAL // 2)])
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\n"
            f"{b}.exactly.once.source.support = enabled\n{a}.consumer.isolation.level = read_committed\n"
            f"{a}->{b}.exactly.once.support = required\n"
            f"{a}->{b}.transaction.boundary = interval\n{a}->{b}.transaction.boundary.interval.ms = 10000\n")
    props = write_mm2(tmp_path / "mm2.properties", {a: kafka_a, b: kafka_b}, body)
    with MirrorMakerProcess(props, log=tmp_path / "first.log") as node:
        node.wait_running(2)
        wait_until(lambda: _committed_count(kafka_b.bootstrap_servers, remote) >= 2_000, 90,
                   "the first records copied in committed transactions", interval_s=0.5)
        producing = threading.Thread(target=_paced, args=(kafka_a.bootstrap_servers, topic, TOTAL // 2, TOTAL))
        producing.start()
        # The kill lands inside a transaction that holds records: some are on the target and not committed
        # (a 10 s transaction, so the one seen open is still open a moment later; a fixed sleep once hit the
        # gap between a commit and the second half's first records on a loaded machine)
        wait_until(lambda: _open_records(kafka_b.bootstrap_servers, remote) > 0, 60,
                   "records of an open transaction on the target", interval_s=0.2)
        before = _committed_count(kafka_b.bootstrap_servers, remote)
        node.kill()  # SIGKILL inside an open transaction
        producing.join()
        assert "runs exactly-once" in node.log_text()
    assert before < TOTAL, "the kill came after everything was copied: it tested nothing"
    with MirrorMakerProcess(props, log=tmp_path / "second.log") as node:
        node.wait_running(2)
        wait_until(lambda: _committed_count(kafka_b.bootstrap_servers, remote) >= TOTAL, 120,
                   f"{TOTAL} committed records on the target after the restart", interval_s=1)
        assert node.terminate() == 0
    values = Counter(r.value() for r in read_committed(kafka_b.bootstrap_servers, remote))
    expected = {f"v{i}".encode() for i in range(TOTAL)}
    lost = expected - set(values)
    duplicated = {v: n for v, n in values.items() if n > 1}
    assert not lost, f"{len(lost)} records lost, e.g. {sorted(lost)[:5]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated.items())[:5]}"
    assert set(values) == expected
    everything = read_uncommitted(kafka_b.bootstrap_servers, remote)
    print(f"\nEOS kill -9 on Kafka: {before} committed before the kill; {len(everything) - TOTAL} records "
          "of aborted transactions on the target, invisible to read_committed")
    assert len(everything) > TOTAL, "the kill hit no open transaction with records: the abort was not exercised"


@pytest.mark.parametrize("internal_rest", [True, False], ids=["internal-rest", "no-internal-rest"])
def test_changing_tasks_max_fences_the_old_generation_on_kafka(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                               tmp_path: Path, internal_rest: bool) -> None:
    """tests/integration/test_exactly_once_generations.py on Apache Kafka 4.4: tasks.max 3 -> 1 while
    records flow, the old generation fenced before the new one starts, every record committed once.
    Kafka's read_committed hides a transaction the fence aborted, its offsets included, so unlike on
    Tansu no record may be missing at all."""
    generations.check_generations(kafka_a.bootstrap_servers, kafka_b.bootstrap_servers, tmp_path, internal_rest,
                                  aborted_offsets_applied=False)
