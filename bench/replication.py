"""Start "our replication" A -> B as separate processes, the way a user runs it.

Two launchers, chosen automatically:

* ``driver``: ``connect-mirror-maker mm2.properties`` (mirror.maker.mirror_maker), the dedicated MM2 node;
* ``distributed``: ``connect-distributed worker.properties`` (a Connect worker whose Kafka cluster is the
  target, as the driver's herder for A->B is) plus a MirrorSourceConnector created over REST with the
  config the driver would submit (``MirrorMakerConfig.connector_base_config``).

By default only the MirrorSourceConnector runs (no checkpoints or heartbeats: the data path alone);
``extra=DEFAULT_FLOW`` runs the flow as shipped.
``workers=2`` starts two processes in one Connect group; whether they share the tasks depends on the
group membership the runtime uses (see :func:`multi_worker_support`).
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from subprocess import Popen
from typing import Any

import httpx

from bench.common import python_child, stop_child, unique
from mirror.local.broker import free_port

SOURCE_CONNECTOR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
#: The flow as shipped (MM2's defaults): the checkpoint and heartbeat connectors on at their default
#: intervals (checkpoints every 60 s, heartbeats every 1 s), group offset sync off. Without it
#: :func:`mm2_properties` turns both connectors off.
DEFAULT_FLOW = {"emit.heartbeats.enabled": "true", "emit.checkpoints.enabled": "true"}


def driver_available() -> bool:
    return importlib.util.find_spec("mirror.maker.mirror_maker") is not None


def default_launcher() -> str:
    """``$BENCH_LAUNCHER`` if set, else the MM2 driver when it is installed, else connect-distributed."""
    return os.environ.get("BENCH_LAUNCHER") or ("driver" if driver_available() else "distributed")


def multi_worker_support() -> str | None:
    """None if two replication processes can share one connector's tasks; else why not."""
    if default_launcher() == "driver":
        return None  # connect-mirror-maker nodes join the flow's group (Kafka group membership)
    source = Path(importlib.util.find_spec("connect_runtime.cli.connect_distributed").origin or "")  # type: ignore[union-attr]
    text = source.read_text() if source.exists() else ""
    if "KafkaGroupMembership" not in text:
        return "connect-distributed still runs every worker as a sole group member (SoleMember)"
    return None


def mm2_properties(source: str, target: str, *, source_alias: str, topic: str, tasks: int,
                   extra: dict[str, str] | None = None) -> dict[str, str]:
    """An mm2.properties for one A->B flow replicating ``topic`` (RF 1: single-broker clusters)."""
    flow = f"{source_alias}->B"
    props = {
        "clusters": f"{source_alias}, B",
        f"{source_alias}.bootstrap.servers": source, "B.bootstrap.servers": target,
        f"{flow}.enabled": "true", f"{flow}.topics": topic, "tasks.max": str(tasks),
        "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "emit.heartbeats.enabled": "false", "emit.checkpoints.enabled": "false",
        "sync.topic.acls.enabled": "false",  # create_acls aborts Tansu (docs/tansu.md)
        "refresh.topics.interval.seconds": "600",
    }
    props.update(extra or {})
    if props.get("emit.offset-syncs.enabled") == "false":  # MM2 refuses offset-syncs.* keys then (KIP-1031)
        props = {k: v for k, v in props.items() if not k.startswith("offset-syncs.")}
    return props


def connector_config(props: dict[str, str], source_alias: str) -> dict[str, str]:
    from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget

    config = MirrorMakerConfig(props).connector_base_config(SourceAndTarget(source_alias, "B"),
                                                           SOURCE_CONNECTOR)
    config["enabled"] = "true"
    return config


@dataclass
class Replication:
    """The running replication processes and how to reach them."""

    processes: list[Popen[bytes]]
    logs: list[Path]
    urls: list[str] = field(default_factory=list)
    connector: str = "MirrorSourceConnector"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.processes)

    def task_processes(self) -> int:
        """How many of the processes started a task of the source connector (from their logs)."""
        return sum(1 for log in self.logs if f"Starting task {self.connector}-" in log.read_text(errors="replace"))

    def task_start_times(self) -> list[datetime]:
        """When each process started its first task of the source connector (from its log lines)."""
        marker = f"Starting task {self.connector}-"
        times = []
        for log in self.logs:
            line = next((ln for ln in log.read_text(errors="replace").splitlines() if marker in ln), None)
            if line is not None:
                times.append(datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f"))
        return times

    def task_start_gap_s(self) -> float | None:
        """Seconds between the first and the last process starting a task: (c) copies with one task only
        for that long. On Tansu it varies from ~0 to ~10 s between runs: a member whose SyncGroup reaches
        the broker before the leader's gets no answer until the next rebalance, which it then joins
        (Apache Kafka answers it with the leader's assignment)."""
        times = self.task_start_times()
        return (max(times) - min(times)).total_seconds() if len(times) > 1 else None

    def task_states(self) -> list[tuple[str, str]]:
        """(worker_id, state) of every task of the source connector, from the first worker's REST API."""
        if not self.urls:
            return []
        response = httpx.get(f"{self.urls[0]}/connectors/{self.connector}/status", timeout=10)
        if response.status_code != 200:
            return []
        return [(t.get("worker_id", ""), t.get("state", "")) for t in response.json().get("tasks", [])]

    def stop(self) -> None:
        for process in self.processes:
            stop_child(process, 60)

    def tail(self, lines: int = 30) -> str:
        return "\n".join("\n".join(log.read_text(errors="replace").splitlines()[-lines:]) for log in self.logs)


def _listening_url(log: Path, process: Popen[bytes], timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"worker exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        for line in log.read_text(errors="replace").splitlines():
            if "REST server listening on http://" in line:
                return line.split("listening on ", 1)[1].split()[0].rstrip(",")
        time.sleep(0.1)
    raise SystemExit(f"no REST URL in {log} after {timeout_s}s")


def _wait_healthy(url: str, process: Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"worker exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"worker at {url} not healthy after {timeout_s}s")


def start(workdir: Path, source: str, target: str, *, topic: str, tasks: int = 1, workers: int = 1,
          source_alias: str = "A", extra: dict[str, str] | None = None,
          worker_extra: dict[str, str] | None = None, launcher: str | None = None,
          code: Path | None = None) -> Replication:
    """Start the replication of ``topic`` from ``source`` to ``target`` (remote topic ``<alias>.<topic>``).

    ``code``: run the processes on another version of the packages (see ``common.python_child``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    props = mm2_properties(source, target, source_alias=source_alias, topic=topic, tasks=tasks, extra=extra)
    launcher = launcher or default_launcher()
    if launcher == "driver":
        path = workdir / f"mm2-{source_alias}.properties"
        props.update({f"B.{k}": v for k, v in (worker_extra or {}).items()})
        if workers > 1:  # nodes forward task configs to their leader over internal REST (KIP-710), as in Java
            props.setdefault("dedicated.mode.enable.internal.rest", "true")
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        nodes: list[Popen[bytes]] = []
        node_logs: list[Path] = []
        for i in range(workers):  # nodes of one flow form one Connect group and share its tasks
            log = workdir / f"mm2-{source_alias}-{i}.log"
            nodes.append(python_child(["-m", "mirror.cli.connect_mirror_maker", str(path),
                                       "--rest-port", str(free_port())], log, code))
            node_logs.append(log)
        return Replication(nodes, node_logs)

    group = unique("bench-connect")
    worker_props: dict[str, Any] = {
        "bootstrap.servers": target, "group.id": group,
        "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status", "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "listeners": "http://127.0.0.1:0", "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
        **(worker_extra or {}),
    }
    path = workdir / f"{group}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in worker_props.items()))
    processes: list[Popen[bytes]] = []
    logs: list[Path] = []
    urls: list[str] = []
    for i in range(workers):
        log = workdir / f"{group}-worker-{i}.log"
        process = python_child(["-m", "connect_runtime.cli.connect_distributed", str(path)], log, code)
        processes.append(process)
        logs.append(log)
    replication = Replication(processes, logs, urls)
    try:
        for process, log in zip(processes, logs, strict=True):
            urls.append(_listening_url(log, process, 60))
        for url, process in zip(urls, processes, strict=True):
            _wait_healthy(url, process, 120)
        config = connector_config(props, source_alias)
        response = httpx.put(f"{urls[0]}/connectors/{config['name']}/config", json=config, timeout=60)
        if response.status_code >= 300:
            raise SystemExit(f"creating the connector failed: {response.status_code} {response.text}")
        replication.connector = config["name"]
    except BaseException:
        replication.stop()
        raise
    return replication
