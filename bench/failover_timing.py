"""Failover in seconds: how long each step of a failover takes with the defaults, on Apache Kafka 4.4.

Everything runs as an operator runs it: ``connect-mirror-maker`` nodes on Java's default mm2.properties
(tests/data/kafka-connect-mirror-maker.properties: A->B and B->A, ``topics = .*``, replication factor 1 and
nothing else; only its two bootstrap lines are replaced, and each node gets ``--rest-port``), two fresh
single-node Apache Kafka 4.4 clusters (bench/kafka_brokers.py), a steady sequenced load on A
(tests/support/chaos.py: each record carries its partition, sequence number and send time, so every
arrival on B is timed and every exact position is known) and the ``mirror`` commands as subprocesses.
Nothing is tuned: ``offset.flush.interval.ms``, ``emit.checkpoints.interval.seconds``,
``sync.group.offsets.interval.seconds``, ``session.timeout.ms`` and ``heartbeat.interval.ms`` are the
defaults of the code under test. Topics and groups exist before the nodes start (MM2 looks for new ones
only every ``refresh.*.interval.seconds``, 10 minutes by default).

Scenarios (``--scenario``, comma-separated; all by default):

* ``translate``: one node, the file plus ``sync.group.offsets.enabled = true``. Each trial commits two
  groups on A while the load runs: one at the end of every partition, one 100 records behind it. Per
  group, timed from its records' arrival on B (the arrival of the last record it has read, or its commit
  if that came later): the offset map on B covering that record (``map``); the batch translation of
  ``mirror offsets translate --group`` (:class:`mirror.client.translation.OffsetTranslator`, polled every
  0.5 s, timed at the end of the read that first answered exactly) giving the exact position (``exact``);
  the group's checkpoint in ``A.checkpoints.internal`` being exact (``checkpoint``); the group's offsets on
  B being exact (``synced``; the issue bounds ``synced`` minus ``sync.group.offsets.interval.seconds``).
* ``cutover``: one node. Each trial runs the load on its own topic, commits two groups 10 and 100 records
  per partition behind the end, stops the load (a planned cutover's first step) and at once runs
  ``mirror failover --execute --json`` for both; figure: its exit minus the arrival of the last record on B
  (the lag drained), beside the time it reports. Then both groups "consume" on B (commits 5 records behind
  B's end) and ``mirror failback --execute --json`` runs; figure: its exit minus those commits. Every
  written offset is checked against the exact one.
* ``node-loss``: two nodes. 400 records/s over 6 partitions; the node running the A->B source task is
  killed with SIGKILL; figure: per partition, the longest a record sent since the kill waited to arrive
  (the stall), with the survivor's log as a timeline (rebalance noticed, assignment, task started, task
  running) and the first record after it. The killed node is started again before the next kill. At the
  end: lost records (must be 0) and duplicates, against the bound the offset flush allows (the rate times
  ``offset.flush.interval.ms`` + ``offset.flush.timeout.ms``, per kill).
* ``steady``: one node at ``--rate`` records/s over 8 partitions, five groups committed on A (one of them
  moved to the end every 5 s, a consumer keeping up): the node's CPU per record and per second,
  records/s, and the offset-map, checkpoint and offset-sync records written per second, over
  ``--window`` seconds after a warm-up. With ``--compare-code DIR`` the same runs on the code in DIR too,
  interleaved round by round: the cost of a change at a fixed rate.

``--compare-code DIR`` (``git archive <commit> connect_runtime mirror | tar -x -C DIR``, plus the built
``connect_runtime/clients/_bulk_produce*.so``) runs every scenario's nodes and commands on DIR's code as
well, before the current checkout's, in each round. Each scenario prints one table (a cell is the median
over the trials and rounds, with min-max) and the load averages at its start and end; ``--record`` records
the tables in bench/results.md with the recording rule's facts (bench/recording.py), ``--output FILE``
writes that section to FILE instead.

    python bench/failover_timing.py [--scenario translate,cutover,node-loss,steady] [--trials 5]
                                    [--rounds 1] [--compare-code DIR] [--json out.json] [--record]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench import kafka_brokers, recording
from bench.common import (
    admin,
    cpu_seconds,
    create_topic,
    local_brokers,
    machine_facts,
    python_child,
    stop_child,
    unique,
)

ROOT = Path(__file__).resolve().parent.parent
JAVA_DEFAULT_FILE = ROOT / "tests" / "data" / "kafka-connect-mirror-maker.properties"
SCENARIOS = ("translate", "cutover", "node-loss", "steady")
SOURCE, TARGET = "A", "B"
#: Partitions and load of the translate and cutover scenarios (records/s over all partitions).
PARTITIONS = 4
RATE = 200.0
#: The "lagging" group of a translate trial reads this many records less per partition than the other.
LAG = 100
#: Seconds between two translate trials (prime to the 60 s intervals, so trials fall at different phases).
TRIAL_SPACING_S = 7.0
#: The node-loss scenario: tests/integration/support/two_nodes.py's load.
LOSS_PARTITIONS = 6
LOSS_RATE = 400.0
POLL_S = 0.5
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def now_ms() -> float:
    return time.time() * 1000


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


# -- the file and the nodes ---------------------------------------------------------------------------------
def default_file(path: Path, source: str, target: str, extra: Iterable[str] = ()) -> Path:
    """Java's default mm2.properties with the two clusters' bootstrap lines pointing at ``source``/``target``."""
    lines = []
    for line in JAVA_DEFAULT_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{SOURCE}.bootstrap.servers"):
            line = f"{SOURCE}.bootstrap.servers = {source}"
        elif line.startswith(f"{TARGET}.bootstrap.servers"):
            line = f"{TARGET}.bootstrap.servers = {target}"
        lines.append(line)
    path.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return path


class Node:
    """One ``connect-mirror-maker`` process on the file, on the current code or ``code``."""

    def __init__(self, properties: Path, log: Path, code: Path | None) -> None:
        from mirror.local.broker import free_port

        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = python_child(["-m", "mirror.cli.connect_mirror_maker", str(properties),
                                  "--rest-port", str(self.port)], log, code)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def wait_running(self, herders: int = 2, timeout_s: float = 180.0) -> None:
        wait(lambda: f"All {herders} herder(s) running" in self.text(), timeout_s, "the node running",
             alive=self.alive, log=self)

    def task_workers(self, connector: str = "MirrorSourceConnector") -> list[tuple[str, str]]:
        """(state, worker id) of each task of ``connector`` of A->B."""
        try:
            response = httpx.get(f"{self.url}/{SOURCE}/{TARGET}/connectors/{connector}/status", timeout=10)
        except httpx.HTTPError:
            return []
        if response.status_code != 200:
            return []
        return [(t["state"], t["worker_id"]) for t in sorted(response.json().get("tasks", []), key=lambda t: t["id"])]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        stop_child(self.proc, 60)


def wait(condition: Callable[[], object], timeout_s: float, what: str, *, alive: Callable[[], bool] | None = None,
         log: Node | None = None, every_s: float = 0.25) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        if alive is not None and not alive():
            raise SystemExit(f"the node exited before {what}:\n{log.text()[-3000:] if log else ''}")
        time.sleep(every_s)
    raise SystemExit(f"no {what} within {timeout_s:.0f}s" + (f":\n{log.text()[-3000:]}" if log else ""))


def log_times(node: Node, since_ms: float, patterns: Mapping[str, re.Pattern[str]]) -> dict[str, float]:
    """Per name, the wall-clock time (ms) of the first line of ``node``'s log after ``since_ms`` matching it."""
    found: dict[str, float] = {}
    for line in node.text().splitlines():
        match = LOG_TIME.match(line)
        if match is None:
            continue
        at = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000
        if at < since_ms:
            continue
        for name, pattern in patterns.items():
            if name not in found and pattern.search(line):
                found[name] = at
    return found


# -- reading B ---------------------------------------------------------------------------------------------
class Tail:
    """Reads partition 0 of ``topic`` from its beginning on a thread, handing each record to ``handle``."""

    def __init__(self, bootstrap: str, topic: str, handle: Callable[[Any, float], None]) -> None:
        self.topic = topic
        self._handle = handle
        self._bootstrap = bootstrap
        self._stop = threading.Event()
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"tail-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self._bootstrap, "group.id": unique("bench-tail"),
                             "enable.auto.commit": False, "fetch.wait.max.ms": 20,
                             "allow.auto.create.topics": False})
        try:
            while not self._stop.is_set():
                topic = consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
                if topic is not None and topic.error is None and 0 in topic.partitions:
                    break
                self._stop.wait(0.5)
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            while not self._stop.is_set():
                for message in consumer.consume(1000, 0.1):
                    if message.error() is None:
                        at = now_ms()
                        with self.lock:
                            self._handle(message, at)
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


class Copies:
    """Where each record of A's topic landed on B, from a :class:`tests.support.chaos.Checker`'s arrivals."""

    def __init__(self, checker: Any) -> None:
        self._checker = checker
        self._read = 0
        self.newest: dict[int, dict[int, int]] = {}  # partition -> sequence -> offset of its newest copy
        self.first_arrival: dict[tuple[int, int], float] = {}  # (partition, sequence) -> ms

    def refresh(self) -> None:
        arrivals = self._checker.snapshot()
        for arrival in arrivals[self._read:]:
            offsets = self.newest.setdefault(arrival.partition, {})
            offsets[arrival.sequence] = max(offsets.get(arrival.sequence, -1), arrival.offset)
            self.first_arrival.setdefault((arrival.partition, arrival.sequence), arrival.arrived_ms)
        self._read = len(arrivals)

    def downstream(self, partition: int, upstream: int) -> int | None:
        """The exact position on B for a group at ``upstream`` on A (docs/failover.md's rule), None while
        the record before it has not arrived. Upstream offset = sequence: one idempotent producer, no
        transactions, a fresh topic."""
        offsets = self.newest.get(partition, {})
        if upstream > 0 and upstream - 1 not in offsets:
            return None
        later = [o for s, o in offsets.items() if s >= upstream]
        if later:
            return min(later)
        return max(offsets.values(), default=-1) + 1

    def upstream(self, partition: int, downstream: int) -> int:
        """The exact position on A for a consumer at ``downstream`` on B: the lowest record none of whose
        copies lies below it."""
        read: set[int] = set()
        copies: dict[int, list[int]] = {}
        for sequence, offset in self.newest.get(partition, {}).items():
            copies.setdefault(sequence, []).append(offset)
        for arrival in self._checker.snapshot():
            if arrival.partition == partition and arrival.offset < downstream:
                read.add(arrival.sequence)
        unread = [s for s in copies if s not in read]
        return min(unread) if unread else max(copies, default=-1) + 1

    def arrived_at(self, partition: int, sequence: int) -> float | None:
        return self.first_arrival.get((partition, sequence))

    def flowing(self, partitions: int) -> bool:
        """Records of every partition arrived."""
        self.refresh()
        return all(self.end(p) > 0 for p in range(partitions))

    def end(self, partition: int) -> int:
        """One past the highest offset seen on B's partition."""
        return max(self.newest.get(partition, {}).values(), default=-1) + 1


def source_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("bench-ends"),
                         "enable.auto.commit": False})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def commit(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> None:
    from tests.support.kafka import commit_group_offsets

    commit_group_offsets(bootstrap, group, {(topic, p): max(0, o) for p, o in offsets.items()})


@contextmanager
def clusters() -> Iterator[tuple[str, str]]:
    with local_brokers(("bench-a", "bench-b")) as (source, target):
        yield source, target


def code_label(code: Path | None) -> str:
    return "current" if code is None else f"code {code}"


# -- translate -----------------------------------------------------------------------------------------------
class TranslateWatch:
    """What B shows of each pending group: the offset map, its checkpoints and its offsets on B."""

    def __init__(self, source: str, target: str, topic: str) -> None:
        from mirror.client.offset_map import OffsetMap

        self.source, self.target, self.topic, self.remote = source, target, topic, f"{SOURCE}.{topic}"
        self.offset_map = OffsetMap()
        self.checkpoints: dict[tuple[str, int], tuple[int, float]] = {}  # (group, partition) -> (downstream, at)
        self.tails = [Tail(target, f"mm2-offset-map.{SOURCE}.internal", self._map_record),
                      Tail(target, f"{SOURCE}.checkpoints.internal", self._checkpoint_record)]
        self.admin = admin(target)

    def _map_record(self, message: Any, _at: float) -> None:
        self.offset_map.add_record(message.key(), message.value())

    def _checkpoint_record(self, message: Any, at: float) -> None:
        from mirror.client.models import Checkpoint, MalformedRecordError

        try:
            cp = Checkpoint.from_record(message.key(), message.value())
        except MalformedRecordError:
            return
        if cp.topic == self.remote:
            self.checkpoints[(cp.consumer_group_id, cp.partition)] = (cp.downstream_offset, at)

    def step(self, pending: dict[str, dict[str, Any]], copies: Copies) -> list[dict[str, Any]]:
        """One poll: each step a pending group reached now; returns the rows of the groups done."""
        from mirror.client.translation import OffsetTranslator, committed_offsets

        copies.refresh()
        translator = OffsetTranslator({"bootstrap.servers": self.target}, SOURCE,
                                      offset_syncs_config={"bootstrap.servers": self.source},
                                      offset_syncs_topic=f"mm2-offset-syncs.{TARGET}.internal", timeout_s=30)
        answers = translator.groups_to_target(list(pending), {"bootstrap.servers": self.source})
        answered = now_ms()
        done = []
        for group, row in list(pending.items()):
            position: dict[int, int] = row["position"]
            truth = {p: copies.downstream(p, g) for p, g in position.items()}
            if any(t is None for t in truth.values()):
                continue  # the records the group read have not all arrived yet
            row.setdefault("arrived", max([row["committed"], *(
                copies.arrived_at(p, g - 1) or 0.0 for p, g in position.items() if g > 0)]))
            with self.tails[0].lock:
                if "map" not in row and all(self.offset_map.downstream((self.topic, p), g) == truth[p]
                                            for p, g in position.items()):
                    row["map"] = now_ms()
            moves = answers.get(group, {})
            if "exact" not in row and all((t := moves.get((self.remote, p))) is not None
                                          and t.basis == "offset-map" and t.downstream == truth[p] for p in position):
                row["exact"] = answered
            with self.tails[1].lock:
                found = {p: self.checkpoints.get((group, p)) for p in position}
            if "checkpoint" not in row and all(f is not None and f[0] == truth[p] for p, f in found.items()):
                row["checkpoint"] = max(f[1] for f in found.values() if f is not None)
            if "synced" not in row:
                on_b = committed_offsets(self.admin, group, None, 10)
                if all(on_b.get((self.remote, p)) == truth[p] for p in position):
                    row["synced"] = now_ms()
            if all(k in row for k in ("map", "exact", "checkpoint", "synced")):
                pending.pop(group)
                done.append(translate_row(group, row))
        return done

    def stop(self) -> None:
        for tail in self.tails:
            tail.stop()


def translate_scenario(workdir: Path, trials: int, code: Path | None) -> dict[str, Any]:
    from tests.support.chaos import Checker, LoadGenerator

    result: dict[str, Any] = {"scenario": "translate", "code": code_label(code), "load_start": load_average(),
                              "rows": []}
    with clusters() as (source, target):
        topic = unique("orders")
        create_topic(source, topic, PARTITIONS)
        kinds = {"end": 0, f"lag{LAG}": LAG}
        groups = {(k, kind): f"{topic}-t{k}-{kind}" for k in range(trials) for kind in kinds}
        for group in groups.values():  # known to the checkpoint connector from its start
            commit(source, group, topic, dict.fromkeys(range(PARTITIONS), 0))
        properties = default_file(workdir / "mm2.properties", source, target, ["sync.group.offsets.enabled = true"])
        node = Node(properties, workdir / "node.log", code)
        checker = Checker(target, f"{SOURCE}.{topic}", PARTITIONS).start()
        load = LoadGenerator(source, topic, PARTITIONS, RATE, track_sent=False)
        watch = TranslateWatch(source, target, topic)
        try:
            node.wait_running()
            load.start()
            copies = Copies(checker)
            wait(lambda: copies.flowing(PARTITIONS), 120, "records of every partition on B", alive=node.alive,
                 log=node)
            time.sleep(5)  # deliberate: the flow past its start
            pending: dict[str, dict[str, Any]] = {}
            next_trial, trial = time.monotonic(), 0
            deadline = time.monotonic() + trials * TRIAL_SPACING_S + 400
            while (trial < trials or pending) and time.monotonic() < deadline:
                if trial < trials and time.monotonic() >= next_trial:
                    ends = source_ends(source, topic, PARTITIONS)
                    for kind, lag in kinds.items():
                        position = {p: max(0, e - lag) for p, e in ends.items()}
                        commit(source, groups[(trial, kind)], topic, position)
                        pending[groups[(trial, kind)]] = {"trial": trial, "kind": kind, "position": position,
                                                          "committed": now_ms()}
                    trial += 1
                    next_trial += TRIAL_SPACING_S
                for row in watch.step(pending, copies):
                    result["rows"].append(row)
                    print(json.dumps(row), flush=True)
                time.sleep(POLL_S)
            for group, row in pending.items():
                record = {**translate_row(group, row), "unfinished": True}
                result["rows"].append(record)
                print(json.dumps(record), flush=True)
        finally:
            watch.stop()
            load.stop()
            checker.stop()
            node.stop()
    result["load_end"] = load_average()
    return result


def translate_row(group: str, row: Mapping[str, Any]) -> dict[str, Any]:
    start = row.get("arrived", row["committed"])
    record: dict[str, Any] = {"group": group, "trial": row["trial"], "kind": row["kind"],
                              "records_arrived_after_commit_s": round((start - row["committed"]) / 1000, 2)}
    for step in ("map", "exact", "checkpoint", "synced"):
        record[f"{step}_s"] = None if step not in row else round((row[step] - start) / 1000, 2)
    return record


# -- cutover ---------------------------------------------------------------------------------------------------
def mirror_command(args: list[str], code: Path | None, log: Path) -> tuple[dict[str, Any], float, float, int]:
    """Run ``mirror <args> --json`` (its log lines to ``log``); (its JSON report, start ms, exit ms, exit code)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    began = now_ms()
    with log.open("wb") as err:
        done = subprocess.run([sys.executable, "-m", "mirror.cli", *args, "--json"], stdout=subprocess.PIPE,
                              stderr=err, env=env, cwd=None if code is None else str(code), timeout=600, check=False)
    ended = now_ms()
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {}
    return report, began, ended, done.returncode


def cutover_scenario(workdir: Path, trials: int, code: Path | None, load_s: float) -> dict[str, Any]:
    result: dict[str, Any] = {"scenario": "cutover", "code": code_label(code), "load_start": load_average(),
                              "rows": []}
    with clusters() as (source, target):
        topics = [unique(f"cut{k}") for k in range(trials)]
        for topic in topics:
            create_topic(source, topic, PARTITIONS)
            for kind in CUTOVER_LAGS:
                commit(source, f"{topic}-{kind}", topic, dict.fromkeys(range(PARTITIONS), 0))
        properties = default_file(workdir / "mm2.properties", source, target)
        node = Node(properties, workdir / "node.log", code)
        try:
            node.wait_running()
            for k, topic in enumerate(topics):
                for row in cutover_trial(k, topic, source, target, properties, node, code, workdir, load_s):
                    result["rows"].append(row)
                    print(json.dumps(row), flush=True)
        finally:
            node.stop()
    result["load_end"] = load_average()
    return result


#: The two groups of a cutover trial, by how many records per partition they lag behind the end.
CUTOVER_LAGS = {"lag10": 10, "lag100": 100}


def cutover_trial(k: int, topic: str, source: str, target: str, properties: Path, node: Node, code: Path | None,
                  workdir: Path, load_s: float) -> list[dict[str, Any]]:
    """One failover of two lagging groups after the load stopped, then their failback; the two rows."""
    from tests.support.chaos import Checker, LoadGenerator

    remote = f"{SOURCE}.{topic}"
    checker = Checker(target, remote, PARTITIONS).start()
    load = LoadGenerator(source, topic, PARTITIONS, RATE, track_sent=False).start()
    copies = Copies(checker)
    rows = []
    try:
        wait(lambda: copies.flowing(PARTITIONS), 120, "records of every partition on B", alive=node.alive, log=node)
        time.sleep(load_s)
        ends = source_ends(source, topic, PARTITIONS)
        groups = {f"{topic}-{kind}": {p: max(0, e - lag) for p, e in ends.items()}
                  for kind, lag in CUTOVER_LAGS.items()}
        for group, position in groups.items():
            commit(source, group, topic, position)
        load.stop()
        stopped = now_ms()
        group_args = [a for g in groups for a in ("--group", g)]
        report, began, ended, exit_code = mirror_command(
            ["failover", str(properties), "--source", SOURCE, "--target", TARGET, *group_args, "--execute"], code,
            workdir / f"failover-{k}.log")
        acked = load.acked_snapshot()
        wait(lambda: checker.has_all(acked), 120, "every record on B")
        copies.refresh()
        drained = max(copies.arrived_at(p, max(s)) or 0.0 for p, s in acked.items() if len(s))
        moved = report.get("groups", [])
        rows.append({"trial": k, "direction": "failover", "exit_code": exit_code,
                     "exact": bool(moved) and all(
                         row["basis"] == "offset-map"
                         and row["to"] == copies.downstream(row["partition"], groups[g["group"]][row["partition"]])
                         for g in moved for row in g["partitions"]),
                     "written": bool(moved) and all(g.get("written") for g in moved),
                     "reported_s": report.get("seconds"),
                     "reported": {key: v for key, v in report.items()
                                  if key not in ("groups", "unreplicated", "notes")},
                     "after_drain_s": round((ended - drained) / 1000, 2),
                     "drained_after_stop_s": round((drained - stopped) / 1000, 2),
                     "command_s": round((ended - began) / 1000, 2)})
        # the consumers ran on B: each group 5 records behind B's end, then they fail back
        back = {g: {p: max(0, copies.end(p) - 5) for p in range(PARTITIONS)} for g in groups}
        for group, position in back.items():
            commit(target, group, remote, position)
        committed = now_ms()
        report, began, ended, exit_code = mirror_command(
            ["failback", str(properties), "--source", SOURCE, "--target", TARGET, *group_args, "--execute"], code,
            workdir / f"failback-{k}.log")
        moved = report.get("groups", [])
        rows.append({"trial": k, "direction": "failback", "exit_code": exit_code,
                     "exact": bool(moved) and all(
                         row["basis"] == "offset-map"
                         and row["to"] == copies.upstream(row["partition"], back[g["group"]][row["partition"]])
                         for g in moved for row in g["partitions"]),
                     "written": bool(moved) and all(g.get("written") for g in moved),
                     "reported_s": report.get("seconds"),
                     "after_commit_s": round((ended - committed) / 1000, 2),
                     "command_s": round((ended - began) / 1000, 2)})
    finally:
        if not load._stop.is_set():
            load.stop()
        checker.stop()
    return rows


# -- node loss --------------------------------------------------------------------------------------------------
#: The survivor's log lines of a takeover, in order (the first match after the kill): its heartbeat is
#: answered "rebalancing" (the coordinator expired the dead node's session), the new assignment, the task's
#: start and its consumer assigned.
TIMELINE = {
    "rebalance noticed": re.compile(r"Group A-mm2 is rebalancing"),
    "assignment": re.compile(r"Group A-mm2 generation \d+"),
    "task starting": re.compile(r"Starting task MirrorSourceConnector-0"),
    "task consuming": re.compile(r"replicating \d+ topic-partitions A->B"),
    "task started": re.compile(r"MirrorSourceConnector-0 started"),
}
#: offset.flush.interval.ms + offset.flush.timeout.ms, the defaults: the most a crashed task's stored
#: offsets can lag behind what it copied (the duplicates' bound is this times the rate).
FLUSH_WINDOW_S = 65.0


def node_loss_scenario(workdir: Path, kills: int, code: Path | None, before_kill_s: float) -> dict[str, Any]:
    from tests.support.chaos import Checker, LoadGenerator, analyse

    result: dict[str, Any] = {"scenario": "node-loss", "code": code_label(code), "load_start": load_average(),
                              "rows": []}
    with clusters() as (source, target):
        topic = unique("seq")
        create_topic(source, topic, LOSS_PARTITIONS)
        properties = default_file(workdir / "mm2.properties", source, target)
        nodes = [Node(properties, workdir / f"node{i}-0.log", code) for i in range(2)]
        checker = Checker(target, f"{SOURCE}.{topic}", LOSS_PARTITIONS).start()
        load = LoadGenerator(source, topic, LOSS_PARTITIONS, LOSS_RATE)
        kill_times: list[float] = []
        try:
            for node in nodes:
                node.wait_running()
            load.start()
            for kill in range(kills):
                settled(nodes)
                time.sleep(before_kill_s)  # the task copies, commits its offsets; a restarted node takes its share
                holder = settled(nodes)
                victim = next(n for n in nodes if holder.endswith(f":{n.port}"))
                survivor = next(n for n in nodes if n is not victim)
                task_age_s = (now_ms() - last_start(victim)) / 1000
                killed = now_ms()
                victim.kill()
                kill_times.append(killed)
                flowing_since = wait_flowing(checker, LOSS_PARTITIONS, 180)
                stalls = {}
                for partition, arrivals in arrivals_since(checker, killed).items():
                    window = [a for a in arrivals if a.sent_ms < flowing_since]
                    stalls[partition] = round(max((a.arrived_ms - a.sent_ms for a in window), default=0.0) / 1000, 2)
                marks = log_times(survivor, killed, TIMELINE)
                consuming = marks.get("task consuming", float("inf"))
                first = min((a.arrived_ms for a in checker.snapshot() if a.arrived_ms > consuming), default=None)
                if first is not None:
                    marks["first record"] = first
                row = {"kill": kill, "stall_max_s": max(stalls.values()), "stall_per_partition_s": stalls,
                       "task_age_s": round(task_age_s, 1),
                       "duplicate_bound": int(LOSS_RATE * min(task_age_s, FLUSH_WINDOW_S)),
                       "timeline_s": {k: round((v - killed) / 1000, 2)
                                      for k, v in sorted(marks.items(), key=lambda i: i[1])}}
                result["rows"].append(row)
                index = nodes.index(victim)
                nodes[index] = Node(properties, workdir / f"node{index}-{kill + 1}.log", code)
                nodes[index].wait_running()
            time.sleep(2)  # deliberate: records sent after the last restart are checked too
            load.stop()
            acked = load.acked
            wait(lambda: checker.has_all(acked), 180, "every acknowledged record on B")
            report = analyse("node loss", acked, checker.snapshot())
            duplicates = checker.duplicate_arrivals_ms()
            for row, began in zip(result["rows"], kill_times, strict=True):
                later = [k for k in kill_times if k > began]
                row["duplicated"] = sum(1 for d in duplicates if began <= d < (later[0] if later else float("inf")))
                print(json.dumps(row), flush=True)
            result["lost"] = report.lost
            result["duplicated"] = report.duplicated
            print(report.table(), flush=True)
        finally:
            if not load._stop.is_set():
                load.stop()
            checker.stop()
            for node in nodes:
                node.stop()
    result["load_end"] = load_average()
    return result


def last_start(node: Node) -> float:
    """When ``node`` last started the A->B source task (ms; now if it never did)."""
    starts = [m for line in node.text().splitlines()
              if "MirrorSourceConnector-0 started" in line and (m := LOG_TIME.match(line)) is not None]
    if not starts:
        return now_ms()
    return datetime.datetime.strptime(starts[-1].group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000


def settled(nodes: list[Node], timeout_s: float = 180.0) -> str:
    """Wait until the A->B source task runs on a live node; its worker id."""
    found: list[str] = []

    def running() -> bool:
        live = [n for n in nodes if n.alive()]
        for node in live:
            tasks = node.task_workers()
            if tasks and all(state == "RUNNING" for state, _ in tasks):
                workers = [w for _, w in tasks]
                if any(w.endswith(f":{n.port}") for w in workers for n in live):
                    found[:] = workers
                    return True
        return False

    wait(running, timeout_s, "the A->B source task running")
    return found[0]


def arrivals_since(checker: Any, since_ms: float) -> dict[int, list[Any]]:
    seen: set[tuple[int, int]] = set()
    found: dict[int, list[Any]] = {}
    for arrival in checker.snapshot():
        if arrival.sent_ms >= since_ms and (arrival.partition, arrival.sequence) not in seen:
            seen.add((arrival.partition, arrival.sequence))
            found.setdefault(arrival.partition, []).append(arrival)
    return found


def wait_flowing(checker: Any, partitions: int, timeout_s: float) -> float:
    """Wait until a record sent from now on arrived on every partition; returns "now" (ms)."""
    since = now_ms()
    wait(lambda: len(arrivals_since(checker, since)) == partitions, timeout_s, "every partition flowing")
    return since


# -- steady ------------------------------------------------------------------------------------------------------
def steady_scenario(workdir: Path, code: Path | None, rate: float, warmup_s: float, window_s: float) -> dict[str, Any]:
    from tests.support.chaos import LoadGenerator

    partitions = 8
    result: dict[str, Any] = {"scenario": "steady", "code": code_label(code), "rate": rate,
                              "load_start": load_average()}
    with clusters() as (source, target):
        topic = unique("steady")
        create_topic(source, topic, partitions)
        groups = [f"{topic}-g{i}" for i in range(5)]
        for group in groups:
            commit(source, group, topic, dict.fromkeys(range(partitions), 0))
        properties = default_file(workdir / "mm2.properties", source, target)
        node = Node(properties, workdir / "node.log", code)
        load = LoadGenerator(source, topic, partitions, rate, track_sent=False)
        stop = threading.Event()

        def keep_up() -> None:  # one group is a consumer that keeps up, committing every 5 s
            while not stop.wait(5):
                commit(source, groups[0], topic, source_ends(source, topic, partitions))

        mover = threading.Thread(target=keep_up, daemon=True)
        try:
            node.wait_running()
            load.start()
            mover.start()
            time.sleep(warmup_s)
            counts = [(f"{SOURCE}.{topic}", target, partitions),
                      (f"mm2-offset-map.{SOURCE}.internal", target, 1),
                      (f"{SOURCE}.checkpoints.internal", target, 1),
                      (f"mm2-offset-syncs.{TARGET}.internal", source, 1)]
            before = [sum(source_ends(b, t, n).values()) for t, b, n in counts]
            cpu_before, began = cpu_seconds(node.proc.pid), time.monotonic()
            time.sleep(window_s)
            cpu_after, ended = cpu_seconds(node.proc.pid), time.monotonic()
            after = [sum(source_ends(b, t, n).values()) for t, b, n in counts]
            seconds = ended - began
            records, map_records, checkpoints, syncs = (a - b for a, b in zip(after, before, strict=True))
            cpu = cpu_after - cpu_before
            result.update({"seconds": round(seconds, 1), "records_per_s": round(records / seconds, 1),
                           "cpu_per_s": round(cpu / seconds, 4),
                           "cpu_us_per_record": round(cpu / max(records, 1) * 1e6, 1),
                           "map_records_per_s": round(map_records / seconds, 2),
                           "checkpoints_per_s": round(checkpoints / seconds, 2),
                           "offset_syncs_per_s": round(syncs / seconds, 2)})
        finally:
            stop.set()
            load.stop()
            node.stop()
    result["load_end"] = load_average()
    print(json.dumps(result), flush=True)
    return result


# -- tables ------------------------------------------------------------------------------------------------
def tables(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """One markdown table per scenario run, rows per code (each cell: the median, with min-max)."""
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for res in results:
        by_scenario.setdefault(res["scenario"], []).append(res)
    out = []
    for scenario, runs in by_scenario.items():
        codes = sorted({r["code"] for r in runs}, key=lambda c: c != "current")[::-1]  # the base first
        loads = "; ".join(f"{r['code']}: {r['load_start']} -> {r['load_end']}" for r in runs)
        if scenario == "translate":
            head = ["group", "code", "trials", "offset map on B (s)", "mirror offsets translate exact (s)",
                    "checkpoint exact (s)", "group synced on B (s)", "synced minus sync.group.offsets.interval (s)"]
            rows = []
            for kind in sorted({row["kind"] for r in runs for row in r["rows"]}):
                for code in codes:
                    mine = [row for r in runs if r["code"] == code for row in r["rows"] if row["kind"] == kind]
                    steps = [_cell([row[f"{step}_s"] for row in mine]) for step in ("map", "exact", "checkpoint")]
                    synced = [row["synced_s"] for row in mine]
                    rows.append([kind, code, str(len(mine)), *steps, _cell(synced),
                                 _cell([None if v is None else v - SYNC_INTERVAL_S for v in synced])])
            title = "failover timing: translate (from a group's records' arrival on B)"
        elif scenario == "cutover":
            head = ["command", "code", "trials", "exit after the lag drained / the groups stopped on B (s)",
                    "reported by the command (s)", "exact"]
            rows = []
            for direction, key in (("mirror failover --execute", "after_drain_s"),
                                   ("mirror failback --execute", "after_commit_s")):
                for code in codes:
                    mine = [row for r in runs if r["code"] == code for row in r["rows"]
                            if direction.split()[1] == row["direction"]]
                    rows.append([direction, code, str(len(mine)), _cell([row[key] for row in mine]),
                                 _cell([row["reported_s"] for row in mine]),
                                 f"{sum(bool(row['exact'] and row['written']) for row in mine)}/{len(mine)}"])
            title = "failover timing: planned cutover and failback"
        elif scenario == "node-loss":
            head = ["code", "kills", "longest stall (s)", "rebalance noticed (s)", "task consuming (s)",
                    "first record (s)", "lost", "duplicated (bound)"]
            rows = []
            for code in codes:
                mine = [r for r in runs if r["code"] == code]
                kills = [row for r in mine for row in r["rows"]]
                rows.append([code, str(len(kills)), _cell([row["stall_max_s"] for row in kills]),
                             *(_cell([row["timeline_s"].get(mark) for row in kills])
                               for mark in ("rebalance noticed", "task consuming", "first record")),
                             str(sum(r.get("lost", 0) for r in mine)),
                             f"{sum(row.get('duplicated', 0) for row in kills):,} "
                             f"({sum(row['duplicate_bound'] for row in kills):,})"])
            title = "failover timing: kill -9 of the node running the source task (two nodes)"
        else:
            head = ["code", "rounds", "records/s", "CPU per record (us)", "CPU s per s", "offset map records/s",
                    "checkpoints/s", "offset syncs/s"]
            rows = []
            for code in codes:
                mine = [r for r in runs if r["code"] == code]
                rows.append([code, str(len(mine)), *(_cell([r.get(k) for r in mine], "") for k in (
                    "records_per_s", "cpu_us_per_record", "cpu_per_s", "map_records_per_s", "checkpoints_per_s",
                    "offset_syncs_per_s"))])
            title = f"failover timing: steady cost at {runs[0]['rate']:g} records/s"
        body = "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                          *("| " + " | ".join(row) + " |" for row in rows), "", f"Load averages: {loads}."])
        out.append((title, body))
    return out


#: sync.group.offsets.interval.seconds, MM2's default (the translate scenario does not change it).
SYNC_INTERVAL_S = 60.0


def _cell(values: list[float | None], unit: str = "") -> str:
    found = [v for v in values if v is not None]
    if not found:
        return "-"
    missing = f", {len(values) - len(found)} not reached" if len(found) < len(values) else ""
    if len(found) == 1:
        return f"{_number(found[0])}{unit}{missing}"
    return (f"{_number(statistics.median(found))}{unit} ({_number(min(found))}-{_number(max(found))}"
            f"{missing})")


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def record_run(args: argparse.Namespace, sections: list[tuple[str, str]], facts: dict[str, str],
               start: datetime.datetime, began: float) -> None:
    command = "python bench/failover_timing.py " + " ".join(sys.argv[1:])
    heading, text = recording.section(command, args.title or "failover timing", kafka_brokers.label(),
                                      "bench/failover_timing.py", facts, sections, start, began)
    recording.keep(heading, text, args.output)

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default=",".join(SCENARIOS))
    parser.add_argument("--trials", type=int, default=5, help="translate and cutover trials, node-loss kills")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every scenario (interleaved with --compare-code)")
    parser.add_argument("--compare-code", type=Path, metavar="DIR", help="also run on the code in DIR (before)")
    parser.add_argument("--broker", default="kafka", choices=kafka_brokers.BROKERS)
    parser.add_argument("--rate", type=float, default=2000.0, help="steady: records/s")
    parser.add_argument("--warmup", type=float, default=30.0, help="steady: seconds before the window")
    parser.add_argument("--window", type=float, default=120.0,
                        help="steady: seconds measured (a multiple of the 60 s intervals)")
    parser.add_argument("--load-s", type=float, default=15.0, help="cutover: seconds of load before the groups commit")
    parser.add_argument("--before-kill", type=float, default=75.0, help="node-loss: seconds of load before each kill")
    parser.add_argument("--json", type=Path, help="also write every result to this file")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the nodes' and commands' logs in DIR")
    parser.add_argument("--record", action="store_true", help="record the tables in bench/results.md")
    parser.add_argument("--output", type=Path, help="write the recorded section to this file instead")
    parser.add_argument("--title", help="the recorded section's heading after its date")
    args = parser.parse_args(argv)
    scenarios = [s.strip() for s in args.scenario.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise SystemExit(f"--scenario {','.join(unknown)}: unknown; choose from {', '.join(SCENARIOS)}")
    kafka_brokers.select(args.broker)
    rule, loads = recording.at_start()
    facts = {**machine_facts(), **rule.rows(loads)}
    start, began = datetime.datetime.now(datetime.UTC), time.monotonic()
    codes: list[Path | None] = [args.compare_code.resolve(), None] if args.compare_code else [None]
    results: list[dict[str, Any]] = []
    print(f"load average at start {load_average()}; broker {kafka_brokers.label()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-failover-timing-") as scratch:
        tmp = args.keep or Path(scratch)
        for round_ in range(args.rounds):
            for scenario in scenarios:
                for code in codes:
                    workdir = Path(tmp) / f"{round_}-{scenario}-{'base' if code else 'current'}"
                    workdir.mkdir(parents=True)
                    if scenario == "translate":
                        results.append(translate_scenario(workdir, args.trials, code))
                    elif scenario == "cutover":
                        results.append(cutover_scenario(workdir, args.trials, code, args.load_s))
                    elif scenario == "node-loss":
                        results.append(node_loss_scenario(workdir, args.trials, code, args.before_kill))
                    else:
                        results.append(steady_scenario(workdir, code, args.rate, args.warmup, args.window))
                    if args.json:
                        args.json.write_text(json.dumps(results, indent=1))
    sections = tables(results)
    for title, body in sections:
        print(f"\n{title}\n\n{body}")
    if args.record or args.output is not None:
        record_run(args, sections, facts, start, began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
