"""What ``mirror quickstart`` shows once replication runs: where to look, and a live one-line summary.

A new user should not have to read the driver's log to find the status page: :func:`endpoints` lists
the status page, the REST API (with two curl examples), ``/metrics`` and the ``mirror status`` and
``mirror offsets translate`` commands, all with the real port and file. :class:`LiveSummary` then keeps
one line up to date under ``--keep`` (records replicated, lag, heartbeat age), read from the driver's
own ``/metrics`` and ``/ui/api/status``, the same figures the status page draws, while a trickle of
new records keeps the figures moving.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

#: How often a non-terminal output gets a new summary line (a terminal's line is rewritten every second).
PIPE_LINE_INTERVAL_S = 5.0


def endpoints(rest_url: str, properties: Path, source: str, target: str, group: str) -> list[str]:
    """The "where to look" block: one line per place, the URLs and commands ready to paste."""
    base = f"{rest_url}/{source}/{target}"
    return [
        f"  status page   {rest_url}/ui",
        f"  REST API      {base}/",
        f"                curl -s '{base}/connectors?expand=status'",
        f"                curl -s {base}/connectors/MirrorSourceConnector/status",
        f"  metrics       {rest_url}/metrics",
        f"  health        mirror status {properties}",
        f"                mirror status --watch {properties}",
        f"  failover      mirror offsets translate --group {group} --source {source} --target {target} "
        f"{properties}",
        f"  driver log    {properties.with_name('connect-mirror-maker.log')}",
    ]


@dataclass
class Figures:
    """One reading of the live summary; None where the driver has not measured it yet."""

    replicated: int | None
    lag_records: int | None
    heartbeat_age_s: float | None
    state: str | None

    def line(self) -> str:
        def shown(value: Any, unit: str = "") -> str:
            if value is None:
                return "-"
            return f"{value:.1f}{unit}" if isinstance(value, float) else f"{value}{unit}"

        return (f"records replicated {shown(self.replicated)}   lag {shown(self.lag_records)} records   "
                f"heartbeat age {shown(self.heartbeat_age_s, ' s')}   {self.state or 'starting'}")


def replicated_records(metrics_text: str, source: str, target: str) -> int | None:
    """Sum of ``mirror_source_record_count_total`` of one flow in a Prometheus text exposition."""
    total: int | None = None
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "mirror_source_record_count":
            continue
        for sample in family.samples:
            if (sample.name == "mirror_source_record_count_total" and sample.labels.get("source") == source
                    and sample.labels.get("target") == target):
                total = (total or 0) + int(sample.value)
    return total


def read_figures(client: httpx.Client, rest_url: str, source: str, target: str) -> Figures:
    """The figures now, from the driver's ``/metrics`` and ``/ui/api/status`` (unknown ones as None)."""
    replicated = replicated_records(client.get(f"{rest_url}/metrics").text, source, target)
    report = client.get(f"{rest_url}/ui/api/status").json().get("report") or {}
    flow: dict[str, Any] = next((f for f in report.get("flows", []) if f.get("flow") == f"{source}->{target}"), {})
    return Figures(replicated, flow.get("lag_records"), flow.get("heartbeat_age_seconds"), flow.get("state"))


class LiveSummary:
    """Writes a trickle of records to the demo topic and shows the live figures until ``stop`` is set."""

    def __init__(self, rest_url: str, source: str, target: str, bootstrap: str, topic: str,
                 records_per_s: int) -> None:
        self.rest_url = rest_url
        self.source, self.target = source, target
        self.bootstrap, self.topic = bootstrap, topic
        self.records_per_s = records_per_s

    def run(self, stop: threading.Event, alive: Any) -> None:
        """Until ``stop`` is set or ``alive()`` is false: one tick per second."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20}) if self.records_per_s else None
        tty = sys.stdout.isatty()
        last_line = 0.0
        written = 0
        with httpx.Client(timeout=5) as client:
            while not stop.is_set() and alive():
                if producer is not None:
                    for _ in range(self.records_per_s):
                        producer.produce(self.topic, value=f'{{"live": {written}}}'.encode())
                        written += 1
                    producer.poll(0)
                try:
                    line = read_figures(client, self.rest_url, self.source, self.target).line()
                except (httpx.HTTPError, ValueError) as exc:
                    line = f"(driver not answering: {type(exc).__name__})"
                now = time.monotonic()
                if tty:
                    print(f"\r  {time.strftime('%H:%M:%S')}  {line}\033[K", end="", flush=True)
                elif now - last_line >= PIPE_LINE_INTERVAL_S:
                    print(f"  {time.strftime('%H:%M:%S')}  {line}", flush=True)
                    last_line = now
                stop.wait(1.0)
        if tty:
            print(flush=True)
        if producer is not None:
            producer.flush(5)
