"""``mirror status --watch``: the status page's figures, kept up to date in the terminal.

The same :class:`~mirror.health.collector.HealthMonitor` the driver runs for ``/ui`` probes the flows in
the background (a pass every ``--interval`` seconds, latency watched closely in between), so the
terminal shows exactly what the page would: one line per flow (state, heartbeat age, latency, lag,
RPO, groups), then one line per lagging partition and the reasons a flow is not healthy. ``rich``
redraws it in place; with ``--json`` each new report is one JSON line instead, for scripts
(``... --watch --json | jq``). Runs until SIGINT, SIGTERM or SIGHUP; exit code 0.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from connect_runtime.cli.process import ExitCode, stop_on_signals
from mirror.health.collector import HealthMonitor
from mirror.health.flow_health import FlowHealth, HealthReport, PartitionLag
from mirror.health.probe import HealthProbe

#: rich style of each state
STYLES = {"healthy": "bold green", "degraded": "bold yellow", "down": "bold red"}
#: at most this many lagging partitions per flow are listed (the worst first); the rest are counted
MAX_PARTITION_LINES = 20


def _fmt(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.1f}{unit}" if isinstance(value, float) else f"{value}{unit}"


def lagging(flow: FlowHealth) -> list[PartitionLag]:
    """The partitions of ``flow`` that are behind, worst (oldest unreplicated record) first."""
    behind = [p for p in flow.partitions if (p.lag_records or 0) > 0 or (p.lag_seconds or 0.0) > 0]
    return sorted(behind, key=lambda p: (-(p.lag_seconds or 0.0), -(p.lag_records or 0), p.remote_topic,
                                         p.partition))


def _groups(flow: FlowHealth) -> str:
    if not flow.groups:
        return "-"
    return f"{sum(1 for g in flow.groups if g.translatable)}/{len(flow.groups)} translatable"


def view(report: HealthReport) -> Group:
    """The renderable for one report: a headline, the flow table, reasons."""
    checked = time.strftime("%H:%M:%S", time.localtime(report.checked_at))
    state = report.state.label
    headline = Text.assemble(("overall ", "bold"), (state.upper(), STYLES[state]),
                             f"   checked {checked}   (Ctrl-C to stop)")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("FLOW / PARTITION", "STATE", "HEARTBEAT AGE", "LATENCY", "LAG", "LAG AGE", "RPO", "GROUPS"):
        table.add_column(column, justify="left" if column in ("FLOW / PARTITION", "STATE", "GROUPS") else "right",
                         overflow="fold")  # a narrow terminal wraps a name, never cuts it
    notes: list[Text] = []
    for flow in report.flows:
        label = flow.state.label
        table.add_row(flow.name, Text(label, STYLES[label]), _fmt(flow.heartbeat_age_seconds, " s"),
                      _fmt(flow.latency_seconds, " s"), _fmt(flow.lag_records), _fmt(flow.max_lag_seconds, " s"),
                      _fmt(flow.rpo_seconds, " s"), _groups(flow))
        behind = lagging(flow)
        for p in behind[:MAX_PARTITION_LINES]:
            table.add_row(f"  {p.remote_topic}-{p.partition}", "lagging", "", "", _fmt(p.lag_records),
                          _fmt(p.lag_seconds, " s"), "", p.basis)
        if len(behind) > MAX_PARTITION_LINES:
            table.add_row(f"  ... {len(behind) - MAX_PARTITION_LINES} more lagging partition(s)", "", "", "", "",
                          "", "", "")
        notes += [Text(f"{flow.name}: {reason}", STYLES[label]) for reason in flow.reasons]
    return Group(headline, table, *notes)


def watch(probe: HealthProbe, interval_s: float, as_json: bool) -> int:
    """Show every new report until a stop signal; the probe is closed on the way out."""
    monitor = HealthMonitor(probe, interval_s).start()
    stop = threading.Event()
    shown: HealthReport | None = None
    console = Console(highlight=False)
    try:
        with stop_on_signals(stop):
            if as_json:
                while not stop.wait(0.1):
                    report = monitor.latest()
                    if report is not None and report is not shown:
                        shown = report
                        sys.stdout.write(json.dumps(report.to_dict(), separators=(",", ":")) + "\n")
                        sys.stdout.flush()
                return ExitCode.OK
            waiting: Any = Text("probing the clusters...", "dim")
            with Live(waiting, console=console, refresh_per_second=4, auto_refresh=False) as live:
                while not stop.wait(0.1):
                    report = monitor.latest()
                    if report is not None and report is not shown:
                        shown = report
                        live.update(view(report), refresh=True)
    finally:
        monitor.stop()  # closes the probe's clients
    return ExitCode.OK
