"""Soak: three ``connect-mirror-maker`` nodes under steady load through a cycle of faults, judged per node.

A source and a target cluster (Tansu, in memory, started here; or Apache Kafka 4.4 with ``--broker kafka``),
a TCP proxy in front of the target (tests/support/tcp_proxy.py; the target advertises the proxy, so every
client goes through it), three nodes serving A->B, the chaos tier's load generator and checker
(tests/support/chaos.py) at ``--rate`` records/s (2,000 by default: enough for the bulk copy's span producer
to carry most records). Every ``--event-every`` seconds one fault, in turn: the target frozen (SIGSTOP) for
10 s, the network to the target cut and refused for 5 s, kill -9 of node 2 (restarted), the source frozen
for 10 s, SIGTERM of node 2 (restarted). Only node 2 is ever restarted, so that nodes 0 and 1 live through the
whole run and their trends are judged over all of it; node 2 is judged per process, where it lived long
enough. After each fault the script waits for recovery (every source task
running, every record acknowledged so far on the target) and records how long that took.

Meanwhile a sampler reads every node every ``--sample-every`` seconds: RSS, OS threads and open file
descriptors from /proc, open Kafka clients (``connect_clients_open`` on its ``/metrics``) and the work it
runs (its connectors and tasks from REST; whether it leads the group, from ``connect_worker_leader``).

The verdict (exit 1 on any failure):

* per process (a restarted node is judged from its restart), a robust trend of threads, descriptors,
  clients and RSS over the run, against a floor plus an hourly limit (bench/soak_verdict.py says how and
  why: the work a node runs moves its level more than a leak would);
* nothing lost, order kept in every partition;
* the records copied twice within the bound each fault allows, from ``offset.flush.interval.ms`` and the
  rate (:class:`bench.soak_verdict.DuplicateBound`), printed beside the count for every fault.

    python bench/soak.py --minutes 10                 # what CI runs (tests/integration/test_soak.py)
    python bench/soak.py --minutes 120                # the recorded run (bench/results.md)
    python bench/soak.py --minutes 30 --broker kafka  # Apache Kafka 4.4 brokers instead of Tansu
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench.soak_verdict import DuplicateBound, NodeVerdict, Sample, judge
from mirror.local.broker import LocalBroker, free_port
from tests.integration.support.chaos_flow import FLUSH_INTERVAL_S, PARTITIONS, ChaosFlow
from tests.integration.support.mm2_process import MirrorMakerProcess
from tests.support.chaos import Checker, LoadGenerator, Report
from tests.support.kafka import topics, wait_until
from tests.support.tcp_proxy import TcpProxy

FREEZE_S = 10.0
REFUSE_S = 5.0
CONNECTORS = ("MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector")


class Broker(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class KafkaNode:
    """An Apache Kafka broker (tests/support/apache_kafka.py) as the soak uses a broker."""

    broker: object  # tests.support.apache_kafka.KafkaBroker, imported only for --broker kafka

    @property
    def bootstrap_servers(self) -> str:
        return str(self.broker.bootstrap_servers)  # type: ignore[attr-defined]

    def _signal(self, signum: int) -> None:
        process = self.broker.process  # type: ignore[attr-defined]
        if process is not None:
            os.kill(process.pid, signum)

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def stop(self) -> None:
        self.broker.stop()  # type: ignore[attr-defined]


def start_brokers(kind: str, workdir: Path) -> tuple[Broker, Broker, TcpProxy]:
    """Source, target (advertising the proxy's port) and the proxy in front of the target."""
    if kind == "tansu":
        source = LocalBroker(name="soak-src", log_dir=workdir / "brokers").start()
        port = free_port()
        proxy = TcpProxy(port).start()
        target = LocalBroker(name="soak-tgt", port=port, advertised_port=proxy.port,
                             log_dir=workdir / "brokers").start()
        return source, target, proxy
    from tests.support.apache_kafka import KafkaBroker, listener_port

    kafka_source = KafkaBroker("soak-src", workdir / "kafka-src").start()
    port = listener_port()
    proxy = TcpProxy(port).start()
    kafka_target = KafkaBroker("soak-tgt", workdir / "kafka-tgt",
                               ports={"PLAINTEXT": port, "CONTROLLER": listener_port()},
                               config={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}).start()
    return KafkaNode(kafka_source), KafkaNode(kafka_target), proxy


def read_sample(node: MirrorMakerProcess, index: int, at_s: float, source: str, target: str) -> Sample | None:
    """One node now: /proc figures, and its work and open clients when its REST API and /metrics answer."""
    if node.proc is None or node.proc.poll() is not None:
        return None
    pid = node.pid
    try:
        fields: dict[str, str] = {}
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        rss, threads = int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, KeyError, ValueError):
        return None  # it exited meanwhile
    try:
        work, clients = node_work(node, source, target)
    except (httpx.HTTPError, OSError, KeyError, ValueError):
        return Sample(at_s, index, pid, rss, threads, fds)
    return Sample(at_s, index, pid, rss, threads, fds, clients, work)


def node_work(node: MirrorMakerProcess, source: str, target: str) -> tuple[tuple[str, ...], int]:
    """The node's connectors and tasks (REST status), whether it leads (``connect_worker_leader``), and its
    open clients (``connect_clients_open``, summed)."""
    worker = node.url.split("://", 1)[1]
    work: list[str] = []
    for connector in CONNECTORS:
        response = httpx.get(f"{node.url}/{source}/{target}/connectors/{connector}/status", timeout=3)
        response.raise_for_status()
        status = response.json()
        short = connector.removeprefix("Mirror").removesuffix("Connector")
        if status["connector"].get("worker_id") == worker:
            work.append(short)
        work += [f"{short}/{t['id']}" for t in status["tasks"] if t.get("worker_id") == worker]
    metrics = httpx.get(f"{node.url}/metrics", timeout=3).text.splitlines()
    clients = int(sum(float(line.rsplit(" ", 1)[1]) for line in metrics if line.startswith("connect_clients_open{")))
    if any(line.startswith("connect_worker_leader{") and float(line.rsplit(" ", 1)[1]) == 1 for line in metrics):
        work.append("leader")  # the leader holds the config topic's transactional writer
    return tuple(sorted(work)), clients


class Sampler:
    """Samples every node on a fixed period, on its own thread, whatever the faults are doing."""

    def __init__(self, flow: ChaosFlow, period_s: float, started: float) -> None:
        self.flow, self.period_s, self.started = flow, period_s, started
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        tick = 0
        while not self._stop.is_set():
            for index, node in enumerate(list(self.flow.nodes)):
                sample = read_sample(node, index, time.monotonic() - self.started, self.flow.a, self.flow.b)
                if sample is not None:
                    self.samples.append(sample)
            tick += 1
            self._stop.wait(max(0.0, self.started + tick * self.period_s - time.monotonic()))

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(30)
        return list(self.samples)


@dataclass
class Event:
    name: str
    kind: str  # "crash" (kill -9), "clean" (SIGTERM), "outage" (a frozen broker or a cut link)
    outage_s: float
    began_s: float = 0.0
    recovered_s: float = 0.0
    #: a clean stop: the records the stopped node's tasks had sent and not yet seen acknowledged
    in_flight: int = 0


def outstanding_records(node: MirrorMakerProcess) -> int:
    """The node's ``connect_source_task_outstanding_records``, summed over its tasks: sent, not acknowledged."""
    lines = httpx.get(f"{node.url}/metrics", timeout=5).text.splitlines()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in lines
                   if line.startswith("connect_source_task_outstanding_records{")))


class Soak:
    def __init__(self, workdir: Path, broker: str, rate: float) -> None:
        self.source, self.target, self.proxy = start_brokers(broker, workdir)
        self.flow = ChaosFlow(workdir, self.source.bootstrap_servers, f"127.0.0.1:{self.proxy.port}", nodes=3)
        self.rate = rate

    def faults(self) -> list[tuple[Event, Callable[[], int | None]]]:
        return [(Event("target frozen 10 s", "outage", FREEZE_S), lambda: self.freeze(self.target)),
                (Event("network to target cut, refused 5 s", "outage", REFUSE_S), self.partition),
                (Event("kill -9 node 2, restarted", "crash", 0.0), lambda: self.restart(2, kill=True)),
                (Event("source frozen 10 s", "outage", FREEZE_S), lambda: self.freeze(self.source)),
                (Event("SIGTERM node 2, restarted", "clean", 0.0), lambda: self.restart(2, kill=False))]

    def freeze(self, broker: Broker) -> None:
        broker.pause()
        time.sleep(FREEZE_S)
        broker.resume()

    def partition(self) -> None:
        self.proxy.refuse()
        time.sleep(REFUSE_S)
        self.proxy.accept()

    def restart(self, index: int, kill: bool) -> int:
        """Kill or stop node ``index`` and start it again; for a clean stop, what it had in flight."""
        node = self.flow.nodes[index]
        in_flight = 0
        if kill:
            node.kill()
        else:
            in_flight = outstanding_records(node)
            node.terminate()
        self.flow.nodes[index] = self.flow.node(index)
        self.flow.nodes[index].start().wait_running(1)
        return in_flight

    def start_load(self) -> None:
        """The flow's nodes, then the load at the soak's rate with a checker that keeps only its tally."""
        flow = self.flow
        for node in flow.nodes:
            node.start()
        for node in flow.nodes:
            node.wait_running(1)
        flow.wait_tasks()
        wait_until(lambda: flow.remote in topics(flow.target), 60, f"the remote topic {flow.remote}")
        flow.checker = Checker(flow.checker_bootstrap, flow.remote, PARTITIONS, keep_arrivals=False,
                               latency_every=20).start()
        flow.load = LoadGenerator(flow.source, flow.topic, PARTITIONS, self.rate, track_sent=False).start()
        checker = flow.checker
        wait_until(lambda: len(checker.seen()) == PARTITIONS, 120, "records of every partition on the target")

    def recover(self) -> float:
        """Seconds until every task runs and every record acknowledged by now is on the target."""
        started = time.monotonic()
        self.flow.wait_tasks(timeout_s=180)
        assert self.flow.load is not None and self.flow.checker is not None
        acked, checker = self.flow.load.acked_snapshot(), self.flow.checker
        wait_until(lambda: checker.has_all(acked), 180, "the target caught up", interval_s=0.5)
        return time.monotonic() - started

    def stop(self) -> None:
        self.flow.stop()
        self.target.resume()
        self.source.resume()
        self.target.stop()
        self.source.stop()
        self.proxy.stop()


def run_events(soak: Soak, minutes: float, every_s: float, started: float) -> Iterator[Event]:
    """The faults in turn, one every ``every_s`` seconds, each followed by its recovery."""
    deadline = time.monotonic() + minutes * 60
    faults = soak.faults()
    count = 0
    while time.monotonic() < deadline:
        began = time.monotonic()
        template, inject = faults[count % len(faults)]
        count += 1
        event = Event(template.name, template.kind, template.outage_s, began - started)
        event.in_flight = inject() or 0
        event.recovered_s = soak.recover()
        print(f"| {count} | {event.began_s / 60:.1f} | {event.name} | {event.recovered_s:.1f} |", flush=True)
        yield event
        rest = every_s - (time.monotonic() - began)
        if rest > 0:
            time.sleep(min(rest, max(0.0, deadline - time.monotonic())))


def duplicates_per_event(events: list[Event], duplicate_at_s: list[float], end_s: float,
                         bound: DuplicateBound) -> list[tuple[Event, int, int]]:
    """Each fault with the duplicates that arrived from its start to the next one's, and its bound."""
    out = []
    for index, event in enumerate(events):
        until = events[index + 1].began_s if index + 1 < len(events) else end_s
        count = sum(1 for t in duplicate_at_s if event.began_s <= t < until)
        out.append((event, count, bound.for_event(event.kind, event.outage_s, event.in_flight, event.recovered_s)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to soak (default 30)")
    parser.add_argument("--event-every", type=float, default=60.0, metavar="SECONDS",
                        help="seconds between the starts of two faults (default 60)")
    parser.add_argument("--sample-every", type=float, default=10.0, metavar="SECONDS",
                        help="seconds between two samples of every node (default 10)")
    parser.add_argument("--rate", type=float, default=2000.0, help="records/s of the load (default 2000)")
    parser.add_argument("--broker", choices=("tansu", "kafka"), default="tansu",
                        help="the clusters: embedded Tansu (default) or Apache Kafka 4.4 (fetched by Maven)")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="soak-"))
    print(f"soak: {args.minutes:g} min on {args.broker}, {args.rate:g} records/s, a fault every "
          f"{args.event_every:g} s, samples every {args.sample_every:g} s; logs in {workdir}", flush=True)
    soak = Soak(workdir, args.broker, args.rate)
    events: list[Event] = []
    started, started_wall = time.monotonic(), time.time()
    sampler = Sampler(soak.flow, args.sample_every, started)
    try:
        soak.start_load()
        sampler.start()
        print("\n| # | at (min) | fault | recovered in (s) |\n|---|---|---|---|", flush=True)
        events = list(run_events(soak, args.minutes, args.event_every, started))
        load, checker = soak.flow.load, soak.flow.checker
        assert load is not None and checker is not None
        load.stop()
        wait_until(lambda: checker.has_all(load.acked), 180, "every record on the target", interval_s=0.5)
        samples = sampler.stop()
        checker.stop()
        ended_s = time.monotonic() - started
        report = checker.report(f"soak, {len(events)} faults", load.acked)
        duplicate_at_s = [t / 1000 - started_wall for t in checker.duplicate_arrivals_ms()]
    finally:
        sampler.stop()
        soak.stop()
    (workdir / "samples.jsonl").write_text("".join(json.dumps(dataclasses.asdict(s)) + "\n" for s in samples))
    (workdir / "events.jsonl").write_text("".join(json.dumps(dataclasses.asdict(e)) + "\n" for e in events))
    print(f"samples and faults: {workdir}/samples.jsonl, events.jsonl")
    bound = DuplicateBound(args.rate, FLUSH_INTERVAL_S, ack_s=max(2.0, report.latency(0.9) / 1000))
    print(f"duplicate bounds: {args.rate:g} records/s, offset.flush.interval.ms {FLUSH_INTERVAL_S * 1000:g}, "
          f"acknowledgement time {bound.ack_s:.1f} s (the run's p90 latency, at least 2 s)")
    return verdict(judge(samples, [e.began_s for e in events]), report,
                   duplicates_per_event(events, duplicate_at_s, ended_s, bound), samples)


def verdict(nodes: list[NodeVerdict], report: Report, duplicates: list[tuple[Event, int, int]],
            samples: list[Sample]) -> int:
    """Print the figures and the verdict lines; 0 when every line passed."""
    print("\n" + report.table().split("\n\n")[0])
    print("\n| fault | at (min) | recovered in (s) | duplicates | bound |\n|---|---|---|---|---|")
    for event, count, limit in duplicates:
        print(f"| {event.name} | {event.began_s / 60:.1f} | {event.recovered_s:.1f} | {count} | {limit} |")
    print("\n| node | pid | samples | RSS first / last (MiB) | threads | fds | clients |")
    print("|---|---|---|---|---|---|---|")
    for node in nodes:
        own = [s for s in samples if s.pid == node.pid]
        full = [s for s in own if s.work is not None]
        first, last = own[0], own[-1]
        clients = f"{full[0].clients} / {full[-1].clients}" if full else "-"
        print(f"| {node.node} | {node.pid} | {node.samples} | {first.rss_mib:.0f} / {last.rss_mib:.0f} | "
              f"{first.threads} / {last.threads} | {first.fds} / {last.fds} | {clients} |")
    failures = 0
    print()
    for node in nodes:
        print(node.line())
        failures += node.failed
    over = [(e, c, b) for e, c, b in duplicates if c > b]
    print(f"records: {report.records} acknowledged, lost {report.lost}, out of order {report.out_of_order}, "
          f"duplicated {report.duplicated} (every fault within its bound: {'yes' if not over else 'NO'})")
    for event, count, limit in over:
        print(f"  {event.name} at {event.began_s / 60:.1f} min: {count} duplicates, bound {limit}")
    ok = failures == 0 and report.lost == 0 and report.out_of_order == 0 and not over
    print(f"soak verdict: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
