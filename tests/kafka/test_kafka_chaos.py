"""The chaos tier's broker-restart case on Apache Kafka, with the task producers' idempotence ON (the default).

On Tansu the same test (tests/integration/test_chaos.py::test_target_broker_restart_with_persistent_storage)
turns idempotence off: Tansu answers a retried idempotent batch after a restart with
DUPLICATE_SEQUENCE_NUMBER although the batch is not in its log, so the records were lost. Kafka keeps
the producer state with the log, so here the default runs: the target broker is killed with -9 under
load, stays down 5 s, restarts on the same ports and data, and nothing is lost, reordered or (beyond
the restarted tasks' replay) duplicated.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.support.chaos_flow import ChaosFlow, duplicate_budget
from tests.support.apache_kafka import KafkaBroker

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.chaos, pytest.mark.slow]

DOWN_S = 5.0
#: the driver's session.timeout.ms in these tests (mm2_properties), in seconds
SESSION_S = 6.0


@pytest.fixture
def flows() -> Iterator[list[ChaosFlow]]:
    made: list[ChaosFlow] = []
    yield made
    for flow in made:
        flow.stop()


def test_target_broker_killed_and_restarted_with_idempotent_producers(
        kafka_a: KafkaBroker, fresh_kafka: Callable[..., KafkaBroker], tmp_path: Path,
        flows: list[ChaosFlow]) -> None:
    target = fresh_kafka("chaos-target")
    flow = ChaosFlow(tmp_path, kafka_a.bootstrap_servers, target.bootstrap_servers, nodes=1,
                     extra="{target}.producer.enable.idempotence = true\n")
    flows.append(flow)
    flow.start()
    time.sleep(2)  # deliberate: a steady state before the fault
    target.kill()  # kill -9 mid-stream: in-flight idempotent batches are retried after the restart
    time.sleep(DOWN_S)  # deliberate: the broker stays down for a while
    target.start()  # same ports, same log directory: the log and the producer states are recovered
    flow.lifted()
    flow.wait_tasks()
    report = flow.finish(f"target broker killed -9 and restarted (down {DOWN_S:.0f} s), idempotence on")
    assert report.lost == 0, f"LOST RECORDS\n{report.table()}"
    assert report.out_of_order == 0, report.table()
    # The workers' group lives on the target: down for longer than the session (6 s; Kafka's restart after
    # a kill takes ~7 s besides the 5 s down, Tansu's is instant), the node stops its tasks, and what they
    # sent since their last commit (up to the session's worth of load) is sent again once they restart.
    budget = duplicate_budget(events=1, slack_s=SESSION_S + 2.0)
    assert report.duplicated <= budget, f"more than {budget} duplicates\n{report.table()}"
