"""``connect-distributed`` as a real process against a real broker, driven through its REST API.

Each test runs the worker as a subprocess (``python -m connect_runtime.cli.connect_distributed``) with
its own group and internal topics on cluster A, and drives SequenceSourceConnector through REST. Task
``n`` writes ``{"task": n, "seq": s}`` for s = 0, 1, 2, ...: reading the target topic tells what was lost
(a missing seq) or duplicated (a repeated seq), and the offsets topic what was committed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration

CONNECTOR = "seq"


class WorkerProcess:
    """One ``connect-distributed`` subprocess; its log is kept in ``log_path`` for failures."""

    def __init__(self, tmp_path: Path, bootstrap: str, group: str, **overrides: str) -> None:
        self.props = {
            "bootstrap.servers": bootstrap, "group.id": group,
            "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "config.storage.replication.factor": "1", "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1", "offset.storage.partitions": "5",
            "offset.flush.interval.ms": "1000", "listeners": "http://127.0.0.1:0",
            # Group membership through the broker: short sessions (a JoinGroup on Tansu waits half the
            # session timeout) and a short hold of a departed worker's work (a restarted worker gets a
            # new worker id, so its old self's work is only reassigned after this delay).
            "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
            "scheduled.rebalance.max.delay.ms": "3000",
            # The tests drive the REST API without credentials (test_rest_security.py tests the default).
            "rest.mutations.allow.unauthenticated": "true", **overrides,
        }
        self.path = tmp_path / f"{group}.properties"
        self.path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        self.tmp_path = tmp_path
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = tmp_path / "worker-0.log"
        self.url = ""
        self.starts = 0

    def start(self) -> WorkerProcess:
        self.starts += 1
        self.log_path = self.tmp_path / f"worker-{self.starts}.log"
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "connect_runtime.cli.connect_distributed", str(self.path)],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        self.url = wait_until(self._listening_url, 60, f"REST URL in {self.log_path}")
        wait_until(lambda: httpx.get(f"{self.url}/health", timeout=5).status_code == 200, 90, "healthy worker",
                   retry_on=(httpx.TransportError,))  # the listener may not accept connections yet
        return self

    def _listening_url(self) -> str | None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"worker exited with {self.process.returncode}: {self.log()}")
        for line in self.log().splitlines():
            if "REST server listening on http://" in line:
                return line.split("listening on ", 1)[1].split()[0].rstrip(",")
        return None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def terminate(self, timeout_s: float = 30.0) -> tuple[int, float]:
        """SIGTERM; (exit code, seconds it took)."""
        assert self.process is not None
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout_s)
        return code, time.monotonic() - began

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    # -- REST ---------------------------------------------------------------------------------------
    def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}{path}", timeout=60, **kwargs)

    def status(self) -> dict[str, Any]:
        response = self.rest("GET", f"/connectors/{CONNECTOR}/status")
        return response.json() if response.status_code == 200 else {}

    def states(self) -> tuple[str | None, list[str]]:
        status = self.status()
        return status.get("connector", {}).get("state"), [t["state"] for t in status.get("tasks", [])]

    def offsets(self) -> dict[int, int]:
        """task -> last committed seq; none while the connector is not known yet (404) or the group
        rebalances (409), the two answers Connect gives before it can list offsets."""
        response = self.rest("GET", f"/connectors/{CONNECTOR}/offsets")
        if response.status_code in (404, 409):
            return {}
        assert response.status_code == 200, response.text
        return {o["partition"]["task"]: o["offset"]["seq"] for o in response.json()["offsets"]}


@pytest.fixture
def worker_factory(tmp_path: Path, cluster_a: Cluster) -> Iterator[Any]:
    workers: list[WorkerProcess] = []

    def make(**overrides: str) -> WorkerProcess:
        worker = WorkerProcess(tmp_path, cluster_a.bootstrap, unique("cd"), **overrides)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.close()


def sequence_config(topic: str, tasks: int, **extra: str) -> dict[str, str]:
    return {"connector.class": "SequenceSourceConnector", "tasks.max": str(tasks), "topic": topic, **extra}


def records_by_task(bootstrap: str, topic: str) -> dict[int, Counter[int]]:
    """task -> Counter of seq numbers found in ``topic``."""
    seen: dict[int, Counter[int]] = {}
    for record in consume_all(bootstrap, topic, timeout_s=120):
        value = json.loads(record.value or b"{}")
        seen.setdefault(value["task"], Counter())[value["seq"]] += 1
    return seen


def committed_offsets(bootstrap: str, offsets_topic: str) -> dict[int, int]:
    """The last committed seq per task, read from the offsets topic itself (latest record per key)."""
    latest: dict[bytes, bytes | None] = {}
    for record in consume_all(bootstrap, offsets_topic, timeout_s=60):
        assert record.key is not None
        latest[record.key] = record.value
    out = {}
    for key, value in latest.items():
        connector, partition = json.loads(key)
        if connector == CONNECTOR and value is not None:
            out[partition["task"]] = json.loads(value)["seq"]
    return out


def offsets_history(bootstrap: str, offsets_topic: str) -> str:
    """Every record of the connector's offsets in log order (partition/offset, time, key, value): what
    a failed assertion on where a task resumed must show."""
    lines = []
    for record in consume_all(bootstrap, offsets_topic, timeout_s=60):
        if record.key is not None and json.loads(record.key)[0] == CONNECTOR:
            lines.append(f"{record.partition}/{record.offset} {record.timestamp} {record.key!r} {record.value!r}")
    return "\n".join(lines)


def log_excerpt(log: str, *needles: str) -> str:
    """The worker log's lines holding any of ``needles``."""
    return "\n".join(line for line in log.splitlines() if any(n in line for n in needles))


def wait_for_records(bootstrap: str, topic: str, count: int, timeout_s: float = 30.0) -> None:
    """Wait until ``topic`` holds at least ``count`` records.

    Reading "to the end" needs a partition-EOF event, and a consumer keeps getting data (no EOF) while
    a task writes continuously, so a topic that is still being written is only read up to a count.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("cd-reader"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen = 0
    deadline = time.monotonic() + timeout_s
    try:
        while seen < count:
            assert time.monotonic() < deadline, f"only {seen} of {count} records arrived in {topic}"
            seen += sum(1 for m in consumer.consume(1000, 0.5) if m.error() is None)
    finally:
        consumer.close()


def wait_for_flow_to_stop(bootstrap: str, topic: str) -> int:
    """The record count once two reads a second apart agree (in-flight records have landed)."""
    last = [-1]

    def settled() -> int | None:
        count = len(consume_all(bootstrap, topic))
        previous, last[0] = last[0], count
        return count if count == previous else None

    # The interval is deliberate time passing, not synchronisation: "stopped" means "no change over a
    # second", so consecutive reads are a second apart.
    return wait_until(settled, 30, "record flow to stop", interval_s=1)


@pytest.mark.slow
def test_kill_9_and_restart_loses_nothing_and_duplicates_only_uncommitted(
        worker_factory: Any, cluster_a: Cluster) -> None:
    per_task = 50_000
    topic = create_topic(cluster_a.bootstrap, unique("cd-seq"), partitions=2)
    worker = worker_factory().start()
    created = worker.rest("POST", "/connectors", json={
        "name": CONNECTOR, "config": sequence_config(topic, 2, **{"max.records": str(per_task),
                                                                   "records.per.second": "5000"})})
    assert created.status_code == 201, created.text
    wait_until(lambda: sum(worker.offsets().values()) >= 20_000, 120, "20,000 records committed")
    worker.kill()

    at_kill = records_by_task(cluster_a.bootstrap, topic)
    committed = committed_offsets(cluster_a.bootstrap, worker.props["offset.storage.topic"])
    assert set(committed) == {0, 1}
    for task in (0, 1):
        # Nothing committed may be missing: committed means acknowledged by the broker.
        assert all(at_kill[task][s] >= 1 for s in range(committed[task] + 1))

    worker.start()
    wait_until(lambda: worker.offsets() == {0: per_task - 1, 1: per_task - 1}, 240, "all records committed")
    final = records_by_task(cluster_a.bootstrap, topic)
    for task in (0, 1):
        missing = [s for s in range(per_task) if final[task][s] == 0]
        assert missing == [], f"task {task} lost {len(missing)} records, first {missing[:5]}"
        duplicates = sum(final[task].values()) - per_task
        sent_after_commit = sum(at_kill[task].values()) - (committed[task] + 1)
        assert 0 <= duplicates <= sent_after_commit, (task, duplicates, sent_after_commit)
    assert "Received SIGTERM" not in worker.log()


@pytest.mark.slow
def test_pause_resume_stop_restart_and_kip875_offsets(worker_factory: Any, cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("cd-ctl"), partitions=1)
    worker = worker_factory().start()
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/config",
                       json=sequence_config(topic, 2, **{"records.per.second": "50"})).status_code == 201
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING", "RUNNING"]), 30, "connector and tasks running")

    def progressed(floor: dict[int, int], by: int) -> bool:
        offsets = worker.offsets()
        return len(offsets) == 2 and all(offsets[t] >= floor.get(t, -1) + by for t in (0, 1))

    wait_until(lambda: progressed({}, 10), 30, "both tasks committing")

    # Pause: statuses say PAUSED and records stop; resume: they flow again.
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/pause").status_code == 202
    wait_until(lambda: worker.states() == ("PAUSED", ["PAUSED", "PAUSED"]), 30, "paused")
    wait_for_flow_to_stop(cluster_a.bootstrap, topic)
    paused = worker.offsets()
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/resume").status_code == 202
    wait_until(lambda: progressed(paused, 10), 30, "flowing again after resume")

    # KIP-875 needs STOPPED first, with Connect's message.
    patch = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 9}}]}
    refused = worker.rest("PATCH", f"/connectors/{CONNECTOR}/offsets", json=patch)
    assert refused.status_code == 400
    assert refused.json()["message"] == (
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
        f"the specified connector by issuing a 'PUT' request to the '/connectors/{CONNECTOR}/stop' endpoint")

    # Stop: zero tasks, STOPPED, nothing flows.
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/stop").status_code == 204
    wait_until(lambda: worker.states() == ("STOPPED", []), 30, "stopped with no tasks")
    assert worker.rest("GET", f"/connectors/{CONNECTOR}/tasks").json() == []
    wait_for_flow_to_stop(cluster_a.bootstrap, topic)
    before = worker.offsets()
    written = records_by_task(cluster_a.bootstrap, topic)
    assert before == {t: max(written[t]) for t in (0, 1)}, "stopping committed every record written"

    # PATCH task 0 back to seq 9: after resume task 0 rewrites seq 10 onwards; task 1 continues.
    altered = worker.rest("PATCH", f"/connectors/{CONNECTOR}/offsets", json=patch)
    assert altered.status_code == 200, altered.text
    assert altered.json() == {"message": "The offsets for this connector have been altered successfully"}
    assert worker.offsets() == {0: 9, 1: before[1]}
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/resume").status_code == 202
    wait_until(lambda: progressed({0: 9, 1: before[1]}, 5), 30, "both tasks running after the PATCH")
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/stop").status_code == 204
    wait_until(lambda: worker.states() == ("STOPPED", []), 30, "stopped again")
    wait_for_flow_to_stop(cluster_a.bootstrap, topic)
    seen = records_by_task(cluster_a.bootstrap, topic)
    gaps = {t: [q for q in range(max(seen[t])) if seen[t][q] == 0][:20] for t in (0, 1)}
    assert (seen[0][9], seen[0][10]) == (1, 2), f"task 0 resumed right after the altered offset {gaps} {before}"
    assert (seen[1][before[1]], seen[1][before[1] + 1]) == (1, 1), "task 1 resumed after its own offset"

    # DELETE: reset both; after resume every task starts again at seq 0.
    reset = worker.rest("DELETE", f"/connectors/{CONNECTOR}/offsets")
    assert reset.json() == {"message": "The offsets for this connector have been reset successfully"}
    assert worker.rest("GET", f"/connectors/{CONNECTOR}/offsets").json() == {"offsets": []}
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/resume").status_code == 202
    wait_until(lambda: progressed({}, 5), 30, "both tasks committing again from scratch")
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/pause").status_code == 202
    wait_until(lambda: worker.states() == ("PAUSED", ["PAUSED", "PAUSED"]), 30, "paused")
    wait_for_flow_to_stop(cluster_a.bootstrap, topic)
    seen = records_by_task(cluster_a.bootstrap, topic)
    assert (seen[0][0], seen[1][0]) == (2, 2), (
        "both tasks started again from seq 0\n"
        + offsets_history(cluster_a.bootstrap, worker.props["offset.storage.topic"]) + "\n"
        + log_excerpt(worker.log(), "offset", "task", "target state", "Stopping"))
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/resume").status_code == 202

    # Restart with tasks: 202 with RESTARTING states, then the tasks are re-created and RUNNING again.
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING", "RUNNING"]), 30, "running before restart")
    task_starts = worker.log().count("seq-0 started")
    restarted = worker.rest("POST", f"/connectors/{CONNECTOR}/restart",
                            params={"includeTasks": "true", "onlyFailed": "false"})
    assert restarted.status_code == 202
    body = restarted.json()
    assert body["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING", "RESTARTING"]
    wait_until(lambda: worker.log().count("seq-0 started") == task_starts + 1, 30, "task 0 re-created")
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING", "RUNNING"]), 30, "running after restart")
    # Only failed ones: nothing has failed, so nothing restarts and nothing shows RESTARTING.
    only_failed = worker.rest("POST", f"/connectors/{CONNECTOR}/restart",
                              params={"includeTasks": "true", "onlyFailed": "true"}).json()
    assert only_failed["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in only_failed["tasks"]] == ["RUNNING", "RUNNING"]

    # Delete: gone from the list; its statuses are tombstoned.
    assert worker.rest("DELETE", f"/connectors/{CONNECTOR}").status_code == 204
    assert worker.rest("GET", "/connectors").json() == []
    assert worker.rest("GET", f"/connectors/{CONNECTOR}/status").status_code == 404


def test_sigterm_exits_0_quickly_with_offsets_flushed(worker_factory: Any, cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("cd-term"), partitions=1)
    # A long flush interval: only the shutdown itself can have committed the latest offsets.
    worker = worker_factory(**{"offset.flush.interval.ms": "600000"}).start()
    assert worker.rest("POST", "/connectors", json={
        "name": CONNECTOR, "config": sequence_config(topic, 1, **{"records.per.second": "500"})}).status_code == 201
    wait_for_records(cluster_a.bootstrap, topic, 500)
    metrics = worker.rest("GET", "/metrics")
    assert metrics.status_code == 200
    samples = [line for line in metrics.text.splitlines()
               if line.startswith('connect_source_task_records_written_total{connector="seq",task="0"}')]
    assert samples and float(samples[0].split()[-1]) > 0, "the worker's metrics are served on /metrics"
    code, took_s = worker.terminate(30)
    assert code == 0, worker.log()[-3000:]
    assert took_s < 30
    written = records_by_task(cluster_a.bootstrap, topic)[0]
    committed = committed_offsets(cluster_a.bootstrap, worker.props["offset.storage.topic"])
    assert committed == {0: max(written)}, "the graceful stop committed the offset of the last record written"
    assert "connect-distributed stopped" in worker.log()


def test_restart_reloads_connectors_from_the_config_topic(worker_factory: Any, cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("cd-reload"), partitions=1)
    worker = worker_factory().start()
    config = sequence_config(topic, 1, **{"records.per.second": "20"})
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/config", json=config).status_code == 201
    # The group assigns the new connector after a rebalance; paused before its first start it would
    # have no tasks (as in Java), so let it generate its task first.
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING"]), 30, "running")
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/pause").status_code == 202
    wait_until(lambda: worker.states() == ("PAUSED", ["PAUSED"]), 30, "paused")
    first_id = worker.status()["connector"]["worker_id"]
    assert worker.terminate()[0] == 0
    worker.start()
    # Same connector, config and target state; now reported by the new worker id (new port).
    assert worker.rest("GET", f"/connectors/{CONNECTOR}/config").json() == {**config, "name": CONNECTOR}
    wait_until(lambda: worker.states() == ("PAUSED", ["PAUSED"]) and
               worker.status()["connector"]["worker_id"] != first_id, 30, "paused, reported by the new worker")


def test_signed_task_configs_from_a_follower_are_applied(worker_factory: Any, cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("cd-internal"), partitions=1)
    worker = worker_factory().start()
    config = sequence_config(topic, 1, **{"records.per.second": "20"})
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/config", json=config).status_code == 201
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING"]), 30, "running")

    # The session key the leader wrote to the config topic (KIP-507), as another worker would read it.
    latest = {r.key: r.value for r in consume_all(cluster_a.bootstrap, worker.props["config.storage.topic"])}
    session = json.loads(latest[b"session-key"] or b"{}")
    key = base64.b64decode(session["key"])
    assert session["algorithm"] == "HmacSHA256" and len(key) == 32

    posted = [{**config, "name": CONNECTOR, "task.id": "7",
               "task.class": "connect_runtime.testing.sequence_source.SequenceSourceTask"}]
    body = json.dumps(posted).encode()
    path = f"/connectors/{CONNECTOR}/tasks"
    json_type = {"Content-Type": "application/json"}
    assert worker.rest("POST", path, content=body, headers=json_type).status_code == 400  # unsigned
    assert worker.rest("POST", path, content=body).status_code == 415  # not declared JSON (issue 27)
    forged = {"X-Connect-Authorization": base64.b64encode(b"x" * 32).decode(),
              "X-Connect-Request-Signature-Algorithm": "HmacSHA256", **json_type}
    assert worker.rest("POST", path, content=body, headers=forged).status_code == 403
    signature = base64.b64encode(hmac.new(key, body, hashlib.sha256).digest()).decode()
    signed = {"X-Connect-Authorization": signature, "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
              "Content-Type": "application/json"}
    accepted = worker.rest("POST", path, content=body, headers=signed)
    assert accepted.status_code == 204, accepted.text
    assert [t["config"]["task.id"] for t in worker.rest("GET", path).json()] == ["7"]
    # The task was restarted with the new config: it now writes as task 7.
    wait_until(lambda: 7 in worker.offsets(), 30, "task 7 committing offsets")


def test_config_provider_placeholders_resolve_at_start_and_are_stored_as_given(
        worker_factory: Any, cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("cd-provided"), partitions=1)
    monkeypatch.setenv("CD_TEST_BOOTSTRAP", cluster_a.bootstrap)  # inherited by the worker process
    monkeypatch.setenv("CD_TEST_TOPIC", topic)
    worker = worker_factory(**{
        "bootstrap.servers": "${env:CD_TEST_BOOTSTRAP}", "config.providers": "env",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        # REST-submitted configs may only use allowlisted providers (none by default, CVE-2024-31141).
        "rest.config.providers.allowlist": "env"}).start()
    config = sequence_config("${env:CD_TEST_TOPIC}", 1, **{"records.per.second": "50"})
    assert worker.rest("PUT", f"/connectors/{CONNECTOR}/config", json=config).status_code == 201
    wait_for_records(cluster_a.bootstrap, topic, 20)  # the task wrote to the resolved topic
    # REST returns the config as stored, placeholder included (as Java does), so no secret leaks.
    assert worker.rest("GET", f"/connectors/{CONNECTOR}/config").json()["topic"] == "${env:CD_TEST_TOPIC}"
    assert topic not in worker.log()  # resolved values (possibly secrets) never reach the log


def scrape(worker: WorkerProcess) -> dict[str, float]:
    """``/metrics`` as {sample name with its labels: value}, unlabelled samples under their bare name."""
    from prometheus_client.parser import text_string_to_metric_families

    response = worker.rest("GET", "/metrics")
    assert response.status_code == 200, response.text
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


def test_worker_and_rebalance_metrics(worker_factory: Any, cluster_a: Cluster) -> None:
    """Connect's worker and rebalance metric groups, as Prometheus families (docs/metrics.md)."""
    worker = worker_factory().start()
    topic = create_topic(cluster_a.bootstrap, unique("cd-metrics"))
    created = worker.rest("POST", "/connectors", json={"name": CONNECTOR, "config": sequence_config(topic, 2)})
    assert created.status_code == 201, created.text
    wait_until(lambda: worker.states() == ("RUNNING", ["RUNNING", "RUNNING"]), 60, "connector and tasks running")
    metrics = wait_until(lambda: (m := scrape(worker)).get("connect_worker_task_count") == 2 and m, 30,
                         "two tasks counted")
    assert metrics["connect_worker_connector_count"] == 1
    assert metrics["connect_worker_connector_startup_total{result=success}"] == 1
    assert metrics["connect_worker_task_startup_total{result=success}"] == 2
    assert metrics.get("connect_worker_task_startup_total{result=failure}", 0) == 0
    # The worker joined its group and leads it. Alone in it, it assigns the connector's new work without
    # another rebalance (the sole-leader fast path) unless a rejoin was due: each real rebalance moves the
    # epoch (the generation, from 0) and the completed count together.
    assert metrics["connect_worker_rebalance_completed_total"] >= 1
    assert metrics["connect_worker_rebalancing"] == 0
    assert metrics["connect_worker_leader"] == 1
    assert metrics["connect_worker_rebalance_completed_total"] >= metrics["connect_worker_rebalance_epoch"] + 1
    assert metrics["connect_worker_rebalance_seconds_count"] >= 1
    assert metrics["connect_worker_rebalance_last_completed_timestamp_seconds"] <= time.time()
