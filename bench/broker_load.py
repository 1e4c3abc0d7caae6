"""What a copy asks of the Kafka brokers: their CPU by broker and thread, and the requests by client and API.

Why: on two shared cores the brokers' CPU is taken from the copier, and bench/throughput.py's total per
record says *that* one copier makes the brokers work harder than another, not *where*. Three views of
the benchmark's own broker JVMs (:data:`bench.kafka_brokers.RUNNING`), between the first and the last
record of a copy:

* **CPU by broker and thread** (every Kafka run): ``/proc/<pid>/task`` of each broker, each thread by the
  JVM's own name (``jcmd <pid> Thread.print``: Linux keeps 15 characters of a thread's name, and Kafka's
  request handlers and network threads all begin ``data-plane-kafk``); the threads of one pool are counted
  together (``data-plane-kafka-request-handler-*``). The kernel's share of each broker (system time) too:
  appends and socket writes are system time, not the JVM's.
* **Requests** (``--request-log``): the brokers log every completed request (``kafka.request.logger`` at
  DEBUG, :data:`bench.kafka_brokers.LOG_REQUESTS`), and :func:`requests_between` counts them per broker,
  client (the random parts of client ids folded, so that one role of every run counts together) and API,
  with the partitions that carried records and the record bytes: a produce request's own, a fetch's in its
  response. Logging every request costs the brokers CPU: a run that counts requests has no clean CPU
  figures, so it is a run of its own.
* **perf** (``--profile-brokers``, with ``--profile-format perf``): ``perf record`` of each broker JVM while
  it copies, and ``jcmd <pid> Compiler.perfmap`` after, which writes ``/tmp/perf-<pid>.map`` so that
  ``perf report`` names the JIT-compiled Java methods.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import DEVNULL, Popen
from typing import Any

from bench import kafka_brokers, thread_cpu

_TICKS = os.sysconf("SC_CLK_TCK")
#: ``stime`` in ``/proc/<pid>/stat`` after the command name.
_SYSTEM_FIELD = 12
#: ``"name" #12 daemon prio=5 ... nid=0x3039 runnable`` (JVM threads) or ``"GC Thread#0" os_prio=0 ... nid=0x..``.
_JCMD_THREAD = re.compile(r'^"(.+)" .*\bnid=(0x[0-9a-f]+|\d+)\b', re.MULTILINE)
#: Pool members (``-3``, ``#1``) count as one pool; ``C2``/``G1`` are names, not members.
_MEMBER = re.compile(r"(?<![CG])\d+")
#: Random parts of client ids (aliases, uuids): the requests of one role of every run count together.
_RANDOM = re.compile(r"[0-9a-f]{6,}|A[0-9a-f]{5}")
#: A topic id (base64 of 16 bytes), where a request names its topics by id.
_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_COMPLETED = "Completed request:"
_LOGGER_SUFFIX = " (kafka.request.logger)"

#: Per broker JVM: the JVM's name of each thread (tid -> name), read once and kept while it names them all.
_NAMES: dict[int, dict[int, str]] = {}


def label(name: str) -> str:
    """How a table names a broker: ``bench-a`` -> ``A``."""
    return name.rsplit("-", 1)[-1].upper()


@dataclass
class Sample:
    """One broker at one moment: its threads' CPU, its system time, the size of its log."""

    name: str
    threads: thread_cpu.Snapshot
    system_s: float
    log: Path
    log_size: int


def sample() -> dict[int, Sample]:
    """Every running benchmark broker now (none on Tansu)."""
    samples: dict[int, Sample] = {}
    for pid, (name, log) in list(kafka_brokers.RUNNING.items()):
        try:
            threads = thread_cpu.snapshot(pid)
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            size = log.stat().st_size if log.exists() else 0
        except OSError:
            continue  # stopped meanwhile
        samples[pid] = Sample(name, threads, int(fields[_SYSTEM_FIELD]) / _TICKS, log, size)
    return samples


def java_thread_names(pid: int) -> dict[int, str]:
    """tid -> the JVM's name of the thread (``jcmd <pid> Thread.print``); empty when jcmd cannot attach."""
    exe = shutil.which("jcmd")
    if exe is None:
        return {}
    try:
        out = subprocess.run([exe, str(pid), "Thread.print"], capture_output=True, text=True, timeout=60,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(nid, 0): name for name, nid in _JCMD_THREAD.findall(out)}  # hex until JDK 19, decimal since


def _names(pid: int, tids: set[int]) -> dict[int, str]:
    """The JVM's thread names of ``pid``, asked again only when a thread is not named yet."""
    known = _NAMES.get(pid, {})
    if not tids <= known.keys():
        known = _NAMES[pid] = {**known, **java_thread_names(pid)}
    return known


def pool(name: str) -> str:
    """The pool a thread belongs to: ``data-plane-kafka-request-handler-3`` -> ``...-handler-*``."""
    return _MEMBER.sub("*", name)


def cpu_since(before: Mapping[int, Sample], after: Mapping[int, Sample]) -> tuple[dict[str, float], dict[str, float]]:
    """CPU seconds between two samples: per ``"<broker> <thread pool>"`` (largest first), and per broker
    its total and ``"<broker> system"`` (the kernel's share). Threads only seen in ``after`` count whole."""
    threads: dict[str, float] = {}
    totals: dict[str, float] = {}
    for pid, now in after.items():
        then = before.get(pid)
        if then is None:
            continue
        broker = label(now.name)
        spent_by_tid = {tid: cpu - then.threads.get(tid, (name, 0.0))[1] for tid, (name, cpu) in now.threads.items()}
        busy = {tid for tid, spent in spent_by_tid.items() if spent > 0}
        names = _names(pid, busy)
        for tid in busy:
            key = f"{broker} {pool(names.get(tid, now.threads[tid][0]))}"
            threads[key] = threads.get(key, 0.0) + spent_by_tid[tid]
        totals[broker] = totals.get(broker, 0.0) + sum(spent_by_tid[tid] for tid in busy)
        totals[f"{broker} system"] = totals.get(f"{broker} system", 0.0) + now.system_s - then.system_s
    ordered = dict(sorted(((k, round(v, 3)) for k, v in threads.items()), key=lambda item: -item[1]))
    return ordered, {k: round(v, 3) for k, v in totals.items()}


def idle(seconds: float) -> tuple[dict[str, float], dict[str, float]]:
    """:func:`cpu_since` over ``seconds`` from now (the brokers' own work with no copier running)."""
    before = sample()
    time.sleep(seconds)
    return cpu_since(before, sample())


# -- requests -------------------------------------------------------------------------------------------
@dataclass
class Requests:
    """Requests of one (broker, client, API): how many, the partitions that carried records, their bytes."""

    requests: int = 0
    partitions: int = 0
    record_bytes: int = 0

    def add(self, partitions: int, record_bytes: int) -> None:
        self.requests += 1
        self.partitions += partitions
        self.record_bytes += record_bytes


@dataclass
class RequestLog:
    """The requests the brokers completed, per ``"<broker> <API> <topics> <client>"``."""

    by_key: dict[str, Requests] = field(default_factory=dict)

    def add(self, key: str, partitions: int, record_bytes: int) -> None:
        self.by_key.setdefault(key, Requests()).add(partitions, record_bytes)

    def as_rows(self) -> dict[str, list[int]]:
        """``key -> [requests, partitions with records, record bytes]`` (JSON-friendly)."""
        return {k: [v.requests, v.partitions, v.record_bytes]
                for k, v in sorted(self.by_key.items(), key=lambda item: -item[1].requests)}


def _records(node: Any, topic: str = "?") -> Iterator[tuple[str, int]]:
    """(topic, size) of every ``recordsSizeInBytes`` in a logged request or response (records are logged by
    size only), the topic being the nearest enclosing ``name``, ``topic`` or ``topicId``."""
    if isinstance(node, dict):
        named = node.get("name") or node.get("topic") or node.get("topicId")
        topic = named if isinstance(named, str) else topic
        for key, value in node.items():
            if key == "recordsSizeInBytes" and isinstance(value, int):
                yield topic, value
            else:
                yield from _records(value, topic)
    elif isinstance(node, list):
        for item in node:
            yield from _records(item, topic)


def parse_line(line: str) -> tuple[str, str, str, int, int] | None:
    """(client, API, topics, partitions with records, record bytes) of one request-log line, None for other
    lines. Produce: the records the request carried; fetch: those its response carried; ``topics``: the
    topics those records were in, comma-separated (``-`` for none)."""
    at = line.find(_COMPLETED)
    if at < 0:
        return None
    text = line[at + len(_COMPLETED):].rstrip()
    if text.endswith(_LOGGER_SUFFIX):
        text = text[:-len(_LOGGER_SUFFIX)]
    try:
        entry = json.loads(text)
    except json.JSONDecodeError:
        return None
    header = entry.get("requestHeader") or {}
    api = str(header.get("requestApiKeyName", "?"))
    body = entry.get("response") if api == "FETCH" else entry.get("request")
    records = [(topic, size) for topic, size in _records(body) if size > 0]
    topics = ",".join(sorted({"(id)" if _TOPIC_ID.fullmatch(topic) else topic for topic, _ in records})) or "-"
    return str(header.get("clientId", "")), api, topics, len(records), sum(size for _, size in records)


def client_role(client: str) -> str:
    """A client id or topic with its random parts folded (``A1b2c3->B|MirrorSourceConnector-0|...`` ->
    ``*->B|...``), so that the same role in every run counts together."""
    return _RANDOM.sub("*", client)


def requests_between(before: Mapping[int, Sample], after: Mapping[int, Sample]) -> RequestLog:
    """The requests each broker logged between two samples (``--request-log``)."""
    log = RequestLog()
    for pid, sampled in before.items():
        if pid not in after or not sampled.log.exists():
            continue
        with sampled.log.open("rb") as handle:
            handle.seek(sampled.log_size)
            text = handle.read(max(0, after[pid].log_size - sampled.log_size)).decode(errors="replace")
        for line in text.splitlines():
            parsed = parse_line(line)
            if parsed is not None:
                client, api, topics, partitions, record_bytes = parsed
                log.add(f"{label(sampled.name)} {api} {client_role(topics)} {client_role(client)}", partitions,
                        record_bytes)
    return log


# -- perf ---------------------------------------------------------------------------------------------
def start_jvm_perf(pid: int, output: Path) -> Popen[bytes]:
    """``perf record`` of one JVM into ``output``, flat: without the JVM's frame pointers a call graph
    through JIT-compiled code is not to be trusted; the samples' symbols are (:func:`write_perf_maps`)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return Popen([shutil.which("perf") or "perf", "record", "-F", "499", "-p", str(pid), "-o", str(output)],
                 stdout=DEVNULL, stderr=DEVNULL)


def start_perf(output_stem: Path) -> list[tuple[int, Popen[bytes]]]:
    """:func:`start_jvm_perf` of every benchmark broker (``<stem>-broker-<A|B>.perf``)."""
    return [(pid, start_jvm_perf(pid, output_stem.with_name(f"{output_stem.name}-broker-{label(name)}.perf")))
            for pid, (name, _) in list(kafka_brokers.RUNNING.items())]


def write_perf_maps(pids: list[int]) -> None:
    """``/tmp/perf-<pid>.map`` of each broker JVM (``jcmd <pid> Compiler.perfmap``): the JIT's code
    addresses and method names, which ``perf report`` reads to name the samples in compiled Java code."""
    exe = shutil.which("jcmd")
    for pid in pids:
        if exe is not None:
            subprocess.run([exe, str(pid), "Compiler.perfmap"], capture_output=True, timeout=120, check=False)


# -- tables -------------------------------------------------------------------------------------------
def cpu_table(rows: list[dict[str, Any]], labels: Mapping[str, str], value_label: Any, top: int = 6) -> str:
    """Per row: each broker's CPU us/record (median over the runs), its kernel share, its busiest pools."""
    lines = ["| copier | value | broker | CPU us/record | of which system | busiest threads, us/record |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        totals, threads = row.get("broker_totals") or {}, row.get("broker_threads") or {}
        for broker in sorted(k for k in totals if " " not in k):
            mine = [(name.split(" ", 1)[1], value) for name, value in threads.items()
                    if name.startswith(f"{broker} ")][:top]
            lines.append(f"| {labels[row['mode']]} | {value_label(row['size'], row.get('compression', 'none'))} "
                         f"| {broker} | {totals[broker]:.3f} | {totals.get(f'{broker} system', 0.0):.3f} "
                         f"| {', '.join(f'{name} {value:.3f}' for name, value in mine)} |")
    return "\n".join(lines)


def requests_table(rows: list[dict[str, Any]], labels: Mapping[str, str], value_label: Any, top: int = 16) -> str:
    """Per row: the requests of each (broker, client, API) per million records copied (medians), the
    partitions with records per request, and the record bytes per such partition (a produce batch's size)."""
    lines = ["| copier | value | broker | API | topics with records | client | requests per 1M records "
             "| partitions with records per request | record bytes per partition |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for key, (requests, partitions, record_bytes) in list((row.get("requests") or {}).items())[:top]:
            broker, api, topics, client = [*key.split(" ", 3), "", "", ""][:4]
            per_request = partitions / requests if requests else 0.0
            per_partition = f"{record_bytes / partitions:,.0f}" if partitions else "-"
            lines.append(f"| {labels[row['mode']]} | {value_label(row['size'], row.get('compression', 'none'))} "
                         f"| {broker} | {api} | {topics} | {client.replace('|', chr(92) + '|')} "
                         f"| {requests * 1e6 / row['records']:,.1f} | {per_request:.2f} | {per_partition} |")
    return "\n".join(lines)
