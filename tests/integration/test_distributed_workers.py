"""Three ``connect-distributed`` processes sharing one Connect group on a real broker (issue 4).

The workers are subprocesses with the same ``group.id``; membership, leadership and the assignment go
through the broker's group coordinator (KafkaGroupMembership). SequenceSourceConnector task ``n``
writes ``{"task": n, "seq": s, "worker_id": <writer>, "ts": <ms>}``, so the output topic tells, per
task, which worker wrote which seq when: gaps (lost records), and whether two workers ever wrote the
same task at the same time (overlapping ownership).

Each worker listens on a fixed port, so a restarted worker keeps its worker id (``host:port``), as
it would in a deployment with fixed listeners. Rebalance figures are printed (run with ``-s``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Cluster
from tests.integration.test_connect_distributed import CONNECTOR, WorkerProcess, sequence_config
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_S = 6.0
DELAY_S = 3.0
TASKS = 6
RATE = "10"  # records per second per task: keeps the topic small over the test's few minutes
#: Two writers of one task may overlap by at most this much (records are stamped before they are sent).
FENCING_WINDOW_MS = 500


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Member(WorkerProcess):
    """A worker of the shared group, on a fixed port (stable worker id across restarts)."""

    def __init__(self, tmp_path: Path, bootstrap: str, group: str, index: int) -> None:
        directory = tmp_path / f"worker{index}"
        directory.mkdir()
        self.port = free_port()
        super().__init__(directory, bootstrap, group, **{
            "listeners": f"http://127.0.0.1:{self.port}", "session.timeout.ms": str(int(SESSION_S * 1000)),
            "heartbeat.interval.ms": "1000", "scheduled.rebalance.max.delay.ms": str(int(DELAY_S * 1000))})
        self.worker_id = f"127.0.0.1:{self.port}"
        self.index = index

    def launch(self) -> None:
        """Start without waiting (several members start at once)."""
        self.starts += 1
        self.log_path = self.tmp_path / f"worker-{self.starts}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "connect_runtime.cli.connect_distributed", str(self.path)],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def wait_ready(self) -> None:
        self.url = wait_until(self._listening_url, 60, f"REST URL in {self.log_path}")
        wait_until(lambda: httpx.get(f"{self.url}/health", timeout=5).status_code == 200, 90, "healthy worker",
                   retry_on=(httpx.TransportError,))  # the listener may not accept connections yet

    def is_leader(self) -> bool:
        """Per this worker's log, the last assignment it applied made it the leader."""
        lines = [ln for ln in self.log().splitlines() if "Group " in ln and " generation " in ln and "task(s)" in ln]
        return bool(lines) and "(leader)" in lines[-1]

    def task_starts(self) -> int:
        return sum(1 for ln in self.all_logs().splitlines() if "Starting task " in ln)

    def all_logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.tmp_path.glob("worker-*.log")))


def task_log_lines(members: list[Member], task: int, limit: int = 30) -> str:
    """Each worker's log lines about one task (starts, stops, failures), for a failure message."""
    name = f"{CONNECTOR}-{task}"
    return "\n".join(f"worker {m.index}: {line}" for m in members
                     for line in [ln for ln in m.all_logs().splitlines() if name in ln][:limit])


@pytest.fixture
def members(tmp_path: Path, cluster_a: Cluster) -> Iterator[list[Member]]:
    group = unique("dw")
    workers = [Member(tmp_path, cluster_a.bootstrap, group, i) for i in range(3)]
    yield workers
    for worker in workers:
        worker.close()


def task_owners(worker: WorkerProcess) -> dict[int, tuple[str, str]]:
    """task -> (state, worker_id) as any worker reports it."""
    status = worker.status()
    return {t["id"]: (t["state"], t["worker_id"]) for t in status.get("tasks", [])}


def all_running_on(worker: WorkerProcess, worker_ids: set[str]) -> dict[int, tuple[str, str]] | None:
    owners = task_owners(worker)
    if len(owners) == TASKS and all(s == "RUNNING" and w in worker_ids for s, w in owners.values()):
        return owners
    return None


def balanced(worker: WorkerProcess, worker_ids: set[str]) -> bool:
    owners = all_running_on(worker, worker_ids)
    if owners is None:
        return False
    per_worker = [w for _s, w in owners.values()]
    return all(per_worker.count(w) == TASKS // len(worker_ids) for w in worker_ids)


def read_output(bootstrap: str, topic: str) -> dict[int, list[dict[str, Any]]]:
    by_task: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in consume_all(bootstrap, topic, timeout_s=120):
        value = json.loads(record.value or b"{}")
        value["offset"] = record.offset  # where it landed, for the failure message
        by_task[value["task"]].append(value)
    return by_task


def ownership_sessions(records: list[dict[str, Any]], gap_ms: int = 1500) -> list[tuple[str, int, int]]:
    """(worker, first ts, last ts) per stretch of one worker writing one task without a pause."""
    sessions: list[tuple[str, int, int]] = []
    by_worker: dict[str, list[int]] = defaultdict(list)
    for record in records:
        by_worker[record["worker_id"]].append(int(record["ts"]))
    for worker, stamps in by_worker.items():
        stamps.sort()
        start = prev = stamps[0]
        for ts in stamps[1:]:
            if ts - prev > gap_ms:
                sessions.append((worker, start, prev))
                start = ts
            prev = ts
        sessions.append((worker, start, prev))
    return sorted(sessions, key=lambda s: s[1])


def overlaps(sessions: list[tuple[str, int, int]], window_ms: int) -> list[tuple[Any, Any]]:
    bad = []
    for i, a in enumerate(sessions):
        for b in sessions[i + 1:]:
            if a[0] != b[0] and min(a[2], b[2]) - max(a[1], b[1]) > window_ms:
                bad.append((a, b))
    return bad


class Figures(dict[str, float]):
    """Measured durations, printed as they are taken (visible with ``-s`` even if a later step fails)."""

    def __setitem__(self, key: str, value: float) -> None:
        print(f"  {key}: {value:.1f}", flush=True)
        super().__setitem__(key, value)


def test_three_workers_share_move_and_fence_tasks(members: list[Member], cluster_a: Cluster) -> None:
    figures = Figures()
    topic = create_topic(cluster_a.bootstrap, unique("dw-seq"), partitions=1)

    # -- three workers join one group -------------------------------------------------------------
    began = time.monotonic()
    for member in members:
        member.launch()
    for member in members:
        member.wait_ready()
    figures["3 workers start+join (s)"] = time.monotonic() - began
    ids = {m.worker_id for m in members}
    leader = wait_until(lambda: next((m for m in members if m.is_leader()), None), 30, "a leader")
    follower = next(m for m in members if m is not leader)

    # -- a connector created through a non-leader runs on all three --------------------------------
    config = sequence_config(topic, TASKS, **{"records.per.second": RATE})
    created = follower.rest("POST", "/connectors", json={"name": CONNECTOR, "config": config})
    assert created.status_code == 201, created.text
    began = time.monotonic()
    owners = wait_until(lambda: all_running_on(follower, ids), 60, "6 tasks RUNNING")
    figures["create -> 6 tasks running (s)"] = time.monotonic() - began
    assert {w for _s, w in owners.values()} == ids, f"tasks on every worker: {owners}"
    # Statuses reflect every worker, whichever worker answers.
    assert all(task_owners(m) == owners for m in members)

    # -- restarts of a task another worker owns are forwarded to the owner -------------------------
    foreign = next(t for t, (_s, w) in owners.items() if w != follower.worker_id)
    assert follower.rest("POST", f"/connectors/{CONNECTOR}/tasks/{foreign}/restart").status_code == 204
    wait_until(lambda: all_running_on(follower, ids), 30, "restarted task RUNNING again")

    # -- rolling restart: the connector keeps running; only the restarted worker's work moves -------
    starts_before = sum(m.task_starts() for m in members)
    samples: list[tuple[str | None, list[str]]] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            probe = next((m for m in members if m.process is not None and m.process.poll() is None
                          and m.url), None)
            if probe is not None:
                try:
                    samples.append(probe.states())
                except Exception:  # the probed worker may be stopping; the next round picks another
                    pass
            sampling.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    for member in members:
        others = {m.worker_id for m in members if m is not member}
        probe = next(m for m in members if m is not member)
        began = time.monotonic()
        assert member.terminate(40)[0] == 0
        wait_until(lambda p=probe, o=others: all_running_on(p, o), SESSION_S + DELAY_S + 30, "tasks moved off")
        figures[f"leave -> tasks running elsewhere, worker {member.index} (s)"] = time.monotonic() - began
        began = time.monotonic()
        member.launch()
        member.wait_ready()
        # Balanced again (2 tasks each) before the next worker restarts: otherwise the next stop
        # would overlap with the last hand-over of this one.
        wait_until(lambda p=probe: balanced(p, ids), 60, "restarted worker gets its share again")
        figures[f"join -> tasks back on worker {member.index} (s)"] = time.monotonic() - began
    sampling.set()
    sampler.join(5)
    moved = sum(m.task_starts() for m in members) - starts_before
    figures["task starts during the rolling restart"] = moved
    print(f"\nrolling restart: {len(samples)} status samples, connector states "
          f"{sorted({st for st, _t in samples if st})}, fewest tasks RUNNING "
          f"{min(t.count('RUNNING') for _s, t in samples if t)}, task starts {moved}")
    # The connector instance itself moves when its worker restarts (UNASSIGNED meanwhile, as in Java);
    # it never fails or pauses, and the tasks on the two other workers keep running.
    assert samples and {state for state, _tasks in samples if state} <= {"RUNNING", "UNASSIGNED"}, samples
    # Never fewer tasks running than the 6 minus those of the one worker that is restarting.
    assert all(tasks.count("RUNNING") >= TASKS - 2 for _state, tasks in samples if len(tasks) == TASKS)
    # A stop-the-world rebalance restarts all 6 tasks at each of the 2 rebalances per worker restart.
    assert moved < 3 * 2 * TASKS, moved

    # -- SIGKILL: the dead worker's tasks move within session timeout + delay + 10 s ----------------
    leader = wait_until(lambda: next((m for m in members if m.is_leader()), None), 30, "the current leader")
    victim, survivor = [m for m in members if m is not leader]  # the survivor: a follower, for REST
    survivors = {m.worker_id for m in members if m is not victim}
    wait_until(lambda: balanced(survivor, ids), 30, "balanced before the kill")
    began = time.monotonic()
    victim.kill()
    wait_until(lambda: all_running_on(survivor, survivors), SESSION_S + DELAY_S + 10, "tasks of the killed worker")
    figures["SIGKILL -> tasks running elsewhere (s)"] = time.monotonic() - began

    # -- a PUT of a new config reaches every task: max.records stops each task at exactly that seq ---
    # (The topic is read only once every task stopped: a reader finds no end while tasks keep writing.)
    committed = survivor.offsets()
    assert len(committed) == TASKS, committed
    limit = max(committed.values()) + 100  # ~10 s of records at RATE: more than the PUT takes to land
    updated = {**config, "max.records": str(limit)}
    assert survivor.rest("PUT", f"/connectors/{CONNECTOR}/config", json=updated).status_code == 200
    wait_until(lambda: survivor.offsets() == {t: limit - 1 for t in range(TASKS)}, 90,
               "every task stopped at max.records", interval_s=1)
    output = read_output(cluster_a.bootstrap, topic)

    # -- the output: no gap, no task ever written by two workers at the same moment ----------------
    for task, records in sorted(output.items()):
        seqs = {r["seq"] for r in records}
        if seqs != set(range(limit)):  # say where the neighbours landed and who wrote them, and the log's head
            head = sorted((r["offset"], r["task"], r["seq"], r["worker_id"]) for rs in output.values() for r in rs)[:12]
            near = sorted((r["seq"], r["offset"], r["worker_id"], r["ts"]) for r in records)[:4]
            raise AssertionError(f"task {task}: missing {sorted(set(range(limit)) - seqs)[:10]}; its first records "
                                 f"(seq, offset, worker, ts) {near}; the topic's first offsets (offset, task, "
                                 f"seq, worker) {head}\n{task_log_lines(members, task)}")
        sessions = ownership_sessions(records)
        assert not overlaps(sessions, FENCING_WINDOW_MS), f"task {task}: overlapping writers {sessions}"
        assert max(r["seq"] for r in records) == limit - 1
